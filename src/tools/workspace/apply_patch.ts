/**
 * `apply_patch`: change several files at once, all or nothing.
 *
 * Arguments: exactly one of
 * - `{"patch": string}`: a unified diff (rules in `patch.ts`; files can be
 *   modified, created from `/dev/null`, or deleted to `/dev/null`);
 * - `{"edits": [{"path", "old", "new"}, …]}`: exact search/replace; each
 *   `old` must occur exactly once in the file as it is after the earlier
 *   edits to that file.
 * Result: `{"files": [{"path", "action": "modified" | "created" | "deleted"}]}`.
 *
 * All or nothing, in three phases:
 * 1. **Check**: every path follows the `write_file` rules (rooted, no
 *    symlink, no hard link, not in `.git`/`.agentcore`); every file is read
 *    and every hunk or edit is applied in memory. Any error stops here,
 *    before anything on disk changes (folders made for new files are removed).
 * 2. **Stage**: each new content goes to a temp file next to its target
 *    (fsynced).
 * 3. **Commit**: in order, each modified file is hard-linked to a backup
 *    name and the temp file renamed over it; a created file is renamed into
 *    place; a deleted file is renamed to a backup name. If any step fails
 *    (including a target swapped for a symlink meanwhile), the earlier steps
 *    are undone in reverse (backups renamed back, created files removed), so
 *    the tree is as it was. Backups are removed after success.
 *
 * A crash (power loss, SIGKILL) in the middle of phase 3 can leave some files
 * changed and hidden backups (`.NAME.agentcore-bak-…`) beside them: atomic
 * across files is guaranteed against errors, not against crashes.
 *
 * @module
 */
import * as fs from "node:fs";
import type { ToolDefinition } from "../definition.ts";
import { resolveRoot } from "../fs/rooted.ts";
import { markTrustedSchema } from "../schema.ts";
import {
  at,
  checkTarget,
  closeQuietly,
  fail,
  openParent,
  osError,
  recheckBeforeRename,
  removeCreatedDirs,
  syncDir,
  tempName,
  unlinkQuietly,
  workspaceTestHooks,
  protectedInside,
  writablePath,
  writeTemp,
  type DirHandle,
  type Existing,
} from "./dirfd.ts";
import { applyEdit, applyFilePatch, parseUnifiedDiff, type Edit } from "./patch.ts";
import { deepFreeze } from "./util.ts";
import { DEFAULT_WRITE_MAX_BYTES } from "./write_file.ts";

export interface ApplyPatchArgs {
  patch?: string;
  edits?: Edit[];
}

export type PatchAction = "modified" | "created" | "deleted";

export interface ApplyPatchResult {
  files: { path: string; action: PatchAction }[];
}

export const APPLY_PATCH_PARAMETERS = deepFreeze({
  $schema: "https://json-schema.org/draft/2020-12/schema",
  type: "object",
  properties: {
    patch: {
      type: "string",
      minLength: 1,
      description: "A unified diff (---/+++ headers, @@ hunks); /dev/null creates or deletes a file.",
    },
    edits: {
      type: "array",
      minItems: 1,
      maxItems: 1000,
      description: "Exact search/replace edits, applied in order; each 'old' must occur exactly once.",
      items: {
        type: "object",
        properties: {
          path: { type: "string", minLength: 1, maxLength: 4096 },
          old: { type: "string", minLength: 1 },
          new: { type: "string" },
        },
        required: ["path", "old", "new"],
        additionalProperties: false,
      },
    },
  },
  oneOf: [{ required: ["patch"] }, { required: ["edits"] }],
  additionalProperties: false,
} as const);
markTrustedSchema(APPLY_PATCH_PARAMETERS);

interface Op {
  rel: string;
  dir: DirHandle;
  name: string;
  existing: Existing | null;
  /** `null`: delete. */
  content: string | null;
  tmp?: string;
  backup?: string;
  done?: PatchAction;
}

const encoder = new TextEncoder();
let strictUtf8: TextDecoder | undefined;

function decode(bytes: Uint8Array, rel: string): string {
  strictUtf8 ??= new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
  try {
    return strictUtf8.decode(bytes);
  } catch {
    fail("FILE_NOT_UTF8", `${rel} is not valid UTF-8`, { path: rel });
  }
}

/** Apply a patch or edits under `realRoot`, all or nothing (see the module doc). */
export function applyRootedPatch(
  realRoot: string,
  args: ApplyPatchArgs,
  maxBytes: number,
  protectedPaths: readonly string[] = [],
): ApplyPatchResult {
  if ((args.patch === undefined) === (args.edits === undefined)) {
    fail("INVALID_ARGUMENTS", 'give exactly one of "patch" and "edits"', {
      errors: [{ path: "", keyword: "oneOf", message: 'exactly one of "patch" and "edits"' }],
    });
  }
  const ops: Op[] = [];
  const created: string[] = [];
  let committed = false;
  const open = (path: string, create: boolean): Op => {
    const parts = writablePath(path, protectedPaths);
    const rel = parts.join("/");
    if (ops.some((o) => o.rel === rel)) fail("PATCH_INVALID", `${rel} is named twice`, { path: rel });
    const dir = openParent(realRoot, parts, create, created);
    const op: Op = { rel, dir, name: parts[parts.length - 1]!, existing: null, content: null };
    ops.push(op);
    op.existing = checkTarget(dir, op.name, rel, true, maxBytes);
    return op;
  };
  try {
    // Phase 1: check everything in memory.
    if (args.patch !== undefined) {
      for (const fp of parseUnifiedDiff(args.patch)) {
        const op = open((fp.newPath ?? fp.oldPath)!, fp.oldPath === null);
        const before = op.existing === null ? null : decode(op.existing.bytes, op.rel);
        op.content = applyFilePatch(fp, before, op.rel);
      }
    } else {
      const byPath = new Map<string, Op>();
      args.edits!.forEach((edit, i) => {
        const key = writablePath(edit.path, protectedPaths).join("/");
        let op = byPath.get(key);
        if (op === undefined) {
          op = open(edit.path, false);
          if (op.existing === null)
            fail("NOT_FOUND", `${op.rel}: no such file (edit ${i + 1}); create files with write_file or a patch from /dev/null`, {
              path: op.rel,
              edit: i + 1,
            });
          op.content = decode(op.existing.bytes, op.rel);
          byPath.set(key, op);
        }
        op.content = applyEdit(op.content!, { ...edit, path: op.rel }, i);
      });
    }
    const data = ops.map((op) => (op.content === null ? null : encoder.encode(op.content)));
    data.forEach((d, i) => {
      if (d !== null && d.length > maxBytes)
        fail("FILE_TOO_LARGE", `${ops[i]!.rel} would be ${d.length} bytes; the limit is ${maxBytes}`, {
          path: ops[i]!.rel,
          size: d.length,
          limit: maxBytes,
        });
    });

    // Phase 2: stage temp files.
    ops.forEach((op, i) => {
      const d = data[i];
      if (d === null || d === undefined) return;
      const mode = op.existing === null ? 0o644 : op.existing.stat.mode & 0o7777;
      op.tmp = writeTemp(op.dir, op.name, op.rel, d, mode);
    });

    // Phase 3: commit in order; undo on any failure.
    try {
      ops.forEach((op, i) => {
        workspaceTestHooks.beforeCommit?.(i, `${op.dir.abs}/${op.name}`);
        recheckBeforeRename(op.dir, op.name, op.rel, op.existing?.stat ?? null);
        try {
          if (op.content === null) {
            op.backup = tempName(op.name, "bak");
            fs.renameSync(at(op.dir, op.name), at(op.dir, op.backup));
            op.done = "deleted";
          } else if (op.existing !== null) {
            op.backup = tempName(op.name, "bak");
            fs.linkSync(at(op.dir, op.name), at(op.dir, op.backup));
            fs.renameSync(at(op.dir, op.tmp!), at(op.dir, op.name));
            op.tmp = undefined;
            op.done = "modified";
          } else {
            fs.renameSync(at(op.dir, op.tmp!), at(op.dir, op.name));
            op.tmp = undefined;
            op.done = "created";
          }
        } catch (err) {
          osError(err, "rename", op.rel);
        }
      });
    } catch (err) {
      for (const op of [...ops].reverse()) rollback(op);
      throw err;
    }
    committed = true;
    for (const op of ops) {
      if (op.backup !== undefined) unlinkQuietly(op.dir, op.backup);
      syncDir(op.dir);
    }
    return { files: ops.map((op) => ({ path: op.rel, action: op.done! })) };
  } finally {
    for (const op of ops) {
      if (op.tmp !== undefined) unlinkQuietly(op.dir, op.tmp);
      closeQuietly(op.dir.fd);
    }
    if (!committed) removeCreatedDirs(realRoot, created);
  }
}

/** Undo one committed step (best effort; each step is a rename or unlink). */
function rollback(op: Op): void {
  try {
    if (op.done === "modified" || op.done === "deleted") {
      fs.renameSync(at(op.dir, op.backup!), at(op.dir, op.name));
      op.backup = undefined;
    } else if (op.done === "created") {
      fs.unlinkSync(at(op.dir, op.name));
    } else if (op.backup !== undefined) {
      unlinkQuietly(op.dir, op.backup); // the link was made, the rename was not
      op.backup = undefined;
    }
  } catch {
    // nothing more we can do; the error that caused the rollback is reported
  }
  op.done = undefined;
}

/** Create an `apply_patch` tool; `maxBytes` caps each file before and after (default 1 MiB). */
export function createApplyPatchTool(options: {
  root: string;
  maxBytes?: number;
  protect?: readonly string[];
}): ToolDefinition<ApplyPatchArgs> {
  const realRoot = resolveRoot(options.root);
  const maxBytes = options.maxBytes ?? DEFAULT_WRITE_MAX_BYTES;
  if (!Number.isSafeInteger(maxBytes) || maxBytes < 1) throw new RangeError("apply_patch maxBytes must be a positive safe integer");
  const protectedPaths = protectedInside(realRoot, options.protect ?? []);
  return {
    name: "apply_patch",
    description:
      'Change files under the root, all or nothing. Give either "patch" (a unified diff; /dev/null creates or deletes; context must match exactly) or "edits" ([{path, old, new}]; each old text must occur exactly once). Same path rules as write_file.',
    parameters: APPLY_PATCH_PARAMETERS as unknown as Record<string, unknown>,
    effect: "side_effecting",
    handler: (args: ApplyPatchArgs): ApplyPatchResult => applyRootedPatch(realRoot, args, maxBytes, protectedPaths),
  };
}
