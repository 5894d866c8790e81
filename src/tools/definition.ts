/**
 * What a tool is: its name, contract (JSON Schema parameters), effect and
 * handler, plus the context a handler runs with and the error type a handler
 * throws to report a specific error code.
 *
 * @example
 * ```ts
 * const add: ToolDefinition<{ a: number; b: number }> = {
 *   name: "add",
 *   description: "Add two numbers",
 *   parameters: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] },
 *   effect: "read_only",
 *   handler: ({ a, b }) => a + b,
 * };
 * ```
 *
 * @module
 */
import { AgentcoreError } from "../core/errors.ts";
import type { ErrorCode } from "../core/envelope.ts";
import type { Logger } from "../core/logger.ts";

/** `read_only` tools observe; `side_effecting` tools (the default) may change the world. */
export type ToolEffect = "read_only" | "side_effecting";

/** Tool names: 1 to 64 characters of ASCII letters, digits, `_` and `-`. */
export const TOOL_NAME_PATTERN: RegExp = /^[A-Za-z0-9_-]{1,64}$/;

/** A JSON Schema object describing a tool's `arguments`. */
export type JsonSchema = Record<string, unknown>;

/** What a handler receives besides its (already validated) arguments. */
export interface ToolContext {
  /** The call's id, or `null` when the call carried none. */
  readonly callId: string | null;
  /** The tool's registered name. */
  readonly tool: string;
  /**
   * Fires when the call times out (`reason` is a `TimeoutError` DOMException)
   * or the caller cancels it. Handlers doing I/O should pass it on.
   */
  readonly signal: AbortSignal;
  /** The runtime's logger (writes to stderr, never stdout). */
  readonly logger: Logger;
  /**
   * Report progress of a long-running call (`message` must be non-empty;
   * `data` should be JSON-serialisable). Inside an agent run each report
   * becomes a `tool_progressed` event (never stored in the conversation);
   * reports made after the call has settled are ignored. Outside an agent
   * (plain `dispatch`) it is a no-op. Never throws.
   */
  progress(message: string, data?: unknown): void;
}

/**
 * How a tool result steers an agent run: `continue` (the default) lets the
 * model see the result and go on; `complete`, `reject` and `cancel` end the
 * run with that outcome.
 */
export type ToolControl = "continue" | "complete" | "reject" | "cancel";

export const TOOL_CONTROLS: readonly ToolControl[] = ["continue", "complete", "reject", "cancel"];

const OUTCOME_BRAND: unique symbol = Symbol.for("agentcore.toolOutcome");

/** A handler's result that carries a {@link ToolControl} besides its data. Build it with {@link toolOutcome}. */
export interface ToolOutcome<T = unknown> {
  readonly [OUTCOME_BRAND]: true;
  readonly data: T;
  readonly control: ToolControl;
}

/**
 * Wrap a handler's result with a control for the agent loop. Dispatch unwraps
 * it: the envelope's `result` is `data` exactly as if the handler had returned
 * it, and the control is reported only to callers that ask for it (the agent).
 *
 * @example
 * ```ts
 * handler: ({ answer }) => toolOutcome({ answer }, { control: "complete" })
 * ```
 */
export function toolOutcome<T>(data: T, options: { control?: ToolControl } = {}): ToolOutcome<T> {
  const control = options.control ?? "continue";
  if (!TOOL_CONTROLS.includes(control)) {
    throw new TypeError(`toolOutcome: control must be one of ${TOOL_CONTROLS.join(", ")}, got ${JSON.stringify(control)}`);
  }
  return Object.freeze({ [OUTCOME_BRAND]: true as const, data, control });
}

/** Whether `value` was made by {@link toolOutcome} (from any copy of agentcore). */
export function isToolOutcome(value: unknown): value is ToolOutcome {
  return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[OUTCOME_BRAND] === true;
}

/**
 * A tool. The registry copies these fields at registration, so mutating the
 * object afterwards has no effect on the registered tool.
 */
export interface ToolDefinition<A = Record<string, unknown>> {
  /** Must match {@link TOOL_NAME_PATTERN}. */
  name: string;
  description: string;
  /** JSON Schema for `arguments`; draft 2020-12 unless `$schema` says draft-07. */
  parameters: JsonSchema;
  /** Defaults to `"side_effecting"`. */
  effect?: ToolEffect;
  /**
   * When true, top-level argument members not listed in `parameters.properties`
   * are rejected even if the schema itself would allow them.
   */
  strict?: boolean;
  /** Per-call timeout for this tool; defaults to the runtime's `defaultTimeoutMs`. */
  timeoutMs?: number;
  /**
   * Runs the tool. May return a value or a Promise. Throw a {@link ToolError}
   * to fail with a specific code; any other throw becomes `TOOL_ERROR`.
   * The returned value must be JSON-serialisable; it becomes `result`.
   */
  handler(args: A, ctx: ToolContext): unknown | Promise<unknown>;
}

/** A tool definition with any argument type (for lists of heterogeneous tools). */
export type AnyToolDefinition = ToolDefinition<never>;

/**
 * Thrown by handlers to fail a call with a specific error code. `message` and
 * `details` end up in the envelope verbatim, so never put secrets in them.
 */
export class ToolError extends AgentcoreError {
  readonly code: ErrorCode;
  readonly details: Record<string, unknown>;

  constructor(code: ErrorCode, message: string, details: Record<string, unknown> = {}) {
    super(message);
    this.name = "ToolError";
    this.code = code;
    this.details = details;
  }
}
