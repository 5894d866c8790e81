/**
 * Public API of the agent: the run loop, run control, events and results.
 *
 * @module
 */
export { Agent, createAgent, DEFAULT_ABORT_REASON, DEFAULT_QUEUE_CAPACITY } from "./agent.ts";
export type { AgentHooks, AgentOptions, BehaviorDecision, FollowUpHandle, TurnSnapshot } from "./agent.ts";
export { AGENT_EVENT_KINDS, DEFAULT_EVENT_BUFFER, EventBufferOverflowError } from "./events.ts";
export type { AgentEvent, AgentEventKind, AgentEventPayload, AgentEventSink, EventStreamOptions, ToolProgressUpdate } from "./events.ts";
export { canonicalJson, SKIPPED_AFTER_TERMINAL } from "./tools.ts";
export {
  CONTINUABLE_STOP_REASONS,
  ContinueRejectedError,
  DEFAULT_POLICY,
  emptyUsage,
  FollowUpDiscardedError,
  FollowUpRejectedError,
  resolvePolicy,
  RUN_STATUSES,
  STOP_REASONS,
  UsageAccumulator,
} from "./types.ts";
export type {
  AgentMessage,
  AgentRunResult,
  AgentStatus,
  BehaviorAction,
  ContinueRejectedReason,
  ControlInput,
  ControlInputKind,
  ControlReceipt,
  ControlStatus,
  FollowUpDiscardReason,
  FollowUpFailurePolicy,
  RunStatus,
  RunUsage,
  RuntimePolicy,
  RuntimePolicyOptions,
  StopReason,
  ToolCallResult,
  ToolControl,
  ToolMessage,
} from "./types.ts";
