/**
 * Test support for the agent tests: turn builders for the public
 * `ScriptedModel` (the one fake model), a deferred promise for gates, an
 * event recorder, and a quiet logger.
 */
import type { ScriptedReply, ScriptedStep, ScriptedTurn } from "../../src/providers/scripted.ts";
import type { AgentEvent } from "../../src/agent/index.ts";

/** One entry of a `ScriptedModel` script: a turn, or a step function that gives one when its request arrives. */
export type Step = ScriptedTurn | ScriptedStep;

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

/** A text answer. */
export function text(content: string, usage?: ScriptedReply["usage"]): ScriptedReply {
  return { content, usage };
}

/** One tool call (`args` as JSON, or raw text when a string). */
export function call(id: string, name: string, args: unknown, usage?: ScriptedReply["usage"]): ScriptedReply {
  return { content: null, tool_calls: [{ id, name, arguments: typeof args === "string" ? args : JSON.stringify(args) }], usage };
}

/** Several tool calls in one turn. */
export function calls(list: [id: string, name: string, args: unknown][]): ScriptedReply {
  return {
    content: null,
    tool_calls: list.map(([id, name, args]) => ({ id, name, arguments: typeof args === "string" ? args : JSON.stringify(args) })),
  };
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
