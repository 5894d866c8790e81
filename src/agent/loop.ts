/**
 * The run loop (harness-contracts §3) as a plain function: turn, model
 * request, tool batch, commit, until a stop reason. It holds no state of its
 * own; everything it reads or changes comes through its {@link LoopContext}:
 * the history through `append`/`context`, compaction and skills through the
 * hooks the {@link Agent} passes in, events through `emit`, cancellation
 * through `signal`. Queues, serialisation and run control stay in the agent.
 *
 * @module
 */
import { raceSignal } from "../runtime/abort.ts";
import { AgentcoreError, type ParseResult } from "../core/errors.ts";
import { parseStrict } from "../core/parse.ts";
import type { ArgumentCheck } from "../tools/schema.ts";
import type { OutputError } from "../context/events.ts";
import {
  type AssistantMessage,
  type ChatMessage,
  type ModelAdapter,
  ModelProviderError,
  type ModelRequest,
  type ModelToolCall,
  type ModelToolSpec,
  type ModelUsage,
  type ResponseFormat,
  streamModel,
} from "../providers/types.ts";
import { toolCallArguments } from "../providers/toolcalls.ts";
import type { CompactionPreparation, CompactionStatus, CompactionTrigger } from "../context/types.ts";
import type { AgentEvent, EventEmitter } from "./events.ts";
import { AgentCancelledError, type ResumeDecision, type ToolBatchResult, type ToolExecutor } from "./tools.ts";
import type {
  AgentMessage,
  AgentRunResult,
  ControlInput,
  RunStatus,
  RunUsage,
  RuntimePolicy,
  StopReason,
  UsageAccumulator,
} from "./types.ts";

/** What `afterTurn` sees: a copy of the state after a non-terminal turn. */
export interface TurnSnapshot {
  agent_id: string;
  run_id: string;
  turn: number;
  /** The run's task; null for a continued run. */
  task: string | null;
  response: AssistantMessage;
  usage: RunUsage;
  messages: AgentMessage[];
}

/** A behavior hook's answer: `continue`, or `stop` (optionally with the run's output). */
export type BehaviorDecision = { action: "continue" } | { action: "stop"; output?: string | null };

/** Behavior hooks, called in declaration order after each non-terminal turn. */
export interface AgentHooks {
  afterTurn?(snapshot: TurnSnapshot, signal: AbortSignal): BehaviorDecision | void | Promise<BehaviorDecision | void>;
}

/** The automatic-compaction switches the loop acts on. */
export interface LoopAutoCompaction {
  readonly enabled: boolean;
  readonly compactOnPressure: boolean;
  readonly recoverOnOverflow: boolean;
  readonly maxOverflowRetries: number;
}

/**
 * What the loop asks of its owner. The owner keeps the history and decides
 * what a request carries (system prompt, skills); the loop only calls.
 */
export interface LoopHooks {
  /** Add a message to the history. */
  append(message: AgentMessage): void;
  /** A copy of the history (for `afterTurn` snapshots). */
  messages(): AgentMessage[];
  /**
   * The per-request context: system messages, the history in request shape,
   * the retry note after `noToolResponses` plain replies, request-only
   * additions (skills).
   */
  context(noToolResponses: number): readonly ChatMessage[];
  /** The tools offered to the model. */
  tools(): ModelToolSpec[];
  /** Steering was applied (the skill it mentions becomes active). */
  onSteering?(): Promise<void>;
  /** Context pressure for a request; a preparation when the policy wants a compaction. */
  evaluatePressure?(turn: number, messages: readonly ChatMessage[]): Promise<CompactionPreparation | null>;
  /**
   * Compact inside the run. Throws to end the run (cancelled or failed);
   * otherwise `completed` or `skipped`. Needed when `autoCompaction.enabled`.
   */
  compact?(trigger: CompactionTrigger, preparation: CompactionPreparation | null): Promise<CompactionStatus>;
  /** Automatic compaction; off when absent. */
  autoCompaction?: LoopAutoCompaction;
}

/**
 * A run's structured output: the format asked of the model, and the check of
 * a parsed answer (ajv, compiled once per run).
 */
export interface LoopOutput {
  readonly format: ResponseFormat;
  check(value: unknown): ArgumentCheck;
}

/** One run's inputs. */
export interface LoopContext {
  readonly agentId: string;
  readonly runId: string;
  /** The run's task; null for a continued run. */
  readonly task: string | null;
  readonly model: ModelAdapter;
  readonly policy: RuntimePolicy;
  readonly executor: ToolExecutor;
  readonly behaviors: readonly AgentHooks[];
  readonly hooks: LoopHooks;
  readonly usage: UsageAccumulator;
  /** Turns started so far (read by the owner when the loop throws). */
  readonly counters: { turns: number };
  readonly signal: AbortSignal;
  abortReason(): string;
  /** Calls that need an approval suspend the run (`awaiting_approval`) instead of asking. */
  readonly suspendOnApproval?: boolean;
  /**
   * A resumed run: the suspended turn's unanswered calls, settled before the
   * first model request (approved ones run, denied ones get the rejection
   * payload, the others go through the policy again), with turn 0.
   */
  readonly resume?: { calls: readonly ModelToolCall[]; decisions: ReadonlyMap<string, ResumeDecision> };
  /** Take the steering messages queued since the last safe point. */
  drainSteering(): ControlInput[];
  hasSteering(): boolean;
  emit: EventEmitter["emit"];
  /** Whether an event of this kind would reach anyone now (see `EventEmitter.listens`); assumed when absent. */
  listens?(kind: AgentEvent["kind"]): boolean;
  /** The final answer must be one JSON document matching this schema (one repair turn, then `output_invalid`). */
  readonly output?: LoopOutput;
}

/** A model turn's answer, the provider's verdict on each call's arguments, and its finish reason (null when it gave none). */
interface ModelAnswer {
  message: AssistantMessage;
  args: ParseResult[];
  finishReason: string | null;
}

/**
 * The finish reasons that mean the answer is not whole, with the run's stop
 * reason and the words of its error. Such a run ends `failed` at once.
 */
const CUT_OFF: Readonly<Record<string, { stop: StopReason; error: string }>> = {
  length: { stop: "max_tokens", error: 'the model stopped at its output-token limit (finish_reason "length"), so its answer is cut off' },
  content_filter: {
    stop: "content_filter",
    error: "the provider's content filter stopped the model's answer (finish_reason \"content_filter\")",
  },
};

const NO_STEERING: readonly ControlInput[] = Object.freeze([]);

/** Why the tool calls of a cut-off answer are not run (their arguments may be incomplete). */
function notRunReason(finishReason: string): string {
  return `not run: the model's answer was cut off (finish_reason ${JSON.stringify(finishReason)}), so this call may be incomplete`;
}

/** Wait for `p`, or throw AgentCancelledError as soon as `signal` aborts. */
export function raceAbort<T>(p: Promise<T>, signal: AbortSignal, reason: () => string): Promise<T> {
  return raceSignal(p, signal, () => new AgentCancelledError(reason()));
}

/**
 * One abort listener for a whole run: `wait(p)` settles with `p`, or rejects
 * with AgentCancelledError as soon as the signal aborts. The loop waits on
 * one thing at a time (each step of the model's stream), so instead of a
 * listener added and removed per step, the run's single listener rejects
 * whatever wait is current. The work itself is not stopped (it has the
 * signal); its later outcome is ignored.
 */
class AbortWatch {
  #reject: ((e: unknown) => void) | null = null;
  readonly #onAbort = (): void => {
    const reject = this.#reject;
    this.#reject = null;
    reject?.(new AgentCancelledError(this.reason()));
  };

  constructor(
    private readonly signal: AbortSignal,
    private readonly reason: () => string,
  ) {
    if (!signal.aborted) signal.addEventListener("abort", this.#onAbort, { once: true });
  }

  wait<T>(p: Promise<T>): Promise<T> {
    if (this.signal.aborted) {
      p.catch(() => {});
      return Promise.reject(new AgentCancelledError(this.reason()));
    }
    return new Promise<T>((resolve, reject) => {
      this.#reject = reject;
      p.then(
        (v) => {
          if (this.#reject === reject) this.#reject = null;
          resolve(v);
        },
        (e) => {
          if (this.#reject === reject) this.#reject = null;
          reject(e);
        },
      );
    });
  }

  dispose(): void {
    this.#reject = null;
    this.signal.removeEventListener("abort", this.#onAbort);
  }
}

/** A run result from the usage so far. */
export function result(
  status: RunStatus,
  stop: StopReason,
  turns: number,
  usage: UsageAccumulator,
  output: string | null = null,
  error: string | null = null,
  value?: { value: unknown },
): AgentRunResult {
  if (value !== undefined) return { status, stop_reason: stop, turns, output, output_value: value.value, error, usage: usage.snapshot() };
  return { status, stop_reason: stop, turns, output, error, usage: usage.snapshot() };
}

/**
 * The result of a run whose records could not be written (a required sink,
 * the session recorder, failed): `failed` / `store_failed`, with the error's
 * message and its stable code (`STORE_FULL`, `STORE_UNAVAILABLE`, …;
 * `SINK_FAILED` for an error without one).
 */
export function storeFailed(error: Error, turns: number, usage: UsageAccumulator): AgentRunResult {
  const code = error instanceof AgentcoreError ? error.code : "SINK_FAILED";
  return { ...result("failed", "store_failed", turns, usage, null, error.message), error_code: code };
}

/** The problems of a structured answer: not one JSON document, or not matching the schema. */
function outputProblems(output: LoopOutput, content: string): { value: unknown } | OutputError[] {
  const parsed = parseStrict(content);
  if (!parsed.ok) {
    const e = parsed.error;
    return [{ path: "", keyword: "json", message: `not one JSON document: ${e.message} at byte ${e.offset}`, offset: e.offset }];
  }
  const check = output.check(parsed.value);
  if (check.ok) return { value: parsed.value };
  const errors: OutputError[] = check.errors.map((e) => ({ path: e.path, keyword: e.keyword, message: e.message }));
  if (check.truncated) errors.push({ path: "", keyword: "truncated", message: "more problems were left out" });
  return errors;
}

function describeProblems(errors: readonly OutputError[]): string {
  return errors.map((e) => `- ${e.path === "" ? "(the whole answer)" : e.path}: ${e.message}`).join("\n");
}

/** The repair turn's user message. */
function repairMessage(format: ResponseFormat, errors: readonly OutputError[]): string {
  return (
    `Your answer does not match the required output schema ${JSON.stringify(format.name)}:\n${describeProblems(errors)}\n` +
    "Answer again with one JSON document that matches the schema, and nothing else."
  );
}

/**
 * Run turns until a stop reason: each turn requests the model (after the
 * steering safe point and compaction), then runs its tool calls, then the
 * `afterTurn` behaviors. Returns the run's result; throws for the outcomes
 * the owner maps (cancellation, repeated call, failed compaction, provider
 * errors).
 */
export async function runLoop(ctx: LoopContext): Promise<AgentRunResult> {
  const watch = new AbortWatch(ctx.signal, ctx.abortReason);
  try {
    return await turns(ctx, watch);
  } finally {
    watch.dispose();
  }
}

async function turns(ctx: LoopContext, watch: AbortWatch): Promise<AgentRunResult> {
  const { policy, signal, usage, counters, emit } = ctx;
  const reason = ctx.abortReason;
  const state = { noToolResponses: 0, repairs: 0 };
  const batchOptions = { suspendOnApproval: ctx.suspendOnApproval === true };

  if (ctx.resume !== undefined && ctx.resume.calls.length > 0) {
    const calls = ctx.resume.calls;
    const tr = await ctx.executor.executeAll(
      calls,
      calls.map(toolCallArguments),
      0,
      signal,
      reason,
      { agentId: ctx.agentId, runId: ctx.runId, turn: 0 },
      { ...batchOptions, decisions: ctx.resume.decisions },
    );
    const end = batchEnd(tr, 0, usage, reason);
    if (end !== null) return end;
  }

  for (let step = 0; step < policy.maxSteps; step++) {
    if (signal.aborted) throw new AgentCancelledError(reason());
    const budget = budgetFailure(policy, usage, counters.turns);
    if (budget !== null) return budget;
    const turn = ++counters.turns;
    await emit({ kind: "turn_started", turn });
    let response: AssistantMessage;
    try {
      const answer = await modelTurn(ctx, turn, state, watch);
      response = answer.message;
      if (signal.aborted) throw new AgentCancelledError(reason());
      const cut = answer.finishReason === null ? undefined : CUT_OFF[answer.finishReason];
      if (cut !== undefined) {
        // A cut-off answer ends the run. Its tool calls are not run (a `length`
        // cut can leave their arguments half-written); each gets a tool message
        // saying so, which keeps the history well formed for a continue.
        const calls = response.tool_calls;
        if (calls.length > 0) await ctx.executor.settleNotRun(calls, turn, notRunReason(answer.finishReason!));
        const more = calls.length > 0 ? `; its ${calls.length} tool call(s) were not run` : "";
        return result("failed", cut.stop, turn, usage, response.content, cut.error + more);
      }
      if (response.tool_calls.length === 0) {
        if (ctx.hasSteering()) {
          state.noToolResponses = 0; // not terminal: the loop applies the steering
        } else if (!policy.requireExplicitFinish) {
          const content = response.content;
          if (content && ctx.output !== undefined) {
            const checked = outputProblems(ctx.output, content);
            if (!Array.isArray(checked)) return result("completed", "text_response", turn, usage, content, null, checked);
            if (state.repairs >= 1) {
              return result(
                "failed",
                "output_invalid",
                turn,
                usage,
                content,
                `the final answer does not match the output schema after one repair turn:\n${describeProblems(checked)}`,
              );
            }
            state.repairs++;
            const message = repairMessage(ctx.output.format, checked);
            ctx.hooks.append({ role: "user", content: message });
            await emit({ kind: "output_repair_requested", turn, errors: checked, message });
          } else if (content) return result("completed", "text_response", turn, usage, content);
          else return result("failed", "empty_response", turn, usage, null, "the model returned an empty response");
        } else {
          state.noToolResponses++;
          if (state.noToolResponses >= policy.maxNoToolResponses) {
            return result(
              "failed",
              "max_no_tool_responses",
              turn,
              usage,
              null,
              `explicit-finish mode: the model answered ${state.noToolResponses} consecutive times without a completing tool call`,
            );
          }
        }
      } else {
        state.noToolResponses = 0;
        const tr = await ctx.executor.executeAll(
          response.tool_calls,
          answer.args,
          turn,
          signal,
          reason,
          { agentId: ctx.agentId, runId: ctx.runId, turn },
          batchOptions,
        );
        const end = batchEnd(tr, turn, usage, reason);
        if (end !== null) return end;
      }
    } finally {
      await emit({ kind: "turn_completed", turn });
    }
    for (const hook of ctx.behaviors) {
      if (typeof hook.afterTurn !== "function") continue;
      const snapshot: TurnSnapshot = {
        agent_id: ctx.agentId,
        run_id: ctx.runId,
        turn,
        task: ctx.task,
        response: structuredClone(response),
        usage: usage.snapshot(),
        messages: ctx.hooks.messages(),
      };
      const decision = await raceAbort(Promise.resolve(hook.afterTurn(snapshot, signal)), signal, reason);
      if (decision === undefined || decision === null) continue;
      if (typeof decision !== "object" || (decision.action !== "continue" && decision.action !== "stop")) {
        throw new TypeError('afterTurn must return a BehaviorDecision ({ action: "continue" | "stop" }) or nothing');
      }
      if (decision.action === "continue") {
        if ((decision as { output?: unknown }).output != null) throw new TypeError('afterTurn: a "continue" decision cannot carry output');
        continue;
      }
      const out = decision.output ?? response.content;
      if (out !== null && typeof out !== "string") throw new TypeError("afterTurn: stop output must be a string or null");
      return result("completed", "behavior_stop", turn, usage, out);
    }
  }
  return result(
    "failed",
    "max_steps",
    counters.turns,
    usage,
    null,
    `agent '${ctx.agentId}' did not finish within ${policy.maxSteps} ${policy.maxSteps === 1 ? "step" : "steps"}`,
  );
}

/** The run's result when a tool batch ends it (a terminal control, calls left awaiting approval), else null; throws on cancel. */
function batchEnd(tr: ToolBatchResult, turn: number, usage: UsageAccumulator, reason: () => string): AgentRunResult | null {
  if (tr.cancelled) throw new AgentCancelledError(reason());
  if (tr.control === "complete") return result("completed", "tool_completion", turn, usage, tr.output);
  if (tr.control === "reject") return result("rejected", "tool_rejected", turn, usage, tr.output, "tool execution was rejected");
  if (tr.control === "cancel") return result("cancelled", "tool_cancelled", turn, usage, tr.output, "tool execution was cancelled");
  if (tr.suspended !== undefined && tr.suspended.length > 0) {
    const n = tr.suspended.length;
    return result("suspended", "awaiting_approval", turn, usage, null, `${n} tool call(s) await approval: ${tr.suspended.join(", ")}`);
  }
  return null;
}

function budgetFailure(policy: RuntimePolicy, usage: UsageAccumulator, turns: number): AgentRunResult | null {
  const limit = policy.maxRunTokens;
  if (limit === null || usage.requestCount === 0) return null;
  const u = usage.snapshot();
  const missing = u.request_count - u.reported_request_count;
  if (missing > 0) {
    return result(
      "failed",
      "usage_unavailable",
      turns,
      usage,
      null,
      `the run token budget cannot be enforced: ${missing} model request(s) did not report usage`,
    );
  }
  if (u.total_tokens >= limit) {
    return result(
      "failed",
      "token_budget_exceeded",
      turns,
      usage,
      null,
      `the run used ${u.total_tokens} tokens, reaching its budget of ${limit}`,
    );
  }
  return null;
}

/**
 * Apply steering (the safe point), build and evaluate the context, compact
 * on pressure, stream the model (compacting and retrying once after an
 * overflow), record the message.
 */
async function modelTurn(ctx: LoopContext, turn: number, state: { noToolResponses: number }, watch: AbortWatch): Promise<ModelAnswer> {
  const { signal, hooks } = ctx;
  const reason = ctx.abortReason;
  const build = async (): Promise<{ messages: readonly ChatMessage[]; preparation: CompactionPreparation | null }> => {
    for (;;) {
      const drained = ctx.hasSteering() ? ctx.drainSteering() : NO_STEERING;
      if (drained.length > 0) state.noToolResponses = 0;
      for (const c of drained) {
        hooks.append({ role: "user", content: c.content });
        await ctx.emit({ kind: "steering_applied", control: c, target_turn: turn });
      }
      if (drained.length > 0) await hooks.onSteering?.();
      const messages = hooks.context(state.noToolResponses);
      const preparation = hooks.evaluatePressure === undefined ? null : await hooks.evaluatePressure(turn, messages);
      if (!ctx.hasSteering()) return { messages, preparation };
    }
  };
  // Without steering or pressure evaluation there is nothing to wait for.
  let { messages, preparation } =
    hooks.evaluatePressure === undefined && !ctx.hasSteering()
      ? { messages: hooks.context(state.noToolResponses), preparation: null }
      : await build();
  if (signal.aborted) throw new AgentCancelledError(reason());
  const auto = hooks.autoCompaction;
  if (preparation !== null && auto?.enabled && auto.compactOnPressure) {
    if ((await hooks.compact!("pressure", preparation)) === "completed") ({ messages } = await build());
  }
  let retries = 0;
  for (;;) {
    if (signal.aborted) throw new AgentCancelledError(reason());
    try {
      return await requestModel(ctx, turn, messages, watch);
    } catch (err) {
      if (!(err instanceof ModelProviderError) || err.kind !== "context_overflow" || err.responseStarted || signal.aborted) throw err;
      if (!auto?.enabled || !auto.recoverOnOverflow || retries >= auto.maxOverflowRetries) throw err;
      if ((await hooks.compact!("overflow", null)) !== "completed") throw err;
      retries++;
      ({ messages } = await build());
    }
  }
}

/** One model request: stream it, emit deltas, record the assistant message. */
async function requestModel(ctx: LoopContext, turn: number, messages: readonly ChatMessage[], watch: AbortWatch): Promise<ModelAnswer> {
  const { signal, usage } = ctx;
  const reason = ctx.abortReason;
  usage.beginRequest();
  const tools = ctx.hooks.tools();
  const request: ModelRequest = { messages, tools, signal };
  if (ctx.output !== undefined) request.responseFormat = ctx.output.format;
  const stream = streamModel(ctx.model, request);
  const it = stream[Symbol.asyncIterator]();
  let completed: { message: AssistantMessage; usage?: ModelUsage; finish_reason?: string } | undefined;
  let finished = false;
  let shown = false;
  try {
    for (;;) {
      const step = await watch.wait(it.next());
      if (step.done) {
        finished = true;
        break;
      }
      const ev = step.value;
      if (ev.type === "text_delta") {
        if (ev.delta.length > 0) {
          shown = true;
          await ctx.emit({ kind: "assistant_text_delta", turn, delta: ev.delta });
        }
      } else if (ev.type === "thinking_delta") {
        if (ev.delta.length > 0) {
          shown = true;
          await ctx.emit({ kind: "assistant_thinking_delta", turn, delta: ev.delta });
        }
      } else if (ev.type === "tool_call_delta") {
        if (typeof ev.delta === "string" && ev.delta.length > 0) {
          shown = true;
          await ctx.emit({
            kind: "tool_call_arguments_delta",
            turn,
            index: ev.index,
            tool_call_id: ev.id,
            tool: ev.name,
            delta: ev.delta,
            ...(ev.error !== undefined ? { error: { ...ev.error } } : {}),
          });
        }
      } else if (ev.type === "completed") {
        completed = { message: ev.message, usage: ev.usage, finish_reason: ev.finish_reason };
        finished = true;
        break;
      } else {
        throw new TypeError(`model stream returned an unsupported event: ${JSON.stringify((ev as { type?: unknown }).type)}`);
      }
    }
  } catch (err) {
    // An overflow after deltas were shown is never recovered.
    if (shown && err instanceof ModelProviderError && err.kind === "context_overflow" && !err.responseStarted) {
      throw new ModelProviderError("context_overflow", err.message, { responseStarted: true, status: err.status, cause: err });
    }
    throw err;
  } finally {
    if (!finished || completed !== undefined) {
      // Close the provider's stream without letting a hung return() block the run.
      try {
        const r = it.return?.();
        if (r !== undefined) void Promise.resolve(r).catch(() => {});
      } catch {
        // ignore
      }
    }
  }
  if (completed === undefined) throw new Error("model stream ended without a completed response");

  // Frozen: the same object goes to sinks and drives tool execution. The
  // verdicts travel beside it, so events keep the call's wire shape.
  const given = completed.message.tool_calls ?? [];
  const n = given.length;
  const args: ParseResult[] = new Array(n);
  const calls: ModelToolCall[] = new Array(n);
  for (let i = 0; i < n; i++) {
    const c = given[i]!;
    args[i] = toolCallArguments(c);
    calls[i] = Object.freeze({ id: c.id, name: c.name, arguments: c.arguments });
  }
  const content = completed.message.content ?? null;
  // The message reaches sinks (message_completed) and stays the turn's own
  // record, so it is frozen; its calls array only when the event goes out
  // (freezing an array is dear on JavaScriptCore, and nobody else sees it).
  const delivered = ctx.listens === undefined || ctx.listens("message_completed");
  const message: AssistantMessage = Object.freeze({ content, tool_calls: delivered ? (Object.freeze(calls) as ModelToolCall[]) : calls });
  usage.record(completed.usage);
  const stored: AgentMessage = { role: "assistant", content };
  if (n > 0) {
    const wire: { id: string; type: "function"; function: { name: string; arguments: string } }[] = new Array(n);
    for (let i = 0; i < n; i++) {
      const c = calls[i]!;
      // Frozen, so the request copy of this message shares them (toModelMessage).
      wire[i] = Object.freeze({ id: c.id, type: "function", function: Object.freeze({ name: c.name, arguments: c.arguments }) });
    }
    stored.tool_calls = wire;
  }
  if (completed.usage !== undefined) stored.usage = { ...completed.usage };
  ctx.hooks.append(stored);
  await ctx.emit({ kind: "message_completed", turn, message, usage: completed.usage ?? null });
  return { message, args, finishReason: typeof completed.finish_reason === "string" ? completed.finish_reason : null };
}
