/**
 * Retrying model requests: rate limits, 5xx answers and network failures are
 * tried again with exponential backoff and jitter, but only while nothing of
 * the response has been exposed. Authentication failures, context overflow
 * and timeouts are never retried.
 *
 * @module
 */
import { abortReason, isRetryableModelError, normalizeModelError } from "./errors.ts";
import {
  ModelProviderError,
  type ModelAdapter,
  type ModelRequest,
  type ModelResponse,
  type ModelStreamEvent,
  streamModel,
} from "./types.ts";

/** How failures are retried. */
export interface RetryOptions {
  /** Retries after the first attempt. Default 3; 0 disables retrying. */
  maxRetries?: number;
  /** Backoff before the first retry, in ms; doubled for each further retry. Default 500. */
  baseDelayMs?: number;
  /** Upper bound of a computed backoff, in ms. Default 8000. */
  maxDelayMs?: number;
  /** Upper bound of a server-requested wait (Retry-After), in ms. Default 30000. */
  retryAfterCapMs?: number;
  /** Sleep used between attempts (tests inject one); must reject when the signal aborts. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Random source in [0, 1) for jitter (tests inject one). */
  random?: () => number;
  /** Called before each retry, e.g. for logging. */
  onRetry?: (info: { attempt: number; delayMs: number; error: ModelProviderError }) => void;
}

export const DEFAULT_MAX_RETRIES = 3;
export const DEFAULT_BASE_DELAY_MS = 500;
export const DEFAULT_MAX_DELAY_MS = 8000;
export const DEFAULT_RETRY_AFTER_CAP_MS = 30_000;

/** Longest wait a timer holds (2^31 - 1 ms, about 24.8 days); longer waits are cut to it, not fired at once. */
const MAX_TIMER_MS = 2_147_483_647;

/** A timer sleep that rejects with the abort reason when `signal` aborts. */
export function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(abortReason(signal));
  if (ms <= 0 && !signal) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortReason(signal!));
    };
    const timer = setTimeout(
      () => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      },
      Math.min(MAX_TIMER_MS, Math.max(0, ms)),
    );
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

function checkCount(name: string, v: unknown, min: number): number {
  if (typeof v !== "number" || !Number.isFinite(v) || v < min || (name === "maxRetries" && !Number.isInteger(v))) {
    throw new RangeError(`retry option ${name} must be ${name === "maxRetries" ? "an integer" : "a number"} >= ${min}, got ${String(v)}`);
  }
  return v;
}

/** Retry options with defaults applied and values checked. */
export type ResolvedRetryOptions = Required<Omit<RetryOptions, "onRetry">> & Pick<RetryOptions, "onRetry">;

export function resolveRetryOptions(o: RetryOptions = {}): ResolvedRetryOptions {
  return {
    maxRetries: checkCount("maxRetries", o.maxRetries ?? DEFAULT_MAX_RETRIES, 0),
    baseDelayMs: checkCount("baseDelayMs", o.baseDelayMs ?? DEFAULT_BASE_DELAY_MS, 0),
    maxDelayMs: checkCount("maxDelayMs", o.maxDelayMs ?? DEFAULT_MAX_DELAY_MS, 0),
    retryAfterCapMs: checkCount("retryAfterCapMs", o.retryAfterCapMs ?? DEFAULT_RETRY_AFTER_CAP_MS, 0),
    sleep: o.sleep ?? abortableSleep,
    random: o.random ?? Math.random,
    onRetry: o.onRetry,
  };
}

/**
 * The wait before retry number `retry` (1-based): the server's Retry-After
 * capped at `retryAfterCapMs` when given, else `base * 2^(retry-1)` capped at
 * `maxDelayMs`, of which a random half is jitter.
 */
export function retryDelayMs(retry: number, error: ModelProviderError, o: ResolvedRetryOptions): number {
  if (error.retryAfterMs !== undefined) return Math.min(Math.max(0, error.retryAfterMs), o.retryAfterCapMs);
  const exp = Math.min(o.maxDelayMs, o.baseDelayMs * 2 ** (retry - 1));
  return Math.round(exp / 2 + (exp / 2) * o.random());
}

/**
 * Run a stream with retries. `attempt` starts one request. A failure is
 * retried only when it is retryable and no event has been yielded yet; once
 * one has, a failure is rethrown with `responseStarted` true. The signal
 * aborts waiting between attempts.
 */
export async function* retryingStream(
  attempt: () => AsyncIterable<ModelStreamEvent>,
  options: RetryOptions | ResolvedRetryOptions = {},
  signal?: AbortSignal,
): AsyncGenerator<ModelStreamEvent> {
  const o = resolveRetryOptions(options);
  for (let retry = 0; ; retry++) {
    let yielded = false;
    try {
      for await (const ev of attempt()) {
        yielded = true;
        yield ev;
      }
      return;
    } catch (err) {
      if (signal?.aborted) throw abortReason(signal);
      if (!(err instanceof ModelProviderError)) throw err;
      if (yielded) throw normalizeModelError(err, { responseStarted: true });
      if (retry >= o.maxRetries || !isRetryableModelError(err)) throw err;
      const delayMs = retryDelayMs(retry + 1, err, o);
      o.onRetry?.({ attempt: retry + 1, delayMs, error: err });
      await o.sleep(delayMs, signal);
      if (signal?.aborted) throw abortReason(signal);
    }
  }
}

/**
 * Wrap any adapter so its requests are retried (for adapters without their
 * own retrying, e.g. {@link ScriptedModel} playing error turns).
 */
export class RetryingModelAdapter implements ModelAdapter {
  readonly inner: ModelAdapter;
  readonly #options: ResolvedRetryOptions;

  constructor(inner: ModelAdapter, options: RetryOptions = {}) {
    this.inner = inner;
    this.#options = resolveRetryOptions(options);
  }

  stream(request: ModelRequest): AsyncIterable<ModelStreamEvent> {
    return retryingStream(() => streamModel(this.inner, request), this.#options, request.signal);
  }

  async complete(request: ModelRequest): Promise<ModelResponse> {
    for await (const ev of this.stream(request)) {
      if (ev.type === "completed")
        return { message: ev.message, usage: ev.usage, ...(ev.finish_reason !== undefined ? { finish_reason: ev.finish_reason } : {}) };
    }
    throw new ModelProviderError("provider_error", "chat completion failed: the stream ended without a completed event");
  }

  async startup(): Promise<void> {
    await this.inner.startup?.();
  }

  async shutdown(): Promise<void> {
    await this.inner.shutdown?.();
  }
}
