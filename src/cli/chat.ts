/**
 * `agentcore chat`: the interactive agent, a REPL over one agent and one
 * durable session.
 *
 * - Type a task; the assistant's text streams, each tool call shows as one
 *   line (`→ write_file path="a.txt" content="…" ✓ 3 ms`) with its progress
 *   below it, and the plan (update_plan) as a checklist each time it changes.
 * - Side-effecting tools ask first (the default gate, src/cli/gate.ts): the
 *   question appears in the REPL and the next typed line answers it (y, n —
 *   the default — or a for always in this run). When stdin is not a terminal
 *   such calls are refused.
 * - While a run is in flight, a plain line is queued as a follow-up (it runs
 *   after the current run, if that one completes); `/steer TEXT` steers the
 *   running run; `/abort` or Ctrl-C aborts it.
 * - At the prompt: `/continue`, `/compact`, `/sessions`, `/fork [NAME]`,
 *   `/plan`, `/help`, `/exit` (also Ctrl-D, or Ctrl-C twice). SIGTERM and
 *   SIGHUP end the chat like `/exit` (a running run is aborted and journaled),
 *   with status 143 / 129.
 * - The history is journaled in a session: a new id is printed at start;
 *   `--session ID` (and `--branch`) resumes one. `/fork` branches it at its
 *   current head and records on the new branch from then on.
 *
 * When stdin is not a terminal (a pipe, a file), lines are taken one at a
 * time: each waits for the previous one's run to finish. That makes a piped
 * chat a script of the session.
 *
 * @module
 */
import * as path from "node:path";
import * as readline from "node:readline";
import type { Agent, AgentEvent, AgentEventSource } from "../agent/index.ts";
import { PLAN_TOOL_NAME, renderPlan, type Plan, type PlanTracker } from "../agent/plan.ts";
import type { ChatMessage, ModelAdapter } from "../providers/types.ts";
import type { Runtime } from "../runtime/index.ts";
import { JsonlSessionStorage } from "../session/jsonl.ts";
import { SessionRecorder } from "../session/recorder.ts";
import { SessionError, sessionMessages, type SessionCheckout } from "../session/types.ts";
import {
  AgentSetupError,
  AgentUsageError,
  buildCliAgent,
  claimSessionBranch,
  makeModel,
  missingBranchMessage,
  reportRepair,
  runSpecOf,
  setupSkills,
  type AgentFlags,
} from "./agent.ts";
import type { BranchClaim } from "../session/journal.ts";
import { ReplApprover, type ApprovalView } from "./chat/approver.ts";
import { chatHelp, parseChatInput } from "./chat/commands.ts";
import { argsSummary, outcomeText, runStatusLine } from "./chat/render.ts";

export { ReplApprover } from "./chat/approver.ts";

/** Flags of the `chat` command (the agent's, without --events and --continue). */
export interface ChatFlags extends Omit<AgentFlags, "events" | "continue"> {
  /** The config's `policy.approval_timeout_ms`: deny a question left unanswered this long (default: wait). */
  approvalTimeoutMs?: number;
}

/** The streams the REPL uses (the process's by default). */
export interface ChatIO {
  input: NodeJS.ReadableStream & { isTTY?: boolean };
  output: NodeJS.WritableStream & { isTTY?: boolean };
  /** Warnings and errors. */
  error: { write(text: string): unknown };
}

/** Library-level options of {@link cmdChat} (tests, embedding). */
export interface ChatOptions {
  /** Default: the process's stdin, stdout and stderr. */
  io?: ChatIO;
  /** Use this model instead of the one the flags describe. */
  model?: ModelAdapter;
}

/** The REPL's approver; main.ts gives its `approver` to the policy middleware before the runtime is made. */
export function createReplApprover(): ReplApprover {
  return new ReplApprover();
}

const PROMPT = "> ";

/** Why a line typed during a run was not queued as a follow-up. */
const NOT_QUEUED: Record<string, string> = {
  agent_idle: "no task is running (a compaction, or the run just ended)",
  queue_full: "the follow-up queue is full",
  run_closing: "the run is stopping",
};
const CHAT_AGENT_ID = "agentcore-cli";

/** A new session id: `chat-` + UTC date and time + 4 random hex digits. */
export function newChatSessionId(now: Date = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, "").replace("T", "-").slice(0, 15);
  const r = new Uint8Array(2);
  crypto.getRandomValues(r);
  return `chat-${stamp}-${[...r].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

// deno-lint-ignore no-control-regex
const UNSAFE_CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/** Writes to the terminal and remembers whether the cursor is at the start of a line. */
class Screen {
  #atStart = true;
  /** Set once a write failed (a closed pipe): later writes are dropped. */
  broken = false;
  constructor(
    private readonly out: { write(s: string): unknown },
    private readonly onBroken: (e: unknown) => void,
  ) {}

  /**
   * Write `text`. Model and tool bytes are untrusted: terminal control
   * characters (ESC, C1 codes such as CSI, CR, backspace) are shown as U+FFFD,
   * so nothing can move the cursor, hide a line or fake an approval prompt.
   */
  write(text: string): void {
    if (text === "" || this.broken) return;
    text = text.replace(/\r\n/g, "\n").replace(UNSAFE_CONTROLS, "\ufffd");
    try {
      this.out.write(text);
    } catch (e) {
      this.fail(e);
      return;
    }
    this.#atStart = text.endsWith("\n");
  }

  fail(e: unknown): void {
    if (this.broken) return;
    this.broken = true;
    this.onBroken(e);
  }

  /** Write `text` on a line of its own. */
  line(text: string): void {
    if (!this.#atStart) this.write("\n");
    this.write(`${text}\n`);
  }

  /** Start a line with `text` and leave the cursor after it. */
  begin(text: string): void {
    if (!this.#atStart) this.write("\n");
    this.write(text);
  }

  /** End the current line, if anything is on it. */
  endLine(): void {
    if (!this.#atStart) this.write("\n");
  }

  /** Something else (readline's prompt, or an echoed Enter) moved the cursor. */
  moved(atStart: boolean): void {
    this.#atStart = atStart;
  }
}

/**
 * Run the REPL until /exit, Ctrl-D, Ctrl-C twice at the prompt, SIGTERM or
 * SIGHUP. Resolves to the exit status: 0 (143 / 129 after SIGTERM / SIGHUP),
 * or 1 when the session journal could not be written.
 * Setup problems (a bad session, model or script) throw AgentSetupError.
 */
export async function cmdChat(runtime: Runtime, flags: ChatFlags, gate: ReplApprover, options: ChatOptions = {}): Promise<number> {
  // The chat holds its session branch from start to end (another agent or chat on it is refused up front).
  const held: { claim: BranchClaim | null } = { claim: null };
  try {
    return await chatCommand(runtime, flags, gate, options, held);
  } finally {
    held.claim?.release();
  }
}

async function chatCommand(
  runtime: Runtime,
  flags: ChatFlags,
  gate: ReplApprover,
  options: ChatOptions,
  held: { claim: BranchClaim | null },
): Promise<number> {
  const proc = process;
  const { input, output, error } = options.io ?? { input: proc.stdin, output: proc.stdout, error: proc.stderr };
  const interactive = input.isTTY === true;

  // ---- session (first, so a bad journal or branch is reported before anything starts)
  if (flags.session !== undefined && flags.session.trim() === "") throw new AgentUsageError("--session must not be empty");
  const sessionId = flags.session ?? newChatSessionId();
  let branch = flags.branch ?? "main";
  const storage = new JsonlSessionStorage(flags.sessionsDir ?? path.join(runtime.root ?? ".", ".agentcore", "sessions"), {
    onRepair: reportRepair("agentcore chat"),
  });
  held.claim = await claimSessionBranch(storage, sessionId, branch, "agentcore chat");
  let checkout: SessionCheckout | null;
  try {
    await storage.repair(sessionId); // a torn last line (the first one too) is cut off and reported
    checkout = await storage.checkout(sessionId, branch);
  } catch (e) {
    if (e instanceof SessionError) throw new AgentSetupError(e.message);
    throw e;
  }
  if (checkout === null && branch !== "main") throw new AgentSetupError(await missingBranchMessage(storage, sessionId, branch));

  // Skills: the same rule as agent (--skills, else the config's skills_dir, else .agentcore/skills).
  const skills = await setupSkills(runtime, flags);
  const model = options.model ?? (await makeModel({ ...flags, task: "" }));
  // A closed output (a pipe whose reader went away) ends the chat with status 2, never a crash.
  const screen = new Screen(output, (e) => {
    error.write(`agentcore chat: cannot write the output (${(e as NodeJS.ErrnoException)?.code ?? String(e)}); stopping\n`);
    void exitRef.exit?.();
  });
  const exitRef: { exit?: () => Promise<void> } = {};
  (output as NodeJS.EventEmitter).on("error", (e: unknown) => screen.fail(e));
  // Set by buildAgent below; rendering reads it only once the agent runs.
  let planner: PlanTracker | null = null;
  /** The plan to draw after the update_plan line that produced it. */
  let pendingPlan: Plan | null = null;

  // ---- rendering of agent events
  const started = new Map<string, number>();
  let openTool: string | null = null;
  let textOpen = false;
  const render = (event: AgentEvent): void => {
    switch (event.kind) {
      case "assistant_text_delta":
        textOpen = true;
        openTool = null;
        screen.write(event.delta);
        break;
      case "message_completed":
        if (textOpen) screen.endLine();
        textOpen = false;
        break;
      case "tool_started": {
        started.set(event.tool_call.id, performance.now());
        // The outcome goes on the same line unless something is printed in between.
        screen.begin(`→ ${event.tool_call.name} ${argsSummary(event.tool_call.arguments)}`.trimEnd());
        openTool = event.tool_call.id;
        break;
      }
      case "tool_progressed":
        if (event.tool_call.name === PLAN_TOOL_NAME && planner !== null) break; // drawn after the line
        screen.line(`    … ${event.update.message.replace(/[\r\n]+/g, " ")}`);
        openTool = null;
        break;
      case "tool_completed": {
        const t0 = started.get(event.tool_call.id);
        started.delete(event.tool_call.id);
        const status = outcomeText(event.result, t0 === undefined ? null : performance.now() - t0);
        if (openTool === event.tool_call.id) screen.write(` ${status}\n`);
        else screen.line(`→ ${event.tool_call.name} ${argsSummary(event.tool_call.arguments)} ${status}`);
        openTool = null;
        if (event.tool_call.name === PLAN_TOOL_NAME && pendingPlan !== null) {
          for (const l of renderPlan(pendingPlan)) screen.line(l);
          pendingPlan = null;
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
        // Automatic ones (--context-window) say why they happened.
        const why =
          r.trigger === "overflow"
            ? " (the server said the context is full)"
            : r.trigger === "pressure"
              ? " (the history outgrew --context-window)"
              : "";
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
        const line = runStatusLine(event.result);
        if (line !== null) screen.line(line);
        break;
      }
      default:
        break;
    }
  };

  // ---- the session recorder (swapped by /fork)
  let agent!: Agent;
  const recordingErrors: Error[] = [];
  let recorder = new SessionRecorder(sessionId, storage, branch);
  const recordSink = {
    async handle(event: AgentEvent, source: AgentEventSource) {
      const r = recorder;
      const before = r.errors.length;
      try {
        await r.handle(event, source);
      } finally {
        if (r.errors.length > before) {
          const e = r.errors.at(-1)!;
          recordingErrors.push(e);
          error.write(`agentcore chat: the session journal was not written: ${e.message}\n`);
        }
      }
    },
  };

  // The same run spec as agent's. /compact summarises everything but the last
  // turn; with --context-window the history is also compacted on its own, as
  // agent's is (the same rule and code); without it nothing compacts unless asked.
  const spec = { ...runSpecOf(flags), session: { id: sessionId, branch } };
  if (spec.compaction === undefined) spec.compaction = { contextWindow: 128_000, reserveTokens: 16_000, keepRecentTokens: 1, auto: false };
  const built = await buildCliAgent(
    spec,
    runtime,
    {
      model,
      skills,
      storage,
      checkout,
      recordSink,
      sinks: [render],
      recordFirst: false,
      agentId: CHAT_AGENT_ID,
      source: "chat",
      onPlanChange: (plan) => {
        pendingPlan = plan;
      },
    },
    storage,
  );
  agent = built.agent;
  planner = built.planner;

  // ---- the REPL
  const rl = readline.createInterface({ input, output, terminal: interactive, prompt: PROMPT, historySize: 200 });
  let busy: Promise<void> | null = null;
  let interruptArmed = false;
  let exiting = false;
  /** Set when readline closed (Ctrl-D, end of input, exit): it must not be touched after. */
  let inputClosed = false;
  let finish!: () => void;
  const finished = new Promise<void>((r) => (finish = r));

  const setPrompt = (text: string) => {
    if (!inputClosed) rl.setPrompt(text);
  };
  const showPrompt = () => {
    if (exiting || inputClosed || !interactive) return;
    rl.setPrompt(gate.waiting ? rl.getPrompt() : busy === null ? PROMPT : "");
    rl.prompt(true);
    screen.moved(rl.getPrompt() === "");
  };

  const view: ApprovalView = {
    ask(question, prompt) {
      screen.line(question);
      openTool = null;
      if (inputClosed) return;
      rl.setPrompt(prompt);
      rl.prompt(true);
      screen.moved(false);
    },
    note(text) {
      screen.line(text);
    },
    done() {
      setPrompt(busy === null ? PROMPT : "");
    },
  };
  gate.attach(view, { interactive, ...(flags.approvalTimeoutMs !== undefined ? { timeoutMs: flags.approvalTimeoutMs } : {}) });

  const startRun = (what: () => Promise<unknown>): Promise<void> => {
    setPrompt("");
    const p = (async () => {
      try {
        await what();
      } catch (e) {
        screen.line(`[error: ${(e as Error).message}]`);
      } finally {
        busy = null;
        showPrompt();
      }
    })();
    busy = p;
    return p;
  };

  const exit = async (why = "the chat is closing"): Promise<void> => {
    if (exiting) return;
    exiting = true;
    gate.close();
    if (busy !== null) {
      agent.abort(why);
      await busy;
    }
    if (!inputClosed) {
      try {
        rl.close();
      } catch {
        // a terminal that is gone (EIO restoring its mode): nothing left to close
      }
    }
    finish();
  };
  exitRef.exit = exit;

  const listSessions = async () => {
    const ids = await storage.listSessions();
    if (!ids.includes(sessionId)) ids.push(sessionId);
    for (const id of ids.sort()) {
      const branches = id === sessionId && (await storage.head(id)) === null && branch === "main" ? [] : await storage.listBranches(id);
      const runs = (await storage.load(id))?.runs.length ?? 0;
      const mark = id === sessionId ? "*" : " ";
      const names = branches.map((b) => (id === sessionId && b.branch_id === branch ? `${b.branch_id} (current)` : b.branch_id));
      screen.line(`${mark} ${id}  runs ${runs}  branches ${names.length > 0 ? names.join(", ") : "(none yet)"}`);
    }
  };

  const fork = async (name: string) => {
    try {
      const c = await storage.fork(sessionId, { sourceBranch: branch, ...(name !== "" ? { branchId: name } : {}) });
      const from = branch;
      const claim = await storage.claimBranch(sessionId, c.branch.branch_id, "agentcore chat");
      held.claim?.release();
      held.claim = claim;
      branch = c.branch.branch_id;
      recorder = new SessionRecorder(sessionId, storage, branch);
      screen.line(`[forked ${from} at ${c.branch.base_record_id ?? "the start"}: now on branch ${branch}]`);
    } catch (e) {
      if (!(e instanceof SessionError)) throw e;
      const empty = (await storage.head(sessionId, branch)) === null;
      screen.line(`[cannot fork: ${empty ? "nothing is recorded in this session yet" : e.message}]`);
    }
  };

  /** Handle one line. In interactive mode a run is started and not awaited. */
  const handle = async (line: string): Promise<void> => {
    if (exiting) return;
    interruptArmed = false;
    const input = parseChatInput(line);
    // A waiting approval takes the line, except /abort and /exit, which deny it by ending the run.
    const stops = input.kind === "command" && (input.name === "abort" || input.name === "exit");
    if (!stops && gate.answer(line)) return;
    const idle = busy === null;
    const wait = async (p: Promise<void>) => {
      if (!interactive) await p;
    };
    switch (input.kind) {
      case "blank":
        break;
      case "invalid":
        screen.line(`[${input.message}]`);
        break;
      case "text":
        if (idle) return wait(startRun(() => agent.run(input.text)));
        {
          const h = agent.followUp(input.text);
          if (h.receipt.status === "accepted") {
            screen.line(`[queued as a follow-up (${h.receipt.queue_size} waiting); /steer changes the running run instead]`);
            h.wait().catch((e: Error) => screen.line(`[follow-up dropped: ${e.message}]`));
          } else screen.line(`[not queued: ${NOT_QUEUED[h.receipt.status] ?? h.receipt.status}; type it again at the prompt]`);
        }
        break;
      case "command":
        switch (input.name) {
          case "help":
            screen.line(chatHelp());
            break;
          case "exit":
            await exit();
            return;
          case "abort":
            if (idle) screen.line("[nothing is running]");
            else if (agent.abort("aborted by the user (/abort)")) screen.line("[aborting…]");
            else screen.line("[the run is already stopping]");
            break;
          case "steer": {
            const r = agent.steer(input.arg);
            if (r.status === "accepted") screen.line(`[steering queued (${r.queue_size}): it reaches the model before its next request]`);
            else if (r.status === "agent_idle") screen.line("[nothing is running: type the message as a new task]");
            else screen.line(`[steering not accepted: ${r.status}]`);
            break;
          }
          case "continue":
            if (!idle) screen.line("[a run is in flight; /continue works at the prompt]");
            else if (!agent.canContinue) screen.line(`[cannot continue: ${agent.continueRejectionReason}]`);
            else return wait(startRun(() => agent.continueRun()));
            break;
          case "compact":
            if (!idle) screen.line("[a run is in flight; /compact works at the prompt]");
            else {
              return wait(startRun(() => agent.compact()));
            }
            break;
          case "sessions":
            await listSessions();
            break;
          case "fork":
            if (!idle) screen.line("[a run is in flight; /fork works at the prompt]");
            else await fork(input.arg);
            break;
          case "plan": {
            const plan = planner?.plan ?? null;
            if (planner === null) screen.line("[planning is off (--no-plan)]");
            else if (plan === null) screen.line("[no plan yet]");
            else for (const l of renderPlan(plan)) screen.line(l);
            break;
          }
        }
    }
  };

  let chain: Promise<void> = Promise.resolve();
  rl.on("line", (line: string) => {
    screen.moved(true); // the Enter that ended the line moved the cursor
    // Without a terminal nothing echoes the input: show it, so the transcript reads like a session.
    if (!interactive) chain = chain.then(() => screen.line(`${PROMPT}${line}`));
    chain = chain
      .then(() => handle(line))
      .catch((e) => {
        screen.line(`[error: ${(e as Error).message}]`);
      })
      .then(() => {
        if (busy === null && !gate.waiting) showPrompt();
      });
  });
  // The terminal went away (EIO from reading it or restoring its mode, as when
  // its window closes): the input is over, end like Ctrl-D. Unhandled, the
  // error left the process spinning without a terminal.
  rl.on("error", (e: unknown) => {
    if (!inputClosed && !exiting)
      error.write(
        `agentcore chat: the terminal is gone (${(e as NodeJS.ErrnoException)?.code ?? (e as Error)?.message ?? String(e)}); stopping\n`,
      );
    inputClosed = true;
    gate.close();
    void exit();
  });
  rl.on("close", () => {
    inputClosed = true;
    if (exiting) return;
    // Ctrl-D or the end of piped input: no more answers can come.
    gate.close();
    void chain.then(async () => {
      if (busy !== null) await busy;
      await exit();
    });
  });
  const onInterrupt = () => {
    if (exiting) return;
    if (busy !== null) {
      screen.line(agent.abort("interrupted by the user (Ctrl-C)") ? "^C aborting the run…" : "^C the run is already stopping");
      return;
    }
    if (interruptArmed) {
      screen.line("^C");
      void exit();
      return;
    }
    interruptArmed = true;
    screen.line("^C (press Ctrl-C again, Ctrl-D or type /exit to quit)");
    showPrompt();
  };
  rl.on("SIGINT", onInterrupt);
  proc.on("SIGINT", onInterrupt);
  // SIGTERM, or SIGHUP when the terminal goes away: end like /exit (the run is
  // aborted and journaled as finished, so the session can be resumed); a
  // second one exits at once.
  let endedBy = null as { name: string; status: number } | null;
  const onEndSignal = (name: string, status: number) => {
    if (endedBy !== null) proc.exit(status);
    endedBy = { name, status };
    screen.line(`[${name}: stopping]`);
    void exit(`the chat is closing (${name})`);
  };
  const onTerm = () => onEndSignal("SIGTERM", 143);
  const onHup = () => onEndSignal("SIGHUP", 129);
  proc.on("SIGTERM", onTerm);
  proc.on("SIGHUP", onHup);

  const resumed = checkout !== null ? `, resumed with ${sessionMessages(checkout.session).length} messages` : "";
  screen.line(`agentcore chat — session ${sessionId} (branch ${branch}${resumed}). /help lists the commands; Ctrl-D quits.`);
  if (planner?.plan) for (const l of renderPlan(planner.plan)) screen.line(l);
  showPrompt();

  try {
    await finished;
  } finally {
    proc.off("SIGINT", onInterrupt);
    proc.off("SIGTERM", onTerm);
    proc.off("SIGHUP", onHup);
    await agent.shutdown();
  }
  screen.line(
    `[session ${sessionId}, branch ${branch}: resume with --session ${sessionId}${branch !== "main" ? ` --branch ${branch}` : ""}]`,
  );
  if (screen.broken) return 2;
  if (recordingErrors.length > 0) return 1;
  return endedBy?.status ?? 0;
}
