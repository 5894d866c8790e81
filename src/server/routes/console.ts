/**
 * The browser console (docs/console.md): the page at `/`, its two assets
 * under `/console/`, and its sign-in routes.
 *
 * | route | who | what |
 * |---|---|---|
 * | `GET /` | anyone | the page; with a live session cookie it carries the session's CSRF token in a meta tag |
 * | `GET /console/app.js`, `GET /console/console.css` | anyone | the page's script and styles (built into the binary) |
 * | `POST /console/session` `{code}` | the daemon's own page (its Origin, no cross-site `Sec-Fetch-Site`) | trade a one-time code for an HttpOnly, SameSite=Strict session cookie |
 * | `POST /console/logout` | a signed-in page (Origin + CSRF token) | end the session |
 * | `POST /console/codes` | bearer token only | a fresh sign-in link |
 *
 * Every answer of these routes carries a strict Content-Security-Policy
 * (`default-src 'self'`, no inline script or style, `frame-ancestors
 * 'none'`), `X-Content-Type-Options: nosniff` and `Referrer-Policy:
 * no-referrer`. With a session cookie, the `/v1` routes answer the page as
 * they answer a bearer token ({@link consoleGate}); a request that changes
 * state must also pass the forgery check ({@link csrfRefusal}).
 *
 * @module
 */
import { Fields } from "../body.ts";
import { errorResponse, jsonResponse } from "../errors.ts";
import { ConsoleAuth, cookieName, csrfRefusal, fetchSiteRefusal, isSafeMethod, readCookie, selfOrigin } from "../console/auth.ts";
import { consolePage } from "../console/page.ts";
import { subApp } from "./deps.ts";

/** The console's security headers, on every answer of its routes. */
export const CONSOLE_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy":
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "cache-control": "no-store",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
};

function secured(res: Response): Response {
  for (const [k, v] of Object.entries(CONSOLE_HEADERS)) res.headers.set(k, v);
  return res;
}

/** Whether `method path` is a console route that needs no bearer token (each checks what it needs itself). */
export function isConsoleOpen(method: string, path: string): boolean {
  if (method === "GET" || method === "HEAD") return path === "/" || path === "/console/app.js" || path === "/console/console.css";
  return method === "POST" && (path === "/console/session" || path === "/console/logout");
}

/**
 * The session cookie as a way into the `/v1` routes (the token middleware's
 * `alternative`): no live session leaves the request to the bearer token
 * (401); a live one passes a safe method, and a state-changing one when the
 * forgery check passes. `POST /console/codes` takes the bearer token only.
 */
export function consoleGate(auth: ConsoleAuth, port: () => number | null): (req: Request, path: string) => Response | null | undefined {
  return (req, path) => {
    if (path === "/console/codes") return undefined;
    const session = auth.session(readCookie(req.headers.get("cookie"), cookieName(port())));
    if (session === null) return undefined;
    return isSafeMethod(req.method) ? null : csrfRefusal(req, auth, session);
  };
}

let loaded: Promise<typeof import("../console/assets.generated.ts")> | null = null;
/** The built-in script and styles, loaded once on first use. */
const assets = () => (loaded ??= import("../console/assets.generated.ts"));

/** The console's sub-app, mounted at `/`. */
export function consoleRoutes(auth: ConsoleAuth, port: () => number | null) {
  const sessionOf = (req: Request) => auth.session(readCookie(req.headers.get("cookie"), cookieName(port())));
  const cookie = (value: string, maxAgeSeconds: number) =>
    `${cookieName(port())}=${value}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${maxAgeSeconds}`;
  return subApp()
    .get("/", (c) => {
      const session = sessionOf(c.req.raw);
      return secured(
        new Response(consolePage(session === null ? null : session.csrf), { headers: { "content-type": "text/html; charset=utf-8" } }),
      );
    })
    .get("/console/app.js", async () =>
      secured(new Response((await assets()).CONSOLE_JS, { headers: { "content-type": "text/javascript; charset=utf-8" } })),
    )
    .get("/console/console.css", async () =>
      secured(new Response((await assets()).CONSOLE_CSS, { headers: { "content-type": "text/css; charset=utf-8" } })),
    )
    .post("/console/session", async (c) => {
      // Only the daemon's own page may sign in (a foreign Origin was refused by the guard already; no Origin is no page).
      const origin = c.req.header("origin");
      if (origin === undefined || origin.trim().toLowerCase() !== selfOrigin(c.req.header("host") ?? null))
        return secured(
          errorResponse(403, "FORBIDDEN", "sign in from the console page: the request must carry its Origin", { header: "origin" }),
        );
      // The browser says where the request comes from: the same refusal as every state-changing console request.
      const site = fetchSiteRefusal(c.req.raw);
      if (site !== null) return secured(site);
      const f = Fields.of(await c.var.body.json(), ["code"]);
      const code = f.string("code", { required: true, max: 200 })!;
      const session = auth.exchange(code);
      if (session === null)
        return secured(
          errorResponse(
            401,
            "UNAUTHORIZED",
            "the sign-in code is unknown, used already or expired: open a fresh link (restart serve, or POST /console/codes with the bearer token)",
            { field: "/code" },
          ),
        );
      const res = jsonResponse({ signed_in: true, expires_at: new Date(session.expiresAt).toISOString() });
      res.headers.append("set-cookie", cookie(session.id, Math.floor(auth.sessionTtlMs / 1000)));
      return secured(res);
    })
    .post("/console/logout", (c) => {
      const session = sessionOf(c.req.raw);
      if (session === null) return secured(errorResponse(401, "UNAUTHORIZED", "not signed in"));
      const refused = csrfRefusal(c.req.raw, auth, session);
      if (refused !== null) return secured(refused);
      auth.end(session.id);
      const res = jsonResponse({ signed_in: false });
      res.headers.append("set-cookie", cookie("", 0));
      return secured(res);
    })
    .post("/console/codes", (c) => {
      const code = auth.issueCode();
      const host = c.req.header("host") ?? "127.0.0.1";
      return secured(
        jsonResponse({ url: `http://${host}/#code=${code}`, expires_at: new Date(Date.now() + auth.codeTtlMs).toISOString() }, 201),
      );
    });
}
