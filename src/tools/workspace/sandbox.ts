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
 * Also here, for exec's resource limits: the `prlimit` argv
 * ({@link rlimitWrapper}), the perl launcher that keeps `argv[0]` and joins
 * a cgroup ({@link launcherArgv}), and the per-command pids cgroup
 * ({@link pidsCgroupBase}, {@link createPidsCgroup}, {@link removeCgroup}),
 * the kernel's backstop on the number of tasks where agentcore may create
 * one.
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
import { holdCleanup, type ProcessCleanup } from "../../core/cleanup.ts";

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

/**
 * `dirs` without the entries inside `root` (by their path or their real
 * path): where agentcore looks up the helpers it runs itself (`bwrap`,
 * git_diff's `git`, `prlimit`, `cat`), a file under the root is the
 * repository's (or one `write_file` wrote), not the operator's, and must
 * never run in their place. Relative entries are skipped by {@link findOnPath}.
 */
export function dirsOutside(root: string, dirs: readonly string[]): string[] {
  const base = root.endsWith("/") ? root : `${root}/`;
  const inside = (x: string) => x === root || x.startsWith(base);
  return dirs.filter((d) => {
    if (!path.isAbsolute(d)) return true;
    if (inside(path.resolve(d))) return false;
    try {
      return !inside(fs.realpathSync(d));
    } catch {
      return true;
    }
  });
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
    const r = spawnSync(
      found,
      [
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--unshare-all",
        "--die-with-parent",
        "--cap-drop",
        "ALL",
        "--",
        found,
        "--version",
      ],
      {
        stdio: ["ignore", "pipe", "pipe"],
        timeout: 10_000,
      },
    );
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
export function bwrapArgs(
  root: string,
  cwd: string,
  program: string,
  args: readonly string[],
  protect: readonly string[] = [],
  wrapper: readonly string[] = [],
  tmpfsBytes?: number,
): string[] {
  const hidden = hiddenTops();
  const out = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"];
  // a tmpfs is memory no process's VmRSS shows: without a size, files in /tmp got past memory_bytes
  for (const top of hidden) out.push(...(tmpfsBytes !== undefined ? ["--size", String(tmpfsBytes)] : []), "--tmpfs", top);
  // --dev's /dev is a tmpfs too, with a writable /dev/shm: a sized /dev/shm, and /dev itself read-only
  // (device nodes such as /dev/null still take writes)
  if (tmpfsBytes !== undefined) out.push("--size", String(tmpfsBytes), "--tmpfs", "/dev/shm", "--remount-ro", "/dev");
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
  /**
   * RLIMIT_NPROC, only where it counts the command's own tasks (inside
   * bubblewrap's user namespace, for a user other than root): outside one it
   * counts all of the user's processes and threads on the machine.
   */
  tasks?: number;
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
  for (const [label, key] of [
    ["Max cpu time", "cpu"],
    ["Max file size", "fsize"],
    ["Max data size", "data"],
    ["Max processes", "nproc"],
  ] as const) {
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
  const nproc = limits.tasks !== undefined ? [`--nproc=${cap("nproc", limits.tasks)}`] : [];
  return [
    prlimit,
    `--cpu=${cpuSoft}:${cpuHard}`,
    `--fsize=${cap("fsize", limits.fileSizeBytes)}`,
    `--data=${cap("data", limits.dataBytes)}`,
    ...nproc,
    "--core=0",
    "--",
  ];
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

const sizeSupport = new Map<string, boolean>();

/** Whether this bwrap takes `--size` for a tmpfs (bubblewrap 0.5 and later). */
export function bwrapHasTmpfsSize(bwrap: string): boolean {
  let known = sizeSupport.get(bwrap);
  if (known === undefined) {
    const r = spawnSync(bwrap, ["--help"], { stdio: ["ignore", "pipe", "pipe"], timeout: 10_000 });
    known = `${r.stdout?.toString() ?? ""}${r.stderr?.toString() ?? ""}`.includes("--size");
    sizeSupport.set(bwrap, known);
  }
  return known;
}

/**
 * Whether `bwrap --unshare-all` gives the command a user namespace of its
 * own (it does unless bwrap is setuid or user namespaces are off). Only
 * then does RLIMIT_NPROC inside the sandbox count the sandbox's tasks
 * rather than all of the user's.
 */
export function bwrapMakesUserNamespace(bwrap: string, dirs: readonly string[] = pathDirs()): boolean {
  const cat = findOnPath("cat", [...dirs, "/usr/bin", "/bin"]);
  if (cat === null) return false;
  let own = "";
  try {
    own = fs.readFileSync("/proc/self/uid_map", "latin1").trim();
  } catch {
    return false;
  }
  const r = spawnSync(
    bwrap,
    ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-all", "--die-with-parent", "--", cat, "/proc/self/uid_map"],
    {
      stdio: ["ignore", "pipe", "ignore"],
      timeout: 10_000,
    },
  );
  return r.status === 0 && r.stdout.toString().trim() !== own;
}

let pidsBase: string | null | undefined;

function cgroupDirs(): string[] {
  let self: string[];
  let mounts: string[];
  try {
    self = fs.readFileSync("/proc/self/cgroup", "latin1").split("\n");
    mounts = fs.readFileSync("/proc/self/mountinfo", "latin1").split("\n");
  } catch {
    return [];
  }
  const out: string[] = [];
  for (const line of self) {
    const [, controllers, rel] = line.split(/:(.*?):/) as [string, string | undefined, string | undefined];
    if (controllers === undefined || rel === undefined) continue;
    const v2 = controllers === "";
    if (!v2 && !controllers.split(",").includes("pids")) continue;
    for (const m of mounts) {
      const [pre, post] = m.split(" - ");
      if (pre === undefined || post === undefined) continue;
      const [fstype, , superOptions = ""] = post.split(" ");
      const f = pre.split(" ");
      const mountRoot = f[3] ?? "";
      const mountPoint = f[4] ?? "";
      if (v2 ? fstype !== "cgroup2" : fstype !== "cgroup" || !superOptions.split(",").includes("pids")) continue;
      if (!isInside(rel, mountRoot)) continue;
      out.push(path.join(mountPoint, path.relative(mountRoot, rel)));
    }
  }
  return out;
}

/**
 * The pids cgroup folder agentcore may create command cgroups in, or
 * `null`: the folder of its own pids cgroup (cgroup v1's pids hierarchy, or
 * cgroup v2 when that folder already delegates the pids controller to its
 * children), where creating a child with a `pids.max` works. Usually that
 * needs root or a delegated cgroup. Probed once.
 */
export function pidsCgroupBase(): string | null {
  if (pidsBase !== undefined) return pidsBase;
  pidsBase = null;
  for (const dir of cgroupDirs()) {
    const probe = path.join(dir, `agentcore-probe-${process.pid}`);
    try {
      fs.mkdirSync(probe);
    } catch {
      continue;
    }
    try {
      fs.writeFileSync(path.join(probe, "pids.max"), "1");
      pidsBase = dir;
    } catch {
      // no pids controller here (a v2 folder that does not delegate it)
    } finally {
      try {
        fs.rmdirSync(probe);
      } catch {
        // left behind: an empty cgroup
      }
    }
    if (pidsBase !== null) break;
  }
  if (pidsBase !== null) sweepStale(pidsBase);
  return pidsBase;
}

/** Remove the empty cgroups a previous agentcore left (it ended while a command ran). */
function sweepStale(base: string): void {
  let names: string[] = [];
  try {
    names = fs.readdirSync(base);
  } catch {
    return;
  }
  for (const name of names) {
    const m = /^agentcore-(\d+)-\d+$/.exec(name);
    if (m === null || Number(m[1]) === process.pid || fs.existsSync(`/proc/${m[1]}`)) continue;
    try {
      fs.rmdirSync(path.join(base, name)); // only succeeds when no process is left in it
    } catch {
      // still holds processes, or not ours to remove
    }
  }
}

/**
 * Command cgroups not yet removed. While any is, {@link removeLiveCgroups}
 * is held as an exit clean-up (`src/core/cleanup.ts`): the host runs it as
 * agentcore exits. This module never listens to the process itself.
 */
const liveCgroups = new Set<string>();
const CGROUPS_CLEANUP: ProcessCleanup = { exit: removeLiveCgroups };
let releaseCgroups: (() => void) | undefined;

function addLiveCgroup(dir: string): void {
  liveCgroups.add(dir);
  releaseCgroups ??= holdCleanup(CGROUPS_CLEANUP);
}

function deleteLiveCgroup(dir: string): void {
  liveCgroups.delete(dir);
  if (liveCgroups.size === 0) {
    releaseCgroups?.();
    releaseCgroups = undefined;
  }
}

/**
 * Kill what is left in every command cgroup not yet removed and remove them
 * (synchronous: for the process's exit). A cgroup whose killed processes
 * are not reaped yet stays; the next agentcore's sweep removes it.
 */
export function removeLiveCgroups(): void {
  for (const dir of liveCgroups) {
    killCgroupProcesses(dir);
    try {
      fs.rmdirSync(dir);
    } catch {
      // the killed are not reaped yet: the next agentcore's sweep removes it
    }
  }
}

let cgroupSeq = 0;

/** Create a command cgroup under `base` holding at most `max` tasks; `null` when that fails. */
export function createPidsCgroup(base: string, max: number): string | null {
  const dir = path.join(base, `agentcore-${process.pid}-${++cgroupSeq}`);
  try {
    fs.mkdirSync(dir);
  } catch {
    return null;
  }
  try {
    fs.writeFileSync(path.join(dir, "pids.max"), String(max));
    addLiveCgroup(dir);
    return dir;
  } catch {
    void removeCgroup(dir);
    return null;
  }
}

/** The pids in cgroup `dir` (empty when it is gone). */
export function cgroupPids(dir: string): number[] {
  try {
    return fs
      .readFileSync(path.join(dir, "cgroup.procs"), "latin1")
      .split("\n")
      .filter((l) => l !== "")
      .map(Number);
  } catch {
    return [];
  }
}

/** SIGKILL every process in cgroup `dir` (those already gone are skipped). */
function killCgroupProcesses(dir: string): void {
  for (const pid of cgroupPids(dir)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone already
    }
  }
}

/** How many times a fork was refused in cgroup `dir` for its pids.max (`pids.events`' max counter). */
export function cgroupForkRefusals(dir: string): number {
  try {
    const m = /^max (\d+)/m.exec(fs.readFileSync(path.join(dir, "pids.events"), "latin1"));
    return m === null ? 0 : Number(m[1]);
  } catch {
    return 0;
  }
}

/** Kill whatever is still in cgroup `dir` and remove it (a few tries while the killed are reaped). */
export async function removeCgroup(dir: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    killCgroupProcesses(dir);
    try {
      fs.rmdirSync(dir);
      deleteLiveCgroup(dir);
      return;
    } catch (e) {
      if ((e as { code?: string }).code === "ENOENT") {
        deleteLiveCgroup(dir);
        return;
      }
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The launcher's script: join cgroup `$cg` (when given), then exec `$path` as `$name`. */
const LAUNCHER =
  'my ($cg, $name, $path) = splice(@ARGV, 0, 3); if ($cg ne "") { open(my $f, ">", "$cg/cgroup.procs") or exit 126; print $f "0\\n"; close($f) or exit 126 } exec { $path } $name, @ARGV; exit 127';

/**
 * The argv that starts `path` with `argv[0]` = `name`, first moving itself
 * into cgroup `cgroup` (when not `null`), so not even the command's first
 * fork happens outside. A fixed perl script (`exec {PATH} NAME, ARGS`): no
 * shell, and nothing added to the environment (a shell would export `PWD`).
 */
export function launcherArgv(perl: string, cgroup: string | null, name: string, path: string): string[] {
  return [perl, "-e", LAUNCHER, "--", cgroup ?? "", name, path];
}
