/**
 * Session-layer errors in HTTP words: the refusal (status, code, reason)
 * that the daemon sends for each error a session store throws.
 *
 * @module
 */
import { SessionBlobError } from "../session/blobs.ts";
import {
  SessionBranchBusyError,
  SessionConflictError,
  SessionError,
  SessionLockTimeoutError,
  SessionNotFoundError,
  SessionRunActiveError,
  SessionUnfinishedRunError,
  SessionValidationError,
} from "../session/types.ts";
import { HttpError } from "./errors.ts";

/** Map a session-layer error to an HTTP refusal. */
export function sessionHttpError(e: unknown): HttpError | null {
  if (e instanceof SessionRunActiveError)
    return new HttpError(409, "CONFLICT", e.message, { reason: "session_busy", run_id: e.runId, pid: e.pid });
  // Another process (a CLI agent or chat, another daemon) holds the branch: refused before the run starts.
  if (e instanceof SessionBranchBusyError) return new HttpError(409, "CONFLICT", e.message, { reason: "session_busy", pid: e.pid });
  if (e instanceof SessionConflictError) return new HttpError(409, "CONFLICT", e.message, { reason: "session_conflict" });
  if (e instanceof SessionLockTimeoutError)
    return new HttpError(503, "OVERLOADED", e.message, { limit: "session_lock" }, { "retry-after": "1" });
  if (e instanceof SessionNotFoundError) return new HttpError(404, "NOT_FOUND", e.message, {});
  // A run a crash left unfinished: POST /v1/sessions/{id}/recover closes it.
  if (e instanceof SessionUnfinishedRunError)
    return new HttpError(409, "CONFLICT", e.message, {
      reason: "session_unfinished_run",
      run_ids: [...e.runIds],
      recover: `POST /v1/sessions/${encodeURIComponent(e.sessionId)}/recover`,
    });
  // An image blob of the session is missing or corrupted: the session cannot be restored as it is.
  if (e instanceof SessionBlobError)
    return new HttpError(409, "CONFLICT", e.message, { reason: "session_blob_invalid", sha256: e.sha256, problem: e.problem });
  if (e instanceof SessionValidationError) return new HttpError(400, "INVALID_REQUEST", e.message, { reason: "session_invalid" });
  if (e instanceof SessionError) return new HttpError(409, "CONFLICT", e.message, { reason: "session" });
  return null;
}
