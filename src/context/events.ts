/**
 * The agent's event protocol: payloads by kind, the envelope, the source a
 * sink is given, and the sink. Types and the list of kinds only; the emitter
 * and subscriptions are the agent's (`src/agent/events.ts`, which re-exports
 * all of this).
 *
 * It lives in the context layer because that is the highest layer below the
 * session recorder, which consumes these events, and its compaction payloads
 * are this layer's records (issue 14: one-way layers).
 *
 * @module
 */
import type { JsonError } from "../core/errors.ts";
import type { AssistantMessage, ModelToolCall, ModelUsage } from "../providers/types.ts";
import type { AgentMessage } from "../providers/messages.ts";
import type { ImageAttachment } from "../providers/images.ts";
import type { AgentRunResult, ControlInput, StopReason, ToolCallResult } from "../providers/run.ts";
import type { CompactionDecision, CompactionPreparation, CompactionRequest, CompactionResult } from "./types.ts";

/** A `ctx.progress()` report of a running tool. */
export interface ToolProgressUpdate {
  message: string;
  data: unknown;
}

/**
 * A project instructions file (AGENTS.md) read into the run's system prompt:
 * its path relative to the workspace root, its size in bytes and the SHA-256
 * of its content (hex); `truncated` when the size limit cut it.
 */
export interface InstructionFile {
  path: string;
  bytes: number;
  sha256: string;
  truncated?: boolean;
}

/** Event payloads by kind (snake_case fields, as on the wire). */
export type AgentEventPayload =
  /** `images`: the task's images (with their bytes), when it has any; `instructions`: the AGENTS.md files in the system prompt, when any. */
  | { kind: "agent_started"; task: string; images?: ImageAttachment[]; instructions?: InstructionFile[] }
  | { kind: "agent_continued" }
  | { kind: "turn_started"; turn: number }
  | { kind: "steering_applied"; control: ControlInput; target_turn: number }
  | { kind: "steering_discarded"; control: ControlInput; reason: StopReason }
  /** A `$name` / `skill:name` mention in the latest user message made a skill active (at run start or after steering). */
  | { kind: "skill_activated"; name: string; path: string; trigger: "run_start" | "steering" }
  /** Every pressure evaluation; `preparation` only when `decision.should_compact`. */
  | { kind: "context_pressure_evaluated"; turn: number; decision: CompactionDecision; preparation: CompactionPreparation | null }
  | { kind: "compaction_started"; request: CompactionRequest }
  /** `result.status` is `completed` or `skipped`. */
  | { kind: "compaction_completed"; result: CompactionResult }
  /** `result.status` is `failed` or `cancelled`; the history is unchanged. */
  | { kind: "compaction_failed"; result: CompactionResult }
  | { kind: "message_completed"; turn: number; message: AssistantMessage; usage: ModelUsage | null }
  | { kind: "assistant_text_delta"; turn: number; delta: string }
  | { kind: "assistant_thinking_delta"; turn: number; delta: string }
  /**
   * A piece of a tool call's arguments as the model streams them (never
   * journaled). `index` is the call's position in the answer; `tool` is its
   * name as far as known (`""` before the name arrived). `error`: the
   * incremental validator's verdict once the text can no longer become valid
   * JSON (code, message, byte `offset` of the first impossible byte, line,
   * column), on that piece and every later one of the call.
   */
  | { kind: "tool_call_arguments_delta"; turn: number; index: number; tool_call_id: string; tool: string; delta: string; error?: JsonError }
  /**
   * The final answer did not match the run's output schema: the agent adds a
   * user message (`message`, journaled) naming the problems and asks once
   * more. `errors` are JSON Pointer paths into the answer, or the parse error.
   */
  | { kind: "output_repair_requested"; turn: number; errors: OutputError[]; message: string }
  | { kind: "tool_started"; turn: number; tool_call: ModelToolCall }
  | { kind: "tool_progressed"; turn: number; tool_call: ModelToolCall; update: ToolProgressUpdate }
  | { kind: "tool_completed"; turn: number; tool_call: ModelToolCall; result: ToolCallResult }
  /**
   * A call needs an approval, before anyone is asked (a session journals it
   * first). `arguments` is a redacted preview; `suspended`: nobody is asked,
   * the run ends `awaiting_approval` once the turn's other calls settle.
   */
  | { kind: "tool_approval_requested"; turn: number; tool_call: ModelToolCall; request: ApprovalRequestInfo; suspended: boolean }
  /** The answer to a `tool_approval_requested` (in process; a suspended one is answered in the journal). */
  | { kind: "tool_approval_decided"; turn: number; tool_call_id: string; approved: boolean; reason: string | null; decided_by: string }
  | { kind: "turn_completed"; turn: number }
  | { kind: "agent_finished"; result: AgentRunResult };

export type AgentEventKind = AgentEventPayload["kind"];

export const AGENT_EVENT_KINDS: readonly AgentEventKind[] = [
  "agent_started",
  "agent_continued",
  "turn_started",
  "steering_applied",
  "steering_discarded",
  "skill_activated",
  "context_pressure_evaluated",
  "compaction_started",
  "compaction_completed",
  "compaction_failed",
  "message_completed",
  "assistant_text_delta",
  "assistant_thinking_delta",
  "tool_call_arguments_delta",
  "output_repair_requested",
  "tool_started",
  "tool_progressed",
  "tool_completed",
  "tool_approval_requested",
  "tool_approval_decided",
  "turn_completed",
  "agent_finished",
];

/**
 * One problem with a structured answer: a JSON Pointer (`""` is the whole
 * answer) and what is wrong there; keyword `json` when the answer is not one
 * JSON document (then `offset` is the byte of the parse error).
 */
export interface OutputError {
  path: string;
  keyword: string;
  message: string;
  offset?: number;
}

/** What an approval request says about its call (snake_case, as journaled). */
export interface ApprovalRequestInfo {
  tool: string;
  effect: "read_only" | "side_effecting";
  rule_id: string | null;
  reason: string | null;
  /** A redacted preview of the arguments (secret-looking keys replaced, long strings clipped). */
  arguments: unknown;
}

/** The envelope: correlation fields, then the payload's fields. Frozen. */
export type AgentEvent = Readonly<{ agent_id: string; run_id: string; sequence: number } & AgentEventPayload>;

/**
 * What a sink may read of the agent whose event it handles (a sink's second
 * argument), e.g. the conversation after a compaction, which the event does
 * not carry.
 */
export interface AgentEventSource {
  /** A copy of the agent's conversation at delivery (without system prompts), as `agent.messages`. */
  readonly messages: AgentMessage[];
}

/**
 * An event sink: a function, or an object with `handle`. Both may be async;
 * they are awaited in order. The second argument reads the emitting agent.
 * An object may also have `handleMany`: the agent then hands it the events
 * that are ready together as one group, in order (a `SessionRecorder`
 * journals a group with one write and one fsync), and the sinks after it see
 * each of those events only once it returns.
 *
 * A sink whose `required` is true is part of the run (a `SessionRecorder`:
 * writing the run's records): when it fails, the event reaches no later
 * sink, the run stops there and ends `failed` / `store_failed` with the
 * error's code. Other sinks' failures are logged and ignored.
 */
export type AgentEventSink =
  | ((event: AgentEvent, source: AgentEventSource) => void | Promise<void>)
  | {
      handle(event: AgentEvent, source: AgentEventSource): void | Promise<void>;
      handleMany?(events: readonly AgentEvent[], source: AgentEventSource): void | Promise<void>;
      /** A failure of this sink stops the run (see above). */
      readonly required?: boolean;
    };
