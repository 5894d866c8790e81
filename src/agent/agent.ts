/**
 * The agent: the run loop (harness-contracts §3) and run control.
 *
 * @example
 * ```ts
 * const agent = createAgent({ model, tools: [myTool], policy: { maxSteps: 10 } });
 * const result = await agent.run("summarise README.md");
 * ```
 *
 * Calls on one agent are serialised: a second `run()` waits until the first
 * (and the follow-ups it drains) has finished, including its `agent_finished`
 * sink deliveries.
 *
 * @module
 */
import { raceSignal } from "../runtime/abort.ts";
import {
  type AssistantMessage,
  type ChatMessage,
  type ModelAdapter,
  ModelProviderError,
  type ModelToolCall,
  type ModelToolSpec,
  type ModelUsage,
  streamModel,
} from "../providers/types.ts";
import { toolCallArguments } from "../providers/toolcalls.ts";
import type { ParseResult } from "../core/errors.ts";
import { createRuntime, type Runtime } from "../runtime/runtime.ts";
import { summaryMessage, summaryOf, toModelMessage } from "../context/builder.ts";
import type { Compactor } from "../context/compactor.ts";
import { estimateContextUsage, type EstimatedMessage, toolsForEstimate } from "../context/estimate.ts";
import type { CompactionPolicy } from "../context/policy.ts";
import type { CompactionPreparation, CompactionRequest, CompactionResult, CompactionStatus, CompactionTrigger, SummaryEntry } from "../context/types.ts";
import type { AnyToolDefinition } from "../tools/definition.ts";
import { type Skill, SkillCatalog } from "../skills/catalog.ts";
import { activeSkillMessage, findSkillMention, latestUserText, skillIndexMessage } from "../skills/context.ts";
import { type AgentEvent, type AgentEventSink, EventEmitter, type EventStreamOptions, randomHex } from "./events.ts";
import { AgentCancelledError, RepeatedToolCallError, ToolExecutor } from "./tools.ts";
import {
  type AgentMessage,
  type AgentRunResult,
  type AgentStatus,
  CONTINUABLE_STOP_REASONS,
  type ContinueRejectedReason,
  ContinueRejectedError,
  type ControlInput,
  type ControlInputKind,
  type ControlReceipt,
  type FollowUpDiscardReason,
  FollowUpDiscardedError,
  type FollowUpFailurePolicy,
  FollowUpRejectedError,
  type RunStatus,
  type RunUsage,
  resolvePolicy,
  type RuntimePolicy,
  type RuntimePolicyOptions,
  type StopReason,
  UsageAccumulator,
} from "./types.ts";

export const DEFAULT_ABORT_REASON = "agent run was aborted";
export const DEFAULT_QUEUE_CAPACITY = 16;

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

/** Options of {@link createAgent}. */
export interface AgentOptions {
  model: ModelAdapter;
  /** A runtime from `createRuntime()`; its registry provides the tools. */
  runtime?: Runtime;
  /** Tools for a fresh runtime without built-ins (ignored when `runtime` is given). */
  tools?: readonly AnyToolDefinition[];
  systemPrompt?: string;
  policy?: RuntimePolicyOptions;
  hooks?: AgentHooks | readonly AgentHooks[];
  sinks?: readonly AgentEventSink[];
  /** Default: `agent-` + random hex. */
  agentId?: string;
  steeringQueueCapacity?: number;
  followUpQueueCapacity?: number;
  followUpFailurePolicy?: FollowUpFailurePolicy;
  /** Context pressure and compaction; off when absent. */
  compaction?: CompactionOptions;
  /**
   * Skills: a catalog from `discoverSkills()`. Each model request then
   * carries the skills index, and the active skill's files while one is
   * active (both only in the request, never in the history). See `src/skills`.
   */
  skills?: SkillCatalog;
}

/** Automatic compaction during runs (all default to on; `maxOverflowRetries` is 0 or 1, default 1). */
export interface AutoCompactionOptions {
  enabled?: boolean;
  /** Compact before a model request when the policy reports pressure. */
  compactOnPressure?: boolean;
  /** Compact and retry once when the model reports a context overflow before any delta. */
  recoverOnOverflow?: boolean;
  maxOverflowRetries?: number;
}

/**
 * Context pressure and compaction. With a policy alone, pressure is only
 * observed (`context_pressure_evaluated` events). With a compactor too,
 * `compact()` works and automatic compaction is on unless `auto.enabled` is false.
 */
export interface CompactionOptions {
  policy: CompactionPolicy;
  compactor?: Compactor;
  auto?: AutoCompactionOptions;
}

interface ResolvedCompaction {
  policy: CompactionPolicy;
  compactor: Compactor | undefined;
  auto: Readonly<Required<AutoCompactionOptions>>;
}

function resolveCompaction(c: CompactionOptions | undefined): ResolvedCompaction | null {
  if (c === undefined) return null;
  if (typeof c !== "object" || c === null) throw new TypeError("createAgent: compaction must be an object");
  const policy = c.policy;
  if (typeof policy?.evaluate !== "function" || typeof policy.prepare !== "function") throw new TypeError("createAgent: compaction.policy must be a CompactionPolicy");
  if (c.compactor !== undefined && typeof c.compactor?.compact !== "function") throw new TypeError("createAgent: compaction.compactor must have a compact() method");
  const a = c.auto ?? {};
  for (const k of ["enabled", "compactOnPressure", "recoverOnOverflow"] as const) {
    if (a[k] !== undefined && typeof a[k] !== "boolean") throw new TypeError(`createAgent: compaction.auto.${k} must be a boolean`);
  }
  if (a.enabled === true && c.compactor === undefined) throw new TypeError("createAgent: compaction.auto.enabled needs compaction.compactor");
  const retries = a.maxOverflowRetries ?? 1;
  if (retries !== 0 && retries !== 1) throw new RangeError(`createAgent: compaction.auto.maxOverflowRetries must be 0 or 1, got ${retries}`);
  return {
    policy,
    compactor: c.compactor,
    auto: Object.freeze({
      enabled: (a.enabled ?? true) && c.compactor !== undefined,
      compactOnPressure: a.compactOnPressure ?? true,
      recoverOnOverflow: a.recoverOnOverflow ?? true,
      maxOverflowRetries: retries,
    }),
  };
}

/** An automatic compaction failed: the run ends `failed` / `compaction_failed`. */
class CompactionFailedError extends Error {
  override name = "CompactionFailedError";
}

/** An accepted (or refused) follow-up. */
export interface FollowUpHandle {
  readonly receipt: ControlReceipt;
  /**
   * The follow-up run's result. Rejects with `FollowUpRejectedError` when the
   * receipt was not accepted, `FollowUpDiscardedError` when it was dropped.
   */
  wait(): Promise<AgentRunResult>;
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
  length: { stop: "max_tokens", error: "the model stopped at its output-token limit (finish_reason \"length\"), so its answer is cut off" },
  content_filter: { stop: "content_filter", error: "the provider's content filter stopped the model's answer (finish_reason \"content_filter\")" },
};

/** Why the tool calls of a cut-off answer are not run (their arguments may be incomplete). */
function notRunReason(finishReason: string): string {
  return `not run: the model's answer was cut off (finish_reason ${JSON.stringify(finishReason)}), so this call may be incomplete`;
}

class TerminalResult {
  constructor(readonly result: AgentRunResult) {}
}

interface ActiveOperation {
  readonly controller: AbortController;
  abortReason: string;
  readonly steering: ControlInput[];
  steeringClosed: boolean;
  /** An explicit compaction: abortable, but takes no steering. */
  compaction?: boolean;
}

interface QueuedFollowUp {
  control: ControlInput;
  resolve(r: AgentRunResult): void;
  reject(e: unknown): void;
}

function makeControl(kind: ControlInputKind, content: unknown): ControlInput {
  if (typeof content !== "string") throw new TypeError("control content must be a string");
  const c = content.trim();
  if (c.length === 0) throw new RangeError("control content must not be empty");
  return Object.freeze({ input_id: randomHex(16), kind, content: c });
}

function positiveCapacity(name: string, v: number | undefined): number {
  const n = v ?? DEFAULT_QUEUE_CAPACITY;
  if (!Number.isSafeInteger(n) || n <= 0) throw new RangeError(`${name} must be a positive integer, got ${n}`);
  return n;
}

/** Wait for `p`, or throw AgentCancelledError as soon as `signal` aborts. */
function raceAbort<T>(p: Promise<T>, signal: AbortSignal, reason: () => string): Promise<T> {
  return raceSignal(p, signal, () => new AgentCancelledError(reason()));
}

function result(status: RunStatus, stop: StopReason, turns: number, usage: UsageAccumulator, output: string | null = null, error: string | null = null): AgentRunResult {
  return { status, stop_reason: stop, turns, output, error, usage: usage.snapshot() };
}

const EXPLICIT_FINISH_NOTE =
  "This run ends only when you call a tool that finishes it. A reply in plain text does not end the run.";

function retryNote(attempt: number, max: number): string {
  const base = "Your previous reply was plain text, which does not finish this run. Call the tool that completes the task.";
  return attempt >= 2 ? `Retry ${attempt}/${max}: ${base}` : base;
}

/** The agent. Create it with {@link createAgent}. */
export class Agent {
  readonly agentId: string;
  readonly policy: RuntimePolicy;
  readonly runtime: Runtime;
  readonly #model: ModelAdapter;
  readonly #systemPrompt: string | undefined;
  readonly #hooks: readonly AgentHooks[];
  readonly #emitter: EventEmitter;
  readonly #executor: ToolExecutor;
  readonly #steeringCapacity: number;
  readonly #followUpCapacity: number;
  readonly #followUpPolicy: FollowUpFailurePolicy;
  readonly #compaction: ResolvedCompaction | null;
  /** Bumped on every history change (to detect changes during a compaction). */
  #historyVersion = 0;

  #messages: AgentMessage[] = [];
  /** The same conversation in request shape (no `usage`), kept in step with `#messages`. */
  #wire: ChatMessage[] = [];
  #lastResult: AgentRunResult | null = null;
  #status: AgentStatus = "idle";
  #gate: Promise<void> = Promise.resolve();
  #gateHeld = 0;
  #pendingOps = 0;
  #idleWaiters: (() => void)[] = [];
  #active: ActiveOperation | null = null;
  #followUps: QueuedFollowUp[] = [];
  #followUpChainOpen = false;
  #shuttingDown = false;
  #started = false;
  #specs: ModelToolSpec[] | undefined;
  #system: ChatMessage | null | undefined;
  readonly #skills: SkillCatalog | null;
  #activeSkill: Skill | null = null;

  constructor(options: AgentOptions) {
    if (typeof options !== "object" || options === null) throw new TypeError("createAgent: options must be an object");
    const m = options.model;
    if (typeof m !== "object" || m === null || typeof m.complete !== "function") {
      throw new TypeError("createAgent: model must be a ModelAdapter with a complete() method");
    }
    if (options.systemPrompt !== undefined && typeof options.systemPrompt !== "string") throw new TypeError("createAgent: systemPrompt must be a string");
    this.#model = m;
    this.policy = resolvePolicy(options.policy);
    if (options.runtime !== undefined && options.tools !== undefined) {
      throw new TypeError("createAgent: pass either runtime or tools, not both (register extra tools on the runtime)");
    }
    this.runtime = options.runtime ?? createRuntime({ builtins: false, tools: options.tools ?? [] });
    this.agentId = options.agentId ?? `agent-${randomHex(6)}`;
    if (typeof this.agentId !== "string" || this.agentId.length === 0) throw new TypeError("createAgent: agentId must be a non-empty string");
    this.#systemPrompt = options.systemPrompt;
    const hooks = options.hooks === undefined ? [] : Array.isArray(options.hooks) ? options.hooks : [options.hooks as AgentHooks];
    this.#hooks = [...hooks];
    this.#steeringCapacity = positiveCapacity("steeringQueueCapacity", options.steeringQueueCapacity);
    this.#followUpCapacity = positiveCapacity("followUpQueueCapacity", options.followUpQueueCapacity);
    this.#followUpPolicy = options.followUpFailurePolicy ?? "discard";
    if (this.#followUpPolicy !== "discard" && this.#followUpPolicy !== "continue") {
      throw new TypeError(`followUpFailurePolicy must be "discard" or "continue"`);
    }
    this.#compaction = resolveCompaction(options.compaction);
    const sk = options.skills;
    if (sk !== undefined && !(sk instanceof SkillCatalog)) {
      throw new TypeError("createAgent: skills must be a SkillCatalog (from discoverSkills(dir))");
    }
    this.#skills = sk ?? null;
    const self = this;
    // Sinks read the conversation through this (a SessionRecorder journals it after a compaction).
    this.#emitter = new EventEmitter(this.agentId, options.sinks ?? [], this.runtime.logger, {
      get messages() {
        return self.messages;
      },
    });
    this.#executor = new ToolExecutor(this.runtime, this.policy, this.#emitter, (msg) => this.#append(msg));
  }

  // -------------------------------------------------------------------------
  // State

  get status(): AgentStatus {
    return this.#status;
  }

  /** A copy of the conversation (without system prompts). */
  get messages(): AgentMessage[] {
    return structuredClone(this.#messages);
  }

  get lastResult(): AgentRunResult | null {
    return this.#lastResult;
  }

  /** The skills catalog (null without the `skills` option). */
  get skills(): SkillCatalog | null {
    return this.#skills;
  }

  /** The name of the skill active in the current (or last) run, or null. */
  get activeSkill(): string | null {
    return this.#activeSkill?.name ?? null;
  }

  /** Whether a run is active or queued, or follow-ups are pending. */
  get isActive(): boolean {
    return this.#pendingOps > 0 || this.#gateHeld > 0;
  }

  /** Subscribe to every event of this agent (see `EventStreamOptions` for slow consumers). Ends at `shutdown()`. */
  events(options?: EventStreamOptions): AsyncIterableIterator<AgentEvent> {
    return this.#emitter.subscribe(options);
  }

  // -------------------------------------------------------------------------
  // Runs

  /** Run a task (appended as a user message). Waits for earlier runs on this agent. */
  run(task: string): Promise<AgentRunResult> {
    if (typeof task !== "string" || task.trim().length === 0) return Promise.reject(new TypeError("task must be a non-empty string"));
    if (this.#shuttingDown) return Promise.reject(new Error("agent is shut down"));
    return this.#operation(() => this.#execute(task));
  }

  /** Why `continueRun()` would be rejected now, or null when it would start. */
  get continueRejectionReason(): ContinueRejectedReason | null {
    if (this.#shuttingDown) return "agent_shutting_down";
    if (this.isActive) return "agent_active";
    const last = this.#lastResult;
    if (last === null) return "no_previous_run";
    if (!CONTINUABLE_STOP_REASONS.has(last.stop_reason)) return "unsupported_stop_reason";
    if (!toolStateComplete(this.#messages)) return "incomplete_tool_state";
    return null;
  }

  get canContinue(): boolean {
    return this.continueRejectionReason === null;
  }

  /** Resume the conversation without a new user message. Throws ContinueRejectedError. */
  continueRun(): Promise<AgentRunResult> {
    const reason = this.continueRejectionReason;
    if (reason !== null) return Promise.reject(new ContinueRejectedError(reason));
    return this.#operation(() => this.#execute(null));
  }

  /**
   * Abort the active run: the model request, running tools (through their
   * `ctx.signal`) and hooks are interrupted, and the run ends
   * `cancelled` / `external_abort` with `error = reason`. Returns false when
   * nothing is running (a run still queued behind another is not affected) or
   * the run was already aborted.
   */
  abort(reason: string = DEFAULT_ABORT_REASON): boolean {
    const op = this.#active;
    if (op === null || op.controller.signal.aborted) return false;
    op.abortReason = String(reason);
    op.controller.abort(new DOMException(op.abortReason, "AbortError"));
    return true;
  }

  /** Resolves when no run, queued run or follow-up is pending and their sinks have settled. */
  waitForIdle(): Promise<void> {
    if (!this.isActive) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /**
   * Queue a message for the active run. It is applied at the next safe point:
   * before the next model request, after every started tool has settled.
   */
  steer(content: string): ControlReceipt {
    const control = makeControl("steering", content);
    const op = this.#active;
    if (op === null || op.compaction === true) return { control, status: "agent_idle", queue_size: 0 };
    if (op.controller.signal.aborted || op.steeringClosed) return { control, status: "run_closing", queue_size: op.steering.length };
    if (op.steering.length >= this.#steeringCapacity) return { control, status: "queue_full", queue_size: op.steering.length };
    op.steering.push(control);
    return { control, status: "accepted", queue_size: op.steering.length };
  }

  /** Queue a task to run after the current run (if it succeeds, or per the failure policy). */
  followUp(task: string): FollowUpHandle {
    const control = makeControl("follow_up", task);
    const refuse = (status: ControlReceipt["status"]): FollowUpHandle => {
      const receipt = { control, status, queue_size: this.#followUps.length };
      return { receipt, wait: () => Promise.reject(new FollowUpRejectedError(receipt)) };
    };
    if (this.#shuttingDown) return refuse("run_closing");
    if (this.#active?.controller.signal.aborted) return refuse("run_closing");
    if (!this.#followUpChainOpen) return refuse("agent_idle");
    if (this.#followUps.length >= this.#followUpCapacity) return refuse("queue_full");
    let resolve!: (r: AgentRunResult) => void;
    let reject!: (e: unknown) => void;
    const done = new Promise<AgentRunResult>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    done.catch(() => {}); // never an unhandled rejection when nobody waits
    this.#followUps.push({ control, resolve, reject });
    const receipt: ControlReceipt = { control, status: "accepted", queue_size: this.#followUps.length };
    return { receipt, wait: () => done };
  }

  /**
   * Compact the history now (trigger `explicit`), in its own event run:
   * `compaction_started`, then `compaction_completed` (completed or skipped)
   * or `compaction_failed` (failed or cancelled; the history is unchanged).
   * Waits for earlier runs; `abort()` cancels it. Needs
   * `compaction.policy` and `compaction.compactor`.
   */
  compact(): Promise<CompactionResult> {
    const c = this.#compaction;
    if (c === null || c.compactor === undefined) return Promise.reject(new Error("compact() needs the compaction.policy and compaction.compactor options"));
    if (this.#shuttingDown) return Promise.reject(new Error("agent is shut down"));
    return this.#operation(async () => {
      const op: ActiveOperation = { controller: new AbortController(), abortReason: DEFAULT_ABORT_REASON, steering: [], steeringClosed: true, compaction: true };
      this.#active = op;
      try {
        this.#emitter.beginRun();
        return await this.#runCompaction("explicit", null, op);
      } finally {
        if (this.#active === op) this.#active = null;
      }
    }, false);
  }

  /** Clear the conversation and last result. Throws while a run is active. */
  reset(messages: readonly AgentMessage[] = []): void {
    if (this.isActive) throw new Error("cannot reset an active agent");
    this.#messages = [];
    this.#wire = [];
    this.#historyVersion++;
    for (const m of structuredClone([...messages])) this.#append(m);
    this.#lastResult = null;
    this.#status = "idle";
  }

  /**
   * Restore a saved conversation and last result (e.g. from a session journal)
   * so `continueRun()` can follow on after a restart. Throws while active.
   */
  restore(messages: readonly AgentMessage[], lastResult: AgentRunResult | null): void {
    if (this.isActive) throw new Error("cannot restore an active agent");
    this.reset(messages);
    this.#lastResult = lastResult === null ? null : structuredClone(lastResult);
  }

  /**
   * Stop accepting work, discard queued follow-ups (`agent_shutdown`), wait for
   * the active run (abort it first for a prompt stop), shut the model down and
   * end `events()` subscriptions. Idempotent.
   */
  async shutdown(): Promise<void> {
    if (!this.#shuttingDown) {
      this.#shuttingDown = true;
      this.#discardFollowUps("agent_shutdown");
    }
    await this.waitForIdle();
    if (this.#started) {
      this.#started = false;
      await this.#model.shutdown?.();
    }
    await this.#emitter.closeSubscribers();
  }

  // -------------------------------------------------------------------------
  // Serialisation

  async #operation(fn: () => Promise<AgentRunResult>): Promise<AgentRunResult>;
  async #operation<T>(fn: () => Promise<T>, isRun: false): Promise<T>;
  async #operation<T>(fn: () => Promise<T>, isRun = true): Promise<T> {
    this.#pendingOps++;
    this.#gateHeld++;
    const previous = this.#gate;
    let release!: () => void;
    this.#gate = new Promise((r) => (release = r));
    try {
      await previous;
      if (!isRun) return await fn();
      this.#followUpChainOpen = true;
      let res = (await fn()) as AgentRunResult;
      const first = res as T;
      // Drain follow-ups before releasing the gate, so they run before queued direct runs.
      while (this.#followUps.length > 0) {
        if (!(res.status === "completed" || this.#followUpPolicy === "continue")) {
          this.#discardFollowUps("previous_run_not_completed");
          break;
        }
        const next = this.#followUps.shift()!;
        try {
          res = await this.#execute(next.control.content);
          next.resolve(res);
        } catch (err) {
          next.reject(err);
          this.#discardFollowUps("previous_run_not_completed");
          break;
        }
      }
      return first;
    } finally {
      this.#followUpChainOpen = false;
      this.#gateHeld--;
      release();
      this.#pendingOps--;
      if (!this.isActive) {
        const waiters = this.#idleWaiters;
        this.#idleWaiters = [];
        for (const w of waiters) w();
      }
    }
  }

  #discardFollowUps(reason: FollowUpDiscardReason): void {
    const q = this.#followUps;
    this.#followUps = [];
    for (const f of q) f.reject(new FollowUpDiscardedError(reason));
  }

  // -------------------------------------------------------------------------
  // The run

  async #execute(task: string | null): Promise<AgentRunResult> {
    const op: ActiveOperation = { controller: new AbortController(), abortReason: DEFAULT_ABORT_REASON, steering: [], steeringClosed: false };
    this.#active = op;
    this.#status = "running";
    const emitter = this.#emitter;
    const usage = new UsageAccumulator();
    const runId = emitter.beginRun();
    const counters = { turns: 0 };
    let res: AgentRunResult;
    try {
      if (task === null) {
        await emitter.emit({ kind: "agent_continued" });
      } else {
        this.#append({ role: "user", content: task });
        await emitter.emit({ kind: "agent_started", task });
      }
      try {
        this.#executor.guard.reset();
        this.#activeSkill = null;
        await this.#activateSkill("run_start");
        if (!this.#started) {
          await raceAbort(Promise.resolve(this.#model.startup?.()), op.controller.signal, () => op.abortReason);
          this.#started = true;
        }
        res = await this.#loop(task, runId, op, usage, counters);
      } catch (err) {
        const turns = counters.turns;
        // After abort(), whatever the model or a hook threw on the way out is the abort.
        if (err instanceof AgentCancelledError || (op.controller.signal.aborted && !(err instanceof RepeatedToolCallError))) {
          res = result("cancelled", "external_abort", turns, usage, null, op.abortReason);
        } else if (err instanceof RepeatedToolCallError) res = result("failed", "repeated_tool_call", turns, usage, null, err.message);
        else if (err instanceof CompactionFailedError) res = result("failed", "compaction_failed", turns, usage, null, err.message);
        else if (err instanceof ModelProviderError && err.kind === "context_overflow") res = result("failed", "context_overflow", turns, usage, null, err.message);
        else res = result("failed", "runtime_error", turns, usage, null, err instanceof Error ? err.message : String(err));
      }
      op.steeringClosed = true;
      const left = op.steering.splice(0);
      for (const c of left) await emitter.emit({ kind: "steering_discarded", control: c, reason: res.stop_reason });
      this.#lastResult = res;
      this.#status = res.status;
      await emitter.emit({ kind: "agent_finished", result: res });
      return res;
    } finally {
      op.steeringClosed = true;
      if (this.#active === op) this.#active = null;
    }
  }

  async #loop(task: string | null, runId: string, op: ActiveOperation, usage: UsageAccumulator, counters: { turns: number }): Promise<AgentRunResult> {
    const policy = this.policy;
    const signal = op.controller.signal;
    const reason = () => op.abortReason;
    const emit = (p: Parameters<EventEmitter["emit"]>[0]) => this.#emitter.emit(p);
    const state = { noToolResponses: 0 };

    for (let step = 0; step < policy.maxSteps; step++) {
      if (signal.aborted) throw new AgentCancelledError(reason());
      const budget = this.#budgetFailure(usage, counters.turns);
      if (budget !== null) return budget;
      const turn = ++counters.turns;
      await emit({ kind: "turn_started", turn });
      let response: AssistantMessage;
      try {
        const answer = await this.#modelTurn(turn, op, usage, state);
        response = answer.message;
        if (signal.aborted) throw new AgentCancelledError(reason());
        const cut = answer.finishReason === null ? undefined : CUT_OFF[answer.finishReason];
        if (cut !== undefined) {
          // A cut-off answer ends the run. Its tool calls are not run (a `length`
          // cut can leave their arguments half-written); each gets a tool message
          // saying so, which keeps the history well formed for a continue.
          const calls = response.tool_calls;
          if (calls.length > 0) await this.#executor.settleNotRun(calls, turn, notRunReason(answer.finishReason!));
          const more = calls.length > 0 ? `; its ${calls.length} tool call(s) were not run` : "";
          return result("failed", cut.stop, turn, usage, response.content, cut.error + more);
        }
        if (response.tool_calls.length === 0) {
          if (op.steering.length > 0) {
            state.noToolResponses = 0; // not terminal: the loop applies the steering
          } else if (!policy.requireExplicitFinish) {
            const content = response.content;
            if (content) return result("completed", "text_response", turn, usage, content);
            return result("failed", "empty_response", turn, usage, null, "the model returned an empty response");
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
          const tr = await this.#executor.executeAll(response.tool_calls, answer.args, turn, signal, reason, { agentId: this.agentId, runId, turn });
          if (tr.cancelled) throw new AgentCancelledError(reason());
          if (tr.control === "complete") return result("completed", "tool_completion", turn, usage, tr.output);
          if (tr.control === "reject") return result("rejected", "tool_rejected", turn, usage, tr.output, "tool execution was rejected");
          if (tr.control === "cancel") return result("cancelled", "tool_cancelled", turn, usage, tr.output, "tool execution was cancelled");
        }
      } finally {
        await emit({ kind: "turn_completed", turn });
      }
      for (const hook of this.#hooks) {
        if (typeof hook.afterTurn !== "function") continue;
        const snapshot: TurnSnapshot = {
          agent_id: this.agentId,
          run_id: runId,
          turn,
          task,
          response: structuredClone(response),
          usage: usage.snapshot(),
          messages: structuredClone(this.#messages),
        };
        const decision = await raceAbort(Promise.resolve(hook.afterTurn(snapshot, signal)), signal, reason);
        if (decision === undefined || decision === null) continue;
        if (typeof decision !== "object" || (decision.action !== "continue" && decision.action !== "stop")) {
          throw new TypeError("afterTurn must return a BehaviorDecision ({ action: \"continue\" | \"stop\" }) or nothing");
        }
        if (decision.action === "continue") {
          if ((decision as { output?: unknown }).output != null) throw new TypeError("afterTurn: a \"continue\" decision cannot carry output");
          continue;
        }
        const out = decision.output ?? response.content;
        if (out !== null && typeof out !== "string") throw new TypeError("afterTurn: stop output must be a string or null");
        return result("completed", "behavior_stop", turn, usage, out);
      }
    }
    return result("failed", "max_steps", counters.turns, usage, null, `agent '${this.agentId}' did not finish within ${policy.maxSteps} ${policy.maxSteps === 1 ? "step" : "steps"}`);
  }

  #budgetFailure(usage: UsageAccumulator, turns: number): AgentRunResult | null {
    const limit = this.policy.maxRunTokens;
    if (limit === null || usage.requestCount === 0) return null;
    const u = usage.snapshot();
    const missing = u.request_count - u.reported_request_count;
    if (missing > 0) {
      return result("failed", "usage_unavailable", turns, usage, null, `the run token budget cannot be enforced: ${missing} model request(s) did not report usage`);
    }
    if (u.total_tokens >= limit) {
      return result("failed", "token_budget_exceeded", turns, usage, null, `the run used ${u.total_tokens} tokens, reaching its budget of ${limit}`);
    }
    return null;
  }

  /**
   * Apply steering (the safe point), build and evaluate the context, compact
   * on pressure, stream the model (compacting and retrying once after an
   * overflow), record the message.
   */
  async #modelTurn(turn: number, op: ActiveOperation, usage: UsageAccumulator, state: { noToolResponses: number }): Promise<ModelAnswer> {
    const signal = op.controller.signal;
    const reason = () => op.abortReason;
    const build = async (): Promise<{ messages: ChatMessage[]; preparation: CompactionPreparation | null }> => {
      for (;;) {
        const drained = op.steering.splice(0);
        if (drained.length > 0) state.noToolResponses = 0;
        for (const c of drained) {
          this.#append({ role: "user", content: c.content });
          await this.#emitter.emit({ kind: "steering_applied", control: c, target_turn: turn });
        }
        if (drained.length > 0) await this.#activateSkill("steering");
        const messages = this.#context(state.noToolResponses);
        const preparation = await this.#evaluatePressure(turn, messages);
        if (op.steering.length === 0) return { messages, preparation };
      }
    };
    let { messages, preparation } = await build();
    if (signal.aborted) throw new AgentCancelledError(reason());
    const auto = this.#compaction?.auto;
    if (preparation !== null && auto?.enabled && auto.compactOnPressure) {
      if ((await this.#compactInRun("pressure", preparation, op)) === "completed") ({ messages } = await build());
    }
    let retries = 0;
    for (;;) {
      if (signal.aborted) throw new AgentCancelledError(reason());
      try {
        return await this.#requestModel(turn, messages, op, usage);
      } catch (err) {
        if (!(err instanceof ModelProviderError) || err.kind !== "context_overflow" || err.responseStarted || signal.aborted) throw err;
        if (!auto?.enabled || !auto.recoverOnOverflow || retries >= auto.maxOverflowRetries) throw err;
        if ((await this.#compactInRun("overflow", null, op)) !== "completed") throw err;
        retries++;
        ({ messages } = await build());
      }
    }
  }

  /** One model request: stream it, emit deltas, record the assistant message. */
  async #requestModel(turn: number, messages: ChatMessage[], op: ActiveOperation, usage: UsageAccumulator): Promise<ModelAnswer> {
    const signal = op.controller.signal;
    const reason = () => op.abortReason;
    usage.beginRequest();
    const tools = this.#toolSpecs();
    const stream = streamModel(this.#model, { messages, tools, signal });
    const it = stream[Symbol.asyncIterator]();
    let completed: { message: AssistantMessage; usage?: ModelUsage; finish_reason?: string } | undefined;
    let finished = false;
    let shown = false;
    try {
      for (;;) {
        const step = await raceAbort(it.next(), signal, reason);
        if (step.done) {
          finished = true;
          break;
        }
        const ev = step.value;
        if (ev.type === "text_delta") {
          if (ev.delta.length > 0) {
            shown = true;
            await this.#emitter.emit({ kind: "assistant_text_delta", turn, delta: ev.delta });
          }
        } else if (ev.type === "thinking_delta") {
          if (ev.delta.length > 0) {
            shown = true;
            await this.#emitter.emit({ kind: "assistant_thinking_delta", turn, delta: ev.delta });
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
    const calls = completed.message.tool_calls ?? [];
    const args = calls.map(toolCallArguments);
    const message: AssistantMessage = Object.freeze({
      content: completed.message.content ?? null,
      tool_calls: Object.freeze(calls.map((c) => Object.freeze({ id: c.id, name: c.name, arguments: c.arguments }))) as ModelToolCall[],
    });
    usage.record(completed.usage);
    const stored: AgentMessage = { role: "assistant", content: message.content };
    if (message.tool_calls.length > 0) {
      stored.tool_calls = message.tool_calls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.arguments } }));
    }
    if (completed.usage !== undefined) stored.usage = { ...completed.usage };
    this.#append(stored);
    await this.#emitter.emit({ kind: "message_completed", turn, message, usage: completed.usage ?? null });
    return { message, args, finishReason: typeof completed.finish_reason === "string" ? completed.finish_reason : null };
  }

  /** Add a message to the conversation (and its frozen request-shaped twin). */
  #append(m: AgentMessage): void {
    this.#messages.push(m);
    this.#wire.push(toModelMessage(m));
    this.#historyVersion++;
  }

  /** Replace the whole history at once (a completed compaction). */
  #replaceHistory(messages: AgentMessage[]): void {
    this.#messages = messages;
    this.#wire = messages.map(toModelMessage);
    this.#historyVersion++;
  }

  /** Estimate the request context and ask the policy; emits `context_pressure_evaluated`. */
  async #evaluatePressure(turn: number, messages: readonly ChatMessage[]): Promise<CompactionPreparation | null> {
    const c = this.#compaction;
    if (c === null) return null;
    // The request context, but with the stored messages (their reported usage counts).
    // The history's request copies are the #wire objects themselves, in order
    // (other messages, such as the skill messages, may sit between them).
    const estimated: EstimatedMessage[] = messages.slice();
    const wire = this.#wire;
    for (let i = 0, j = 0; i < estimated.length && j < wire.length; i++) {
      if (estimated[i] === wire[j]) estimated[i] = this.#messages[j++];
    }
    const estimate = estimateContextUsage(estimated, toolsForEstimate(this.#toolSpecs()), c.policy.estimator);
    const decision = c.policy.evaluate(estimate);
    const preparation = decision.should_compact ? c.policy.prepare(this.#messages) : null;
    await this.#emitter.emit({ kind: "context_pressure_evaluated", turn, decision, preparation });
    return preparation;
  }

  /** An automatic compaction inside a run: cancelled aborts the run, failed ends it `compaction_failed`. */
  async #compactInRun(trigger: CompactionTrigger, preparation: CompactionPreparation | null, op: ActiveOperation): Promise<CompactionStatus> {
    const r = await this.#runCompaction(trigger, preparation, op);
    if (r.status === "cancelled") throw new AgentCancelledError(op.abortReason);
    if (r.status === "failed") throw new CompactionFailedError(r.error ?? "compaction failed");
    return r.status;
  }

  /**
   * One compaction: `compaction_started`, then skipped when nothing would be
   * summarised, else the compactor's summary replaces the summarised turns
   * (protected + summary + kept, atomically). Failures and aborts leave the
   * history unchanged and emit `compaction_failed`.
   */
  async #runCompaction(trigger: CompactionTrigger, given: CompactionPreparation | null, op: ActiveOperation): Promise<CompactionResult> {
    const c = this.#compaction!;
    const signal = op.controller.signal;
    const version = this.#historyVersion;
    const before = this.#messages.length;
    const preparation = given ?? c.policy.prepare(this.#messages);
    let previous: SummaryEntry | null = null;
    for (const m of preparation.protected_messages) previous = summaryOf(m) ?? previous;
    const request: CompactionRequest = { operation_id: randomHex(16), trigger, preparation, previous_summary: previous === null ? null : { ...previous } };
    const base = { operation_id: request.operation_id, trigger, summary: null, messages_before: before, messages_after: before, error: null };
    await this.#emitter.emit({ kind: "compaction_started", request });
    if (!preparation.can_compact) {
      const r: CompactionResult = { ...base, status: "skipped" };
      await this.#emitter.emit({ kind: "compaction_completed", result: r });
      return r;
    }
    let r: CompactionResult;
    try {
      if (c.compactor === undefined) throw new Error("no compactor is configured");
      if (signal.aborted) throw new AgentCancelledError(op.abortReason);
      const compactor = c.compactor;
      const out = await raceAbort(Promise.resolve().then(() => compactor.compact(request, signal)), signal, () => op.abortReason);
      const content = typeof out?.content === "string" ? out.content.trim() : "";
      const source = typeof out?.source === "string" ? out.source.trim() : "";
      if (content === "") throw new Error("the compactor returned empty content");
      if (source === "") throw new Error("the compactor returned an empty source");
      if (signal.aborted) throw new AgentCancelledError(op.abortReason);
      if (this.#historyVersion !== version) throw new Error("agent history changed during compaction");
      const entry: SummaryEntry = {
        content,
        source,
        history_start_index: preparation.history_start_index,
        first_kept_index: preparation.first_kept_index,
        summarized_message_count: (previous?.summarized_message_count ?? 0) + preparation.messages_to_summarize.length,
        tokens_before: preparation.estimated_history_tokens,
      };
      const kept = this.#messages.slice(preparation.first_kept_index);
      const protectedNow = this.#messages.slice(0, preparation.history_start_index).filter((m) => summaryOf(m) === null);
      this.#replaceHistory([...protectedNow, summaryMessage(entry), ...kept]);
      r = { ...base, status: "completed", summary: { ...entry }, messages_after: this.#messages.length };
    } catch (err) {
      const cancelled = err instanceof AgentCancelledError || signal.aborted;
      r = { ...base, status: cancelled ? "cancelled" : "failed", error: cancelled ? op.abortReason : err instanceof Error ? err.message : String(err) };
      await this.#emitter.emit({ kind: "compaction_failed", result: r });
      return r;
    }
    await this.#emitter.emit({ kind: "compaction_completed", result: r });
    return r;
  }

  /** Tool specs for the model, rebuilt only when the registry grew (tools are never removed). */
  #toolSpecs(): ModelToolSpec[] {
    const registry = this.runtime.registry;
    if (this.#specs === undefined || this.#specs.length !== registry.size) {
      this.#specs = registry.list().map((t) => ({
        name: t.name,
        description: t.description,
        parameters: t.parameters,
        ...(t.strict ? { strict: true } : {}),
      }));
    }
    return this.#specs;
  }

  /** The request context: system prompt (+ explicit-finish note), history without usage, transient retry note. */
  #context(noToolResponses: number): ChatMessage[] {
    if (this.#system === undefined) {
      const parts = [this.#systemPrompt, this.policy.requireExplicitFinish ? EXPLICIT_FINISH_NOTE : undefined].filter((s) => s !== undefined && s.length > 0);
      this.#system = parts.length > 0 ? Object.freeze({ role: "system" as const, content: parts.join("\n\n") }) : null;
    }
    // One native copy of the history (the messages themselves are shared and frozen).
    const out = this.#system === null ? this.#wire.slice() : [this.#system].concat(this.#wire);
    if (noToolResponses > 0) out.push({ role: "system", content: retryNote(noToolResponses, this.policy.maxNoToolResponses) });
    if (this.#skills !== null) this.#insertSkillMessages(out);
    return out;
  }

  /**
   * Put the skills index (and the active skill's message) right after the
   * leading system messages of a request context. Request-only: never stored.
   */
  #insertSkillMessages(context: ChatMessage[]): void {
    const catalog = this.#skills!;
    const index = skillIndexMessage(catalog);
    if (index === null) return;
    const extra = this.#activeSkill === null ? [index] : [index, activeSkillMessage(catalog, this.#activeSkill)];
    let k = 0;
    while (k < context.length && context[k]!.role === "system") k++;
    context.splice(k, 0, ...extra);
  }

  /**
   * Scan the latest user message for `$name` / `skill:name`; the first skill
   * (in discovery order) it mentions becomes active. A message that mentions
   * none leaves the active skill as it is. Emits `skill_activated` when the
   * active skill changes.
   */
  async #activateSkill(trigger: "run_start" | "steering"): Promise<void> {
    const catalog = this.#skills;
    if (catalog === null) return;
    const text = latestUserText(this.#messages);
    if (text === null) return;
    const skill = findSkillMention(catalog, text);
    if (skill === null || skill === this.#activeSkill) return;
    this.#activeSkill = skill;
    await this.#emitter.emit({ kind: "skill_activated", name: skill.name, path: skill.path, trigger });
  }
}

/** Every assistant tool call id has a later tool message. */
function toolStateComplete(messages: readonly AgentMessage[]): boolean {
  const open = new Set<string>();
  for (const m of messages) {
    if (m.role === "assistant" && m.tool_calls !== undefined) {
      if (!Array.isArray(m.tool_calls)) return false;
      for (const c of m.tool_calls) {
        if (typeof c?.id !== "string") return false;
        open.add(c.id);
      }
    } else if (m.role === "tool") {
      open.delete(m.tool_call_id);
    }
  }
  return open.size === 0;
}

/** Create an agent. Throws TypeError/RangeError for invalid options. */
export function createAgent(options: AgentOptions): Agent {
  return new Agent(options);
}
