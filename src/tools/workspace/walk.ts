/**
 * Read-only traversal of a folder tree under the root, for `list_dir`,
 * `glob` and `grep`.
 *
 * Every folder is opened relative to its parent's descriptor with
 * `O_DIRECTORY | O_NOFOLLOW` (see `dirfd.ts`), so a symlink is reported as
 * an entry but never followed, and a folder swapped for a symlink during the
 * walk is skipped instead of entered. Names come from `readdir` sorted by
 * UTF-16 code unit, so results are deterministic. The walk is bounded by a
 * maximum number of visited entries and a maximum depth, and stops when the
 * call's signal fires.
 *
 * @module
 */
import * as fs from "node:fs";
import { closeQuietly, openDirPath, openSubdir, self, type DirHandle } from "./dirfd.ts";

/** The kind of an entry, from `readdir` (never following a symlink). */
export type EntryKind = "file" | "dir" | "symlink" | "other";

export interface WalkEntry {
  /** Path relative to the root, `/`-separated. */
  rel: string;
  name: string;
  kind: EntryKind;
  /** The open folder holding the entry (valid only during the callback). */
  parent: DirHandle;
}

/** What the visitor says: descend (for a folder), skip it, or stop the walk. */
export type Visit = void | "skip" | "stop";

export interface WalkOptions {
  /** Stop after visiting this many entries (then `truncated` is true). */
  maxEntries: number;
  /** Do not descend below this depth (default 64). */
  maxDepth?: number;
  /** Do not descend into folders named `.git` (default true). */
  skipGit?: boolean;
  signal?: AbortSignal;
}

export interface WalkResult {
  visited: number;
  /** The entry or depth limit cut the walk short. */
  truncated: boolean;
}

export function kindOf(d: fs.Dirent): EntryKind {
  if (d.isFile()) return "file";
  if (d.isDirectory()) return "dir";
  if (d.isSymbolicLink()) return "symlink";
  return "other";
}

/** Sorted entries of an open folder. */
export function readEntries(dir: DirHandle): fs.Dirent[] {
  const list = fs.readdirSync(self(dir), { withFileTypes: true });
  list.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return list;
}

/**
 * Walk the tree below the folder `start` (relative to the root; `.` is the
 * root), depth first, calling `visit` for each entry. Throws `ToolError`
 * when `start` itself can't be opened as a folder.
 */
export function walkTree(realRoot: string, start: string, options: WalkOptions, visit: (e: WalkEntry) => Visit): WalkResult {
  const maxDepth = options.maxDepth ?? 64;
  const skipGit = options.skipGit ?? true;
  const result: WalkResult = { visited: 0, truncated: false };
  const top = openDirPath(realRoot, start);
  const prefix = start
    .split("/")
    .filter((p) => p !== "" && p !== ".")
    .join("/");
  let stopped = false;

  const recurse = (dir: DirHandle, relDir: string, depth: number): void => {
    let entries: fs.Dirent[];
    try {
      entries = readEntries(dir);
    } catch {
      return; // removed or unreadable meanwhile: nothing to report from it
    }
    for (const d of entries) {
      if (stopped) return;
      if (options.signal?.aborted) {
        stopped = true;
        return;
      }
      if (result.visited >= options.maxEntries) {
        result.truncated = true;
        stopped = true;
        return;
      }
      result.visited++;
      const rel = relDir === "" ? d.name : `${relDir}/${d.name}`;
      const kind = kindOf(d);
      const verdict = visit({ rel, name: d.name, kind, parent: dir });
      if (verdict === "stop") {
        stopped = true;
        return;
      }
      if (kind !== "dir" || verdict === "skip") continue;
      if (skipGit && d.name === ".git") continue;
      if (depth + 1 > maxDepth) {
        result.truncated = true;
        continue;
      }
      let sub: DirHandle;
      try {
        sub = openSubdir(dir, d.name, rel);
      } catch {
        continue; // swapped for a symlink or removed during the walk: never entered
      }
      try {
        recurse(sub, rel, depth + 1);
      } finally {
        closeQuietly(sub.fd);
      }
    }
  };

  try {
    recurse(top, prefix, 0);
  } finally {
    closeQuietly(top.fd);
  }
  return result;
}
