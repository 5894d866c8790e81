/**
 * Buffered, synchronous writing to a file descriptor (stdout for results).
 *
 * Lines are collected and written in large blocks, and `flush()` is called by
 * the CLI before it waits on anything (more input, an asynchronous tool), so
 * no produced result sits in a buffer while the process is idle.
 *
 * A pipe opened non-blocking can answer EAGAIN; the writer then waits briefly
 * and retries. Any other failure (EPIPE, EBADF, ENOSPC) is raised as an
 * {@link OutputError}, which the CLI maps to exit status 2.
 *
 * @module
 */
import { writeSync } from "node:fs";

/** Writing to the output failed; nothing more can be delivered. */
export class OutputError extends Error {
  override name = "OutputError";
}

const FLUSH_AT = 64 * 1024;
const sleeper = new Int32Array(new SharedArrayBuffer(4));
const encoder = new TextEncoder();

export class LineWriter {
  #parts: string[] = [];
  #size = 0;
  constructor(readonly fd: number) {}

  /** Queue one line (a newline is added). Flushes once 64 KiB are pending. */
  line(text: string): void {
    this.#parts.push(text, "\n");
    this.#size += text.length + 1;
    if (this.#size >= FLUSH_AT) this.flush();
  }

  /** Queue text as it is, without a newline (streamed text). Flushes once 64 KiB are pending. */
  write(text: string): void {
    this.#parts.push(text);
    this.#size += text.length;
    if (this.#size >= FLUSH_AT) this.flush();
  }

  /** Write everything pending. Throws {@link OutputError} on failure. */
  flush(): void {
    if (this.#size === 0) return;
    const bytes = encoder.encode(this.#parts.join(""));
    this.#parts = [];
    this.#size = 0;
    let off = 0;
    while (off < bytes.length) {
      try {
        off += writeSync(this.fd, bytes, off, bytes.length - off);
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code === "EAGAIN") {
          Atomics.wait(sleeper, 0, 0, 2);
          continue;
        }
        throw new OutputError(`cannot write results: ${code ?? String(e)}`);
      }
    }
  }
}
