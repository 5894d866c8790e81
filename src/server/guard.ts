/**
 * DNS-rebinding and cross-origin guards of the daemon.
 *
 * - **Host.** A browser page on `evil.example` whose name is rebound to
 *   127.0.0.1 still sends `Host: evil.example`. Only a loopback name or
 *   address (`localhost`, `127.x.x.x`, `[::1]`) with the daemon's own port
 *   passes, plus any host the operator allowed explicitly: `name:port`
 *   exactly, or a bare `name` with the daemon's port (a non-loopback
 *   `--host`, also with `--port 0`). An empty host, another name or another
 *   port is refused. A Host without a port means port 80, as in HTTP. On a
 *   Unix socket there is no port: a loopback name without a port passes
 *   there.
 * - **Origin.** Absent (curl, SDKs, server-side callers) or exactly one of the
 *   configured origins (empty by default), or, where `allowSelfOrigin`
 *   says so for the request, the daemon's own (`http://` + the Host that
 *   passed: the pages of its console). `Origin: null` and everything else is
 *   refused. No CORS header is ever a wildcard: an allowed origin is echoed
 *   back by name, with `Vary: Origin`.
 *
 * @module
 */

/** What the guard compares against. */
export interface GuardOptions {
  /** The daemon's TCP port (read per request: it is known only after listening on port 0); null on a Unix socket. */
  port: () => number | null;
  /**
   * Extra accepted `Host` values: `name:port` (exactly that), or a bare
   * `name`, accepted with the daemon's port like a loopback name (e.g. the
   * explicit `--host`, whose port may be known only after listening).
   * IPv6 addresses in brackets. A malformed entry throws a TypeError.
   */
  allowedHosts?: readonly string[];
  /** Accepted `Origin` values, e.g. `http://localhost:3000`. Empty by default. */
  allowedOrigins?: readonly string[];
  /**
   * Whether a request may carry the daemon's own origin, `http://<Host>` of
   * a Host that passed (the pages it serves: the console). Default: never.
   */
  allowSelfOrigin?: (req: Request) => boolean;
}

/** A refusal: which header and why. */
export interface GuardRefusal {
  header: "host" | "origin";
  message: string;
}

const LOOPBACK_V4 = /^127\.(?:25[0-5]|2[0-4]\d|1?\d?\d)\.(?:25[0-5]|2[0-4]\d|1?\d?\d)\.(?:25[0-5]|2[0-4]\d|1?\d?\d)$/;

/** Whether a host name (without port; IPv6 in brackets) is a loopback name or address. */
export function isLoopbackName(name: string): boolean {
  const n = name.toLowerCase();
  return n === "localhost" || n === "[::1]" || LOOPBACK_V4.test(n);
}

/** Whether a bind address is loopback (`127.0.0.1`, `::1`, `localhost`). */
export function isLoopbackBind(host: string): boolean {
  const h = host.toLowerCase();
  return h === "localhost" || h === "::1" || h === "[::1]" || LOOPBACK_V4.test(h);
}

/** Split `name[:port]` (IPv6 as `[..]`); null when malformed. */
export function splitHost(value: string): { name: string; port: number | null } | null {
  const m = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(?::(\d{1,5}))?$/.exec(value);
  if (m === null) return null;
  const port = m[2] === undefined ? null : Number(m[2]);
  if (port !== null && port > 65535) return null;
  return { name: m[1]!.toLowerCase(), port };
}

/** Normalise an origin to `scheme://host[:port]` lower-case; null when it is not an http(s) origin. */
export function normalizeOrigin(value: string): string | null {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    return null;
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") return null;
  if (u.username !== "" || u.password !== "" || (u.pathname !== "/" && u.pathname !== "") || u.search !== "" || u.hash !== "") return null;
  return u.origin.toLowerCase();
}

/**
 * A checker for one request's `Host` and `Origin` headers. Returns null when
 * the request may proceed, else a refusal naming the header.
 *
 * @example
 * ```ts
 * const check = hostOriginGuard({ port: () => 8787 });
 * check("127.0.0.1:8787", null);   // null
 * check("evil.example:8787", null); // { header: "host", … }
 * ```
 */
export function hostOriginGuard(
  options: GuardOptions,
): (host: string | null, origin: string | null, selfOrigin?: boolean) => GuardRefusal | null {
  const extraHosts = new Set<string>();
  const extraNames = new Set<string>();
  for (const h of options.allowedHosts ?? []) {
    const parts = splitHost(h.trim());
    if (parts === null)
      throw new TypeError(`allowed host ${JSON.stringify(h)} is not a host name like example.lan:8787 (IPv6 in brackets)`);
    if (parts.port === null) extraNames.add(parts.name);
    else extraHosts.add(`${parts.name}:${parts.port}`);
  }
  const origins = new Set<string>();
  for (const o of options.allowedOrigins ?? []) {
    const n = normalizeOrigin(o);
    if (n === null) throw new TypeError(`allowed origin ${JSON.stringify(o)} is not an http(s) origin like http://localhost:3000`);
    origins.add(n);
  }
  // Host values already accepted for a port (not secret; bounded), so the
  // usual request skips the parsing.
  const accepted = new Map<string, number | null>();
  return function checkHostOrigin(host, origin, selfOrigin = false) {
    const port = options.port();
    // (one lookup: a missing host reads as undefined, never a port or null)
    if (host !== null && origin === null && accepted.get(host) === port) return null;
    const refusal = checkSlow(host, origin, port, selfOrigin);
    if (refusal === null && host !== null && origin === null && accepted.size < 64) accepted.set(host, port);
    return refusal;
  };
  function checkSlow(host: string | null, origin: string | null, port: number | null, selfOrigin: boolean): GuardRefusal | null {
    if (host === null || host.trim() === "") return { header: "host", message: "the Host header is missing or empty" };
    const h = host.trim().toLowerCase();
    const parts = splitHost(h);
    if (parts === null) return { header: "host", message: "the Host header is malformed" };
    // A Host without a port names HTTP's default port 80 (browsers and curl leave it out).
    const hostPort = parts.port ?? (port === null ? null : 80);
    const known = hostPort !== null && extraHosts.has(`${parts.name}:${hostPort}`);
    if (!known) {
      if (!isLoopbackName(parts.name) && !extraNames.has(parts.name))
        return { header: "host", message: "the Host header must name a loopback address (localhost, 127.0.0.1 or [::1])" };
      if (port === null ? parts.port !== null : hostPort !== port) {
        return {
          header: "host",
          message:
            port === null
              ? "the Host header must not carry a port on a Unix socket"
              : `the Host header must carry the daemon's port ${port}`,
        };
      }
    }
    if (origin !== null) {
      const n = normalizeOrigin(origin.trim());
      const own = selfOrigin && n !== null && n === new URL(`http://${h}`).origin;
      if (n === null || (!origins.has(n) && !own)) return { header: "origin", message: "the Origin is not in the daemon's allowlist" };
    }
    return null;
  }
}

/** The CORS headers for an allowed origin (never a wildcard); none without an Origin. */
export function corsHeaders(origin: string | null): Record<string, string> {
  if (origin === null) return {};
  return {
    "access-control-allow-origin": origin.trim(),
    "access-control-allow-headers":
      "authorization, content-type, accept, mcp-session-id, mcp-protocol-version, last-event-id, x-agentcore-on-disconnect",
    "access-control-allow-methods": "GET, POST, DELETE, OPTIONS",
    "access-control-expose-headers": "mcp-session-id, retry-after, x-run-id, location",
    vary: "Origin",
  };
}
