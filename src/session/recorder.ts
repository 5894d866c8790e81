/**
 * `SessionRecorder`: an agent event sink that journals a run. Only
 * agent_started, agent_continued, message_completed, steering_applied,
 * tool_completed, output_repair_requested (its user message), tool_approval_requested, tool_approval_decided (records
 * approval_requested, approval_decided), agent_finished and
 * completed compactions become records (an approval request is written
 * before anyone is asked: the policy waits for this sink);
 * deltas (text, thinking, tool-call arguments), progress, pressure and
 * discarded steering are not persisted. Images (a task's, a tool result's)
 * are journaled by reference (`media_type`, `sha256`, `bytes`), their bytes
 * written to the storage's blobs first (`src/session/blobs.ts`). Each
 * event's record (or a group's records, `handleMany`) is one transaction of
 * the storage (`appendMany`: under one lock, one write and one fsync for the
 * JSONL storage), and the sink returns only once it is durable, so a later
 * sink sees the event only after its record is on disk. Within a run each
 * record is a conditional append on the recorder's own last record, so a
 * concurrent writer on the same branch surfaces as a SessionConflictError
 * instead of interleaving. From its start record to its
 * run_finished, a run is marked live in the storage (`markRunLive`), so a
 * recovery does not close it from under it.
 *
 * Writing the records is part of the run, not a listener beside it: the
 * recorder is a `required` sink, so when a write fails the agent stops the
 * run at that event and ends it `failed` / `store_failed`. A write that
 * found the store unavailable (a database restart) is tried again after
 * each pause of `STORE_RETRY_DELAYS_MS` (about 10 s in all) before it counts
 * as failed (the end of a run that failed so is offered once, without
 * retries); the error then thrown is a `StoreFullError` (`STORE_FULL`),
 * `StoreReadOnlyError` (`STORE_READONLY`) or `StoreUnavailableError`
 * (`STORE_UNAVAILABLE`) naming the store and the fix, or the storage's own
 * error when it is none of those (docs/durability.md).
 *
 * @module
 */
import type { AgentEvent, AgentEventSource } from "../context/events.ts";
import type { AgentMessage } from "../providers/messages.ts";
import { externalizeImages, putBlobs } from "./blobs.ts";
import type { JournalStorage } from "./journal.ts";
import { describeStore, STORE_RETRY_DELAYS_MS, storeErrorOf } from "./store-errors.ts";
import type { SessionRecord, SessionRecordDraft } from "./types.ts";

/** Options of a {@link SessionRecorder}. */
export interface SessionRecorderOptions {
  /** The pauses before each retry of a write that found the store unavailable (default `STORE_RETRY_DELAYS_MS`). */
  retryDelaysMs?: readonly number[];
}

/**
 * Journals one agent's run into `storage` (session `sessionId`, branch
 * `branchId`). Give it to the agent as a sink and nothing else:
 * `createAgent({ compaction, sinks: [new SessionRecorder(id, storage)] })`
 * records what `restoreSession` needs, compactions included (the conversation
 * after a compaction is read from the emitting agent).
 */
export class SessionRecorder {
  /** Errors raised while recording (each one stopped its run). */
  readonly errors: Error[] = [];
  /** The last record written. */
  lastRecord: SessionRecord | null = null;
  /** A failed write stops the run (see AgentEventSink). */
  readonly required = true;
  readonly #retryDelays: readonly number[];
  /** A write of the current run failed: its end is offered once, without retries (the run is answered at once). */
  #failed = false;

  constructor(
    readonly sessionId: string,
    readonly storage: JournalStorage,
    readonly branchId = "main",
    options: SessionRecorderOptions = {},
  ) {
    this.#retryDelays = options.retryDelaysMs ?? STORE_RETRY_DELAYS_MS;
  }

  /**
   * While one of this recorder's runs is open, the head its next record goes
   * on: its own last record (any other writer on the branch meanwhile is a
   * SessionConflictError). Undefined between runs: a run's first record goes
   * on whatever the head is then.
   */
  #expectedHead: string | undefined = undefined;

  /** The sink entry point (the agent calls it with each event and itself as `source`); `sinks: [recorder]`. */
  async handle(event: AgentEvent, source?: AgentEventSource): Promise<void> {
    await this.handleMany([event], source);
  }

  /**
   * Journal events that are ready together as one group: their records go
   * out in one transaction (the JSONL storage: one write and one fsync), so
   * when this resolves all of them are durable, and when it throws none was
   * written. Events that make no record are skipped.
   */
  async handleMany(events: readonly AgentEvent[], source?: AgentEventSource): Promise<void> {
    const messages = source === undefined ? undefined : () => source.messages;
    const drafts: SessionRecordDraft[] = [];
    const blobs = new Map<string, Uint8Array>();
    for (const event of events) {
      const full = recordDraft(event, this.sessionId, this.branchId, messages);
      if (full === null) continue;
      // The end of a run whose start was never written (its write failed): there is no run to finish.
      if (full.type === "run_finished" && this.#expectedHead === undefined && drafts.length === 0) continue;
      // Images go to the store's blobs, each before the record that names it; the record keeps a reference.
      const ext = externalizeImages(full.data);
      for (const [k, v] of ext.blobs) blobs.set(k, v);
      drafts.push(ext.blobs.size === 0 ? full : { ...full, data: ext.data });
    }
    if (drafts.length === 0) return;
    if (drafts[0]!.type === "run_started" || drafts[0]!.type === "run_continued") this.#failed = false;
    const runIdOf = (d: SessionRecordDraft) => d.data.run_id as string;
    try {
      if (blobs.size > 0) await this.#durably(() => putBlobs(this.storage, this.sessionId, blobs));
      // One transaction reads the head and appends: no other writer can come between.
      const expected = drafts[0]!.type === "run_started" || drafts[0]!.type === "run_continued" ? undefined : this.#expectedHead;
      this.lastRecord = await this.#append(drafts, expected);
      this.#expectedHead = this.lastRecord.record_id;
      // While the run goes on, recoverRuns (in any process) leaves it alone.
      for (const d of drafts)
        if (d.type === "run_started" || d.type === "run_continued")
          await this.#durably(() => this.storage.markRunLive(this.sessionId, runIdOf(d)));
    } catch (e) {
      const error = storeErrorOf(e, describeStore(this.storage)) ?? (e as Error);
      this.#failed = true;
      this.errors.push(error);
      throw error;
    } finally {
      for (const d of drafts)
        if (d.type === "run_finished") {
          this.#expectedHead = undefined;
          await this.storage.clearRunLive(this.sessionId, runIdOf(d)).catch(() => {});
        }
    }
  }

  /**
   * Append the drafts (on `expected` when given), retrying while the store
   * is unavailable. A retry that fails where the branch head is this very
   * group's last record knows the attempt before landed (its answer was lost).
   */
  async #append(drafts: SessionRecordDraft[], expected: string | undefined): Promise<SessionRecord> {
    let attempts = 0;
    try {
      return await this.#durably(async () => {
        attempts++;
        const written = await this.storage.appendMany(drafts, expected === undefined ? {} : { expectedHeadId: expected, checkHead: true });
        return written[written.length - 1]!;
      });
    } catch (e) {
      // A conflict (a conditional append) or a refused duplicate (an unconditional one) after a retry may be this group itself.
      if (attempts < 2) throw e;
      const head = await this.storage.head(this.sessionId, this.branchId).catch(() => null);
      const last = drafts[drafts.length - 1]!;
      if (head !== null && head.type === last.type && head.sequence === last.sequence && head.data.run_id === last.data.run_id) return head;
      throw e;
    }
  }

  /** Run a storage operation (one that may be repeated), again after each pause while the store is unavailable. */
  async #durably<T>(op: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await op();
      } catch (e) {
        const delay = this.#failed ? undefined : this.#retryDelays[attempt];
        if (delay === undefined || storeErrorOf(e, "")?.code !== "STORE_UNAVAILABLE") throw e;
        await new Promise((r) => setTimeout(r, delay));
      }
    }
  }
}

/**
 * The record for an event, or null when the event is not persisted. A
 * completed compaction needs `messages` (the conversation after it); without
 * it there is no record.
 */
export function recordDraft(
  event: AgentEvent,
  sessionId: string,
  branchId: string,
  messages?: () => AgentMessage[],
): SessionRecordDraft | null {
  const base = { session_id: sessionId, agent_id: event.agent_id, branch_id: branchId, sequence: event.sequence };
  const runId = event.run_id;
  switch (event.kind) {
    case "agent_started":
      return {
        ...base,
        type: "run_started",
        data: {
          run_id: runId,
          task: event.task,
          ...(event.images !== undefined && event.images.length > 0 ? { images: event.images } : {}),
          // the AGENTS.md files of the system prompt: paths and hashes, never their text
          ...(event.instructions !== undefined && event.instructions.length > 0
            ? { instructions: event.instructions.map((f) => ({ ...f })) }
            : {}),
        },
      };
    case "agent_continued":
      return { ...base, type: "run_continued", data: { run_id: runId } };
    case "message_completed": {
      const m = event.message;
      const message: Record<string, unknown> = { role: "assistant", content: m.content };
      if (m.tool_calls.length > 0)
        message.tool_calls = m.tool_calls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.arguments } }));
      if (event.usage !== null) message.usage = { ...event.usage };
      return { ...base, type: "message_appended", data: { run_id: runId, message } };
    }
    case "steering_applied":
      return {
        ...base,
        type: "steering_applied",
        data: { run_id: runId, input_id: event.control.input_id, content: event.control.content, target_turn: event.target_turn },
      };
    case "tool_completed":
      return { ...base, type: "messages_appended", data: { run_id: runId, messages: event.result.messages.map((m) => ({ ...m })) } };
    case "output_repair_requested":
      // The repair turn's user message is part of the conversation.
      return { ...base, type: "messages_appended", data: { run_id: runId, messages: [{ role: "user", content: event.message }] } };
    case "agent_finished":
      return { ...base, type: "run_finished", data: { run_id: runId, result: structuredClone(event.result) } };
    case "tool_approval_requested": {
      const r = event.request;
      return {
        ...base,
        type: "approval_requested",
        data: {
          run_id: runId,
          tool_call_id: event.tool_call.id,
          tool: r.tool,
          effect: r.effect,
          rule_id: r.rule_id,
          reason: r.reason,
          arguments: structuredClone(r.arguments ?? null),
          suspended: event.suspended,
        },
      };
    }
    case "tool_approval_decided":
      return {
        ...base,
        type: "approval_decided",
        data: {
          run_id: runId,
          tool_call_id: event.tool_call_id,
          approved: event.approved,
          reason: event.reason,
          decided_by: event.decided_by,
        },
      };
    case "compaction_completed": {
      const r = event.result;
      if (r.status !== "completed" || messages === undefined) return null;
      return {
        ...base,
        type: "compaction_applied",
        data: { operation_id: r.operation_id, summary: structuredClone(r.summary ?? null), messages: structuredClone(messages()) },
      };
    }
    default:
      return null;
  }
}
