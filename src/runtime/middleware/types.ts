/**
 * The tool middleware contract: functions that wrap every tool call, on every
 * path a call can take (CLI `execute`/`run`, the agent loop, later the daemon
 * and MCP).
 *
 * Middleware run in order, the first one outermost:
 * `first:before, second:before, handler, second:after, first:after`. Each one
 * receives the call's context and `next`; it may
 * - call `next(ctx)` (optionally with transformed arguments) and return or
 *   adjust its outcome, or
 * - short-circuit: return an outcome without calling `next` (the handler and
 *   every later middleware are then skipped).
 *
 * A middleware must not throw for an expected refusal: it returns an outcome.
 * A throw is turned into a `TOOL_ERROR` envelope by the dispatcher.
 *
 * @module
 */
import type { ToolControl } from "../../tools/definition.ts";
import type { RegisteredTool } from "../../tools/registry.ts";
import type { Envelope } from "../../core/envelope.ts";
import type { ToolEffect } from "../../tools/definition.ts";

/** Where a call comes from when the agent loop runs it. */
export interface RunInfo {
  readonly agentId: string;
  readonly runId: string;
  readonly turn: number;
}

/** What an approver is asked. */
export interface ToolApprovalRequest {
  readonly tool: string;
  readonly effect: ToolEffect;
  /** A deep-frozen copy of the call's arguments. */
  readonly arguments: Readonly<Record<string, unknown>>;
  readonly toolCallId: string | null;
  /** The matching rule's reason, if any. */
  readonly reason: string | null;
  /** The matching rule's id, or null for the default action. */
  readonly ruleId: string | null;
  /** Present when the call comes from the agent loop. */
  readonly run?: RunInfo;
}

/** An approver's answer. */
export interface ToolApprovalDecision {
  approved: boolean;
  reason?: string;
  /** Who answered (`terminal`, `approve_all`, `client`, …), journaled with the decision; default `approver`. */
  decidedBy?: string;
}

/**
 * How the caller (the agent loop) takes part in a call's approval; absent
 * elsewhere, where the approver decides alone. The policy middleware awaits
 * `requested` before anyone is asked (the agent journals the request there),
 * and `decided` once the approver answered.
 */
export interface ApprovalHooks {
  requested?(request: ToolApprovalRequest, suspended: boolean): Promise<void>;
  decided?(request: ToolApprovalRequest, decision: { approved: boolean; reason: string | null; decidedBy: string }): Promise<void>;
  /** Ask nobody: the call is answered `AWAITING_APPROVAL` (not run), after `requested`. */
  suspend?: boolean;
  /** An answer given earlier (a resumed run): used instead of asking, and not announced again. */
  given?: ToolApprovalDecision;
}

/** The envelope error code of a call left waiting for an approval (`ApprovalHooks.suspend`). */
export const AWAITING_APPROVAL = "AWAITING_APPROVAL";

/** Whether a call was allowed to run, and who decided. Set by the policy middleware. */
export interface CallDecision {
  action: "allow" | "deny" | "require_approval";
  /** Who decided: `rule:<id>`, `default`, `approver`, `approve_all`, or a middleware's own name. */
  by: string;
  /** For `require_approval`: the approver's answer (absent when none was given). */
  approved?: boolean;
  /** A short reason, never containing argument values. */
  reason?: string;
}

/** What every middleware sees of one call. */
export interface ToolCallContext {
  /** The tool's registered name. */
  readonly tool: string;
  /** The registered definition (name, effect, schema, timeout, compiled validator). */
  readonly definition: RegisteredTool;
  /** The parsed arguments; a middleware may replace them before calling `next`. */
  arguments: Record<string, unknown>;
  /** The model's or caller's call id. */
  readonly toolCallId: string | null;
  /** Fires on timeout or cancellation of the call. */
  readonly signal: AbortSignal;
  /** Report progress (forwarded to the agent as `tool_progressed`; a no-op elsewhere). */
  progress(message: string, data?: unknown): void;
  /** Present when the call comes from the agent loop. */
  readonly run?: RunInfo;
  /** Filled in by the policy middleware; read by audit/history. */
  decision?: CallDecision;
  /** The caller's part in the call's approval (the agent loop's journal, suspend, an earlier answer). */
  readonly approval?: ApprovalHooks;
}

/** The outcome of one call through the chain: its envelope and its control. */
export interface ToolCallOutcome {
  envelope: Envelope;
  /** `continue` unless the handler or a middleware ends the agent run (`reject` for a policy refusal). */
  control: ToolControl;
}

/** One middleware. */
export type ToolMiddleware = (ctx: ToolCallContext, next: (ctx: ToolCallContext) => Promise<ToolCallOutcome>) => Promise<ToolCallOutcome>;
