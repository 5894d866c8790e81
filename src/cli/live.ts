/**
 * Live feedback on a terminal for `agent` and `chat`: a spinner with the
 * elapsed time while nothing else is drawn (the model is silent, a tool
 * runs), thinking shown on request, and the one-line summary of a finished
 * run (stop reason, turns, tokens, time).
 *
 * Only for a terminal. The spinner redraws its line with a carriage return
 * and erases it with spaces (no escape sequences), so it works under
 * `NO_COLOR`; `TERM=dumb` has no spinner at all (such terminals do not
 * overwrite a line). Colour (dim) is used only when the terminal has both.
 *
 * @module
 */
import type { AgentRunResult } from "../agent/index.ts";

/** What a terminal stream can show. */
export interface TerminalLook {
  /** The stream is a terminal: the live lines are wanted. */
  live: boolean;
  /** The line can be redrawn in place (not TERM=dumb): the spinner is drawn. */
  redraw: boolean;
  /** Colour escape sequences may be written (not NO_COLOR, not TERM=dumb). */
  color: boolean;
}

/** What `stream` can show, by its isTTY and the environment's NO_COLOR and TERM. */
export function terminalLook(stream: { isTTY?: boolean } | undefined, env: Record<string, string | undefined> = process.env): TerminalLook {
  const live = stream?.isTTY === true;
  const dumb = (env.TERM ?? "") === "dumb";
  // no-color.org: set and not empty.
  const noColor = (env.NO_COLOR ?? "") !== "";
  return { live, redraw: live && !dumb, color: live && !dumb && !noColor };
}

const DIM = "\u001b[2m";
const RESET = "\u001b[0m";

/** `text` dimmed when colour is allowed. */
export function dim(look: TerminalLook, text: string): string {
  return look.color ? `${DIM}${text}${RESET}` : text;
}

const FRAMES = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/** How often the spinner is redrawn, and when it is first drawn (a fast answer draws nothing). */
const TICK_MS = 100;

/** `0.4 s`, `12.3 s`, `2 min 5 s`. */
export function elapsed(ms: number): string {
  const s = Math.max(0, ms) / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  return `${m} min ${Math.floor(s - m * 60)} s`;
}

/** Terminal control characters (but newline and tab) shown as U+FFFD: model text cannot move the cursor. */
export function safeText(text: string): string {
  // deno-lint-ignore no-control-regex
  return text.replace(/\r\n/g, "\n").replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, "\ufffd");
}

/**
 * A spinner on one terminal line: `⠋ waiting for the model 1.2 s`. It is
 * drawn by a timer (unref'd) while a label is set, erased by {@link clear}
 * before anything else is written (and drawn again on the next tick), and
 * gone after {@link stop}. Does nothing when the stream cannot redraw.
 */
export class Spinner {
  #label: string | null = null;
  #since = 0;
  #frame = 0;
  /** Characters on the line now (0: nothing drawn). */
  #width = 0;
  #timer: ReturnType<typeof setInterval> | null = null;
  /** Not drawn while this says no (the chat's input line has text). */
  #may: () => boolean;

  constructor(
    private readonly out: { write(text: string): unknown },
    private readonly look: TerminalLook,
    may: () => boolean = () => true,
  ) {
    this.#may = may;
  }

  /** Whether something is drawn on the line now. */
  get shown(): boolean {
    return this.#width > 0;
  }

  /** Spin with `label`; the time counts from `since` (default now; a new label keeps the clock when `since` is given). */
  start(label: string, since: number = performance.now()): void {
    if (!this.look.redraw) return;
    this.#label = label;
    this.#since = since;
    if (this.#timer === null) {
      this.#timer = setInterval(() => this.#draw(), TICK_MS);
      (this.#timer as { unref?: () => void }).unref?.();
    }
  }

  /** Erase the line (something else is about to be written); the next tick draws it again. */
  clear(): void {
    if (this.#width === 0) return;
    try {
      this.out.write(`\r${" ".repeat(this.#width)}\r`);
    } catch {
      // a terminal that is gone: nothing to erase
    }
    this.#width = 0;
  }

  /** Erase it and stop spinning. */
  stop(): void {
    this.clear();
    this.#label = null;
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
  }

  #draw(): void {
    if (this.#label === null) return;
    if (!this.#may()) {
      this.clear();
      return;
    }
    const frame = FRAMES[this.#frame++ % FRAMES.length]!;
    const text = `${frame} ${this.#label} ${elapsed(performance.now() - this.#since)}`;
    // Shorter than the last frame: pad, so nothing of it is left.
    const pad = Math.max(0, this.#width - text.length);
    try {
      this.out.write(`\r${dim(this.look, text)}${" ".repeat(pad)}`);
    } catch {
      this.stop();
      return;
    }
    this.#width = text.length + pad;
  }
}

/**
 * The last line of a run: `[completed: text_response · 2 turns · tokens 120
 * in, 18 out · 0.4 s]`. Tokens the model did not report are said to be
 * unknown (or a lower bound, when only some requests reported them).
 */
export function summaryLine(r: Pick<AgentRunResult, "status" | "stop_reason" | "turns" | "usage">, ms: number): string {
  const u = r.usage;
  const tokens =
    u.reported_request_count === 0 && u.request_count > 0
      ? "tokens not reported"
      : `tokens ${u.complete ? "" : "at least "}${u.input_tokens.toLocaleString("en-US")} in, ${u.output_tokens.toLocaleString("en-US")} out`;
  return `[${r.status}: ${r.stop_reason} · ${r.turns} turn${r.turns === 1 ? "" : "s"} · ${tokens} · ${elapsed(ms)}]`;
}

/**
 * Thinking as it streams, on its own lines: `thinking: …`, continued lines
 * indented, dimmed when colour is allowed. {@link end} closes the block
 * before anything else is written.
 */
export class ThinkingView {
  #open = false;
  #atStart = true;

  constructor(
    private readonly out: { write(text: string): unknown },
    private readonly look: TerminalLook,
  ) {}

  get open(): boolean {
    return this.#open;
  }

  write(delta: string): void {
    if (delta === "") return;
    let text = safeText(delta);
    if (!this.#open) {
      text = `thinking: ${text.replace(/^\n+/, "")}`;
      this.#open = true;
      this.#atStart = false;
    } else if (this.#atStart) text = `  ${text}`;
    // The line break ends a line; the indent of the next one waits for its text.
    const trailing = text.endsWith("\n");
    const body = (trailing ? text.slice(0, -1) : text).replace(/\n/g, "\n  ");
    this.out.write(dim(this.look, body) + (trailing ? "\n" : ""));
    this.#atStart = trailing;
  }

  /** End the block (a newline unless the last piece ended one). */
  end(): void {
    if (!this.#open) return;
    if (!this.#atStart) this.out.write("\n");
    this.#open = false;
    this.#atStart = true;
  }
}
