/**
 * One-shot strict JSON: `validateStrict` checks a whole document in the
 * WebAssembly core; `parseStrict` validates first and only then materialises
 * the (already validated) text with the native `JSON.parse`.
 *
 * @module
 */
import {
  DEFAULT_MAX_BYTES,
  DEFAULT_MAX_DEPTH,
  HARD_MAX_BYTES,
  HARD_MAX_DEPTH,
  type JsonError,
  type JsonLimits,
  type ParseResult,
} from "./errors.ts";
import { coreError, ErrKind, makeError, positionInBytes, positionInString, R_ERROR, sharedCore } from "./wasm.ts";

/** Limits after defaults and validation. */
export interface ResolvedLimits {
  maxBytes: number;
  maxDepth: number;
  allowProtoKey: boolean;
}

const DEFAULTS: ResolvedLimits = Object.freeze({
  maxBytes: DEFAULT_MAX_BYTES,
  maxDepth: DEFAULT_MAX_DEPTH,
  allowProtoKey: false,
});

function checkInt(name: string, v: unknown, min: number, max: number): number {
  if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max) {
    throw new RangeError(`limits.${name} must be an integer from ${min} to ${max}, got ${String(v)}`);
  }
  return v;
}

/**
 * Apply defaults and check every field. Bad values are a programmer error and
 * throw a RangeError naming the field.
 */
export function resolveLimits(limits?: JsonLimits): ResolvedLimits {
  if (limits === undefined) return DEFAULTS;
  if (limits === null || typeof limits !== "object") throw new RangeError("limits must be an object");
  // A frozen limits object (a runtime's) can't change: resolve it once.
  const frozen = Object.isFrozen(limits);
  if (frozen) {
    const hit = resolvedFrozen.get(limits);
    if (hit !== undefined) return hit;
  }
  const r = resolveFresh(limits);
  if (frozen) resolvedFrozen.set(limits, r);
  return r;
}

const resolvedFrozen = new WeakMap<JsonLimits, ResolvedLimits>();

function resolveFresh(limits: JsonLimits): ResolvedLimits {
  const maxBytes = limits.maxBytes === undefined ? DEFAULT_MAX_BYTES : checkInt("maxBytes", limits.maxBytes, 1, HARD_MAX_BYTES);
  const maxDepth = limits.maxDepth === undefined ? DEFAULT_MAX_DEPTH : checkInt("maxDepth", limits.maxDepth, 0, HARD_MAX_DEPTH);
  const ap = limits.allowProtoKey;
  if (ap !== undefined && typeof ap !== "boolean") throw new RangeError("limits.allowProtoKey must be a boolean");
  return { maxBytes, maxDepth, allowProtoKey: ap === true };
}

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8");
const hasWellFormed = typeof (String.prototype as { isWellFormed?: unknown }).isWellFormed === "function";

/** Index of the first unpaired surrogate in `s`, or -1. */
export function firstLoneSurrogate(s: string): number {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0xd800 || c > 0xdfff) continue;
    if (c <= 0xdbff && i + 1 < s.length) {
      const n = s.charCodeAt(i + 1);
      if (n >= 0xdc00 && n <= 0xdfff) {
        i++;
        continue;
      }
    }
    return i;
  }
  return -1;
}

/** Whether `s` is well-formed UTF-16 (no unpaired surrogate), so it has an exact UTF-8 form. */
export function isWellFormed(s: string): boolean {
  return hasWellFormed ? (s as unknown as { isWellFormed(): boolean }).isWellFormed() : firstLoneSurrogate(s) < 0;
}

function sizeErrorString(s: string, maxBytes: number): JsonError {
  const { line, column } = positionInString(s, maxBytes);
  return makeError(ErrKind.Size, maxBytes, line, column, maxBytes);
}

/**
 * A JS string that is not well-formed UTF-16 has no exact UTF-8 form. Validate
 * the part before the first unpaired surrogate (an earlier error wins), then
 * report the surrogate at its UTF-8 offset.
 */
function validateIllFormed(s: string, lim: ResolvedLimits): JsonError {
  const core = sharedCore();
  const x = core.x;
  const prefix = s.slice(0, firstLoneSurrogate(s));
  x.reset(lim.maxDepth, lim.allowProtoKey ? 1 : 0);
  const ptr = x.reserve(prefix.length * 3);
  const { written } = encoder.encodeInto(prefix, core.bytes().subarray(ptr, ptr + prefix.length * 3));
  if ((x.push(written, 0) & 3) === R_ERROR) return coreError(core);
  const mem = core.bytes();
  const { line, column } = positionInBytes(mem, x.getInputPtr(), written);
  return makeError(ErrKind.TextSurrogate, written, line, column);
}

/**
 * Validate `input` strictly (RFC 8259 + the limits); no value is built.
 * Returns null when valid, otherwise the first error. Never throws on bad input.
 */
export function validateStrict(input: string | Uint8Array, limits?: JsonLimits): JsonError | null {
  const lim = limits === undefined ? DEFAULTS : resolveLimits(limits);
  const core = sharedCore();
  const x = core.x;
  const maxBytes = lim.maxBytes;
  if (typeof input === "string") {
    const len = input.length;
    if (len > maxBytes) return sizeErrorString(input, maxBytes);
    // UTF-8 never needs more than 3 bytes per UTF-16 unit; beyond maxBytes we
    // only need 4 spare bytes to notice that the text does not fit.
    const cap = len * 3 <= maxBytes ? len * 3 : maxBytes + 4;
    let dst = core.inputArea(cap);
    // near the limit, never encode more than maxBytes + 4 bytes
    if (dst.length > cap && cap > maxBytes) dst = dst.subarray(0, cap);
    const { read, written } = encoder.encodeInto(input, dst);
    if (read < len || written > maxBytes) return sizeErrorString(input, maxBytes);
    if (written !== len && !isWellFormed(input)) return validateIllFormed(input, lim);
    if (x.validateFresh(written, lim.maxDepth, lim.allowProtoKey ? 1 : 0) === R_ERROR) return coreError(core);
    return null;
  }
  if (!(input instanceof Uint8Array)) throw new TypeError("input must be a string or a Uint8Array");
  const n = input.length;
  if (n > maxBytes) {
    const { line, column } = positionInBytes(input, 0, maxBytes);
    return makeError(ErrKind.Size, maxBytes, line, column, maxBytes);
  }
  core.inputArea(n).set(input);
  if (x.validateFresh(n, lim.maxDepth, lim.allowProtoKey ? 1 : 0) === R_ERROR) return coreError(core);
  return null;
}

/**
 * Validate strictly, then materialise with `JSON.parse`. Only text that passed
 * validation is ever handed to `JSON.parse`. Never throws on bad input.
 */
export function parseStrict<T = unknown>(input: string | Uint8Array, limits?: JsonLimits): ParseResult<T> {
  const error = validateStrict(input, limits);
  if (error !== null) return { ok: false, error };
  const text = typeof input === "string" ? input : decoder.decode(input);
  return { ok: true, value: JSON.parse(text) as T };
}
