/**
 * The chat REPL's view of agent events: streamed text, one line per tool
 * call (its outcome on the same line unless something was printed in
 * between), progress below it, the plan after the update_plan line that
 * changed it, and notes for skills, steering, compaction and runs that end
 * otherwise than with an answer.
 *
 * @module
 */
import type { AgentEvent } from "../../agent/index.ts";
import { PLAN_TOOL_NAME, renderPlan, type Plan } from "../../agent/plan.ts";
import { argsSummary, outcomeText, runStatusLine } from "./render.ts";
import type { Screen } from "./screen.ts";
import { Spinner, summaryLine, ThinkingView, type TerminalLook } from "../live.ts";

/** Why an automatic compaction happened. */
const COMPACTION_WHY: Readonly<Record<string, string>> = {
  overflow: " (the server said the context is full)",
  pressure: " (the history outgrew --context-window)",
};

export class ChatEvents {
  /** When each running tool call started (for its `✓ N ms`). */
  readonly #started = new Map<string, number>();
  /** The tool call whose line the cursor is still on. */
  #openTool: string | null = null;
  #textOpen = false;
  /** The plan to draw after the update_plan line that produced it. */
  #pendingPlan: Plan | null = null;
  /** When the run in flight started (for its summary line). */
  #runStarted = performance.now();
  /** On a terminal: spins while the model is silent (erased before anything is written). */
  readonly spinner: Spinner;

  /**
   * `planning()`: whether the plan tool is on (its progress is drawn as a
   * checklist, not a line). `look`: what the output terminal shows (the
   * spinner and the summary line only on one); `mayDraw()`: whether the
   * spinner may draw now (nothing typed on the input line, no question).
   */
  constructor(
    private readonly screen: Screen,
    private readonly planning: () => boolean,
    private readonly look: TerminalLook = { live: false, redraw: false, color: false },
    out: { write(text: string): unknown } = { write: () => undefined },
    mayDraw: () => boolean = () => true,
    showThinking = false,
  ) {
    this.spinner = new Spinner(out, look, () => screen.atStart && mayDraw());
    screen.beforeWrite = () => this.spinner.clear();
    // --show-thinking: as agent shows it, but plain (the screen writes no escape sequences)
    this.thinking = showThinking ? new ThinkingView({ write: (t: string) => screen.write(t) }, { ...look, color: false }) : null;
  }

  /** The thinking block, with --show-thinking. */
  private readonly thinking: ThinkingView | null;

  /** Something else printed a line (an approval question): a tool's outcome goes on a line of its own. */
  interrupted(): void {
    this.#openTool = null;
  }

  /** The plan tool accepted `plan`: it is drawn once its call's line is complete. */
  planChanged(plan: Plan): void {
    this.#pendingPlan = plan;
  }

  /** The agent sink. */
  readonly sink = (event: AgentEvent): void => {
    const screen = this.screen;
    switch (event.kind) {
      case "agent_started":
      case "agent_continued":
        this.#runStarted = performance.now();
        break;
      case "turn_started":
        this.spinner.start("waiting for the model");
        break;
      case "assistant_thinking_delta":
        this.spinner.stop();
        if (this.thinking !== null) {
          if (!screen.atStart && !this.thinking.open) screen.endLine();
          this.thinking.write(event.delta);
          this.#openTool = null;
        }
        break;
      case "tool_call_arguments_delta":
        this.spinner.stop();
        break;
      case "assistant_text_delta":
        this.spinner.stop();
        this.thinking?.end();
        this.#textOpen = true;
        this.#openTool = null;
        screen.write(event.delta);
        break;
      case "message_completed":
        this.spinner.stop();
        this.thinking?.end(); // each turn's thinking is a block of its own
        if (this.#textOpen) screen.endLine();
        this.#textOpen = false;
        break;
      case "tool_started":
        this.#started.set(event.tool_call.id, performance.now());
        screen.begin(`→ ${event.tool_call.name} ${argsSummary(event.tool_call.arguments)}`.trimEnd());
        this.#openTool = event.tool_call.id;
        break;
      case "tool_progressed":
        if (event.tool_call.name === PLAN_TOOL_NAME && this.planning()) break; // drawn after the line
        screen.line(`    … ${event.update.message.replace(/[\r\n]+/g, " ")}`);
        this.#openTool = null;
        break;
      case "tool_completed": {
        const t0 = this.#started.get(event.tool_call.id);
        this.#started.delete(event.tool_call.id);
        const status = outcomeText(event.result, t0 === undefined ? null : performance.now() - t0);
        if (this.#openTool === event.tool_call.id) screen.write(` ${status}\n`);
        else screen.line(`→ ${event.tool_call.name} ${argsSummary(event.tool_call.arguments)} ${status}`);
        this.#openTool = null;
        if (event.tool_call.name === PLAN_TOOL_NAME && this.#pendingPlan !== null) {
          for (const l of renderPlan(this.#pendingPlan)) screen.line(l);
          this.#pendingPlan = null;
        }
        break;
      }
      case "skill_activated":
        screen.line(`[skill ${event.name} is active]`);
        break;
      case "steering_applied":
        screen.line(`[steering applied before turn ${event.target_turn}: ${JSON.stringify(event.control.content)}]`);
        break;
      case "steering_discarded":
        screen.line(`[steering dropped (${event.reason}): ${JSON.stringify(event.control.content)}]`);
        break;
      case "compaction_completed": {
        const r = event.result;
        const why = COMPACTION_WHY[r.trigger] ?? "";
        screen.line(
          r.status === "completed"
            ? `[compacted${why}: ${r.messages_before} messages → ${r.messages_after}]`
            : `[nothing to compact yet${why}: the last turn is always kept]`,
        );
        break;
      }
      case "compaction_failed":
        screen.line(`[compaction ${event.result.status}: ${event.result.error ?? "no reason given"}]`);
        break;
      case "agent_finished": {
        this.spinner.stop();
        const line = runStatusLine(event.result);
        if (line !== null) screen.line(line);
        // On a terminal, every run ends with its stop reason, turns, tokens and time.
        if (this.look.live) screen.line(summaryLine(event.result, performance.now() - this.#runStarted));
        break;
      }
      default:
        break;
    }
  };
}
