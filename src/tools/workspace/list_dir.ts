/**
 * `list_dir`: the entries of one folder under the root.
 *
 * Arguments: `{"path"?: string (default "."), "max_entries"?: integer ≥ 1}`.
 * Result: `{"path", "entries": [{"name", "type", "size"?}], "truncated"}`,
 * entries sorted by name; `type` is `file`, `dir`, `symlink` or `other`;
 * `size` (bytes) is given for files. Symlinks are listed, never followed;
 * the path rules are `read_file`'s (a symlink component is `PATH_SYMLINK`, a
 * file is `NOT_FOUND` as a folder).
 *
 * @module
 */
import type { ToolDefinition } from "../definition.ts";
import { resolveRoot } from "../fs/rooted.ts";
import { markTrustedSchema } from "../schema.ts";
import { closeQuietly, lstatAt, openDirPath } from "./dirfd.ts";
import { deepFreeze } from "./util.ts";
import { kindOf, readEntries, type EntryKind } from "./walk.ts";

export const DEFAULT_LIST_MAX_ENTRIES = 1000;

export interface ListDirArgs {
  path?: string;
  max_entries?: number;
}

export interface ListDirEntry {
  name: string;
  type: EntryKind;
  size?: number;
}

export interface ListDirResult {
  path: string;
  entries: ListDirEntry[];
  truncated: boolean;
}

export const LIST_DIR_PARAMETERS = deepFreeze({
  $schema: "https://json-schema.org/draft/2020-12/schema",
  type: "object",
  properties: {
    path: { type: "string", maxLength: 4096, description: "Folder relative to the root (default: the root)." },
    max_entries: { type: "integer", minimum: 1, description: "List at most this many entries." },
  },
  additionalProperties: false,
} as const);
markTrustedSchema(LIST_DIR_PARAMETERS);

/** Create a `list_dir` tool; `maxEntries` caps every call (default 1000). */
export function createListDirTool(options: { root: string; maxEntries?: number }): ToolDefinition<ListDirArgs> {
  const realRoot = resolveRoot(options.root);
  const cap = options.maxEntries ?? DEFAULT_LIST_MAX_ENTRIES;
  return {
    name: "list_dir",
    description: `List a folder under the root: names, types (file, dir, symlink, other) and file sizes, sorted by name; at most ${cap} entries. Symlinks are not followed.`,
    parameters: LIST_DIR_PARAMETERS as unknown as Record<string, unknown>,
    effect: "read_only",
    handler(args: ListDirArgs): ListDirResult {
      const path = args.path ?? ".";
      const limit = Math.min(args.max_entries ?? cap, cap);
      const dir = openDirPath(realRoot, path);
      try {
        const all = readEntries(dir);
        const entries: ListDirEntry[] = [];
        for (const d of all.slice(0, limit)) {
          const type = kindOf(d);
          const e: ListDirEntry = { name: d.name, type };
          if (type === "file") {
            try {
              const st = lstatAt(dir, d.name);
              if (st !== null) e.size = st.size;
            } catch {
              // removed meanwhile: listed without a size
            }
          }
          entries.push(e);
        }
        return { path, entries, truncated: all.length > limit };
      } finally {
        closeQuietly(dir.fd);
      }
    },
  };
}
