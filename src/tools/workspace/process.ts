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
 * - While children run, killing their groups is held as a process clean-up
 *   (`src/core/cleanup.ts`): the host (CLI, daemon) runs it when agentcore
 *   exits, or ends on SIGINT, SIGHUP or SIGTERM that the command does not
 *   handle itself. A child's own group never receives the terminal's
 *   Ctrl-C or a signal sent to agentcore. {@link killLiveGroups} does it
 *   for an application that embeds the tools without the host.
 *
 * - With `limits`, a supervisor samples `/proc` every
 *   {@link SUPERVISOR_INTERVAL_MS} ms ({@link Census}) and, when the
 *   command's processes are too many or hold too much resident memory, kills
 *   them all; the result then carries `limit`.
 *
 * A process that leaves the group (its own `setsid`) and keeps the pipes
 * open can't hold the call: once the child has exited and the group was
 * killed, the pipes are closed after a short grace period.
 *
 * @module
 */
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import { holdCleanup, type ProcessCleanup } from "../../core/cleanup.ts";
import { cgroupForkRefusals, cgroupPids } from "./sandbox.ts";

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
  /** Limits the supervisor enforces on the command's processes together (default: none). */
  limits?: GroupLimits;
}

/**
 * Limits on all of a command's processes together, enforced by a supervisor
 * that samples `/proc` (Linux only; elsewhere {@link supervisorAvailable} is
 * false and nothing is enforced). A process belongs to the command when it
 * is in the command's session or process group, or descends from it (the
 * processes inside a bubblewrap PID namespace descend from bwrap).
 */
export interface GroupLimits {
  /** Most processes (not threads) alive at once, zombies included. */
  processes?: number;
  /** Most resident memory (VmRSS, summed over the processes), in bytes. */
  memoryBytes?: number;
  /** Sampling interval (default {@link SUPERVISOR_INTERVAL_MS}). */
  intervalMs?: number;
  /**
   * A pids cgroup the command runs in (its pids.max the kernel's backstop):
   * a refused fork there counts as going over `processes`, and its members
   * are killed with the command's.
   */
  cgroup?: string;
}

/** Which limit the supervisor found exceeded (the command was then killed). */
export interface LimitHit {
  limit: "processes" | "memory_bytes";
  max: number;
  /** What the sample that broke the limit counted (processes, or bytes). */
  observed: number;
  /** Forks the kernel refused at the backstop (the cgroup's pids.max), when that is what tripped. */
  forksRefused?: number;
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
  /** Set only when the supervisor killed the command for going over {@link RunOptions.limits}. */
  limit?: LimitHit;
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
 * agentcore never reaches it: when agentcore itself ends, they must be
 * killed. While any is live, {@link killLiveGroups} is held as a process
 * clean-up (`src/core/cleanup.ts`): the host (the CLI, the daemon) runs it
 * when the process exits, or ends on a signal no command handles (chat and
 * agent abort the run on SIGINT, serve and mcp shut down on SIGTERM: then
 * the run's abort kills the children). This module never touches the
 * process's own signals or exit.
 */
const liveGroups = new Set<number>();

/** Kill (SIGKILL) the process group of every child still running. */
export function killLiveGroups(): void {
  for (const pid of liveGroups) killGroup(pid);
  liveGroups.clear();
  releaseGroups?.();
  releaseGroups = undefined;
}

/** The pids (= group ids) of the children still running. */
export function liveGroupIds(): number[] {
  return [...liveGroups];
}

const GROUPS_CLEANUP: ProcessCleanup = { exit: killLiveGroups, signal: killLiveGroups };
let releaseGroups: (() => void) | undefined;

function track(pid: number | undefined): void {
  if (pid === undefined || liveGroups.has(pid)) return;
  liveGroups.add(pid);
  releaseGroups ??= holdCleanup(GROUPS_CLEANUP);
}

function untrack(pid: number | undefined): void {
  if (pid === undefined || !liveGroups.delete(pid)) return;
  if (liveGroups.size === 0) {
    releaseGroups?.();
    releaseGroups = undefined;
  }
}

/** How often the supervisor samples the command's processes (ms). */
export const SUPERVISOR_INTERVAL_MS = 20;

/** Whether the process supervisor can work here (it reads Linux's `/proc`). */
export function supervisorAvailable(): boolean {
  try {
    return fs.statSync("/proc/self/stat").isFile();
  } catch {
    return false;
  }
}

interface ProcEntry {
  tgid: number;
  ppid: number;
  pgrp: number;
  sid: number;
  zombie: boolean;
  rss: number;
}

const field = (text: string, name: string): number => {
  const at = text.indexOf(`\n${name}:`);
  if (at < 0) return -1;
  const m = /^\s+(\d+)/.exec(text.slice(at + name.length + 2, at + name.length + 40));
  return m === null ? -1 : Number(m[1]);
};

/** A task's `/proc/PID/status` (a thread's too: its Tgid differs), or `null` when it is gone. */
function readStatus(pid: number): ProcEntry | null {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/status`, "latin1");
  } catch {
    return null; // gone meanwhile
  }
  const state = /\nState:\s+(\S)/.exec(text)?.[1] ?? "?";
  if (state === "X") return null;
  const rss = field(text, "VmRSS");
  // NSpgid/NSsid (Linux 4.1+) list the ids from the reader's namespace inwards: the first is ours
  return {
    tgid: field(text, "Tgid"),
    ppid: field(text, "PPid"),
    pgrp: field(text, "NSpgid"),
    sid: field(text, "NSsid"),
    zombie: state === "Z",
    rss: rss < 0 ? 0 : rss * 1024,
  };
}

/** The last pid the kernel handed out in our namespace (/proc/loadavg's last field), or -1. */
function lastPid(): number {
  try {
    const n = Number(fs.readFileSync("/proc/loadavg", "latin1").trim().split(" ").pop());
    return Number.isSafeInteger(n) ? n : -1;
  } catch {
    return -1;
  }
}

/**
 * The processes of one command: those in its session or process group (a
 * process that calls `setpgid` stays counted; one that calls `setsid` only
 * while its parent is known), and its descendants (everything inside a
 * bubblewrap PID namespace, whose orphans are re-parented to the sandbox's
 * init). Threads are not processes and are not counted.
 *
 * The first {@link Census.update} lists all of `/proc`; later ones read only
 * the pids handed out since (the kernel allocates them in increasing order
 * until it wraps, when the whole list is read again) and the known members.
 */
export class Census {
  readonly members = new Map<number, ProcEntry>();
  #last = -1;
  constructor(readonly root: number) {}

  #belongs(pid: number, e: ProcEntry): boolean {
    return e.tgid === pid && (pid === this.root || e.sid === this.root || e.pgrp === this.root || this.members.has(e.ppid));
  }

  update(): void {
    const last = lastPid();
    for (const pid of [...this.members.keys()]) {
      const e = readStatus(pid);
      if (e === null || e.tgid !== pid) this.members.delete(pid);
      else this.members.set(pid, e);
    }
    if (this.#last < 0 || last < 0 || last < this.#last || last - this.#last > 4096) this.#full();
    else for (let pid = this.#last + 1; pid <= last; pid++) this.#consider(pid);
    this.#last = last;
  }

  #consider(pid: number): void {
    const e = readStatus(pid);
    if (e !== null && this.#belongs(pid, e)) this.members.set(pid, e);
  }

  #full(): void {
    let names: string[];
    try {
      names = fs.readdirSync("/proc");
    } catch {
      return;
    }
    const all = new Map<number, ProcEntry>();
    for (const name of names) {
      const c = name.charCodeAt(0);
      if (c < 48 || c > 57) continue;
      const pid = Number(name);
      const e = readStatus(pid);
      if (e !== null && e.tgid === pid) all.set(pid, e);
    }
    const children = new Map<number, number[]>();
    for (const [pid, e] of all) {
      if (pid === this.root || e.sid === this.root || e.pgrp === this.root) this.members.set(pid, e);
      const list = children.get(e.ppid);
      if (list === undefined) children.set(e.ppid, [pid]);
      else list.push(pid);
    }
    const queue = [...this.members.keys()];
    while (queue.length > 0) {
      for (const c of children.get(queue.pop()!) ?? []) {
        if (!this.members.has(c)) {
          this.members.set(c, all.get(c)!);
          queue.push(c);
        }
      }
    }
  }

  /** Resident memory of the live members, summed (bytes). */
  residentBytes(): number {
    let total = 0;
    for (const e of this.members.values()) total += e.rss;
    return total;
  }
}

/** The live pids that belong to the command started as `root` (see {@link Census}). */
export function commandPids(root: number): number[] {
  const c = new Census(root);
  c.update();
  return [...c.members.keys()];
}

/** SIGKILL every process of the command (and of its cgroup), again until none is left (a fork in flight can add one). */
export function killCommand(root: number, cgroup?: string): void {
  for (let round = 0; round < 50; round++) {
    killGroup(root);
    const pids = [...commandPids(root), ...(cgroup !== undefined ? cgroupPids(cgroup) : [])].filter((p) => p !== root);
    if (pids.length === 0) return;
    for (const pid of pids) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // gone already
      }
    }
  }
}

/**
 * Sample the command's processes every `intervalMs`; when a limit is
 * exceeded, kill them all and report it through `onHit`. Returns a stop
 * function.
 */
function supervise(root: number, limits: GroupLimits, onHit: (hit: LimitHit) => void): () => void {
  const census = new Census(root);
  let stopped = false;
  const tick = () => {
    if (stopped) return;
    census.update();
    let hit: LimitHit | null = null;
    const count = census.members.size;
    const rss = census.residentBytes();
    const refused = limits.cgroup !== undefined ? cgroupForkRefusals(limits.cgroup) : 0;
    if (limits.processes !== undefined && (count > limits.processes || refused > 0)) {
      hit = { limit: "processes", max: limits.processes, observed: count, ...(refused > 0 ? { forksRefused: refused } : {}) };
    } else if (limits.memoryBytes !== undefined && rss > limits.memoryBytes)
      hit = { limit: "memory_bytes", max: limits.memoryBytes, observed: rss };
    if (hit !== null) {
      stop();
      killCommand(root, limits.cgroup);
      onHit(hit);
    }
  };
  const timer = setInterval(tick, limits.intervalMs ?? SUPERVISOR_INTERVAL_MS);
  const stop = () => {
    stopped = true;
    clearInterval(timer);
  };
  tick();
  return stop;
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
    let hit: LimitHit | undefined;
    const stopSupervisor =
      o.limits !== undefined &&
      child.pid !== undefined &&
      (o.limits.processes !== undefined || o.limits.memoryBytes !== undefined) &&
      supervisorAvailable()
        ? supervise(child.pid, o.limits, (h) => {
            hit = h;
          })
        : () => {};

    const finish = () => {
      if (settled || exit === null || !closed) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(graceTimer);
      stopSupervisor();
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
        ...(hit !== undefined ? { limit: hit } : {}),
      });
    };
    const onAbort = () => {
      stopSupervisor();
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
      stopSupervisor();
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
      stopSupervisor();
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
