/**
 * Tool execution for the agent loop: the provider's verdict on each call's
 * arguments (parsed once, by the provider), the repeat guard, dispatch through the runtime, progress, tool controls,
 * cancellation and opt-in parallel read-only batches.
 *
 * Every tool call of an assistant message gets exactly one tool message,
 * except when the repeat guard refuses a call (the run fails right there) or
 * a terminal control ends the run before later calls.
 *
 * @module
 */
import { AgentcoreError } from "../core/errors.ts";
import { canonicalJson } from "../core/canonical.ts";
import type { ParseResult } from "../core/errors.ts";
import type { ModelToolCall } from "../providers/types.ts";
import { takeResultImages } from "../providers/images.ts";
import type { Envelope } from "../core/envelope.ts";
import type { Runtime } from "../runtime/runtime.ts";
import type { ToolControl } from "../tools/definition.ts";
import { type ApprovalHooks, AWAITING_APPROVAL, type RunInfo, type ToolApprovalRequest } from "../runtime/middleware/types.ts";
import { redactArguments } from "../runtime/middleware/approval.ts";
import { invalidArgumentsPayload } from "../runtime/middleware/validation.ts";
import { rejectionPayload } from "../runtime/middleware/policy.ts";
import type { ArgumentError } from "../tools/schema.ts";
import type { AgentEventPayload, EventEmitter } from "./events.ts";
import type { AgentTracer } from "./tracing.ts";
import type { RuntimePolicy, ToolCallResult, ToolMessage } from "./types.ts";

/** Thrown when the repeat guard refuses a call. */
export class RepeatedToolCallError extends AgentcoreError {
  readonly code: string = "TOOL_CALL_REPEATED";
  override name = "RepeatedToolCallError";
}

/** Thrown (inside the agent) when the run's signal aborted. */
export class AgentCancelledError extends AgentcoreError {
  readonly code: string = "AGENT_CANCELLED";
  override name = "AgentCancelledError";
}

/** Outcome of all calls of one assistant message. */
export interface ToolBatchResult {
  control: ToolControl;
  output: string | null;
  cancelled: boolean;
  /** Ids of the calls left waiting for an approval (suspend): they have no tool message yet. */
  suspended?: string[];
}

/** An answer given to a suspended call's approval, used when the run resumes. */
export interface ResumeDecision {
  approved: boolean;
  reason?: string | null;
  /** The rule that asked (named in a denial's payload). */
  ruleId?: string | null;
}

/** How one batch treats approvals. */
export interface BatchOptions {
  /** Calls that need an approval are not asked for: they wait (suspend) and the run ends `awaiting_approval`. */
  suspendOnApproval?: boolean;
  /** Answers given to suspended calls, by call id (a resumed run): approved ones run, denied ones get the rejection payload. */
  decisions?: ReadonlyMap<string, ResumeDecision>;
}

/** Reason given to the calls skipped after a terminal read-only result. */
export const SKIPPED_AFTER_TERMINAL = "skipped after a terminal read-only tool result";

interface PreparedCall {
  readonly call: ModelToolCall;
  /** The provider's verdict on the arguments (never parsed again here). */
  readonly args: ParseResult;
  /**
   * What the repeat guard compares, with the tool's name: the canonical JSON
   * of the parsed arguments (key order and spacing do not matter), or, for
   * arguments that did not parse, their raw text after a NUL (canonical JSON
   * never starts with one, so the two never match each other).
   */
  readonly signature: string;
}

function prepare(call: ModelToolCall, args: ParseResult): PreparedCall {
  return { call, args, signature: args.ok ? canonicalJson(args.value) : `\u0000${call.arguments}` };
}

/** Consecutive identical calls within a run. */
export class RepeatGuard {
  #lastName: string | undefined;
  #last: string | undefined;
  #count = 0;
  constructor(private readonly max: number) {}

  reset(): void {
    this.#lastName = undefined;
    this.#last = undefined;
    this.#count = 0;
  }

  /** Record a call; returns the refusal message when this call trips the guard. */
  check(p: PreparedCall): string | null {
    if (p.signature === this.#last && p.call.name === this.#lastName) this.#count++;
    else {
      this.#lastName = p.call.name;
      this.#last = p.signature;
      this.#count = 1;
    }
    return this.#count >= this.max ? `tool '${p.call.name}' was called with the same arguments ${this.#count} consecutive times` : null;
  }

  /** Whether recording `calls` in order would trip the guard (state unchanged). */
  wouldTrip(calls: readonly PreparedCall[]): boolean {
    let lastName = this.#lastName;
    let last = this.#last;
    let count = this.#count;
    for (const p of calls) {
      if (p.signature === last && p.call.name === lastName) count++;
      else {
        lastName = p.call.name;
        last = p.signature;
        count = 1;
      }
      if (count >= this.max) return true;
    }
    return false;
  }
}

function describe(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  return typeof v === "object" ? "an object" : `a ${typeof v}`;
}

function errorContent(tool: string, code: string, error: string, extra?: Record<string, unknown>): string {
  return JSON.stringify({ status: "error", tool, code, error, ...extra });
}

/** What one call produced, before it is committed (event + message). */
interface CallOutcome {
  message: ToolMessage;
  result: ToolCallResult;
  /** Left waiting for an approval: no tool message, no tool_completed. */
  suspended?: boolean;
}

/**
 * Runs the tool calls of one turn. One instance per agent; `signal` is the
 * active run's.
 */
export class ToolExecutor {
  readonly guard: RepeatGuard;
  /** The current batch's run info, passed to middleware as `ctx.run`. */
  #runInfo: RunInfo | undefined = undefined;
  /** The current batch's approval options. */
  #batch: BatchOptions = {};
  /** Calls of the current batch left waiting for an approval. */
  #suspended: PreparedCall[] = [];

  constructor(
    private readonly runtime: Runtime,
    private readonly policy: RuntimePolicy,
    private readonly emitter: EventEmitter,
    private readonly append: (m: ToolMessage) => void,
    /** Makes each call's `execute_tool` span the active one while it is dispatched. */
    private readonly tracer: AgentTracer | null = null,
  ) {
    this.guard = new RepeatGuard(policy.maxRepeatedToolCalls);
  }

  #isReadOnly(call: ModelToolCall): boolean {
    return this.runtime.registry.get(call.name)?.effect === "read_only";
  }

  /**
   * Execute every call of an assistant message; `args[i]` is the provider's
   * verdict on `calls[i]`'s arguments. Throws {@link RepeatedToolCallError}
   * when the guard refuses a call.
   */
  async executeAll(
    calls: readonly ModelToolCall[],
    args: readonly ParseResult[],
    turn: number,
    signal: AbortSignal,
    abortReason: () => string,
    run?: RunInfo,
    options: BatchOptions = {},
  ): Promise<ToolBatchResult> {
    this.#runInfo = run;
    this.#batch = options;
    this.#suspended = [];
    const r = await this.#executeAll(calls, args, turn, signal, abortReason);
    const waiting = this.#suspended;
    this.#suspended = [];
    if (waiting.length === 0) return r;
    // Only a run that goes on to its end of turn suspends; otherwise the waiting calls get their answer now.
    if (r.cancelled) await this.#settleCancelled(waiting, turn, abortReason(), false);
    else if (r.control !== "continue")
      await this.settleNotRun(
        waiting.map((p) => p.call),
        turn,
        "not run: the run ended before this call's approval was answered",
        false,
      );
    else r.suspended = waiting.map((p) => p.call.id);
    return r;
  }

  async #executeAll(
    calls: readonly ModelToolCall[],
    args: readonly ParseResult[],
    turn: number,
    signal: AbortSignal,
    abortReason: () => string,
  ): Promise<ToolBatchResult> {
    const prepared: PreparedCall[] = new Array(calls.length);
    for (let k = 0; k < calls.length; k++) prepared[k] = prepare(calls[k]!, args[k]!);
    let i = 0;
    // End of a read-only group that must run one by one (it would trip the repeat guard).
    let sequentialUntil = 0;
    while (i < prepared.length) {
      if (signal.aborted) {
        await this.#settleCancelled(prepared.slice(i), turn, abortReason());
        return { control: "continue", output: null, cancelled: true };
      }
      if (this.policy.parallelToolCalls && i >= sequentialUntil && this.#isReadOnly(prepared[i].call)) {
        let j = i + 1;
        while (j < prepared.length && this.#isReadOnly(prepared[j].call)) j++;
        if (j - i > 1 && this.guard.wouldTrip(prepared.slice(i, j))) sequentialUntil = j;
        else if (j - i > 1) {
          const r = await this.#runGroup(prepared.slice(i, j), turn, signal, abortReason);
          if (r.cancelled) {
            await this.#settleCancelled(prepared.slice(j), turn, abortReason());
            return r;
          }
          if (r.control !== "continue") return r;
          i = j;
          continue;
        }
      }
      const p = prepared[i];
      await this.emitter.emit({ kind: "tool_started", turn, tool_call: p.call });
      const refusal = this.guard.check(p);
      if (refusal !== null) {
        await this.emitter.emit({
          kind: "tool_completed",
          turn,
          tool_call: p.call,
          result: { messages: [], control: "continue", output: null, error: refusal, cancelled: false },
        });
        throw new RepeatedToolCallError(refusal);
      }
      const out = await this.#run(p, turn, signal, abortReason);
      await this.#commit(p, turn, out);
      i++;
      if (out.result.cancelled) {
        await this.#settleCancelled(prepared.slice(i), turn, abortReason());
        return { control: "continue", output: null, cancelled: true };
      }
      if (out.result.control !== "continue") return { control: out.result.control, output: out.result.output, cancelled: false };
    }
    return { control: "continue", output: null, cancelled: false };
  }

  /** A contiguous run of read-only calls, chunked; started in order, committed in order. */
  async #runGroup(group: PreparedCall[], turn: number, signal: AbortSignal, abortReason: () => string): Promise<ToolBatchResult> {
    const size = this.policy.maxParallelToolCalls ?? group.length;
    for (let start = 0; start < group.length; start += size) {
      const chunk = group.slice(start, start + size);
      for (const p of chunk) this.guard.check(p); // cannot trip: checked by wouldTrip
      for (const p of chunk) await this.emitter.emit({ kind: "tool_started", turn, tool_call: p.call });
      const outs = await Promise.all(chunk.map((p) => this.#run(p, turn, signal, abortReason)));
      await this.#commitAll(chunk, turn, outs);
      const rest = group.slice(start + size);
      if (outs.some((o) => o.result.cancelled)) {
        await this.#settleCancelled(rest, turn, abortReason());
        return { control: "continue", output: null, cancelled: true };
      }
      const terminal = outs.find((o) => o.result.control !== "continue");
      if (terminal !== undefined) {
        await this.#settleCancelled(rest, turn, SKIPPED_AFTER_TERMINAL);
        return { control: terminal.result.control, output: terminal.result.output, cancelled: false };
      }
    }
    return { control: "continue", output: null, cancelled: false };
  }

  /**
   * Commit a chunk's outcomes in order; their tool_completed events go out
   * as one group (a session journals them with one write and one fsync).
   */
  async #commitAll(chunk: readonly PreparedCall[], turn: number, outs: readonly CallOutcome[]): Promise<void> {
    const events: AgentEventPayload[] = [];
    for (let k = 0; k < chunk.length; k++) {
      const out = outs[k]!;
      if (out.suspended === true) {
        this.#suspended.push(chunk[k]!);
        continue;
      }
      this.append(out.message);
      events.push({ kind: "tool_completed", turn, tool_call: chunk[k]!.call, result: out.result });
    }
    await this.emitter.emitAll(events);
  }

  async #commit(p: PreparedCall, turn: number, out: CallOutcome): Promise<void> {
    if (out.suspended === true) {
      this.#suspended.push(p);
      return;
    }
    this.append(out.message);
    await this.emitter.emit({ kind: "tool_completed", turn, tool_call: p.call, result: out.result });
  }

  /**
   * Answer calls that are never executed (the answer that carried them was
   * cut off): `tool_started` + `tool_completed` each, with an error tool
   * message `{"status":"not_run","tool":…,"error":reason}`, so every call
   * still has its answer. The repeat guard and middleware never see them.
   */
  async settleNotRun(calls: readonly ModelToolCall[], turn: number, reason: string, announce = true): Promise<void> {
    for (const call of calls) {
      if (announce) await this.emitter.emit({ kind: "tool_started", turn, tool_call: call });
      const out = outcome(call, JSON.stringify({ status: "not_run", tool: call.name, error: reason }), "continue", reason, false);
      this.append(out.message);
      await this.emitter.emit({ kind: "tool_completed", turn, tool_call: call, result: out.result });
    }
  }

  /** Settle calls that will not run: ToolStarted + ToolCompleted each, with a cancelled tool message. */
  async #settleCancelled(calls: readonly PreparedCall[], turn: number, reason: string, announce = true): Promise<void> {
    for (const p of calls) {
      if (announce) await this.emitter.emit({ kind: "tool_started", turn, tool_call: p.call });
      await this.#commit(p, turn, cancelledOutcome(p.call, reason));
    }
  }

  /** The approval hooks of one call: its request and answer become events (a session journals them). */
  #approvalHooks(call: ModelToolCall, turn: number, given: ResumeDecision | undefined): ApprovalHooks {
    const hooks = new CallApproval(this.emitter, call, turn);
    if (this.#batch.suspendOnApproval === true) hooks.suspend = true;
    if (given !== undefined) hooks.given = { approved: given.approved, ...(given.reason ? { reason: given.reason } : {}) };
    return hooks;
  }

  /** Parse check, dispatch, progress; never throws. */
  async #run(p: PreparedCall, turn: number, signal: AbortSignal, abortReason: () => string): Promise<CallOutcome> {
    const { call } = p;
    const fail = (code: string, error: string, extra?: Record<string, unknown>): CallOutcome =>
      outcome(call, errorContent(call.name, code, error, extra), "continue", error, false);

    if (signal.aborted) return cancelledOutcome(call, abortReason());
    const tool = this.runtime.registry.get(call.name);
    if (tool === undefined) {
      const names = this.runtime.registry.list().map((t) => t.name);
      return fail(
        "UNKNOWN_TOOL",
        `unknown tool ${JSON.stringify(call.name)}; available tools: ${names.length > 0 ? names.join(", ") : "(none)"}`,
      );
    }
    if (!p.args.ok) {
      const e = p.args.error;
      const empty = call.arguments.trim().length === 0 ? "arguments are empty, expected a JSON object: " : "";
      return fail(e.code, `${empty}${e.message} at offset ${e.offset} (line ${e.line}, column ${e.column})`);
    }
    const value = p.args.value;
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      return fail("INVALID_ARGUMENTS", `tool arguments must be a JSON object, got ${describe(value)}`);
    }
    const given = this.#batch.decisions?.get(call.id);
    if (given !== undefined && !given.approved) {
      // A denial answered while the run was suspended: the model gets the policy's payload and the run goes on.
      const why = typeof given.reason === "string" && given.reason.length > 0 ? given.reason : "tool execution approval was denied";
      return outcome(call, JSON.stringify(rejectionPayload(call.name, why, given.ruleId ?? null)), "continue", why, false);
    }

    let control: ToolControl = "continue";
    let open = true;
    const dispatch = () =>
      this.runtime.dispatchCall(
        { id: call.id, tool: call.name, arguments: value as Record<string, unknown>, shape: "openai_chat" },
        signal,
        {
          ...(this.#runInfo !== undefined ? { run: this.#runInfo } : {}),
          approval: this.#approvalHooks(call, turn, given),
          onControl: (c) => {
            control = c;
          },
          onProgress: (message, data) => {
            if (!open) return;
            // Queued on the emitter: it reaches sinks before this call's tool_completed.
            void this.emitter.emit({ kind: "tool_progressed", turn, tool_call: call, update: { message, data: data ?? null } });
          },
        },
      );
    const env: Envelope = await (this.tracer === null ? dispatch() : this.tracer.withToolSpan(call.id, dispatch));
    open = false;

    if (env.success) {
      // Image blocks (an MCP result's) leave the text: the model gets them as images, the journal by reference.
      const { result: data, images } = takeResultImages(env.result);
      let content: string;
      try {
        content = typeof data === "string" ? data : (JSON.stringify(data) ?? "null");
      } catch (err) {
        return fail("TOOL_ERROR", `tool result is not JSON-serialisable: ${err instanceof Error ? err.message : String(err)}`);
      }
      const out = outcome(call, content, control, null, false);
      if (images.length > 0) out.message.images = images;
      return out;
    }
    const e = env.error!;
    if (e.code === "CANCELLED" && signal.aborted) return cancelledOutcome(call, abortReason());
    if (e.code === AWAITING_APPROVAL) return { ...outcome(call, "", "continue", e.message, false), suspended: true };
    if (e.code === "INVALID_ARGUMENTS" && Array.isArray(e.details.errors)) {
      // Non-terminal §6 payload: the model sees which members are wrong, never their values.
      const payload = invalidArgumentsPayload(call.name, e.details.errors as ArgumentError[], e.details.truncated === true);
      return outcome(call, JSON.stringify(payload), "continue", e.message, false);
    }
    if (e.code === "DENIED") {
      // A policy refusal: the payload names the tool, the reason and the rule, never the arguments.
      const ruleId = typeof e.details.rule_id === "string" ? e.details.rule_id : null;
      return outcome(call, JSON.stringify(rejectionPayload(call.name, e.message, ruleId)), control, e.message, false);
    }
    return fail(e.code, e.message);
  }
}

/**
 * One call's approval hooks, made for every dispatched call (most of them
 * never need an approval): one small object, no closures.
 */
class CallApproval implements ApprovalHooks {
  suspend?: boolean;
  given?: ApprovalHooks["given"];

  constructor(
    private readonly emitter: EventEmitter,
    private readonly call: ModelToolCall,
    private readonly turn: number,
  ) {}

  async requested(request: ToolApprovalRequest, suspended: boolean): Promise<void> {
    let preview: unknown;
    try {
      preview = redactArguments(request.arguments);
    } catch {
      preview = "(arguments cannot be shown)";
    }
    await this.emitter.emit({
      kind: "tool_approval_requested",
      turn: this.turn,
      tool_call: this.call,
      request: { tool: request.tool, effect: request.effect, rule_id: request.ruleId, reason: request.reason, arguments: preview },
      suspended,
    });
  }

  async decided(_request: ToolApprovalRequest, d: { approved: boolean; reason: string | null; decidedBy: string }): Promise<void> {
    await this.emitter.emit({
      kind: "tool_approval_decided",
      turn: this.turn,
      tool_call_id: this.call.id,
      approved: d.approved,
      reason: d.reason,
      decided_by: d.decidedBy,
    });
  }
}

function outcome(call: ModelToolCall, content: string, control: ToolControl, error: string | null, cancelled: boolean): CallOutcome {
  const message: ToolMessage = { role: "tool", tool_call_id: call.id, content };
  return {
    message,
    result: { messages: [message], control, output: control === "continue" ? null : content, error, cancelled },
  };
}

function cancelledOutcome(call: ModelToolCall, reason: string): CallOutcome {
  return outcome(call, JSON.stringify({ status: "cancelled", tool: call.name, error: reason }), "continue", reason, true);
}
