/**
 * The operator's JSONC configuration file (`--config FILE` or `AGENTCORE_CONFIG`).
 *
 * Comments and trailing commas are allowed. Unknown keys and wrong types are
 * errors that name the key, so a typo never silently falls back to a default.
 *
 * ```jsonc
 * {
 *   // file tools are rooted here; relative paths are resolved from this file's folder
 *   "root": "./workspace",
 *   "max_input_bytes": 1048576,
 *   "max_depth": 64,
 *   "max_file_bytes": 1048576,
 *   "default_timeout_ms": 30000
 * }
 * ```
 *
 * @module
 */
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { parse, printParseErrorCode, type ParseError } from "jsonc-parser";

/** Settings read from the config file. Every field is optional. */
export interface FileConfig {
  root?: string;
  max_input_bytes?: number;
  max_depth?: number;
  max_file_bytes?: number;
  default_timeout_ms?: number;
}

/** A config problem; the CLI prints it and exits 2. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

const INTEGER_KEYS = ["max_input_bytes", "max_depth", "max_file_bytes", "default_timeout_ms"] as const;

function lineColumn(text: string, offset: number): string {
  let line = 1;
  let col = 1;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      col = 1;
    } else col++;
  }
  return `${line}:${col}`;
}

/** Read and check a config file. Throws {@link ConfigError} with the file, position and key. */
export function loadConfig(path: string): FileConfig {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    throw new ConfigError(`cannot read config file ${path}: ${(e as NodeJS.ErrnoException).code ?? String(e)}`);
  }
  const errors: ParseError[] = [];
  const value: unknown = parse(text, errors, { allowTrailingComma: true, disallowComments: false });
  if (errors.length > 0) {
    const e = errors[0]!;
    throw new ConfigError(`${path}:${lineColumn(text, e.offset)}: ${printParseErrorCode(e.error)}`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new ConfigError(`${path}: the top level must be an object`);
  }
  const raw = value as Record<string, unknown>;
  const out: FileConfig = {};
  for (const key of Object.keys(raw)) {
    const v = raw[key];
    if (key === "root") {
      if (typeof v !== "string" || v.length === 0) throw new ConfigError(`${path}: "root" must be a non-empty string`);
      out.root = resolve(dirname(path), v);
    } else if ((INTEGER_KEYS as readonly string[]).includes(key)) {
      if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 1) {
        throw new ConfigError(`${path}: "${key}" must be a positive integer`);
      }
      out[key as (typeof INTEGER_KEYS)[number]] = v;
    } else {
      throw new ConfigError(`${path}: unknown key "${key}" (known: root, ${INTEGER_KEYS.join(", ")})`);
    }
  }
  return out;
}
