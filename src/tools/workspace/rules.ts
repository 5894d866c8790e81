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
 *   writing outside the worktree, `--build-fake-ancestor` for `git apply`
 *   writing an index file wherever it names, …; git accepts unambiguous abbreviations,
 *   down to one letter, so every prefix counts too: `git init --t=DIR` is
 *   `--template`; a name that is exactly one of the subcommand's own options,
 *   {@link GIT_EXACT_OK}, is that option: `git diff --text`) and `-O` are
 *   refused. `exec` adds
 *   `-c core.hooksPath=/dev/null -c core.fsmonitor= -c core.pager=cat
 *   -c diff.external= -c protocol.allow=never -c core.editor=false
 *   -c sequence.editor=false -c safe.bareRepository=explicit` in front, so
 *   hooks, a repository's fsmonitor, pagers and editors never run, and a
 *   folder written to look like a bare repository (its config the model's)
 *   is not taken for one. The repository's own configuration (`.git/config`,
 *   `config.worktree`, the files they include, conditionally or not) is
 *   untrusted: before each command `exec` lists what git would read there and
 *   {@link gitConfigOverrides} replaces every setting of it that names a
 *   program or a file to write (filters, textconv, merge drivers, signing
 *   programs, helpers, pagers…) with the operator's global value or a
 *   neutral one; `core.worktree` outside the root is refused, and git is
 *   kept out of submodules (`--recurse-submodules` and
 *   `--ignore-submodules` other than `=all` refused).
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
 * allowlisted variables except those {@link envFixed} names (`PATH`, `HOME`, `XDG_*`,
 * `SHELL`, `TMPDIR`, `GNUPGHOME`). Names
 * on {@link ENV_DENYLIST} (the dynamic loader's `LD_*` and `DYLD_*`,
 * variables that make shells, git or language runtimes execute code, and
 * programs' option variables such as `TAR_OPTIONS` that can name a command)
 * can't be allowlisted and can't be set per call.
 *
 * @module
 */
import { ToolError } from "../definition.ts";

export const PROGRAM_NAME = /^[A-Za-z0-9._+-]{1,128}$/;

/** Programs that run arbitrary code or other programs by design. */
export const RUNS_PROGRAMS: ReadonlySet<string> = new Set([
  "sh",
  "bash",
  "dash",
  "zsh",
  "ksh",
  "csh",
  "tcsh",
  "fish",
  "ash",
  "busybox",
  "env",
  "xargs",
  "nice",
  "nohup",
  "timeout",
  "stdbuf",
  "setsid",
  "sudo",
  "su",
  "doas",
  "chroot",
  "unshare",
  "nsenter",
  "flock",
  "watch",
  "script",
  "parallel",
  "strace",
  "ltrace",
  "gdb",
  "python",
  "python3",
  "python2",
  "perl",
  "ruby",
  "node",
  "bun",
  "deno",
  "php",
  "lua",
  "tclsh",
  "Rscript",
  "awk",
  "gawk",
  "mawk",
  "nawk",
  "sed",
  "vim",
  "vi",
  "nvim",
  "emacs",
  "ed",
  "less",
  "more",
  "man",
  "make",
  "cmake",
  "npm",
  "npx",
  "yarn",
  "pnpm",
  "pip",
  "cargo",
  "go",
  "ssh",
  "scp",
  "sftp",
  "rsync",
  "curl",
  "wget",
  "nc",
  "ncat",
  "socat",
  "docker",
  "podman",
  "kubectl",
  "systemctl",
  "crontab",
  "at",
  "batch",
  "bwrap",
  "firejail",
  "expect",
  "tmux",
  "screen",
]);

/**
 * One entry of {@link ENV_DENYLIST}: an exact variable name or a name prefix,
 * and why a program would run code (or another program) because of it.
 */
export interface EnvDenial {
  /** The exact name (`BASH_ENV`), or, with `prefix: true`, the start of the names (`LD_`). */
  name: string;
  prefix?: true;
  /** The program reads the name in any case (npm: `npm_config_x`, `NPM_CONFIG_X`, `Npm_Config_x`). */
  anyCase?: true;
  reason: string;
}

const d = (name: string, reason: string): EnvDenial => ({ name, reason });
const p = (name: string, reason: string): EnvDenial => ({ name, prefix: true, reason });

/**
 * Environment variables that can never be allowlisted nor set per call,
 * because some program reads them as code, as a program to run, as options
 * that name a program to run, or as a place to load code from. This is the
 * one list: the config check ({@link envDenial}), the tool's creation and
 * every call use it, and docs/workspace-tools.md describes it.
 */
export const ENV_DENYLIST: readonly EnvDenial[] = [
  // the dynamic loader and the C library
  p("LD_", "the dynamic loader preloads or looks up libraries from it (LD_PRELOAD, LD_LIBRARY_PATH, LD_AUDIT)"),
  p("DYLD_", "the macOS dynamic loader injects libraries from it"),
  d("GLIBC_TUNABLES", "glibc's loader parses it before the program starts"),
  d("GCONV_PATH", "glibc's iconv loads conversion modules (shared libraries) from it"),
  d("LOCPATH", "glibc reads locale data from it"),
  d("NLSPATH", "catgets reads message catalogs (format strings) from it"),
  d("OPENSSL_CONF", "OpenSSL's config file can load engines and providers (shared libraries)"),
  d("OPENSSL_ENGINES", "OpenSSL loads engines (shared libraries) from it"),
  d("GTK_MODULES", "GTK loads the modules it names"),
  // shells: startup files, traps and prompts run code
  d("BASH_ENV", "bash runs the file it names before a non-interactive script"),
  d("ENV", "sh and dash run the file it names at startup"),
  d("ZDOTDIR", "zsh runs its startup files from this folder"),
  d("SHELLOPTS", "turns on bash options (xtrace with PS4) at startup"),
  d("BASHOPTS", "turns on bash shopt options at startup"),
  p("BASH_FUNC_", "bash imports function definitions from them"),
  d("BASH_LOADABLES_PATH", "bash's enable -f loads builtins (shared libraries) from it"),
  d("PS1", "an interactive shell expands command substitutions in its prompt"),
  d("PS4", "bash expands command substitutions in it when tracing"),
  d("PROMPT_COMMAND", "bash runs it before each prompt"),
  d("IFS", "changes how shells split words, so scripts run other commands"),
  d("CDPATH", "changes where scripts' cd lands, so they run other files"),
  // language runtimes: options, startup files and module paths
  d("NODE_OPTIONS", "node takes options from it (--require, --import load code)"),
  d("NODE_PATH", "node resolves modules from it"),
  d("BUN_OPTIONS", "bun takes options from it (--preload loads code)"),
  p("DENO_", "deno reads its settings (folders, certificates, flags) from DENO_* variables"),
  d("PYTHONSTARTUP", "python runs the file it names (interactive mode)"),
  d("PYTHONPATH", "python imports modules from it"),
  d("PYTHONHOME", "python loads its standard library from it"),
  d("PYTHONUSERBASE", "python's site runs .pth files found under it"),
  d("PYTHONBREAKPOINT", "python's breakpoint() calls the function it names"),
  d("PYTHONINSPECT", "python starts an interactive prompt after the script"),
  d("PERL5OPT", "perl takes options from it (-M loads modules, -e is code)"),
  d("PERL5LIB", "perl loads modules from it"),
  d("PERLLIB", "perl loads modules from it"),
  d("PERL5DB", "perl runs it as debugger code"),
  d("PERLIO", "perl loads I/O layers (modules) it names"),
  d("RUBYOPT", "ruby takes options from it (-r loads code)"),
  d("RUBYLIB", "ruby loads libraries from it"),
  d("LUA_INIT", "lua runs it (or the file it names) at startup"),
  p("LUA_INIT_", "lua runs it (or the file it names) at startup"),
  d("LUA_PATH", "lua loads modules from it"),
  d("LUA_CPATH", "lua loads C modules (shared libraries) from it"),
  d("PHPRC", "php reads php.ini from it (auto_prepend_file runs code)"),
  d("PHP_INI_SCAN_DIR", "php reads extra ini files from it"),
  d("JAVA_TOOL_OPTIONS", "the JVM takes options from it (-javaagent loads code)"),
  d("_JAVA_OPTIONS", "the JVM takes options from it (-javaagent loads code)"),
  d("JDK_JAVA_OPTIONS", "the java launcher takes options from it"),
  d("CLASSPATH", "the JVM loads classes from it"),
  d("TCLLIBPATH", "tclsh loads packages from it"),
  d("R_PROFILE", "R runs the profile it names at startup"),
  d("R_PROFILE_USER", "R runs the profile it names at startup"),
  d("R_ENVIRON", "R reads its environment file from it"),
  d("VIMINIT", "vim runs it as Ex commands at startup"),
  d("EXINIT", "vi and ex run it as commands at startup"),
  // programs that take options (or commands) from the environment
  d("TAR_OPTIONS", "tar takes options from it: --checkpoint-action=exec= and --to-command run commands"),
  d("ZIPOPT", "zip takes options from it: -TT runs a command"),
  d("ZIP", "zip takes options from it: -TT runs a command"),
  d("RIPGREP_CONFIG_PATH", "rg reads options from the file it names: --pre runs a command"),
  d("LESS", "less takes options from it (+!cmd runs a shell command)"),
  d("LESSOPEN", "less runs it as an input preprocessor"),
  d("LESSCLOSE", "less runs it as an input postprocessor"),
  d("LESSKEY", "less reads key bindings (which can run commands) from it"),
  d("LESSKEYIN", "less reads key bindings (which can run commands) from it"),
  d("PAGER", "programs run it to show long output"),
  d("MANPAGER", "man runs it"),
  d("MANOPT", "man takes options from it"),
  d("SYSTEMD_PAGER", "systemd tools run it"),
  d("EDITOR", "programs run it to edit text"),
  d("VISUAL", "programs run it to edit text"),
  d("BROWSER", "programs run it to open links"),
  d("SSH_ASKPASS", "ssh runs it to ask for a password"),
  d("SUDO_ASKPASS", "sudo runs it to ask for a password"),
  d("RSYNC_RSH", "rsync runs it as the remote shell"),
  d("RSYNC_CONNECT_PROG", "rsync runs it to connect"),
  d("CVS_RSH", "cvs runs it as the remote shell"),
  d("SVN_SSH", "svn runs it as the tunnel"),
  d("FZF_DEFAULT_COMMAND", "fzf runs it"),
  p(
    "GIT_",
    "git takes commands, config, folders and helpers from GIT_* variables (GIT_SSH_COMMAND, GIT_EXTERNAL_DIFF, GIT_CONFIG_*, GIT_DIR, GIT_EXEC_PATH)",
  ),
  d("MAKEFLAGS", "make takes options (and variable overrides such as SHELL) from it"),
  d("GNUMAKEFLAGS", "make takes options from it"),
  d("MAKEFILES", "make reads the makefiles it names (their recipes run)"),
  d("CC", "build tools run the compiler it names"),
  d("CXX", "build tools run the compiler it names"),
  d("RUSTC_WRAPPER", "cargo runs it around rustc"),
  p("CARGO_", "cargo takes settings (wrappers, runners, linkers) from CARGO_* variables"),
  {
    name: "npm_config_",
    prefix: true,
    anyCase: true,
    reason: "npm takes settings (script-shell, node-options) from npm_config_* variables, whatever their case (NPM_CONFIG_*, Npm_Config_*)",
  },
  d("NODE_REPL_EXTERNAL_MODULE", "node loads the module it names in place of its REPL"),
  d("OPENSSL_MODULES", "OpenSSL 3 loads providers (shared libraries) from it"),
  d("GCC_EXEC_PREFIX", "gcc runs its subprograms (cc1, as, collect2) from it"),
  d("COMPILER_PATH", "gcc runs its subprograms (cc1, as, collect2) from it"),
  d("GOFLAGS", "go takes flags from it (-toolexec runs a program)"),
  d("GOENV", "go reads its settings (GOFLAGS) from the file it names"),
  d("RUSTC", "cargo runs the compiler it names"),
  d("RUSTDOC", "cargo runs the rustdoc it names"),
  d("RUSTC_WORKSPACE_WRAPPER", "cargo runs it around rustc"),
];

/** Why `name` can't be passed to commands (its {@link ENV_DENYLIST} entry's reason), or `null` when it may be. */
export function envDenial(name: string): string | null {
  const hit = ENV_DENYLIST.find((e) => {
    const [n, en] = e.anyCase === true ? [name.toLowerCase(), e.name.toLowerCase()] : [name, e.name];
    return e.prefix === true ? n.startsWith(en) : n === en;
  });
  return hit === undefined ? null : hit.reason;
}

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
/** {@link ENV_DENYLIST} as patterns (kept for callers of the earlier API). */
export const FORBIDDEN_ENV: readonly RegExp[] = ENV_DENYLIST.map(
  (e) => new RegExp(`^${escapeRe(e.name)}${e.prefix === true ? "" : "$"}`, e.anyCase === true ? "i" : ""),
);

export const DEFAULT_EXEC_ENV = ["PATH", "HOME", "LANG", "LC_ALL", "TERM", "TZ"] as const;

/**
 * Variables a call can't override even when allowlisted: they decide which
 * programs and which configuration files run (a `PATH` or `HOME` pointing
 * into the workspace would let a written file be executed, or a written
 * `.gitconfig` name a filter program). They keep the operator's values.
 */
export const FIXED_ENV: ReadonlySet<string> = new Set([
  "PATH",
  "HOME",
  "XDG_CONFIG_HOME",
  "XDG_DATA_HOME",
  "XDG_CACHE_HOME",
  "XDG_RUNTIME_DIR",
  "SHELL",
  "TMPDIR",
  "GNUPGHOME",
]);

/** Whether a call must leave `name` at the operator's value: {@link FIXED_ENV}, and every `XDG_*` (`XDG_CONFIG_DIRS` also names where configuration is read). */
export function envFixed(name: string): boolean {
  return FIXED_ENV.has(name) || name.startsWith("XDG_");
}

/** Git subcommands `exec` allows (local, no program execution by design). */
export const GIT_SUBCOMMANDS: ReadonlySet<string> = new Set([
  "status",
  "diff",
  "log",
  "show",
  "add",
  "rm",
  "mv",
  "restore",
  "commit",
  "branch",
  "tag",
  "switch",
  "checkout",
  "reset",
  "rev-parse",
  "ls-files",
  "ls-tree",
  "cat-file",
  "blame",
  "grep",
  "init",
  "stash",
  "describe",
  "shortlog",
  "merge-base",
  "rev-list",
  "show-ref",
  "apply",
  "version",
  "whatchanged",
]);

const GIT_GLOBAL_OK = new Set(["--no-pager", "--no-optional-locks", "--literal-pathspecs", "--no-replace-objects", "-P", "--version"]);
/** git long options refused anywhere before `--` (with their abbreviations). */
export const GIT_DENIED_LONG: readonly string[] = [
  "--upload-pack",
  "--receive-pack",
  "--exec",
  "--exec-path",
  "--ext-diff",
  "--textconv",
  "--output",
  "--open-files-in-pager",
  "--config",
  "--config-env",
  "--template",
  "--separate-git-dir",
  "--git-dir",
  "--work-tree",
  "--namespace",
  "--super-prefix",
  "--unsafe-paths",
  "--build-fake-ancestor",
  // a submodule is another repository, whose own config (filters, textconv) exec does not read
  "--recurse-submodules",
];

/** Options injected in front of every git command run by `exec`. */
export const GIT_SAFE_PREFIX = [
  "-c",
  "core.hooksPath=/dev/null",
  "-c",
  "core.fsmonitor=",
  "-c",
  "core.pager=cat",
  "-c",
  "diff.external=",
  "-c",
  "protocol.allow=never",
  "-c",
  "core.editor=false",
  "-c",
  "sequence.editor=false",
  // A folder that merely looks like a bare repository (HEAD, config, objects/,
  // refs/: files write_file can make) is never used as one: its config would
  // be the model's, with filters and diff drivers that git runs.
  "-c",
  "safe.bareRepository=explicit",
  "--no-pager",
];

/**
 * The git argv `exec` runs for the call's `args`: {@link GIT_SAFE_PREFIX},
 * then the args, with `--no-ext-diff` right after a `diff` or `show`
 * subcommand. Those two use `diff.external` by default, and git (2.39) takes
 * the prefix's empty `diff.external=` for a program named "" and fails every
 * diff with a change ("cannot run :"); `--no-ext-diff` makes them ignore it,
 * and `--ext-diff` is refused, so no call can turn it back on.
 */
export function gitArgv(args: readonly string[]): string[] {
  const sub = args.findIndex((a) => !a.startsWith("-"));
  if (sub < 0 || (args[sub] !== "diff" && args[sub] !== "show")) return [...GIT_SAFE_PREFIX, ...args];
  return [...GIT_SAFE_PREFIX, ...args.slice(0, sub + 1), "--no-ext-diff", ...args.slice(sub + 1)];
}

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
    long: [
      "--to-command",
      "--use-compress-program",
      "--checkpoint-action",
      "--info-script",
      "--new-volume-script",
      "--rsh-command",
      "--rmt-command",
    ],
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
  if (!allowed.has(argv0))
    refuse(`program "${argv0}" is not on the allowlist (allowed: ${[...allowed.keys()].join(", ")})`, { argv_index: 0, program: argv0 });
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
    const deny = (option: string) =>
      refuse(`${program}: option ${JSON.stringify(option)} runs other programs and is not allowed`, { argv_index: i + 1, option });
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

/**
 * Options of git subcommands that are exact names AND proper prefixes of a
 * refused option. git's option parser takes an exact match first, so these
 * are themselves, never the refused option: `git diff --text` is `-a`, not
 * `--textconv`. A subcommand that lacks the option does abbreviate it
 * (`git cat-file --text` IS `--textconv`), so the list is per subcommand.
 */
export const GIT_EXACT_OK: Readonly<Record<string, readonly string[]>> = {
  diff: ["--text"],
  log: ["--text"],
  show: ["--text"],
  whatchanged: ["--text"],
  grep: ["--text"],
  blame: ["--text"],
  stash: ["--text"],
};

/**
 * The refused git option that `name` (after the subcommand `sub`, no
 * `=value`) may stand for, or `undefined`. git's rule for a long option:
 * an exact option name is that option; otherwise a prefix of exactly one
 * option is that option, and a prefix of several is an error (ambiguous).
 * agentcore does not carry git's full option tables, so it refuses every
 * prefix of a refused option (at least one letter after `--`: `git init
 * --t=DIR` is `--template`), whether git would read it as the refused option
 * or reject it as ambiguous, except a name that is exactly one of the
 * subcommand's own options ({@link GIT_EXACT_OK}).
 */
export function gitDeniedMatch(sub: string, name: string): string | undefined {
  if (GIT_DENIED_LONG.includes(name)) return name;
  if (Object.hasOwn(GIT_EXACT_OK, sub) && GIT_EXACT_OK[sub]!.includes(name)) return undefined;
  return GIT_DENIED_LONG.find((d) => isAbbreviation(name, d));
}

function checkGit(args: readonly string[]): void {
  let i = 0;
  for (; i < args.length && args[i]!.startsWith("-"); i++) {
    const a = args[i]!;
    if (!GIT_GLOBAL_OK.has(a))
      refuse(`git: global option ${JSON.stringify(a.split("=")[0])} is not allowed`, { argv_index: i + 1, option: a.split("=")[0] });
  }
  if (i === args.length) return; // `git --version` or bare `git`
  const sub = args[i]!;
  if (!GIT_SUBCOMMANDS.has(sub)) {
    refuse(`git: subcommand ${JSON.stringify(sub)} is not allowed (allowed: ${[...GIT_SUBCOMMANDS].join(", ")})`, {
      argv_index: i + 1,
      subcommand: sub,
    });
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
    // diff.ignoreSubmodules=all keeps git out of nested repositories; only the same value may be asked for
    if (isAbbreviation(name, "--ignore-submodules") && a !== "--ignore-submodules" && a !== "--ignore-submodules=all") {
      refuse(
        `git: option ${JSON.stringify(a)} would make git look into submodules, other repositories whose own config can name programs; only --ignore-submodules=all is allowed`,
        { argv_index: k + 1, option: name },
      );
    }
    const hit = gitDeniedMatch(sub, name);
    if (hit !== undefined) {
      refuse(`git: option ${JSON.stringify(name)} (${hit}) can run programs or reach outside the repository and is not allowed`, {
        argv_index: k + 1,
        option: name,
      });
    }
  }
}

/** Whether an environment variable name may ever be passed. */
export function envNameAllowed(name: string): boolean {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) && envDenial(name) === null;
}

/** `PATH` without empty or relative entries (those resolve against the working folder). */
export function absolutePathOnly(value: string): string {
  return value
    .split(":")
    .filter((d) => d.startsWith("/"))
    .join(":");
}

/**
 * One entry of `git config --list --null --show-scope --show-origin
 * --includes`: `SCOPE\0ORIGIN\0KEY\nVALUE\0` (no `\n` for a bare key, an
 * implicit true).
 */
export interface GitConfigEntry {
  scope: string;
  origin: string;
  key: string;
  value: string | null;
}

/** Parse the listing {@link gitConfigOverrides} reads. */
export function parseScopedConfig(text: string): GitConfigEntry[] {
  const parts = text.split("\0");
  const out: GitConfigEntry[] = [];
  for (let i = 0; i + 2 < parts.length; i += 3) {
    const kv = parts[i + 2]!;
    const nl = kv.indexOf("\n");
    out.push({ scope: parts[i]!, origin: parts[i + 1]!, key: nl < 0 ? kv : kv.slice(0, nl), value: nl < 0 ? null : kv.slice(nl + 1) });
  }
  return out;
}

/** Scopes whose settings are the operator's: everything else (`local`, `worktree`, files they include) is the repository's. */
const OPERATOR_SCOPES = new Set(["global", "system", "command"]);

/** The value git's own default stands for, for the signing programs (what git runs when no config names one). */
const GPG_DEFAULTS: Readonly<Record<string, string>> = {
  "gpg.program": "gpg",
  "gpg.openpgp.program": "gpg",
  "gpg.x509.program": "gpgsm",
  "gpg.ssh.program": "ssh-keygen",
};

/** Settings that hold a list, where an empty value empties it (credential helpers). */
function multiValued(key: string): boolean {
  return /^credential\..*helper$/.test(key);
}

/**
 * What a repository setting `key` (as `git config --list` prints it: section
 * and name lowercased, the subsection as written) is replaced with so that
 * git runs no program and writes no file that the repository chose, or
 * null when the setting names none. `cat` is the absolute path of cat(1)
 * (a textconv and an interactive diff filter that change nothing), or null.
 */
export function gitNeutralValue(key: string, cat: string | null): string | null {
  const first = key.indexOf(".");
  const last = key.lastIndexOf(".");
  if (first < 0) return null;
  const section = key.slice(0, first);
  const name = key.slice(last + 1);
  const sub = first === last ? null : key.slice(first + 1, last);
  if (section === "filter" && (name === "clean" || name === "smudge" || name === "process")) return "";
  if (section === "diff" && sub !== null && name === "textconv") return cat ?? "";
  if (section === "diff" && sub !== null && name === "cachetextconv") return "false";
  if (key === "interactive.difffilter") return cat ?? "";
  if (section === "merge" && sub !== null && name === "driver") return "";
  if (section === "pager") return "false";
  if (section === "protocol" && name === "allow") return "never";
  if (section === "submodule" && sub !== null && name === "ignore") return "all";
  if (section === "submodule" && sub !== null && name === "update") return "none";
  if (key === "submodule.recurse") return "false";
  if (Object.hasOwn(GPG_DEFAULTS, key)) return GPG_DEFAULTS[key]!;
  if (key === "core.hookspath") return "/dev/null";
  if (key === "core.fsmonitor" || key === "core.gitproxy" || key === "diff.external" || key === "init.templatedir") return "";
  if (section === "trace2" || section === "uploadpack") return "";
  if (section === "remote" && (name === "uploadpack" || name === "receivepack")) return "";
  if (name.endsWith("editor")) return "false";
  if (name.includes("pager")) return "cat";
  if (
    name.endsWith("cmd") ||
    name.endsWith("command") ||
    name.endsWith("program") ||
    name.endsWith("helper") ||
    name.endsWith("askpass") ||
    name.endsWith("hook")
  )
    return "";
  return null;
}

/**
 * The command-scope settings (`GIT_CONFIG_COUNT`/`KEY_n`/`VALUE_n`) that
 * undo every repository setting naming a program or a file to write: each
 * such key from a repository scope gets the operator's value (the last
 * global/system one; for a list such as `credential.helper`, an empty value
 * and then the operator's whole list) or, when the operator set none, the
 * value {@link gitNeutralValue} gives. A filter left with no driver gets
 * `required=false` (else git fails the file). `core.worktree` from the
 * repository leading outside `root` is refused: git would read and write
 * files there. `cwd` resolves relative origins.
 */
export function gitConfigOverrides(entries: readonly GitConfigEntry[], options: GitOverrideOptions): [string, string][] {
  const operator = new Map<string, string[]>();
  for (const e of entries) {
    if (OPERATOR_SCOPES.has(e.scope) && e.scope !== "command") {
      const list = operator.get(e.key) ?? [];
      list.push(e.value ?? "true");
      operator.set(e.key, list);
    }
  }
  const out: [string, string][] = [];
  const done = new Set<string>();
  const filters = new Set<string>();
  for (const e of entries) {
    if (OPERATOR_SCOPES.has(e.scope)) continue;
    if (e.key === "core.worktree") checkWorktree(e, options);
    if (done.has(e.key)) continue;
    const neutral = gitNeutralValue(e.key, options.cat);
    if (neutral === null) continue;
    done.add(e.key);
    const own = operator.get(e.key);
    if (multiValued(e.key)) {
      out.push([e.key, ""]);
      for (const v of own ?? []) out.push([e.key, v]);
    } else {
      out.push([e.key, own !== undefined ? own[own.length - 1]! : neutral]);
    }
    const m = /^filter\.(.*)\.(clean|smudge|process)$/.exec(e.key);
    if (m !== null) filters.add(m[1]!);
  }
  for (const f of filters) {
    const kept = ["clean", "smudge", "process"].some((n) => operator.has(`filter.${f}.${n}`));
    if (!kept) out.push([`filter.${f}.required`, "false"]);
  }
  return out;
}

/** What {@link gitConfigOverrides} needs besides the listing. */
export interface GitOverrideOptions {
  /** The real root. */
  root: string;
  /** The command's working folder (git prints origins relative to it). */
  cwd: string;
  /** Absolute path of cat(1), or null. */
  cat: string | null;
  /** Resolves symlinks in an existing path (default: none). */
  realpath?: (p: string) => string;
}

function checkWorktree(e: GitConfigEntry, options: GitOverrideOptions): void {
  const { root, cwd } = options;
  const value = e.value ?? "";
  const origin = e.origin.startsWith("file:") ? e.origin.slice(5) : null;
  const base = origin === null ? null : origin.startsWith("/") ? dirnameOf(origin) : joinPath(cwd, dirnameOf(origin));
  let target = value.startsWith("/") ? normalizePath(value) : base === null ? null : normalizePath(joinPath(base, value));
  if (target !== null && options.realpath !== undefined) {
    try {
      target = options.realpath(target);
    } catch {
      // missing: git fails on it too
    }
  }
  const within = target !== null && (target === root || target.startsWith(root.endsWith("/") ? root : `${root}/`));
  if (!within) {
    refuse(
      `git: the repository's config sets core.worktree = ${JSON.stringify(value)}, outside the root: git would read and write files there; remove it (git config --unset core.worktree) or move it to your global git config`,
      {
        key: "core.worktree",
        scope: e.scope,
        origin: e.origin,
      },
    );
  }
}

function dirnameOf(p: string): string {
  const i = p.lastIndexOf("/");
  return i < 0 ? "." : i === 0 ? "/" : p.slice(0, i);
}

function joinPath(a: string, b: string): string {
  return b.startsWith("/") ? b : `${a}/${b}`;
}

/** `..` and `.` resolved lexically (symlinks are the root's business: under bubblewrap only the root is writable). */
function normalizePath(p: string): string {
  const out: string[] = [];
  for (const part of p.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") out.pop();
    else out.push(part);
  }
  return `/${out.join("/")}`;
}
