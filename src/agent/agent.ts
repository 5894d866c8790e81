/**
 * The agent: the state around the run loop (harness-contracts §3): the
 * history, queues (steering, follow-ups), run control, serialisation of
 * calls, compaction and skills. The loop itself is `runLoop` in `loop.ts`,
 * which reaches all of this only through the hooks passed to it.
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
import { type ChatMessage, type ModelAdapter, ModelProviderError, type ModelToolSpec } from "../providers/types.ts";
import { createRuntime, type Runtime } from "../runtime/runtime.ts";
import { withToolImages } from "../context/builder.ts";
import { type ImageAttachment, toImageAttachments } from "../providers/images.ts";
import { estimateContextUsage, toolsForEstimate } from "../context/estimate.ts";
import type { CompactionPreparation, CompactionResult, CompactionStatus, CompactionTrigger } from "../context/types.ts";
import type { InstructionFile } from "../context/events.ts";
import { type Skill, SkillCatalog } from "../skills/catalog.ts";
import { activeSkillMessage, findSkillMention, latestUserText, skillIndexMessage } from "../skills/context.ts";
import { type AgentEvent, EventEmitter, type EventStreamOptions, randomHex } from "./events.ts";
import { AgentCancelledError, RepeatedToolCallError, type ResumeDecision, ToolExecutor } from "./tools.ts";
import { type AgentHooks, type LoopHooks, raceAbort, result, runLoop, storeFailed } from "./loop.ts";
import { AgentTracer } from "./tracing.ts";
import { CompactionFailedError, type ResolvedCompaction, resolveCompaction, runCompaction } from "./compaction.ts";
import { Conversation, EXPLICIT_FINISH_NOTE, retryNote, toolStateComplete, unansweredCalls } from "./conversation.ts";
import { type AgentOptions, compileOutputSchema, type FollowUpHandle, makeControl, positiveCapacity, type RunOptions } from "./options.ts";
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
  resolvePolicy,
  type RuntimePolicy,
  type RuntimePolicyOptions,
  UsageAccumulator,
} from "./types.ts";

export type { AgentHooks, BehaviorDecision, TurnSnapshot } from "./loop.ts";
export type { AutoCompactionOptions, CompactionOptions } from "./compaction.ts";
export { type AgentOptions, compileOutputSchema, DEFAULT_QUEUE_CAPACITY, type FollowUpHandle, type RunOptions } from "./options.ts";

export const DEFAULT_ABORT_REASON = "agent run was aborted";

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
  readonly #suspendOnApproval: boolean;
  readonly #instructions: readonly InstructionFile[];
  /** The history and its request context. */
  readonly #conversation: Conversation;
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
  readonly #skills: SkillCatalog | null;
  #activeSkill: Skill | null = null;

  constructor(options: AgentOptions) {
    if (typeof options !== "object" || options === null) throw new TypeError("createAgent: options must be an object");
    const m = options.model;
    if (typeof m !== "object" || m === null || typeof m.complete !== "function") {
      throw new TypeError("createAgent: model must be a ModelAdapter with a complete() method");
    }
    if (options.systemPrompt !== undefined && typeof options.systemPrompt !== "string")
      throw new TypeError("createAgent: systemPrompt must be a string");
    this.policy = resolvePolicy(options.policy);
    if (options.runtime !== undefined && options.tools !== undefined) {
      throw new TypeError("createAgent: pass either runtime or tools, not both (register extra tools on the runtime)");
    }
    this.runtime = options.runtime ?? createRuntime({ builtins: false, tools: options.tools ?? [] });
    this.agentId = options.agentId ?? `agent-${randomHex(6)}`;
    if (typeof this.agentId !== "string" || this.agentId.length === 0)
      throw new TypeError("createAgent: agentId must be a non-empty string");
    this.#systemPrompt = options.systemPrompt;
    const system = [this.#systemPrompt, this.policy.requireExplicitFinish ? EXPLICIT_FINISH_NOTE : undefined].filter(
      (s) => s !== undefined && s.length > 0,
    );
    this.#conversation = new Conversation(
      system.length > 0 ? Object.freeze({ role: "system" as const, content: system.join("\n\n") }) : null,
    );
    const hooks = options.hooks === undefined ? [] : Array.isArray(options.hooks) ? options.hooks : [options.hooks as AgentHooks];
    this.#hooks = [...hooks];
    this.#steeringCapacity = positiveCapacity("steeringQueueCapacity", options.steeringQueueCapacity);
    this.#followUpCapacity = positiveCapacity("followUpQueueCapacity", options.followUpQueueCapacity);
    this.#followUpPolicy = options.followUpFailurePolicy ?? "discard";
    if (this.#followUpPolicy !== "discard" && this.#followUpPolicy !== "continue") {
      throw new TypeError(`followUpFailurePolicy must be "discard" or "continue"`);
    }
    this.#compaction = resolveCompaction(options.compaction);
    if (options.suspendOnApproval !== undefined && typeof options.suspendOnApproval !== "boolean")
      throw new TypeError("createAgent: suspendOnApproval must be a boolean");
    this.#suspendOnApproval = options.suspendOnApproval === true;
    this.#instructions = (options.instructions ?? []).map((f) => Object.freeze({ ...f }));
    const sk = options.skills;
    if (sk !== undefined && !(sk instanceof SkillCatalog)) {
      throw new TypeError("createAgent: skills must be a SkillCatalog (from discoverSkills(dir))");
    }
    this.#skills = sk ?? null;
    if (options.tracing !== undefined && options.tracing !== false && (typeof options.tracing !== "object" || options.tracing === null))
      throw new TypeError("createAgent: tracing must be an object of tracing options or false");
    const tracer = options.tracing === false ? null : new AgentTracer(this.agentId, m, options.tracing);
    this.#model = tracer === null ? m : tracer.wrapModel(m);
    const self = this;
    // Sinks read the conversation through this (a SessionRecorder journals it after a compaction).
    // The tracer goes first, as an observer: events it does not need cost nothing when no sink listens.
    const source = {
      get messages() {
        return self.messages;
      },
    };
    // A record that cannot be written stops the run at once (see storeFailed).
    const stop = () => this.#active?.controller.abort(new DOMException("the run's records could not be written", "AbortError"));
    this.#emitter = new EventEmitter(this.agentId, options.sinks ?? [], this.runtime.logger, source, tracer, stop);
    this.#executor = new ToolExecutor(this.runtime, this.policy, this.#emitter, (msg) => this.#append(msg), tracer);
  }

  // -------------------------------------------------------------------------
  // State

  get status(): AgentStatus {
    return this.#status;
  }

  /** A copy of the conversation (without system prompts). */
  get messages(): AgentMessage[] {
    return structuredClone(this.#conversation.messages);
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
  run(task: string, options: RunOptions = {}): Promise<AgentRunResult> {
    if (typeof task !== "string" || task.trim().length === 0) return Promise.reject(new TypeError("task must be a non-empty string"));
    if (this.#shuttingDown) return Promise.reject(new Error("agent is shut down"));
    let images: ImageAttachment[] | undefined;
    try {
      compileOutputSchema(options);
      if (options.images !== undefined && options.images.length > 0)
        images = toImageAttachments(options.images, options.maxImageBytes !== undefined ? { maxBytes: options.maxImageBytes } : {});
    } catch (e) {
      return Promise.reject(e);
    }
    return this.#operation(() => this.#execute(task, options, undefined, images));
  }

  /** Why `continueRun()` would be rejected now, or null when it would start. */
  get continueRejectionReason(): ContinueRejectedReason | null {
    if (this.#shuttingDown) return "agent_shutting_down";
    if (this.isActive) return "agent_active";
    const last = this.#lastResult;
    if (last === null) return "no_previous_run";
    if (!CONTINUABLE_STOP_REASONS.has(last.stop_reason)) return "unsupported_stop_reason";
    if (!toolStateComplete(this.#conversation.messages)) return "incomplete_tool_state";
    return null;
  }

  get canContinue(): boolean {
    return this.continueRejectionReason === null;
  }

  /** Resume the conversation without a new user message. Throws ContinueRejectedError. */
  continueRun(options: RunOptions = {}): Promise<AgentRunResult> {
    const reason = this.continueRejectionReason;
    if (reason !== null) return Promise.reject(new ContinueRejectedError(reason));
    try {
      compileOutputSchema(options);
    } catch (e) {
      return Promise.reject(e);
    }
    return this.#operation(() => this.#execute(null, options));
  }

  /**
   * The tool calls a suspended run left without an answer (the last
   * assistant message's calls with no tool message), in order.
   */
  get suspendedCalls(): { id: string; name: string; arguments: string }[] {
    return unansweredCalls(this.#conversation.messages);
  }

  /** Why `resumeRun()` would be rejected now, or null. */
  get resumeRejectionReason(): ContinueRejectedReason | null {
    if (this.#shuttingDown) return "agent_shutting_down";
    if (this.isActive) return "agent_active";
    const last = this.#lastResult;
    if (last === null) return "no_previous_run";
    if (last.stop_reason !== "awaiting_approval") return "not_suspended";
    return null;
  }

  /**
   * Resume a run that ended `awaiting_approval` (restored from a session, or
   * this agent's own last run), as `continueRun()` does: a new run without a
   * user message, which first settles the calls the suspended turn left
   * unanswered: a call answered in `decisions` with `approved: true` runs
   * (the policy is asked again, but its approver is not: a deny rule still
   * refuses), `approved: false` gives the model the policy's rejection
   * payload `{"status":"rejected","tool",…,"reason",…}` and the run goes on;
   * a call with no answer goes through the policy as a new one (a read-only
   * call interrupted by a crash runs again; one that still needs an approval
   * suspends the run again). Then the loop goes on. The front ends refuse to
   * resume while an approval is unanswered. Throws ContinueRejectedError.
   */
  resumeRun(
    decisions: ReadonlyMap<string, ResumeDecision> | Readonly<Record<string, ResumeDecision>> = {},
    options: RunOptions = {},
  ): Promise<AgentRunResult> {
    const reason = this.resumeRejectionReason;
    if (reason !== null) return Promise.reject(new ContinueRejectedError(reason));
    const map = decisions instanceof Map ? new Map(decisions) : new Map(Object.entries(decisions as Record<string, ResumeDecision>));
    const calls = this.suspendedCalls;
    return this.#operation(() => this.#execute(null, options, { calls, decisions: map }));
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
    if (c === null || c.compactor === undefined)
      return Promise.reject(new Error("compact() needs the compaction.policy and compaction.compactor options"));
    if (this.#shuttingDown) return Promise.reject(new Error("agent is shut down"));
    return this.#operation(async () => {
      const op: ActiveOperation = {
        controller: new AbortController(),
        abortReason: DEFAULT_ABORT_REASON,
        steering: [],
        steeringClosed: true,
        compaction: true,
      };
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
    this.#conversation.clear();
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

  async #execute(
    task: string | null,
    options: RunOptions = {},
    resume?: { calls: readonly { id: string; name: string; arguments: string }[]; decisions: ReadonlyMap<string, ResumeDecision> },
    images?: ImageAttachment[],
  ): Promise<AgentRunResult> {
    const op: ActiveOperation = {
      controller: new AbortController(),
      abortReason: DEFAULT_ABORT_REASON,
      steering: [],
      steeringClosed: false,
    };
    this.#active = op;
    this.#status = "running";
    const emitter = this.#emitter;
    const usage = new UsageAccumulator();
    const runId = emitter.beginRun();
    const counters = { turns: 0 };
    const output = compileOutputSchema(options);
    let res: AgentRunResult;
    try {
      try {
        if (task === null) {
          await emitter.emit({ kind: "agent_continued" });
        } else {
          const named = this.#instructions.length > 0 ? { instructions: this.#instructions.map((f) => ({ ...f })) } : {};
          if (images === undefined) {
            this.#append({ role: "user", content: task });
            await emitter.emit({ kind: "agent_started", task, ...named });
          } else {
            this.#append({ role: "user", content: task, images });
            await emitter.emit({ kind: "agent_started", task, images: structuredClone(images), ...named });
          }
        }
        this.#executor.guard.reset();
        this.#activeSkill = null;
        await this.#activateSkill("run_start");
        if (!this.#started) {
          await raceAbort(Promise.resolve(this.#model.startup?.()), op.controller.signal, () => op.abortReason);
          this.#started = true;
        }
        res = await runLoop({
          agentId: this.agentId,
          runId,
          task,
          model: this.#model,
          policy: this.policy,
          executor: this.#executor,
          behaviors: this.#hooks,
          hooks: this.#loopHooks(op),
          usage,
          counters,
          signal: op.controller.signal,
          abortReason: () => op.abortReason,
          suspendOnApproval: options.suspendOnApproval ?? this.#suspendOnApproval,
          ...(output !== undefined ? { output } : {}),
          ...(resume !== undefined ? { resume } : {}),
          drainSteering: () => op.steering.splice(0),
          hasSteering: () => op.steering.length > 0,
          emit: (e) => emitter.emit(e),
          listens: (kind) => emitter.listens(kind),
        });
        // A record that could not be written stopped the run, whatever the loop made of it.
        if (emitter.failure !== null) res = storeFailed(emitter.failure, res.turns, usage);
      } catch (err) {
        const turns = counters.turns;
        // After abort(), whatever the model or a hook threw on the way out is the abort.
        if (emitter.failure !== null) res = storeFailed(emitter.failure, turns, usage);
        else if (err instanceof AgentCancelledError || (op.controller.signal.aborted && !(err instanceof RepeatedToolCallError))) {
          res = result("cancelled", "external_abort", turns, usage, null, op.abortReason);
        } else if (err instanceof RepeatedToolCallError) res = result("failed", "repeated_tool_call", turns, usage, null, err.message);
        else if (err instanceof CompactionFailedError) res = result("failed", "compaction_failed", turns, usage, null, err.message);
        else if (err instanceof ModelProviderError && err.kind === "context_overflow")
          res = result("failed", "context_overflow", turns, usage, null, err.message);
        else res = result("failed", "runtime_error", turns, usage, null, err instanceof Error ? err.message : String(err));
      }
      op.steeringClosed = true;
      const left = op.steering.splice(0);
      for (const c of left) await emitter.emit({ kind: "steering_discarded", control: c, reason: res.stop_reason });
      this.#lastResult = res;
      this.#status = res.status;
      try {
        await emitter.emit({ kind: "agent_finished", result: res });
      } catch (err) {
        // Its end could not be recorded: the run failed after all, and that is the end every other sink hears.
        res = storeFailed(err as Error, res.turns, usage);
        this.#lastResult = res;
        this.#status = res.status;
        await emitter.emit({ kind: "agent_finished", result: res }).catch(() => {});
      }
      return res;
    } finally {
      op.steeringClosed = true;
      if (this.#active === op) this.#active = null;
    }
  }

  /** What the loop calls back for: the history, the request context, skills and compaction. */
  #loopHooks(op: ActiveOperation): LoopHooks {
    const c = this.#compaction;
    const hooks: LoopHooks = {
      append: (m) => this.#append(m),
      messages: () => structuredClone(this.#conversation.messages),
      context: (noToolResponses) => this.#context(noToolResponses),
      tools: () => this.#toolSpecs(),
    };
    if (this.#skills !== null) hooks.onSteering = () => this.#activateSkill("steering");
    if (c !== null) {
      hooks.evaluatePressure = (turn, messages) => this.#evaluatePressure(turn, messages);
      hooks.autoCompaction = c.auto;
      hooks.compact = (trigger, preparation) => this.#compactInRun(trigger, preparation, op);
    }
    return hooks;
  }

  /** Add a message to the conversation (and its frozen request-shaped twin). */
  #append(m: AgentMessage): void {
    this.#conversation.append(m);
  }

  /** Estimate the request context and ask the policy; emits `context_pressure_evaluated`. */
  async #evaluatePressure(turn: number, messages: readonly ChatMessage[]): Promise<CompactionPreparation | null> {
    const c = this.#compaction;
    if (c === null) return null;
    // The request context, but with the stored messages (their reported usage counts).
    const estimated = this.#conversation.estimated(messages);
    const estimate = estimateContextUsage(estimated, toolsForEstimate(this.#toolSpecs()), c.policy.estimator);
    const decision = c.policy.evaluate(estimate);
    const preparation = decision.should_compact ? c.policy.prepare(this.#conversation.messages) : null;
    await this.#emitter.emit({ kind: "context_pressure_evaluated", turn, decision, preparation });
    return preparation;
  }

  /** An automatic compaction inside a run: cancelled aborts the run, failed ends it `compaction_failed`. */
  async #compactInRun(
    trigger: CompactionTrigger,
    preparation: CompactionPreparation | null,
    op: ActiveOperation,
  ): Promise<CompactionStatus> {
    const r = await this.#runCompaction(trigger, preparation, op);
    if (r.status === "cancelled") throw new AgentCancelledError(op.abortReason);
    if (r.status === "failed") throw new CompactionFailedError(r.error ?? "compaction failed");
    return r.status;
  }

  /** One compaction over this agent's history (see `runCompaction`). */
  #runCompaction(trigger: CompactionTrigger, given: CompactionPreparation | null, op: ActiveOperation): Promise<CompactionResult> {
    return runCompaction(this.#compaction!, trigger, given, op.controller.signal, () => op.abortReason, {
      messages: () => this.#conversation.messages,
      version: () => this.#conversation.version,
      replace: (messages) => this.#conversation.replace(messages),
      emit: (e) => this.#emitter.emit(e),
    });
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

  /**
   * The request context: system prompt (+ explicit-finish note), history
   * without usage, transient retry note, skills. Without request-only
   * additions it is the conversation's request itself, not a copy: a turn costs the same
   * however long the history (the adapter reads it during the request and
   * must neither change nor keep it, see ModelRequest.messages).
   */
  #context(noToolResponses: number): readonly ChatMessage[] {
    const request = this.#conversation.request();
    const toolImages = this.#conversation.toolImages;
    if (noToolResponses === 0 && this.#skills === null && toolImages === 0) return request;
    // Request-only additions: a copy of the array (the messages themselves are shared and frozen).
    const out = request.slice();
    if (noToolResponses > 0) out.push({ role: "system", content: retryNote(noToolResponses, this.policy.maxNoToolResponses) });
    if (this.#skills !== null) this.#insertSkillMessages(out);
    return toolImages > 0 ? withToolImages(out) : out;
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
    const text = latestUserText(this.#conversation.messages);
    if (text === null) return;
    const skill = findSkillMention(catalog, text);
    if (skill === null || skill === this.#activeSkill) return;
    this.#activeSkill = skill;
    await this.#emitter.emit({ kind: "skill_activated", name: skill.name, path: skill.path, trigger });
  }
}

/** Create an agent. Throws TypeError/RangeError for invalid options. */
export function createAgent(options: AgentOptions): Agent {
  return new Agent(options);
}
