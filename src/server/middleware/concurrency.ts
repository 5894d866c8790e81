/**
 * The concurrency limit: a request past its pool's limit gets 503
 * `OVERLOADED` with `Retry-After: 1` (`details.limit` names the pool), and
 * every request once the daemon stops gets 503 with `Retry-After: 5`
 * (`limit: "shutdown"`). Each request counts against the pool that
 * `pool(method, path)` picks (none for an uncounted route) until the rest of
 * the chain has answered (a stream only until its headers are sent).
 *
 * @example
 * ```ts
 * const main = new Pool(256, "max_concurrent", "too many requests at once");
 * const app = new Hono();
 * app.use(concurrency({ pool: () => main, stopping: () => false }));
 * ```
 *
 * @module
 */
import type { MiddlewareHandler } from "hono";
import { errorResponse } from "../errors.ts";

/** A count of requests in flight with its limit. */
export class Pool {
  active = 0;
  constructor(
    readonly limit: number,
    /** `details.limit` of the refusal. */
    readonly name: string,
    /** The refusal's message (the limit is appended). */
    readonly what: string,
  ) {}

  /** The 503 refusal when the pool is full, else null. */
  refusal(): Response | null {
    if (this.active < this.limit) return null;
    return errorResponse(503, "OVERLOADED", `${this.what} (${this.limit})`, { limit: this.name }, { "retry-after": "1" });
  }
}

/** The 503 answer of a daemon that is shutting down. */
export function stoppingResponse(): Response {
  return errorResponse(503, "OVERLOADED", "the daemon is shutting down", { limit: "shutdown" }, { "retry-after": "5" });
}

/** Options of {@link concurrency}. */
export interface ConcurrencyOptions {
  /** The pool a request counts against, or null for a route that is never limited (not even by shutdown). */
  pool: (method: string, path: string) => Pool | null;
  /** Whether the daemon is shutting down (every counted request is refused). */
  stopping: () => boolean;
}

/** The concurrency limit as a middleware (see the module doc). */
export function concurrency(options: ConcurrencyOptions): MiddlewareHandler {
  return async function concurrency(c, next) {
    const pool = options.pool(c.req.method, c.req.path);
    if (pool === null) return next();
    if (options.stopping()) return stoppingResponse();
    const refused = pool.refusal();
    if (refused !== null) return refused;
    pool.active++;
    try {
      await next();
    } finally {
      pool.active--;
    }
  };
}
