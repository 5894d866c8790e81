/**
 * What `exec` lets through: program names, per-program option denylists,
 * and environment variables.
 *
 * **Program.** `argv[0]` must be a bare name (letters, digits, `.`, `_`,
 * `+`, `-`; no `/`, so `./ls`, `/bin/sh`, `../x` and `ls/../sh` are all
 * refused) that is on the allowlist. The allowlist was resolved to absolute
 * paths through PATH once, when the tool was created; a call can't change
 * which file runs.
 *
 * **Options.** Some allowed programs have options that run other programs.
 * Those are refused wherever they appear (for git, only before a `--`
 * argument, after which git reads every argument as a path; other programs
 * don't all honour `--`: GNU `find -- . -exec …` still executes):
 *
 * - `git`: global options (before the subcommand) other than `--no-pager`,
 *   `--no-optional-locks`, `--literal-pathspecs`, `--no-replace-objects`,
 *   `-P` and `--version` are refused (this covers `-c`, `-C`,
 *   `--config-env`, `--exec-path`, `--git-dir`, `--work-tree`, `-p`); the
 *   subcommand must be one of {@link GIT_SUBCOMMANDS} (no network, no
 *   `config`, no `submodule`, `bisect run`, `rebase -x`, `difftool`, and
 *   no `merge`/`cherry-pick`/`revert`, whose `--strategy` runs a
 *   `git-merge-NAME` program found on PATH);
 *   and the long options in {@link GIT_DENIED_LONG} (`--upload-pack`,
 *   `--receive-pack`, `--exec`, `--ext-diff`, `--textconv`, `--output`,
 *   `--open-files-in-pager`, `--template`, `--unsafe-paths` for `git apply`
 *   writing outside the worktree, …; git accepts unambiguous abbreviations,
 *   down to one letter, so every prefix counts too: `git init --t=DIR` is
 *   `--template`) and `-O` are refused. `exec` adds
 *   `-c core.hooksPath=/dev/null -c core.fsmonitor= -c core.pager=cat
 *   -c diff.external= -c protocol.allow=never -c core.editor=false
 *   -c sequence.editor=false -c safe.bareRepository=explicit` in front, so
 *   hooks, a repository's fsmonitor, pagers and editors never run, and a
 *   folder written to look like a bare repository (its config the model's)
 *   is not taken for one. Drivers the repository's configuration
 *   names (clean/smudge filters such as git-lfs, textconv, merge drivers,
 *   `gpg.program`) are the operator's and do run; under bubblewrap `.git` is
 *   read-only, so a command can't change them.
 * - `find`: `-exec`, `-execdir`, `-ok`, `-okdir`, `-fprint*`, `-fls`.
 * - `rg`: `--pre`, `--pre-glob`. `fd`: `-x`, `-X`, `--exec`,
 *   `--exec-batch`. `tar`: `--to-command`, `--use-compress-program`, `-I`,
 *   `--checkpoint-action`, `--info-script`, `--new-volume-script`, `-F`,
 *   `--rsh-command`, `--rmt-command`. `sort`: `--compress-program`. `zip`:
 *   `-TT`, `--unzip-command`. Long options count with GNU abbreviations;
 *   short letters count inside bundled clusters (`-xvIcmd`, `tar xIf`).
 *
 * Programs that are themselves ways to run anything (shells, interpreters,
 * `env`, `xargs`, `sed` with its `e` command, `awk` with `system()`, …) can
 * be allowlisted, but then the allowlist means nothing for them:
 * {@link RUNS_PROGRAMS} lists them, and creating the tool warns.
 *
 * **Environment.** The child gets only the allowlisted variables; `PATH`
 * keeps only its absolute entries (an empty or `.` entry would let a
 * program find helpers in the working folder). A call may override
 * allowlisted variables except {@link FIXED_ENV} (`PATH`, `HOME`, `XDG_*`,
 * `SHELL`, `TMPDIR`). Names
 * matching {@link FORBIDDEN_ENV} (the dynamic loader's `LD_*` and `DYLD_*`,
 * and variables that make shells, git or language runtimes execute code)
 * can't be allowlisted and can't be set per call.
 *
 * @module
 */
import { ToolError } from "../definition.ts";

export const PROGRAM_NAME = /^[A-Za-z0-9._+-]{1,128}$/;

/** Programs that run arbitrary code or other programs by design. */
export const RUNS_PROGRAMS: ReadonlySet<string> = new Set([
  "sh", "bash", "dash", "zsh", "ksh", "csh", "tcsh", "fish", "ash", "busybox",
  "env", "xargs", "nice", "nohup", "timeout", "stdbuf", "setsid", "sudo", "su", "doas", "chroot", "unshare", "nsenter", "flock", "watch", "script", "parallel", "strace", "ltrace", "gdb",
  "python", "python3", "python2", "perl", "ruby", "node", "bun", "deno", "php", "lua", "tclsh", "Rscript",
  "awk", "gawk", "mawk", "nawk", "sed", "vim", "vi", "nvim", "emacs", "ed", "less", "more", "man",
  "make", "cmake", "npm", "npx", "yarn", "pnpm", "pip", "cargo", "go",
  "ssh", "scp", "sftp", "rsync", "curl", "wget", "nc", "ncat", "socat",
  "docker", "podman", "kubectl", "systemctl", "crontab", "at", "batch", "bwrap", "firejail", "expect", "tmux", "screen",
]);

/** Environment variable names that can never be passed. */
export const FORBIDDEN_ENV: readonly RegExp[] = [
  /^LD_/,
  /^DYLD_/,
  /^(BASH_ENV|ENV|SHELLOPTS|BASHOPTS|PS4|PROMPT_COMMAND|IFS|CDPATH)$/,
  /^BASH_FUNC_/,
  /^GIT_/,
  /^(PAGER|MANPAGER|EDITOR|VISUAL|BROWSER|SSH_ASKPASS|SUDO_ASKPASS)$/,
  /^(NODE_OPTIONS|NODE_PATH|PYTHONSTARTUP|PYTHONPATH|PYTHONHOME|PERL5OPT|PERL5LIB|PERLLIB|RUBYOPT|RUBYLIB|BUN_OPTIONS|DENO_.*)$/,
];

export const DEFAULT_EXEC_ENV = ["PATH", "HOME", "LANG", "LC_ALL", "TERM", "TZ"] as const;

/**
 * Variables a call can't override even when allowlisted: they decide which
 * programs and which configuration files run (a `PATH` or `HOME` pointing
 * into the workspace would let a written file be executed, or a written
 * `.gitconfig` name a filter program). They keep the operator's values.
 */
export const FIXED_ENV: ReadonlySet<string> = new Set(["PATH", "HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR", "SHELL", "TMPDIR"]);

/** Git subcommands `exec` allows (local, no program execution by design). */
export const GIT_SUBCOMMANDS: ReadonlySet<string> = new Set([
  "status", "diff", "log", "show", "add", "rm", "mv", "restore", "commit", "branch", "tag", "switch", "checkout",
  "reset", "rev-parse", "ls-files", "ls-tree", "cat-file", "blame", "grep", "init", "stash", "describe",
  "shortlog", "merge-base", "rev-list", "show-ref", "apply", "version", "whatchanged",
]);

const GIT_GLOBAL_OK = new Set(["--no-pager", "--no-optional-locks", "--literal-pathspecs", "--no-replace-objects", "-P", "--version"]);
/** git long options refused anywhere before `--` (with their abbreviations). */
export const GIT_DENIED_LONG: readonly string[] = [
  "--upload-pack", "--receive-pack", "--exec", "--exec-path", "--ext-diff", "--textconv", "--output", "--open-files-in-pager",
  "--config", "--config-env", "--template", "--separate-git-dir", "--git-dir", "--work-tree", "--namespace", "--super-prefix",
  "--unsafe-paths",
];

/** Options injected in front of every git command run by `exec`. */
export const GIT_SAFE_PREFIX = [
  "-c", "core.hooksPath=/dev/null",
  "-c", "core.fsmonitor=",
  "-c", "core.pager=cat",
  "-c", "diff.external=",
  "-c", "protocol.allow=never",
  "-c", "core.editor=false",
  "-c", "sequence.editor=false",
  // A folder that merely looks like a bare repository (HEAD, config, objects/,
  // refs/: files write_file can make) is never used as one: its config would
  // be the model's, with filters and diff drivers that git runs.
  "-c", "safe.bareRepository=explicit",
  "--no-pager",
];

/**
 * Per-program option rules:
 * - `long`: GNU-style long options, refused also as unambiguous
 *   abbreviations (`--to-com=` for `--to-command`) and with `=value`;
 * - `exact`: whole arguments (find's single-dash words such as `-exec`);
 * - `prefix`: any argument starting with it (`-fprint`, `-fprintf`);
 * - `short`: letters refused anywhere in a single-dash cluster (`-xvIcmd`);
 * - `oldStyle`: the first argument is an option cluster even without a dash
 *   (`tar xIf …`).
 */
interface OptionRule {
  long?: string[];
  exact?: string[];
  prefix?: string[];
  short?: string;
  oldStyle?: boolean;
}

const DENIED: Record<string, OptionRule> = {
  find: { exact: ["-exec", "-execdir", "-ok", "-okdir", "-fls"], prefix: ["-fprint"] },
  rg: { long: ["--pre", "--pre-glob"] },
  fd: { long: ["--exec", "--exec-batch"], short: "xX" },
  tar: {
    long: ["--to-command", "--use-compress-program", "--checkpoint-action", "--info-script", "--new-volume-script", "--rsh-command", "--rmt-command"],
    short: "IF",
    oldStyle: true,
  },
  sort: { long: ["--compress-program"] },
  zip: { exact: ["-TT"], long: ["--unzip-command"] },
};

function refuse(message: string, details: Record<string, unknown>): never {
  throw new ToolError("COMMAND_NOT_ALLOWED", message, details);
}

/** Check `argv[0]`: a bare allowlisted name. Returns it. */
export function checkProgram(argv0: string, allowed: ReadonlyMap<string, string>): string {
  if (argv0.includes("/") || argv0.includes("\\")) {
    refuse(`argv[0] must be a bare program name from the allowlist, not a path`, { argv_index: 0 });
  }
  if (!PROGRAM_NAME.test(argv0) || argv0 === "." || argv0 === "..") refuse(`argv[0] is not a valid program name`, { argv_index: 0 });
  if (!allowed.has(argv0)) refuse(`program "${argv0}" is not on the allowlist (allowed: ${[...allowed.keys()].join(", ")})`, { argv_index: 0, program: argv0 });
  return argv0;
}

/** Check the arguments of `program` against its denylist. */
export function checkArguments(program: string, args: readonly string[]): void {
  if (program === "git") return checkGit(args);
  const rule = DENIED[program];
  if (rule === undefined) return;
  // Every argument is checked, `--` or not: GNU find reads `find -- . -exec …` as an expression.
  args.forEach((a, i) => {
    const name = a.includes("=") ? a.slice(0, a.indexOf("=")) : a;
    const deny = (option: string) => refuse(`${program}: option ${JSON.stringify(option)} runs other programs and is not allowed`, { argv_index: i + 1, option });
    if (rule.exact?.includes(name)) deny(name);
    const p = rule.prefix?.find((x) => a.startsWith(x));
    if (p !== undefined) deny(p);
    if (name.startsWith("--")) {
      const l = rule.long?.find((d) => isAbbreviation(name, d));
      if (l !== undefined) deny(l);
    } else if (rule.short !== undefined) {
      const cluster = a.startsWith("-") ? a.slice(1) : i === 0 && rule.oldStyle === true ? a : "";
      const letter = [...rule.short].find((c) => cluster.includes(c));
      if (letter !== undefined) deny(`-${letter}`);
    }
  });
}

/**
 * Whether the long option `name` (no `=value`) is `denied` or an abbreviation
 * of it. GNU getopt and git take any unambiguous prefix, down to a single
 * letter after `--` (`git init --t=DIR` is `--template=DIR`, the only init
 * option starting with t), so every prefix of at least one letter counts.
 */
function isAbbreviation(name: string, denied: string): boolean {
  return name === denied || (name.length >= 3 && denied.startsWith(name));
}

function checkGit(args: readonly string[]): void {
  let i = 0;
  for (; i < args.length && args[i]!.startsWith("-"); i++) {
    const a = args[i]!;
    if (!GIT_GLOBAL_OK.has(a)) refuse(`git: global option ${JSON.stringify(a.split("=")[0])} is not allowed`, { argv_index: i + 1, option: a.split("=")[0] });
  }
  if (i === args.length) return; // `git --version` or bare `git`
  const sub = args[i]!;
  if (!GIT_SUBCOMMANDS.has(sub)) {
    refuse(`git: subcommand ${JSON.stringify(sub)} is not allowed (allowed: ${[...GIT_SUBCOMMANDS].join(", ")})`, { argv_index: i + 1, subcommand: sub });
  }
  for (let k = i + 1; k < args.length; k++) {
    const a = args[k]!;
    if (a === "--") return;
    // `git grep -O[pager]` opens files in a program; short options bundle (`-iOcmd`).
    if (a.startsWith("-") && !a.startsWith("--") && (a.startsWith("-O") || (sub === "grep" && a.includes("O")))) {
      refuse(`git: option "-O" runs a program and is not allowed`, { argv_index: k + 1, option: "-O" });
    }
    if (!a.startsWith("--")) continue;
    const name = a.includes("=") ? a.slice(0, a.indexOf("=")) : a;
    const hit = GIT_DENIED_LONG.find((d) => isAbbreviation(name, d));
    if (hit !== undefined) {
      refuse(`git: option ${JSON.stringify(name)} (${hit}) can run programs or reach outside the repository and is not allowed`, { argv_index: k + 1, option: name });
    }
  }
}

/** Whether an environment variable name may ever be passed. */
export function envNameAllowed(name: string): boolean {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) && !FORBIDDEN_ENV.some((re) => re.test(name));
}

/** `PATH` without empty or relative entries (those resolve against the working folder). */
export function absolutePathOnly(value: string): string {
  return value
    .split(":")
    .filter((d) => d.startsWith("/"))
    .join(":");
}
