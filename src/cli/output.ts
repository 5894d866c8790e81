/**
 * Buffered, synchronous writing to a file descriptor (stdout for results).
 *
 * Lines are collected and written in large blocks, and `flush()` is called by
 * the CLI before it waits on anything (more input, an asynchronous tool), so
 * no produced result sits in a buffer while the process is idle.
 *
 * A pipe opened non-blocking can answer EAGAIN; the writer then waits briefly
 * and retries. A reader that has gone away (EPIPE: `agentcore run … | head`)
 * is raised as an {@link OutputClosedError}: the CLI then stops quietly with
 * {@link PIPE_CLOSED_STATUS}, as a program killed by SIGPIPE would (Bun, Node
 * and Deno ignore SIGPIPE, so the write fails instead). Any other failure
 * (EBADF, ENOSPC) is raised as an {@link OutputError}, which the CLI reports
 * and maps to exit status 2.
 *
 * @module
 */
import { AgentcoreError } from "../core/errors.ts";
import { writeSync } from "node:fs";

/** Writing to the output failed; nothing more can be delivered. */
export class OutputError extends AgentcoreError {
  readonly code: string = "OUTPUT_FAILED";
  override name = "OutputError";
}

/**
 * The reader of the output has gone (EPIPE: a closed pipe). Nobody is left to
 * read a message about it either: the CLI exits with
 * {@link PIPE_CLOSED_STATUS} and prints nothing.
 */
export class OutputClosedError extends OutputError {
  override readonly code: string = "OUTPUT_CLOSED";
  override name = "OutputClosedError";
}

/** Exit status when stdout's reader went away: 141 = 128 + SIGPIPE, what a shell reports for `git log | head`. */
export const PIPE_CLOSED_STATUS = 141;

/** The exit-status line of --help for a command that writes to stdout (the closed-pipe case). */
export const PIPE_HELP = "141  stdout's reader went away (a closed pipe: agentcore run FILE | head); nothing is printed";

/**
 * Report an output failure and give the exit status: a closed pipe is quiet
 * ({@link PIPE_CLOSED_STATUS}); any other failure prints `agentcore: …` on
 * stderr (`write`) and gives 2.
 */
export function outputFailure(e: OutputError, write: (text: string) => void = (t) => void process.stderr.write(t)): number {
  if (e instanceof OutputClosedError) return PIPE_CLOSED_STATUS;
  write(`agentcore: ${e.message}\n`);
  return 2;
}

const FLUSH_AT = 64 * 1024;
const sleeper = new Int32Array(new SharedArrayBuffer(4));
const encoder = new TextEncoder();

export class LineWriter {
  #parts: string[] = [];
  #size = 0;
  /** Set once a write met a closed pipe: later lines are dropped (nothing can read them). */
  closed = false;
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

  /** Write everything pending. Throws {@link OutputError} on failure ({@link OutputClosedError} for a closed pipe, and again for any later text). */
  flush(): void {
    if (this.closed) {
      const dropped = this.#size > 0;
      this.#parts = [];
      this.#size = 0;
      if (!dropped) return;
      throw new OutputClosedError("cannot write results: the reader of the output has gone (EPIPE)");
    }
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
        this.closed = code === "EPIPE";
        if (this.closed) throw new OutputClosedError("cannot write results: the reader of the output has gone (EPIPE)");
        throw new OutputError(`cannot write results: ${code ?? String(e)}`);
      }
    }
  }
}
