/**
 * Error responses of the daemon: every refusal is a whole result envelope
 * (`success:false`, an `error` with a code from `ERROR_CODES`, a message that
 * says what is wrong and where, and a `details` object), sent with the
 * matching HTTP status. Nothing else ever reaches the client: no stack trace,
 * no framework error page.
 *
 * @module
 */
import { AgentcoreError } from "../core/errors.ts";
import type { Envelope, ErrorCode } from "../core/envelope.ts";
import { serializeEnvelope } from "../runtime/envelope_io.ts";

/** The JSON content type of every non-streaming response. */
export const JSON_TYPE = "application/json; charset=utf-8";
/** Headers of every JSON response: no caching, no content sniffing. */
export const JSON_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  "content-type": JSON_TYPE,
  "cache-control": "no-store",
  "x-content-type-options": "nosniff",
});

/** The envelope of an HTTP-level refusal (no tool ran, so `tool` is null and `duration_ms` 0). */
export function errorEnvelope(code: ErrorCode, message: string, details: Record<string, unknown> = {}): Envelope {
  return { id: null, success: false, tool: null, result: null, error: { code, message, details }, duration_ms: 0 };
}

/** A JSON response whose body is an error envelope. */
export function errorResponse(
  status: number,
  code: ErrorCode,
  message: string,
  details: Record<string, unknown> = {},
  headers: Record<string, string> = {},
): Response {
  return new Response(serializeEnvelope(errorEnvelope(code, message, details)) + "\n", {
    status,
    headers: { ...JSON_HEADERS, ...headers },
  });
}

/** A JSON response (compact, newline-terminated). */
export function jsonResponse(value: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(value) + "\n", { status, headers: { ...JSON_HEADERS, ...headers } });
}

/**
 * A request the handler refuses. Thrown inside route handlers and turned into
 * an {@link errorResponse} by the app's error handler.
 */
export class HttpError extends AgentcoreError {
  override name = "HttpError";
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly details: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }

  toResponse(): Response {
    return errorResponse(this.status, this.code, this.message, this.details, this.headers);
  }
}
