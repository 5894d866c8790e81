/**
 * Assembling streamed tool calls: fragments arrive keyed by `index`, the id
 * and name usually only in the first one, the arguments in many pieces. Each
 * call's argument pieces are pushed into its own {@link JsonStreamValidator}
 * as they arrive, so validation is incremental (linear in the arguments'
 * size) and never re-parses the accumulated text.
 *
 * @module
 */
import { JsonStreamValidator } from "../core/stream.ts";
import { parseStrict } from "../core/parse.ts";
import type { JsonError, JsonLimits, ParseResult } from "../core/errors.ts";
import type { ModelToolCall, ToolCallDeltaEvent } from "./types.ts";

/**
 * A tool call with its verdict: `arguments` parsed strictly once, here, for an
 * adapter that has the whole text at hand (the scripted model, a non-streaming
 * adapter). Same shape as the calls a streamed response produces.
 */
export function completedToolCall(id: string, name: string, args: string, limits?: JsonLimits): ModelToolCall {
  return withVerdict({ id, name, arguments: args }, parseStrict(args, limits));
}

/** The same, with a verdict on `args` reached earlier (`parseStrict(args)`). */
export function toolCallWithVerdict(id: string, name: string, args: string, verdict: ParseResult): ModelToolCall {
  return withVerdict({ id, name, arguments: args }, verdict);
}

/**
 * The verdict on a call's arguments: the adapter's (`parsed`, or its
 * `arguments_error`) when it gave one, otherwise a strict parse of the text
 * (an adapter that does not validate).
 */
export function toolCallArguments(call: ModelToolCall): ParseResult {
  if (call.parsed !== undefined) return call.parsed;
  if (call.arguments_error !== undefined) return { ok: false, error: call.arguments_error };
  return parseStrict(typeof call.arguments === "string" ? call.arguments : String(call.arguments));
}

function withVerdict(call: ModelToolCall, verdict: ParseResult): ModelToolCall {
  call.parsed = verdict;
  if (!verdict.ok) call.arguments_error = { ...verdict.error };
  return call;
}

/** One streamed fragment, in the OpenAI `delta.tool_calls[]` shape. */
export interface ToolCallFragment {
  index?: number;
  id?: string | null;
  type?: string | null;
  function?: { name?: string | null; arguments?: string | null } | null;
}

interface PartialCall {
  index: number;
  id: string;
  name: string;
  parts: string[];
  validator: JsonStreamValidator | undefined;
  error: JsonError | undefined;
  /** The id given to the call's delta events while the stream named none. */
  provisional: string | undefined;
}

let generated = 0;
function generatedId(): string {
  const rnd =
    typeof crypto !== "undefined" && "randomUUID" in crypto ? crypto.randomUUID().replaceAll("-", "").slice(0, 24) : String(++generated);
  return `call_${rnd}`;
}

/** Collects the tool calls of one streamed response. Call {@link dispose} when done. */
export class ToolCallAssembler {
  readonly #calls = new Map<number, PartialCall>();
  /** The call each wire `index` currently continues (see {@link add}). */
  readonly #byWireIndex = new Map<number, PartialCall>();
  readonly #limits: JsonLimits | undefined;
  #last: PartialCall | undefined;

  constructor(limits?: JsonLimits) {
    this.#limits = limits;
  }

  /** Number of calls seen so far. */
  get size(): number {
    return this.#calls.size;
  }

  #open(index: number): PartialCall {
    let c = this.#calls.get(index);
    if (!c) {
      c = { index, id: "", name: "", parts: [], validator: undefined, error: undefined, provisional: undefined };
      this.#calls.set(index, c);
    }
    return c;
  }

  #openNext(): PartialCall {
    let next = 0;
    for (const k of this.#calls.keys()) next = Math.max(next, k + 1);
    return this.#open(next);
  }

  /**
   * Take one fragment. A fragment with an `index` continues the call of that
   * index, unless it names a different id: Ollama sends every call of a
   * response with `index: 0`, each with its own id, and such a fragment starts
   * a new call (after the others). A fragment without an index continues the
   * previous call unless it names a new id.
   *
   * Returns the fragment's argument piece as a delta event (none when it
   * carried no arguments), with the validator's verdict once the call's text
   * can no longer become valid JSON.
   */
  add(fragment: ToolCallFragment): ToolCallDeltaEvent[] {
    let call: PartialCall;
    if (typeof fragment.index === "number" && Number.isInteger(fragment.index) && fragment.index >= 0) {
      const current = this.#byWireIndex.get(fragment.index);
      if (current === undefined) call = this.#calls.has(fragment.index) ? this.#openNext() : this.#open(fragment.index);
      else if (fragment.id && current.id !== "" && fragment.id !== current.id) call = this.#openNext();
      else call = current;
      this.#byWireIndex.set(fragment.index, call);
    } else if (this.#last && (!fragment.id || fragment.id === this.#last.id)) {
      // No index: a continuation of the previous call unless it names a new id.
      call = this.#last;
    } else {
      call = this.#openNext();
    }
    this.#last = call;
    if (fragment.id && call.id === "") call.id = fragment.id;
    const fn = fragment.function;
    if (!fn) return [];
    if (fn.name && call.name === "") call.name = fn.name;
    if (typeof fn.arguments !== "string" || fn.arguments === "") return [];
    this.#push(call, fn.arguments);
    const id = call.id !== "" ? call.id : (call.provisional ??= generatedId());
    const ev: ToolCallDeltaEvent = { type: "tool_call_delta", index: call.index, id, name: call.name, delta: fn.arguments };
    if (call.error) ev.error = { ...call.error };
    return [ev];
  }

  #push(call: PartialCall, piece: string): void {
    call.parts.push(piece);
    if (call.error) return;
    call.validator ??= new JsonStreamValidator(this.#limits);
    const status = call.validator.push(piece);
    if (status.state === "error") {
      call.error = status.error;
      call.validator.dispose();
      call.validator = undefined;
    }
  }

  /**
   * Finish every call's validation and return the calls in index order, each
   * with its verdict (`parsed`: the value, or the first error and its offset).
   */
  finish(): ModelToolCall[] {
    const out: ModelToolCall[] = [];
    const calls = [...this.#calls.values()].sort((a, b) => a.index - b.index);
    for (const c of calls) {
      if (!c.error) {
        c.validator ??= new JsonStreamValidator(this.#limits);
        const status = c.validator.finish();
        if (status.state === "error") c.error = status.error;
      }
      c.validator?.dispose();
      c.validator = undefined;
      const text = c.parts.join("");
      // Validated as it streamed: only a document the validator accepted reaches JSON.parse.
      const verdict: ParseResult = c.error ? { ok: false, error: c.error } : { ok: true, value: JSON.parse(text) };
      out.push(withVerdict({ id: c.id !== "" ? c.id : (c.provisional ?? generatedId()), name: c.name, arguments: text }, verdict));
    }
    return out;
  }

  /** Release every validator (safe to call more than once). */
  dispose(): void {
    for (const c of this.#calls.values()) {
      c.validator?.dispose();
      c.validator = undefined;
    }
  }
}
