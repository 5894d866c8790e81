/**
 * What a failed write of a run's records means, as a stable code: the store
 * is full (`STORE_FULL`), cannot be written (`STORE_READONLY`), or cannot be
 * reached (`STORE_UNAVAILABLE`, the one that may pass: a database restart).
 * A `SessionRecorder` turns the error of a failed append into one of these
 * (naming the store: its folder, or its URL without the password, and the
 * fix), retries the one that may pass within {@link STORE_RETRY_DELAYS_MS},
 * and the run then ends `failed` / `store_failed` with the code as its
 * `error_code` (docs/durability.md).
 *
 * @module
 */
import { isConnectionError, redactUrl } from "./postgres/errors.ts";
import { SessionStorageError } from "./types.ts";

/** The store has no room left (ENOSPC, EDQUOT; PostgreSQL `53100`): nothing more of the run could be written. */
export class StoreFullError extends SessionStorageError {
  override readonly code: string = "STORE_FULL";
  override name = "StoreFullError";
}

/** The store refuses writes (a read-only file system, EROFS; a folder without write permission, EACCES/EPERM). */
export class StoreReadOnlyError extends SessionStorageError {
  override readonly code: string = "STORE_READONLY";
  override name = "StoreReadOnlyError";
}

/** The store cannot be reached (the PostgreSQL server stopped, restarting or cut off), still after the retries. */
export class StoreUnavailableError extends SessionStorageError {
  override readonly code: string = "STORE_UNAVAILABLE";
  override name = "StoreUnavailableError";
}

/**
 * The pauses before each retry of a write that found the store unavailable:
 * five more attempts over about 10 s (each attempt of the PostgreSQL store
 * also retries once itself after 0.5 s), then the run stops.
 */
export const STORE_RETRY_DELAYS_MS: readonly number[] = [250, 500, 1000, 2000, 4000];

const FULL = new Set(["ENOSPC", "EDQUOT", "53100"]);
const READONLY = new Set(["EROFS", "EACCES", "EPERM", "25006"]);

/** The codes of an error and of its causes, and the errno-like words of their messages (`ENOSPC: no space left…`). */
function codesOf(e: unknown): Set<string> {
  const out = new Set<string>();
  let cur: unknown = e;
  for (let depth = 0; depth < 8 && cur !== null && typeof cur === "object"; depth++) {
    const err = cur as { code?: unknown; message?: unknown; cause?: unknown };
    if (typeof err.code === "string") out.add(err.code);
    if (typeof err.message === "string") for (const m of err.message.matchAll(/\b(E[A-Z]{3,12})\b/g)) out.add(m[1]!);
    cur = err.cause;
  }
  return out;
}

/** Whether the error, or one of its causes, means the connection to the store was lost or could not be made. */
function unavailable(e: unknown): boolean {
  let cur: unknown = e;
  for (let depth = 0; depth < 8 && cur !== null && typeof cur === "object"; depth++) {
    if (isConnectionError(cur)) return true;
    if (/connection was lost while committing/.test(String((cur as { message?: unknown }).message ?? ""))) return true;
    cur = (cur as { cause?: unknown }).cause;
  }
  return false;
}

/** The store a storage writes to, in words: its folder, or its database's URL without the password. */
export function describeStore(storage: object): string {
  const s = storage as { dir?: unknown; url?: unknown };
  if (typeof s.url === "string") return `the PostgreSQL database ${redactUrl(s.url)}`;
  if (typeof s.dir === "string") return `the sessions folder ${s.dir}`;
  return "the session store";
}

/**
 * The store error a failed write stands for, or null when it is none of
 * them (a conflict, a bug: kept as it is). `store` names the store
 * ({@link describeStore}); the message says what happened, where, and the fix.
 */
export function storeErrorOf(e: unknown, store: string): StoreFullError | StoreReadOnlyError | StoreUnavailableError | null {
  if (e instanceof StoreFullError || e instanceof StoreReadOnlyError || e instanceof StoreUnavailableError) return e;
  const cause = e instanceof Error ? e.message : String(e);
  const codes = codesOf(e);
  const full = [...codes].find((c) => FULL.has(c));
  if (full !== undefined)
    return new StoreFullError(
      `${store} is full (${full}): the run stopped, and what it wrote before is kept; free space there (or record to another store: --sessions-dir DIR, --store URL) and run again (${cause})`,
      { cause: e },
    );
  if (unavailable(e))
    return new StoreUnavailableError(
      `${store} is unavailable (its writes were retried for a while first): the run stopped, and what it wrote before is kept; check that the server is running and reachable, then continue the session (${cause})`,
      { cause: e },
    );
  const ro = [...codes].find((c) => READONLY.has(c));
  if (ro !== undefined)
    return new StoreReadOnlyError(
      `${store} cannot be written (${ro}): the run stopped, and what it wrote before is kept; make it writable (or record to another store: --sessions-dir DIR, --store URL) and run again (${cause})`,
      { cause: e },
    );
  return null;
}
