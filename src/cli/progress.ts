/**
 * Progress on stderr for long work (`run`'s calls, `sessions export` and
 * `import`'s records): the count done and the rate, redrawn in place at most
 * four times a second, and a phase when the work changes (`writing to the
 * store…`). Used only when stderr is a terminal.
 *
 * @module
 */

/** How a {@link Progress} line reads. */
export interface ProgressOptions {
  /** The line's prefix (default `agentcore`). */
  prefix?: string;
  /** What is counted (default `calls`). */
  noun?: string;
  /**
   * Quick work leaves nothing behind: `done()` erases the line it drew, and
   * draws nothing when it never drew. Default false (`run` ends with the
   * final count).
   */
  quiet?: boolean;
  /** Where the line goes (default process.stderr). */
  out?: { write(text: string): unknown };
}

export class Progress {
  #count = 0;
  #start = performance.now();
  #last = this.#start;
  #shown = false;
  #phase = "";
  #phaseStart = 0;
  #timer: ReturnType<typeof setInterval> | null = null;
  #width = 0;
  readonly #prefix: string;
  readonly #noun: string;
  readonly #quiet: boolean;
  readonly #out: { write(text: string): unknown };

  constructor(options: ProgressOptions = {}) {
    this.#prefix = options.prefix ?? "agentcore";
    this.#noun = options.noun ?? "calls";
    this.#quiet = options.quiet ?? false;
    this.#out = options.out ?? process.stderr;
  }

  /** Count one finished unit; redraws when 250 ms have passed. */
  tick(): void {
    this.#count++;
    const now = performance.now();
    if (now - this.#last < 250) return;
    this.#last = now;
    this.#draw(now);
  }

  /**
   * A new phase of the work (`writing to the store`): drawn at once (a step
   * that blocks the process still shows what it is), then every 250 ms with
   * its elapsed time while it lasts (one slow step, such as a transaction,
   * still shows it is going).
   */
  phase(text: string): void {
    this.#phase = text;
    this.#phaseStart = performance.now();
    this.#draw(this.#phaseStart);
    if (this.#timer === null) {
      this.#timer = setInterval(() => this.#draw(performance.now()), 250);
      (this.#timer as { unref?: () => void }).unref?.();
    }
  }

  /** Draw the final count and end the line (quiet: erase it). */
  done(): void {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    if (this.#quiet) {
      if (this.#shown) this.#out.write(`\r${" ".repeat(this.#width)}\r`);
      this.#shown = false;
      return;
    }
    if (this.#count === 0 && !this.#shown) return;
    this.#phase = "";
    this.#draw(performance.now());
    this.#out.write("\n");
  }

  #draw(now: number): void {
    const secs = Math.max((now - this.#start) / 1000, 1e-3);
    const rate = Math.round(this.#count / secs);
    const phase = this.#phase === "" ? "" : `${this.#phase}… ${((now - this.#phaseStart) / 1000).toFixed(1)} s`;
    const count = `${this.#count.toLocaleString("en-US")} ${this.#noun}, ${rate.toLocaleString("en-US")}/s`;
    // Nothing counted yet: the phase alone.
    const text = `${this.#prefix}: ${phase !== "" && this.#count === 0 ? phase : phase !== "" ? `${count}; ${phase}` : count}`;
    // Padded over a longer line drawn before (the phase may end).
    const pad = Math.max(3, this.#width - text.length);
    this.#out.write(`\r${text}${" ".repeat(pad)}`);
    this.#width = text.length + pad;
    this.#shown = true;
  }
}
