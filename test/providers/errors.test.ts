import { describe, expect, test } from "bun:test";
import * as OpenAISDK from "openai";
import {
  isContextOverflow,
  isRetryableModelError,
  ModelProviderError,
  normalizeModelError,
  parseRetryAfter,
  retryDelayMs,
  retryingStream,
  resolveRetryOptions,
  type ModelStreamEvent,
} from "../../src/providers/index.ts";

const apiError = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  OpenAISDK.APIError.generate(status, body as object, undefined, new Headers(headers));

describe("parseRetryAfter", () => {
  test("seconds, fractional seconds, retry-after-ms, HTTP date, garbage", () => {
    const now = Date.parse("2026-01-01T00:00:00Z");
    expect(parseRetryAfter(new Headers({ "retry-after": "3" }), now)).toBe(3000);
    expect(parseRetryAfter(new Headers({ "retry-after": "0.25" }), now)).toBe(250);
    expect(parseRetryAfter(new Headers({ "retry-after-ms": "40", "retry-after": "3" }), now)).toBe(40);
    expect(parseRetryAfter(new Headers({ "retry-after": "Thu, 01 Jan 2026 00:00:07 GMT" }), now)).toBe(7000);
    expect(parseRetryAfter(new Headers({ "retry-after": "Wed, 31 Dec 2025 23:00:00 GMT" }), now)).toBe(0);
    expect(parseRetryAfter(new Headers({ "retry-after": "soon" }), now)).toBeUndefined();
    expect(parseRetryAfter({ "Retry-After": "2" }, now)).toBe(2000);
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
  });
});

describe("normalizeModelError", () => {
  test("status classes", () => {
    expect(normalizeModelError(apiError(401, { error: { message: "bad key" } })).kind).toBe("authentication");
    expect(normalizeModelError(apiError(403, { error: { message: "no" } })).kind).toBe("authentication");
    const rl = normalizeModelError(apiError(429, { error: { message: "slow" } }, { "retry-after": "4" }));
    expect([rl.kind, rl.retryAfterMs, isRetryableModelError(rl)]).toEqual(["rate_limit", 4000, true]);
    const s5 = normalizeModelError(apiError(503, { error: { message: "down" } }));
    expect([s5.kind, s5.status, isRetryableModelError(s5)]).toEqual(["provider_error", 503, true]);
    const s4 = normalizeModelError(apiError(404, { error: { message: "no such model" } }));
    expect([s4.kind, isRetryableModelError(s4)]).toEqual(["provider_error", false]);
    expect(normalizeModelError(new OpenAISDK.APIConnectionTimeoutError()).kind).toBe("timeout");
    const conn = normalizeModelError(new OpenAISDK.APIConnectionError({ message: "Connection error." }));
    expect([conn.kind, isRetryableModelError(conn)]).toEqual(["provider_error", true]);
  });

  test("every context-overflow code and phrase", () => {
    for (const code of [
      "context_length_error",
      "context_length_exceeded",
      "context_window_exceeded",
      "input_too_long",
      "prompt_too_long",
    ]) {
      expect(normalizeModelError(apiError(400, { error: { message: "x", code } })).kind).toBe("context_overflow");
      expect(normalizeModelError(apiError(400, { error: { message: "x", type: code.toUpperCase() } })).kind).toBe("context_overflow");
    }
    for (const phrase of [
      "Context length exceeded",
      "context window exceeded",
      "maximum context length",
      "Prompt is too long",
      "too many tokens",
    ]) {
      expect(normalizeModelError(apiError(400, { error: { message: `oops: ${phrase} (details)` } })).kind).toBe("context_overflow");
      expect(isContextOverflow(new Error(phrase))).toBe(true);
    }
    expect(isContextOverflow(new Error("something else"))).toBe(false);
  });

  test("a caller abort rethrows the signal's reason", () => {
    const ctrl = new AbortController();
    ctrl.abort();
    let thrown: unknown;
    try {
      normalizeModelError(new OpenAISDK.APIUserAbortError(), { signal: ctrl.signal });
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBe(ctrl.signal.reason);
    expect((thrown as Error).name).toBe("AbortError");
  });

  test("prefixes and responseStarted", () => {
    expect(normalizeModelError(new Error("boom"), { streaming: false }).message).toBe("chat completion failed: boom");
    const e = normalizeModelError(new Error("boom"), { responseStarted: true });
    expect(e.message).toBe("chat completion stream failed: boom");
    expect(e.responseStarted).toBe(true);
    expect(isRetryableModelError(e)).toBe(false);
    const own = new ModelProviderError("rate_limit", "x");
    expect(normalizeModelError(own)).toBe(own);
    expect(normalizeModelError(own, { responseStarted: true }).responseStarted).toBe(true);
  });
});

describe("retryingStream", () => {
  const completed: ModelStreamEvent = { type: "completed", message: { content: "ok", tool_calls: [] } };

  test("backoff doubles, is capped, and has jitter", () => {
    const o = resolveRetryOptions({ baseDelayMs: 100, maxDelayMs: 300, random: () => 1 });
    const e = new ModelProviderError("provider_error", "x", { status: 500 });
    expect([1, 2, 3, 4].map((n) => retryDelayMs(n, e, o))).toEqual([100, 200, 300, 300]);
    const o0 = resolveRetryOptions({ baseDelayMs: 100, random: () => 0 });
    expect(retryDelayMs(1, e, o0)).toBe(50);
  });

  test("default is 3 retries", async () => {
    let calls = 0;
    const sleeps: number[] = [];
    const err = await (async () => {
      try {
        for await (const _ of retryingStream(
          async function* () {
            calls++;
            throw new ModelProviderError("rate_limit", "slow");
          },
          { sleep: async (ms) => void sleeps.push(ms), random: () => 0 },
        ));
      } catch (e) {
        return e;
      }
    })();
    expect((err as ModelProviderError).kind).toBe("rate_limit");
    expect(calls).toBe(4);
    expect(sleeps).toEqual([250, 500, 1000]);
  });

  test("never retried after an event was yielded; the error then has responseStarted", async () => {
    let calls = 0;
    const seen: ModelStreamEvent[] = [];
    let caught: unknown;
    try {
      for await (const ev of retryingStream(
        async function* () {
          calls++;
          yield { type: "text_delta", delta: "a" } as ModelStreamEvent;
          throw new ModelProviderError("provider_error", "cut", { status: 502 });
        },
        { sleep: async () => {} },
      )) {
        seen.push(ev);
      }
    } catch (e) {
      caught = e;
    }
    expect(calls).toBe(1);
    expect(seen).toHaveLength(1);
    expect((caught as ModelProviderError).responseStarted).toBe(true);
  });

  test("authentication and context_overflow are never retried", async () => {
    for (const kind of ["authentication", "context_overflow", "timeout"] as const) {
      let calls = 0;
      try {
        for await (const _ of retryingStream(
          async function* () {
            calls++;
            throw new ModelProviderError(kind, "no", { status: 500 });
          },
          { sleep: async () => {} },
        ));
      } catch {
        /* expected */
      }
      expect(calls).toBe(1);
    }
  });

  test("succeeds on a later attempt", async () => {
    let calls = 0;
    const out: ModelStreamEvent[] = [];
    for await (const ev of retryingStream(
      async function* () {
        if (++calls < 3) throw new ModelProviderError("provider_error", "x", { status: 500 });
        yield completed;
      },
      { sleep: async () => {} },
    )) {
      out.push(ev);
    }
    expect(out).toEqual([completed]);
    expect(calls).toBe(3);
  });

  test("rejects bad options", () => {
    expect(() => resolveRetryOptions({ maxRetries: -1 })).toThrow(RangeError);
    expect(() => resolveRetryOptions({ maxRetries: 1.5 })).toThrow(/maxRetries/);
  });
});
