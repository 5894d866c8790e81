/**
 * The journal index (records, branch heads, head projections) and the tree
 * API shared by the memory and JSONL storages (harness contract §4).
 *
 * @module
 */
import { canonicalJson } from "../core/canonical.ts";
import {
  applyRecord,
  emptySession,
  JOURNAL_SCHEMA_VERSION,
  Projection,
  type AgentSession,
  type SessionBranch,
  SessionConflictError,
  type SessionCheckout,
  type SessionRecord,
  type SessionRecordDraft,
  SESSION_RECORD_KINDS,
  type SessionRetry,
  SessionValidationError,
  sessionToDocument,
  SessionNotFoundError,
  SessionRunActiveError,
  SessionBranchBusyError,
  SessionSchemaVersionError,
  unfinishedRuns,
} from "./types.ts";
import { wordRemedy } from "./remedy.ts";
import { assertBlobName, type BlobStore, SessionBlobError } from "./blobs.ts";
import { interruptedRunDrafts, recoverCommand, type RecoverOptions, type RecoveredRun, type SessionRecovery } from "./recover.ts";

const randomHex = (n: number): string => crypto.randomUUID().replace(/-/g, "").slice(0, n);
export const newRecordId = (): string => crypto.randomUUID().replace(/-/g, "");

/** Throws when a value is not plain JSON (no NaN/Infinity, undefined, functions, cycles). */
export function assertJson(value: unknown, path = "data", seen = new Set<object>()): void {
  if (value === null || typeof value === "string" || typeof value === "boolean") return;
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new SessionValidationError(`${path} is not JSON: ${value}`);
    return;
  }
  if (typeof value !== "object") throw new SessionValidationError(`${path} is not JSON (${typeof value})`);
  if (seen.has(value)) throw new SessionValidationError(`${path} is a cycle`);
  seen.add(value);
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      // A hole would be written as `[1,,3]`: not JSON, and the journal could not be read back.
      if (!(i in value)) throw new SessionValidationError(`${path}[${i}] is not JSON (a hole in an array)`);
      assertJson(value[i], `${path}[${i}]`, seen);
    }
  } else {
    const proto = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) throw new SessionValidationError(`${path} is not a plain object`);
    for (const [k, v] of Object.entries(value)) assertJson(v, `${path}.${k}`, seen);
  }
  seen.delete(value);
}

/**
 * The largest journal line (one record, serialized) a storage writes and
 * reads: 64 MiB. Above the JSON core's default input limit (1 MiB) on
 * purpose: a record holding a big tool result must read back as it was
 * written. An append or import of a bigger record is refused.
 */
export const MAX_RECORD_BYTES = 64 * 1024 * 1024;

/** The JSON limits journal lines are read with. */
export const RECORD_LIMITS = { maxBytes: MAX_RECORD_BYTES } as const;

/** Throws SessionValidationError when a record's data would make a line over {@link MAX_RECORD_BYTES}. */
export function checkRecordSize(data: unknown, what = "the record"): void {
  const bytes = new TextEncoder().encode(JSON.stringify(data)).length;
  if (bytes + 1024 > MAX_RECORD_BYTES)
    throw new SessionValidationError(
      `${what} is too large for a journal: its data is ${bytes} bytes, and a journal line holds at most ${MAX_RECORD_BYTES} bytes (64 MiB)`,
    );
}

/** Thrown by {@link encode} for a value JSON cannot hold (the caller words the error). */
const NOT_JSON = Symbol("not JSON");
/** Deeper than this, {@link encode} leaves the value to the slower path (which finds cycles). */
const FAST_DEPTH = 256;

/**
 * Canonical JSON (the text of `canonicalJson`: sorted keys, no whitespace)
 * of a plain JSON value, in one pass; throws {@link NOT_JSON} for anything
 * else (non-finite numbers, undefined, functions, holes, class instances,
 * cycles or nesting deeper than {@link FAST_DEPTH}).
 */
function encode(v: unknown, depth: number): string {
  switch (typeof v) {
    case "string":
      return JSON.stringify(v);
    case "number":
      if (!Number.isFinite(v)) throw NOT_JSON;
      return String(v);
    case "boolean":
      return v ? "true" : "false";
    case "object": {
      if (v === null) return "null";
      if (depth > FAST_DEPTH) throw NOT_JSON;
      if (Array.isArray(v)) {
        let out = "[";
        for (let i = 0; i < v.length; i++) {
          if (!(i in v)) throw NOT_JSON;
          out += (i === 0 ? "" : ",") + encode(v[i], depth + 1);
        }
        return out + "]";
      }
      const proto = Object.getPrototypeOf(v);
      if (proto !== Object.prototype && proto !== null) throw NOT_JSON;
      const keys = Object.keys(v);
      for (let i = 1; i < keys.length; i++)
        if (keys[i - 1]! > keys[i]!) {
          keys.sort();
          break;
        }
      let out = "{";
      for (let i = 0; i < keys.length; i++) {
        const k = keys[i]!;
        out += (i === 0 ? "" : ",") + JSON.stringify(k) + ":" + encode((v as Record<string, unknown>)[k], depth + 1);
      }
      return out + "}";
    }
    default:
      throw NOT_JSON;
  }
}

/** One journal line: compact JSON, sorted keys, newline-terminated. */
export function serializeRecord(record: SessionRecord): string {
  try {
    return encode(record, 0) + "\n";
  } catch (e) {
    if (e !== NOT_JSON) throw e;
    return canonicalJson(record) + "\n";
  }
}

/** The data of records made by {@link JournalStorage.appendMany}, serialised (and checked) before the transaction. */
const encodedData = new WeakMap<SessionRecord, string>();

/**
 * Canonical JSON of a record's data, checked: plain JSON ({@link assertJson}'s
 * errors) and small enough for a journal line ({@link MAX_RECORD_BYTES}).
 * Throws SessionValidationError.
 */
function encodeData(data: unknown): string {
  let json: string;
  try {
    json = encode(data, 0);
  } catch (e) {
    if (e !== NOT_JSON) throw e;
    assertJson(data); // names the bad value
    json = canonicalJson(data); // plain JSON, only deeper than the fast path goes
  }
  // A UTF-16 unit is at most three UTF-8 bytes: count the bytes only when it may matter.
  if (json.length * 3 + 1024 > MAX_RECORD_BYTES) {
    const bytes = Buffer.byteLength(json, "utf8");
    if (bytes + 1024 > MAX_RECORD_BYTES)
      throw new SessionValidationError(
        `the record is too large for a journal: its data is ${bytes} bytes, and a journal line holds at most ${MAX_RECORD_BYTES} bytes (64 MiB)`,
      );
  }
  return json;
}

/** The envelope keys of a record, sorted (the order of a canonical line). */
const ENVELOPE_KEYS = 11;

/**
 * The line a storage writes for a record it made: {@link serializeRecord}'s
 * text, built once (the data serialised by `appendMany` before its
 * transaction is reused), after checking that the data is plain JSON and
 * that the line fits in {@link MAX_RECORD_BYTES}. Throws
 * SessionValidationError.
 */
export function recordLine(record: SessionRecord): string {
  const data = encodedData.get(record) ?? encodeData(record.data);
  const r = record;
  if (
    Object.keys(r).length === ENVELOPE_KEYS &&
    typeof r.branch_id === "string" &&
    (r.agent_id === null || typeof r.agent_id === "string") &&
    typeof r.journal_schema_version === "number" &&
    (r.parent_id === null || typeof r.parent_id === "string") &&
    typeof r.record_id === "string" &&
    Number.isSafeInteger(r.revision) &&
    Number.isSafeInteger(r.sequence) &&
    typeof r.session_id === "string" &&
    typeof r.time === "string" &&
    typeof r.type === "string"
  ) {
    // The canonical line, its keys in sorted order, without walking the data again.
    return (
      `{"agent_id":${r.agent_id === null ? "null" : JSON.stringify(r.agent_id)},"branch_id":${JSON.stringify(r.branch_id)},"data":${data}` +
      `,"journal_schema_version":${r.journal_schema_version},"parent_id":${r.parent_id === null ? "null" : JSON.stringify(r.parent_id)}` +
      `,"record_id":${JSON.stringify(r.record_id)},"revision":${r.revision},"sequence":${r.sequence},"session_id":${JSON.stringify(r.session_id)}` +
      `,"time":${JSON.stringify(r.time)},"type":${JSON.stringify(r.type)}}\n`
    );
  }
  assertJson(record, "record");
  return serializeRecord(record);
}

/** Envelope shape check of a parsed line; returns a message or null. */
export function envelopeProblem(v: unknown): string | null {
  if (v === null || typeof v !== "object" || Array.isArray(v)) return "a record must be a JSON object";
  const r = v as Record<string, unknown>;
  if (r.journal_schema_version !== JOURNAL_SCHEMA_VERSION)
    return `unsupported journal_schema_version ${JSON.stringify(r.journal_schema_version)}; expected ${JOURNAL_SCHEMA_VERSION}`;
  if (typeof r.record_id !== "string" || r.record_id === "") return "record_id must be a non-empty string";
  if (r.parent_id !== null && typeof r.parent_id !== "string") return "parent_id must be a string or null";
  if (typeof r.branch_id !== "string" || r.branch_id === "") return "branch_id must be a non-empty string";
  if (typeof r.session_id !== "string") return "session_id must be a string";
  if (r.agent_id !== null && typeof r.agent_id !== "string") return "agent_id must be a string or null";
  for (const k of ["revision", "sequence"]) if (typeof r[k] !== "number" || !Number.isInteger(r[k])) return `${k} must be an integer`;
  if (!SESSION_RECORD_KINDS.includes(r.type as never)) return `unknown record type ${JSON.stringify(r.type)}`;
  if (r.data === null || typeof r.data !== "object" || Array.isArray(r.data)) return "data must be an object";
  // Optional: journals written before records carried times have none.
  if (r.time !== undefined && typeof r.time !== "string") return "time must be a string (an ISO-8601 timestamp)";
  return null;
}

interface BranchState extends SessionBranch {
  projection: Projection;
}

/** Records of one session in file order, with branch heads and their projections. */
export class JournalIndex {
  readonly records: SessionRecord[] = [];
  readonly byId = new Map<string, SessionRecord>();
  readonly branches = new Map<string, BranchState>();

  constructor(readonly sessionId: string) {}

  get agentId(): string | null {
    for (const b of this.branches.values()) if (b.projection.session.agent_id !== null) return b.projection.session.agent_id;
    return null;
  }

  /** Validate a record against the index and add it (the record's revision must be next). */
  add(record: SessionRecord): void {
    const fail = (why: string): never => {
      throw new SessionValidationError(`invalid record ${record.record_id} at revision ${record.revision}: ${why}`);
    };
    if (record.revision !== this.records.length + 1) fail(`revision jumped (expected ${this.records.length + 1})`);
    if (this.byId.has(record.record_id)) fail("duplicate record_id");
    if (record.session_id !== this.sessionId) fail(`session_id '${record.session_id}' does not match '${this.sessionId}'`);
    if (record.parent_id !== null && !this.byId.has(record.parent_id)) fail("parent changed or is missing");
    const agent = this.agentId;
    if (record.agent_id !== null && agent !== null && record.agent_id !== agent)
      fail(`agent_id changed from '${agent}' to '${record.agent_id}'`);
    if (record.type === "branch_created") {
      this.#addBranch(record, fail);
    } else {
      let b = this.branches.get(record.branch_id);
      if (b === undefined) {
        if (record.branch_id !== "main") fail(`branch '${record.branch_id}' must start with branch_created`);
        if (record.parent_id !== null) fail("the first record of main must have no parent");
        b = {
          branch_id: "main",
          head_id: null,
          created_revision: record.revision,
          base_record_id: null,
          source_branch_id: null,
          intent: null,
          projection: new Projection(emptySession(this.sessionId, null)),
        };
        applyRecord(b.projection, record);
        this.branches.set("main", b);
      } else {
        if (record.parent_id !== b.head_id) fail(`Session branch '${record.branch_id}' head changed`);
        applyRecord(b.projection, record);
      }
      b.head_id = record.record_id;
    }
    this.records.push(record);
    this.byId.set(record.record_id, record);
  }

  #addBranch(record: SessionRecord, fail: (why: string) => never): void {
    if (this.branches.has(record.branch_id)) fail(`branch '${record.branch_id}' already exists`);
    const d = record.data;
    const base = d.base_record_id;
    const source = d.source_branch_id;
    const intent = d.intent;
    if (intent !== "fork" && intent !== "rollback" && intent !== "retry") fail(`invalid intent ${JSON.stringify(intent)}`);
    if ((intent === "retry") !== (typeof d.retried_run_id === "string")) fail("retried_run_id is required exactly for intent retry");
    if (typeof source !== "string") fail("source_branch_id must be a string");
    const src = this.branches.get(source as string);
    if (src === undefined) fail(`unknown source branch '${String(source)}'`);
    if (d.source_head_id !== src!.head_id) fail(`source_head_id does not match the head of '${String(source)}'`);
    if (record.parent_id !== base) fail("parent_id must equal base_record_id");
    if (base === null) {
      if (intent !== "retry") fail("base_record_id may be null only for a retry of the first run");
    } else if (typeof base !== "string" || !this.isAncestor(base, src!.head_id)) {
      fail(`base record ${String(base)} is not an ancestor of the head of '${String(source)}'`);
    }
    const projection = base === null ? new Projection(emptySession(this.sessionId, this.agentId)) : this.projectionAt(base as string);
    const open = unfinishedRuns(projection.session);
    if (open.length > 0) {
      // Still open at the source head: only a recovery closes it. Else the base is inside a run that finished later.
      const hint = open.some((r) => src!.projection.openRuns.has(r))
        ? `; the run's process ended before it finished: mark it interrupted first with: ${recoverCommand(this.sessionId, source as string)}`
        : "; choose a record before the run started or from its run_finished on";
      fail(`cannot branch from record ${String(base)} with unfinished run(s): ${open.join(", ")}${hint}`);
    }
    if (record.agent_id !== null && projection.session.agent_id === null) projection.session.agent_id = record.agent_id;
    this.branches.set(record.branch_id, {
      branch_id: record.branch_id,
      head_id: record.record_id,
      created_revision: record.revision,
      base_record_id: base as string | null,
      source_branch_id: source as string,
      intent: intent as string,
      projection,
    });
  }

  /** Whether `ancestor` is `of` or one of its ancestors. */
  isAncestor(ancestor: string, of: string | null): boolean {
    for (let id = of; id !== null; id = this.byId.get(id)?.parent_id ?? null) if (id === ancestor) return true;
    return false;
  }

  chain(recordId: string): SessionRecord[] {
    const out: SessionRecord[] = [];
    for (let id: string | null = recordId; id !== null; id = this.byId.get(id)!.parent_id) out.push(this.byId.get(id)!);
    return out.reverse();
  }

  /** The projection at any record: a branch head's copy, or a replay of its ancestor chain. */
  projectionAt(recordId: string): Projection {
    for (const b of this.branches.values()) if (b.head_id === recordId) return b.projection.clone();
    const chain = this.chain(recordId);
    let p = new Projection(emptySession(this.sessionId, null));
    for (const r of chain) {
      if (r.type === "branch_created") {
        if (r.parent_id === null) p = new Projection(emptySession(this.sessionId, r.agent_id ?? this.agentId));
        continue;
      }
      applyRecord(p, r);
    }
    return p;
  }

  head(branchId: string): SessionRecord | null {
    const b = this.branches.get(branchId);
    return b === undefined || b.head_id === null ? null : this.byId.get(b.head_id)!;
  }

  branchInfo(b: BranchState): SessionBranch {
    const { projection: _p, ...info } = b;
    return { ...info };
  }

  checkout(branchId: string, recordId?: string): SessionCheckout | null {
    const b = this.branches.get(branchId);
    if (recordId !== undefined) {
      const r = this.byId.get(recordId);
      if (r === undefined) return null;
      const info: SessionBranch =
        b !== undefined
          ? this.branchInfo(b)
          : {
              branch_id: r.branch_id,
              head_id: r.record_id,
              created_revision: r.revision,
              base_record_id: null,
              source_branch_id: null,
              intent: null,
            };
      return { session: this.projectionAt(recordId).session, branch: info, head: r };
    }
    if (b === undefined) return null;
    return { session: structuredClone(b.projection.session), branch: this.branchInfo(b), head: this.head(branchId) };
  }

  /** Build the next record for a draft (not yet added). */
  build(draft: SessionRecordDraft, parentId: string | null): SessionRecord {
    return {
      journal_schema_version: JOURNAL_SCHEMA_VERSION,
      record_id: newRecordId(),
      parent_id: parentId,
      branch_id: draft.branch_id,
      revision: this.records.length + 1,
      session_id: draft.session_id,
      agent_id: draft.agent_id,
      sequence: draft.sequence,
      type: draft.type,
      // Not copied: the storage keeps its own copy, parsed from the line it writes (recordLine).
      data: draft.data,
      time: new Date().toISOString(),
    };
  }
}

/** Options of {@link JournalStorage.importRecords}. */
export interface ImportRecordsOptions {
  /** Each record's line as read (without its newline), kept verbatim where the storage stores lines. */
  lines?: readonly string[];
}

/** Throws SessionValidationError unless `lines` are one line per record, each parsing to its record. */
export function checkLines(records: readonly SessionRecord[], lines: readonly string[] | undefined): void {
  if (lines === undefined) return;
  if (lines.length !== records.length) throw new SessionValidationError(`${lines.length} line(s) for ${records.length} record(s)`);
  lines.forEach((l, i) => {
    if (l.includes("\n") || canonicalJson(JSON.parse(l)) !== canonicalJson(records[i]))
      throw new SessionValidationError(`line ${i + 1} is not its record`);
  });
}

export interface AppendOptions {
  /** With `checkHead`, the head the caller saw (null: the branch is new). */
  expectedHeadId?: string | null;
  checkHead?: boolean;
}

/**
 * A branch taken by {@link JournalStorage.claimBranch}: nobody else can take
 * it until `release()` (or the holder's process ends).
 */
export interface BranchClaim {
  readonly sessionId: string;
  readonly branchId: string;
  /** Give the branch back; idempotent. */
  release(): void;
}

/** A torn last line of a journal: its line number and length; `repaired` once cut off. */
export interface JournalRepair {
  session_id: string;
  file: string;
  line: number;
  bytes: number;
  repaired: boolean;
}

/** The words for a torn line: found (ignored until the next write) or cut off. */
export function repairMessage(r: JournalRepair): string {
  const what = `line ${r.line} of session '${r.session_id}' (${r.file}) was torn: ${r.bytes} bytes of a write cut short (a crash or a full disk), not a whole record`;
  const kept = r.line === 1 ? "the session holds no record yet" : `the ${r.line - 1} record(s) before it are kept`;
  return r.repaired
    ? `${what}; it was cut off (${kept})`
    : `${what}; it is ignored (${kept}), and the next write to the session cuts it off`;
}

export interface BranchOptions {
  sourceBranch?: string;
  branchId?: string;
}

/**
 * A locked transaction over one session's index: `write` validates and
 * persists a record. Implemented by each storage.
 */
export type Transaction = <T>(sessionId: string, fn: (index: JournalIndex, write: (record: SessionRecord) => void) => T) => Promise<T>;

/** The tree API over a storage's transactions. */
export abstract class JournalStorage implements BlobStore {
  /** Runs recorded through this instance that have not finished (`session\0run`). */
  readonly #liveRuns = new Set<string>();
  /** Branches claimed through this instance (`session\0branch` → holder). */
  readonly #claims = new Map<string, { holder: string | null; since: string }>();

  /**
   * Take branch `branchId` of a session for a run (or a chat) before it
   * starts: throws {@link SessionBranchBusyError} while another holder has it,
   * so a second run on a branch is refused before it does anything. The JSONL
   * storage keeps the claim in a file next to the journal, created
   * atomically, holding the pid; a claim whose process is gone is stale and
   * taken over. It also checks that the journal can be written
   * (SessionStorageError otherwise).
   */
  async claimBranch(sessionId: string, branchId = "main", holder: string | null = null): Promise<BranchClaim> {
    const id = normalizeId(sessionId);
    const key = `${id}\u0000${branchId}`;
    const held = this.#claims.get(key);
    if (held !== undefined)
      throw new SessionBranchBusyError(
        busyMessage(id, branchId, process.pid, held.holder),
        id,
        branchId,
        process.pid,
        held.holder,
        held.since,
      );
    const mine = { holder, since: new Date().toISOString() };
    this.#claims.set(key, mine);
    return {
      sessionId: id,
      branchId,
      release: () => {
        if (this.#claims.get(key) === mine) this.#claims.delete(key);
      },
    };
  }

  /** The pid of a live process holding the branch ({@link claimBranch}), or null. */
  async branchOwner(sessionId: string, branchId = "main"): Promise<number | null> {
    return this.#claims.has(`${normalizeId(sessionId)}\u0000${branchId}`) ? process.pid : null;
  }

  /** Drop a branch claim whatever its holder (`recoverRuns` with `force`). */
  protected async breakBranchClaim(sessionId: string, branchId: string): Promise<void> {
    this.#claims.delete(`${normalizeId(sessionId)}\u0000${branchId}`);
  }

  /**
   * Cut off a torn last line (a write a crash cut short) now rather than at
   * the next append; returns what was cut, or null when the journal was whole.
   * Storages without files have nothing to repair.
   */
  async repair(_sessionId: string): Promise<JournalRepair | null> {
    return null;
  }

  /** Whether the session's journal exists (it may hold no record yet, e.g. after a torn first write). */
  async exists(sessionId: string): Promise<boolean> {
    return await this.transact(normalizeId(sessionId), (index) => index.records.length > 0, true);
  }

  /**
   * Mark run `runId` as going on in this process (SessionRecorder calls this
   * once its start is journaled), so {@link recoverRuns} leaves it alone.
   * The JSONL storage keeps the mark in a file next to the journal, seen by
   * other processes.
   */
  async markRunLive(sessionId: string, runId: string): Promise<void> {
    this.#liveRuns.add(`${normalizeId(sessionId)}\u0000${runId}`);
  }

  /** Remove the mark of {@link markRunLive} (the run finished, or gave up journaling). */
  async clearRunLive(sessionId: string, runId: string): Promise<void> {
    this.#liveRuns.delete(`${normalizeId(sessionId)}\u0000${runId}`);
  }

  /** The pid of a live process running `runId`, or null when none is known. */
  async runOwner(sessionId: string, runId: string): Promise<number | null> {
    return this.#liveRuns.has(`${normalizeId(sessionId)}\u0000${runId}`) ? process.pid : null;
  }

  protected abstract transact<T>(
    sessionId: string,
    fn: (index: JournalIndex, write: (record: SessionRecord) => void) => T,
    readOnly: boolean,
  ): Promise<T>;
  /** Session ids stored. */
  abstract listSessions(): Promise<string[]>;

  /**
   * Write a whole session from records made elsewhere (an export, another
   * store): every record as it is (ids, parents, revisions, times), after
   * checking them all the way a storage checks what it reads (envelope,
   * schema version, revisions from 1 without a gap, parents, branches,
   * one session id) and before writing any. Refuses a session that exists
   * (SessionConflictError). All or nothing: on any error nothing is written.
   * Returns the session id and how many records were written.
   *
   * `lines`: each record's line as it was read (an export), kept verbatim by
   * the storages that store lines (JSONL, PostgreSQL's `line` column), so a
   * journal moves between stores byte for byte even when its lines are not
   * in the canonical form this build writes; omitted, each line is
   * {@link serializeRecord} of its record. Each must parse to its record.
   */
  async importRecords(
    records: readonly SessionRecord[],
    _options: ImportRecordsOptions = {},
  ): Promise<{ session_id: string; records: number }> {
    const id = validateRecords(records);
    return await this.transact(
      id,
      (index, write) => {
        if (index.records.length > 0) throw new SessionConflictError(sessionExistsMessage(id, index.records.length));
        for (const r of records) write(structuredClone(r));
        return { session_id: id, records: records.length };
      },
      false,
    );
  }

  /**
   * The session's journal as JSONL: every record's line in revision order,
   * exactly as the store holds it (JSONL: the file's whole lines; PostgreSQL:
   * the `line` column; memory: {@link serializeRecord} of each record).
   */
  async journalText(sessionId: string): Promise<string> {
    return (await this.records(sessionId)).map((r) => serializeRecord(r)).join("");
  }

  /** Append a record (not branch_created). With `checkHead`, fails with SessionConflictError when the branch head moved. */
  async append(draft: SessionRecordDraft, options: AppendOptions = {}): Promise<SessionRecord> {
    return (await this.appendMany([draft], options))[0]!;
  }

  /**
   * Append records of one session as one group, in order, each on the head
   * of its branch (the one before it, for a second record on the same
   * branch): one transaction, all or none. The JSONL storage writes the
   * group's lines with one write and one fsync, so when this resolves every
   * record of the group is durable, and when it rejects none was written
   * (a crash mid-write leaves a torn tail, cut off at the next open). With
   * `checkHead`, the first record's branch head must be `expectedHeadId`
   * (SessionConflictError otherwise). Each record's data must be plain JSON
   * and its line at most {@link MAX_RECORD_BYTES} (SessionValidationError).
   */
  async appendMany(drafts: readonly SessionRecordDraft[], options: AppendOptions = {}): Promise<SessionRecord[]> {
    if (drafts.length === 0) return [];
    const sessionId = normalizeId(drafts[0]!.session_id);
    for (const draft of drafts) {
      if (draft.type === "branch_created")
        throw new SessionValidationError("branch_created records are written by fork(), rollback(), or prepareRetry()");
      if (draft !== drafts[0] && normalizeId(draft.session_id) !== sessionId)
        throw new SessionValidationError(`the records of one group belong to one session ('${sessionId}', not '${draft.session_id}')`);
    }
    // Checked and serialised once, before anything is locked or created; the line reuses it.
    const data = drafts.map((d) => encodeData(d.data));
    return await this.transact(
      sessionId,
      (index, write) =>
        drafts.map((draft, i) => {
          const b = index.branches.get(draft.branch_id);
          if (b === undefined && draft.branch_id !== "main")
            throw new SessionValidationError(`unknown branch '${draft.branch_id}' in session '${sessionId}'`);
          const head = b?.head_id ?? null;
          if (i === 0 && options.checkHead === true && head !== (options.expectedHeadId ?? null)) {
            throw new SessionConflictError(
              `Session branch '${draft.branch_id}' head changed from ${options.expectedHeadId ?? "none"} to ${head ?? "none"}`,
            );
          }
          const record = index.build({ ...draft, session_id: sessionId }, head);
          encodedData.set(record, data[i]!);
          write(record);
          return record;
        }),
      false,
    );
  }

  async records(sessionId: string): Promise<SessionRecord[]> {
    return await this.transact(normalizeId(sessionId), (index) => structuredClone(index.records), true);
  }

  async head(sessionId: string, branchId = "main"): Promise<SessionRecord | null> {
    return await this.transact(normalizeId(sessionId), (index) => structuredClone(index.head(branchId)), true);
  }

  async listBranches(sessionId: string): Promise<SessionBranch[]> {
    return await this.transact(
      normalizeId(sessionId),
      (index) => [...index.branches.values()].sort((a, b) => a.created_revision - b.created_revision).map((b) => index.branchInfo(b)),
      true,
    );
  }

  async checkout(sessionId: string, branchId = "main", recordId?: string): Promise<SessionCheckout | null> {
    return await this.transact(normalizeId(sessionId), (index) => index.checkout(branchId, recordId), true);
  }

  /**
   * Store an image blob of a session (content-addressed: `sha256` is the
   * hash of `bytes`, checked by the caller). A storage that keeps no blobs
   * throws {@link SessionBlobError}; the built-in ones all keep them.
   */
  async putBlob(sessionId: string, sha256: string, _bytes: Uint8Array): Promise<void> {
    assertBlobName(sessionId, sha256);
    throw new SessionBlobError(`session '${sessionId}': this storage keeps no image blobs`, sessionId, sha256, "unsupported");
  }

  /** The bytes of an image blob, or null when the session has none of that hash. */
  async getBlob(sessionId: string, sha256: string): Promise<Uint8Array | null> {
    assertBlobName(sessionId, sha256);
    return null;
  }

  /** The main branch's projection, or null. */
  async load(sessionId: string): Promise<AgentSession | null> {
    return (await this.checkout(sessionId, "main"))?.session ?? null;
  }

  /** Write a checkpoint of `session` on main. */
  async save(session: AgentSession): Promise<SessionRecord> {
    return await this.append({
      session_id: session.session_id,
      agent_id: session.agent_id,
      branch_id: "main",
      sequence: 0,
      type: "checkpoint",
      data: { document: sessionToDocument(session) },
    });
  }

  /**
   * Close the runs of a branch that never finished because their process
   * ended (crash, SIGKILL, power loss): appends, under the journal lock and in
   * one transaction, a cancelled answer for each tool call left unanswered and
   * a `run_finished` record (`cancelled` / `external_abort`, error "run
   * interrupted: …") for each such run; see {@link interruptedRunDrafts}.
   * A branch with no unfinished run is left as it is (`recovered` is empty).
   * Throws {@link SessionNotFoundError} for an unknown session or branch,
   * SessionLockTimeoutError when the lock is busy, and
   * {@link SessionRunActiveError} when a run's process is still alive (its
   * {@link markRunLive} mark names a live pid); nothing is written then.
   * `force` skips that check (a mark whose pid was reused by another
   * program): a run that is in fact still going then finds its branch head
   * moved at its next record (SessionConflictError) and stops journaling.
   *
   * @example
   * const storage = new JsonlSessionStorage(".agentcore/sessions");
   * const { recovered } = await storage.recoverRuns("demo");
   * for (const r of recovered) console.log(`closed ${r.run_id}: ${r.result.error}`);
   */
  async recoverRuns(sessionId: string, options: RecoverOptions = {}): Promise<SessionRecovery> {
    const id = normalizeId(sessionId);
    const branchId = options.branch ?? "main";
    // A journal that exists but holds no record yet (its first write was torn) is an empty main branch.
    const exists = await this.exists(id);
    const missing = (index: JournalIndex) =>
      index.records.length === 0
        ? exists && branchId === "main"
          ? null
          : `no session '${id}'`
        : index.branches.has(branchId)
          ? null
          : `session '${id}' has no branch '${branchId}'`;
    // A read first, so an unknown session creates nothing (not even the directory).
    const { problem, open } = await this.transact(
      id,
      (index) => ({ problem: missing(index), open: [...(index.branches.get(branchId)?.projection.openRuns ?? [])] }),
      true,
    );
    if (problem !== null) throw new SessionNotFoundError(problem);
    // --force also clears a claim whose pid was given to another program.
    if (options.force === true) await this.breakBranchClaim(id, branchId);
    else {
      for (const runId of open) {
        // The run's own mark, else the branch's claim (a run between its start record and its mark).
        const pid = (await this.runOwner(id, runId)) ?? (await this.branchOwner(id, branchId));
        if (pid !== null) {
          throw new SessionRunActiveError(
            `run ${runId} of session '${id}' branch '${branchId}' is still going in process ${pid}: stop that process (on SIGINT, SIGTERM or SIGHUP it journals the run as finished itself); force the recovery only if that process is not running agentcore`,
            runId,
            pid,
          );
        }
      }
    }
    await this.repair(id);
    const result = await this.transact(
      id,
      (index, write): SessionRecovery => {
        const b = index.branches.get(branchId);
        if (b === undefined && index.records.length === 0 && missing(index) === null)
          return { session_id: id, branch_id: branchId, recovered: [], head_id: null };
        if (b === undefined) throw new SessionNotFoundError(missing(index) ?? `session '${id}' has no branch '${branchId}'`);
        const recovered: RecoveredRun[] = [];
        for (const run of interruptedRunDrafts(b.projection, branchId, options.reason, options.toolEffect, options.resumable === true)) {
          let last: SessionRecord | null = null;
          for (const draft of run.drafts) {
            last = index.build(draft, b.head_id);
            write(last);
          }
          recovered.push({
            run_id: run.run_id,
            cancelled_tool_calls: run.cancelled,
            interrupted_tool_calls: run.interrupted,
            resumable_tool_calls: run.resumable,
            result: run.result,
            record_id: last!.record_id,
          });
        }
        return { session_id: id, branch_id: branchId, recovered, head_id: b.head_id };
      },
      false,
    );
    for (const r of result.recovered) await this.clearRunLive(id, r.run_id);
    return result;
  }

  async fork(sessionId: string, options: BranchOptions & { fromRecordId?: string } = {}): Promise<SessionCheckout> {
    return await this.#branch(normalizeId(sessionId), "fork", options.fromRecordId, options);
  }

  async rollback(sessionId: string, toRecordId: string, options: BranchOptions = {}): Promise<SessionCheckout> {
    if (typeof toRecordId !== "string" || toRecordId === "") throw new SessionValidationError("rollback needs the record to roll back to");
    return await this.#branch(normalizeId(sessionId), "rollback", toRecordId, options);
  }

  /** Branch at the state just before run `runId` started; returns that run's task. */
  async prepareRetry(sessionId: string, runId: string, options: BranchOptions = {}): Promise<SessionRetry> {
    const id = normalizeId(sessionId);
    const source = options.sourceBranch ?? "main";
    let task = "";
    let base: string | null = null;
    await this.transact(
      id,
      (index) => {
        const head = index.head(source);
        if (head === null) throw new SessionValidationError(`unknown branch '${source}' in session '${id}'`);
        const started = index.chain(head.record_id).find((r) => r.type === "run_started" && r.data.run_id === runId);
        if (started === undefined)
          throw new SessionValidationError(`run ${runId} was not started on branch '${source}' (continue runs cannot be retried)`);
        if (typeof started.data.task !== "string" || started.data.task.trim() === "")
          throw new SessionValidationError(`run ${runId} has no task`);
        task = started.data.task;
        base = started.parent_id;
      },
      true,
    );
    const checkout = await this.#branch(id, "retry", base, options, runId);
    return { checkout, task, retried_run_id: runId };
  }

  async #branch(
    sessionId: string,
    intent: "fork" | "rollback" | "retry",
    from: string | null | undefined,
    options: BranchOptions,
    retried?: string,
  ): Promise<SessionCheckout> {
    const source = options.sourceBranch ?? "main";
    const branchId = options.branchId ?? `${intent}-${randomHex(12)}`;
    if (branchId.trim() === "") throw new SessionValidationError("the branch name must not be empty");
    return await this.transact(
      sessionId,
      (index, write) => {
        const head = index.head(source);
        if (head === null) throw new SessionValidationError(`unknown branch '${source}' in session '${sessionId}'`);
        if (index.branches.has(branchId)) throw new SessionConflictError(`branch '${branchId}' already exists`);
        const base = from === undefined ? head.record_id : from;
        if (base !== null) {
          if (!index.byId.has(base)) throw new SessionValidationError(`record ${base} does not exist`);
          if (!index.isAncestor(base, head.record_id))
            throw new SessionValidationError(`record ${base} is not an ancestor of the head of '${source}'`);
        }
        const data: Record<string, unknown> = { base_record_id: base, intent, source_branch_id: source, source_head_id: head.record_id };
        if (retried !== undefined) data.retried_run_id = retried;
        const record = index.build(
          { session_id: sessionId, agent_id: index.agentId, branch_id: branchId, sequence: 0, type: "branch_created", data },
          base,
        );
        write(record);
        return index.checkout(branchId)!;
      },
      false,
    );
  }
}

/** The message of an import into a session that exists. */
export function sessionExistsMessage(sessionId: string, records: number | null): string {
  return `session '${sessionId}' exists already${records !== null ? ` (${records} record(s))` : ""}: import it under another id, or delete that session first`;
}

/**
 * Check that `records` make one whole session, as a storage reading them
 * would: envelope and schema version, revisions 1, 2, … in order, parents
 * that exist, branches that start with branch_created, one session id.
 * Returns the session id; throws SessionValidationError (a schema version
 * this build does not know: SessionSchemaVersionError) naming the record.
 */
export function validateRecords(records: readonly SessionRecord[]): string {
  if (records.length === 0) throw new SessionValidationError("there is no record to import: a session holds at least one");
  const first = records[0] as unknown as Record<string, unknown> | null;
  const raw = first !== null && typeof first === "object" ? first.session_id : undefined;
  if (typeof raw !== "string") throw new SessionValidationError("record 1: session_id must be a string");
  const id = normalizeId(raw);
  const index = new JournalIndex(id);
  records.forEach((r, i) => {
    const problem = envelopeProblem(r);
    if (problem !== null) {
      const v = (r as { journal_schema_version?: unknown } | null)?.journal_schema_version;
      if (r !== null && typeof r === "object" && v !== JOURNAL_SCHEMA_VERSION)
        throw new SessionSchemaVersionError(`record ${i + 1}: ${problem}`);
      throw new SessionValidationError(`record ${i + 1}: ${problem}`);
    }
    assertJson(r.data, `record ${i + 1}: data`);
    checkRecordSize(r.data, `record ${i + 1}`);
    try {
      index.add(structuredClone(r));
    } catch (e) {
      if (e instanceof SessionValidationError) throw new SessionValidationError(`record ${i + 1}: ${e.message}`);
      throw e;
    }
  });
  return id;
}

/** The refusal of a branch held by process `pid`: who holds it and the ways out. */
export function busyMessage(sessionId: string, branchId: string, pid: number, holder: string | null, since: string | null = null): string {
  const who = [holder, since !== null ? `since ${since}` : null].filter((x) => x !== null).join(", ");
  return (
    `session '${sessionId}' branch '${branchId}' is in use by process ${pid}${who !== "" ? ` (${who})` : ""}: wait for it to finish, or stop that process ` +
    `(on SIGINT, SIGTERM or SIGHUP it journals its run as finished); if process ${pid} is not agentcore, clear the mark with: ` +
    wordRemedy({ action: "recover", session_id: sessionId, branch_id: branchId, force: true })
  );
}

export function normalizeId(sessionId: string): string {
  if (typeof sessionId !== "string" || sessionId.trim() === "")
    throw new SessionValidationError("the session id must be a non-empty string");
  return sessionId.trim();
}

/** Sessions in memory (tests, ephemeral agents). */
export class MemorySessionStorage extends JournalStorage {
  #sessions = new Map<string, JournalIndex>();
  #tail: Promise<unknown> = Promise.resolve();

  protected async transact<T>(sessionId: string, fn: (index: JournalIndex, write: (record: SessionRecord) => void) => T): Promise<T> {
    const run = this.#tail.then(() => {
      let index = this.#sessions.get(sessionId);
      const fresh = index === undefined;
      if (index === undefined) index = new JournalIndex(sessionId);
      const before = index.records.length;
      const write = (record: SessionRecord) => {
        // Round-trip through the wire form so memory and files behave alike.
        const copy = JSON.parse(recordLine(record)) as SessionRecord;
        index!.add(copy);
        if (fresh) this.#sessions.set(sessionId, index!);
      };
      try {
        return fn(index, write);
      } catch (e) {
        // All or none: a group that failed part-way leaves the session as it was.
        if (index.records.length > before) {
          const kept = new JournalIndex(sessionId);
          for (const r of index.records.slice(0, before)) kept.add(r);
          if (before === 0) this.#sessions.delete(sessionId);
          else this.#sessions.set(sessionId, kept);
        }
        throw e;
      }
    });
    this.#tail = run.catch(() => {});
    return await run;
  }

  async listSessions(): Promise<string[]> {
    return [...this.#sessions.keys()].sort();
  }

  readonly #blobs = new Map<string, Uint8Array>();

  override async putBlob(sessionId: string, sha256: string, bytes: Uint8Array): Promise<void> {
    assertBlobName(sessionId, sha256);
    this.#blobs.set(`${normalizeId(sessionId)}\0${sha256}`, bytes.slice());
  }

  override async getBlob(sessionId: string, sha256: string): Promise<Uint8Array | null> {
    assertBlobName(sessionId, sha256);
    return this.#blobs.get(`${normalizeId(sessionId)}\0${sha256}`)?.slice() ?? null;
  }
}
