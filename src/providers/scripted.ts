/**
 * `ScriptedModel`: an in-process adapter that plays a script of assistant
 * turns, for tests and offline demos. No network, and no latency unless a
 * turn asks for it.
 *
 * Script format (JSONL, one turn per line, blank lines skipped):
 *
 * ```jsonl
 * {"content": "Let me look.", "thinking": "The user wants…", "tool_calls": [{"id": "c1", "name": "read_file", "arguments": "{\"path\":\"a.txt\"}"}], "usage": {"input_tokens": 12, "output_tokens": 5}}
 * {"content": "Done.", "chunk_size": 2, "delay_ms": 10}
 * {"content": null, "tool_calls": [{"id": "c2", "name": "write_file", "arguments": "{\"path\":\"b.txt\"}"}], "arguments_chunk_size": 4}
 * {"content": "The answer was cut o", "finish_reason": "length"}
 * {"error": {"kind": "rate_limit", "message": "slow down"}}
 * ```
 *
 * In code, a turn may also be a {@link ScriptedStep}: a function of the
 * request that returns the turn (or a promise of one) when the request
 * arrives, e.g. to hold a turn behind a gate or to look at the request.
 *
 * @module
 */
import { AgentcoreError, type ParseResult } from "../core/errors.ts";
import { parseStrict } from "../core/index.ts";
import { abortReason } from "./errors.ts";
import { abortableSleep } from "./retry.ts";
import { completedToolCall, ToolCallAssembler, toolCallWithVerdict } from "./toolcalls.ts";
import {
  MODEL_ERROR_KINDS,
  ModelProviderError,
  type ChatMessage,
  type ModelAdapter,
  type ModelErrorKind,
  type ModelRequest,
  type ModelResponse,
  type ModelStreamEvent,
  type ModelToolCall,
  type ModelToolSpec,
  type ModelUsage,
  type ResponseFormat,
} from "./types.ts";

/** Usage as written in a script; `total_tokens` is computed. */
export interface ScriptedUsage {
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens?: number;
  cache_write_tokens?: number;
  reasoning_tokens?: number;
}

/** A scripted tool call; `arguments` is raw text and may be malformed on purpose. */
export interface ScriptedToolCall {
  id: string;
  name: string;
  arguments: string;
}

/** An assistant turn. */
export interface ScriptedReply {
  content: string | null;
  thinking?: string;
  tool_calls?: ScriptedToolCall[];
  usage?: ScriptedUsage;
  /** Wait this long (abortable) before answering. */
  delay_ms?: number;
  /** Stream thinking and text in pieces of this many characters (code points). Default: whole. */
  chunk_size?: number;
  /** The provider's finish reason to report (`length`: cut off at the output limit; `content_filter`). Default: none. */
  finish_reason?: ScriptedFinishReason;
  /**
   * Stream each tool call's arguments as `tool_call_delta` events in pieces
   * of this many characters (code points), validated as they arrive like a
   * streaming provider's (the verdict on the piece that makes the text
   * impossible). Default: no argument deltas.
   */
  arguments_chunk_size?: number;
}

/** The finish reasons a script may report. */
export type ScriptedFinishReason = "stop" | "tool_calls" | "length" | "content_filter";
export const SCRIPTED_FINISH_REASONS: readonly ScriptedFinishReason[] = ["stop", "tool_calls", "length", "content_filter"];

/** A turn that fails with a {@link ModelProviderError}. */
export interface ScriptedFailure {
  error: { kind: ModelErrorKind; message: string };
  delay_ms?: number;
}

export type ScriptedTurn = ScriptedReply | ScriptedFailure;

/**
 * A turn decided when its request arrives (only in code, not in JSONL).
 * It is called with the request as the model got it (not a copy: its
 * messages, tools and `signal`) and returns the turn to play, or a promise
 * of one, so a test can hold the model behind a gate or answer from what it
 * was sent. The model waits for that promise without racing the signal: a
 * step that should stop on abort listens to `request.signal` itself (which
 * lets a test play a model that ignores it). The turn it gives is checked
 * like any other, and a bad one fails the request with a {@link ScriptError}
 * naming the turn; a throw or a rejection fails the request with that error.
 * The request is recorded before the step is called.
 *
 * @example
 * ```ts
 * let open!: () => void;
 * const gate = new Promise<void>((resolve) => (open = resolve));
 * const model = new ScriptedModel([async () => (await gate, { content: "late" })]);
 * ```
 */
export type ScriptedStep = (request: ModelRequest) => ScriptedTurn | Promise<ScriptedTurn>;

/** A request as the scripted model received it (a deep copy, without the signal). */
export interface RecordedRequest {
  messages: ChatMessage[];
  tools: ModelToolSpec[];
  /** The structured-output format asked for, when the request carried one (the scripted model plays its script regardless). */
  responseFormat?: ResponseFormat;
}

/** A script that does not have the expected shape; the message names the line (or turn). */
export class ScriptError extends AgentcoreError {
  readonly code: string = "MODEL_SCRIPT_INVALID";
  override name = "ScriptError";
}

const REPLY_KEYS = new Set([
  "content",
  "thinking",
  "tool_calls",
  "usage",
  "delay_ms",
  "chunk_size",
  "finish_reason",
  "arguments_chunk_size",
]);
const FAILURE_KEYS = new Set(["error", "delay_ms"]);
const USAGE_REQUIRED = ["input_tokens", "output_tokens"];
const USAGE_OPTIONAL = ["cache_read_tokens", "cache_write_tokens", "reasoning_tokens"];

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function typeName(v: unknown): string {
  return v === null ? "null" : Array.isArray(v) ? "array" : typeof v;
}

function checkKeys(obj: Record<string, unknown>, allowed: Set<string>, where: string, fail: (m: string) => never): void {
  for (const k of Object.keys(obj)) {
    if (!allowed.has(k)) fail(`unknown key ${JSON.stringify(k)} in ${where} (allowed: ${[...allowed].join(", ")})`);
  }
}

function checkCount(v: unknown, what: string, fail: (m: string) => never, { min = 0, integer = true } = {}): number {
  if (typeof v !== "number" || !Number.isFinite(v) || v < min || (integer && !Number.isInteger(v))) {
    fail(`${what} must be ${integer ? "an integer" : "a number"} >= ${min}, got ${JSON.stringify(v)}`);
  }
  return v as number;
}

/** Check one turn's shape; `where` prefixes every message (e.g. "line 3"). Returns a private copy. */
export function validateScriptedTurn(value: unknown, where: string): ScriptedTurn {
  const fail = (m: string): never => {
    throw new ScriptError(`scripted model: ${where}: ${m}`);
  };
  if (!isPlainObject(value)) fail(`a turn must be a JSON object, got ${typeName(value)}`);
  const t = value as Record<string, unknown>;
  if ("error" in t) {
    checkKeys(t, FAILURE_KEYS, "an error turn", fail);
    const e = t.error;
    if (!isPlainObject(e)) fail(`"error" must be an object, got ${typeName(e)}`);
    const eo = e as Record<string, unknown>;
    checkKeys(eo, new Set(["kind", "message"]), '"error"', fail);
    if (typeof eo.kind !== "string" || !(MODEL_ERROR_KINDS as readonly string[]).includes(eo.kind)) {
      fail(`"error.kind" must be one of ${MODEL_ERROR_KINDS.join(", ")}, got ${JSON.stringify(eo.kind)}`);
    }
    if (typeof eo.message !== "string") fail(`"error.message" must be a string, got ${typeName(eo.message)}`);
    const out: ScriptedFailure = { error: { kind: eo.kind as ModelErrorKind, message: eo.message as string } };
    if (t.delay_ms !== undefined) out.delay_ms = checkCount(t.delay_ms, '"delay_ms"', fail, { integer: false });
    return out;
  }
  checkKeys(t, REPLY_KEYS, "a turn", fail);
  if (!("content" in t)) fail('a turn needs "content" (a string, or null) or "error"');
  if (t.content !== null && typeof t.content !== "string") fail(`"content" must be a string or null, got ${typeName(t.content)}`);
  const out: ScriptedReply = { content: t.content as string | null };
  if (t.thinking !== undefined) {
    if (typeof t.thinking !== "string") fail(`"thinking" must be a string, got ${typeName(t.thinking)}`);
    out.thinking = t.thinking as string;
  }
  if (t.tool_calls !== undefined) {
    if (!Array.isArray(t.tool_calls)) fail(`"tool_calls" must be an array, got ${typeName(t.tool_calls)}`);
    out.tool_calls = (t.tool_calls as unknown[]).map((c, i) => {
      const w = `"tool_calls[${i}]"`;
      if (!isPlainObject(c)) fail(`${w} must be an object, got ${typeName(c)}`);
      const co = c as Record<string, unknown>;
      checkKeys(co, new Set(["id", "name", "arguments"]), w, fail);
      for (const k of ["id", "name", "arguments"]) {
        if (typeof co[k] !== "string") fail(`${w}.${k} must be a string, got ${typeName(co[k])}`);
      }
      if (co.id === "") fail(`${w}.id must not be empty`);
      return { id: co.id as string, name: co.name as string, arguments: co.arguments as string };
    });
  }
  if (t.usage !== undefined) {
    if (!isPlainObject(t.usage)) fail(`"usage" must be an object, got ${typeName(t.usage)}`);
    const u = t.usage as Record<string, unknown>;
    checkKeys(u, new Set([...USAGE_REQUIRED, ...USAGE_OPTIONAL]), '"usage"', fail);
    const usage: Record<string, number> = {};
    for (const k of USAGE_REQUIRED) usage[k] = checkCount(u[k], `"usage.${k}"`, fail);
    for (const k of USAGE_OPTIONAL) if (u[k] !== undefined) usage[k] = checkCount(u[k], `"usage.${k}"`, fail);
    out.usage = usage as unknown as ScriptedUsage;
  }
  if (t.delay_ms !== undefined) out.delay_ms = checkCount(t.delay_ms, '"delay_ms"', fail, { integer: false });
  if (t.chunk_size !== undefined) out.chunk_size = checkCount(t.chunk_size, '"chunk_size"', fail, { min: 1 });
  if (t.arguments_chunk_size !== undefined)
    out.arguments_chunk_size = checkCount(t.arguments_chunk_size, '"arguments_chunk_size"', fail, { min: 1 });
  if (t.finish_reason !== undefined) {
    if (typeof t.finish_reason !== "string" || !(SCRIPTED_FINISH_REASONS as readonly string[]).includes(t.finish_reason)) {
      fail(`"finish_reason" must be one of ${SCRIPTED_FINISH_REASONS.join(", ")}, got ${JSON.stringify(t.finish_reason)}`);
    }
    out.finish_reason = t.finish_reason as ScriptedFinishReason;
  }
  return out;
}

/** The 1-based line holding the first byte sequence that is not UTF-8. */
function invalidUtf8Line(bytes: Uint8Array): number {
  const decoder = new TextDecoder("utf-8", { fatal: true });
  let line = 1;
  let start = 0;
  for (let i = 0; i <= bytes.length; i++) {
    if (i < bytes.length && bytes[i] !== 0x0a) continue;
    try {
      decoder.decode(bytes.subarray(start, i));
    } catch {
      return line;
    }
    line++;
    start = i + 1;
  }
  return line - 1;
}

/** Parse a JSONL script with the strict core; errors name the 1-based line. */
export function parseScript(text: string): ScriptedTurn[] {
  const turns: ScriptedTurn[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].endsWith("\r") ? lines[i].slice(0, -1) : lines[i];
    if (line.trim() === "") continue;
    const r = parseStrict(line);
    if (!r.ok) {
      throw new ScriptError(`scripted model: line ${i + 1}: invalid JSON: ${r.error.message} (column ${r.error.column})`);
    }
    turns.push(validateScriptedTurn(r.value, `line ${i + 1}`));
  }
  return turns;
}

function pieces(text: string, size: number | undefined): string[] {
  if (text === "") return [];
  if (size === undefined) return [text];
  const cps = Array.from(text);
  if (size >= cps.length) return [text];
  const out: string[] = [];
  for (let i = 0; i < cps.length; i += size) out.push(cps.slice(i, i + size).join(""));
  return out;
}

/** A deep copy of JSON-like data (plain objects, arrays, primitives); much cheaper than structuredClone. */
function copyData<T>(v: T): T {
  if (v === null || typeof v !== "object") return v;
  if (Array.isArray(v)) {
    const out = new Array(v.length);
    for (let i = 0; i < v.length; i++) out[i] = copyData(v[i]);
    return out as T;
  }
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(v)) out[k] = copyData((v as Record<string, unknown>)[k]);
  return out as T;
}

/** Options of {@link ScriptedModel}. */
export interface ScriptedModelOptions {
  /**
   * Keep a deep copy of every request in {@link ScriptedModel.requests}.
   * Default true. Copying costs time proportional to the context, so
   * long benchmark runs turn it off.
   */
  recordRequests?: boolean;
}

/**
 * A model that plays a fixed script. Each request consumes the next turn
 * (a {@link ScriptedTurn}, or a {@link ScriptedStep} that gives one when the
 * request arrives); past the end it fails with `provider_error` "scripted
 * model has no more turns". Every request is recorded in {@link requests}.
 */
export class ScriptedModel implements ModelAdapter {
  readonly #turns: (ScriptedTurn | ScriptedStep)[] = [];
  /**
   * The verdict on each turn's call arguments, parsed (strictly) when the
   * turn is added, so that a request costs next to nothing; undefined for a
   * turn that streams its arguments (they go through the incremental
   * validator as they are played) or has no calls.
   */
  readonly #verdicts: (ParseResult[] | undefined)[] = [];
  #next = 0;
  /** Deep copies of every request received, in order. */
  readonly requests: RecordedRequest[] = [];
  readonly #record: boolean;

  /**
   * @param turns the script: each a turn object (checked here; a bad one is a
   *   {@link ScriptError} naming it) or a {@link ScriptedStep} function
   *   (whose turn is checked when it is played).
   */
  constructor(turns: readonly unknown[], options: ScriptedModelOptions = {}) {
    if (!Array.isArray(turns)) throw new ScriptError("scripted model: turns must be an array");
    this.#add(turns.map((t, i) => (typeof t === "function" ? (t as ScriptedStep) : validateScriptedTurn(t, `turn ${i + 1}`))));
    this.#record = options.recordRequests ?? true;
  }

  #add(turns: readonly (ScriptedTurn | ScriptedStep)[]): void {
    for (const t of turns) {
      this.#turns.push(t);
      if (typeof t === "function") {
        this.#verdicts.push(undefined);
        continue;
      }
      const calls = "error" in t || t.arguments_chunk_size !== undefined ? undefined : t.tool_calls;
      this.#verdicts.push(calls === undefined || calls.length === 0 ? undefined : calls.map((c) => parseStrict(c.arguments)));
    }
  }

  /** A model from JSONL text. */
  static fromJsonl(text: string, options: ScriptedModelOptions = {}): ScriptedModel {
    const m = new ScriptedModel([], options);
    m.#add(parseScript(text));
    return m;
  }

  /** A model from a JSONL file (works on Bun, Node and Deno). */
  static async fromFile(path: string, options: ScriptedModelOptions = {}): Promise<ScriptedModel> {
    const { readFile } = await import("node:fs/promises");
    let bytes: Uint8Array;
    try {
      bytes = await readFile(path);
    } catch (e) {
      const code = (e as { code?: unknown }).code;
      throw new ScriptError(`scripted model: ${path}: cannot read the file (${typeof code === "string" ? code : (e as Error).message})`);
    }
    // Decoded strictly: a stray byte would otherwise become U+FFFD, played
    // silently inside a string or reported as the wrong byte outside one.
    let text: string;
    try {
      text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    } catch {
      throw new ScriptError(`scripted model: ${path}: line ${invalidUtf8Line(bytes)}: not valid UTF-8`);
    }
    try {
      return ScriptedModel.fromJsonl(text, options);
    } catch (e) {
      if (e instanceof ScriptError) throw new ScriptError(e.message.replace(/^scripted model: /, `scripted model: ${path}: `));
      throw e;
    }
  }

  /** Turns not played yet. */
  get remaining(): number {
    return this.#turns.length - this.#next;
  }

  async *stream(request: ModelRequest): AsyncGenerator<ModelStreamEvent> {
    const signal = request.signal;
    if (signal?.aborted) throw abortReason(signal);
    if (this.#record) {
      const r: RecordedRequest = { messages: copyData(request.messages as ChatMessage[]), tools: copyData(request.tools) };
      if (request.responseFormat !== undefined) r.responseFormat = copyData(request.responseFormat);
      this.requests.push(r);
    }
    if (this.#next >= this.#turns.length) {
      throw new ModelProviderError("provider_error", "scripted model has no more turns");
    }
    const verdicts = this.#verdicts[this.#next];
    const index = this.#next++;
    const entry = this.#turns[index]!;
    const turn =
      typeof entry === "function" ? validateScriptedTurn(await entry(request), `turn ${index + 1} (from its step function)`) : entry;
    if (turn.delay_ms !== undefined && turn.delay_ms > 0) await abortableSleep(turn.delay_ms, signal);
    if ("error" in turn) throw new ModelProviderError(turn.error.kind, turn.error.message);
    if (turn.thinking) {
      for (const delta of pieces(turn.thinking, turn.chunk_size)) {
        yield { type: "thinking_delta", delta };
        if (signal?.aborted) throw abortReason(signal);
      }
    }
    if (turn.content) {
      for (const delta of pieces(turn.content, turn.chunk_size)) {
        yield { type: "text_delta", delta };
        if (signal?.aborted) throw abortReason(signal);
      }
    }
    let tool_calls: ModelToolCall[];
    if (turn.arguments_chunk_size !== undefined && (turn.tool_calls ?? []).length > 0) {
      // As a streaming provider does: the pieces through the incremental validator, each yielded as it is taken.
      const assembler = new ToolCallAssembler();
      try {
        for (const [index, c] of (turn.tool_calls ?? []).entries()) {
          const parts = pieces(c.arguments, turn.arguments_chunk_size);
          if (parts.length === 0) assembler.add({ index, id: c.id, function: { name: c.name } });
          for (const [i, piece] of parts.entries()) {
            const frag =
              i === 0 ? { index, id: c.id, function: { name: c.name, arguments: piece } } : { index, function: { arguments: piece } };
            for (const ev of assembler.add(frag)) {
              yield ev;
              if (signal?.aborted) throw abortReason(signal);
            }
          }
        }
        tool_calls = assembler.finish();
      } finally {
        assembler.dispose();
      }
    } else {
      const calls = turn.tool_calls ?? [];
      tool_calls = new Array(calls.length);
      for (let i = 0; i < calls.length; i++) {
        const c = calls[i]!;
        tool_calls[i] =
          verdicts === undefined
            ? completedToolCall(c.id, c.name, c.arguments)
            : toolCallWithVerdict(c.id, c.name, c.arguments, verdicts[i]!);
      }
    }
    const ev: ModelStreamEvent = { type: "completed", message: { content: turn.content, tool_calls } };
    if (turn.finish_reason !== undefined) ev.finish_reason = turn.finish_reason;
    if (turn.usage) {
      const usage: ModelUsage = { ...turn.usage, total_tokens: turn.usage.input_tokens + turn.usage.output_tokens };
      ev.usage = usage;
    }
    yield ev;
  }

  async complete(request: ModelRequest): Promise<ModelResponse> {
    for await (const ev of this.stream(request)) {
      if (ev.type === "completed")
        return { message: ev.message, usage: ev.usage, ...(ev.finish_reason !== undefined ? { finish_reason: ev.finish_reason } : {}) };
    }
    throw new ModelProviderError("provider_error", "scripted model: the stream ended without a result");
  }
}
