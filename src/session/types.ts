/**
 * Session journal records, errors and the projection of records onto an
 * {@link AgentSession} (harness contract §4).
 *
 * @module
 */
import { AgentcoreError } from "../core/errors.ts";
import type { AgentMessage } from "../providers/messages.ts";
import { type ImageAttachment, isImageAttachment } from "../providers/images.ts";
import type { AgentRunResult } from "../providers/run.ts";
import type { SessionRemedy } from "./remedy.ts";

export const JOURNAL_SCHEMA_VERSION = 1;
export const SESSION_DOCUMENT_SCHEMA_VERSION = 1;
/** Prefix of internal metadata keys inside stored messages. */
export const INTERNAL_PREFIX = "_agentcore_";

export type SessionRecordKind =
  | "checkpoint"
  | "branch_created"
  | "run_started"
  | "run_continued"
  | "message_appended"
  | "messages_appended"
  | "steering_applied"
  | "compaction_applied"
  | "run_finished"
  | "approval_requested"
  | "approval_decided";

export const SESSION_RECORD_KINDS: readonly SessionRecordKind[] = [
  "checkpoint",
  "branch_created",
  "run_started",
  "run_continued",
  "message_appended",
  "messages_appended",
  "steering_applied",
  "compaction_applied",
  "run_finished",
  "approval_requested",
  "approval_decided",
];

/** One journal line. */
export interface SessionRecord {
  journal_schema_version: 1;
  record_id: string;
  parent_id: string | null;
  branch_id: string;
  /** Global 1-based position in the file. */
  revision: number;
  session_id: string;
  agent_id: string | null;
  /** The AgentEvent sequence; 0 for checkpoint and branch_created. */
  sequence: number;
  type: SessionRecordKind;
  data: Record<string, unknown>;
  /**
   * When the record was appended: ISO-8601 UTC with milliseconds
   * (`2026-12-01T09:42:38.123Z`), the writer's wall clock. Absent in journals
   * written before agentcore recorded it; read it with {@link recordTime}.
   */
  time?: string;
}

/** What a caller appends; the storage fills in ids, parent and revision. */
export interface SessionRecordDraft {
  session_id: string;
  agent_id: string | null;
  branch_id: string;
  sequence: number;
  type: SessionRecordKind;
  data: Record<string, unknown>;
}

export interface SessionEntry {
  sequence: number;
  run_id: string;
  message: AgentMessage;
}

export interface SessionRun {
  run_id: string;
  intent: "task" | "continue";
  task: string | null;
  start_sequence: number;
  finish_sequence: number | null;
  result: AgentRunResult | null;
}

export interface SessionCompaction {
  operation_id: string;
  sequence: number;
  covered_entry_count: number;
  summary: unknown;
  messages: AgentMessage[];
}

/**
 * An approval a branch waits for, or one answered whose call has no tool
 * message yet (a suspended run to resume): from its `approval_requested`
 * record until a tool message answers the call.
 */
export interface SessionApproval {
  run_id: string;
  tool_call_id: string;
  tool: string;
  effect: "read_only" | "side_effecting";
  rule_id: string | null;
  reason: string | null;
  /** The redacted argument preview journaled with the request. */
  arguments: unknown;
  /** When it was requested (the record's time; null in a journal without times). */
  requested_at: string | null;
  /** The answer, or null while it waits. */
  decision: { approved: boolean; reason: string | null; decided_by: string | null; decided_at: string | null } | null;
}

/** The projection of a branch: what an agent needs to resume. Never holds system prompts. */
export interface AgentSession {
  session_id: string;
  agent_id: string | null;
  entries: SessionEntry[];
  runs: SessionRun[];
  compactions: SessionCompaction[];
  /** Approvals of calls not answered yet (absent when there are none; see {@link SessionApproval}). */
  approvals?: SessionApproval[];
}

/** The approvals of a session that wait for an answer. */
export function pendingApprovals(session: AgentSession): SessionApproval[] {
  return (session.approvals ?? []).filter((a) => a.decision === null);
}

export interface SessionBranch {
  branch_id: string;
  head_id: string | null;
  created_revision: number;
  base_record_id: string | null;
  source_branch_id: string | null;
  intent: string | null;
}

/** A session read for one branch: its projected state, the branch, and the branch head (null when empty); what `restoreSession` takes. */
export interface SessionCheckout {
  session: AgentSession;
  branch: SessionBranch;
  head: SessionRecord | null;
}

export interface SessionRetry {
  checkout: SessionCheckout;
  task: string;
  retried_run_id: string;
}

export class SessionError extends AgentcoreError {
  readonly code: string = "SESSION_FAILED";
  override name = "SessionError";
  /** What gets the session out of this error, as data (its message words it: `src/session/remedy.ts`); null when the message names none. */
  remedy: SessionRemedy | null = null;
}
/** A journal that cannot be read: names the file and the line. */
export class SessionSerializationError extends SessionError {
  override readonly code: string = "SESSION_JOURNAL_UNREADABLE";
  override name = "SessionSerializationError";
  constructor(
    message: string,
    readonly file: string | null = null,
    readonly line: number | null = null,
  ) {
    super(message);
  }
}
/** A journal written with a journal_schema_version this code does not read. */
export class SessionSchemaVersionError extends SessionSerializationError {
  override readonly code: string = "SESSION_SCHEMA_UNSUPPORTED";
  override name = "SessionSchemaVersionError";
}
/** A record that breaks the journal's rules (ids, parents, branches, runs). */
export class SessionValidationError extends SessionError {
  override readonly code: string = "SESSION_INVALID";
  override name = "SessionValidationError";
}
/** A conditional append found the branch head moved. */
export class SessionConflictError extends SessionError {
  override readonly code: string = "SESSION_CONFLICT";
  override name = "SessionConflictError";
}
/**
 * A branch has a run that never finished (its process ended mid-run): it
 * cannot be resumed, continued or forked at its head until the run is closed
 * with `JournalStorage.recoverRuns()` (`agentcore sessions recover`).
 */
export class SessionUnfinishedRunError extends SessionValidationError {
  override readonly code: string = "SESSION_RUN_UNFINISHED";
  override name = "SessionUnfinishedRunError";
  constructor(
    message: string,
    readonly sessionId: string,
    readonly runIds: readonly string[],
    readonly branchId: string | null = null,
  ) {
    super(message);
    this.remedy = { action: "recover", session_id: sessionId, branch_id: branchId ?? "main", force: false };
  }
}
/** The session, or its branch, does not exist. */
export class SessionNotFoundError extends SessionValidationError {
  override readonly code: string = "SESSION_NOT_FOUND";
  override name = "SessionNotFoundError";
}
/** A recovery found the run still going (its process is alive): nothing was written. */
export class SessionRunActiveError extends SessionConflictError {
  override readonly code: string = "SESSION_RUN_ACTIVE";
  override name = "SessionRunActiveError";
  constructor(
    message: string,
    readonly runId: string,
    readonly pid: number,
  ) {
    super(message);
  }
}
/**
 * Another process (or another run of this one) holds the branch: taken up
 * front, before a run starts, so a second run on the branch does nothing.
 * `pid` is the holder's process, `holder` what it said it was (e.g.
 * `agentcore agent`), `since` when it took the branch (ISO-8601, or null).
 */
export class SessionBranchBusyError extends SessionConflictError {
  override readonly code: string = "SESSION_BRANCH_BUSY";
  override name = "SessionBranchBusyError";
  constructor(
    message: string,
    readonly sessionId: string,
    readonly branchId: string,
    readonly pid: number,
    readonly holder: string | null = null,
    readonly since: string | null = null,
  ) {
    super(message);
    this.remedy = { action: "recover", session_id: sessionId, branch_id: branchId, force: true };
  }
}
export class SessionLockTimeoutError extends SessionError {
  override readonly code: string = "SESSION_LOCK_TIMEOUT";
  override name = "SessionLockTimeoutError";
}
/** An I/O failure; the journal's previous content is preserved. */
export class SessionStorageError extends SessionError {
  override readonly code: string = "SESSION_STORAGE_FAILED";
  override name = "SessionStorageError";
}

const RECORD_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/;

/**
 * The time a record was appended (ISO-8601 UTC, e.g.
 * `2026-12-01T09:42:38.123Z`), or null for a record written before journals
 * carried times (or with a time that is not such a timestamp).
 *
 * @example
 * for (const r of await storage.records("demo")) console.log(recordTime(r) ?? "-", r.type);
 */
export function recordTime(record: { time?: unknown }): string | null {
  const t = record.time;
  return typeof t === "string" && RECORD_TIME.test(t) && !Number.isNaN(Date.parse(t)) ? t : null;
}

export function emptySession(sessionId: string, agentId: string | null): AgentSession {
  return { session_id: sessionId, agent_id: agentId, entries: [], runs: [], compactions: [] };
}

/** The conversation of a session: the latest compaction's messages plus the entries after it. */
export function sessionMessages(session: AgentSession): AgentMessage[] {
  const last = session.compactions.at(-1);
  if (last === undefined) return session.entries.map((e) => structuredClone(e.message));
  return [...structuredClone(last.messages), ...session.entries.slice(last.covered_entry_count).map((e) => structuredClone(e.message))];
}

export function unfinishedRuns(session: AgentSession): string[] {
  return session.runs.filter((r) => r.result === null).map((r) => r.run_id);
}

/** A session plus what validation needs but the document does not hold. */
export class Projection {
  /** Last sequence seen per run. */
  lastSeq = new Map<string, number>();
  /** Runs by id, and the unfinished ones (constant-time checks on long sessions). */
  runIndex = new Map<string, SessionRun>();
  openRuns = new Set<string>();
  constructor(public session: AgentSession) {
    this.reindex();
  }
  reindex(): void {
    this.runIndex = new Map(this.session.runs.map((r) => [r.run_id, r]));
    this.openRuns = new Set(this.session.runs.filter((r) => r.result === null).map((r) => r.run_id));
  }
  clone(): Projection {
    const p = new Projection(structuredClone(this.session));
    p.lastSeq = new Map(this.lastSeq);
    return p;
  }
}

const fail = (record: SessionRecord, why: string): never => {
  throw new SessionValidationError(`invalid ${record.type} record ${record.record_id} (revision ${record.revision}): ${why}`);
};

function str(record: SessionRecord, key: string): string {
  const v = record.data[key];
  if (typeof v !== "string" || v.length === 0) fail(record, `data.${key} must be a non-empty string`);
  return v as string;
}

/**
 * Why a journaled `images` list is wrong, or null: it must be image
 * references (`media_type`, `sha256`, `bytes`) and never hold the bytes.
 */
function imageRefsProblem(v: unknown): string | null {
  if (v === undefined) return null;
  if (!Array.isArray(v) || !v.every(isImageAttachment)) return "must be a list of image references ({media_type, sha256, bytes})";
  if (v.some((a) => (a as ImageAttachment).data !== undefined))
    return "holds an image's bytes: a journal keeps an image by reference ({media_type, sha256, bytes}) and its bytes in the store's blobs (a SessionRecorder writes them)";
  return null;
}

/** A run_started record's `instructions` (optional; older journals have none): `[{path, bytes, sha256, truncated?}]`. */
function instructionRefsProblem(v: unknown): string | null {
  if (v === undefined) return null;
  const ok = (f: unknown) => {
    if (f === null || typeof f !== "object" || Array.isArray(f)) return false;
    const r = f as Record<string, unknown>;
    return (
      typeof r.path === "string" &&
      Number.isSafeInteger(r.bytes) &&
      (r.bytes as number) >= 0 &&
      typeof r.sha256 === "string" &&
      /^[0-9a-f]{64}$/.test(r.sha256) &&
      (r.truncated === undefined || typeof r.truncated === "boolean")
    );
  };
  return Array.isArray(v) && v.every(ok) ? null : "must be a list of instruction files ({path, bytes, sha256, truncated?})";
}

function isMessage(m: unknown): m is AgentMessage {
  if (m === null || typeof m !== "object" || Array.isArray(m)) return false;
  const role = (m as { role?: unknown }).role;
  return role === "system" || role === "user" || role === "assistant" || role === "tool";
}

/** Parse a stored session document (checkpoint data.document). */
export function sessionFromDocument(doc: unknown): AgentSession {
  const d = doc as { schema_version?: unknown; session?: AgentSession } | null;
  if (
    d === null ||
    typeof d !== "object" ||
    d.schema_version !== SESSION_DOCUMENT_SCHEMA_VERSION ||
    typeof d.session !== "object" ||
    d.session === null
  ) {
    throw new SessionValidationError(
      `unsupported session document (schema_version ${String(d?.schema_version)}; expected ${SESSION_DOCUMENT_SCHEMA_VERSION})`,
    );
  }
  const s = d.session;
  if (typeof s.session_id !== "string" || !Array.isArray(s.entries) || !Array.isArray(s.runs) || !Array.isArray(s.compactions)) {
    throw new SessionValidationError("invalid session document: session_id, entries, runs and compactions are required");
  }
  return structuredClone({
    session_id: s.session_id,
    agent_id: s.agent_id ?? null,
    entries: s.entries,
    runs: s.runs,
    compactions: s.compactions,
    ...(Array.isArray(s.approvals) && s.approvals.length > 0 ? { approvals: s.approvals } : {}),
  });
}

export function sessionToDocument(session: AgentSession): { schema_version: number; session: AgentSession } {
  return { schema_version: SESSION_DOCUMENT_SCHEMA_VERSION, session: structuredClone(session) };
}

/**
 * Apply one record to a projection. All checks run before any change, so a
 * rejected record leaves the projection as it was. `branch_created` is handled
 * by the storage (the projection of its parent). The projection shares the
 * record's messages (not copied): a record given to an index is the index's
 * own (each storage adds a copy parsed from its line) and is never changed,
 * and whoever reads a projection out copies it (`checkout`, `clone`).
 */
export function applyRecord(p: Projection, record: SessionRecord): void {
  const s = p.session;
  if (record.session_id !== s.session_id) fail(record, `session_id '${record.session_id}' does not match '${s.session_id}'`);
  if (record.agent_id === null) {
    if (record.type !== "checkpoint" && record.type !== "branch_created")
      fail(record, "agent_id may be null only for checkpoint and branch_created");
  } else if (s.agent_id !== null && s.agent_id !== record.agent_id) {
    fail(record, `agent_id changed from '${s.agent_id}' to '${record.agent_id}'`);
  }
  const bindAgent = () => {
    if (record.agent_id !== null) s.agent_id = record.agent_id;
  };
  const openRun = (runId: string): SessionRun => {
    const run = p.runIndex.get(runId);
    if (run === undefined) return fail(record, `unknown run ${runId}`);
    if (run.result !== null) fail(record, `run ${runId} has already finished`);
    const last = p.lastSeq.get(runId) ?? run.start_sequence;
    if (record.sequence < last) fail(record, `sequence ${record.sequence} goes backwards in run ${runId} (last ${last})`);
    return run;
  };
  const beginRun = (runId: string) => {
    if (p.runIndex.has(runId)) fail(record, `run ${runId} already exists`);
    const open = [...p.openRuns];
    if (open.length > 0) fail(record, `run ${open[0]} has not finished`);
  };
  switch (record.type) {
    case "run_started": {
      const runId = str(record, "run_id");
      const task = record.data.task;
      if (typeof task !== "string") fail(record, "data.task must be a string");
      const images = record.data.images;
      const bad = imageRefsProblem(images);
      if (bad !== null) fail(record, `data.images ${bad}`);
      const named = instructionRefsProblem(record.data.instructions);
      if (named !== null) fail(record, `data.instructions ${named}`);
      beginRun(runId);
      bindAgent();
      const run: SessionRun = {
        run_id: runId,
        intent: "task",
        task: task as string,
        start_sequence: record.sequence,
        finish_sequence: null,
        result: null,
      };
      s.runs.push(run);
      p.runIndex.set(runId, run);
      p.openRuns.add(runId);
      const message: AgentMessage =
        images === undefined || (images as unknown[]).length === 0
          ? { role: "user", content: task as string }
          : { role: "user", content: task as string, images: structuredClone(images as ImageAttachment[]) };
      s.entries.push({ sequence: record.sequence, run_id: runId, message });
      p.lastSeq.set(runId, record.sequence);
      return;
    }
    case "run_continued": {
      const runId = str(record, "run_id");
      beginRun(runId);
      bindAgent();
      const run: SessionRun = {
        run_id: runId,
        intent: "continue",
        task: null,
        start_sequence: record.sequence,
        finish_sequence: null,
        result: null,
      };
      s.runs.push(run);
      p.runIndex.set(runId, run);
      p.openRuns.add(runId);
      p.lastSeq.set(runId, record.sequence);
      return;
    }
    case "message_appended": {
      const runId = str(record, "run_id");
      const m = record.data.message;
      if (!isMessage(m) || m.role !== "assistant") fail(record, "data.message must be an assistant message");
      openRun(runId);
      s.entries.push({ sequence: record.sequence, run_id: runId, message: m as AgentMessage });
      p.lastSeq.set(runId, record.sequence);
      return;
    }
    case "messages_appended": {
      const runId = str(record, "run_id");
      const ms = record.data.messages;
      if (!Array.isArray(ms) || !ms.every(isMessage)) fail(record, "data.messages must be a list of messages");
      (ms as AgentMessage[]).forEach((m, i) => {
        const bad = imageRefsProblem((m as { images?: unknown }).images);
        if (bad !== null) fail(record, `data.messages[${i}].images ${bad}`);
      });
      openRun(runId);
      for (const m of ms as AgentMessage[]) s.entries.push({ sequence: record.sequence, run_id: runId, message: m });
      p.lastSeq.set(runId, record.sequence);
      if (s.approvals !== undefined) {
        const answered = new Set(
          (ms as AgentMessage[]).filter((m) => m.role === "tool").map((m) => (m as { tool_call_id: string }).tool_call_id),
        );
        s.approvals = s.approvals.filter((a) => !answered.has(a.tool_call_id));
        if (s.approvals.length === 0) delete s.approvals;
      }
      return;
    }
    case "approval_requested": {
      const runId = str(record, "run_id");
      const callId = str(record, "tool_call_id");
      const tool = str(record, "tool");
      const effect = record.data.effect;
      if (effect !== "read_only" && effect !== "side_effecting") fail(record, 'data.effect must be "read_only" or "side_effecting"');
      const ruleId = record.data.rule_id ?? null;
      const reason = record.data.reason ?? null;
      if (ruleId !== null && typeof ruleId !== "string") fail(record, "data.rule_id must be a string or null");
      if (reason !== null && typeof reason !== "string") fail(record, "data.reason must be a string or null");
      openRun(runId);
      if ((s.approvals ?? []).some((a) => a.tool_call_id === callId)) fail(record, `call ${callId} already has an approval request`);
      const asked = s.entries.some(
        (e) =>
          e.run_id === runId &&
          e.message.role === "assistant" &&
          Array.isArray(e.message.tool_calls) &&
          e.message.tool_calls.some((c) => c?.id === callId),
      );
      if (!asked) fail(record, `run ${runId} has no tool call ${callId}`);
      (s.approvals ??= []).push({
        run_id: runId,
        tool_call_id: callId,
        tool,
        effect: effect as SessionApproval["effect"],
        rule_id: ruleId as string | null,
        reason: reason as string | null,
        arguments: structuredClone(record.data.arguments ?? null),
        requested_at: recordTime(record),
        decision: null,
      });
      p.lastSeq.set(runId, record.sequence);
      return;
    }
    case "approval_decided": {
      const callId = str(record, "tool_call_id");
      const approved = record.data.approved;
      if (typeof approved !== "boolean") fail(record, "data.approved must be a boolean");
      const reason = record.data.reason ?? null;
      const by = record.data.decided_by ?? null;
      if (reason !== null && typeof reason !== "string") fail(record, "data.reason must be a string or null");
      if (by !== null && typeof by !== "string") fail(record, "data.decided_by must be a string or null");
      const approval = (s.approvals ?? []).find((a) => a.tool_call_id === callId);
      if (approval === undefined) fail(record, `no approval of call ${callId} waits on this branch`);
      if (approval!.decision !== null) fail(record, `the approval of call ${callId} was already answered`);
      // In a run still going (an answer given in process), the run's order holds.
      if (p.openRuns.has(approval!.run_id)) {
        openRun(approval!.run_id);
        p.lastSeq.set(approval!.run_id, record.sequence);
      }
      approval!.decision = {
        approved: approved as boolean,
        reason: reason as string | null,
        decided_by: by as string | null,
        decided_at: recordTime(record),
      };
      return;
    }
    case "steering_applied": {
      const runId = str(record, "run_id");
      str(record, "input_id");
      const content = record.data.content;
      const turn = record.data.target_turn;
      if (typeof content !== "string") fail(record, "data.content must be a string");
      if (typeof turn !== "number" || !Number.isInteger(turn) || turn <= 0) fail(record, "data.target_turn must be a positive integer");
      openRun(runId);
      s.entries.push({ sequence: record.sequence, run_id: runId, message: { role: "user", content: content as string } });
      p.lastSeq.set(runId, record.sequence);
      return;
    }
    case "compaction_applied": {
      const op = str(record, "operation_id");
      const ms = record.data.messages;
      if (!Array.isArray(ms) || !ms.every(isMessage)) fail(record, "data.messages must be a list of messages");
      (ms as AgentMessage[]).forEach((m, i) => {
        const bad = imageRefsProblem((m as { images?: unknown }).images);
        if (bad !== null) fail(record, `data.messages[${i}].images ${bad}`);
      });
      if (s.compactions.some((c) => c.operation_id === op)) fail(record, `compaction ${op} already applied`);
      bindAgent();
      s.compactions.push({
        operation_id: op,
        sequence: record.sequence,
        covered_entry_count: s.entries.length,
        summary: structuredClone(record.data.summary ?? null),
        messages: structuredClone(ms as AgentMessage[]),
      });
      return;
    }
    case "run_finished": {
      const runId = str(record, "run_id");
      const result = record.data.result;
      if (result === null || typeof result !== "object" || typeof (result as AgentRunResult).status !== "string")
        fail(record, "data.result must be a run result");
      const run = openRun(runId);
      const last = p.lastSeq.get(runId) ?? run.start_sequence;
      if (record.sequence <= last) fail(record, `sequence ${record.sequence} must follow the run's last sequence ${last}`);
      run.finish_sequence = record.sequence;
      run.result = structuredClone(result as AgentRunResult);
      p.openRuns.delete(runId);
      p.lastSeq.set(runId, record.sequence);
      return;
    }
    case "checkpoint": {
      const doc = sessionFromDocument(record.data.document);
      if (doc.session_id !== record.session_id) fail(record, `document session '${doc.session_id}' does not match '${record.session_id}'`);
      if (doc.agent_id !== record.agent_id) fail(record, `document agent '${doc.agent_id}' does not match '${record.agent_id}'`);
      if (s.agent_id !== null && doc.agent_id !== null && doc.agent_id !== s.agent_id)
        fail(record, `agent_id changed from '${s.agent_id}' to '${doc.agent_id}'`);
      p.session = doc;
      p.reindex();
      p.lastSeq = new Map();
      for (const r of doc.runs) p.lastSeq.set(r.run_id, r.finish_sequence ?? r.start_sequence);
      for (const e of doc.entries) p.lastSeq.set(e.run_id, Math.max(p.lastSeq.get(e.run_id) ?? 0, e.sequence));
      return;
    }
    case "branch_created":
      fail(record, "branch_created is applied by the storage");
  }
}
