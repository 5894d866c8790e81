/**
 * Wire enums, results, usage and the run policy of the agent.
 *
 * Enum values are the wire strings of the harness contracts; each has a
 * readonly array of its values for validation and documentation.
 *
 * @module
 */
import type { ModelUsage } from "../providers/types.ts";
import type { ToolControl } from "../tools/definition.ts";
import type { SummaryEntry } from "../context/types.ts";

export type { ToolControl } from "../tools/definition.ts";

/** How a run ended. */
export type RunStatus = "completed" | "failed" | "cancelled" | "rejected";
export const RUN_STATUSES: readonly RunStatus[] = ["completed", "failed", "cancelled", "rejected"];

/**
 * Why a run ended: the legacy list, in its order, with two of our own after
 * `empty_response`: `max_tokens` (the model's answer was cut off at its
 * output-token limit, finish_reason `length`) and `content_filter` (the
 * provider's filter stopped the answer).
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
  | "runtime_error";
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
];

/**
 * Stop reasons after which `continueRun()` is allowed. `max_tokens` is one (the
 * model can go on from where it was cut off); `content_filter` is not (the
 * same context would be filtered again).
 */
export const CONTINUABLE_STOP_REASONS: ReadonlySet<StopReason> = new Set<StopReason>([
  "text_response",
  "tool_completion",
  "behavior_stop",
  "empty_response",
  "max_tokens",
  "max_steps",
  "max_no_tool_responses",
  "token_budget_exceeded",
  "usage_unavailable",
]);

/** The agent's coarse state: `running` while a run is active, else the last run's status (or `idle`). */
export type AgentStatus = "idle" | "running" | "completed" | "failed" | "cancelled" | "rejected";

export type ControlInputKind = "steering" | "follow_up";
export type ControlStatus = "accepted" | "agent_idle" | "queue_full" | "run_closing";
export type FollowUpFailurePolicy = "discard" | "continue";
export type FollowUpDiscardReason = "previous_run_not_completed" | "agent_shutdown";
export type ContinueRejectedReason =
  | "agent_active"
  | "agent_shutting_down"
  | "no_previous_run"
  | "unsupported_stop_reason"
  | "incomplete_tool_state";

/** `continue` lets the run go on; `stop` ends it as `completed` / `behavior_stop`. */
export type BehaviorAction = "continue" | "stop";

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
  error: string | null;
  usage: RunUsage;
}

/** Whether a run ended `completed`. */
export function runSucceeded(result: AgentRunResult): boolean {
  return result.status === "completed";
}

/** Thrown by {@link assertRunSucceeded}; carries the result. */
export class AgentRunError extends Error {
  override name = "AgentRunError";
  constructor(readonly result: AgentRunResult) {
    super(`agent run ${result.status} (${result.stop_reason})${result.error ? `: ${result.error}` : ""}`);
  }
}

/** Return `result` when it completed, else throw {@link AgentRunError}. */
export function assertRunSucceeded(result: AgentRunResult): AgentRunResult {
  if (!runSucceeded(result)) throw new AgentRunError(result);
  return result;
}

/** A steering or follow-up input. */
export interface ControlInput {
  input_id: string;
  kind: ControlInputKind;
  content: string;
}

/** What `steer()` and `followUp()` answer right away. */
export interface ControlReceipt {
  control: ControlInput;
  status: ControlStatus;
  queue_size: number;
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

/** A tool result message in the chat wire shape. */
export interface ToolMessage {
  role: "tool";
  tool_call_id: string;
  content: string;
}

/** A conversation message as the agent stores it: assistant messages keep their `usage` when reported. */
export type AgentMessage =
  | { role: "system"; content: string; /** Set on compaction summary messages; never sent to a model. */ _agentcore_summary?: SummaryEntry }
  | { role: "user"; content: string }
  | {
    role: "assistant";
    content: string | null;
    tool_calls?: { id: string; type: "function"; function: { name: string; arguments: string } }[];
    usage?: ModelUsage;
  }
  | ToolMessage;

// ---------------------------------------------------------------------------
// Errors

/** Thrown by `continueRun()`; `reason` says why. */
export class ContinueRejectedError extends Error {
  override name = "ContinueRejectedError";
  constructor(readonly reason: ContinueRejectedReason) {
    super(`continue run was rejected: ${reason}`);
  }
}

/** `FollowUpHandle.wait()` rejects with this when the follow-up was not accepted. */
export class FollowUpRejectedError extends Error {
  override name = "FollowUpRejectedError";
  constructor(readonly receipt: ControlReceipt) {
    super(`follow-up was not accepted: ${receipt.status}`);
  }
}

/** `FollowUpHandle.wait()` rejects with this when an accepted follow-up was dropped before it ran. */
export class FollowUpDiscardedError extends Error {
  override name = "FollowUpDiscardedError";
  constructor(readonly reason: FollowUpDiscardReason) {
    super(`follow-up was discarded: ${reason}`);
  }
}

// ---------------------------------------------------------------------------
// Policy

/** Options of {@link resolvePolicy} (camelCase of the seed's RuntimePolicy). */
export interface RuntimePolicyOptions {
  /** Model turns per run. Default 20. */
  maxSteps?: number;
  /** Consecutive plain-text answers tolerated in explicit-finish mode. Default 3. */
  maxNoToolResponses?: number;
  /** The Nth consecutive identical tool call fails the run before executing. Default 3. */
  maxRepeatedToolCalls?: number;
  /** Token budget of a run (checked before each model request); null = none. Default null. */
  maxRunTokens?: number | null;
  /** A run only ends through a tool control; plain text gets a retry note. Default false. */
  requireExplicitFinish?: boolean;
  /** Run contiguous read-only tool calls concurrently. Default false. */
  parallelToolCalls?: boolean;
  /** Chunk size of parallel batches; null = whole batch. Default null. */
  maxParallelToolCalls?: number | null;
}

/** A validated, frozen policy. */
export type RuntimePolicy = Readonly<Required<RuntimePolicyOptions>>;

export const DEFAULT_POLICY: RuntimePolicy = Object.freeze({
  maxSteps: 20,
  maxNoToolResponses: 3,
  maxRepeatedToolCalls: 3,
  maxRunTokens: null,
  requireExplicitFinish: false,
  parallelToolCalls: false,
  maxParallelToolCalls: null,
});

const POLICY_KEYS = new Set(Object.keys(DEFAULT_POLICY));

function positiveInt(name: string, v: unknown, nullable: boolean): void {
  if (v === null && nullable) return;
  if (typeof v !== "number") {
    throw new TypeError(`policy.${name} must be a positive integer${nullable ? " or null" : ""}, got ${v === null ? "null" : typeof v}`);
  }
  if (!Number.isSafeInteger(v) || v <= 0) throw new RangeError(`policy.${name} must be a positive integer, got ${v}`);
}

function bool(name: string, v: unknown): void {
  if (typeof v !== "boolean") throw new TypeError(`policy.${name} must be a boolean, got ${v === null ? "null" : typeof v}`);
}

/** Fill in defaults and validate. Throws TypeError/RangeError naming the field. */
export function resolvePolicy(options: RuntimePolicyOptions = {}): RuntimePolicy {
  if (typeof options !== "object" || options === null) throw new TypeError("policy must be an object");
  for (const k of Object.keys(options)) {
    if (!POLICY_KEYS.has(k)) throw new TypeError(`unknown policy field "${k}"`);
  }
  const p = { ...DEFAULT_POLICY } as Required<RuntimePolicyOptions>;
  for (const [k, v] of Object.entries(options)) if (v !== undefined) (p as Record<string, unknown>)[k] = v;
  positiveInt("maxSteps", p.maxSteps, false);
  positiveInt("maxNoToolResponses", p.maxNoToolResponses, false);
  positiveInt("maxRepeatedToolCalls", p.maxRepeatedToolCalls, false);
  positiveInt("maxRunTokens", p.maxRunTokens, true);
  bool("requireExplicitFinish", p.requireExplicitFinish);
  bool("parallelToolCalls", p.parallelToolCalls);
  positiveInt("maxParallelToolCalls", p.maxParallelToolCalls, true);
  return Object.freeze(p);
}

// ---------------------------------------------------------------------------
// Usage

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
