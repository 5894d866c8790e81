/**
 * Directory-descriptor walking under a root: the write side of the rooted
 * file rules in `../fs/rooted.ts`.
 *
 * `read_file` proves *after* opening that a file is where it should be. A
 * write can't work that way (the bytes would already be outside), so the
 * workspace tools resolve paths the way `openat(2)` does: they hold a
 * descriptor of each directory and name the next component *relative to
 * that descriptor*. Node has no `openat`, but on Linux the path
 * `/proc/self/fd/<dirfd>/<name>` means exactly that: the kernel resolves
 * `<name>` inside the directory the descriptor refers to, wherever that
 * directory now is. So:
 *
 * - every component is opened with `O_DIRECTORY | O_NOFOLLOW` relative to its
 *   parent's descriptor; a symlink fails the open (`PATH_SYMLINK`), and a
 *   directory swapped for a symlink *after* it was opened changes nothing,
 *   because the descriptor still names the real directory;
 * - `mkdir`, temp-file creation (`O_CREAT | O_EXCL | O_NOFOLLOW`), `rename`
 *   and `unlink` all name their target relative to a held descriptor, so
 *   none of them can land outside the root;
 * - right before a rename, {@link verifyDir} checks that the descriptor's
 *   directory is still at its expected path (`readlink /proc/self/fd/N`), so
 *   a parent folder replaced during the call is reported as `PATH_SYMLINK`
 *   instead of quietly writing into a folder that was moved away.
 *
 * Without `/proc` (macOS, BSD) the same code uses plain paths and checks the
 * directory's dev/ino against the held descriptor before each rename, which
 * narrows the race window but can't close it.
 *
 * Writes are refused inside `.git` and `.agentcore` (any component, compared
 * case-insensitively): `PATH_PROTECTED`.
 *
 * @module
 */
import * as fs from "node:fs";
import * as nodePath from "node:path";
import { ToolError } from "../definition.ts";
import { splitRelativePath } from "../fs/rooted.ts";
import type { ErrorCode } from "../../core/envelope.ts";

const C = fs.constants;
const O_DIRECTORY = C.O_DIRECTORY ?? 0;
const O_NOFOLLOW = C.O_NOFOLLOW ?? 0;
const DIR_FLAGS = C.O_RDONLY | O_DIRECTORY | O_NOFOLLOW;
const READ_FLAGS = C.O_RDONLY | O_NOFOLLOW | (C.O_NONBLOCK ?? 0) | (C.O_NOCTTY ?? 0);
const TEMP_FLAGS = C.O_WRONLY | C.O_CREAT | C.O_EXCL | O_NOFOLLOW;

/** Folder names no workspace tool writes into (compared case-insensitively). */
export const PROTECTED_DIRS: readonly string[] = [".git", ".agentcore"];

let procFd: boolean | undefined;
/** Whether `/proc/self/fd/N/name` resolution is available (Linux with /proc). */
export function hasProcFd(): boolean {
  if (procFd === undefined) {
    procFd = false;
    if (globalThis.process?.platform === "linux") {
      try {
        procFd = fs.statSync("/proc/self/fd").isDirectory();
      } catch {
        procFd = false;
      }
    }
  }
  return procFd;
}

/**
 * Test-only hooks (production code never sets them):
 * - `beforeRename(absTarget)` runs after the temp file is written and synced,
 *   before the parent is re-verified and the rename happens;
 * - `beforeCommit(index, absTarget)` runs in `apply_patch`'s commit phase
 *   before file `index` is renamed into place; throwing simulates a failure;
 * - `forcePortable` makes Linux use the path-based fallback.
 */
export const workspaceTestHooks: {
  beforeRename: ((absTarget: string) => void) | null;
  beforeCommit: ((index: number, absTarget: string) => void) | null;
  forcePortable: boolean;
} = { beforeRename: null, beforeCommit: null, forcePortable: false };

/** An open directory and the absolute path where it is expected to be. */
export interface DirHandle {
  readonly fd: number;
  readonly abs: string;
}

export function fail(code: ErrorCode, message: string, details: Record<string, unknown> = {}): never {
  throw new ToolError(code, message, details);
}

export function errnoOf(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}

function useProc(): boolean {
  return hasProcFd() && !workspaceTestHooks.forcePortable;
}

/** The path naming `name` inside `dir` (relative to its descriptor on Linux). */
export function at(dir: DirHandle, name: string): string {
  return useProc() ? `/proc/self/fd/${dir.fd}/${name}` : `${dir.abs}/${name}`;
}

/** The path naming the directory itself (for readdir). */
export function self(dir: DirHandle): string {
  return useProc() ? `/proc/self/fd/${dir.fd}` : dir.abs;
}

/** Map an OS error to a ToolError (`path` is the relative path, for messages). */
export function osError(err: unknown, syscall: string, path: string): never {
  const errno = errnoOf(err);
  switch (errno) {
    case "ENOENT":
      fail("NOT_FOUND", `no such file or folder under the root: ${path}`, { path });
    case "ENOTDIR":
      fail("NOT_FOUND", `a component of ${path} is not a folder`, { path });
    case "ELOOP":
    case "EMLINK":
      fail("PATH_SYMLINK", `${path} has a symlink component`, { path });
    case "EISDIR":
      fail("NOT_A_FILE", `${path} is a folder`, { path, kind: "directory" });
    case "ENAMETOOLONG":
      fail("PATH_INVALID", `a component of ${path} is too long`, { path });
    default:
      fail("IO_ERROR", `${syscall} failed on ${path}${errno ? ` (${errno})` : ""}`, { errno: errno ?? "UNKNOWN", syscall, path });
  }
}

export function closeQuietly(fd: number): void {
  try {
    fs.closeSync(fd);
  } catch {
    // already closed or invalid: nothing to do
  }
}

/** Open the (already realpath'd) root directory. */
export function openRoot(realRoot: string): DirHandle {
  try {
    return { fd: fs.openSync(realRoot, DIR_FLAGS), abs: realRoot.replace(/\/+$/, "") || "/" };
  } catch (err) {
    osError(err, "open", ".");
  }
}

export function lstatAt(dir: DirHandle, name: string): fs.Stats | null {
  try {
    return fs.lstatSync(at(dir, name));
  } catch (err) {
    if (errnoOf(err) === "ENOENT") return null;
    throw err;
  }
}

function join(dir: DirHandle, name: string): string {
  return dir.abs === "/" ? `/${name}` : `${dir.abs}/${name}`;
}

/**
 * Open `name` inside `dir` as a directory, never following a symlink. With
 * `create`, a missing folder is made (mode 0755) and its name appended to
 * `created`. `rel` is the relative path so far, for messages.
 */
export function openSubdir(dir: DirHandle, name: string, rel: string, create = false, created?: string[]): DirHandle {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      return { fd: fs.openSync(at(dir, name), DIR_FLAGS), abs: join(dir, name) };
    } catch (err) {
      const errno = errnoOf(err);
      if (errno === "ENOENT" && create && attempt === 0) {
        try {
          fs.mkdirSync(at(dir, name), 0o755);
          created?.push(rel);
        } catch (e) {
          if (errnoOf(e) !== "EEXIST") osError(e, "mkdir", rel);
        }
        continue;
      }
      if (errno === "ENOTDIR" || errno === "ELOOP") {
        const st = lstatAt(dir, name);
        if (st?.isSymbolicLink()) fail("PATH_SYMLINK", `${rel} is a symlink`, { path: rel });
        fail("NOT_FOUND", `${rel} is not a folder`, { path: rel });
      }
      osError(err, "open", rel);
    }
  }
  fail("IO_ERROR", `could not open ${rel}`, { path: rel });
}

/**
 * Whether `dir` is still the directory at `dir.abs`: on Linux the kernel's
 * path of the descriptor must equal it; elsewhere dev/ino of `lstat(abs)`
 * must equal the descriptor's and it must not be a symlink.
 */
export function verifyDir(dir: DirHandle): boolean {
  if (useProc()) {
    try {
      return fs.readlinkSync(`/proc/self/fd/${dir.fd}`) === dir.abs;
    } catch {
      return false;
    }
  }
  try {
    const a = fs.fstatSync(dir.fd);
    const b = fs.lstatSync(dir.abs);
    return !b.isSymbolicLink() && a.dev === b.dev && a.ino === b.ino;
  } catch {
    return false;
  }
}

/**
 * Split and check a path for writing: no root, no trailing `/` or `/.`, nothing
 * inside a protected folder, and not one of `extra` (relative paths the
 * operator protects, such as agentcore's config file when it lies inside
 * the root; an entry also covers everything below it).
 */
export function writablePath(path: string, extra: readonly string[] = []): string[] {
  const parts = splitRelativePath(path);
  if (parts.length === 0) fail("PATH_INVALID", "path names the root folder, not a file", { path });
  // "f.txt/" and "f.txt/." both name f.txt as a folder (POSIX: ENOTDIR), never the file
  if (path.endsWith("/") || path.endsWith("/.")) fail("PATH_INVALID", "path ends with '/' or '/.', which names a folder", { path });
  checkProtected(parts, path);
  const rel = parts.join("/");
  for (const p of extra) {
    if (rel === p || rel.startsWith(p + "/"))
      fail("PATH_PROTECTED", `${path}: agentcore's own file ${p} is not writable by tools`, { path });
  }
  return parts;
}

/**
 * The paths among `absolute` that lie inside `realRoot`, relative to it
 * (for {@link writablePath}'s `extra`). Each is canonicalised through the
 * realpath of its nearest existing ancestor; paths outside the root are
 * dropped.
 */
export function protectedInside(realRoot: string, absolute: readonly string[]): string[] {
  const out: string[] = [];
  for (const given of absolute) {
    // canonicalise the nearest existing ancestor (the file and even its folder may not exist yet)
    let head = nodePath.resolve(given);
    let tail = "";
    let real: string | null = null;
    for (;;) {
      try {
        real = nodePath.join(fs.realpathSync(head), tail);
        break;
      } catch {
        if (head === "/") break;
        tail = `/${nodePath.basename(head)}${tail}`;
        head = nodePath.dirname(head);
      }
    }
    if (real === null) continue;
    const base = realRoot.endsWith("/") ? realRoot : realRoot + "/";
    if (real.startsWith(base) && real.length > base.length) out.push(real.slice(base.length));
  }
  return out;
}

/** Refuse a path with a `.git` or `.agentcore` component. */
export function checkProtected(parts: readonly string[], path: string): void {
  for (let i = 0; i < parts.length; i++) {
    const lower = parts[i]!.toLowerCase();
    if (PROTECTED_DIRS.includes(lower)) {
      fail("PATH_PROTECTED", `${path}: writing inside ${parts[i]} is not allowed`, { path, component: i });
    }
  }
}

/**
 * Open the parent folder of `parts` (descriptor walk from the root). The
 * caller owns the returned handle and must close it. With `create`, missing
 * folders are made (inside the root only, by construction).
 */
export function openParent(realRoot: string, parts: readonly string[], create: boolean, created?: string[]): DirHandle {
  let dir = openRoot(realRoot);
  try {
    for (let i = 0; i < parts.length - 1; i++) {
      const next = openSubdir(dir, parts[i]!, parts.slice(0, i + 1).join("/"), create, created);
      closeQuietly(dir.fd);
      dir = next;
    }
    return dir;
  } catch (err) {
    closeQuietly(dir.fd);
    throw err;
  }
}

/** Open a folder given as a relative path (`""`/`.` = the root). */
export function openDirPath(realRoot: string, path: string): DirHandle {
  const parts = splitRelativePath(path === "" ? "." : path);
  let dir = openRoot(realRoot);
  try {
    for (let i = 0; i < parts.length; i++) {
      const next = openSubdir(dir, parts[i]!, parts.slice(0, i + 1).join("/"));
      closeQuietly(dir.fd);
      dir = next;
    }
    return dir;
  } catch (err) {
    closeQuietly(dir.fd);
    throw err;
  }
}

/** What {@link readExisting} found at a target name. */
export interface Existing {
  /** The target's lstat (a regular file with one link). */
  stat: fs.Stats;
  /** The content, bounded to `limit` bytes. */
  bytes: Uint8Array;
}

/**
 * Check the current target `name` in `dir` before replacing it: absent is
 * fine (`null`); a symlink, non-file or hard-linked file is refused. With
 * `read`, also read it (bounded by `limit`, via `O_NOFOLLOW`, checking the
 * descriptor is the same file).
 */
export function checkTarget(dir: DirHandle, name: string, rel: string, read: boolean, limit: number): Existing | null {
  let st: fs.Stats | null;
  try {
    st = lstatAt(dir, name);
  } catch (err) {
    osError(err, "lstat", rel);
  }
  if (st === null) return null;
  if (st.isSymbolicLink()) fail("PATH_SYMLINK", `${rel} is a symlink`, { path: rel });
  if (!st.isFile()) fail("NOT_A_FILE", `${rel} is not a regular file`, { path: rel, kind: st.isDirectory() ? "directory" : "other" });
  if (st.nlink > 1)
    fail("PATH_HARDLINK", `${rel} has ${st.nlink} hard links; a linked file may be shared with a place outside the root`, {
      path: rel,
      links: st.nlink,
    });
  if (!read) return { stat: st, bytes: new Uint8Array(0) };
  let fd: number;
  try {
    fd = fs.openSync(at(dir, name), READ_FLAGS);
  } catch (err) {
    osError(err, "open", rel);
  }
  try {
    const fst = fs.fstatSync(fd);
    if (!fst.isFile() || fst.ino !== st.ino || fst.dev !== st.dev) {
      fail("PATH_SYMLINK", `${rel} was replaced during the call`, { path: rel });
    }
    if (fst.nlink > 1) fail("PATH_HARDLINK", `${rel} has ${fst.nlink} hard links`, { path: rel, links: fst.nlink });
    if (fst.size > limit) fail("FILE_TOO_LARGE", `${rel} is larger than the limit`, { path: rel, size: fst.size, limit });
    const buf = Buffer.allocUnsafe(Math.min(fst.size, limit) + 1);
    let total = 0;
    for (;;) {
      const n = fs.readSync(fd, buf, total, buf.length - total, null);
      if (n === 0) break;
      total += n;
      if (total === buf.length) break;
    }
    if (total > limit) fail("FILE_TOO_LARGE", `${rel} grew past the limit while being read`, { path: rel, limit });
    return { stat: fst, bytes: new Uint8Array(buf.buffer, buf.byteOffset, total) };
  } finally {
    closeQuietly(fd);
  }
}

let tempCounter = 0;

/** The longest start of `name` that is at most `max` UTF-8 bytes, cut between characters. */
function utf8Head(name: string, max: number): string {
  let bytes = 0;
  let end = 0;
  for (const ch of name) {
    const cp = ch.codePointAt(0)!;
    bytes += cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    if (bytes > max) break;
    end += ch.length;
  }
  return name.slice(0, end);
}

/**
 * A unique hidden temp name next to `name`. At most 100 bytes of `name` are
 * kept, so the temp name fits the 255-byte limit whenever `name` does (a
 * limit in UTF-8 bytes, not characters: 84 CJK characters are 252 bytes).
 */
export function tempName(name: string, tag = "tmp"): string {
  const rand = Math.random().toString(36).slice(2, 10);
  const prefix = utf8Head(name, 100);
  return `.${prefix}.agentcore-${tag}-${globalThis.process?.pid ?? 0}-${++tempCounter}-${rand}`;
}

/**
 * Create a temp file in `dir` (`O_CREAT | O_EXCL | O_NOFOLLOW`), write
 * `data`, fsync and close it. Returns its name. Removes it on failure.
 */
export function writeTemp(dir: DirHandle, name: string, rel: string, data: Uint8Array, mode: number): string {
  const tmp = tempName(name);
  let fd: number;
  try {
    fd = fs.openSync(at(dir, tmp), TEMP_FLAGS, mode);
  } catch (err) {
    osError(err, "open", rel);
  }
  try {
    let off = 0;
    while (off < data.length) off += fs.writeSync(fd, data, off, data.length - off);
    fs.fchmodSync(fd, mode);
    fs.fsyncSync(fd);
  } catch (err) {
    closeQuietly(fd);
    unlinkQuietly(dir, tmp);
    osError(err, "write", rel);
  }
  closeQuietly(fd);
  return tmp;
}

export function unlinkQuietly(dir: DirHandle, name: string): void {
  try {
    fs.unlinkSync(at(dir, name));
  } catch {
    // best effort (already gone)
  }
}

/** fsync a directory so a rename inside it is durable (best effort). */
export function syncDir(dir: DirHandle): void {
  try {
    fs.fsyncSync(dir.fd);
  } catch {
    // some filesystems refuse fsync on directories; the rename still happened
  }
}

/**
 * The last checks before a rename replaces `name` in `dir`: the folder is
 * still where it was, and the target is absent or a plain file with one
 * link (not a symlink or hard link swapped in). `existed` is what staging
 * saw: a file that vanished meanwhile is reported.
 */
export function recheckBeforeRename(dir: DirHandle, name: string, rel: string, existed: fs.Stats | null): void {
  if (!verifyDir(dir)) {
    fail("PATH_SYMLINK", `the folder of ${rel} was moved or replaced during the call`, { path: rel });
  }
  const now = lstatAt(dir, name);
  if (now === null) {
    if (existed !== null) fail("NOT_FOUND", `${rel} was removed during the call`, { path: rel });
    return;
  }
  if (now.isSymbolicLink()) fail("PATH_SYMLINK", `${rel} was replaced by a symlink during the call`, { path: rel });
  if (!now.isFile()) fail("NOT_A_FILE", `${rel} is not a regular file`, { path: rel });
  if (now.nlink > 1) fail("PATH_HARDLINK", `${rel} has ${now.nlink} hard links`, { path: rel, links: now.nlink });
  // A plain file that appeared or was replaced meanwhile is simply replaced:
  // the rename stays inside this folder and never follows anything.
}

/** Remove folders made by {@link openParent}, deepest first (best effort, only if empty). */
export function removeCreatedDirs(realRoot: string, created: readonly string[]): void {
  for (const rel of [...created].reverse()) {
    const parts = rel.split("/");
    let dir: DirHandle | null = null;
    try {
      dir = openParent(realRoot, parts, false);
      fs.rmdirSync(at(dir, parts[parts.length - 1]!));
    } catch {
      // not empty, or already gone
    } finally {
      if (dir !== null) closeQuietly(dir.fd);
    }
  }
}
