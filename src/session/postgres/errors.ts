/**
 * The PostgreSQL store's errors: a pg or socket error as a
 * SessionStorageError naming the store (its URL without the password) and
 * what to check.
 *
 * @module
 */
import { SessionError, SessionStorageError } from "../types.ts";

/** `postgres://user:***@host/db` → the URL without its password (for messages). */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password !== "") u.password = "***";
    return u.toString();
  } catch {
    return url.replace(/(\/\/[^:/@]*):[^@]*@/, "$1:***@");
  }
}

/** Whether a store spec names PostgreSQL (`postgres://` or `postgresql://`). */
export function isPostgresUrl(spec: string): boolean {
  return /^postgres(ql)?:\/\//i.test(spec);
}

const CONNECTION_CODES = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "ETIMEDOUT",
  "ECONNRESET",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EPIPE",
]);

/**
 * Whether an error means the connection to the server went away or could
 * not be made (a restart, a crash, a network cut): the operation may be
 * retried on a new connection when that is safe.
 */
export function isConnectionError(e: unknown): boolean {
  const err = e as { code?: unknown; message?: unknown } | null;
  const code = typeof err?.code === "string" ? err.code : "";
  if (CONNECTION_CODES.has(code) || code.startsWith("08") || code === "57P01" || code === "57P02" || code === "57P03") return true;
  const msg = typeof err?.message === "string" ? err.message : "";
  return /Connection terminated|not queryable|connection error|terminating connection|server closed the connection|timeout exceeded when trying to connect/i.test(
    msg,
  );
}

/** A pg or socket error as a SessionStorageError naming the store and what to check. */
export function storageError(url: string, what: string, e: unknown): SessionStorageError {
  if (e instanceof SessionError) return e;
  const err = e as { code?: string; message?: string };
  const where = redactUrl(url);
  const msg = err?.message ?? String(e);
  let hint: string;
  if (err?.code !== undefined && CONNECTION_CODES.has(err.code))
    hint = "check that the PostgreSQL server is running and accepts TCP connections at that host and port";
  else if (err?.code === "28P01" || err?.code === "28000") hint = "check the user and password in the URL (and pg_hba.conf)";
  else if (err?.code === "3D000") hint = "check the database name in the URL, or create it (createdb)";
  else if (err?.code === "42P01" || err?.code === "3F000")
    hint = "the agentcore tables are missing: run agentcore store migrate --store URL";
  else if (/timeout|terminat|Connection/i.test(msg)) hint = "check that the PostgreSQL server is running and reachable";
  else hint = "check the server's log";
  return new SessionStorageError(`PostgreSQL store ${where}: ${what}: ${msg}; ${hint}`, { cause: e });
}
