/**
 * The chat REPL's output: a writer that neutralises terminal control
 * characters and knows whether the cursor is at the start of a line.
 *
 * @module
 */

// deno-lint-ignore no-control-regex
const UNSAFE_CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/** Writes to the terminal and remembers whether the cursor is at the start of a line. */
export class Screen {
  #atStart = true;
  /** Set once a write failed (a closed pipe): later writes are dropped. */
  broken = false;
  /** Called before each write (the spinner erases its line). */
  beforeWrite: (() => void) | null = null;
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
    this.beforeWrite?.();
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

  /** Whether the cursor is at the start of a line. */
  get atStart(): boolean {
    return this.#atStart;
  }

  /** Something else (readline's prompt, or an echoed Enter) moved the cursor. */
  moved(atStart: boolean): void {
    this.#atStart = atStart;
  }
}
