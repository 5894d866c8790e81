/**
 * The run's wire contract: how a run ends (status, stop reason), its token
 * usage, its result, control inputs and tool-call outcomes. These are the
 * agent's, but the session layer journals and recovers them, so they live
 * here, below both (issue 14: one-way layers); `src/agent/types.ts`
 * re-exports them.
 *
 * @module
 */
import type { ToolControl } from "../tools/definition.ts";
import type { ModelUsage } from "./types.ts";
import type { ToolMessage } from "./messages.ts";

/** How a run ended. */
export type RunStatus = "completed" | "failed" | "cancelled" | "rejected" | "suspended";
/** `suspended`: the run stopped at a safe boundary to wait for an answer it will not wait for in process (stop reason `awaiting_approval`); resume it later. */
export const RUN_STATUSES: readonly RunStatus[] = ["completed", "failed", "cancelled", "rejected", "suspended"];

/**
 * Why a run ended: the legacy list, in its order, with two of our own after
 * `empty_response`: `max_tokens` (the model's answer was cut off at its
 * output-token limit, finish_reason `length`) and `content_filter` (the
 * provider's filter stopped the answer). Last, `awaiting_approval`: a call
 * needs an approval and the run was told to suspend rather than wait
 * (`suspendOnApproval`); the request is journaled, the turn's other calls
 * settled, and the run resumes once it is answered (status `suspended`).
 * After it, `output_invalid`: the run had an output schema and the final
 * answer still did not match it after one repair turn (status `failed`).
 */
export type StopReason =
  | "text_response"
  | "tool_completion"
  | "tool_rejected"
  | "tool_cancelled"
  | "behavior_stop"
  | "external_abort"
  | "empty_response"
  | "max_tokens"
  | "content_filter"
  | "max_steps"
  | "max_no_tool_responses"
  | "repeated_tool_call"
  | "token_budget_exceeded"
  | "usage_unavailable"
  | "context_overflow"
  | "compaction_failed"
  | "runtime_error"
  | "awaiting_approval"
  | "output_invalid"
  | "store_failed";
export const STOP_REASONS: readonly StopReason[] = [
  "text_response",
  "tool_completion",
  "tool_rejected",
  "tool_cancelled",
  "behavior_stop",
  "external_abort",
  "empty_response",
  "max_tokens",
  "content_filter",
  "max_steps",
  "max_no_tool_responses",
  "repeated_tool_call",
  "token_budget_exceeded",
  "usage_unavailable",
  "context_overflow",
  "compaction_failed",
  "runtime_error",
  "awaiting_approval",
  "output_invalid",
  "store_failed",
];

export type ControlInputKind = "steering" | "follow_up";

/** A steering or follow-up input. */
export interface ControlInput {
  input_id: string;
  kind: ControlInputKind;
  content: string;
}

/**
 * Token usage of a whole run. Unknown is kept distinct from zero: a request
 * without usage is counted in `request_count` but not in
 * `reported_request_count`, and `complete` is false. An optional counter is
 * `null` when no request reported usage, or as soon as one reporting request
 * lacked it.
 */
export interface RunUsage {
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
  cache_read_tokens: number | null;
  cache_write_tokens: number | null;
  reasoning_tokens: number | null;
  request_count: number;
  reported_request_count: number;
  complete: boolean;
}

/** What `run()` / `continueRun()` resolve with (also carried by `agent_finished`). */
export interface AgentRunResult {
  status: RunStatus;
  stop_reason: StopReason;
  /** Turns started in this run. */
  turns: number;
  output: string | null;
  /**
   * A run with an output schema that completed with a matching answer: the
   * answer parsed (strictly) from `output`. Absent otherwise.
   */
  output_value?: unknown;
  error: string | null;
  /**
   * Only on a run that ended `store_failed` (its records could not be
   * written: the run stopped there): the stable code of that error,
   * `STORE_FULL`, `STORE_READONLY`, `STORE_UNAVAILABLE`, or another
   * session error's (`SESSION_CONFLICT`, …). See docs/durability.md.
   */
  error_code?: string;
  usage: RunUsage;
}

/** A tool call's outcome as reported by `tool_completed`. */
export interface ToolCallResult {
  /** The tool messages added to the conversation (empty when the call was refused before execution). */
  messages: ToolMessage[];
  control: ToolControl;
  /** The tool message content, for non-`continue` controls. */
  output: string | null;
  error: string | null;
  cancelled: boolean;
}

/** Aggregates per-request usage into a {@link RunUsage}. */
export class UsageAccumulator {
  #requests = 0;
  #reported = 0;
  #input = 0;
  #output = 0;
  #total = 0;
  // undefined: no report yet; null: some report lacked the field.
  #cacheRead: number | null | undefined = undefined;
  #cacheWrite: number | null | undefined = undefined;
  #reasoning: number | null | undefined = undefined;

  /** Count one model request (attempt), whether or not it reports usage. */
  beginRequest(): void {
    this.#requests++;
  }

  /** Add a request's reported usage; `undefined` means the request reported none. */
  record(usage: ModelUsage | undefined | null): void {
    if (usage === undefined || usage === null) return;
    this.#reported++;
    this.#input += usage.input_tokens;
    this.#output += usage.output_tokens;
    this.#total += usage.total_tokens ?? usage.input_tokens + usage.output_tokens;
    this.#cacheRead = addOptional(this.#cacheRead, usage.cache_read_tokens);
    this.#cacheWrite = addOptional(this.#cacheWrite, usage.cache_write_tokens);
    this.#reasoning = addOptional(this.#reasoning, usage.reasoning_tokens);
  }

  get requestCount(): number {
    return this.#requests;
  }

  snapshot(): RunUsage {
    return {
      input_tokens: this.#input,
      output_tokens: this.#output,
      total_tokens: this.#total,
      cache_read_tokens: this.#cacheRead ?? null,
      cache_write_tokens: this.#cacheWrite ?? null,
      reasoning_tokens: this.#reasoning ?? null,
      request_count: this.#requests,
      reported_request_count: this.#reported,
      complete: this.#reported === this.#requests,
    };
  }
}

function addOptional(acc: number | null | undefined, v: number | undefined): number | null {
  if (acc === null || typeof v !== "number") return null;
  return (acc ?? 0) + v;
}

/** An empty usage record (no requests). */
export function emptyUsage(): RunUsage {
  return new UsageAccumulator().snapshot();
}
