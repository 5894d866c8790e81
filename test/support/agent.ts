/**
 * Test support for the agent: a small in-process model adapter that plays
 * scripted turns (the ScriptedModel turn format), records every request, and
 * lets a test hold a turn behind a gate.
 */
import type {
  AssistantMessage,
  ChatMessage,
  ModelAdapter,
  ModelErrorKind,
  ModelRequest,
  ModelResponse,
  ModelStreamEvent,
  ModelUsage,
} from "../../src/providers/types.ts";
import { ModelProviderError } from "../../src/providers/types.ts";
import type { AgentEvent } from "../../src/agent/index.ts";

export interface ScriptTurn {
  content?: string | null;
  thinking?: string;
  tool_calls?: { id: string; name: string; arguments: string }[];
  usage?: { input_tokens: number; output_tokens: number };
  chunk_size?: number;
}
export interface ScriptError {
  error: { kind: ModelErrorKind; message: string };
}
/** A turn, or a function producing one (may wait on a gate; gets the request). */
export type Step = ScriptTurn | ScriptError | ((request: ModelRequest) => ScriptTurn | ScriptError | Promise<ScriptTurn | ScriptError>);

export class FakeModel implements ModelAdapter {
  readonly requests: ModelRequest[] = [];
  #i = 0;
  constructor(private readonly steps: Step[]) {}

  get calls(): number {
    return this.requests.length;
  }

  async complete(request: ModelRequest): Promise<ModelResponse> {
    let message: AssistantMessage | undefined;
    let usage: ModelUsage | undefined;
    for await (const e of this.stream(request)) if (e.type === "completed") ({ message, usage } = e);
    return { message: message!, usage };
  }

  async *stream(request: ModelRequest): AsyncGenerator<ModelStreamEvent> {
    this.requests.push({ ...request, messages: structuredClone(request.messages) });
    const raw = this.steps[this.#i++];
    if (raw === undefined) throw new ModelProviderError("provider_error", "script exhausted");
    const step = typeof raw === "function" ? await raw(request) : raw;
    if ("error" in step) throw new ModelProviderError(step.error.kind, step.error.message);
    if (step.thinking) yield { type: "thinking_delta", delta: step.thinking };
    const content = step.content ?? null;
    if (content) {
      const n = step.chunk_size ?? content.length;
      for (let k = 0; k < content.length; k += n) yield { type: "text_delta", delta: content.slice(k, k + n) };
    }
    const usage = step.usage ? { ...step.usage, total_tokens: step.usage.input_tokens + step.usage.output_tokens } : undefined;
    yield { type: "completed", message: { content, tool_calls: step.tool_calls ?? [] }, usage };
  }
}

/** A promise with its resolver exposed. */
export interface Deferred<T> {
  promise: Promise<T>;
  resolve(...v: T extends void ? [] : [T]): void;
  reject(e: unknown): void;
}
export function deferred<T = void>(): Deferred<T> {
  let resolve!: (...v: T extends void ? [] : [T]) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = ((...v: unknown[]) => res(v[0] as T)) as typeof resolve;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Collects events; `kinds()` lists their kinds. */
export class Recorder {
  readonly events: AgentEvent[] = [];
  #waiters: { kind: string; pred: (e: AgentEvent) => boolean; resolve(e: AgentEvent): void }[] = [];
  readonly sink = (e: AgentEvent): void => {
    this.events.push(e);
    this.#waiters = this.#waiters.filter((w) => {
      if (w.kind === e.kind && w.pred(e)) {
        w.resolve(e);
        return false;
      }
      return true;
    });
  };
  kinds(): string[] {
    return this.events.map((e) => e.kind);
  }
  /** Kinds without the streaming deltas (the lifecycle order). */
  lifecycle(): string[] {
    return this.kinds().filter((k) => k !== "assistant_text_delta" && k !== "assistant_thinking_delta");
  }
  of<K extends AgentEvent["kind"]>(kind: K): Extract<AgentEvent, { kind: K }>[] {
    return this.events.filter((e) => e.kind === kind) as Extract<AgentEvent, { kind: K }>[];
  }
  /** Resolves when an event of `kind` satisfying `pred` arrives. */
  waitFor(kind: AgentEvent["kind"], pred: (e: AgentEvent) => boolean = () => true): Promise<AgentEvent> {
    const found = this.events.find((e) => e.kind === kind && pred(e));
    if (found) return Promise.resolve(found);
    return new Promise((resolve) => this.#waiters.push({ kind, pred, resolve }));
  }
}

export function text(content: string, usage?: ScriptTurn["usage"]): ScriptTurn {
  return { content, usage };
}

export function call(id: string, name: string, args: unknown, usage?: ScriptTurn["usage"]): ScriptTurn {
  return { content: null, tool_calls: [{ id, name, arguments: typeof args === "string" ? args : JSON.stringify(args) }], usage };
}

export function calls(list: [id: string, name: string, args: unknown][]): ScriptTurn {
  return {
    content: null,
    tool_calls: list.map(([id, name, args]) => ({ id, name, arguments: typeof args === "string" ? args : JSON.stringify(args) })),
  };
}

export function lastMessages(req: ModelRequest, n: number): ChatMessage[] {
  return req.messages.slice(-n);
}

/** A logger that records warnings (for sink-failure tests) and stays silent. */
export function quietLogger(into: string[] = []) {
  const noop = () => {};
  return {
    level: "warn" as const,
    enabled: () => true,
    trace: noop,
    debug: noop,
    info: noop,
    warn: (m: string) => void into.push(m),
    error: (m: string) => void into.push(m),
  };
}
