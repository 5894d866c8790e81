/**
 * The result envelope: the one compact JSON line every dispatched call yields.
 *
 * Key order is fixed: id, success, tool, result, error, duration_ms.
 *
 * @module
 */
import { JSON_ERROR_CODES } from "./errors.ts";

/**
 * Every error code a result envelope can carry, in the order of the table in
 * docs/errors.md (a test keeps the two equal): the strict core's JSON codes, then call
 * and dispatch codes, then rooted file access (`read_file`), then the
 * daemon's HTTP refusals (`agentcore serve`), then `INTERNAL_ERROR`, a bug inside agentcore reported instead of thrown.
 */
export const ERROR_CODES = [
  ...JSON_ERROR_CODES,
  "INVALID_CALL",
  "UNKNOWN_TOOL",
  "INVALID_ARGUMENTS",
  "TOOL_ERROR",
  "TIMEOUT",
  "CANCELLED",
  "DENIED",
  "AWAITING_APPROVAL",
  "PATH_INVALID",
  "PATH_ABSOLUTE",
  "PATH_TRAVERSAL",
  "PATH_SYMLINK",
  "NOT_FOUND",
  "NOT_A_FILE",
  "FILE_TOO_LARGE",
  "FILE_NOT_UTF8",
  "IO_ERROR",
  "UNAUTHORIZED",
  "FORBIDDEN",
  "INVALID_REQUEST",
  "CONFLICT",
  "OVERLOADED",
  "PATH_PROTECTED",
  "PATH_HARDLINK",
  "PATCH_INVALID",
  "PATCH_MISMATCH",
  "COMMAND_NOT_ALLOWED",
  "RESOURCE_LIMIT",
  "GIT_FAILED",
  "UNAVAILABLE",
  "STORE_FULL",
  "STORE_READONLY",
  "STORE_UNAVAILABLE",
  "STORE_FAILED",
  "INTERNAL_ERROR",
] as const;

/** One of {@link ERROR_CODES}. */
export type ErrorCode = (typeof ERROR_CODES)[number];

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
