/**
 * Wire enums, results, usage and the run policy of the agent.
 *
 * Enum values are the wire strings of the harness contracts; each has a
 * readonly array of its values for validation and documentation.
 *
 * @module
 */
import { AgentcoreError } from "../core/errors.ts";
import type { AgentRunResult, ControlInput, StopReason } from "../providers/run.ts";

export type { ToolControl } from "../tools/definition.ts";
// The conversation's and the run's wire types live in src/providers/ (messages.ts,
// run.ts), below context and session, which use them too; the agent re-exports them.
export type { AgentMessage, ToolMessage } from "../providers/messages.ts";
export type { AgentRunResult, ControlInput, ControlInputKind, RunStatus, RunUsage, StopReason, ToolCallResult } from "../providers/run.ts";
export { emptyUsage, RUN_STATUSES, STOP_REASONS, UsageAccumulator } from "../providers/run.ts";

/**
 * Stop reasons after which `continueRun()` is allowed. `max_tokens` is one (the
 * model can go on from where it was cut off); `content_filter` is not (the
 * same context would be filtered again). `output_invalid` is one (the history
 * ends with the model's answer; a continue with a schema asks again).
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
  "output_invalid",
]);

/** The agent's coarse state: `running` while a run is active, else the last run's status (or `idle`). */
export type AgentStatus = "idle" | "running" | "completed" | "failed" | "cancelled" | "rejected" | "suspended";

export type ControlStatus = "accepted" | "agent_idle" | "queue_full" | "run_closing";
export type FollowUpFailurePolicy = "discard" | "continue";
export type FollowUpDiscardReason = "previous_run_not_completed" | "agent_shutdown";
export type ContinueRejectedReason =
  | "agent_active"
  | "agent_shutting_down"
  | "no_previous_run"
  | "unsupported_stop_reason"
  | "incomplete_tool_state"
  | "not_suspended";

/** `continue` lets the run go on; `stop` ends it as `completed` / `behavior_stop`. */
export type BehaviorAction = "continue" | "stop";

/** Whether a run ended `completed`. */
export function runSucceeded(result: AgentRunResult): boolean {
  return result.status === "completed";
}

/** Thrown by {@link assertRunSucceeded}; carries the result. */
export class AgentRunError extends AgentcoreError {
  readonly code: string = "AGENT_RUN_NOT_COMPLETED";
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

/** What `steer()` and `followUp()` answer right away. */
export interface ControlReceipt {
  control: ControlInput;
  status: ControlStatus;
  queue_size: number;
}

// ---------------------------------------------------------------------------
// Errors

/** Thrown by `continueRun()`; `reason` says why. */
export class ContinueRejectedError extends AgentcoreError {
  readonly code: string = "AGENT_CONTINUE_REJECTED";
  override name = "ContinueRejectedError";
  constructor(readonly reason: ContinueRejectedReason) {
    super(`continue run was rejected: ${reason}`);
  }
}

/** `FollowUpHandle.wait()` rejects with this when the follow-up was not accepted. */
export class FollowUpRejectedError extends AgentcoreError {
  readonly code: string = "AGENT_FOLLOW_UP_REJECTED";
  override name = "FollowUpRejectedError";
  constructor(readonly receipt: ControlReceipt) {
    super(`follow-up was not accepted: ${receipt.status}`);
  }
}

/** `FollowUpHandle.wait()` rejects with this when an accepted follow-up was dropped before it ran. */
export class FollowUpDiscardedError extends AgentcoreError {
  readonly code: string = "AGENT_FOLLOW_UP_DISCARDED";
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
