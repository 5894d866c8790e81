/**
 * The bearer token: a request without `Authorization: Bearer <token>` gets
 * 401 `UNAUTHORIZED` with `WWW-Authenticate`, except the open routes
 * (`GET /v1/health`). Tokens are compared in constant time
 * ({@link bearerChecker}).
 *
 * @example
 * ```ts
 * const app = new Hono();
 * app.use(bearerToken({ token: "…64 hex…" }));
 * app.get("/v1/tools", (c) => c.json({ tools: [] }));
 * ```
 *
 * @module
 */
import type { MiddlewareHandler } from "hono";
import { errorResponse } from "../errors.ts";
import { bearerChecker } from "../token.ts";

/** Options of {@link bearerToken}. */
export interface BearerTokenOptions {
  /** The token clients must send. */
  token: string;
  /** Requests that need no token. Default: `GET /v1/health`. */
  open?: (method: string, path: string) => boolean;
  /**
   * Another way in for a request without an `Authorization` header (the
   * console's session cookie): null lets it through, a Response refuses it,
   * undefined leaves it to the token (401).
   */
  alternative?: (req: Request, path: string) => Response | null | undefined;
}

/** Whether `method path` is `GET /v1/health`, the one route without a token. */
export const isHealth = (method: string, path: string): boolean => method === "GET" && path === "/v1/health";

/** The 401 refusal, or null when `authorization` holds the token. */
export function tokenCheck(token: string): (authorization: string | null) => Response | null {
  const check = bearerChecker(token);
  return (authorization) =>
    check(authorization)
      ? null
      : errorResponse(
          401,
          "UNAUTHORIZED",
          "a valid bearer token is required (Authorization: Bearer <token>)",
          {},
          { "www-authenticate": 'Bearer realm="agentcore"' },
        );
}

/** The bearer token as a middleware (see the module doc). */
export function bearerToken(options: BearerTokenOptions): MiddlewareHandler {
  const check = tokenCheck(options.token);
  const open = options.open ?? isHealth;
  return async function bearerToken(c, next) {
    if (!open(c.req.method, c.req.path)) {
      const authorization = c.req.raw.headers.get("authorization");
      const other = authorization === null ? options.alternative?.(c.req.raw, c.req.path) : undefined;
      if (other !== undefined && other !== null) return other;
      if (other === undefined) {
        const refused = check(authorization);
        if (refused !== null) return refused;
      }
    }
    await next();
  };
}
