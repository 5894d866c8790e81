/**
 * Closing runs that a crash left open. A run whose process ended before its
 * `run_finished` record (SIGKILL, a power cut, a crash, a daemon killed mid
 * run) keeps its branch unusable: a new run, `continueRun()` and a fork at the
 * head all refuse while a run is unfinished. {@link interruptedRunDrafts}
 * computes the records that close such runs the way an aborted run closes
 * itself:
 *
 * - tool calls the run's last assistant message asked for but never answered
 *   get a `cancelled` tool message each (one `messages_appended` record), so
 *   every `tool_calls` entry has its answer and the conversation is valid for
 *   a model again;
 * - a `run_finished` record with status `cancelled`, stop reason
 *   `external_abort` (what an abort produces), `output` null and an `error`
 *   that says the run was interrupted. `turns` counts the assistant messages
 *   journaled for the run, and `usage` adds up the usage they recorded
 *   (requests whose reply was never journaled are not known).
 *
 * The storage writes them under its lock ({@link JournalStorage.recoverRuns}).
 *
 * @module
 */
import type { AgentMessage } from "../providers/messages.ts";
import { UsageAccumulator, type AgentRunResult } from "../providers/run.ts";
import { wordRemedy } from "./remedy.ts";
import type { ModelUsage } from "../providers/types.ts";
import { type AgentSession, Projection, type SessionRecordDraft } from "./types.ts";

/** The `error` of a recovered run's result (a reason may be appended). */
export const INTERRUPTED_RUN_ERROR = "run interrupted: its process ended before the run finished";

/** The `error` of the tool message a recovery gives a call that may have started (status `interrupted`). */
export const INTERRUPTED_CALL_ERROR =
  "interrupted: the process running this call ended before its result was recorded, so its outcome is unknown (it may or may not have taken effect); check before calling it again";

/** One run closed by a recovery. */
export interface RecoveredRun {
  run_id: string;
  /** Ids of the tool calls answered as cancelled. */
  cancelled_tool_calls: string[];
  /** Ids of the calls answered `interrupted` (they may have started; their outcome is unknown). */
  interrupted_tool_calls: string[];
  /** Ids of the calls left for a resume: approvals that wait or were answered, read-only calls to run again. */
  resumable_tool_calls: string[];
  /** The result written in its run_finished record. */
  result: AgentRunResult;
  /** The run_finished record's id. */
  record_id: string;
}

/** What {@link JournalStorage.recoverRuns} did; `recovered` is empty when nothing was unfinished. */
export interface SessionRecovery {
  session_id: string;
  branch_id: string;
  recovered: RecoveredRun[];
  /** The branch head after the recovery. */
  head_id: string | null;
}

export interface RecoverOptions {
  /** The branch whose unfinished runs to close (default main). */
  branch?: string;
  /** Appended to the result's error, e.g. who recovered it. */
  reason?: string;
  /** Recover even when a run's process looks alive (see JournalStorage.recoverRuns). */
  force?: boolean;
  /**
   * The effect of a tool by name (the registry the run resumes with), for
   * calls the journal has no approval request of: a read-only one is run
   * again on resume. Absent: such calls are treated as side-effecting.
   */
  toolEffect?: (tool: string) => "read_only" | "side_effecting" | undefined;
  /**
   * Close every unfinished run as suspended (`awaiting_approval`), so that it
   * can be resumed, even when no approval or read-only call is involved: a
   * call that may have started is still answered `interrupted` (never
   * replayed). A cluster daemon taking over a run uses it (docs/cluster.md).
   */
  resumable?: boolean;
}

const nonNegative = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v) && v >= 0;

/** A stored `usage` if it has the shape of one (journals are read from disk). */
function storedUsage(u: unknown): ModelUsage | null {
  if (u === null || typeof u !== "object") return null;
  const x = u as Record<string, unknown>;
  if (!nonNegative(x.input_tokens) || !nonNegative(x.output_tokens)) return null;
  const out: ModelUsage = {
    input_tokens: x.input_tokens,
    output_tokens: x.output_tokens,
    total_tokens: nonNegative(x.total_tokens) ? x.total_tokens : x.input_tokens + x.output_tokens,
  };
  for (const k of ["cache_read_tokens", "cache_write_tokens", "reasoning_tokens"] as const) if (nonNegative(x[k])) out[k] = x[k];
  return out;
}

/** Tool calls of `messages` with no tool message answering them, in order. */
export function unansweredToolCalls(messages: readonly AgentMessage[]): { id: string; name: string }[] {
  const open = new Map<string, string>();
  for (const m of messages) {
    if (m.role === "assistant" && Array.isArray(m.tool_calls)) {
      for (const c of m.tool_calls)
        if (typeof c?.id === "string") open.set(c.id, typeof c.function?.name === "string" ? c.function.name : "unknown");
    } else if (m.role === "tool") {
      open.delete(m.tool_call_id);
    }
  }
  return [...open].map(([id, name]) => ({ id, name }));
}

/**
 * The drafts that close every unfinished run of a branch projection, in
 * order (for each run: the cancelled tool answers if any, then
 * run_finished). Sequences continue after each run's last one. Empty when
 * every run has finished.
 */
export function interruptedRunDrafts(
  p: Projection,
  branchId: string,
  reason?: string,
  toolEffect?: RecoverOptions["toolEffect"],
  resumable = false,
): {
  run_id: string;
  drafts: SessionRecordDraft[];
  cancelled: string[];
  interrupted: string[];
  resumable: string[];
  result: AgentRunResult;
}[] {
  const s = p.session;
  const resumableRun = resumable;
  const out = [];
  const error = reason === undefined || reason.trim() === "" ? INTERRUPTED_RUN_ERROR : `${INTERRUPTED_RUN_ERROR} (${reason.trim()})`;
  const approvals = new Map((s.approvals ?? []).map((a) => [a.tool_call_id, a]));
  for (const run of s.runs) {
    if (run.result !== null) continue;
    const messages = s.entries.filter((e) => e.run_id === run.run_id).map((e) => e.message);
    let seq = Math.max(p.lastSeq.get(run.run_id) ?? run.start_sequence, run.start_sequence);
    const base = { session_id: s.session_id, agent_id: s.agent_id, branch_id: branchId };
    const drafts: SessionRecordDraft[] = [];
    const open = unansweredToolCalls(messages);
    // The crash rules: a call whose approval waits (or was answered) never
    // started, or is settled by its answer; a read-only call may run again;
    // any other call may have started, so it is never replayed.
    const resumable: string[] = [];
    const interrupted: { id: string; name: string }[] = [];
    let involvesApproval = false;
    for (const c of open) {
      const a = approvals.get(c.id);
      if (a !== undefined) involvesApproval = true;
      const effect = a?.effect ?? toolEffect?.(c.name);
      if (a !== undefined && (a.decision === null || a.decision.approved === false)) resumable.push(c.id);
      else if (effect === "read_only") resumable.push(c.id);
      else interrupted.push(c);
    }
    const suspend = resumableRun || involvesApproval || resumable.length > 0;
    const cancelled = suspend ? [] : open;
    const answers = suspend
      ? interrupted.map((c) => ({
          role: "tool",
          tool_call_id: c.id,
          content: JSON.stringify({ status: "interrupted", tool: c.name, error: INTERRUPTED_CALL_ERROR }),
        }))
      : open.map((c) => ({ role: "tool", tool_call_id: c.id, content: JSON.stringify({ status: "cancelled", tool: c.name, error }) }));
    if (answers.length > 0) {
      drafts.push({ ...base, sequence: ++seq, type: "messages_appended", data: { run_id: run.run_id, messages: answers } });
    }
    const usage = new UsageAccumulator();
    let turns = 0;
    for (const m of messages) {
      if (m.role !== "assistant") continue;
      turns++;
      usage.beginRequest();
      usage.record(storedUsage(m.usage));
    }
    const waiting = resumable.filter((id) => approvals.get(id)?.decision === null);
    const result: AgentRunResult = suspend
      ? {
          status: "suspended",
          stop_reason: "awaiting_approval",
          turns,
          output: null,
          error:
            `${error}; it waits to be resumed` +
            (waiting.length > 0 ? ` (${waiting.length} tool call(s) await approval: ${waiting.join(", ")})` : "") +
            (interrupted.length > 0
              ? ` (${interrupted.length} call(s) interrupted, outcome unknown: ${interrupted.map((c) => c.id).join(", ")})`
              : ""),
          usage: usage.snapshot(),
        }
      : { status: "cancelled", stop_reason: "external_abort", turns, output: null, error, usage: usage.snapshot() };
    drafts.push({ ...base, sequence: ++seq, type: "run_finished", data: { run_id: run.run_id, result } });
    out.push({
      run_id: run.run_id,
      drafts,
      cancelled: cancelled.map((c) => c.id),
      interrupted: suspend ? interrupted.map((c) => c.id) : [],
      resumable,
      result,
    });
  }
  return out;
}

/**
 * The result each unfinished run of `session` (a branch's projection) would
 * be closed with by a recovery with these options, computed without writing
 * anything: what a front end decides on before it lets an operation recover
 * the branch (a refused operation must leave the journal as it was). Runs
 * in journal order; empty when every run has finished.
 */
export function previewRecovery(
  session: AgentSession,
  options: Pick<RecoverOptions, "reason" | "toolEffect" | "resumable"> = {},
): { run_id: string; result: AgentRunResult }[] {
  return interruptedRunDrafts(new Projection(session), "main", options.reason, options.toolEffect, options.resumable === true).map((r) => ({
    run_id: r.run_id,
    result: r.result,
  }));
}

/** The recovery of a session branch as messages word it (the installed {@link wordRemedy} wording). */
export function recoverCommand(sessionId: string, branchId = "main"): string {
  return wordRemedy({ action: "recover", session_id: sessionId, branch_id: branchId, force: false });
}
