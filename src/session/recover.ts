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
import type { Projection, SessionRecordDraft } from "./types.ts";

/** The `error` of a recovered run's result (a reason may be appended). */
export const INTERRUPTED_RUN_ERROR = "run interrupted: its process ended before the run finished";

/** One run closed by a recovery. */
export interface RecoveredRun {
  run_id: string;
  /** Ids of the tool calls answered as cancelled. */
  cancelled_tool_calls: string[];
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
): { run_id: string; drafts: SessionRecordDraft[]; cancelled: string[]; result: AgentRunResult }[] {
  const s = p.session;
  const out = [];
  const error = reason === undefined || reason.trim() === "" ? INTERRUPTED_RUN_ERROR : `${INTERRUPTED_RUN_ERROR} (${reason.trim()})`;
  for (const run of s.runs) {
    if (run.result !== null) continue;
    const messages = s.entries.filter((e) => e.run_id === run.run_id).map((e) => e.message);
    let seq = Math.max(p.lastSeq.get(run.run_id) ?? run.start_sequence, run.start_sequence);
    const base = { session_id: s.session_id, agent_id: s.agent_id, branch_id: branchId };
    const drafts: SessionRecordDraft[] = [];
    const open = unansweredToolCalls(messages);
    if (open.length > 0) {
      const answers = open.map((c) => ({
        role: "tool",
        tool_call_id: c.id,
        content: JSON.stringify({ status: "cancelled", tool: c.name, error }),
      }));
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
    const result: AgentRunResult = {
      status: "cancelled",
      stop_reason: "external_abort",
      turns,
      output: null,
      error,
      usage: usage.snapshot(),
    };
    drafts.push({ ...base, sequence: ++seq, type: "run_finished", data: { run_id: run.run_id, result } });
    out.push({ run_id: run.run_id, drafts, cancelled: open.map((c) => c.id), result });
  }
  return out;
}

/** The recovery of a session branch as messages word it (the installed {@link wordRemedy} wording). */
export function recoverCommand(sessionId: string, branchId = "main"): string {
  return wordRemedy({ action: "recover", session_id: sessionId, branch_id: branchId, force: false });
}
