/**
 * Request bodies: size-capped reading and strict JSON parsing.
 *
 * The cap is enforced twice: a `Content-Length` above it is refused before
 * a byte is kept, and a chunked body is counted while it streams in and
 * refused as soon as it passes the cap (the rest is never buffered).
 *
 * A refused body is drained before the 413 goes out (a lingering close, as
 * nginx does it): its bytes are read and thrown away, up to
 * {@link drainBound} bytes (twice the cap, at least 1 MiB) and for at most
 * {@link DRAIN_MS}, so that a client still writing its body (Node's fetch,
 * Python's urllib) reads the answer instead of a reset or EPIPE. A declared
 * length over the drain bound is refused at once (that client could not be
 * read to its end anyway), and a slow sender is cut off when the time is up.
 * Draining holds one chunk at a time, never the body. JSON is
 * parsed with the strict WebAssembly core (duplicate keys, lone surrogates,
 * `__proto__` members and over-deep nesting are refused), and a parse error
 * names its offset, line and column.
 *
 * @module
 */
import { parseStrict } from "../core/index.ts";
import type { JsonLimits } from "../core/errors.ts";
import { concatBytes } from "../core/bytes.ts";
import { HttpError } from "./errors.ts";

/** Default body cap: 1 MiB. */
export const DEFAULT_MAX_BODY_BYTES = 1 << 20;

/** Whether a content type is JSON (`application/json`, `application/*+json`), parameters ignored. */
export function isJsonType(contentType: string | null): boolean {
  if (contentType === null) return false;
  const t = contentType.split(";")[0]!.trim().toLowerCase();
  return t === "application/json" || (t.startsWith("application/") && t.endsWith("+json"));
}

/** Whether a content type is NDJSON / JSON Lines. */
export function isNdjsonType(contentType: string | null): boolean {
  if (contentType === null) return false;
  const t = contentType.split(";")[0]!.trim().toLowerCase();
  return t === "application/x-ndjson" || t === "application/ndjson" || t === "application/jsonl" || t === "application/json-lines";
}

function tooLarge(max: number, details: Record<string, unknown>): HttpError {
  return new HttpError(413, "JSON_SIZE", `the request body exceeds ${max} bytes`, { max_bytes: max, ...details });
}

/** The longest a refused body is drained before its 413 goes out: 2 s (less under a short request deadline, {@link drainMsFor}). */
export const DRAIN_MS = 2000;

/**
 * The drain time under a request deadline of `timeoutMs`: {@link DRAIN_MS},
 * or half the deadline when that is shorter, so that the 413 goes out before
 * the deadline's 504 would.
 */
export function drainMsFor(timeoutMs: number): number {
  return Math.max(0, Math.min(DRAIN_MS, Math.floor(timeoutMs / 2)));
}

/** How many bytes of a body refused under the cap `max` are drained before its 413: twice the cap, at least 1 MiB. */
export function drainBound(max: number): number {
  return Math.max(2 * max, DEFAULT_MAX_BODY_BYTES);
}

/**
 * Read and throw away what `reader` still holds, until its end, more than
 * `budget` bytes, or `ms` (whichever comes first); then cancel what is left.
 * Never rejects: a client that breaks off has nothing more to drain.
 */
async function discard(reader: ReadableStreamDefaultReader<Uint8Array>, budget: number, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeUp = new Promise<null>((resolve) => {
    timer = setTimeout(resolve, ms, null);
  });
  let left = budget;
  try {
    while (left >= 0) {
      const chunk = await Promise.race([reader.read(), timeUp]);
      if (chunk === null) break;
      if (chunk.done) return;
      left -= chunk.value.byteLength;
    }
  } catch {
    return;
  } finally {
    clearTimeout(timer);
  }
  await reader.cancel().catch(() => {});
}

/** Drain `req`'s body of declared length `n` (over the cap `max`, within the drain bound) for up to `ms`, then refuse it with 413. */
async function drainThenRefuse(req: Request, max: number, n: number, ms: number): Promise<never> {
  if (req.body !== null) await discard(req.body.getReader(), n, ms);
  throw tooLarge(max, { content_length: n });
}

/**
 * A body that could not be read to its end (the client went away or broke
 * the framing): the client's doing, so a 400 refusal (which nobody may
 * receive), not an unexpected error for the daemon's log.
 */
function unreadable(e: unknown): HttpError {
  const why = e instanceof Error ? e.message : String(e);
  return new HttpError(400, "INVALID_REQUEST", `the request body could not be read to its end: ${why.slice(0, 200)}`, {
    reason: "body_unreadable",
  });
}

/** The bytes of an ArrayBuffer (hoisted: no closure per request). */
const bytesOf = (b: ArrayBuffer): Uint8Array => new Uint8Array(b);
const refuseUnreadable = (e: unknown): never => {
  throw unreadable(e);
};

/**
 * Read a whole body up to `max` bytes; rejects with a 413 {@link HttpError}
 * past it (once the rest is drained, see the module doc), 415 for a compressed body (`Content-Encoding` other than
 * identity), 400 when it cannot be read to its end. (Not an async function:
 * a body of declared length is one promise, the runtime's own.)
 */
export function readBody(req: Request, max: number, drainMs: number = DRAIN_MS): Promise<Uint8Array> {
  try {
    // A compressed body would reach the parser as bytes like 0x1f: say what is really wrong.
    const encoding = req.headers.get("content-encoding");
    if (encoding !== null && encoding.trim() !== "" && encoding.trim().toLowerCase() !== "identity") {
      throw new HttpError(
        415,
        "INVALID_REQUEST",
        `Content-Encoding ${JSON.stringify(encoding.slice(0, 100))} is not supported: send the body uncompressed`,
        { header: "content-encoding" },
      );
    }
    const declared = req.headers.get("content-length");
    if (declared !== null) {
      const n = Number(declared);
      if (!Number.isSafeInteger(n) || n < 0 || declared.trim() === "")
        throw new HttpError(400, "INVALID_REQUEST", "the Content-Length header is not a number", { header: "content-length" });
      if (n > max) {
        if (n > drainBound(max)) throw tooLarge(max, { content_length: n });
        return drainThenRefuse(req, max, n, drainMs);
      }
      // With a declared length (checked against the cap) the server reads
      // exactly that many bytes: take the fast path (without touching
      // `req.body`, which would make a stream).
      if (n === 0) return Promise.resolve(new Uint8Array(0));
      // `bytes()` where the runtime has it (Bun, Deno 2): no ArrayBuffer to wrap
      return typeof req.bytes === "function" ? req.bytes().catch(refuseUnreadable) : req.arrayBuffer().then(bytesOf, refuseUnreadable);
    }
  } catch (e) {
    return Promise.reject(e);
  }
  return readStream(req, max, drainMs);
}

/** A body without a declared length, counted chunk by chunk against `max`. */
async function readStream(req: Request, max: number, drainMs: number): Promise<Uint8Array> {
  if (req.body === null) return new Uint8Array(0);
  const reader = req.body.getReader();
  const parts: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    let chunk: Awaited<ReturnType<typeof reader.read>>;
    try {
      chunk = await reader.read();
    } catch (e) {
      throw unreadable(e);
    }
    const { done, value } = chunk;
    if (done) break;
    total += value.byteLength;
    if (total > max) {
      await discard(reader, drainBound(max) - total, drainMs);
      throw tooLarge(max, { received_bytes: total });
    }
    parts.push(value);
  }
  return parts.length === 1 ? parts[0]! : concatBytes(parts);
}

/**
 * Read and parse a JSON body: 415 when the content type is not JSON, 413
 * past the cap, 400 (`JSON_*` code, with offset/line/column) when the bytes
 * are not strict JSON. An empty body is refused too, unless `allowEmpty`
 * (then it reads as `{}`).
 */
export async function readJson(
  req: Request,
  max: number,
  options: { limits?: JsonLimits; allowEmpty?: boolean } = {},
  drainMs: number = DRAIN_MS,
): Promise<unknown> {
  const type = req.headers.get("content-type");
  const declared = req.headers.get("content-length");
  const maybeEmpty = options.allowEmpty === true && (declared === "0" || (declared === null && req.body === null));
  if (maybeEmpty) return {};
  if (!isJsonType(type)) {
    throw new HttpError(
      415,
      "INVALID_REQUEST",
      `the body must be JSON (Content-Type: application/json), got ${type === null ? "no Content-Type" : JSON.stringify(type.slice(0, 100))}`,
      { header: "content-type" },
    );
  }
  const bytes = await readBody(req, max, drainMs);
  if (bytes.length === 0) {
    if (options.allowEmpty === true) return {};
    throw new HttpError(400, "INVALID_REQUEST", "the request body is empty; a JSON object is expected", { location: "" });
  }
  const parsed = parseStrict(bytes, { maxBytes: max, ...options.limits });
  if (!parsed.ok) {
    const e = parsed.error;
    throw new HttpError(400, e.code, `the request body is not valid JSON: ${e.message} at line ${e.line}, column ${e.column}`, {
      offset: e.offset,
      line: e.line,
      column: e.column,
    });
  }
  return parsed.value;
}

/** Field readers that throw 400 INVALID_REQUEST naming the JSON Pointer of the bad field. */
export class Fields {
  constructor(
    readonly body: Record<string, unknown>,
    readonly base = "",
  ) {}

  /** The body as an object, or a 400. */
  static of(value: unknown, allowed: readonly string[]): Fields {
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      throw new HttpError(400, "INVALID_REQUEST", "the request body must be a JSON object", { location: "" });
    }
    const f = new Fields(value as Record<string, unknown>);
    f.only(allowed);
    return f;
  }

  fail(key: string, message: string): never {
    throw new HttpError(400, "INVALID_REQUEST", `${this.base}/${key}: ${message}`, { location: `${this.base}/${key}` });
  }

  only(allowed: readonly string[]): void {
    for (const k of Object.keys(this.body)) {
      if (!allowed.includes(k)) this.fail(k.replace(/~/g, "~0").replace(/\//g, "~1"), `unknown member (allowed: ${allowed.join(", ")})`);
    }
  }

  string(key: string, opts: { required?: boolean; nonEmpty?: boolean; max?: number } = {}): string | undefined {
    const v = this.body[key];
    if (v === undefined || v === null) {
      if (opts.required === true) this.fail(key, "is required");
      return undefined;
    }
    if (typeof v !== "string") this.fail(key, `must be a string, got ${Array.isArray(v) ? "array" : typeof v}`);
    if (opts.nonEmpty !== false && v.trim() === "") this.fail(key, "must not be empty");
    if (opts.max !== undefined && v.length > opts.max) this.fail(key, `must be at most ${opts.max} characters`);
    return v;
  }

  int(key: string, min: number, max: number): number | undefined {
    const v = this.body[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== "number" || !Number.isSafeInteger(v) || v < min || v > max) this.fail(key, `must be an integer from ${min} to ${max}`);
    return v;
  }

  bool(key: string): boolean | undefined {
    const v = this.body[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== "boolean") this.fail(key, "must be true or false");
    return v;
  }

  object(key: string, allowed: readonly string[]): Fields | undefined {
    const v = this.body[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== "object" || Array.isArray(v)) this.fail(key, "must be an object");
    const f = new Fields(v as Record<string, unknown>, `${this.base}/${key}`);
    f.only(allowed);
    return f;
  }

  array(key: string): unknown[] | undefined {
    const v = this.body[key];
    if (v === undefined || v === null) return undefined;
    if (!Array.isArray(v)) this.fail(key, "must be an array");
    return v;
  }
}
