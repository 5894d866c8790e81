/**
 * `git_diff`: the repository's status, or a diff of the worktree, of what is
 * staged, or against a ref. Read-only.
 *
 * Arguments: `{"mode"?: "status" | "worktree" | "staged" | "ref" (default
 * "worktree"), "ref"?: string (required with mode "ref"), "paths"?: [relative
 * path…], "stat"?: boolean (a diffstat instead of the patch)}`.
 * Result: `{"mode", "output", "truncated"}`; git's error exits are
 * `GIT_FAILED` with its stderr (capped) in `details`.
 *
 * git runs with fixed arguments only, from the root, with no shell:
 *
 * ```
 * git --no-pager --no-optional-locks --literal-pathspecs
 *     status --short --untracked-files=all --ignore-submodules=all -- PATHS
 *   | diff [--cached | REF] --no-ext-diff --no-textconv --no-color --ignore-submodules=all --relative [--stat] -- PATHS
 * ```
 *
 * Before it, `ls-files -z --full-name` lists the index: a name with a `..`,
 * `.` or empty component or a `.git` one (which git never writes, but reads
 * from a crafted index, and then reads that file) refuses the repository.
 *
 * PATHS default to `.`, so when the root is a subfolder of a repository
 * nothing outside the root shows; `status` (short format, relative paths)
 * and `diff --relative` name files relative to the root, as the other tools do.
 *
 * git never reads the repository's configuration (gitenv.ts): the
 * repository is located without git, indirections leading outside are
 * refused (`GIT_FAILED` with `details.refused`), and git runs with `GIT_DIR`
 * a private git directory holding a config of agentcore's own (the
 * repository format, a few allowlisted data settings such as
 * `core.filemode`, and hardening settings), `GIT_WORK_TREE` the folder
 * holding `.git`, no system or global config or attributes, an empty
 * `HOME`, and an environment built from nothing. So no filter, textconv,
 * external diff, hook, pager, fsmonitor or helper of the repository's
 * choosing exists for git to run, whatever it is named. With a working
 * bubblewrap git also runs isolated, with nothing writable.
 *
 * A ref must look like a ref or revision: letters, digits, `_ . / ~ ^ -`,
 * not starting with `-`, no `..`, at most 200 characters. Paths follow the
 * rooted rules (no absolute, no `..`) and are literal (no pathspec magic).
 *
 * @module
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import type { ToolContext, ToolDefinition } from "../definition.ts";
import { resolveRoot, splitRelativePath } from "../fs/rooted.ts";
import { markTrustedSchema } from "../schema.ts";
import { fail, hasProcFd } from "./dirfd.ts";
import { runProcess } from "./process.ts";
import { detectBwrap, dirsOutside, findOnPath, pathDirs } from "./sandbox.ts";
import { type ConfigReader, type GitRepository, gitBwrapArgs, locateRepository, prepareShadow } from "./gitenv.ts";
import { absolutePathOnly } from "./rules.ts";
import { checkTimeoutMs, deepFreeze } from "./util.ts";

export const DEFAULT_GIT_DIFF_MAX_BYTES = 256 * 1024;
export const DEFAULT_GIT_DIFF_TIMEOUT_MS = 30_000;
/** The most `git ls-files -z` output checked for crafted names (64 MiB: about a million paths). */
const MAX_INDEX_LISTING = 64 * 1024 * 1024;
export const REF_PATTERN = /^(?!-)(?!.*\.\.)(?!.*\/\/)[A-Za-z0-9_./~^-]{1,200}$/;

export type GitDiffMode = "status" | "worktree" | "staged" | "ref";

export interface GitDiffArgs {
  mode?: GitDiffMode;
  ref?: string;
  paths?: string[];
  stat?: boolean;
}

export interface GitDiffResult {
  mode: GitDiffMode;
  output: string;
  truncated: boolean;
}

export interface GitDiffToolOptions {
  root: string;
  maxBytes?: number;
  timeoutMs?: number;
  /** Where `git` is looked up; default `$PATH`. */
  searchPath?: readonly string[];
}

export const GIT_DIFF_PARAMETERS = deepFreeze({
  $schema: "https://json-schema.org/draft/2020-12/schema",
  type: "object",
  properties: {
    mode: {
      enum: ["status", "worktree", "staged", "ref"],
      description: "status; worktree (unstaged changes, default); staged; ref (worktree against 'ref').",
    },
    ref: { type: "string", minLength: 1, maxLength: 200, description: "A branch, tag, commit or revision like HEAD~1 (mode ref)." },
    paths: {
      type: "array",
      maxItems: 256,
      items: { type: "string", minLength: 1, maxLength: 4096 },
      description: "Limit to these paths (relative to the root).",
    },
    stat: { type: "boolean", description: "A diffstat instead of the full patch." },
  },
  additionalProperties: false,
} as const);
markTrustedSchema(GIT_DIFF_PARAMETERS);

const GLOBAL = ["--no-pager", "--no-optional-locks", "--literal-pathspecs"];
/** `status --short` with names relative to the root, plain, whatever else says. */
const STATUS_CONFIG: readonly (readonly [string, string])[] = [
  ["status.relativePaths", "true"],
  ["color.status", "never"],
  ["status.branch", "false"],
  ["status.showStash", "false"],
];

let home: string | undefined;

/**
 * git's HOME: a folder with nothing in it, so no `~/.gitconfig` or
 * `~/.config/git/*` is read. On Linux a path under `/proc/self` that can't
 * exist (nobody can create entries there; git treats the missing files as
 * absent); elsewhere one empty private folder per process, removed at exit.
 */
function emptyHome(): string {
  if (hasProcFd()) return "/proc/self/agentcore-no-home";
  if (home === undefined || !fs.existsSync(home)) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentcore-git-home-"));
    if (home === undefined) {
      globalThis.process?.on?.("exit", () => {
        if (home !== undefined) fs.rmSync(home, { recursive: true, force: true });
      });
    }
    home = dir;
  }
  return home;
}

/** Create a `git_diff` tool. Throws when `git` is not on PATH. */
export function createGitDiffTool(options: GitDiffToolOptions): ToolDefinition<GitDiffArgs> {
  const realRoot = resolveRoot(options.root);
  // git and bwrap are never taken from a PATH entry inside the root: the repository (or write_file) put those there
  const dirs = dirsOutside(realRoot, options.searchPath ?? pathDirs());
  const git = findOnPath("git", dirs);
  if (git === null) throw new Error("git_diff: git was not found on PATH (entries inside the root are not searched)");
  // Defence in depth: git runs inside bubblewrap when it works here (exec's isolation, nothing writable).
  const bwrap = detectBwrap(dirs);
  const maxBytes = options.maxBytes ?? DEFAULT_GIT_DIFF_MAX_BYTES;
  const timeoutMs = checkTimeoutMs(options.timeoutMs ?? DEFAULT_GIT_DIFF_TIMEOUT_MS, "git_diff timeout_ms");
  // Built from nothing: no GIT_* (GIT_DIR, GIT_CONFIG_PARAMETERS…) or anything else inherited.
  const baseEnv = (): Record<string, string> => ({
    PATH: dirsOutside(realRoot, absolutePathOnly(globalThis.process?.env.PATH ?? "/usr/bin:/bin").split(":")).join(":"),
    HOME: emptyHome(),
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_ATTR_NOSYSTEM: "1",
    GIT_TERMINAL_PROMPT: "0",
    GIT_OPTIONAL_LOCKS: "0",
    GIT_NO_LAZY_FETCH: "1",
    LC_ALL: "C",
  });
  const run = (repo: GitRepository, shadowDir: string, env: Record<string, string>, args: string[], signal: AbortSignal, cap: number) => {
    const how =
      bwrap !== null
        ? { file: bwrap, argv0: "bwrap", args: gitBwrapArgs(repo, shadowDir, realRoot, git, args) }
        : { file: git, argv0: "git", args };
    return runProcess({ ...how, cwd: realRoot, env: { ...baseEnv(), ...env }, timeoutMs, maxOutputBytes: cap, signal });
  };

  return {
    name: "git_diff",
    description:
      "Show the git status of the root's repository, or a diff of the worktree, of what is staged, or against a ref. git runs with fixed arguments and a configuration of agentcore's own: no pager, hooks, external diff, textconv or filters from the repository.",
    parameters: GIT_DIFF_PARAMETERS as unknown as Record<string, unknown>,
    effect: "read_only",
    timeoutMs: 3 * timeoutMs + 5000,
    async handler(args: GitDiffArgs, ctx: ToolContext): Promise<GitDiffResult> {
      const mode = args.mode ?? "worktree";
      if (mode === "ref" && args.ref === undefined)
        fail("INVALID_ARGUMENTS", 'mode "ref" needs a "ref"', {
          errors: [{ path: "/ref", keyword: "required", message: 'required with mode "ref"' }],
        });
      if (mode !== "ref" && args.ref !== undefined)
        fail("INVALID_ARGUMENTS", '"ref" is only used with mode "ref"', {
          errors: [{ path: "/ref", keyword: "mode", message: 'only with mode "ref"' }],
        });
      if (args.ref !== undefined && (!REF_PATTERN.test(args.ref) || args.ref.endsWith("/") || args.ref.endsWith(".lock"))) {
        fail("INVALID_ARGUMENTS", "ref must be a branch, tag, commit or revision (letters, digits, _ . / ~ ^ -; no leading '-', no '..')", {
          errors: [{ path: "/ref", keyword: "pattern", message: "not a ref" }],
        });
      }
      const paths = (args.paths ?? []).map((p, i) => {
        try {
          const parts = splitRelativePath(p);
          return parts.length === 0 ? "." : parts.join("/");
        } catch (e) {
          const err = e as { code?: string; message: string };
          fail((err.code ?? "PATH_INVALID") as "PATH_INVALID", `paths[${i}]: ${err.message}`, { index: i });
        }
      });

      // Found without running git; indirections out of the repository are refused.
      const repo = locateRepository(realRoot);
      const readConfig: ConfigReader = async (file, env) => {
        const r = await run(
          repo,
          env.GIT_DIR!,
          env,
          [...GLOBAL, "config", "--file", file, "--no-includes", "--null", "--list"],
          ctx.signal,
          1024 * 1024,
        );
        if (r.timed_out) fail("TIMEOUT", `git ran longer than ${timeoutMs} ms`, { timeout_ms: timeoutMs });
        if (r.exit_code !== 0) {
          const first = r.stderr.trim().split("\n")[0] ?? "";
          fail("GIT_FAILED", `the repository's config can't be read (git config exit ${r.exit_code ?? r.signal}): ${first.slice(0, 300)}`, {
            exit_code: r.exit_code,
            stderr: r.stderr.slice(0, 4096),
          });
        }
        if (r.truncated) fail("GIT_FAILED", "the repository's config is over 1 MiB", { file });
        return r.stdout;
      };
      const sub =
        mode === "status"
          ? ["status", "--short", "--untracked-files=all", "--ignore-submodules=all"]
          : [
              "diff",
              ...(mode === "staged" ? ["--cached"] : mode === "ref" ? [args.ref!] : []),
              "--no-ext-diff",
              "--no-textconv",
              "--no-color",
              "--ignore-submodules=all",
              "--relative",
              ...(args.stat === true ? ["--stat"] : []),
            ];
      const shadow = await prepareShadow(repo, readConfig, mode === "status" ? STATUS_CONFIG : []);
      try {
        // git reads the index's names as they are: a crafted entry "../../../etc/hostname"
        // makes status and diff read (and show) that file. Refuse names git would never write.
        const ls = await run(repo, shadow.dir, shadow.env, [...GLOBAL, "ls-files", "-z", "--full-name"], ctx.signal, MAX_INDEX_LISTING);
        if (ls.timed_out) fail("TIMEOUT", `git ran longer than ${timeoutMs} ms`, { timeout_ms: timeoutMs });
        if (ls.exit_code !== 0) {
          const first = ls.stderr.trim().split("\n")[0] ?? "";
          fail("GIT_FAILED", `git ls-files failed (exit ${ls.exit_code ?? ls.signal}): ${first.slice(0, 300)}`, {
            exit_code: ls.exit_code,
            stderr: ls.stderr.slice(0, 4096),
          });
        }
        if (ls.truncated)
          fail("GIT_FAILED", `the index lists over ${MAX_INDEX_LISTING} bytes of names; git_diff can't check them`, {
            refused: true,
            reason: "index_too_large",
          });
        for (const name of ls.stdout.split("\0")) {
          if (name === "") continue;
          if (name.split("/").some((c) => c === "" || c === "." || c === ".." || c.toLowerCase() === ".git")) {
            fail(
              "GIT_FAILED",
              `git_diff refuses this repository: its index names ${JSON.stringify(name.slice(0, 300))}, a path git never writes (it leads outside the work tree or into .git): the index is crafted; remove it (rm .git/index && git reset) to rebuild it`,
              { refused: true, reason: "index_path_invalid", path: name.slice(0, 4096) },
            );
          }
        }
        // Without paths, "." still limits git to the root: when the root is a
        // subfolder of a repository, the rest of the repository is outside it.
        const r = await run(
          repo,
          shadow.dir,
          shadow.env,
          [...GLOBAL, ...sub, "--", ...(paths.length > 0 ? paths : ["."])],
          ctx.signal,
          maxBytes,
        );
        if (r.timed_out) fail("TIMEOUT", `git ran longer than ${timeoutMs} ms`, { timeout_ms: timeoutMs });
        if (r.exit_code !== 0) {
          const first = r.stderr.trim().split("\n")[0] ?? "";
          fail("GIT_FAILED", `git ${sub[0]} failed (exit ${r.exit_code ?? r.signal}): ${first.slice(0, 300)}`, {
            exit_code: r.exit_code,
            stderr: r.stderr.slice(0, 4096),
          });
        }
        return { mode, output: r.stdout, truncated: r.truncated };
      } finally {
        shadow.cleanup();
      }
    },
  };
}
