/**
 * The result envelope: the one compact JSON line every dispatched call yields.
 *
 * Key order is fixed: id, success, tool, result, error, duration_ms.
 *
 * @module
 */

/** Every error code a result envelope can carry. Documented in the README table. */
export type ErrorCode =
  // strict JSON core
  | "JSON_PARSE"
  | "JSON_DEPTH"
  | "JSON_SIZE"
  | "JSON_DUPLICATE_KEY"
  | "JSON_ENCODING"
  | "JSON_NUMBER_RANGE"
  | "JSON_FORBIDDEN_KEY"
  // call envelope and dispatch
  | "INVALID_CALL"
  | "UNKNOWN_TOOL"
  | "INVALID_ARGUMENTS"
  | "TOOL_ERROR"
  | "TIMEOUT"
  | "CANCELLED"
  | "DENIED"
  // rooted file access (read_file)
  | "PATH_INVALID"
  | "PATH_ABSOLUTE"
  | "PATH_TRAVERSAL"
  | "PATH_SYMLINK"
  | "NOT_FOUND"
  | "NOT_A_FILE"
  | "FILE_TOO_LARGE"
  | "FILE_NOT_UTF8"
  | "IO_ERROR"
  // a bug inside agentcore itself (never expected; reported instead of thrown)
  | "INTERNAL_ERROR";

/** Every {@link ErrorCode}, in table order (for docs and for checking codes at runtime). */
export const ERROR_CODES: readonly ErrorCode[] = [
  "JSON_PARSE",
  "JSON_DEPTH",
  "JSON_SIZE",
  "JSON_DUPLICATE_KEY",
  "JSON_ENCODING",
  "JSON_NUMBER_RANGE",
  "JSON_FORBIDDEN_KEY",
  "INVALID_CALL",
  "UNKNOWN_TOOL",
  "INVALID_ARGUMENTS",
  "TOOL_ERROR",
  "TIMEOUT",
  "CANCELLED",
  "DENIED",
  "PATH_INVALID",
  "PATH_ABSOLUTE",
  "PATH_TRAVERSAL",
  "PATH_SYMLINK",
  "NOT_FOUND",
  "NOT_A_FILE",
  "FILE_TOO_LARGE",
  "FILE_NOT_UTF8",
  "IO_ERROR",
  "INTERNAL_ERROR",
];

/** The error object inside an envelope. `details` is always an object. */
export interface EnvelopeError {
  code: ErrorCode;
  message: string;
  details: Record<string, unknown>;
}

/** One dispatched call's outcome. */
export interface Envelope {
  id: string | null;
  success: boolean;
  tool: string | null;
  result: unknown;
  error: EnvelopeError | null;
  /** Milliseconds from a monotonic clock, rounded to 3 decimals. */
  duration_ms: number;
}
