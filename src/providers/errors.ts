/**
 * Normalising whatever a provider SDK throws into a {@link ModelProviderError}.
 *
 * A caller's abort is not a provider failure: {@link normalizeModelError}
 * rethrows the signal's reason (a `DOMException` named `AbortError` unless the
 * caller gave another reason), so an agent can tell cancellation apart.
 *
 * @module
 */
import type * as OpenAISDKModule from "openai";
import { ModelProviderError, type ModelErrorKind } from "./types.ts";

export const COMPLETION_FAILED_PREFIX = "chat completion failed: ";
export const STREAM_FAILED_PREFIX = "chat completion stream failed: ";

/** Error codes/types that mean the prompt does not fit the context window. */
export const CONTEXT_OVERFLOW_CODES: readonly string[] = [
  "context_length_error",
  "context_length_exceeded",
  "context_window_exceeded",
  "exceed_context_size_error", // llama.cpp server
  "input_too_long",
  "prompt_too_long",
];

/** Phrases in an error text that mean the same. */
export const CONTEXT_OVERFLOW_PHRASES: readonly string[] = [
  "context length exceeded",
  "context window exceeded",
  "maximum context length",
  "prompt is too long",
  "too many tokens",
  // llama.cpp server: "the request exceeds the available context size, try increasing it"
  "exceeds the available context size",
  // LM Studio: "Trying to keep the first N tokens when context the overflows. However, the
  // model is loaded with context length of only M tokens, which is not enough. …"
  "when context the overflows",
  "loaded with context length of only",
];

/**
 * The `openai` SDK once an adapter loaded it (it is imported on first use, so
 * importing agentcore does not load it). Before that no SDK error can exist,
 * and the SDK's classes are not checked.
 */
let OpenAISDK: typeof OpenAISDKModule | null = null;

/** Called by the OpenAI adapter when it has loaded the SDK: its error classes are then recognised. */
export function useOpenAISDK(sdk: typeof OpenAISDKModule): void {
  OpenAISDK = sdk;
}

const retryable = new WeakSet<ModelProviderError>();
/** Failures that look retryable by kind but are not (a 429 for an exhausted quota). */
const notRetryable = new WeakSet<ModelProviderError>();

/** 429 error codes that mean "out of credit", not "slow down": retrying cannot help. */
export const QUOTA_EXHAUSTED_CODES: readonly string[] = ["insufficient_quota", "billing_hard_limit_reached"];

/** Build a provider error that {@link isRetryableModelError} reports as retryable. */
export function retryableModelError(
  kind: ModelErrorKind,
  message: string,
  options: { responseStarted?: boolean; status?: number; retryAfterMs?: number; cause?: unknown } = {},
): ModelProviderError {
  const e = new ModelProviderError(kind, message, options);
  retryable.add(e);
  return e;
}

/**
 * Whether a failure may be retried (before any delta): rate limits, 5xx
 * answers and network failures. Authentication, context overflow, timeouts
 * and other 4xx answers are not.
 */
export function isRetryableModelError(err: unknown): boolean {
  if (!(err instanceof ModelProviderError)) return false;
  if (err.responseStarted) return false;
  if (notRetryable.has(err)) return false;
  if (retryable.has(err)) return true;
  if (err.kind === "rate_limit") return true;
  if (err.kind === "provider_error" && err.status !== undefined && err.status >= 500) return true;
  return false;
}

/** A `DOMException` named `AbortError` (what `fetch` and `AbortSignal` use). */
export function abortError(message = "the operation was aborted"): Error {
  return new DOMException(message, "AbortError");
}

/** What a caller's abort should throw: the signal's reason, or an AbortError. */
export function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? abortError();
}

/** True for `AbortError`s of fetch, DOM or the SDK. */
export function isAbortLike(err: unknown): boolean {
  if (OpenAISDK !== null && err instanceof OpenAISDK.APIUserAbortError) return true;
  return typeof err === "object" && err !== null && (err as { name?: unknown }).name === "AbortError";
}

function lowerStrings(...values: unknown[]): string[] {
  const out: string[] = [];
  for (const v of values) if (typeof v === "string") out.push(v.trim().toLowerCase());
  return out;
}

function bodyFields(body: unknown): unknown[] {
  if (body === null || typeof body !== "object") return typeof body === "string" ? [body] : [];
  const b = body as Record<string, unknown>;
  const out: unknown[] = [b.code, b.type, b.message];
  const inner = b.error;
  if (inner !== null && typeof inner === "object") {
    const e = inner as Record<string, unknown>;
    out.push(e.code, e.type, e.message);
  } else if (typeof inner === "string") {
    out.push(inner);
  }
  return out;
}

/** Whether an error (SDK or otherwise) says the context window was exceeded. */
export function isContextOverflow(err: unknown): boolean {
  const e = (typeof err === "object" && err !== null ? err : {}) as Record<string, unknown>;
  const values = lowerStrings(e.code, e.type, ...bodyFields(e.error), ...bodyFields(e.body), String(err));
  if (values.some((v) => CONTEXT_OVERFLOW_CODES.includes(v))) return true;
  const joined = values.join(" \n ");
  return CONTEXT_OVERFLOW_PHRASES.some((p) => joined.includes(p));
}

type HeaderBag = { get(name: string): string | null } | Record<string, string | string[] | undefined>;

function header(headers: HeaderBag | undefined | null, name: string): string | undefined {
  if (!headers) return undefined;
  if (typeof (headers as { get?: unknown }).get === "function") {
    return (headers as { get(n: string): string | null }).get(name) ?? undefined;
  }
  const rec = headers as Record<string, string | string[] | undefined>;
  for (const k of Object.keys(rec)) {
    if (k.toLowerCase() === name) {
      const v = rec[k];
      return Array.isArray(v) ? v[0] : v;
    }
  }
  return undefined;
}

/**
 * The wait a server asked for, in ms: `retry-after-ms`, else `Retry-After`
 * as seconds or as an HTTP date. `undefined` when absent or unreadable.
 */
export function parseRetryAfter(headers: HeaderBag | undefined | null, now: number = Date.now()): number | undefined {
  const ms = header(headers, "retry-after-ms")?.trim();
  if (ms !== undefined && /^[0-9]+(\.[0-9]+)?$/.test(ms)) return Math.ceil(Number(ms));
  const ra = header(headers, "retry-after")?.trim();
  if (ra === undefined || ra === "") return undefined;
  if (/^[0-9]+(\.[0-9]+)?$/.test(ra)) return Math.ceil(Number(ra) * 1000);
  const date = Date.parse(ra);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

function detail(err: unknown): string {
  if (err instanceof Error) return err.message || err.name;
  if (typeof err === "string") return err;
  try {
    return JSON.stringify(err) ?? String(err);
  } catch {
    return String(err);
  }
}

export interface NormalizeOptions {
  /** The request's signal: when it is aborted, its reason is thrown instead. */
  signal?: AbortSignal;
  /** True once a delta was exposed. */
  responseStarted?: boolean;
  /** Streaming request (message prefix). Default true. */
  streaming?: boolean;
  /** Set when the adapter's own timer fired: the failure is a timeout. */
  timedOut?: boolean;
  /** The base URL requested, named when no connection could be made or the key was refused (credentials and query left out). */
  endpoint?: string;
  /** The API key the request carried and what holds it: named in an authentication error, and never shown. */
  key?: KeyInfo;
}

/** The API key of a request, for the messages of its errors. */
export interface KeyInfo {
  /** The key sent, if any. It is never shown: removed from every message, whole, in part, or as a server's masked echo of it. */
  readonly value?: string;
  /** What holds the key, named in an authentication error: an environment variable (`MODEL_API_KEY`) or a setting; default `apiKey`. */
  readonly name?: string;
  /** Why no key was sent, when none was (`the ollama preset sends none`); default: `NAME is not set`. */
  readonly whyNone?: string;
}

/** What replaces a key, or a server's echo of one, in a message. */
export const KEY_HIDDEN = "[key hidden]";

/** A run of 3 or more mask characters with the word around it: `sk-ab12****************wxyz`, a server's echo of a key. */
const MASKED_KEY = /[\w+/=.-]*[*•]{3,}[\w+/=-]*/g;
/** The shortest run of a key's characters that is taken for a piece of the key. */
const KEY_PIECE = 6;

/**
 * `text` without `key`: the whole key, any run of at least 6 of its
 * characters (a prefix or suffix a server echoed), and anything masked the
 * way servers echo a key (`sk-ab12****wxyz`) become {@link KEY_HIDDEN}.
 */
export function withoutKey(text: string, key: string | undefined): string {
  const out = text.replace(MASKED_KEY, KEY_HIDDEN);
  if (key === undefined || key === "") return out;
  const n = Math.min(KEY_PIECE, key.length);
  const pieces = new Set<string>();
  for (let i = 0; i + n <= key.length; i++) pieces.add(key.slice(i, i + n));
  const hidden = new Uint8Array(out.length);
  for (let i = 0; i + n <= out.length; i++) if (pieces.has(out.slice(i, i + n))) hidden.fill(1, i, i + n);
  if (!hidden.includes(1)) return out;
  let result = "";
  for (let i = 0; i < out.length; i++) {
    if (hidden[i] === 0) result += out[i];
    else if (i === 0 || hidden[i - 1] === 0) result += KEY_HIDDEN;
  }
  return result;
}

/**
 * The message of a 401 or 403: the kind (authentication), the status and the
 * URL that answered it, the server's own words (without the key), and the
 * fix, naming what holds the key. Never the key itself.
 */
function authenticationMessage(status: number, said: string, options: NormalizeOptions): string {
  const key = options.key;
  const name = key?.name ?? "apiKey";
  const from = options.endpoint !== undefined ? ` from ${shownEndpoint(options.endpoint)}` : "";
  const words = said.replace(/^\d{3}\s*/, "").replace(/[\s.]+$/, "");
  const fix =
    key?.value !== undefined && key.value !== ""
      ? `the API key in ${name} was refused: check ${name}, and that the key is for this server`
      : `no API key was sent (${key?.whyNone ?? `${name} is not set; set it to this server's key`})`;
  return `authentication failed: HTTP ${status}${from}${words !== "" ? ` (${words})` : ""}; ${fix}`;
}

/** A URL as safe to show: no user name, password, query or fragment. */
export function shownEndpoint(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return "the model endpoint";
  }
}

/**
 * Turn anything thrown by a provider call into a {@link ModelProviderError},
 * or, when the caller aborted, throw the abort reason. Existing
 * `ModelProviderError`s pass through (with `responseStarted` raised if
 * needed).
 */
export function normalizeModelError(err: unknown, options: NormalizeOptions = {}): ModelProviderError {
  const { signal, timedOut = false, streaming = true } = options;
  const responseStarted = options.responseStarted ?? false;
  if (signal?.aborted && !timedOut) throw abortReason(signal);

  if (err instanceof ModelProviderError) {
    if (!responseStarted || err.responseStarted) return err;
    return new ModelProviderError(err.kind, err.message, {
      responseStarted: true,
      status: err.status,
      retryAfterMs: err.retryAfterMs,
      cause: err.cause,
    });
  }

  const prefix = streaming ? STREAM_FAILED_PREFIX : COMPLETION_FAILED_PREFIX;
  const base = { responseStarted, cause: err };
  /** What the server said, without the key. */
  const said = (e: unknown) => withoutKey(detail(e), options.key?.value);

  const sdk = OpenAISDK;
  if (timedOut || (sdk !== null && err instanceof sdk.APIConnectionTimeoutError)) {
    return new ModelProviderError("timeout", prefix + (timedOut ? "no response within the timeout" : detail(err)), base);
  }
  if ((sdk !== null && err instanceof sdk.APIUserAbortError) || isAbortLike(err)) {
    // An abort we did not ask for (the SDK's own controller): treat as a network failure.
    return retryableModelError("provider_error", prefix + detail(err), base);
  }
  if (sdk !== null && err instanceof sdk.APIConnectionError) {
    // The SDK's own message is only "Connection error."; the cause says why
    // (ECONNREFUSED, ENOTFOUND, a TLS failure), the endpoint says where.
    const cause = (err as { cause?: unknown }).cause;
    const why = cause !== undefined && cause !== null ? detail(cause) : detail(err);
    const where = options.endpoint !== undefined ? `cannot connect to ${shownEndpoint(options.endpoint)}: ` : "";
    return retryableModelError("provider_error", prefix + where + why, base);
  }
  if (sdk !== null && err instanceof sdk.APIError) {
    const status = err.status;
    const withStatus = { ...base, status };
    // The SDK's error is not kept as the cause here: its message holds the server's echo of the key.
    if (status === 401 || status === 403)
      return new ModelProviderError("authentication", prefix + authenticationMessage(status, said(err), options), {
        responseStarted,
        status,
      });
    if (status === 429) {
      const e = new ModelProviderError("rate_limit", prefix + said(err), {
        ...withStatus,
        retryAfterMs: parseRetryAfter(err.headers as HeaderBag | undefined),
      });
      const codes = lowerStrings(err.code, err.type, ...bodyFields(err.error));
      if (codes.some((c) => QUOTA_EXHAUSTED_CODES.includes(c))) notRetryable.add(e);
      return e;
    }
    if (isContextOverflow(err)) return new ModelProviderError("context_overflow", prefix + said(err), withStatus);
    if (status === 408) return new ModelProviderError("timeout", prefix + said(err), withStatus);
    if (status === undefined) {
      // An error event inside a 200 stream: its type says what a status would have.
      const codes = lowerStrings(err.code, err.type, ...bodyFields(err.error));
      if (codes.includes("rate_limit_exceeded") || codes.includes("rate_limit_error"))
        return new ModelProviderError("rate_limit", prefix + said(err), base);
      if (codes.includes("server_error") || codes.includes("overloaded_error"))
        return retryableModelError("provider_error", prefix + said(err), base);
    }
    if (status !== undefined && status >= 500) {
      return retryableModelError("provider_error", prefix + said(err), {
        ...withStatus,
        retryAfterMs: parseRetryAfter(err.headers as HeaderBag | undefined),
      });
    }
    return new ModelProviderError("provider_error", prefix + said(err), withStatus);
  }
  if (isContextOverflow(err)) return new ModelProviderError("context_overflow", prefix + detail(err), base);
  if (err instanceof TypeError && /fetch|network|socket|connect/i.test(err.message)) {
    return retryableModelError("provider_error", prefix + detail(err), base);
  }
  return new ModelProviderError("provider_error", prefix + detail(err), base);
}
