/**
 * The browser console's sign-in: one-time codes traded for session cookies,
 * and the cross-site request forgery check of cookie requests.
 *
 * - A **code** (128 random bits, hex) is made by `agentcore serve` and
 *   printed in a link's fragment (`http://127.0.0.1:8787/#code=…`), so it is
 *   never sent in a request line or written to a server log. It lives
 *   {@link DEFAULT_CODE_TTL_MS} and is good once.
 * - The page posts it to `POST /console/session` (with its own `Origin`, and
 *   no cross-site `Sec-Fetch-Site`) and gets a **session**: a
 *   random id in an HttpOnly, SameSite=Strict cookie, kept server-side with
 *   an expiry, and a CSRF token of its own that the page reads from a meta
 *   tag and sends as `X-CSRF-Token`.
 * - A cookie request that changes state must come from the daemon's own page:
 *   an `Origin` equal to `http://<Host>`, no cross-site `Sec-Fetch-Site`, and
 *   the session's CSRF token. The Host/Origin guard has already run.
 *
 * Codes and sessions are looked up by their SHA-256 digest (a map lookup of
 * a digest leaks nothing useful about the secret through timing); the CSRF
 * token is compared in constant time.
 *
 * @example
 * ```ts
 * const auth = new ConsoleAuth();
 * const code = auth.issueCode();
 * const s = auth.exchange(code)!; // s.id goes in the cookie
 * auth.exchange(code);            // null: used already
 * ```
 *
 * @module
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { errorResponse } from "../errors.ts";

/** How long a sign-in code is good for: 10 minutes. */
export const DEFAULT_CODE_TTL_MS = 10 * 60_000;
/** How long a console session lasts: 12 hours. */
export const DEFAULT_SESSION_TTL_MS = 12 * 60 * 60_000;
/** Codes outstanding at once (the oldest goes first). */
const MAX_CODES = 32;
/** Sessions at once (the oldest goes first). */
const MAX_SESSIONS = 128;

/** The header that carries the CSRF token. */
export const CSRF_HEADER = "x-csrf-token";

/** A signed-in browser. */
export interface ConsoleSession {
  /** The cookie's value. */
  readonly id: string;
  /** What the page sends in {@link CSRF_HEADER}. */
  readonly csrf: string;
  readonly expiresAt: number;
}

/** Options of {@link ConsoleAuth}. */
export interface ConsoleAuthOptions {
  codeTtlMs?: number;
  sessionTtlMs?: number;
  /** The clock (tests). Default Date.now. */
  now?: () => number;
}

const digest = (s: string): string => createHash("sha256").update(s, "utf8").digest("hex");

/** Codes and sessions of one daemon (see the module doc). */
export class ConsoleAuth {
  readonly codeTtlMs: number;
  readonly sessionTtlMs: number;
  readonly #now: () => number;
  /** digest of a code → its expiry */
  readonly #codes = new Map<string, number>();
  /** digest of a session id → the session */
  readonly #sessions = new Map<string, ConsoleSession>();

  constructor(options: ConsoleAuthOptions = {}) {
    this.codeTtlMs = options.codeTtlMs ?? DEFAULT_CODE_TTL_MS;
    this.sessionTtlMs = options.sessionTtlMs ?? DEFAULT_SESSION_TTL_MS;
    this.#now = options.now ?? Date.now;
  }

  /** A new one-time code, good for {@link codeTtlMs}. */
  issueCode(): string {
    this.#sweep();
    const code = randomBytes(16).toString("hex");
    this.#codes.set(digest(code), this.#now() + this.codeTtlMs);
    while (this.#codes.size > MAX_CODES) this.#codes.delete(this.#codes.keys().next().value!);
    return code;
  }

  /** Trade a code for a new session; null when the code is unknown, used or expired. The code is spent either way. */
  exchange(code: string): ConsoleSession | null {
    if (!/^[0-9a-f]{32}$/.test(code)) return null;
    const key = digest(code);
    const expires = this.#codes.get(key);
    this.#codes.delete(key);
    if (expires === undefined || expires <= this.#now()) return null;
    this.#sweep();
    const session: ConsoleSession = {
      id: randomBytes(32).toString("hex"),
      csrf: randomBytes(32).toString("hex"),
      expiresAt: this.#now() + this.sessionTtlMs,
    };
    this.#sessions.set(digest(session.id), session);
    while (this.#sessions.size > MAX_SESSIONS) this.#sessions.delete(this.#sessions.keys().next().value!);
    return session;
  }

  /** The live session of a cookie value, or null. */
  session(id: string | null): ConsoleSession | null {
    if (id === null || !/^[0-9a-f]{64}$/.test(id)) return null;
    const key = digest(id);
    const s = this.#sessions.get(key);
    if (s === undefined) return null;
    if (s.expiresAt <= this.#now()) {
      this.#sessions.delete(key);
      return null;
    }
    return s;
  }

  /** End a session (sign out). */
  end(id: string): void {
    this.#sessions.delete(digest(id));
  }

  /** Whether `given` is the session's CSRF token (constant time). */
  csrfMatches(session: ConsoleSession, given: string | null): boolean {
    if (given === null) return false;
    return timingSafeEqual(Buffer.from(digest(session.csrf), "hex"), Buffer.from(digest(given), "hex"));
  }

  #sweep(): void {
    const now = this.#now();
    for (const [k, exp] of this.#codes) if (exp <= now) this.#codes.delete(k);
    for (const [k, s] of this.#sessions) if (s.expiresAt <= now) this.#sessions.delete(k);
  }
}

/** The cookie's name: one per port, since browsers share cookies between the ports of a host. */
export function cookieName(port: number | null): string {
  return port === null ? "agentcore_console" : `agentcore_console_${port}`;
}

/** The value of cookie `name` in a Cookie header, or null. */
export function readCookie(header: string | null, name: string): string | null {
  if (header === null) return null;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return null;
}

/** The daemon's own origin as a page served by it would send it: `http://<Host>`, lower-case. */
export function selfOrigin(host: string | null): string | null {
  if (host === null || host.trim() === "") return null;
  return `http://${host.trim().toLowerCase()}`;
}

/** Methods that change nothing (no CSRF check). */
export const isSafeMethod = (method: string): boolean => method === "GET" || method === "HEAD" || method === "OPTIONS";

/**
 * The browser's own word on where a state-changing console request comes
 * from: a `Sec-Fetch-Site` other than `same-origin` gets the 403 refusal; no
 * such header (a client that is not a browser, or an old one) leaves the
 * decision to the Origin and CSRF checks. Sign-in and every cookie request
 * that changes state apply it.
 */
export function fetchSiteRefusal(req: Request): Response | null {
  const site = req.headers.get("sec-fetch-site");
  if (site === null || site === "same-origin") return null;
  return errorResponse(403, "FORBIDDEN", "a console request that changes state must be same-origin (Sec-Fetch-Site)", {
    header: "sec-fetch-site",
  });
}

/**
 * The forgery check of a state-changing cookie request: null when it came
 * from the daemon's own page, else the 403 refusal naming what is missing.
 */
export function csrfRefusal(req: Request, auth: ConsoleAuth, session: ConsoleSession): Response | null {
  const origin = req.headers.get("origin");
  const own = selfOrigin(req.headers.get("host"));
  if (origin === null || own === null || origin.trim().toLowerCase() !== own)
    return errorResponse(403, "FORBIDDEN", "a console request that changes state must carry the console's own Origin", {
      header: "origin",
    });
  const site = fetchSiteRefusal(req);
  if (site !== null) return site;
  if (!auth.csrfMatches(session, req.headers.get(CSRF_HEADER)))
    return errorResponse(
      403,
      "FORBIDDEN",
      "the CSRF token is missing or wrong: reload the console page (it sends the token from its csrf-token meta tag in X-CSRF-Token)",
      { header: CSRF_HEADER },
    );
  return null;
}
