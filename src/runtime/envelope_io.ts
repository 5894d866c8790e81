/**
 * Building and serialising result envelopes.
 *
 * {@link serializeEnvelope} writes the one compact line with the keys in the
 * fixed order `id, success, tool, result, error, duration_ms`, whatever order
 * the object's own keys are in. It never throws: a `result` that JSON can't
 * represent (BigInt, a cycle, a throwing `toJSON`) turns the line into a
 * `TOOL_ERROR` envelope for the same call.
 *
 * @module
 */
import type { Envelope, EnvelopeError, ErrorCode } from "../core/envelope.ts";

/** Milliseconds since `start` (a `performance.now()` reading), rounded to 3 decimals. */
export function elapsedMs(start: number): number {
  return Math.round((performance.now() - start) * 1000) / 1000;
}

/** A successful envelope. `undefined` results become `null`. */
export function successEnvelope(id: string | null, tool: string, result: unknown, start: number): Envelope {
  return { id, success: true, tool, result: result === undefined ? null : result, error: null, duration_ms: elapsedMs(start) };
}

/** A failed envelope. */
export function failureEnvelope(
  id: string | null,
  tool: string | null,
  code: ErrorCode,
  message: string,
  details: Record<string, unknown>,
  start: number,
): Envelope {
  return { id, success: false, tool, result: null, error: { code, message, details }, duration_ms: elapsedMs(start) };
}

function finiteNumber(n: number): string {
  return Number.isFinite(n) ? String(n) : "0";
}

function serializeError(error: EnvelopeError): string {
  let details: string;
  try {
    details = JSON.stringify(error.details ?? {}) ?? "{}";
    if (details[0] !== "{") details = "{}";
  } catch {
    details = '{"unserializable":true}';
  }
  return '{"code":' + JSON.stringify(error.code) + ',"message":' + JSON.stringify(String(error.message)) + ',"details":' + details + "}";
}

/**
 * Serialise an envelope as one compact JSON line (no trailing newline), keys
 * in the fixed order. Never throws.
 *
 * @example
 * ```ts
 * serializeEnvelope({ id: "c1", success: true, tool: "echo", result: { a: 1 }, error: null, duration_ms: 0.012 });
 * // '{"id":"c1","success":true,"tool":"echo","result":{"a":1},"error":null,"duration_ms":0.012}'
 * ```
 */
export function serializeEnvelope(env: Envelope): string {
  let result: string | undefined;
  try {
    result = env.result === undefined ? "null" : JSON.stringify(env.result);
  } catch (err) {
    const cause = err instanceof Error ? err.name : typeof err;
    return serializeEnvelope({
      id: env.id,
      success: false,
      tool: env.tool,
      result: null,
      error: {
        code: "TOOL_ERROR",
        message: "tool result is not JSON-serialisable (BigInt, cycle or throwing toJSON)",
        details: { cause },
      },
      duration_ms: env.duration_ms,
    });
  }
  if (result === undefined) result = "null"; // functions and symbols
  return (
    '{"id":' +
    (env.id === null || env.id === undefined ? "null" : JSON.stringify(env.id)) +
    ',"success":' +
    (env.success === true ? "true" : "false") +
    ',"tool":' +
    (env.tool === null || env.tool === undefined ? "null" : JSON.stringify(env.tool)) +
    ',"result":' +
    result +
    ',"error":' +
    (env.error === null || env.error === undefined ? "null" : serializeError(env.error)) +
    ',"duration_ms":' +
    finiteNumber(env.duration_ms) +
    "}"
  );
}
