/**
 * The body limit: handlers read their body through `c.var.body`, which
 * reads at most `maxBytes` (413 `JSON_SIZE` past it, as soon as
 * `Content-Length` says so or the stream goes over, once the rest is
 * drained within half the deadline, see `body.ts`), under the request
 * deadline (504 `TIMEOUT`). Hono's own `bodyLimit` is not used: it buffers
 * the body before the handler (outside the deadline), answers a bare text
 * 413, and leaves encodings and strict JSON to the handler.
 *
 * @example
 * ```ts
 * const app = new Hono<BodyEnv>();
 * app.use(bodyLimit({ maxBytes: 1 << 20, deadlines: new Deadlines(30_000) }));
 * app.post("/echo", async (c) => c.json(await c.var.body.json()));
 * ```
 *
 * @module
 */
import type { MiddlewareHandler } from "hono";
import { drainMsFor, readBody, readJson } from "../body.ts";
import type { JsonLimits } from "../../core/index.ts";
import type { Deadlines } from "./deadline.ts";

/** A request's capped body. */
export interface BodyReader {
  /** The raw bytes. */
  bytes(): Promise<Uint8Array>;
  /** The body as strict JSON (`allowEmpty`: an empty body reads as `{}`). */
  json(options?: { limits?: JsonLimits; allowEmpty?: boolean }): Promise<unknown>;
}

/** The Hono variables {@link bodyLimit} sets. */
export type BodyEnv = { Variables: { body: BodyReader } };

/** Options of {@link bodyLimit}. */
export interface BodyLimitOptions {
  maxBytes: number;
  deadlines: Deadlines;
}

/** The reader of `req`'s body under the cap and the deadline (for a path that bypasses the router). */
export function bodyReader(req: Request, options: BodyLimitOptions): BodyReader {
  const drainMs = drainMsFor(options.deadlines.timeoutMs);
  return {
    bytes: () => options.deadlines.guard(readBody(req, options.maxBytes, drainMs)),
    json: (o) => options.deadlines.guard(readJson(req, options.maxBytes, o, drainMs)),
  };
}

/** The body limit as a middleware: sets `c.var.body` (see the module doc). */
export function bodyLimit(options: BodyLimitOptions): MiddlewareHandler<BodyEnv> {
  return async function bodyLimit(c, next) {
    c.set("body", bodyReader(c.req.raw, options));
    await next();
  };
}
