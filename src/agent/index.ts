/**
 * Public API of the agent: the run loop, run control, events and results.
 *
 * ```ts
 * import { createAgent } from "./src/agent/index.ts";
 * import { createRuntime } from "./src/runtime/index.ts";
 * import { ScriptedModel } from "./src/providers/scripted.ts";
 *
 * const agent = createAgent({
 *   model: new ScriptedModel([{ content: "hi" }]),
 *   runtime: createRuntime(),            // or `tools: [...]` for a runtime without built-ins
 *   policy: { maxSteps: 10, maxRunTokens: 50_000 },
 *   sinks: [(e) => console.error(e.sequence, e.kind)],
 * });
 * const result = await agent.run("say hi"); // { status, stop_reason, turns, output, error, usage }
 * ```
 *
 * Design notes:
 * - **Tool controls.** A handler returns `toolOutcome(data, { control })`
 *   (from `src/tools`). Dispatch unwraps it, so the envelope's `result` is
 *   `data` (CLI output unchanged), and reports the control through the
 *   optional `CallHooks.onControl` of `Runtime.dispatchCall(call, signal, hooks)`.
 *   The agent passes hooks; plain dispatch does not.
 * - **Progress.** `ctx.progress(message, data?)` forwards to
 *   `CallHooks.onProgress` while the call is open (no-op outside the agent,
 *   dropped after the call settles); the agent turns each report into a
 *   `tool_progressed` event ordered before the call's `tool_completed`.
 * - **Arguments** are parsed once with the strict core; every failure (invalid
 *   JSON, duplicate key, non-object, empty text, unknown tool, schema errors,
 *   handler errors, timeouts) becomes a tool message
 *   `{"status":"error","tool":…,"code":…,"error":…}` and the run goes on.
 * - **Events** are delivered in one order per agent; sinks are awaited in
 *   order and a throwing sink is logged (warn) and ignored. `events()` never
 *   blocks the run: a subscriber that falls `bufferSize` events behind gets
 *   what was buffered, then an `EventBufferOverflowError`.
 * - **Context and compaction.** With `compaction: { policy, compactor }` the
 *   agent evaluates context pressure before every model request
 *   (`context_pressure_evaluated`), compacts automatically when the policy's
 *   threshold is reached, and after a `context_overflow` error that came
 *   before any delta compacts and retries the request once. `compact()`
 *   compacts on demand in its own event run. Summaries are system messages
 *   carrying `_agentcore_summary` metadata, which (like `usage`) never
 *   reaches a model. See `src/context`.
 * - **Skills.** With `skills` (a `SkillCatalog` from `discoverSkills`), every request
 *   carries the skills index right after the leading system messages, and
 *   the active skill's files after it; `$name` / `skill:name` in the latest
 *   user message activates one at run start and after steering
 *   (`skill_activated`). Request-only: never in the history. See `src/skills`.
 * - **Serialisation.** `run()`/`continueRun()` on one agent queue behind each
 *   other; follow-ups accepted during a run are drained before the next queued
 *   run starts.
 *
 * @module
 */
export { Agent, compileOutputSchema, createAgent, DEFAULT_ABORT_REASON, DEFAULT_QUEUE_CAPACITY } from "./agent.ts";
export type {
  AgentHooks,
  AgentOptions,
  AutoCompactionOptions,
  BehaviorDecision,
  CompactionOptions,
  FollowUpHandle,
  RunOptions,
  TurnSnapshot,
} from "./agent.ts";
export { AGENT_EVENT_KINDS, DEFAULT_EVENT_BUFFER, EventBufferOverflowError } from "./events.ts";
export { CAPTURE_CONTENT_ENV } from "./tracing.ts";
export type { TracingOptions } from "./tracing.ts";
export type {
  AgentEvent,
  AgentEventKind,
  AgentEventPayload,
  AgentEventSink,
  AgentEventSource,
  EventStreamOptions,
  OutputError,
  ToolProgressUpdate,
} from "./events.ts";
export { SKIPPED_AFTER_TERMINAL } from "./tools.ts";
export type { ResumeDecision } from "./tools.ts";
export { canonicalJson } from "../core/canonical.ts";
export {
  AgentRunError,
  assertRunSucceeded,
  runSucceeded,
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
