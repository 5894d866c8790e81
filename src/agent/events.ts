/**
 * Lifecycle events: the envelope, the emitter (sinks awaited in order, one
 * global order per agent) and `events()` subscriptions.
 *
 * @module
 */
import { AgentcoreError } from "../core/errors.ts";
import type { Logger } from "../core/logger.ts";
import type { AgentEvent, AgentEventPayload, AgentEventSink, AgentEventSource } from "../context/events.ts";

// The event protocol (payloads, envelope, sinks) is defined in src/context/events.ts,
// below the session recorder that consumes it; the agent re-exports it.
export { AGENT_EVENT_KINDS } from "../context/events.ts";
export type {
  AgentEvent,
  AgentEventKind,
  AgentEventPayload,
  AgentEventSink,
  AgentEventSource,
  ApprovalRequestInfo,
  OutputError,
  ToolProgressUpdate,
} from "../context/events.ts";

/** Options of `agent.events()`. */
export interface EventStreamOptions {
  /** Events buffered for this subscriber before it counts as overflowing. Default 1024. */
  bufferSize?: number;
  /** Ends the iteration when aborted. */
  signal?: AbortSignal;
}

/** Thrown from an `events()` iterator whose consumer fell more than `bufferSize` events behind. */
export class EventBufferOverflowError extends AgentcoreError {
  readonly code: string = "AGENT_EVENT_BUFFER_OVERFLOW";
  override name = "EventBufferOverflowError";
  constructor(readonly bufferSize: number) {
    super(`event subscriber fell more than ${bufferSize} events behind; subscription closed`);
  }
}

export const DEFAULT_EVENT_BUFFER = 1024;

/**
 * One subscriber of `events()`. Delivery never blocks the run: events are
 * pushed into a bounded buffer. When a slow consumer lets the buffer fill up,
 * the subscription is closed: the consumer still receives every event buffered
 * so far, then the iterator throws {@link EventBufferOverflowError}. (We never
 * drop events silently, and a slow consumer never stalls the agent.)
 */
class Subscription implements AsyncIterableIterator<AgentEvent> {
  readonly #buffer: AgentEvent[] = [];
  /** Pending `next()` calls, oldest first (the buffer is empty while any wait). */
  readonly #waiters: { resolve(r: IteratorResult<AgentEvent>): void; reject(e: unknown): void }[] = [];
  #done = false;
  #overflow: EventBufferOverflowError | undefined;
  readonly #onAbort: (() => void) | undefined;

  constructor(
    private readonly size: number,
    private readonly detach: (s: Subscription) => void,
    private readonly signal?: AbortSignal,
  ) {
    if (signal !== undefined) {
      this.#onAbort = () => this.close();
      if (signal.aborted) this.#done = true;
      else signal.addEventListener("abort", this.#onAbort, { once: true });
    }
  }

  push(event: AgentEvent): void {
    if (this.#done || this.#overflow !== undefined) return;
    const w = this.#waiters.shift();
    if (w !== undefined) {
      w.resolve({ value: event, done: false });
      return;
    }
    if (this.#buffer.length >= this.size) {
      this.#overflow = new EventBufferOverflowError(this.size);
      this.detach(this);
      return;
    }
    this.#buffer.push(event);
  }

  close(): void {
    if (this.#done) return;
    this.#done = true;
    this.detach(this);
    if (this.#onAbort !== undefined) this.signal?.removeEventListener("abort", this.#onAbort);
    for (const w of this.#waiters.splice(0)) w.resolve({ value: undefined, done: true });
  }

  next(): Promise<IteratorResult<AgentEvent>> {
    const e = this.#buffer.shift();
    if (e !== undefined) return Promise.resolve({ value: e, done: false });
    if (this.#overflow !== undefined) {
      const err = this.#overflow;
      this.#done = true;
      this.#overflow = undefined;
      return Promise.reject(err);
    }
    if (this.#done) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => this.#waiters.push({ resolve, reject }));
  }

  return(): Promise<IteratorResult<AgentEvent>> {
    this.#buffer.length = 0;
    this.close();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<AgentEvent> {
    return this;
  }
}

/**
 * A sink of the agent's own (the tracer) that says which events it needs:
 * it is delivered to first, before the sinks, and while it wants no event of
 * a kind it costs nothing for that kind.
 */
export interface EventObserver {
  /** Whether an event of this kind is needed now. */
  wants(kind: AgentEventPayload["kind"]): boolean;
  handle(event: AgentEvent, source: AgentEventSource): void | Promise<void>;
}

const DELIVERED: Promise<void> = Promise.resolve();

/** A sink whose failure stops the run (`required: true`, a SessionRecorder). */
function isRequired(sink: AgentEventSink): boolean {
  return typeof sink === "object" && sink.required === true;
}

/**
 * The order in which an event reaches the sinks, and where the subscribers
 * of `events()` get it: after the last required sink (so a subscriber sees
 * an event only once it is recorded), or before every sink when none is
 * required.
 */
interface DeliveryPlan {
  sinks: AgentEventSink[];
  required: boolean[];
  subsAt: number;
}

function planOf(sinks: AgentEventSink[]): DeliveryPlan {
  const required = sinks.map(isRequired);
  return { sinks, required, subsAt: required.lastIndexOf(true) + 1 };
}

/**
 * Numbers, freezes and delivers events. Deliveries are chained, so events
 * reach sinks in emission order even when emitted from concurrent tool calls;
 * `emit()` resolves once every sink has handled the event. An event that
 * nobody would receive (no sink, no subscriber, an observer that does not
 * want it, nothing still being delivered) is only numbered: it is not built,
 * frozen or chained.
 *
 * A required sink (a SessionRecorder) is part of the run: when it fails on
 * an event, that event reaches no later sink and no subscriber, `emit()`
 * rejects with the error, {@link failure} keeps it, and `onFailure` is told
 * (the agent stops the run). For the rest of the event run required sinks
 * get only `agent_finished`, which then reaches every sink whatever they do
 * with it. An `agent_finished` that says `completed` goes to the required
 * sinks first, whatever the order of the sinks: no other sink (nor the
 * observer, nor a subscriber) hears that a run completed before that is recorded (other ends keep the sinks' order,
 * and should their record fail, the `store_failed` end follows them).
 */
export class EventEmitter {
  readonly #sinks: AgentEventSink[];
  readonly #plan: DeliveryPlan;
  /** The plan of a completed `agent_finished`: required sinks first. */
  readonly #finishPlan: DeliveryPlan;
  readonly #observer: EventObserver | null;
  readonly #subs = new Set<Subscription>();
  #tail: Promise<void> = DELIVERED;
  /** Deliveries emitted and not yet finished. */
  #pending = 0;
  /** Whether a sink takes groups of events (`handleMany`; see {@link emitAll}). */
  readonly #grouping: boolean;
  #runId = "";
  #closed = false;
  #sequence = 0;
  /** The first failure of a required sink in this event run. */
  #failure: Error | null = null;

  readonly #source: AgentEventSource;

  constructor(
    readonly agentId: string,
    sinks: readonly AgentEventSink[],
    private readonly logger: Logger,
    source: AgentEventSource = { messages: [] },
    observer: EventObserver | null = null,
    private readonly onFailure: ((error: Error) => void) | null = null,
  ) {
    this.#source = source;
    for (const s of sinks) {
      if (typeof s !== "function" && (typeof s !== "object" || s === null || typeof s.handle !== "function")) {
        throw new TypeError("sinks must be functions or objects with a handle(event) method");
      }
    }
    this.#sinks = [...sinks];
    this.#plan = planOf(this.#sinks);
    this.#finishPlan = planOf([...this.#sinks.filter(isRequired), ...this.#sinks.filter((s) => !isRequired(s))]);
    this.#observer = observer;
    this.#grouping = this.#sinks.some((s) => typeof s === "object" && typeof s.handleMany === "function");
  }

  /**
   * Whether an event of this kind would reach anyone now. Emitters of
   * events that are costly to build may skip building them when not (and
   * call {@link skip} to keep the numbering).
   */
  listens(kind: AgentEventPayload["kind"]): boolean {
    return this.#pending > 0 || this.#sinks.length > 0 || this.#subs.size > 0 || (this.#observer !== null && this.#observer.wants(kind));
  }

  /** Number an event that nobody receives (see {@link listens}). */
  skip(): void {
    ++this.#sequence;
  }

  /** Start a new event run: fresh random run id, sequence back to 0, no failure. */
  beginRun(): string {
    this.#runId = randomHex(16);
    this.#sequence = 0;
    this.#failure = null;
    return this.#runId;
  }

  get runId(): string {
    return this.#runId;
  }

  /** The first failure of a required sink in this event run, or null. */
  get failure(): Error | null {
    return this.#failure;
  }

  emit(payload: AgentEventPayload): Promise<void> {
    if (!this.listens(payload.kind)) {
      ++this.#sequence;
      return DELIVERED;
    }
    const event = Object.freeze({ agent_id: this.agentId, run_id: this.#runId, sequence: ++this.#sequence, ...payload }) as AgentEvent;
    this.#pending++;
    const p = this.#tail.then(() => this.#deliver(event));
    this.#tail = p.catch(() => {});
    return p;
  }

  /**
   * Emit events that are ready together (the results of a chunk of
   * parallel tool calls), numbered in order. When a sink takes groups
   * (`handleMany`, a SessionRecorder) they are delivered as one group: that
   * sink gets them in one call (one journal write and fsync), then each
   * later sink gets each event in order. Resolves once every sink has
   * handled them all. Otherwise the same as emitting each in turn.
   */
  emitAll(payloads: readonly AgentEventPayload[]): Promise<void> {
    if (!this.#grouping || payloads.length < 2) {
      let last = DELIVERED;
      for (const payload of payloads) last = this.emit(payload);
      return last;
    }
    const events = payloads.map(
      (payload) => Object.freeze({ agent_id: this.agentId, run_id: this.#runId, sequence: ++this.#sequence, ...payload }) as AgentEvent,
    );
    this.#pending += events.length;
    const p = this.#tail.then(() => this.#deliverGroup(events));
    this.#tail = p.catch(() => {});
    return p;
  }

  async #deliverGroup(events: readonly AgentEvent[]): Promise<void> {
    try {
      const plan = this.#plan;
      const push = () => {
        for (const event of events) for (const s of this.#subs) s.push(event);
      };
      if (plan.subsAt === 0) push();
      const failed = new Map<AgentEvent, number>();
      const fail = (event: AgentEvent) => failed.set(event, (failed.get(event) ?? 0) + 1);
      if (this.#observer !== null) for (const event of events) if (!(await this.#handOver(this.#observer, event))) fail(event);
      const hadFailed = this.#failure !== null;
      for (let i = 0; i < plan.sinks.length; i++) {
        const sink = plan.sinks[i]!;
        if (plan.required[i]) {
          if (!hadFailed) {
            const err = await this.#handOverRequired(sink, events);
            if (err !== null) throw this.#fail(err);
          }
        } else if (typeof sink === "object" && typeof sink.handleMany === "function") {
          try {
            await sink.handleMany(events, this.#source);
          } catch (err) {
            for (const event of events) fail(event);
            this.logger.warn("agent event sink failed", {
              agent_id: events[0]!.agent_id,
              kinds: events.map((e) => e.kind),
              sequences: events.map((e) => e.sequence),
              error: err instanceof Error ? err.message : String(err),
            });
          }
        } else for (const event of events) if (!(await this.#handOver(sink, event))) fail(event);
        if (i + 1 === plan.subsAt) push();
      }
      for (const [event, n] of failed) if (n > 1) this.logger.warn(`${n} agent event sinks failed`, { kind: event.kind });
    } finally {
      this.#pending -= events.length;
    }
  }

  async #deliver(event: AgentEvent): Promise<void> {
    try {
      const finish = event.kind === "agent_finished";
      const plan = finish && event.result.status === "completed" ? this.#finishPlan : this.#plan;
      // The observer (the tracer) hears a completed end once it is recorded too, like the subscribers.
      const late = plan === this.#finishPlan && plan.subsAt > 0;
      if (plan.subsAt === 0) for (const s of this.#subs) s.push(event);
      let failed = 0;
      if (this.#observer !== null && !late) {
        const ok = this.#handOver(this.#observer, event);
        if (!(ok === true || (ok !== false && (await ok)))) failed++;
      }
      const hadFailed = this.#failure !== null;
      for (let i = 0; i < plan.sinks.length; i++) {
        const sink = plan.sinks[i]!;
        if (plan.required[i]) {
          // After a failure only the run's end is offered, and it goes on to every sink whatever happens.
          if (!hadFailed || finish) {
            const err = await this.#handOverRequired(sink, [event]);
            if (err !== null && !hadFailed) throw this.#fail(err);
            if (err !== null) failed++;
          }
        } else {
          const ok = this.#handOver(sink, event);
          if (!(ok === true || (ok !== false && (await ok)))) failed++;
        }
        if (i + 1 === plan.subsAt) {
          for (const s of this.#subs) s.push(event);
          if (this.#observer !== null && late && !(await this.#handOver(this.#observer, event))) failed++;
        }
      }
      if (failed > 1) this.logger.warn(`${failed} agent event sinks failed`, { kind: event.kind });
    } finally {
      this.#pending--;
    }
  }

  /** Give a required sink the events (as one group when it takes groups): null, or its error (logged). */
  async #handOverRequired(sink: AgentEventSink, events: readonly AgentEvent[]): Promise<Error | null> {
    try {
      if (typeof sink === "function") for (const e of events) await sink(e, this.#source);
      else if (typeof sink.handleMany === "function" && events.length > 1) await sink.handleMany(events, this.#source);
      else for (const e of events) await sink.handle(e, this.#source);
      return null;
    } catch (err) {
      const error = err instanceof Error ? err : new Error(String(err));
      this.logger.warn("a required agent event sink failed: the run stops", {
        agent_id: events[0]!.agent_id,
        kinds: events.map((e) => e.kind),
        sequences: events.map((e) => e.sequence),
        error: error.message,
      });
      return error;
    }
  }

  /** Keep the run's first required-sink failure and tell the owner; returns it. */
  #fail(error: Error): Error {
    if (this.#failure === null) {
      this.#failure = error;
      this.onFailure?.(error);
    }
    return error;
  }

  /**
   * Give one sink the event: true, or false (logged) when it failed; for a
   * sink that returns a promise, a promise of that. A synchronous sink is
   * not awaited (no extra turn of the event loop per sink).
   */
  #handOver(sink: AgentEventSink | EventObserver, event: AgentEvent): boolean | Promise<boolean> {
    let r: void | Promise<void>;
    try {
      r = typeof sink === "function" ? sink(event, this.#source) : sink.handle(event, this.#source);
    } catch (err) {
      this.#sinkFailed(event, err);
      return false;
    }
    if (r === undefined || r === null || typeof (r as { then?: unknown }).then !== "function") return true;
    return Promise.resolve(r).then(
      () => true,
      (err: unknown) => {
        this.#sinkFailed(event, err);
        return false;
      },
    );
  }

  #sinkFailed(event: AgentEvent, err: unknown): void {
    this.logger.warn("agent event sink failed", {
      agent_id: event.agent_id,
      kind: event.kind,
      sequence: event.sequence,
      error: err instanceof Error ? err.message : String(err),
    });
  }

  subscribe(options: EventStreamOptions = {}): AsyncIterableIterator<AgentEvent> {
    const size = options.bufferSize ?? DEFAULT_EVENT_BUFFER;
    if (!Number.isSafeInteger(size) || size <= 0) throw new RangeError(`bufferSize must be a positive integer, got ${size}`);
    const sub = new Subscription(size, (s) => this.#subs.delete(s), options.signal);
    if (this.#closed) sub.close();
    else this.#subs.add(sub);
    return sub;
  }

  /** End every subscription (after the events already emitted are delivered). */
  async closeSubscribers(): Promise<void> {
    this.#closed = true;
    await this.#tail;
    for (const s of [...this.#subs]) s.close();
  }
}

/** Random lowercase hex of `bytes` bytes. */
export function randomHex(bytes: number): string {
  const b = new Uint8Array(bytes);
  crypto.getRandomValues(b);
  let s = "";
  for (const x of b) s += x.toString(16).padStart(2, "0");
  return s;
}
