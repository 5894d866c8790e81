/**
 * `read_file`: read a UTF-8 text file under the runtime's root.
 *
 * Arguments: `{"path": string, "max_bytes"?: integer >= 1}` (nothing else).
 * Result: `{"path": <path as given>, "bytes": <n>, "content": <string>}`.
 *
 * The root is fixed by the operator when the tool is created (the runtime's
 * `root` option, `--root` on the CLI); no call can change it. The effective
 * size limit is min(`max_bytes`, the configured `maxFileBytes`). Every path
 * rule and its error code is listed in `../fs/rooted.ts`.
 *
 * @module
 */
import type { ToolDefinition } from "../definition.ts";
import { DEFAULT_MAX_FILE_BYTES, readRootedFile, resolveRoot } from "../fs/rooted.ts";
import { markTrustedSchema } from "../schema.ts";

/** Arguments of `read_file`, after schema validation. */
export interface ReadFileArgs {
  path: string;
  max_bytes?: number;
}

/** Result of `read_file`. */
export interface ReadFileResult {
  path: string;
  bytes: number;
  content: string;
}

/** Options for {@link createReadFileTool}. */
export interface ReadFileToolOptions {
  /** Root directory; resolved with `realpath` once, now. */
  root: string;
  /** Configured size limit in bytes. Default 1 MiB. */
  maxFileBytes?: number;
}

/** JSON Schema of `read_file`'s arguments (frozen). */
export const READ_FILE_PARAMETERS = deepFreeze({
  $schema: "https://json-schema.org/draft/2020-12/schema",
  type: "object",
  properties: {
    path: { type: "string", description: "File path relative to the root; no '..', no symlinks." },
    max_bytes: { type: "integer", minimum: 1, description: "Refuse files larger than this many bytes." },
  },
  required: ["path"],
  additionalProperties: false,
} as const);

function deepFreeze<T>(v: T): T {
  if (typeof v === "object" && v !== null) {
    for (const x of Object.values(v)) deepFreeze(x);
    Object.freeze(v);
  }
  return v;
}

markTrustedSchema(READ_FILE_PARAMETERS);

/**
 * Create a `read_file` tool rooted at `options.root`. Throws if the root does
 * not exist or is not a directory.
 */
export function createReadFileTool(options: ReadFileToolOptions): ToolDefinition<ReadFileArgs> {
  const realRoot = resolveRoot(options.root);
  const configured = options.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES;
  if (!Number.isSafeInteger(configured) || configured < 0) {
    throw new RangeError("maxFileBytes must be a non-negative safe integer");
  }
  return {
    name: "read_file",
    description: "Read a UTF-8 text file under the runtime's root directory (relative path, no '..', no symlinks, regular files only).",
    parameters: READ_FILE_PARAMETERS as unknown as Record<string, unknown>,
    effect: "read_only",
    handler(args: ReadFileArgs): ReadFileResult {
      const limit = args.max_bytes !== undefined && args.max_bytes < configured ? args.max_bytes : configured;
      const file = readRootedFile(realRoot, args.path, limit);
      return { path: args.path, bytes: file.bytes, content: file.content };
    },
  };
}
