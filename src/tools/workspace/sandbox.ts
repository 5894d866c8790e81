/**
 * bubblewrap isolation for `exec`.
 *
 * When `bwrap` is found on PATH and a probe run succeeds (user namespaces or
 * root are needed), each command runs as:
 *
 * ```
 * bwrap --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --tmpfs /run
 *       --bind ROOT ROOT [--ro-bind ROOT/.git ROOT/.git] [--ro-bind ROOT/.agentcore ROOT/.agentcore]
 *       --unshare-all --die-with-parent --new-session --cap-drop ALL
 *       --chdir CWD -- /abs/program args…
 * ```
 *
 * so: the whole system is visible but read-only; only the workspace root is
 * writable (its `.git` and `.agentcore` are not); `/tmp` and `/run` are
 * private empty tmpfs (so the host's Unix sockets there, which a read-only
 * bind would not protect, are out of reach; an allowlisted program installed
 * under either is bound back read-only); there is no network (a new network
 * namespace with only loopback);
 * there is a new PID namespace (host processes are invisible, `/proc` shows
 * the sandbox's own); IPC and UTS are unshared; capabilities are dropped;
 * and the sandbox dies with its parent.
 *
 * Limits (documented in docs/workspace-tools.md): reading is not restricted
 * (secrets readable by the user are readable by the command); Unix sockets
 * outside /tmp and /run (under the home folder, /var/lib) can still be
 * connected to; a root without
 * `.git` can get one created by a command; nested `.git` folders (submodules)
 * are writable.
 *
 * @module
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";

/** Find an executable regular file named `name` in the PATH-like list `dirs`. */
export function findOnPath(name: string, dirs: readonly string[]): string | null {
  for (const dir of dirs) {
    if (dir === "" || !path.isAbsolute(dir)) continue; // relative PATH entries would depend on the cwd
    const candidate = path.join(dir, name);
    try {
      const st = fs.statSync(candidate);
      // mode bits rather than access(X_OK), which Deno only allows with --allow-sys
      if (st.isFile() && (st.mode & 0o111) !== 0) return candidate;
    } catch {
      // not here
    }
  }
  return null;
}

/** The directories of `$PATH` (or of `value`). */
export function pathDirs(value = globalThis.process?.env.PATH ?? ""): string[] {
  return value.split(path.delimiter).filter((d) => d !== "");
}

let cached: { key: string; bwrap: string | null } | undefined;

/**
 * The absolute path of a working `bwrap`, or `null`. The probe runs
 * `bwrap … --unshare-all -- bwrap --version` once per search path.
 */
export function detectBwrap(dirs: readonly string[] = pathDirs()): string | null {
  const key = dirs.join(":");
  if (cached?.key === key) return cached.bwrap;
  let found = findOnPath("bwrap", dirs);
  if (found !== null) {
    const r = spawnSync(found, ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-all", "--die-with-parent", "--cap-drop", "ALL", "--", found, "--version"], {
      stdio: ["ignore", "pipe", "pipe"],
      timeout: 10_000,
    });
    if (r.status !== 0) found = null;
  }
  cached = { key, bwrap: found };
  return found;
}

/**
 * The bwrap argv (after the bwrap binary) to run `program args` in `cwd`
 * with `root` writable except `.git`, `.agentcore` and the `protect` paths
 * (relative to the root: agentcore's config file or history log inside it).
 */
export function bwrapArgs(root: string, cwd: string, program: string, args: readonly string[], protect: readonly string[] = [], wrapper: readonly string[] = []): string[] {
  const hidden = hiddenTops();
  const out = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"];
  for (const top of hidden) out.push("--tmpfs", top);
  out.push("--bind", root, root);
  // The private /tmp and /run hide whatever lives under the host's: an
  // allowlisted program installed there (a checkout's node_modules/.bin under
  // /tmp, NixOS's /run/current-system/sw/bin) is bound back read-only, with
  // the folder its symlink resolves into.
  const dirs = programDirsUnder(hidden, program, root);
  if (wrapper.length > 0) for (const dir of programDirsUnder(hidden, wrapper[0]!, root)) if (!dirs.includes(dir)) dirs.push(dir);
  for (const dir of dirs) out.push("--ro-bind", dir, dir);
  for (const name of [".git", ".agentcore", ...protect]) {
    const p = path.join(root, name);
    let st: fs.Stats | null = null;
    try {
      st = fs.lstatSync(p);
    } catch {
      st = null;
    }
    // A symlink is never bound (it could point anywhere); a file (a worktree's
    // .git file) or folder is made read-only.
    if (st !== null && !st.isSymbolicLink()) out.push("--ro-bind", p, p);
  }
  out.push("--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--chdir", cwd, "--", ...wrapper, program, ...args);
  return out;
}

/** Kernel resource limits (setrlimit) for one command; see {@link rlimitWrapper}. */
export interface Rlimits {
  /** RLIMIT_CPU soft limit, seconds of CPU time per process (SIGXCPU; SIGKILL one second later). */
  cpuSeconds: number;
  /** RLIMIT_FSIZE: the largest file a process may write (SIGXFSZ beyond). */
  fileSizeBytes: number;
  /** RLIMIT_DATA: the most writable private memory one process may map (an allocation beyond fails). */
  dataBytes: number;
}

/** The hard limits agentcore itself runs under (an unprivileged process can't raise them), from /proc/self/limits. */
function currentHardLimits(): Record<string, number> {
  const out: Record<string, number> = {};
  let text = "";
  try {
    text = fs.readFileSync("/proc/self/limits", "latin1");
  } catch {
    return out;
  }
  for (const [label, key] of [["Max cpu time", "cpu"], ["Max file size", "fsize"], ["Max data size", "data"]] as const) {
    const m = new RegExp(`^${label}\\s+(\\S+)\\s+(\\S+)`, "m").exec(text);
    if (m !== null && m[2] !== "unlimited" && /^\d+$/.test(m[2]!)) out[key] = Number(m[2]);
  }
  return out;
}

/**
 * The argv prefix that starts a program under `limits` with util-linux's
 * `prlimit` (`prlimit --cpu=S:S+1 --fsize=F --data=D --core=0 --`), each
 * value capped at agentcore's own hard limit. Core dumps are off (a killed
 * process would leave a core file in the workspace).
 */
export function rlimitWrapper(prlimit: string, limits: Rlimits): string[] {
  const hard = currentHardLimits();
  const cap = (key: string, v: number) => (hard[key] !== undefined ? Math.min(v, hard[key]!) : v);
  const cpuHard = cap("cpu", limits.cpuSeconds + 1);
  const cpuSoft = Math.min(limits.cpuSeconds, cpuHard);
  return [prlimit, `--cpu=${cpuSoft}:${cpuHard}`, `--fsize=${cap("fsize", limits.fileSizeBytes)}`, `--data=${cap("data", limits.dataBytes)}`, "--core=0", "--"];
}

function isInside(p: string, dir: string): boolean {
  return p === dir || p.startsWith(dir.endsWith("/") ? dir : `${dir}/`);
}

/**
 * The host folders replaced by an empty tmpfs in the sandbox: `/tmp`, and
 * `/run` (and `/var/run` when it is a folder of its own) where the host's
 * Unix sockets live (D-Bus, the systemd user manager, docker, ssh and gpg
 * agents under /run/user/UID). A read-only bind does not stop `connect()`
 * on a socket file, and a new network namespace does not either, so they
 * must not be visible at all.
 */
function hiddenTops(): string[] {
  const tops = ["/tmp"];
  for (const p of ["/run", "/var/run"]) {
    try {
      if (fs.lstatSync(p).isDirectory()) tops.push(p);
    } catch {
      // absent here: nothing to hide
    }
  }
  return tops;
}

/** The folders of `program` (as named, and its real path) that a tmpfs on one of `tops` would hide, outside the root. */
function programDirsUnder(tops: readonly string[], program: string, root: string): string[] {
  let real = program;
  try {
    real = fs.realpathSync(program);
  } catch {
    // a missing program fails at exec time, with its own message
  }
  const dirs: string[] = [];
  for (const p of [program, real]) {
    const dir = path.dirname(p);
    if (tops.some((t) => isInside(dir, t)) && !isInside(dir, root) && !dirs.includes(dir)) dirs.push(dir);
  }
  return dirs;
}
