/**
 * `exec`: run an allowlisted program with an argv array, inside the root.
 *
 * Arguments: `{"argv": [program, arg…], "cwd"?: string (relative folder,
 * default the root), "env"?: {NAME: value} (allowlisted names only, not
 * PATH, HOME, XDG_*, SHELL or TMPDIR),
 * "timeout_ms"?: integer (at most the configured timeout), "stdin"?: string}`.
 * Result: `{"exit_code", "signal", "stdout", "stderr", "truncated",
 * "stdout_bytes", "stderr_bytes", "timed_out", "isolated"}`. A non-zero exit
 * or a timeout is a successful call: the model reads `exit_code` and
 * `timed_out`. Refusals fail with `COMMAND_NOT_ALLOWED` (rules in
 * `rules.ts`); the `cwd` follows the rooted path rules.
 *
 * Never a shell string: there is no shell between the call and the program.
 * The allowlist is resolved to absolute paths through PATH when the tool is
 * created; a missing program fails creation, and one found inside the root
 * (which the file tools can rewrite) is warned about, as is a PATH entry
 * inside the root. The environment is exactly the
 * allowlisted variables (values from agentcore's own environment at
 * creation, overridable per call). Process handling (process group killed on
 * timeout, capped output) is in `process.ts`; isolation in `sandbox.ts`.
 *
 * Resource limits (`limits`, defaults {@link DEFAULT_EXEC_LIMITS}) bound every
 * command: the supervisor in `process.ts` counts its processes and their
 * resident memory and kills them all when over; util-linux's `prlimit`
 * starts the program with RLIMIT_CPU, RLIMIT_FSIZE, a RLIMIT_DATA ceiling
 * (twice `memoryBytes`) and no core dumps. The kernel also caps the
 * command's tasks ({@link taskBackstop}) through a pids cgroup where
 * agentcore may create one, else, for a user other than root, RLIMIT_NPROC
 * inside bubblewrap's user namespace (root is exempt from it; outside a user
 * namespace it counts all of the user's processes). Going over fails the
 * call with `RESOURCE_LIMIT` (details: `limit`, `max`, `observed`, and the
 * output so far). Without prlimit or /proc, creation warns about the limits
 * that are then not enforced.
 *
 * For git, the repository's own configuration is untrusted: before each
 * command the configuration git would read is listed (and the files its
 * `includeIf` settings name), and every repository setting that names a
 * program or a file to write gets the operator's value or a neutral one as
 * a command-scope setting (`GIT_CONFIG_COUNT`; see `gitConfigOverrides` in
 * `rules.ts`).
 *
 * Isolation `auto` (default) uses bubblewrap when it works here, else runs
 * the command directly, warns once on stderr at creation, and reports
 * `"isolated": false` in every result; `required` refuses to create the tool
 * without bubblewrap; `off` never isolates.
 *
 * @module
 */
import * as fs from "node:fs";
import * as nodePath from "node:path";
import type { ToolContext, ToolDefinition } from "../definition.ts";
import { resolveRoot } from "../fs/rooted.ts";
import { markTrustedSchema } from "../schema.ts";
import { closeQuietly, fail, openDirPath, protectedInside } from "./dirfd.ts";
import { runProcess, supervisorAvailable, type RunResult } from "./process.ts";
import {
  absolutePathOnly,
  checkArguments,
  checkProgram,
  DEFAULT_EXEC_ENV,
  envDenial,
  envFixed,
  envNameAllowed,
  gitArgv,
  gitConfigOverrides,
  GIT_SAFE_PREFIX,
  parseScopedConfig,
  type GitConfigEntry,
  PROGRAM_NAME,
  RUNS_PROGRAMS,
} from "./rules.ts";
import {
  bwrapArgs,
  bwrapHasTmpfsSize,
  bwrapMakesUserNamespace,
  createPidsCgroup,
  detectBwrap,
  dirsOutside,
  findOnPath,
  pathDirs,
  launcherArgv,
  pidsCgroupBase,
  removeCgroup,
  rlimitWrapper,
} from "./sandbox.ts";
import { checkTimeoutMs, deepFreeze } from "./util.ts";

export const DEFAULT_EXEC_TIMEOUT_MS = 30_000;
export const DEFAULT_EXEC_MAX_OUTPUT = 64 * 1024;

/** Resource limits of every exec command (config: `tools.exec.limits`, snake_case). */
export interface ExecLimits {
  /** Processes alive at once, the command included (default 256). */
  processes: number;
  /** Resident memory of all its processes together, bytes (default 2 GiB). */
  memoryBytes: number;
  /** Largest file a process may write, bytes (default 1 GiB). */
  fileSizeBytes: number;
  /** CPU time per process, seconds (default 600). */
  cpuSeconds: number;
}

export const DEFAULT_EXEC_LIMITS: Readonly<ExecLimits> = Object.freeze({
  processes: 256,
  memoryBytes: 2 * 1024 ** 3,
  fileSizeBytes: 1024 ** 3,
  cpuSeconds: 600,
});

/** Config names of the limits, as `RESOURCE_LIMIT` details and messages report them. */
const LIMIT_KEYS = {
  processes: "processes",
  memoryBytes: "memory_bytes",
  fileSizeBytes: "file_size_bytes",
  cpuSeconds: "cpu_seconds",
} as const;

export interface ExecArgs {
  argv: string[];
  cwd?: string;
  env?: Record<string, string>;
  timeout_ms?: number;
  stdin?: string;
}

export interface ExecResult extends RunResult {
  isolated: boolean;
}

export interface ExecToolOptions {
  root: string;
  /** Program names (bare). */
  allow: readonly string[];
  /** Environment variable names passed through (default PATH, HOME, LANG, LC_ALL, TERM, TZ). */
  env?: readonly string[];
  timeoutMs?: number;
  maxOutputBytes?: number;
  isolation?: "auto" | "required" | "off";
  /** Where programs (and bwrap) are looked up; default `$PATH`. */
  searchPath?: readonly string[];
  /** Environment the allowlisted values come from; default `process.env`. */
  sourceEnv?: Record<string, string | undefined>;
  /** Creation-time warnings (no bubblewrap, an allowlisted shell); default: one line each on stderr. */
  warn?: (message: string) => void;
  /** Absolute paths kept read-only in the sandbox when inside the root (agentcore's config file, history log). */
  protect?: readonly string[];
  /** Resource limits (each defaults to {@link DEFAULT_EXEC_LIMITS}). */
  limits?: Partial<ExecLimits>;
}

export const EXEC_PARAMETERS = deepFreeze({
  $schema: "https://json-schema.org/draft/2020-12/schema",
  type: "object",
  properties: {
    argv: {
      type: "array",
      minItems: 1,
      maxItems: 1024,
      items: { type: "string", maxLength: 65536 },
      description: "Program name (from the allowlist, no path) and its arguments. No shell is involved.",
    },
    cwd: { type: "string", maxLength: 4096, description: "Working folder relative to the root (default: the root)." },
    env: {
      type: "object",
      maxProperties: 64,
      propertyNames: { pattern: "^[A-Za-z_][A-Za-z0-9_]*$" },
      additionalProperties: { type: "string", maxLength: 65536 },
      description: "Values for allowlisted environment variables.",
    },
    timeout_ms: {
      type: "integer",
      minimum: 1,
      description: "Kill the command after this many milliseconds (capped by the configuration).",
    },
    stdin: { type: "string", maxLength: 1048576, description: "Text written to the command's standard input." },
  },
  required: ["argv"],
  additionalProperties: false,
} as const);
markTrustedSchema(EXEC_PARAMETERS);

/** Whether `p` (or the file it resolves to) lies inside `realRoot`. */
function insideRoot(realRoot: string, p: string): boolean {
  const base = realRoot.endsWith("/") ? realRoot : `${realRoot}/`;
  const inside = (x: string) => x === realRoot || x.startsWith(base);
  if (inside(nodePath.resolve(p))) return true;
  try {
    return inside(fs.realpathSync(p));
  } catch {
    return false;
  }
}

function stderrWarn(message: string): void {
  globalThis.process?.stderr?.write(`agentcore: warning: ${message}\n`);
}

/** Create an `exec` tool. Throws when a program is not found, an env name is forbidden, or isolation is required but missing. */
export function createExecTool(options: ExecToolOptions): ToolDefinition<ExecArgs> {
  const realRoot = resolveRoot(options.root);
  const warn = options.warn ?? stderrWarn;
  const dirs = options.searchPath ?? pathDirs();
  const timeoutMs = options.timeoutMs ?? DEFAULT_EXEC_TIMEOUT_MS;
  const maxOutput = options.maxOutputBytes ?? DEFAULT_EXEC_MAX_OUTPUT;
  checkTimeoutMs(timeoutMs, "exec timeout_ms");
  if (!Number.isSafeInteger(maxOutput) || maxOutput < 1) throw new RangeError("exec max_output_bytes must be a positive integer");
  if (options.allow.length === 0) throw new Error("exec: the allow list is empty");

  const programs = new Map<string, string>();
  for (const name of options.allow) {
    if (!PROGRAM_NAME.test(name) || name === "." || name === "..")
      throw new Error(`exec: allow entry ${JSON.stringify(name)} must be a bare program name (no '/')`);
    const abs = findOnPath(name, dirs);
    if (abs === null) throw new Error(`exec: program "${name}" was not found on PATH`);
    programs.set(name, abs);
  }
  const runners = [...programs.keys()].filter((n) => RUNS_PROGRAMS.has(n));
  if (runners.length > 0)
    warn(`exec allows ${runners.join(", ")}, which can run any program: the allowlist does not restrict what those commands do`);
  // A program file inside the root is one write_file or apply_patch can rewrite (keeping its mode bits).
  const inRoot = [...programs].filter(([, abs]) => insideRoot(realRoot, abs));
  if (inRoot.length > 0) {
    warn(
      `exec allows ${inRoot.map(([n, abs]) => `${n} (${abs})`).join(", ")}, found inside the root: write_file, apply_patch and commands can rewrite ${inRoot.length === 1 ? "it" : "them"}, so the allowlist does not restrict what runs`,
    );
  }

  const envNames = [...(options.env ?? DEFAULT_EXEC_ENV)];
  for (const n of envNames) {
    const why = envDenial(n);
    if (why !== null) throw new Error(`exec: environment variable "${n}" can't be allowlisted: ${why} (remove it from the env list)`);
    if (!envNameAllowed(n))
      throw new Error(`exec: environment variable name ${JSON.stringify(n)} is not a valid name (letters, digits, _)`);
  }
  const source = options.sourceEnv ?? (globalThis.process?.env as Record<string, string | undefined>) ?? {};
  const baseEnv: Record<string, string> = {};
  for (const n of envNames) {
    const v = source[n];
    if (v !== undefined) baseEnv[n] = n === "PATH" ? absolutePathOnly(v) : v;
  }
  const pathInRoot = (baseEnv.PATH ?? "").split(":").filter((d) => d !== "" && insideRoot(realRoot, d));
  if (pathInRoot.length > 0) {
    warn(
      `the PATH that commands get holds ${pathInRoot.join(", ")}, inside the root: programs a command looks up there can be rewritten by write_file and apply_patch`,
    );
  }

  const limits: ExecLimits = { ...DEFAULT_EXEC_LIMITS, ...definedOnly(options.limits ?? {}) };
  for (const [k, v] of Object.entries(limits)) {
    if (!Number.isSafeInteger(v) || v < 1)
      throw new RangeError(`exec limits.${LIMIT_KEYS[k as keyof ExecLimits]} must be a positive integer`);
  }
  // Kernel limits per process (CPU time, file size, a memory ceiling) through prlimit; the
  // supervisor in process.ts counts processes and resident memory for the whole command.
  // util-linux's prlimit: looked up on the search path, then in the system folders a short PATH may leave out
  const prlimit = findOnPath("prlimit", dirsOutside(realRoot, [...dirs, "/usr/bin", "/bin", "/usr/sbin", "/sbin"]));
  if (prlimit === null)
    warn(
      "prlimit (util-linux) not found: exec can't set the cpu_seconds and file_size_bytes limits nor the per-process memory ceiling (processes and memory_bytes are still enforced)",
    );
  if (!supervisorAvailable()) warn("/proc is not available: exec can't enforce the processes and memory_bytes limits");
  const rlimits = { cpuSeconds: limits.cpuSeconds, fileSizeBytes: limits.fileSizeBytes, dataBytes: 2 * limits.memoryBytes };

  const protectedPaths = protectedInside(realRoot, options.protect ?? []);
  const mode = options.isolation ?? "auto";
  // bubblewrap (like prlimit) is agentcore's helper, never one found inside the root
  const helperDirs = dirsOutside(realRoot, dirs);
  const bwrap = mode === "off" ? null : detectBwrap(helperDirs);
  if (bwrap === null && mode === "required")
    throw new Error('exec: isolation is "required" but bubblewrap (bwrap) is missing or does not work here');
  if (bwrap === null && mode === "auto")
    warn('bubblewrap (bwrap) not found or not working: exec runs commands without isolation (results say "isolated": false)');

  // The kernel's backstop for the process count (the supervisor can be starved of CPU by a fork
  // bomb): a pids cgroup where agentcore may create one (root, or a delegated cgroup), else, for a
  // user other than root, RLIMIT_NPROC inside bubblewrap's own user namespace (where it counts the
  // sandbox's tasks; root is exempt from it). Both count threads too, hence the margin.
  const taskCap = taskBackstop(limits.processes);
  // The launcher (a fixed perl script) keeps argv[0] the bare name behind prlimit and moves the
  // command into its cgroup; without perl, argv[0] is the program's path and there is no cgroup.
  const perl = findOnPath("perl", ["/usr/bin", "/bin"]);
  const cgroupBase = supervisorAvailable() && perl !== null ? pidsCgroupBase() : null;
  const uid = currentUid();
  const nproc = bwrap !== null && uid > 0 && bwrapMakesUserNamespace(bwrap, helperDirs) ? taskCap : undefined;
  // The sandbox's private /tmp and /run are tmpfs, memory that no VmRSS counts: each holds at most memory_bytes.
  const tmpfsBytes = bwrap !== null && bwrapHasTmpfsSize(bwrap) ? limits.memoryBytes : undefined;
  if (bwrap !== null && tmpfsBytes === undefined)
    warn(
      "this bubblewrap has no --size (it came with 0.5): files a command writes to the sandbox's /tmp are memory that memory_bytes does not bound",
    );
  const wrapper = prlimit === null ? [] : rlimitWrapper(prlimit, { ...rlimits, ...(nproc !== undefined ? { tasks: nproc } : {}) });
  // cat(1) from the system folders: the textconv that changes nothing, put in place of a repository's own
  const cat = programs.has("git") ? findOnPath("cat", dirsOutside(realRoot, ["/usr/bin", "/bin"])) : null;

  /**
   * The `GIT_CONFIG_*` variables that undo the repository's program-naming
   * settings for one git command: the configuration git would see there is
   * listed first (`git config --list --show-scope --includes` in the same
   * folder and environment, which runs no program), then
   * {@link gitConfigOverrides} picks the keys and their replacements.
   */
  /**
   * The submodule names `.gitmodules` declares (git reads it from the work
   * tree, else the index, else HEAD): its `submodule.NAME.ignore` beats
   * `diff.ignoreSubmodules`, so each name gets `ignore=all` too. Nothing
   * when the command is not inside a repository.
   */
  async function submoduleNames(
    git: string,
    cwd: string,
    env: Record<string, string>,
    limit: number,
    signal: AbortSignal,
    entries: readonly { scope: string }[],
  ): Promise<string[]> {
    if (!entries.some((e) => e.scope === "local" || e.scope === "worktree")) return [];
    const gitText = async (args: string[]) => {
      const r = await runProcess({
        file: git,
        args: [...GIT_SAFE_PREFIX, ...args],
        argv0: "git",
        cwd,
        env,
        timeoutMs: limit,
        maxOutputBytes: 1024 * 1024,
        signal,
      });
      return r.exit_code === 0 && !r.truncated ? r.stdout : null;
    };
    const top = (await gitText(["rev-parse", "--show-toplevel"]))?.replace(/\n$/, "");
    if (top === undefined || top === "") return [];
    let file = false;
    try {
      file = fs.lstatSync(nodePath.join(top, ".gitmodules")).isFile();
    } catch {
      file = false;
    }
    const sources = file
      ? [["--file", nodePath.join(top, ".gitmodules")]]
      : [
          ["--blob", ":.gitmodules"],
          ["--blob", "HEAD:.gitmodules"],
        ];
    for (const src of sources) {
      const text = await gitText(["config", ...src, "--null", "--name-only", "--list"]);
      if (text === null) continue;
      const names = new Set<string>();
      for (const key of text.split("\0")) {
        const m = /^submodule\.(.*)\.[^.]*$/s.exec(key);
        if (m !== null) names.add(m[1]!);
      }
      return [...names];
    }
    return [];
  }

  /**
   * The files the repository's `includeIf.*.path` settings name, read as
   * data whether their condition holds now or not (`onbranch:` changes
   * within a command: `git stash branch` switches, then runs `git status`),
   * their settings counted as the repository's. Appended to `entries`.
   */
  async function addConditionalIncludes(
    git: string,
    cwd: string,
    env: Record<string, string>,
    limit: number,
    signal: AbortSignal,
    entries: GitConfigEntry[],
  ): Promise<void> {
    const seen = new Set<string>();
    for (let i = 0; i < entries.length && seen.size < 32; i++) {
      const e = entries[i]!;
      if (
        e.scope === "global" ||
        e.scope === "system" ||
        e.scope === "command" ||
        !/^include(if\..*)?\.path$/s.test(e.key) ||
        e.value === null
      )
        continue;
      const origin = e.origin.startsWith("file:") ? e.origin.slice(5) : null;
      let file = e.value;
      if (file.startsWith("~/") && env.HOME !== undefined) file = nodePath.join(env.HOME, file.slice(2));
      else if (!file.startsWith("/")) {
        if (origin === null) continue;
        file = nodePath.resolve(cwd, nodePath.dirname(origin), file);
      }
      rewritableInclude(e.key, file);
      if (e.key === "include.path") continue; // git's listing has it already
      if (seen.has(file)) continue;
      seen.add(file);
      try {
        if (!fs.statSync(file).isFile()) continue; // git reads no FIFO or folder here either
      } catch {
        continue;
      }
      const r = await runProcess({
        file: git,
        args: [...GIT_SAFE_PREFIX, "config", "--file", file, "--list", "--null", "--show-scope", "--show-origin", "--includes"],
        argv0: "git",
        cwd,
        env,
        timeoutMs: limit,
        maxOutputBytes: 8 * 1024 * 1024,
        signal,
      });
      if (r.exit_code !== 0 || r.truncated) {
        fail(
          "COMMAND_NOT_ALLOWED",
          `git: the repository's config includes ${file} (${e.key}), which exec could not read to check it for programs: fix or remove that include`,
          { reason: "git_config_unreadable", key: e.key },
        );
      }
      // origins of a --file listing are relative to cwd like the main listing's; the scope is the repository's
      for (const x of parseScopedConfig(r.stdout)) entries.push({ ...x, scope: e.scope });
    }
  }

  /**
   * Refuse an include of the repository's config that a command can rewrite
   * while it runs: a file in the work tree (a checkout or `git stash apply`
   * changes it, then git's own subprocesses read the new settings), or one
   * of the files git writes inside `.git` (`COMMIT_EDITMSG`, refs, logs…).
   */
  function rewritableInclude(key: string, file: string): void {
    let real: string;
    try {
      real = fs.realpathSync(file);
    } catch {
      return; // missing: git skips it, and it is read again before the next command
    }
    if (!insideRoot(realRoot, real)) return;
    const parts = nodePath.relative(realRoot, real).split(nodePath.sep);
    const g = parts.lastIndexOf(".git");
    const inGit = g >= 0 && g < parts.length - 1 ? parts.slice(g + 1) : null;
    const written =
      inGit !== null &&
      (inGit.length > 1
        ? ["refs", "logs", "objects", "modules", "worktrees"].includes(inGit[0]!) || /^rebase-/.test(inGit[0]!)
        : /(^|_)(HEAD|MSG|EDITMSG)$|^index$|^packed-refs$|^EDIT_DESCRIPTION$/.test(inGit[0]!));
    if (inGit === null || written) {
      fail(
        "COMMAND_NOT_ALLOWED",
        `git: the repository's config includes ${file} (${key}), a file that commands ${inGit === null ? "and the file tools " : ""}can rewrite while git runs, so exec can't check the settings git would read from it: move them into .git/config or your global git config (~/.gitconfig)`,
        { key, path: file, reason: "git_config_include_rewritable" },
      );
    }
  }

  async function gitRepositoryOverrides(
    git: string,
    cwd: string,
    env: Record<string, string>,
    limit: number,
    signal: AbortSignal,
  ): Promise<Record<string, string>> {
    const listing = await runProcess({
      file: git,
      args: [...GIT_SAFE_PREFIX, "config", "--list", "--null", "--show-scope", "--show-origin", "--includes"],
      argv0: "git",
      cwd,
      env,
      timeoutMs: limit,
      maxOutputBytes: 8 * 1024 * 1024,
      signal,
    });
    if (listing.exit_code !== 0 || listing.truncated || listing.timed_out) {
      const why = listing.timed_out
        ? "timed out"
        : listing.truncated
          ? "is larger than 8 MiB"
          : `failed (exit ${listing.exit_code ?? listing.signal}): ${listing.stderr.trim().slice(0, 500)}`;
      fail(
        "COMMAND_NOT_ALLOWED",
        `git: reading the configuration this command would use ${why}; exec checks it for programs the repository names before running git (fix the repository's .git/config or the files it includes)`,
        { reason: "git_config_unreadable" },
      );
    }
    const entries = parseScopedConfig(listing.stdout);
    await addConditionalIncludes(git, cwd, env, limit, signal, entries);
    const settings: [string, string][] = [
      // a nested repository (a submodule) is another repository whose config is not read here: git status/diff/commit don't look into it
      ["diff.ignoresubmodules", "all"],
      ["submodule.recurse", "false"],
      ...(await submoduleNames(git, cwd, env, limit, signal, entries)).map((s): [string, string] => [`submodule.${s}.ignore`, "all"]),
      ...gitConfigOverrides(entries, { root: realRoot, cwd, cat, realpath: (p) => fs.realpathSync(p) }),
    ];
    const out: Record<string, string> = { GIT_CONFIG_COUNT: String(settings.length) };
    settings.forEach(([k, v], i) => {
      out[`GIT_CONFIG_KEY_${i}`] = k;
      out[`GIT_CONFIG_VALUE_${i}`] = v;
    });
    return out;
  }

  return {
    name: "exec",
    description: `Run a program with an argv array (no shell) in a folder under the root. Allowed programs: ${[...programs.keys()].join(", ")}. Output is capped at ${maxOutput} bytes per stream; commands are killed after ${timeoutMs} ms, or with RESOURCE_LIMIT when they go over ${limits.processes} processes, ${limits.memoryBytes} bytes of memory, ${limits.fileSizeBytes}-byte files or ${limits.cpuSeconds} s of CPU time per process. ${bwrap !== null ? "Runs isolated: read-only system, only the root writable, no network." : "Runs WITHOUT isolation."}`,
    parameters: EXEC_PARAMETERS as unknown as Record<string, unknown>,
    effect: "side_effecting",
    timeoutMs: timeoutMs + 5000,
    async handler(args: ExecArgs, ctx: ToolContext): Promise<ExecResult> {
      const name = checkProgram(args.argv[0]!, programs);
      const rest = args.argv.slice(1);
      rest.forEach((a, i) => {
        if (a.includes("\0"))
          fail("INVALID_ARGUMENTS", `argv[${i + 1}] contains a NUL character`, {
            errors: [{ path: `/argv/${i + 1}`, keyword: "nul", message: "contains NUL" }],
          });
      });
      checkArguments(name, rest);
      const env = { ...baseEnv };
      for (const [k, v] of Object.entries(args.env ?? {})) {
        if (!envNameAllowed(k))
          fail("COMMAND_NOT_ALLOWED", `environment variable "${k}" is never passed (${envDenial(k) ?? "not a valid name"})`, { env: k });
        if (!envNames.includes(k))
          fail("COMMAND_NOT_ALLOWED", `environment variable "${k}" is not on the allowlist (allowed: ${envNames.join(", ")})`, { env: k });
        if (envFixed(k))
          fail("COMMAND_NOT_ALLOWED", `environment variable "${k}" keeps the operator's value; a call can't set it`, { env: k });
        if (v.includes("\0"))
          fail("INVALID_ARGUMENTS", `env.${k} contains a NUL character`, {
            errors: [{ path: `/env/${k}`, keyword: "nul", message: "contains NUL" }],
          });
        env[k] = v;
      }
      if (name === "git") {
        env.GIT_CONFIG_NOSYSTEM = "1";
        env.GIT_TERMINAL_PROMPT = "0";
      }
      // The working folder: reached by the rooted descriptor walk, then named by its path.
      const cwdDir = openDirPath(realRoot, args.cwd ?? ".");
      const cwd = cwdDir.abs;
      closeQuietly(cwdDir.fd);

      const program = programs.get(name)!;
      const progArgs = name === "git" ? gitArgv(rest) : rest;
      const limit = Math.min(args.timeout_ms ?? timeoutMs, timeoutMs);
      if (name === "git") Object.assign(env, await gitRepositoryOverrides(program, cwd, env, limit, ctx.signal));
      const cgroup = cgroupBase !== null ? createPidsCgroup(cgroupBase, taskCap) : null;
      // unisolated: [prlimit …] [launcher] PROGRAM ARGS; isolated: [launcher] bwrap … -- [prlimit …] PROGRAM ARGS
      let argv: string[];
      if (bwrap !== null) {
        const inner = bwrapArgs(realRoot, cwd, program, progArgs, protectedPaths, wrapper, tmpfsBytes);
        argv = cgroup !== null ? [...launcherArgv(perl!, cgroup, "bwrap", bwrap), ...inner] : [bwrap, ...inner];
      } else if (perl !== null && (wrapper.length > 0 || cgroup !== null)) {
        argv = [...wrapper, ...launcherArgv(perl, cgroup, name, program), ...progArgs];
      } else {
        argv = [...wrapper, program, ...progArgs];
      }
      const run = { file: argv[0]!, args: argv.slice(1), argv0: argv[0] === program ? name : nodePath.basename(argv[0]!) };
      let result: RunResult;
      try {
        result = await runProcess({
          ...run,
          cwd,
          env,
          timeoutMs: limit,
          maxOutputBytes: maxOutput,
          stdin: args.stdin,
          signal: ctx.signal,
          limits: { processes: limits.processes, memoryBytes: limits.memoryBytes, ...(cgroup !== null ? { cgroup } : {}) },
        });
      } catch (err) {
        if (ctx.signal.aborted) throw err;
        const code = (err as { code?: unknown } | null)?.code;
        fail("IO_ERROR", `could not start ${name}${typeof code === "string" ? ` (${code})` : ""}`, {
          errno: typeof code === "string" ? code : "UNKNOWN",
          syscall: "spawn",
        });
      } finally {
        if (cgroup !== null) await removeCgroup(cgroup);
      }
      const isolated = bwrap !== null;
      const over = overLimit(result, isolated, wrapper.length > 0, limits);
      if (over !== null) {
        const { limit: _hit, ...outcome } = result;
        fail("RESOURCE_LIMIT", over.message, {
          limit: over.key,
          max: over.max,
          ...(over.observed !== undefined ? { observed: over.observed } : {}),
          ...outcome,
          isolated,
        });
      }
      return { ...result, isolated };
    },
  };
}

/** agentcore's user id, or -1 when unknown (no getuid, or Deno without --allow-sys). */
function currentUid(): number {
  try {
    return typeof globalThis.process?.getuid === "function" ? globalThis.process.getuid() : -1;
  } catch {
    return -1;
  }
}

/** The kernel's cap on a command's tasks (processes and threads) for a `processes` limit: a backstop above it. */
export function taskBackstop(processes: number): number {
  return processes * 4 + 64;
}

function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/**
 * The limit a finished command went over, if any: the supervisor's finding
 * (processes, memory_bytes), or a kernel limit's signal (SIGXCPU for
 * cpu_seconds, SIGXFSZ for file_size_bytes) that killed the command. Under
 * bubblewrap the command is bwrap's child, and bwrap exits with 128 + the
 * signal's number (152, 153) when its child is killed by one.
 */
function overLimit(
  r: RunResult,
  isolated: boolean,
  rlimits: boolean,
  limits: ExecLimits,
): { key: string; max: number; observed?: number; message: string } | null {
  if (r.limit !== undefined) {
    const what =
      r.limit.limit === "memory_bytes"
        ? `${r.limit.max} bytes of resident memory (it had ${r.limit.observed})`
        : r.limit.forksRefused !== undefined && r.limit.observed <= r.limit.max
          ? `${r.limit.max} processes (the kernel refused ${r.limit.forksRefused} more forks at its cap of ${taskBackstop(r.limit.max)} tasks, threads included)`
          : `${r.limit.max} processes (it had ${r.limit.observed})`;
    return {
      key: r.limit.limit,
      max: r.limit.max,
      observed: r.limit.observed,
      message: `exec: the command went over tools.exec.limits.${r.limit.limit}, ${what}, and was killed with all its processes`,
    };
  }
  if (!rlimits || r.timed_out) return null;
  const sig = r.signal ?? (isolated && r.exit_code === 152 ? "SIGXCPU" : isolated && r.exit_code === 153 ? "SIGXFSZ" : null);
  if (sig === "SIGXCPU")
    return {
      key: "cpu_seconds",
      max: limits.cpuSeconds,
      message: `exec: the command used more than tools.exec.limits.cpu_seconds, ${limits.cpuSeconds} s of CPU time, and was killed (SIGXCPU)`,
    };
  if (sig === "SIGXFSZ")
    return {
      key: "file_size_bytes",
      max: limits.fileSizeBytes,
      message: `exec: the command tried to write a file larger than tools.exec.limits.file_size_bytes, ${limits.fileSizeBytes} bytes, and was killed (SIGXFSZ)`,
    };
  return null;
}
