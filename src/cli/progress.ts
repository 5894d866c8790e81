/**
 * Progress on stderr for long `run` jobs: calls done and the rate, redrawn in
 * place at most four times a second. Used only when stderr is a terminal.
 *
 * @module
 */
export class Progress {
  #count = 0;
  #start = performance.now();
  #last = this.#start;
  #shown = false;

  /** Count one finished call; redraws when 250 ms have passed. */
  tick(): void {
    this.#count++;
    const now = performance.now();
    if (now - this.#last < 250) return;
    this.#last = now;
    this.#draw(now);
  }

  /** Draw the final count and end the line. */
  done(): void {
    if (this.#count === 0 && !this.#shown) return;
    this.#draw(performance.now());
    process.stderr.write("\n");
  }

  #draw(now: number): void {
    const secs = Math.max((now - this.#start) / 1000, 1e-3);
    const rate = Math.round(this.#count / secs);
    process.stderr.write(`\ragentcore: ${this.#count.toLocaleString("en-US")} calls, ${rate.toLocaleString("en-US")}/s   `);
    this.#shown = true;
  }
}
