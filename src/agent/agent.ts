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
import { toModelMessage, withToolImages } from "../context/builder.ts";
import { type ImageAttachment, type ImageInput, toImageAttachments } from "../providers/images.ts";
import { estimateContextUsage, type EstimatedMessage, toolsForEstimate } from "../context/estimate.ts";
import type { CompactionPreparation, CompactionResult, CompactionStatus, CompactionTrigger } from "../context/types.ts";
import type { InstructionFile } from "../context/events.ts";
import type { AnyToolDefinition } from "../tools/definition.ts";
import { type Skill, SkillCatalog } from "../skills/catalog.ts";
import { activeSkillMessage, findSkillMention, latestUserText, skillIndexMessage } from "../skills/context.ts";
import { type AgentEvent, type AgentEventSink, EventEmitter, type EventStreamOptions, randomHex } from "./events.ts";
import { AgentCancelledError, RepeatedToolCallError, type ResumeDecision, ToolExecutor } from "./tools.ts";
import { type AgentHooks, type LoopHooks, type LoopOutput, raceAbort, result, runLoop } from "./loop.ts";
import { AgentTracer, type TracingOptions } from "./tracing.ts";
import { SchemaCompileError, SchemaCompiler } from "../tools/schema.ts";
import { CompactionFailedError, type CompactionOptions, type ResolvedCompaction, resolveCompaction, runCompaction } from "./compaction.ts";
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

export const DEFAULT_ABORT_REASON = "agent run was aborted";
export const DEFAULT_QUEUE_CAPACITY = 16;

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
   * Calls that need an approval do not wait for the approver: the request is
   * announced (`approval_requested`, journaled by a session recorder), the
   * turn's other calls settle, and the run ends `suspended` /
   * `awaiting_approval`. Answer it in the journal and `resumeRun()` later.
   * Default false (a per-run `RunOptions` overrides it).
   */
  suspendOnApproval?: boolean;
  /**
   * Skills: a catalog from `discoverSkills()`. Each model request then
   * carries the skills index, and the active skill's files while one is
   * active (both only in the request, never in the history). See `src/skills`.
   */
  skills?: SkillCatalog;
  /**
   * OpenTelemetry spans of runs, model requests and tool calls (see
   * `src/agent/tracing.ts`, docs/tracing.md), through the registered SDK;
   * without one they cost next to nothing. `false`: no spans at all.
   */
  tracing?: TracingOptions | false;
  /**
   * The project instructions files (AGENTS.md) the system prompt carries,
   * named in each run's `agent_started` event (and so in the session
   * journal); the text itself is the front end's part of `systemPrompt`.
   */
  instructions?: readonly InstructionFile[];
}

/** Options of one run (`run`, `continueRun`, `resumeRun`). */
export interface RunOptions {
  /** Overrides the agent's `suspendOnApproval` for this run. */
  suspendOnApproval?: boolean;
  /**
   * Structured output: the final answer must be one JSON document matching
   * this JSON Schema. Each model request asks for it (the provider's
   * JSON-schema response format, or instructions where the server takes
   * none); the answer is parsed by the strict core and checked with ajv. A
   * mismatch gets one repair turn naming the JSON Pointer errors; a second
   * ends the run `failed` / `output_invalid`. On success the result carries
   * the value as `output_value`. Applies to answers in text (not to
   * explicit-finish mode). A schema that does not compile rejects the run
   * with a `SchemaCompileError` before it starts.
   */
  outputSchema?: Record<string, unknown>;
  /** The schema's name for the provider (default: its `title` made safe, else `"output"`). */
  outputSchemaName?: string;
  /** Ask the provider for strict schema adherence (default true). */
  outputStrict?: boolean;
  /**
   * Images of the task (`run` only): data URLs, bytes, or `{ data, mediaType }`
   * (see `ImageInput`); PNG, JPEG, GIF or WebP by their magic bytes, each at
   * most `maxImageBytes`, at most 16. They reach the model as content parts
   * of the task's user message, and a session journals them by reference
   * (the bytes in the store's blobs). A bad image rejects the run with an
   * `ImageInputError` naming it (`images[1]: …`) before it starts.
   */
  images?: readonly ImageInput[];
  /** Cap on one image's bytes (default 10 MiB). */
  maxImageBytes?: number;
}

/** Compile a run's output schema; throws SchemaCompileError / TypeError naming the option. */
export function compileOutputSchema(options: RunOptions): LoopOutput | undefined {
  const schema = options.outputSchema;
  if (schema === undefined) return undefined;
  if (typeof schema !== "object" || schema === null || Array.isArray(schema))
    throw new TypeError("outputSchema must be a JSON Schema object");
  if (options.outputStrict !== undefined && typeof options.outputStrict !== "boolean")
    throw new TypeError("outputStrict must be a boolean");
  let name = options.outputSchemaName;
  if (name !== undefined && (typeof name !== "string" || !/^[A-Za-z0-9_-]{1,64}$/.test(name)))
    throw new TypeError("outputSchemaName must be 1 to 64 letters, digits, '_' or '-'");
  if (name === undefined) {
    const title = typeof schema.title === "string" ? schema.title.replace(/[^A-Za-z0-9_-]+/g, "_").slice(0, 64) : "";
    name = /[A-Za-z0-9]/.test(title) ? title : "output";
  }
  let check: LoopOutput["check"];
  try {
    // A compiler of its own: a schema's $id never collides with another run's.
    const validate = new SchemaCompiler().compile(schema);
    check = (value) => validate(value as Record<string, unknown>);
  } catch (e) {
    if (e instanceof SchemaCompileError) throw new SchemaCompileError(`outputSchema: ${e.message}`);
    throw e;
  }
  return { format: { name, schema: structuredClone(schema), strict: options.outputStrict ?? true }, check };
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

const EXPLICIT_FINISH_NOTE = "This run ends only when you call a tool that finishes it. A reply in plain text does not end the run.";

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
  readonly #suspendOnApproval: boolean;
  readonly #instructions: readonly InstructionFile[];
  /** Bumped on every history change (to detect changes during a compaction). */
  #historyVersion = 0;

  #messages: AgentMessage[] = [];
  /**
   * The request context, kept in step with `#messages`: the system message
   * (when there is one) followed by each history message in request shape
   * (frozen, no `usage`). It grows in place, and a request without
   * request-only additions carries this array itself (see `#context`).
   */
  #request: ChatMessage[] = [];
  /** Messages before the history in `#request`: 1 with a system message, else 0. */
  #base = 0;
  /** Tool messages of the history with images (requests then carry them as a user message after the tool messages). */
  #toolImages = 0;
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
  #system: ChatMessage | null = null;
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
    if (system.length > 0) this.#system = Object.freeze({ role: "system" as const, content: system.join("\n\n") });
    this.#request = this.#emptyRequest();
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
    this.#emitter = new EventEmitter(this.agentId, options.sinks ?? [], this.runtime.logger, source, tracer);
    this.#executor = new ToolExecutor(this.runtime, this.policy, this.#emitter, (msg) => this.#append(msg), tracer);
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
    if (!toolStateComplete(this.#messages)) return "incomplete_tool_state";
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
    return unansweredCalls(this.#messages);
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
    this.#messages = [];
    this.#request = this.#emptyRequest();
    this.#toolImages = 0;
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
      try {
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
      } catch (err) {
        const turns = counters.turns;
        // After abort(), whatever the model or a hook threw on the way out is the abort.
        if (err instanceof AgentCancelledError || (op.controller.signal.aborted && !(err instanceof RepeatedToolCallError))) {
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
      await emitter.emit({ kind: "agent_finished", result: res });
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
      messages: () => structuredClone(this.#messages),
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

  /** A request context with no history: the system message, if any. */
  #emptyRequest(): ChatMessage[] {
    const out = this.#system === null ? [] : [this.#system];
    this.#base = out.length;
    return out;
  }

  /** Add a message to the conversation (and its frozen request-shaped twin). */
  #append(m: AgentMessage): void {
    if (m.role === "tool" && m.images !== undefined && m.images.length > 0) this.#toolImages++;
    this.#checkRequest();
    this.#messages.push(m);
    this.#request.push(toModelMessage(m));
    this.#historyVersion++;
  }

  /** Replace the whole history at once (a completed compaction). */
  #replaceHistory(messages: AgentMessage[]): void {
    this.#toolImages = messages.filter((m) => m.role === "tool" && m.images !== undefined && m.images.length > 0).length;
    this.#messages = messages;
    this.#request = this.#emptyRequest();
    for (const m of messages) this.#request.push(toModelMessage(m));
    this.#historyVersion++;
  }

  /**
   * The request array goes to the model as it is, and an adapter must not
   * change it (ModelRequest.messages). Should one have added or removed
   * messages anyway, the next request is rebuilt from the history, which the
   * adapter never sees.
   */
  #checkRequest(): void {
    const r = this.#request;
    if (r.length === this.#base + this.#messages.length && (this.#base === 0 || r[0] === this.#system)) return;
    this.#request = this.#emptyRequest();
    for (const m of this.#messages) this.#request.push(toModelMessage(m));
  }

  /** Estimate the request context and ask the policy; emits `context_pressure_evaluated`. */
  async #evaluatePressure(turn: number, messages: readonly ChatMessage[]): Promise<CompactionPreparation | null> {
    const c = this.#compaction;
    if (c === null) return null;
    // The request context, but with the stored messages (their reported usage counts).
    // The history's request copies are the #request objects themselves, in order
    // (other messages, such as the skill messages, may sit between them).
    const estimated: EstimatedMessage[] = messages.slice();
    const wire = this.#request;
    const base = this.#base;
    for (let i = 0, j = 0; i < estimated.length && base + j < wire.length; i++) {
      if (estimated[i] === wire[base + j]) estimated[i] = this.#messages[j++];
    }
    const estimate = estimateContextUsage(estimated, toolsForEstimate(this.#toolSpecs()), c.policy.estimator);
    const decision = c.policy.evaluate(estimate);
    const preparation = decision.should_compact ? c.policy.prepare(this.#messages) : null;
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
      messages: () => this.#messages,
      version: () => this.#historyVersion,
      replace: (messages) => this.#replaceHistory(messages),
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
   * additions it is `#request` itself, not a copy: a turn costs the same
   * however long the history (the adapter reads it during the request and
   * must neither change nor keep it, see ModelRequest.messages).
   */
  #context(noToolResponses: number): readonly ChatMessage[] {
    this.#checkRequest();
    if (noToolResponses === 0 && this.#skills === null && this.#toolImages === 0) return this.#request;
    // Request-only additions: a copy of the array (the messages themselves are shared and frozen).
    const out = this.#request.slice();
    if (noToolResponses > 0) out.push({ role: "system", content: retryNote(noToolResponses, this.policy.maxNoToolResponses) });
    if (this.#skills !== null) this.#insertSkillMessages(out);
    return this.#toolImages > 0 ? withToolImages(out) : out;
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

/** The calls of the last assistant message with tool calls that no later tool message answers. */
function unansweredCalls(messages: readonly AgentMessage[]): { id: string; name: string; arguments: string }[] {
  let last = -1;
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role === "assistant" && Array.isArray(m.tool_calls) && m.tool_calls.length > 0) {
      last = i;
      break;
    }
  }
  if (last < 0) return [];
  const answered = new Set<string>();
  for (const m of messages.slice(last + 1)) if (m.role === "tool") answered.add(m.tool_call_id);
  const calls = (messages[last] as { tool_calls: { id: string; function: { name: string; arguments: string } }[] }).tool_calls;
  return calls
    .filter((c) => typeof c?.id === "string" && !answered.has(c.id))
    .map((c) => ({ id: c.id, name: String(c.function?.name ?? ""), arguments: String(c.function?.arguments ?? "") }));
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
