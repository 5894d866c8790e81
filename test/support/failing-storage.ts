/**
 * A storage whose appends fail at chosen points: wraps any JournalStorage
 * instance (JSONL, memory, PostgreSQL) so that its `appendMany` calls
 * numbered by the test throw an error shaped like the real one (an errno
 * error such as ENOSPC, a PostgreSQL connection error), the others go to the
 * storage as they are.
 */
import type { JournalStorage } from "../../src/session/journal.ts";

/** An error as `node:fs` throws it: `code` and the errno words in the message. */
export function errnoError(code: string, syscall = "write"): Error {
  const texts: Record<string, string> = {
    ENOSPC: "no space left on device",
    EDQUOT: "disk quota exceeded",
    EROFS: "read-only file system",
    EACCES: "permission denied",
  };
  return Object.assign(new Error(`${code}: ${texts[code] ?? "error"}, ${syscall}`), { code, errno: -28, syscall });
}

/** An error as `pg` throws it when the server shuts down (`57P01 admin_shutdown`). */
export function pgShutdownError(): Error {
  return Object.assign(new Error("terminating connection due to administrator command"), { code: "57P01", severity: "FATAL" });
}

/** The appends seen and failed so far. */
export interface FailingAppends {
  /** Each appendMany call, numbered from 1: the record types it carried and whether it failed. */
  readonly calls: { n: number; types: string[]; failed: boolean }[];
}

/**
 * Make `storage`'s appends fail: `fail(n, types)` is asked for each
 * `appendMany` call (numbered from 1, with the types of its drafts) and
 * returns the error to throw, or null to let the call through. Nothing is
 * written by a call that fails. `lost(n, types)`, asked after a call went
 * through, may return an error to throw anyway: the write landed, its answer
 * was lost (a connection cut while the commit was answered).
 */
export function failAppends<S extends JournalStorage>(
  storage: S,
  fail: (n: number, types: string[]) => Error | null,
  lost: (n: number, types: string[]) => Error | null = () => null,
): S & FailingAppends {
  const calls: FailingAppends["calls"] = [];
  const original = storage.appendMany.bind(storage);
  const wrapped = storage as S & { calls: FailingAppends["calls"] };
  wrapped.calls = calls;
  wrapped.appendMany = async (drafts, options) => {
    const n = calls.length + 1;
    const types = drafts.map((d) => d.type);
    const error = fail(n, types);
    calls.push({ n, types, failed: error !== null });
    if (error !== null) throw error;
    const written = await original(drafts, options);
    const gone = lost(n, types);
    if (gone !== null) throw gone;
    return written;
  };
  return wrapped;
}
