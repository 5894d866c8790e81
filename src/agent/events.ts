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
 * Numbers, freezes and delivers events. Deliveries are chained, so events
 * reach sinks in emission order even when emitted from concurrent tool calls;
 * `emit()` resolves once every sink has handled the event.
 */
export class EventEmitter {
  readonly #sinks: AgentEventSink[];
  readonly #subs = new Set<Subscription>();
  #tail: Promise<void> = Promise.resolve();
  #runId = "";
  #closed = false;
  #sequence = 0;

  readonly #source: AgentEventSource;

  constructor(
    readonly agentId: string,
    sinks: readonly AgentEventSink[],
    private readonly logger: Logger,
    source: AgentEventSource = { messages: [] },
  ) {
    this.#source = source;
    for (const s of sinks) {
      if (typeof s !== "function" && (typeof s !== "object" || s === null || typeof s.handle !== "function")) {
        throw new TypeError("sinks must be functions or objects with a handle(event) method");
      }
    }
    this.#sinks = [...sinks];
  }

  /** Start a new event run: fresh random run id, sequence back to 0. */
  beginRun(): string {
    this.#runId = randomHex(16);
    this.#sequence = 0;
    return this.#runId;
  }

  get runId(): string {
    return this.#runId;
  }

  emit(payload: AgentEventPayload): Promise<void> {
    const event = Object.freeze({ agent_id: this.agentId, run_id: this.#runId, sequence: ++this.#sequence, ...payload }) as AgentEvent;
    const p = this.#tail.then(() => this.#deliver(event));
    this.#tail = p;
    return p;
  }

  async #deliver(event: AgentEvent): Promise<void> {
    for (const s of this.#subs) s.push(event);
    let failed = 0;
    for (const sink of this.#sinks) {
      try {
        if (typeof sink === "function") await sink(event, this.#source);
        else await sink.handle(event, this.#source);
      } catch (err) {
        failed++;
        this.logger.warn("agent event sink failed", {
          agent_id: event.agent_id,
          kind: event.kind,
          sequence: event.sequence,
          error: err instanceof Error ? err.message : String(err),
        });
      }
    }
    if (failed > 1) this.logger.warn(`${failed} agent event sinks failed`, { kind: event.kind });
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
