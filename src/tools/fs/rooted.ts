/**
 * Rooted, read-only file access: the rules behind `read_file`.
 *
 * The root is an absolute, symlink-free directory (the `realpath` of what the
 * operator configured) captured once, when the runtime is created. A call only
 * ever supplies a path *relative* to it. The rules, in the order they apply,
 * each failing with a {@link ToolError} code:
 *
 * | rule | code |
 * |---|---|
 * | empty, longer than 4096 chars, contains NUL, or contains a lone UTF-16 surrogate (not representable in UTF-8) | `PATH_INVALID` |
 * | absolute: POSIX `/…`, Windows `\…`, `C:…` (drive), `\\server\share` (UNC) | `PATH_ABSOLUTE` |
 * | any `..` component (separators `/` and `\` both count) | `PATH_TRAVERSAL` |
 * | a backslash anywhere (kept out so a path means the same on every OS) | `PATH_INVALID` |
 * | any component that is a symlink, directory or final | `PATH_SYMLINK` |
 * | a component missing, or an intermediate that is not a directory | `NOT_FOUND` |
 * | the target is a directory, FIFO, socket or device | `NOT_A_FILE` |
 * | size over min(request `max_bytes`, configured limit) | `FILE_TOO_LARGE` |
 * | content not valid UTF-8 (a BOM is kept as U+FEFF) | `FILE_NOT_UTF8` |
 * | any other OS error (`EACCES`, `EMFILE`, …), errno in `details.errno` | `IO_ERROR` |
 *
 * Empty components and `.` are ignored (`a//b`, `./a` mean `a/b`, `a`); a
 * trailing `/` or `/.` names a directory, so it is `NOT_A_FILE`.
 *
 * **No check-then-use window.** Checking components with `lstat` is not enough
 * on its own: a directory could be swapped for a symlink between the checks
 * and the `open`. So:
 *
 * 1. every intermediate component is `lstat`ed (symlinks refused), and the
 *    final one too (so FIFOs/devices are normally refused before any open);
 * 2. the final path is opened with `O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
 *    O_NOCTTY`: a symlink as the final component fails the open itself, and a
 *    FIFO or device swapped in late can't block the open;
 * 3. the *opened descriptor* is `fstat`ed and must be a regular file;
 * 4. the opened file is proven to be the one inside the root: on Linux,
 *    `readlink("/proc/self/fd/<fd>")` (the kernel's resolved path of what was
 *    actually opened) must equal `realRoot + "/" + relativePath`, which fails
 *    if any directory component was a symlink at open time; elsewhere the
 *    chain is re-`lstat`ed and the final component's dev/ino must equal the
 *    descriptor's;
 * 5. the size is checked with `fstat` before reading, and the read itself is
 *    bounded to limit + 1 bytes, so a file growing during the read is still
 *    refused. The descriptor is always closed.
 *
 * This is an application boundary, not an OS sandbox: hard links to files
 * outside the root are regular files inside it and are read, and the
 * non-Linux fallback is weaker than the `/proc` check.
 *
 * Writes can't be checked after the fact, so the workspace tools
 * (`write_file`, `apply_patch`, and the read-only walkers) resolve the same
 * paths, with {@link splitRelativePath} and the same codes, through
 * directory descriptors instead: see `../workspace/dirfd.ts`.
 *
 * @module
 */
import * as fs from "node:fs";
import { ToolError } from "../definition.ts";
import type { ErrorCode } from "../../core/envelope.ts";

/** Default configured size limit for one read: 1 MiB. */
export const DEFAULT_MAX_FILE_BYTES = 1024 * 1024;
/** Longest relative path accepted, in UTF-16 code units. */
export const MAX_PATH_LENGTH = 4096;

/** What a successful read returns. */
export interface RootedFile {
  /** Number of bytes read. */
  bytes: number;
  /** The file's content, decoded as strict UTF-8. */
  content: string;
}

/**
 * Test-only hooks. Production code never sets them; tests use them to make
 * races deterministic.
 * - `beforeOpen` runs after every component check, immediately before `open`,
 *   with the absolute path about to be opened (e.g. to swap a symlink in);
 * - `beforeRead` runs after the size check, before the bounded read (e.g. to
 *   grow the file);
 * - `forcePortableVerify` makes Linux use the non-`/proc` verification too.
 */
export const rootedTestHooks: {
  beforeOpen: ((absolutePath: string) => void) | null;
  beforeRead: ((absolutePath: string) => void) | null;
  forcePortableVerify: boolean;
} = { beforeOpen: null, beforeRead: null, forcePortableVerify: false };

const C = fs.constants;
const OPEN_FLAGS = C.O_RDONLY | (C.O_NOFOLLOW ?? 0) | (C.O_NONBLOCK ?? 0) | (C.O_NOCTTY ?? 0);
const IS_LINUX = globalThis.process?.platform === "linux";
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

let utf8: TextDecoder | undefined;

/**
 * Resolve an operator-chosen root directory to its canonical absolute path.
 * Throws a plain `Error` when it does not exist or is not a directory.
 */
export function resolveRoot(dir: string): string {
  const real = fs.realpathSync(dir);
  if (!fs.statSync(real).isDirectory()) throw new Error(`root is not a directory: ${real}`);
  return real;
}

function fail(code: ErrorCode, message: string, details: Record<string, unknown> = {}): never {
  throw new ToolError(code, message, details);
}

/**
 * Check a relative path's syntax and split it into components. Throws
 * `PATH_INVALID`, `PATH_ABSOLUTE` or `PATH_TRAVERSAL`. Touches no filesystem.
 */
export function splitRelativePath(path: string): string[] {
  if (typeof path !== "string" || path.length === 0) fail("PATH_INVALID", "path is empty");
  if (path.length > MAX_PATH_LENGTH) fail("PATH_INVALID", `path is longer than ${MAX_PATH_LENGTH} characters`);
  if (path.includes("\0")) fail("PATH_INVALID", "path contains a NUL character");
  if (LONE_SURROGATE.test(path)) fail("PATH_INVALID", "path is not valid Unicode (lone surrogate)");
  if (path[0] === "/" || path[0] === "\\") fail("PATH_ABSOLUTE", "path must be relative to the root");
  if (/^[A-Za-z]:/.test(path)) fail("PATH_ABSOLUTE", "path must be relative to the root (Windows drive form)");
  const raw = path.split(/[\\/]/);
  for (let i = 0; i < raw.length; i++) {
    if (raw[i] === "..") fail("PATH_TRAVERSAL", "path contains a '..' component", { component: i });
  }
  if (path.includes("\\")) fail("PATH_INVALID", "path contains a backslash; use '/' as separator");
  const parts: string[] = [];
  for (const p of raw) if (p !== "" && p !== ".") parts.push(p);
  return parts;
}

function errnoOf(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}

/** Map an OS error to a ToolError. `component` is the index being examined. */
function osFailure(err: unknown, syscall: string, component: number): never {
  const errno = errnoOf(err);
  switch (errno) {
    case "ENOENT":
    case "ENOTDIR":
      fail("NOT_FOUND", "no such file under the root", { component });
    case "ELOOP":
    case "EMLINK": // FreeBSD's answer to O_NOFOLLOW on a symlink
      fail("PATH_SYMLINK", "path has a symlink component", { component });
    case "EISDIR":
    case "ENXIO":
      fail("NOT_A_FILE", "not a regular file", { component });
    default:
      fail("IO_ERROR", `${syscall} failed${errno ? ` (${errno})` : ""}`, { errno: errno ?? "UNKNOWN", syscall });
  }
}

function describeKind(st: fs.Stats): string {
  if (st.isDirectory()) return "directory";
  if (st.isFIFO()) return "fifo";
  if (st.isSocket()) return "socket";
  if (st.isCharacterDevice()) return "character_device";
  if (st.isBlockDevice()) return "block_device";
  if (st.isSymbolicLink()) return "symlink";
  return "other";
}

function lstatComponent(abs: string, component: number): fs.Stats {
  try {
    return fs.lstatSync(abs);
  } catch (err) {
    osFailure(err, "lstat", component);
  }
}

/** lstat each intermediate component; each must be a real directory. */
function checkDirectories(base: string, parts: string[]): void {
  let abs = base;
  for (let i = 0; i < parts.length - 1; i++) {
    abs += (i === 0 ? "" : "/") + parts[i];
    const st = lstatComponent(abs, i);
    if (st.isSymbolicLink()) fail("PATH_SYMLINK", "path has a symlink component", { component: i });
    if (!st.isDirectory()) fail("NOT_FOUND", "no such file under the root (a component is not a directory)", { component: i });
  }
}

/**
 * Read `relativePath` under `realRoot` (which must come from
 * {@link resolveRoot}) following every rule in the module doc. `maxBytes` is
 * the effective limit (already the minimum of request and configuration).
 * Throws {@link ToolError}; never returns content from outside the root.
 */
export function readRootedFile(realRoot: string, relativePath: string, maxBytes: number): RootedFile {
  const parts = splitRelativePath(relativePath);
  if (parts.length === 0) fail("NOT_A_FILE", "path names the root directory", { kind: "directory" });
  // "f.txt/" and "f.txt/." both name f.txt as a directory (POSIX: ENOTDIR)
  if (relativePath.endsWith("/") || relativePath.endsWith("/.")) {
    fail("NOT_A_FILE", "path ends with '/' or '/.', which names a directory", { kind: "directory" });
  }
  const base = realRoot.endsWith("/") ? realRoot : realRoot + "/";
  const rel = parts.join("/");
  const abs = base + rel;
  const last = parts.length - 1;

  checkDirectories(base, parts);
  const pre = lstatComponent(abs, last);
  if (pre.isSymbolicLink()) fail("PATH_SYMLINK", "path has a symlink component", { component: last });
  if (!pre.isFile()) fail("NOT_A_FILE", "not a regular file", { kind: describeKind(pre) });

  rootedTestHooks.beforeOpen?.(abs);

  let fd: number;
  try {
    fd = fs.openSync(abs, OPEN_FLAGS);
  } catch (err) {
    osFailure(err, "open", last);
  }
  try {
    let st: fs.Stats;
    try {
      st = fs.fstatSync(fd);
    } catch (err) {
      osFailure(err, "fstat", last);
    }
    if (!st.isFile()) fail("NOT_A_FILE", "not a regular file", { kind: describeKind(st) });
    verifyOpenedInsideRoot(fd, st, base, parts, abs);

    if (st.size > maxBytes) fail("FILE_TOO_LARGE", "file is larger than the limit", { size: st.size, limit: maxBytes });
    rootedTestHooks.beforeRead?.(abs);
    const buf = readBounded(fd, st.size, maxBytes);
    if (buf.length > maxBytes) fail("FILE_TOO_LARGE", "file grew past the limit while being read", { limit: maxBytes });
    utf8 ??= new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
    let content: string;
    try {
      content = utf8.decode(buf);
    } catch {
      fail("FILE_NOT_UTF8", "file content is not valid UTF-8", { bytes: buf.length });
    }
    return { bytes: buf.length, content };
  } finally {
    try {
      fs.closeSync(fd);
    } catch {
      // nothing useful to do; the read result (or error) stands
    }
  }
}

/** Prove the descriptor refers to `abs` inside the root (see module doc, step 4). */
function verifyOpenedInsideRoot(fd: number, st: fs.Stats, base: string, parts: string[], abs: string): void {
  if (IS_LINUX && !rootedTestHooks.forcePortableVerify) {
    let actual: string | undefined;
    try {
      actual = fs.readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      actual = undefined; // /proc not mounted: use the portable check below
    }
    if (actual !== undefined) {
      if (actual !== abs) {
        fail("PATH_SYMLINK", "the opened file is not at the requested path (a component was replaced during the call)");
      }
      return;
    }
  }
  let same = false;
  try {
    checkDirectories(base, parts);
    const now = lstatComponent(abs, parts.length - 1);
    same = !now.isSymbolicLink() && now.dev === st.dev && now.ino === st.ino;
  } catch {
    same = false; // the chain no longer checks out: we can't prove where the fd points
  }
  if (!same) {
    fail("PATH_SYMLINK", "the opened file is not at the requested path (a component was replaced during the call)");
  }
}

/** Read at most `limit + 1` bytes, so growth past the limit is detectable. */
function readBounded(fd: number, sizeHint: number, limit: number): Uint8Array {
  const cap = limit + 1;
  let buf = Buffer.allocUnsafe(Math.min(sizeHint + 1, cap));
  let total = 0;
  for (;;) {
    if (total === buf.length) {
      if (buf.length >= cap) break;
      const bigger = Buffer.allocUnsafe(Math.min(buf.length * 2 + 4096, cap));
      buf.copy(bigger, 0, 0, total);
      buf = bigger;
    }
    let n: number;
    try {
      n = fs.readSync(fd, buf, total, buf.length - total, null);
    } catch (err) {
      osFailure(err, "read", -1);
    }
    if (n === 0) break;
    total += n;
  }
  return buf.subarray(0, total);
}
