/**
 * What the chat REPL tracks, in one object: the agent and its session
 * branch, the run in flight, the approval gate, the screen and the line
 * editor, and how the chat is ending. The commands (commands.ts) and the
 * input loop (repl.ts) are functions of it; none of it needs a terminal.
 *
 * @module
 */
import type { Agent, AgentEvent, AgentEventSource } from "../../agent/index.ts";
import type { PlanTracker } from "../../agent/plan.ts";
import type { BranchClaim } from "../../session/journal.ts";
import type { JournalStorage } from "../../session/journal.ts";
import { SessionRecorder } from "../../session/recorder.ts";
import type { ApprovalView, ReplApprover } from "./approver.ts";
import { ChatEvents } from "./events.ts";
import { Screen } from "./screen.ts";
import { terminalLook } from "../live.ts";

/** The REPL's prompt at rest. */
export const PROMPT = "> ";

/** The streams the REPL uses (the process's by default). */
export interface ChatIO {
  input: NodeJS.ReadableStream & { isTTY?: boolean };
  output: NodeJS.WritableStream & { isTTY?: boolean };
  /** Warnings and errors. */
  error: { write(text: string): unknown };
}

/** The line editor as the state uses it (readline's Interface). */
export interface PromptLine {
  setPrompt(text: string): void;
  getPrompt(): string;
  /** What is typed on the input line so far. */
  readonly line?: string;
  prompt(preserveCursor?: boolean): void;
  close(): void;
}

/** A slash command: its syntax, its line in /help, and what it does to the state. */
export interface ChatCommand {
  name: string;
  /** Other words for it (`/q` for `/exit`). */
  aliases?: readonly string[];
  arg: "required" | "optional" | "none";
  usage: string;
  help: string;
  /** A problem with a given argument, or null (checked after `arg`). */
  check?(arg: string): string | null;
  /** Taken even while an approval question waits (the command ends the run, which denies it). */
  overridesApproval?: boolean;
  /** Works only at the prompt: during a run it says so and does nothing. */
  promptOnly?: boolean;
  run(state: ChatState, arg: string): void | Promise<void>;
}

export interface ChatStateInit {
  sessionId: string;
  branch: string;
  storage: JournalStorage;
  /** The claim on `branch`, held until the chat ends. */
  claim: BranchClaim;
  /** Ends the store's connections when the chat ends (PostgreSQL); default: nothing to do. */
  closeStore?: () => Promise<void>;
  gate: ReplApprover;
  io: ChatIO;
  /** The command table (/help is made from it). */
  commands: readonly ChatCommand[];
  /** --show-thinking: the model's thinking as it streams. */
  showThinking?: boolean;
}

export class ChatState {
  readonly sessionId: string;
  readonly storage: JournalStorage;
  /** Ends the store's connections (after the claim is released). */
  readonly closeStore: () => Promise<void>;
  readonly gate: ReplApprover;
  readonly commands: readonly ChatCommand[];
  /** stdin is a terminal: runs go on while lines are typed (piped lines wait for the previous one's run). */
  readonly interactive: boolean;
  readonly screen: Screen;
  readonly events: ChatEvents;
  /** The branch recorded on (moved by /fork), the claim on it and the recorder writing it. */
  branch: string;
  claim: BranchClaim;
  recorder: SessionRecorder;
  /** Set once built (src/host/agent.ts via setup.ts). */
  agent!: Agent;
  planner: PlanTracker | null = null;
  /** Messages restored from the session at start (null: a new session). */
  resumedMessages: number | null = null;
  /** The run in flight (a task, /continue or /compact); null at the prompt. */
  busy: Promise<void> | null = null;
  /** One Ctrl-C at the prompt was pressed; a second quits. */
  interruptArmed = false;
  exiting = false;
  /** Readline closed (Ctrl-D, end of input, exit): it must not be touched after. */
  inputClosed = false;
  /** The line editor, once the REPL runs. */
  line: PromptLine | null = null;
  /** The signal that ends the chat, with its exit status. */
  endedBy: { name: string; status: number } | null = null;
  readonly recordingErrors: Error[] = [];
  /**
   * The agent's recording sink: the current branch's recorder, required (a
   * failed write ends the turn failed); the failure is reported and makes the exit status 1.
   */
  readonly recordSink: {
    readonly required: true;
    handle(event: AgentEvent, source: AgentEventSource): Promise<void>;
    handleMany(events: readonly AgentEvent[], source: AgentEventSource): Promise<void>;
  };
  /** Resolves when the chat has ended (see {@link exit}). */
  readonly finished: Promise<void>;
  #finish!: () => void;

  constructor(init: ChatStateInit) {
    this.sessionId = init.sessionId;
    this.branch = init.branch;
    this.storage = init.storage;
    this.closeStore = init.closeStore ?? (async () => {});
    this.claim = init.claim;
    this.gate = init.gate;
    this.commands = init.commands;
    this.interactive = init.io.input.isTTY === true;
    this.recorder = new SessionRecorder(this.sessionId, this.storage, this.branch);
    this.finished = new Promise<void>((r) => (this.#finish = r));
    const error = init.io.error;
    // A closed output (a pipe whose reader went away) ends the chat with status 2, never a crash.
    this.screen = new Screen(init.io.output, (e) => {
      error.write(`agentcore chat: cannot write the output (${(e as NodeJS.ErrnoException)?.code ?? String(e)}); stopping\n`);
      if (this.line !== null) void this.exit();
    });
    (init.io.output as NodeJS.EventEmitter).on("error", (e: unknown) => this.screen.fail(e));
    // The live view (spinner, run summaries) only when the chat is on a terminal, input and output.
    const look = terminalLook(init.io.output);
    this.events = new ChatEvents(
      this.screen,
      () => this.planner !== null,
      this.interactive ? look : { ...look, live: false, redraw: false },
      init.io.output,
      () => !this.gate.waiting && (this.line?.line ?? "") === "",
      init.showThinking === true,
    );
    // Required, like agent's recorder: a failed write stops the turn `failed` / `store_failed` (docs/durability.md).
    const recorded = async (write: (r: SessionRecorder) => Promise<void>) => {
      const r = this.recorder; // the one current when the events came (a /fork swaps it)
      const before = r.errors.length;
      try {
        await write(r);
      } finally {
        if (r.errors.length > before) {
          const e = r.errors.at(-1)!;
          this.recordingErrors.push(e);
          error.write(`agentcore chat: the session journal was not written: ${e.message}\n`);
        }
      }
    };
    this.recordSink = {
      required: true,
      handle: (event, source) => recorded((r) => r.handle(event, source)),
      handleMany: (events, source) => recorded((r) => r.handleMany(events, source)),
    };
  }

  /** Where the approver shows its questions. */
  readonly approvalView: ApprovalView = {
    ask: (question, prompt) => {
      this.screen.line(question);
      this.events.interrupted();
      if (this.inputClosed || this.line === null) return;
      this.line.setPrompt(prompt);
      this.line.prompt(true);
      this.screen.moved(false);
    },
    note: (text) => this.screen.line(text),
    done: () => this.setPrompt(this.busy === null ? PROMPT : ""),
  };

  setPrompt(text: string): void {
    if (!this.inputClosed) this.line?.setPrompt(text);
  }

  /** Show the prompt (a terminal only): `> ` at rest, none during a run, the question's while an approval waits. */
  showPrompt(): void {
    const line = this.line;
    if (this.exiting || this.inputClosed || !this.interactive || line === null) return;
    line.setPrompt(this.gate.waiting ? line.getPrompt() : this.busy === null ? PROMPT : "");
    line.prompt(true);
    this.screen.moved(line.getPrompt() === "");
  }

  /**
   * Start a run (a task, /continue, /compact). On a terminal it resolves at
   * once and the run goes on; with piped input it resolves when the run ends,
   * so each line waits for the previous one's run.
   */
  startRun(what: () => Promise<unknown>): Promise<void> {
    this.setPrompt("");
    const p = (async () => {
      try {
        await what();
      } catch (e) {
        this.screen.line(`[error: ${(e as Error).message}]`);
      } finally {
        this.busy = null;
        this.showPrompt();
      }
    })();
    this.busy = p;
    return this.interactive ? Promise.resolve() : p;
  }

  /** End the chat: deny waiting questions, abort a run in flight (and wait for it), close the input. */
  async exit(why = "the chat is closing"): Promise<void> {
    if (this.exiting) return;
    this.exiting = true;
    this.gate.close();
    if (this.busy !== null) {
      this.agent.abort(why);
      await this.busy;
    }
    if (!this.inputClosed && this.line !== null) {
      try {
        this.line.close();
      } catch {
        // a terminal that is gone (EIO restoring its mode): nothing left to close
      }
    }
    this.#finish();
  }

  /** Record on `branch` from now on (after /fork): `claim` is its claim; the old branch's is released. */
  switchBranch(branch: string, claim: BranchClaim): void {
    this.claim.release();
    this.claim = claim;
    this.branch = branch;
    this.recorder = new SessionRecorder(this.sessionId, this.storage, branch);
  }

  /** The exit status once finished: 2 when the output broke, 1 when the journal was not written, else the ending signal's or 0. */
  status(): number {
    if (this.screen.broken) return 2;
    if (this.recordingErrors.length > 0) return 1;
    return this.endedBy?.status ?? 0;
  }
}
