/**
 * Request deadlines: one coarse ticker for every request instead of a timer
 * per request (the hot path of `POST /v1/calls` stays allocation-light).
 * {@link Deadlines.watch} is the one primitive; {@link Deadlines.guard}
 * (a promise, or 504 `TIMEOUT`) and the {@link deadline} middleware (the
 * rest of the chain, or 504 `TIMEOUT`) are built on it.
 *
 * @example
 * ```ts
 * const deadlines = new Deadlines(30_000);
 * app.post("/v1/runs/:id/abort", deadline(deadlines), (c) => c.json({ ok: true }));
 * ```
 *
 * @module
 */
import type { MiddlewareHandler } from "hono";
import { HttpError } from "../errors.ts";

/** The identity, for {@link Deadlines.guard} (made once). */
const same = <T>(v: T): T => v;

interface Entry {
  at: number;
  fire(): void;
}

/** The request deadlines of one app: `timeoutMs` from the start of each watch. */
export class Deadlines {
  readonly #entries = new Set<Entry>();
  readonly #ticker: ReturnType<typeof setInterval>;

  constructor(readonly timeoutMs: number) {
    const tickMs = Math.max(5, Math.min(1000, Math.floor(timeoutMs / 4)));
    this.#ticker = setInterval(() => {
      const now = performance.now();
      for (const d of this.#entries) if (d.at <= now) d.fire();
    }, tickMs);
    (this.#ticker as { unref?: () => void }).unref?.();
  }

  /** The refusal sent past the deadline. */
  timeout(): HttpError {
    return new HttpError(504, "TIMEOUT", `the request did not finish within ${this.timeoutMs} ms`, { timeout_ms: this.timeoutMs });
  }

  /** Call `onFire` once the deadline passes, unless the returned `settle` is called first. */
  watch(onFire: () => void): () => void {
    const entries = this.#entries;
    const entry: Entry = {
      at: performance.now() + this.timeoutMs,
      fire() {
        entries.delete(entry);
        onFire();
      },
    };
    entries.add(entry);
    return () => {
      entries.delete(entry);
    };
  }

  /**
   * `p`, or a 504 TIMEOUT {@link HttpError} once the deadline passes; `ac`
   * (when given) is aborted then. One promise settled by whichever comes
   * first (no `Promise.race`, no second promise for the deadline).
   */
  guard<T>(p: Promise<T>, ac?: AbortController): Promise<T> {
    return this.settle(p, same, ac);
  }

  /**
   * `then(await p)` in one promise, where `p` (not what `then` returns) is
   * under the deadline: past it, a 504 TIMEOUT {@link HttpError}, and `ac`
   * (when given) is aborted. What `then` throws rejects the promise; what
   * it returns (a value or a promise) resolves it. The request path of
   * `POST /v1/calls`: the body's read under the deadline and the call after
   * it, with no promise of its own for the deadline.
   */
  settle<T, U = Uint8Array>(p: Promise<U>, then: (value: U) => T | Promise<T>, ac?: AbortController): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const entries = this.#entries;
      const entry: Entry = {
        at: performance.now() + this.timeoutMs,
        fire: () => {
          entries.delete(entry);
          // The refusal first: a call that answers its abort at once must not win.
          reject(this.timeout());
          ac?.abort(new DOMException("request timed out", "TimeoutError"));
        },
      };
      entries.add(entry);
      p.then(
        (v) => {
          entries.delete(entry);
          try {
            resolve(then(v));
          } catch (e) {
            reject(e);
          }
        },
        (e: unknown) => {
          entries.delete(entry);
          reject(e);
        },
      );
    });
  }

  /** Stop the ticker (at shutdown). */
  close(): void {
    clearInterval(this.#ticker);
  }
}

/**
 * The request deadline as a middleware: the rest of the chain races it, and
 * past it the client gets 504 `TIMEOUT` (the handler's late answer is
 * dropped).
 */
export function deadline(deadlines: Deadlines): MiddlewareHandler {
  return async function deadline(_c, next) {
    await deadlines.guard(next());
  };
}
