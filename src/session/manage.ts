/**
 * Managing stored sessions (what `agentcore sessions` needs beyond the tree
 * API): naming a record the way people type it (a unique prefix of its id,
 * or its revision as `r7`), naming a run by a prefix of its id, the last
 * activity of a session, why a branch cannot start at a record, and deleting
 * a session's journal with its lock and live-run marks.
 *
 * @module
 */
import * as fs from "node:fs";
import * as path from "node:path";
import type { JournalStorage } from "./journal.ts";
import type { JsonlSessionStorage } from "./jsonl.ts";
import { pidAlive, withFileLock } from "./lock.ts";
import { wordRemedy } from "./remedy.ts";
import { type SessionRecord, SessionNotFoundError, SessionRunActiveError, SessionStorageError, SessionValidationError } from "./types.ts";

/** Shortest id prefix accepted for a record or a run (as git's abbreviated ids). */
export const MIN_ID_PREFIX = 4;

/**
 * A record or run reference that names nothing, or more than one thing.
 * `candidates` holds the matching ids when the reference is ambiguous.
 */
export class SessionReferenceError extends SessionValidationError {
  override readonly code: string = "SESSION_REFERENCE_UNRESOLVED";
  override name = "SessionReferenceError";
  constructor(
    message: string,
    readonly reference: string,
    readonly candidates: readonly string[] = [],
  ) {
    super(message);
  }
}

const REVISION = /^[rR]([0-9]+)$/;

/** `r7` for revision 7: how the CLI shows a revision, and how it reads one back. */
export function revisionRef(revision: number): string {
  return `r${revision}`;
}

function describe(r: SessionRecord): string {
  const run = typeof r.data.run_id === "string" ? ` run ${r.data.run_id}` : "";
  return `${r.record_id} (${revisionRef(r.revision)} ${r.branch_id} ${r.type}${run})`;
}

/**
 * The record `ref` names among `records` (one session's, in file order):
 * its full id, a unique prefix of it (at least {@link MIN_ID_PREFIX}
 * characters), or its revision written `r7` (`sessions tree` shows both).
 * Throws {@link SessionReferenceError} for a reference that matches no
 * record or several (the message lists them, and says where the ids are).
 */
export function resolveRecordRef(records: readonly SessionRecord[], ref: string, sessionId: string): SessionRecord {
  const where = `see the revisions and ids with: ${wordRemedy({ action: "tree", session_id: sessionId })}`;
  const text = typeof ref === "string" ? ref.trim() : "";
  if (text === "")
    throw new SessionReferenceError(`the record must not be empty: give a revision (r7) or a record id (${where})`, String(ref));
  const rev = REVISION.exec(text);
  if (rev !== null) {
    const n = Number(rev[1]);
    const found = Number.isSafeInteger(n) ? records[n - 1] : undefined;
    if (found === undefined || found.revision !== n) {
      const range = records.length === 0 ? "no records" : `revisions r1 to r${records.length}`;
      throw new SessionReferenceError(`session '${sessionId}' has no revision ${text} (it has ${range}; ${where})`, text);
    }
    return found;
  }
  const exact = records.find((r) => r.record_id === text);
  if (exact !== undefined) return exact;
  const digits = /^[0-9]+$/.test(text);
  const hint = digits ? `; for revision ${text} write r${text}` : "";
  if (text.length < MIN_ID_PREFIX) {
    throw new SessionReferenceError(
      digits
        ? `record '${text}' is not a revision: write revision ${text} as r${text} (or give at least ${MIN_ID_PREFIX} characters of a record id; ${where})`
        : `record '${text}' is too short: give at least ${MIN_ID_PREFIX} characters of a record id, or a revision as r7 (${where})`,
      text,
    );
  }
  const lower = text.toLowerCase();
  const matches = records.filter((r) => r.record_id.startsWith(text) || r.record_id.startsWith(lower));
  if (matches.length === 1) return matches[0]!;
  if (matches.length === 0) throw new SessionReferenceError(`session '${sessionId}' has no record '${text}'${hint} (${where})`, text);
  const shown = matches.slice(0, 10).map(describe);
  const more = matches.length > 10 ? `, and ${matches.length - 10} more` : "";
  throw new SessionReferenceError(
    `record '${text}' is ambiguous in session '${sessionId}': it starts ${matches.length} record ids: ${shown.join(", ")}${more}; give more characters, or the revision (r7)`,
    text,
    matches.map((r) => r.record_id),
  );
}

/**
 * The run `ref` names among a session's records: its full id, or a unique
 * prefix (at least {@link MIN_ID_PREFIX} characters) of the id of a run
 * started in the session (`sessions show` lists them). Throws
 * {@link SessionReferenceError} otherwise.
 */
export function resolveRunRef(records: readonly SessionRecord[], ref: string, sessionId: string): string {
  const where = `see the runs with: ${wordRemedy({ action: "show", session_id: sessionId })}`;
  const text = typeof ref === "string" ? ref.trim() : "";
  const runs = [
    ...new Set(records.filter((r) => r.type === "run_started" || r.type === "run_continued").map((r) => r.data.run_id as string)),
  ];
  if (text === "") throw new SessionReferenceError(`the run must not be empty (${where})`, String(ref));
  if (runs.includes(text)) return text;
  if (text.length < MIN_ID_PREFIX)
    throw new SessionReferenceError(`run '${text}' is too short: give at least ${MIN_ID_PREFIX} characters of a run id (${where})`, text);
  const lower = text.toLowerCase();
  const matches = runs.filter((id) => id.startsWith(text) || id.startsWith(lower));
  if (matches.length === 1) return matches[0]!;
  if (matches.length === 0) throw new SessionReferenceError(`session '${sessionId}' has no run '${text}' (${where})`, text);
  throw new SessionReferenceError(
    `run '${text}' is ambiguous in session '${sessionId}': it starts ${matches.length} run ids: ${matches.slice(0, 10).join(", ")}${matches.length > 10 ? ", …" : ""}; give more characters`,
    text,
    matches,
  );
}

/** `records` by id. */
function byId(records: readonly SessionRecord[]): Map<string, SessionRecord> {
  return new Map(records.map((r) => [r.record_id, r]));
}

/** The records from the first to `recordId`, following parents. */
export function recordChain(records: readonly SessionRecord[], recordId: string): SessionRecord[] {
  const ids = byId(records);
  const out: SessionRecord[] = [];
  for (let r = ids.get(recordId); r !== undefined; r = r.parent_id === null ? undefined : ids.get(r.parent_id)) out.push(r);
  return out.reverse();
}

/** The head record of each branch (the last record written on it, or its branch_created). */
export function branchHeads(records: readonly SessionRecord[]): Map<string, SessionRecord> {
  const heads = new Map<string, SessionRecord>();
  for (const r of records) heads.set(r.branch_id, r);
  return heads;
}

/**
 * The branch a new branch at `record` should start from: `preferred`
 * (default main) when the record is on its history, else the branch the
 * record was written on. Null when `preferred` was given and does not hold
 * the record.
 */
export function sourceBranchFor(records: readonly SessionRecord[], record: SessionRecord, preferred?: string): string | null {
  const heads = branchHeads(records);
  const onHistory = (branch: string) => {
    const head = heads.get(branch);
    return head !== undefined && recordChain(records, head.record_id).some((r) => r.record_id === record.record_id);
  };
  if (preferred !== undefined) return onHistory(preferred) ? preferred : null;
  if (onHistory("main")) return "main";
  return record.branch_id;
}

/**
 * Why a branch cannot start at `base` (on `source`): a run was still open at
 * that record. Says which records would do instead: the record before the
 * run started, or its `run_finished` when it finished later on `source`,
 * else the `sessions recover` command (or, for a run whose process `live`
 * names, to wait for it). Null when the record is fine.
 */
export function branchPointProblem(
  records: readonly SessionRecord[],
  base: SessionRecord,
  source: string,
  sessionId: string,
  live: ReadonlyMap<string, number> = new Map(),
): string | null {
  const open = new Map<string, SessionRecord>();
  for (const r of recordChain(records, base.record_id)) {
    const run = typeof r.data.run_id === "string" ? r.data.run_id : null;
    if (run === null) continue;
    if (r.type === "run_started" || r.type === "run_continued") open.set(run, r);
    else if (r.type === "run_finished") open.delete(run);
  }
  if (open.size === 0) return null;
  const head = branchHeads(records).get(source);
  const later = head === undefined ? [] : recordChain(records, head.record_id);
  const parts: string[] = [];
  for (const [run, start] of open) {
    const finished = later.find((r) => r.type === "run_finished" && r.data.run_id === run);
    const before = start.parent_id === null ? null : (records.find((r) => r.record_id === start.parent_id) ?? null);
    const choices: string[] = [];
    if (before !== null) choices.push(`${revisionRef(before.revision)} (before the run started)`);
    if (finished !== undefined) choices.push(`${revisionRef(finished.revision)} (its run_finished) or later`);
    const pid = live.get(run);
    const fix =
      finished !== undefined
        ? `choose ${choices.join(" or ")}`
        : pid !== undefined
          ? `it is still going in process ${pid}: wait for it to finish and fork from its run_finished${before !== null ? `, or choose ${choices[0]}` : ""}`
          : `its process ended before it finished: close it with '${wordRemedy({ action: "recover", session_id: sessionId, branch_id: source, force: false })}'${before !== null ? `, or choose ${choices[0]}` : ""}`;
    parts.push(
      `record ${revisionRef(base.revision)} is inside run ${run} (started at ${revisionRef(start.revision)}), so a branch there would begin mid-run: ${fix}`,
    );
  }
  return parts.join("; ");
}

/** Last activity of a session: the newest record `time`, else the journal file's modification time. */
export interface SessionActivity {
  /** ISO 8601, UTC. */
  last_activity: string | null;
  /** Where it came from: the records' `time` field, or the file. */
  source: "record" | "file" | null;
}

function recordTime(r: SessionRecord): number | null {
  const t = (r as unknown as { time?: unknown }).time;
  if (typeof t === "number" && Number.isFinite(t)) return t;
  if (typeof t === "string") {
    const ms = Date.parse(t);
    return Number.isFinite(ms) ? ms : null;
  }
  return null;
}

/**
 * When session `sessionId` was last written to: the newest wall-clock `time`
 * among its records when they carry one, else the journal file's mtime
 * (`records` as read from that storage; a store without files: the records only).
 */
export function sessionActivity(
  storage: JournalStorage | JsonlSessionStorage,
  sessionId: string,
  records: readonly SessionRecord[],
): SessionActivity {
  let newest: number | null = null;
  for (const r of records) {
    const t = recordTime(r);
    if (t !== null && (newest === null || t > newest)) newest = t;
  }
  if (newest !== null) return { last_activity: new Date(newest).toISOString(), source: "record" };
  if (!("fileFor" in storage)) return { last_activity: null, source: null };
  try {
    return { last_activity: fs.statSync(storage.fileFor(sessionId)).mtime.toISOString(), source: "file" };
  } catch {
    return { last_activity: null, source: null };
  }
}

export interface SessionDeletion {
  session_id: string;
  /** The journal that was removed. */
  file: string;
  /** Every file removed: the journal, its live-run marks, leftovers of its lock. */
  removed: string[];
}

/**
 * The files next to a journal that belong to it: `<journal>.*` (live-run
 * marks `.run-…`, branch claims `.branch-…`, lock leftovers), not the lock
 * itself, which its holder removes.
 */
function sidecars(storage: JsonlSessionStorage, sessionId: string): string[] {
  const base = path.basename(storage.fileFor(sessionId));
  let names: string[];
  try {
    names = fs.readdirSync(storage.dir);
  } catch {
    return [];
  }
  return names
    .filter((n) => n.startsWith(`${base}.`) && n !== `${base}.lock`)
    .sort()
    .map((n) => path.join(storage.dir, n));
}

function readText(file: string): string | null {
  try {
    return fs.readFileSync(file, "utf8");
  } catch {
    return null;
  }
}

/** The live runs of a session, from its mark files: `{ runId, pid }` for each mark whose process is alive. */
export function liveRunMarks(storage: JsonlSessionStorage, sessionId: string): { runId: string; pid: number }[] {
  const out: { runId: string; pid: number }[] = [];
  for (const f of sidecars(storage, sessionId)) {
    if (!path.basename(f).includes(".run-")) continue;
    const [pid, runId] = (readText(f) ?? "").trim().split(" ");
    const n = Number(pid);
    if (Number.isInteger(n) && n > 0 && runId !== undefined && pidAlive(n)) out.push({ runId, pid: n });
  }
  return out;
}

/** The branches of a session that a live process has taken (claim files `{pid, branch_id, holder}`). */
export function liveBranchClaims(
  storage: JsonlSessionStorage,
  sessionId: string,
): { branchId: string; pid: number; holder: string | null }[] {
  const out: { branchId: string; pid: number; holder: string | null }[] = [];
  for (const f of sidecars(storage, sessionId)) {
    if (!path.basename(f).includes(".branch-")) continue;
    let v: Record<string, unknown>;
    try {
      v = JSON.parse(readText(f) ?? "") as Record<string, unknown>;
    } catch {
      continue; // torn or foreign: names no owner
    }
    const pid = v?.pid;
    if (typeof pid !== "number" || !Number.isInteger(pid) || pid <= 0 || !pidAlive(pid)) continue;
    out.push({
      branchId: typeof v.branch_id === "string" ? v.branch_id : "?",
      pid,
      holder: typeof v.holder === "string" ? v.holder : null,
    });
  }
  return out;
}

/**
 * Delete session `sessionId` for good: its journal, its live-run marks,
 * branch claims and leftovers of its lock, under the journal's lock (an append in progress
 * finishes first; the lock file goes when the lock is released). Needs no
 * valid journal, so a corrupt one can be deleted too. Throws
 * {@link SessionNotFoundError} when there is no journal,
 * {@link SessionRunActiveError} while a run's mark or a branch claim names a live process
 * (`force` skips that check: a pid reused by another program), and
 * SessionLockTimeoutError when the lock stays busy.
 */
export async function deleteSession(
  storage: JsonlSessionStorage,
  sessionId: string,
  options: { force?: boolean } = {},
): Promise<SessionDeletion> {
  const id = typeof sessionId === "string" ? sessionId.trim() : "";
  if (id === "") throw new SessionValidationError("the session id must be a non-empty string");
  const file = storage.fileFor(id);
  if (!fs.existsSync(file)) throw new SessionNotFoundError(`no session '${id}' in ${storage.dir}`);
  return await withFileLock(`${file}.lock`, storage.lockTimeoutMs, () => {
    if (!fs.existsSync(file)) throw new SessionNotFoundError(`no session '${id}' in ${storage.dir}`);
    if (options.force !== true) {
      const live = liveRunMarks(storage, id)[0];
      if (live !== undefined) {
        throw new SessionRunActiveError(
          `session '${id}' has run ${live.runId} still going in process ${live.pid}: stop that process first (on SIGINT, SIGTERM or SIGHUP it journals the run as finished), then delete; force it only if that process is not running agentcore`,
          live.runId,
          live.pid,
        );
      }
      const claim = liveBranchClaims(storage, id)[0];
      if (claim !== undefined) {
        throw new SessionRunActiveError(
          `session '${id}' is in use: branch '${claim.branchId}' is held by process ${claim.pid}${claim.holder !== null ? ` (${claim.holder})` : ""}: end that process (a chat: /quit) first, then delete; force it only if that process is not running agentcore`,
          "",
          claim.pid,
        );
      }
    }
    const removed: string[] = [];
    for (const f of [file, ...sidecars(storage, id)]) {
      try {
        fs.unlinkSync(f);
        removed.push(f);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === "ENOENT") continue;
        throw new SessionStorageError(`cannot delete ${f}: ${(e as Error).message}`);
      }
    }
    // The session's image blobs go with it.
    const blobs = storage.blobDir(id);
    try {
      fs.rmSync(blobs, { recursive: true });
      removed.push(blobs);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw new SessionStorageError(`cannot delete ${blobs}: ${(e as Error).message}`);
    }
    try {
      const dfd = fs.openSync(storage.dir, "r");
      try {
        fs.fsyncSync(dfd);
      } finally {
        fs.closeSync(dfd);
      }
    } catch {
      /* best effort */
    }
    return { session_id: id, file, removed };
  });
}

/** Records of a session, or a {@link SessionNotFoundError} naming where to look. */
export async function requireRecords(storage: JournalStorage & { dir?: string }, sessionId: string): Promise<SessionRecord[]> {
  const records = await storage.records(sessionId);
  if (records.length === 0) {
    throw new SessionNotFoundError(
      `no session '${sessionId.trim()}'${storage.dir !== undefined ? ` in ${storage.dir}` : ""}: see the sessions with: ${wordRemedy({ action: "list" })}`,
    );
  }
  return records;
}

/** A word the shell reads back as itself. */
export function shellWord(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}
