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
import { type ArgumentError, ARGUMENTS_OK, type ArgumentValidator, escapePointerToken, useHandWrittenValidator } from "../schema.ts";

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

/**
 * Validates against {@link READ_FILE_PARAMETERS} exactly as ajv would, same
 * entries in the same order (required, additionalProperties, then each
 * property), without paying for ajv's meta-schema compilation at start-up.
 * test/tools/read_file_schema.test.ts compares it with ajv.
 */
function readFileValidator(maxErrors: number): ArgumentValidator {
  return function validateReadFileArgs(args: Record<string, unknown>) {
    const hasPath = Object.hasOwn(args, "path");
    const hasMax = Object.hasOwn(args, "max_bytes");
    const path = args.path;
    const max = args.max_bytes;
    let extra = false;
    for (const key in args) {
      if (key !== "path" && key !== "max_bytes" && Object.hasOwn(args, key)) {
        extra = true;
        break;
      }
    }
    if (hasPath && typeof path === "string" && !extra &&
      (!hasMax || (typeof max === "number" && Number.isInteger(max) && max >= 1))) {
      return ARGUMENTS_OK;
    }
    const all: ArgumentError[] = [];
    if (!hasPath) all.push({ path: "/path", keyword: "required", message: 'missing required property "path"' });
    if (extra) {
      for (const key of Object.keys(args)) {
        if (key !== "path" && key !== "max_bytes") {
          all.push({ path: "/" + escapePointerToken(key), keyword: "additionalProperties", message: "unexpected property" });
        }
      }
    }
    if (hasPath && typeof path !== "string") all.push({ path: "/path", keyword: "type", message: "must be string" });
    if (hasMax) {
      // Like ajv: `minimum` still applies to a non-integer number, not to a non-number.
      if (!(typeof max === "number" && Number.isInteger(max))) {
        all.push({ path: "/max_bytes", keyword: "type", message: "must be integer" });
      }
      if (typeof max === "number" && max < 1) {
        all.push({ path: "/max_bytes", keyword: "minimum", message: "must be >= 1" });
      }
    }
    return { ok: false, errors: all.slice(0, maxErrors), truncated: all.length > maxErrors };
  };
}
useHandWrittenValidator(READ_FILE_PARAMETERS, readFileValidator);

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
    parameters: READ_FILE_PARAMETERS as unknown as Record<string, unknown>, // identity matters: selects the hand-written validator
    effect: "read_only",
    handler(args: ReadFileArgs): ReadFileResult {
      const limit = args.max_bytes !== undefined && args.max_bytes < configured ? args.max_bytes : configured;
      const file = readRootedFile(realRoot, args.path, limit);
      return { path: args.path, bytes: file.bytes, content: file.content };
    },
  };
}
