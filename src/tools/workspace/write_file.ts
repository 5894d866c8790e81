/**
 * `write_file`: write a UTF-8 text file under the root, atomically.
 *
 * Arguments: `{"path": string, "content": string, "create_dirs"?: boolean}`.
 * Result: `{"path", "bytes", "created"}` (`created` is true when the file did
 * not exist before).
 *
 * How: the parent folder is reached by a descriptor walk (see `dirfd.ts`;
 * missing folders are made only when `create_dirs` is not false, and only
 * inside the root); the content goes to a new temp file in that folder
 * (`O_CREAT | O_EXCL | O_NOFOLLOW`), is fsynced, and is renamed over the
 * target; then the folder is fsynced. Readers see the old file or the new
 * one, never a half-written one.
 *
 * Refused: everything `read_file` refuses in a path (`PATH_ABSOLUTE`,
 * `PATH_TRAVERSAL`, `PATH_INVALID`, `PATH_SYMLINK`), a target that is a
 * symlink, folder or other non-file, a target with more than one hard link
 * (`PATH_HARDLINK`), anything inside `.git` or `.agentcore`
 * (`PATH_PROTECTED`), content over the size cap (`FILE_TOO_LARGE`), and a
 * parent folder moved or replaced while the call ran (`PATH_SYMLINK`).
 * An existing file keeps its permission bits.
 *
 * @module
 */
import type { ToolDefinition } from "../definition.ts";
import { resolveRoot } from "../fs/rooted.ts";
import { markTrustedSchema } from "../schema.ts";
import {
  checkTarget,
  closeQuietly,
  fail,
  openParent,
  osError,
  recheckBeforeRename,
  removeCreatedDirs,
  syncDir,
  unlinkQuietly,
  workspaceTestHooks,
  writablePath,
  writeTemp,
  at,
  protectedInside,
} from "./dirfd.ts";
import * as fs from "node:fs";
import { deepFreeze } from "./util.ts";

/** Default cap on one write: 1 MiB. */
export const DEFAULT_WRITE_MAX_BYTES = 1024 * 1024;

export interface WriteFileArgs {
  path: string;
  content: string;
  create_dirs?: boolean;
}

export interface WriteFileResult {
  path: string;
  bytes: number;
  created: boolean;
}

export interface WriteFileToolOptions {
  root: string;
  /** Largest content accepted, in UTF-8 bytes. Default 1 MiB. */
  maxBytes?: number;
  /** Absolute paths never written (agentcore's config file, its history log), when inside the root. */
  protect?: readonly string[];
}

export const WRITE_FILE_PARAMETERS = deepFreeze({
  $schema: "https://json-schema.org/draft/2020-12/schema",
  type: "object",
  properties: {
    path: {
      type: "string",
      minLength: 1,
      maxLength: 4096,
      description: "File path relative to the root; no '..', no symlinks, not inside .git or .agentcore.",
    },
    content: { type: "string", description: "The complete new content (UTF-8)." },
    create_dirs: { type: "boolean", description: "Create missing parent folders (default true)." },
  },
  required: ["path", "content"],
  additionalProperties: false,
} as const);
markTrustedSchema(WRITE_FILE_PARAMETERS);

const encoder = new TextEncoder();

/**
 * Write `data` to `relPath` under `realRoot` atomically with every rule of
 * the module doc. Returns whether the file was created.
 */
export function writeRootedFile(
  realRoot: string,
  relPath: string,
  data: Uint8Array,
  createDirs: boolean,
  protectedPaths: readonly string[] = [],
): { created: boolean } {
  const parts = writablePath(relPath, protectedPaths);
  const rel = parts.join("/");
  const name = parts[parts.length - 1]!;
  const created: string[] = [];
  let ok = false;
  const dir = openParent(realRoot, parts, createDirs, created);
  try {
    const existing = checkTarget(dir, name, rel, false, 0);
    const mode = existing === null ? 0o644 : existing.stat.mode & 0o7777;
    const tmp = writeTemp(dir, name, rel, data, mode);
    try {
      workspaceTestHooks.beforeRename?.(`${dir.abs}/${name}`);
      recheckBeforeRename(dir, name, rel, existing?.stat ?? null);
      try {
        fs.renameSync(at(dir, tmp), at(dir, name));
      } catch (err) {
        osError(err, "rename", rel);
      }
    } catch (err) {
      unlinkQuietly(dir, tmp);
      throw err;
    }
    syncDir(dir);
    ok = true;
    return { created: existing === null };
  } finally {
    closeQuietly(dir.fd);
    if (!ok) removeCreatedDirs(realRoot, created);
  }
}

/** Create a `write_file` tool rooted at `options.root`. */
export function createWriteFileTool(options: WriteFileToolOptions): ToolDefinition<WriteFileArgs> {
  const realRoot = resolveRoot(options.root);
  const maxBytes = options.maxBytes ?? DEFAULT_WRITE_MAX_BYTES;
  if (!Number.isSafeInteger(maxBytes) || maxBytes < 1) throw new RangeError("write_file maxBytes must be a positive safe integer");
  const protectedPaths = protectedInside(realRoot, options.protect ?? []);
  return {
    name: "write_file",
    description: `Write a UTF-8 text file under the root, atomically (temp file, then rename). Relative path; no '..', no symlinks, nothing inside .git or .agentcore; at most ${maxBytes} bytes. Creates missing parent folders unless create_dirs is false.`,
    parameters: WRITE_FILE_PARAMETERS as unknown as Record<string, unknown>,
    effect: "side_effecting",
    handler(args: WriteFileArgs): WriteFileResult {
      const data = encoder.encode(args.content);
      if (data.length > maxBytes)
        fail("FILE_TOO_LARGE", `content is ${data.length} bytes; the limit is ${maxBytes}`, { size: data.length, limit: maxBytes });
      const { created } = writeRootedFile(realRoot, args.path, data, args.create_dirs !== false, protectedPaths);
      return { path: args.path, bytes: data.length, created };
    },
  };
}
