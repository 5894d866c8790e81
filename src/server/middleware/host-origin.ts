/**
 * The DNS-rebinding and cross-origin guard: a Host that is not the daemon's
 * (loopback name with its port, or an allowed one) or an Origin that is not
 * allowed gets 403 `FORBIDDEN`; a CORS preflight of an allowed Origin gets
 * 204; every answer to an allowed Origin carries its CORS headers.
 *
 * @example
 * ```ts
 * const app = new Hono();
 * app.use(hostOrigin({ port: () => 8787 }));
 * app.get("/", (c) => c.text("ok")); // Host: 127.0.0.1:8787 only
 * ```
 *
 * @module
 */
import type { MiddlewareHandler } from "hono";
import { errorResponse } from "../errors.ts";
import { corsHeaders, hostOriginGuard, type GuardOptions } from "../guard.ts";

/** A request's Host/Origin refusal (403) or CORS preflight answer (204), or null to proceed. */
export type HostOriginCheck = (req: Request, origin: string | null) => Response | null;

/** The check behind {@link hostOrigin}, for a path that bypasses the router. */
export function hostOriginCheck(options: GuardOptions): HostOriginCheck {
  const guard = hostOriginGuard(options);
  return (req, origin) => {
    const refusal = guard(req.headers.get("host"), origin, origin !== null && options.allowSelfOrigin?.(req) === true);
    if (refusal !== null) return errorResponse(403, "FORBIDDEN", refusal.message, { header: refusal.header });
    if (req.method === "OPTIONS")
      return new Response(null, {
        status: 204,
        headers: { ...(origin === null ? undefined : corsHeaders(origin)), "access-control-max-age": "600" },
      });
    return null;
  };
}

/** Add the CORS headers of `origin` (none when null) to `res`. */
export function withCors(res: Response, origin: string | null): Response {
  if (origin !== null) for (const [k, v] of Object.entries(corsHeaders(origin))) res.headers.set(k, v);
  return res;
}

/** The Host/Origin guard as a middleware (see the module doc). */
export function hostOrigin(options: GuardOptions): MiddlewareHandler {
  const check = hostOriginCheck(options);
  return async function hostOrigin(c, next) {
    const origin = c.req.raw.headers.get("origin");
    const refused = check(c.req.raw, origin);
    if (refused !== null) return refused;
    await next();
    withCors(c.res, origin);
  };
}
