/**
 * Running one child process with hard limits, for `exec` and `git_diff`.
 *
 * - The child gets its own process group (`detached: true`, i.e. `setsid`).
 *   On timeout, on cancellation, and also when the child itself exits, the
 *   whole group gets `SIGKILL`, so grandchildren (background jobs, forked
 *   helpers) never outlive the call.
 * - stdout and stderr are each kept up to `maxOutputBytes`; the rest is
 *   counted and dropped, and the text ends with a marker
 *   `[… N bytes truncated]`. The child keeps running (and is killed by the
 *   timeout if it never stops).
 * - stdin is `/dev/null` unless `stdin` text is given.
 * - Output is decoded as UTF-8, invalid sequences replaced by U+FFFD.
 * - When agentcore itself ends while children run (its exit, or SIGINT,
 *   SIGHUP or SIGTERM that the command does not handle itself), their
 *   groups are killed first: a child's own group never receives the
 *   terminal's Ctrl-C or a signal sent to agentcore.
 *
 * A process that leaves the group (its own `setsid`) and keeps the pipes
 * open can't hold the call: once the child has exited and the group was
 * killed, the pipes are closed after a short grace period.
 *
 * @module
 */
import { spawn } from "node:child_process";

export interface RunOptions {
  /** Absolute path of the program. */
  file: string;
  /** Arguments after argv[0]. */
  args: readonly string[];
  /** argv[0] as the program sees it (default: `file`). */
  argv0?: string;
  cwd: string;
  env: Record<string, string>;
  timeoutMs: number;
  maxOutputBytes: number;
  stdin?: string;
  signal?: AbortSignal;
}

export interface RunResult {
  exit_code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  /** Either stream went over the cap. */
  truncated: boolean;
  /** Total bytes the child wrote to each stream (kept or not). */
  stdout_bytes: number;
  stderr_bytes: number;
  timed_out: boolean;
}

const PIPE_GRACE_MS = 250;

class Capped {
  readonly #chunks: Buffer[] = [];
  #kept = 0;
  total = 0;
  constructor(readonly cap: number) {}
  push(b: Buffer): void {
    this.total += b.length;
    if (this.#kept >= this.cap) return;
    const room = this.cap - this.#kept;
    const part = b.length > room ? b.subarray(0, room) : b;
    this.#chunks.push(part);
    this.#kept += part.length;
  }
  text(): string {
    let s = new TextDecoder("utf-8", { fatal: false }).decode(Buffer.concat(this.#chunks));
    if (this.total > this.#kept) {
      // a multi-byte character cut at the cap decodes to U+FFFD: drop it
      if (s.endsWith("\uFFFD")) s = s.slice(0, -1);
      s += `${s.endsWith("\n") || s === "" ? "" : "\n"}[… ${this.total - this.#kept} bytes truncated]`;
    }
    return s;
  }
}

function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // ESRCH: the group is already gone
  }
}

/**
 * Process groups of children still running. A child has its own group (it
 * must, for the group kill), so a terminal's Ctrl-C or a `kill` aimed at
 * agentcore never reaches it: when agentcore itself ends, it kills them.
 */
const liveGroups = new Set<number>();
/** Signals that end agentcore by default; each one's exit status is 128 + its number. */
const ENDING_SIGNALS: Readonly<Record<string, number>> = { SIGINT: 2, SIGHUP: 1, SIGTERM: 15 };
let exitHook = false;

function killLiveGroups(): void {
  for (const pid of liveGroups) killGroup(pid);
  liveGroups.clear();
}

/**
 * A signal that would end agentcore while children run. When the command
 * handles that signal itself (chat and agent abort the run on SIGINT, serve
 * and mcp shut down on SIGTERM), its handler decides and the run's abort kills
 * the children. Otherwise the signal keeps its default meaning, agentcore
 * ends, and the children's groups are killed first.
 */
const onEndingSignal = (signal: NodeJS.Signals): void => {
  // Another listener (even when this one was removed during the same dispatch,
  // which still calls it) means the command handles the signal.
  if (process.listeners(signal).some((l) => l !== onEndingSignal)) return;
  killLiveGroups();
  unwatchSignals();
  process.exit(128 + (ENDING_SIGNALS[signal] ?? 0));
};

function watchSignals(): void {
  if (!exitHook) {
    exitHook = true;
    process.on("exit", killLiveGroups);
  }
  for (const s of Object.keys(ENDING_SIGNALS)) process.on(s as NodeJS.Signals, onEndingSignal);
}

function unwatchSignals(): void {
  for (const s of Object.keys(ENDING_SIGNALS)) process.off(s as NodeJS.Signals, onEndingSignal);
}

function track(pid: number | undefined): void {
  if (pid === undefined || liveGroups.has(pid)) return;
  if (liveGroups.size === 0) watchSignals();
  liveGroups.add(pid);
}

function untrack(pid: number | undefined): void {
  if (pid === undefined || !liveGroups.delete(pid)) return;
  if (liveGroups.size === 0) unwatchSignals();
}

/**
 * Run a program to completion (or timeout). Rejects only when the program
 * can't be started (the error carries `code`, e.g. `ENOENT`) or when
 * `signal` fires (with the signal's reason); a non-zero exit, a kill or a
 * timeout is a normal result.
 */
export function runProcess(o: RunOptions): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    if (o.signal?.aborted) {
      reject(o.signal.reason);
      return;
    }
    const out = new Capped(o.maxOutputBytes);
    const err = new Capped(o.maxOutputBytes);
    let timedOut = false;
    let settled = false;
    let exit: { code: number | null; signal: string | null } | null = null;
    let closed = false;
    let graceTimer: ReturnType<typeof setTimeout> | undefined;

    const child = spawn(o.file, o.args as string[], {
      argv0: o.argv0,
      cwd: o.cwd,
      env: o.env,
      detached: true,
      stdio: [o.stdin === undefined ? "ignore" : "pipe", "pipe", "pipe"],
      windowsHide: true,
    });
    track(child.pid);

    const finish = () => {
      if (settled || exit === null || !closed) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(graceTimer);
      o.signal?.removeEventListener("abort", onAbort);
      resolve({
        exit_code: exit.code,
        signal: exit.signal,
        stdout: out.text(),
        stderr: err.text(),
        truncated: out.total > out.cap || err.total > err.cap,
        stdout_bytes: out.total,
        stderr_bytes: err.total,
        timed_out: timedOut,
      });
    };
    const onAbort = () => {
      killGroup(child.pid);
      untrack(child.pid);
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(graceTimer);
      child.stdout?.destroy();
      child.stderr?.destroy();
      reject(o.signal!.reason);
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child.pid);
    }, o.timeoutMs);
    o.signal?.addEventListener("abort", onAbort, { once: true });

    child.stdout!.on("data", (b: Buffer) => out.push(b));
    child.stderr!.on("data", (b: Buffer) => err.push(b));
    child.on("error", (e) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      o.signal?.removeEventListener("abort", onAbort);
      killGroup(child.pid);
      untrack(child.pid);
      reject(e);
    });
    child.on("exit", (code, sig) => {
      exit = { code, signal: sig };
      // No background job outlives the command.
      killGroup(child.pid);
      untrack(child.pid);
      graceTimer = setTimeout(() => {
        child.stdout?.destroy();
        child.stderr?.destroy();
        closed = true;
        finish();
      }, PIPE_GRACE_MS);
      finish();
    });
    child.on("close", () => {
      closed = true;
      finish();
    });
    if (o.stdin !== undefined && child.stdin) {
      child.stdin.on("error", () => {
        // the child closed its stdin early (EPIPE): not an error of the call
      });
      child.stdin.end(o.stdin);
    }
  });
}
