/**
 * Error and limit types shared by every entry point of the strict JSON core,
 * and {@link AgentcoreError}, the base class of every error agentcore throws.
 *
 * Codes are stable wire strings (UPPER_SNAKE). Offsets are 0-based UTF-8 byte
 * offsets into the text that was validated; `line` and `column` are 1-based and
 * `column` counts Unicode code points from the start of the line.
 *
 * @module
 */

/**
 * The base class of every error agentcore throws. `code` is stable and part of
 * the public API (UPPER_SNAKE, e.g. `CONFIG_INVALID`, `SESSION_CONFLICT`; the
 * table in docs/errors.md lists them): branch on it rather than on the class
 * name or the message. Each subclass has a code of its own, except the
 * families whose code is the error's own wire value (`ToolError`, the daemon's
 * `HttpError`: an envelope code; `SkillError`: what is wrong with the skill).
 * `name` stays the class name.
 *
 * @example
 * ```ts
 * import { AgentcoreError, modelConfigFromEnv } from "agentcore";
 *
 * try {
 *   modelConfigFromEnv({ MODEL_URL: "not a url" });
 * } catch (e) {
 *   if (!(e instanceof AgentcoreError)) throw e;
 *   console.log(e.code); // MODEL_CONFIG_INVALID
 * }
 * ```
 */
export abstract class AgentcoreError extends Error {
  /** The stable code of this error (see docs/errors.md). */
  abstract readonly code: string;
}

/** Whether `e` is an {@link AgentcoreError}, and when `code` is given, one with that code. */
export function isAgentcoreError(e: unknown, code?: string): e is AgentcoreError {
  return e instanceof AgentcoreError && (code === undefined || e.code === code);
}

/** Public error codes the core can produce. */
export const JSON_ERROR_CODES = [
  "JSON_PARSE",
  "JSON_DEPTH",
  "JSON_SIZE",
  "JSON_DUPLICATE_KEY",
  "JSON_ENCODING",
  "JSON_NUMBER_RANGE",
  "JSON_FORBIDDEN_KEY",
] as const;

/** One of {@link JSON_ERROR_CODES}. */
export type JsonErrorCode = (typeof JSON_ERROR_CODES)[number];

/** A structured validation error: what is wrong and where. */
export interface JsonError {
  code: JsonErrorCode;
  /** Short lower-case message, e.g. `unexpected end of data`, `duplicate key "a"`. */
  message: string;
  /** 0-based UTF-8 byte offset of the offending byte (or of the end of data). */
  offset: number;
  /** 1-based line number. */
  line: number;
  /** 1-based column, counted in Unicode code points. */
  column: number;
}

/** Limits applied by the validator. Every field is optional. */
export interface JsonLimits {
  /** Maximum input size in bytes (UTF-8). Default 1 MiB, hard cap 256 MiB. */
  maxBytes?: number;
  /** Maximum container nesting (arrays + objects). Default 64, hard cap 4096. */
  maxDepth?: number;
  /**
   * Accept an own `"__proto__"` member name. Default `false`: such a key is
   * rejected with `JSON_FORBIDDEN_KEY`. When `true`, it is kept as an own data
   * property (the same semantics as `JSON.parse`), never as a prototype.
   */
  allowProtoKey?: boolean;
}

export const DEFAULT_MAX_BYTES = 1024 * 1024;
export const DEFAULT_MAX_DEPTH = 64;
export const HARD_MAX_BYTES = 256 * 1024 * 1024;
export const HARD_MAX_DEPTH = 4096;

/** Result of `parseStrict`. */
export type ParseResult<T = unknown> = { ok: true; value: T } | { ok: false; error: JsonError };
