/**
 * Running git on a repository that is not trusted, for `git_diff`.
 *
 * A repository chooses programs for git to run through its configuration
 * (`filter.NAME.clean`/`process`, `diff.NAME.textconv`/`command`,
 * `diff.external`, `core.fsmonitor`, `core.pager`, `core.hooksPath`,
 * credential helpers, `include.path` pulling in more of the same…) and its
 * attributes pick which driver applies to which file. Blanking the settings
 * one by one is a denylist over names the repository chooses, so git never
 * reads the repository's configuration here at all:
 *
 * 1. {@link locateRepository} finds the repository the way git would (a
 *    `.git` in the root or a folder above it, stopping at a filesystem
 *    boundary) without running git, and refuses indirections that lead
 *    outside: a `.git` file or symlink naming a git directory elsewhere, a
 *    linked worktree (`commondir`), `objects`, `refs`, `index`… that are
 *    symlinks out, `objects/info/alternates` borrowing objects from
 *    elsewhere, and a repository owned by another user (git's own
 *    `safe.directory` rule, which an explicit `GIT_DIR` would skip).
 * 2. {@link prepareShadow} makes a private git directory per call: `HEAD`
 *    copied, symlinks to the repository's `refs`, `packed-refs`, `info`,
 *    `logs`, `shallow`, pseudo-refs (`ORIG_HEAD`…) and split-index files,
 *    and a `config` of our own. The repository's config (and
 *    `config.worktree`) is read as data (`git config --file … --no-includes
 *    --list`, which runs nothing); only the repository format and a short
 *    allowlist of settings that change how files compare (`core.filemode`,
 *    `core.autocrlf`, `core.ignorecase`…) are carried over, as
 *    `GIT_CONFIG_KEY_<n>`/`GIT_CONFIG_VALUE_<n>`. `core.worktree` is refused
 *    unless it names the folder holding `.git`.
 * 3. git runs with `GIT_DIR` = that directory, `GIT_WORK_TREE` = the folder
 *    holding `.git`, `GIT_INDEX_FILE` and `GIT_OBJECT_DIRECTORY` = the
 *    repository's, an environment built from nothing (no inherited `GIT_*`),
 *    no system or global config, no system attributes, a `HOME` with nothing
 *    in it, and hardening settings on top (`core.hooksPath=/dev/null`,
 *    `core.fsmonitor=false`, `diff.external=`, `credential.helper=`,
 *    `protocol.allow=never`…). When bubblewrap works (see sandbox.ts), git
 *    also runs inside it: the whole system read-only (the repository too),
 *    private `/tmp` and `/run`, no network, new namespaces.
 *
 * What remains is documented in docs/workspace-tools.md: attributes from the
 * work tree and `.git/info/attributes` are still read (they can only name
 * drivers, and no driver is defined). Symlinks anywhere under `objects`,
 * `refs`, `logs` and `info` must lead inside the folder holding `.git`.
 *
 * @module
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fail } from "./dirfd.ts";

/** The repository git_diff works on: both paths are real (symlinks resolved). */
export interface GitRepository {
  /** The folder holding `.git`: git's work tree (the root or a folder above it). */
  top: string;
  /** The git directory (`TOP/.git`, or where a `.git` file inside TOP points). */
  gitdir: string;
}

function inside(p: string, dir: string): boolean {
  return p === dir || p.startsWith(dir === "/" ? "/" : `${dir}/`);
}

function lstatOrNull(p: string): fs.Stats | null {
  try {
    return fs.lstatSync(p);
  } catch {
    return null;
  }
}

function realOrNull(p: string): string | null {
  try {
    return fs.realpathSync(p);
  } catch {
    return null;
  }
}

function refuse(reason: string, message: string, details: Record<string, unknown> = {}): never {
  fail("GIT_FAILED", `git_diff refuses this repository: ${message}`, { refused: true, reason, ...details });
}

/** Like git's `is_git_directory`: `HEAD` a file, `objects/` and `refs/` folders (or a `commondir`). */
function isGitDirectory(dir: string): boolean {
  const isDir = (p: string) => {
    try {
      return fs.statSync(p).isDirectory();
    } catch {
      return false;
    }
  };
  let head = false;
  try {
    head = fs.statSync(path.join(dir, "HEAD")).isFile();
  } catch {
    head = false;
  }
  if (!head) return false;
  if (lstatOrNull(path.join(dir, "commondir")) !== null) return true; // a linked worktree: refused by the caller
  return isDir(path.join(dir, "objects")) && isDir(path.join(dir, "refs"));
}

let ownUid: number | null | undefined;

/** This process's effective uid: `geteuid()`, or (where that needs a permission, as under Deno without --allow-sys) the owner of a folder it creates. */
function effectiveUid(): number | null {
  if (ownUid !== undefined) return ownUid;
  const proc = globalThis.process as NodeJS.Process | undefined;
  try {
    if (typeof proc?.geteuid === "function") return (ownUid = proc.geteuid());
  } catch {
    // not allowed here: ask the file system
  }
  if (proc?.platform === "win32") return (ownUid = null);
  const probe = fs.mkdtempSync(path.join(os.tmpdir(), "agentcore-uid-"));
  try {
    return (ownUid = fs.statSync(probe).uid);
  } finally {
    fs.rmSync(probe, { recursive: true, force: true });
  }
}

/** The owners git accepts (its `safe.directory` rule): this user; for root, also the user in `SUDO_UID`. Null: no check (Windows). */
function acceptedOwners(): number[] | null {
  const euid = effectiveUid();
  if (euid === null) return null;
  const sudo = globalThis.process?.env.SUDO_UID;
  return euid === 0 && sudo !== undefined && /^\d+$/.test(sudo) ? [0, Number(sudo)] : [euid];
}

/**
 * Find the repository of `root` (a real path) as git's discovery would, and
 * refuse any indirection that leads outside the folder holding `.git`.
 * Fails with `GIT_FAILED` (`details.refused` for a refusal).
 */
export function locateRepository(root: string): GitRepository {
  let dir = root;
  const dev = fs.statSync(root).dev;
  for (;;) {
    const found = gitDirIn(dir);
    if (found !== null) return checkRepository(dir, found);
    const parent = path.dirname(dir);
    if (parent === dir) break;
    let parentDev: number;
    try {
      parentDev = fs.statSync(parent).dev;
    } catch {
      break;
    }
    if (parentDev !== dev) {
      fail("GIT_FAILED", `not a git repository (or any parent up to mount point ${dir}): ${root}; git stops at a filesystem boundary`, {
        root,
      });
    }
    dir = parent;
  }
  fail("GIT_FAILED", `not a git repository (or any of the parent directories): ${root}`, { root });
}

/** The git directory named by `dir/.git`, or null when there is none there (git then looks further up). */
function gitDirIn(dir: string): string | null {
  const dotgit = path.join(dir, ".git");
  const st = lstatOrNull(dotgit);
  if (st === null) return null;
  const real = realOrNull(dotgit);
  if (real === null) {
    refuse("dotgit_dangling", `${dotgit} is a symlink to nothing; remove it or point the root elsewhere`, { path: dotgit });
  }
  if (!inside(real, dir)) {
    refuse(
      "gitdir_outside",
      `${dotgit} is a symlink to ${real}, outside ${dir}: git_diff only reads a git directory inside the folder that holds it; use the repository's own folder as the root`,
      { path: dotgit },
    );
  }
  const target = fs.statSync(real);
  if (target.isDirectory()) return isGitDirectory(real) ? real : null;
  if (!target.isFile()) return null;
  // A `.git` file: "gitdir: PATH" (a linked worktree, a submodule, `git init --separate-git-dir`).
  let text = "";
  try {
    const fd = fs.openSync(real, "r");
    try {
      const buf = Buffer.alloc(4096);
      text = buf.subarray(0, fs.readSync(fd, buf, 0, buf.length, 0)).toString("utf8");
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    text = "";
  }
  const m = /^gitdir: (.+?)[\r\n]*$/.exec(text);
  if (m === null) {
    refuse("gitfile_invalid", `${dotgit} is a file but not a "gitdir: PATH" line; remove it or fix it`, { path: dotgit });
  }
  const named = path.resolve(dir, m[1]!);
  const gd = realOrNull(named);
  if (gd === null || !inside(gd, dir)) {
    refuse(
      "gitdir_outside",
      `${dotgit} names the git directory ${named}, outside ${dir} (a linked worktree, a submodule or a separate git directory): git_diff only reads a git directory inside the folder that holds it, since the one elsewhere can show files that are not the root's; use the main working tree (the folder whose .git is a directory) as the root, or run git yourself`,
      { path: dotgit, gitdir: named },
    );
  }
  if (!isGitDirectory(gd))
    refuse("gitfile_invalid", `${dotgit} names ${named}, which is not a git directory`, { path: dotgit, gitdir: named });
  return gd;
}

/** The names in a git directory that git_diff links into its private one (everything else, config and hooks above all, stays out). */
function linkedName(name: string): boolean {
  // Pseudo-refs end in _HEAD (ORIG_HEAD, FETCH_HEAD, MERGE_HEAD…): a looser
  // pattern would let `CONFIG` or `HOOKS` through, which a case-insensitive
  // file system (macOS) takes for `config` and `hooks`.
  return (
    ["refs", "packed-refs", "info", "logs", "shallow", "AUTO_MERGE"].includes(name) ||
    /^[A-Z][A-Z_]*_HEAD$/.test(name) ||
    /^sharedindex\.[0-9a-f]+$/.test(name)
  );
}

/** `HEAD` is a ref name or an object id: anything longer is not one. */
const MAX_HEAD_BYTES = 4096;

function checkRepository(top: string, gitdir: string): GitRepository {
  const owners = acceptedOwners();
  if (owners !== null) {
    for (const p of [top, gitdir]) {
      const uid = fs.statSync(p).uid;
      if (!owners.includes(uid)) {
        refuse(
          "dubious_ownership",
          `${p} is owned by uid ${uid}, not by this user (uid ${owners.join(" or ")}); git refuses such a repository (safe.directory) and so does git_diff: run agentcore as its owner`,
          { path: p, owner: uid },
        );
      }
    }
  }
  if (lstatOrNull(path.join(gitdir, "commondir")) !== null) {
    refuse(
      "linked_worktree",
      `${gitdir} belongs to a linked worktree (it has a commondir, so its objects, refs and config live in another repository): use the main working tree as the root`,
      { gitdir },
    );
  }
  // Top-level entries that are symlinks out of the repository would show another repository's files.
  for (const name of ["HEAD", "objects", "index", ...fs.readdirSync(gitdir).filter(linkedName)]) {
    const p = path.join(gitdir, name);
    if (lstatOrNull(p) === null) continue;
    const real = realOrNull(p);
    if (real === null || !inside(real, top)) {
      refuse(
        "gitdir_entry_outside",
        `${p} leads outside ${top}${real === null ? " (a dangling symlink)" : ` (to ${real})`}: git_diff only reads a repository that lies inside the folder holding it; make it a plain file or folder`,
        { path: p },
      );
    }
  }
  // ...and so would symlinks deeper down: a pack in objects/pack linked to another repository's
  // (with a ref naming one of its commits) shows that repository's files in a diff.
  for (const name of ["objects", "refs", "logs", "info"]) {
    const real = realOrNull(path.join(gitdir, name)); // inside top (checked above), maybe through a symlink
    if (real !== null && fs.statSync(real).isDirectory()) checkNoLinksOut(top, real, 0);
  }
  const head = fs.statSync(path.join(gitdir, "HEAD")).size;
  if (head > MAX_HEAD_BYTES)
    refuse("head_invalid", `${path.join(gitdir, "HEAD")} is ${head} bytes, not a ref or an object id`, { path: path.join(gitdir, "HEAD") });
  checkAlternates(top, path.join(gitdir, "objects"), 0);
  return { top, gitdir };
}

/** Refuse a symlink anywhere under `dir` (a real folder inside `top`) whose target is not inside `top`. */
function checkNoLinksOut(top: string, dir: string, depth: number, seen = new Set<string>()): void {
  if (depth > 64) refuse("gitdir_entry_outside", `${dir} is nested more than 64 folders deep`, { path: dir });
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return; // unreadable: git can't read it either
  }
  for (const e of entries) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) {
      checkNoLinksOut(top, p, depth + 1, seen);
    } else if (e.isSymbolicLink()) {
      const real = realOrNull(p);
      if (real === null || !inside(real, top)) {
        refuse(
          "gitdir_entry_outside",
          `${p} is a symlink leading outside ${top}${real === null ? " (a dangling symlink)" : ` (to ${real})`}: git would read another repository's objects or refs through it; replace it with the file itself (git repack -a -d) or remove it`,
          { path: p },
        );
      }
      // a link to a folder inside top: what that folder holds is read through it, so walk it too
      if (lstatOrNull(real)?.isDirectory() === true && !seen.has(real)) {
        seen.add(real);
        checkNoLinksOut(top, real, depth + 1, seen);
      }
    }
  }
}

/** `objects/info/alternates` lends git objects from other stores; each one (and theirs, 5 deep as in git) must lie inside `top`. */
function checkAlternates(top: string, objects: string, depth: number): void {
  if (depth > 5) return;
  const file = path.join(objects, "info", "alternates");
  let st: fs.Stats;
  try {
    st = fs.statSync(file);
  } catch {
    return; // none
  }
  // a regular file only: reading a FIFO here would block the whole process
  if (!st.isFile()) refuse("alternates_outside", `${file} is not a regular file: remove it`, { path: file });
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch {
    return;
  }
  for (let line of text.split("\n")) {
    line = line.replace(/\r$/, "");
    if (line === "" || line.startsWith("#")) continue;
    if (line.startsWith('"')) {
      if (!/^"[^"\\]*"$/.test(line))
        refuse(
          "alternates_outside",
          `${file} has a quoted entry git_diff does not read (${line.slice(0, 200)}): run git repack -a -d and remove ${file}`,
          { path: file },
        );
      line = line.slice(1, -1);
    }
    const alt = path.resolve(objects, line);
    const real = realOrNull(alt);
    if (real === null) continue; // git skips a missing alternate too
    if (!inside(real, top)) {
      refuse(
        "alternates_outside",
        `${file} borrows objects from ${alt}, outside ${top}: run git repack -a -d there and remove ${file}, or use a root that contains both`,
        { path: file, alternate: alt },
      );
    }
    checkAlternates(top, real, depth + 1);
  }
}

/** Settings copied from the repository's config: they change how files compare, and their values are data, never programs. */
const CARRIED = new Set([
  "core.filemode",
  "core.symlinks",
  "core.ignorecase",
  "core.precomposeunicode",
  "core.protecthfs",
  "core.protectntfs",
  "core.trustctime",
  "core.checkstat",
  "core.autocrlf",
  "core.eol",
  "core.checkroundtripencoding",
  "core.bigfilethreshold",
  "core.sparsecheckout",
  "core.sparsecheckoutcone",
]);

/** Settings git_diff always gives git (command-line scope), whatever else holds. */
export const HARDENING: readonly (readonly [string, string])[] = [
  ["core.hooksPath", "/dev/null"],
  ["core.fsmonitor", "false"],
  ["core.untrackedCache", "false"],
  ["core.pager", "cat"],
  ["core.attributesFile", "/dev/null"],
  ["core.askPass", ""],
  ["core.sshCommand", ""],
  ["diff.external", ""],
  ["diff.noprefix", "false"],
  ["diff.mnemonicPrefix", "false"],
  ["color.ui", "never"],
  ["credential.helper", ""],
  ["protocol.allow", "never"],
  ["safe.bareRepository", "explicit"],
];

/** A private git directory for one call, the environment that points git at it, and its removal. */
export interface Shadow {
  dir: string;
  /** `GIT_DIR`, `GIT_WORK_TREE`, `GIT_INDEX_FILE`, `GIT_OBJECT_DIRECTORY` and `GIT_CONFIG_COUNT`/`KEY_n`/`VALUE_n`. */
  env: Record<string, string>;
  cleanup(): void;
}

/** Reads a config file as data: `git config --file FILE --no-includes --null --list` (runs nothing), given the environment to run it in. */
export type ConfigReader = (file: string, env: Record<string, string>) => Promise<string>;

/** One `git config --null --list` entry: a name and its value (null for an implicit true: `[core] filemode`). */
export function parseConfigList(text: string): [string, string | null][] {
  const out: [string, string | null][] = [];
  for (const entry of text.split("\0")) {
    if (entry === "") continue;
    const nl = entry.indexOf("\n");
    out.push(nl < 0 ? [entry, null] : [entry.slice(0, nl), entry.slice(nl + 1)]);
  }
  return out;
}

/**
 * Make the private git directory for `repo` and read the repository's config
 * into the allowlisted settings. `extra` settings (command-line scope) go
 * after the hardening ones. The caller must call `cleanup()`.
 */
export async function prepareShadow(
  repo: GitRepository,
  readConfig: ConfigReader,
  extra: readonly (readonly [string, string])[] = [],
): Promise<Shadow> {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "agentcore-gitdir-")));
  const cleanup = () => fs.rmSync(dir, { recursive: true, force: true });
  try {
    // Our own files first, created exclusively ("wx"): no link made below can stand in for them.
    const head = fs.readFileSync(path.join(repo.gitdir, "HEAD"));
    if (head.length > MAX_HEAD_BYTES) refuse("head_invalid", `${path.join(repo.gitdir, "HEAD")} is not a ref or an object id`);
    fs.writeFileSync(path.join(dir, "HEAD"), head, { flag: "wx" });
    fs.writeFileSync(path.join(dir, "config"), "", { flag: "wx" });
    fs.symlinkSync(path.join(repo.gitdir, "objects"), path.join(dir, "objects"));
    for (const name of fs.readdirSync(repo.gitdir)) {
      if (linkedName(name)) fs.symlinkSync(path.join(repo.gitdir, name), path.join(dir, name));
    }
    const base: Record<string, string> = { GIT_DIR: dir, GIT_OBJECT_DIRECTORY: path.join(repo.gitdir, "objects") };

    const entries: [string, string | null][] = [];
    for (const name of ["config", "config.worktree"]) {
      const file = path.join(repo.gitdir, name);
      let isFile = false;
      try {
        isFile = fs.statSync(file).isFile();
      } catch {
        isFile = false;
      }
      if (!isFile) continue;
      entries.push(...parseConfigList(await readConfig(file, base)));
    }
    const last = (key: string): string | null | undefined => {
      let v: string | null | undefined;
      for (const [k, val] of entries) if (k === key) v = val;
      return v;
    };

    const wt = last("core.worktree");
    if (typeof wt === "string") {
      const named = path.resolve(repo.gitdir, wt);
      if (realOrNull(named) !== repo.top) {
        refuse(
          "worktree_elsewhere",
          `its config sets core.worktree = ${wt}, which is not ${repo.top} (the folder holding .git): the files git would show are not the root's; remove the setting (git config --unset core.worktree) or use that work tree as the root`,
          { key: "core.worktree", value: wt },
        );
      }
    }
    const version = last("core.repositoryformatversion") ?? "0";
    if (version !== "0" && version !== "1")
      refuse("format", `core.repositoryformatversion is ${JSON.stringify(version)}; git_diff knows versions 0 and 1`, {
        key: "core.repositoryformatversion",
      });
    const format = last("extensions.objectformat");
    if (format !== undefined && format !== "sha1" && format !== "sha256")
      refuse("format", `extensions.objectformat is ${JSON.stringify(format)}; git_diff knows sha1 and sha256`, {
        key: "extensions.objectformat",
      });
    fs.writeFileSync(
      path.join(dir, "config"),
      // rewritten in place: a regular file this call created, never a link
      `[core]\n\trepositoryformatversion = ${version}\n` +
        (version === "1" && typeof format === "string" ? `[extensions]\n\tobjectformat = ${format}\n` : ""),
    );

    const carried = new Map<string, string>();
    for (const [k, v] of entries) if (CARRIED.has(k)) carried.set(k, v ?? "true");
    const settings = [...carried, ...HARDENING, ...extra];
    const env: Record<string, string> = {
      ...base,
      GIT_WORK_TREE: repo.top,
      GIT_INDEX_FILE: path.join(repo.gitdir, "index"),
      GIT_CONFIG_COUNT: String(settings.length),
    };
    settings.forEach(([k, v], i) => {
      env[`GIT_CONFIG_KEY_${i}`] = k;
      env[`GIT_CONFIG_VALUE_${i}`] = v;
    });
    return { dir, env, cleanup };
  } catch (e) {
    cleanup();
    throw e;
  }
}

function isUnder(p: string, dir: string): boolean {
  return p === dir || p.startsWith(`${dir}/`);
}

/**
 * The bwrap argv (after the bwrap binary) that runs `git args` with the same
 * isolation as `exec`, except that nothing is writable: the system
 * read-only, private `/tmp` and `/run` (the repository, the private git
 * directory and git itself are bound back read-only when they lie there),
 * all namespaces unshared (no network), capabilities dropped.
 */
export function gitBwrapArgs(repo: GitRepository, shadowDir: string, cwd: string, git: string, args: readonly string[]): string[] {
  const hidden = ["/tmp"];
  for (const p of ["/run", "/var/run"]) {
    if (lstatOrNull(p)?.isDirectory() === true) hidden.push(p);
  }
  const out = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"];
  for (const t of hidden) out.push("--tmpfs", t);
  const binds: string[] = [];
  const realGit = realOrNull(git) ?? git;
  for (const p of [repo.top, repo.gitdir, cwd, shadowDir, path.dirname(git), path.dirname(realGit)]) {
    if (hidden.some((t) => isUnder(p, t)) && !binds.some((b) => isUnder(p, b))) binds.push(p);
  }
  for (const b of binds) out.push("--ro-bind", b, b);
  out.push("--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--chdir", cwd, "--", git, ...args);
  return out;
}
