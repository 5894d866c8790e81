/**
 * Tool-call envelopes: recognise the four accepted shapes and normalise them to
 * `{ id, tool, arguments }`.
 *
 * | shape              | recognised by                      | id from   | name from       | arguments from                    |
 * |--------------------|------------------------------------|-----------|-----------------|-----------------------------------|
 * | `agentcore`        | a `tool` member                    | `id`      | `tool`          | `arguments` (object)              |
 * | `openai_chat`      | `type: "function"` + `function`    | `id`      | `function.name` | `function.arguments` (JSON string)|
 * | `openai_responses` | `type: "function_call"`            | `call_id` | `name`          | `arguments` (JSON string)         |
 * | `anthropic`        | `type: "tool_use"`                 | `id`      | `name`          | `input` (object)                  |
 *
 * The outer text is validated by the strict core before anything becomes a
 * JavaScript value. Where `arguments` is a JSON string, its content is validated
 * strictly too, with the same limits, and the error's offset, line and column
 * refer to that inner text; `details.location` says which member held it.
 *
 * Members outside the shape are refused (`INVALID_CALL`), so a typo such as
 * `argument` is reported instead of silently calling the tool with `{}`.
 *
 * @module
 */
import type { JsonError, JsonLimits } from "./errors.ts";
import { parseStrict, resolveLimits } from "./parse.ts";
import { quoteKey } from "./wasm.ts";

/** The shapes `parseToolCall` recognises. */
export type ToolCallShape = "agentcore" | "openai_chat" | "openai_responses" | "anthropic";

/** A normalised tool call. `arguments` is always a plain object. */
export interface ToolCall {
  id: string | null;
  tool: string;
  arguments: Record<string, unknown>;
  shape: ToolCallShape;
}

/** Codes `parseToolCall` can fail with: the core's JSON codes and `INVALID_CALL`. */
export type ToolCallErrorCode = JsonError["code"] | "INVALID_CALL";

/** A structured failure. `id` and `tool` are filled in when they could be read. */
export interface ToolCallError {
  code: ToolCallErrorCode;
  message: string;
  details: Record<string, unknown>;
}

/** What `parseToolCall` and `normalizeToolCall` return: the call in the AgentCore shape, or why it is not one (never a throw). */
export type ToolCallParseResult =
  | { ok: true; call: ToolCall }
  | { ok: false; error: ToolCallError; id: string | null; tool: string | null };

type Obj = Record<string, unknown>;

const SHAPE_MEMBERS: Record<ToolCallShape, ReadonlySet<string>> = {
  agentcore: new Set(["id", "tool", "arguments"]),
  openai_chat: new Set(["id", "type", "function", "index"]),
  openai_responses: new Set(["type", "id", "call_id", "name", "arguments", "status"]),
  anthropic: new Set(["type", "id", "name", "input", "cache_control"]),
};
const CHAT_FUNCTION_MEMBERS: ReadonlySet<string> = new Set(["name", "arguments"]);
/** Empty, or nothing but JSON whitespace (space, tab, LF, CR). */
const JSON_BLANK = /^[ \t\n\r]*$/;

function isObject(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** An own member's value; inherited names (`toString`, a prototype's `tool`) never count. */
function own(o: Obj, key: string): unknown {
  return Object.hasOwn(o, key) ? o[key] : undefined;
}

function describe(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  return typeof v === "object" ? "an object" : `a ${typeof v}`;
}

function jsonDetails(e: JsonError, location?: string): Obj {
  const d: Obj = { offset: e.offset, line: e.line, column: e.column };
  if (location !== undefined) d.location = location;
  return d;
}

class CallShapeError {
  constructor(
    readonly message: string,
    readonly location: string,
  ) {}
}

function fail(message: string, location: string): never {
  throw new CallShapeError(message, location);
}

/** A member name as one JSON Pointer reference token (RFC 6901: `~` → `~0`, `/` → `~1`). */
function pointerToken(key: string): string {
  return key.replace(/~/g, "~0").replace(/\//g, "~1");
}

function checkMembers(o: Obj, allowed: ReadonlySet<string>, base: string, shape: string): void {
  for (const k of Object.keys(o)) {
    // the message shows the name escaped and cut to 40 characters; the pointer has it whole
    if (!allowed.has(k)) fail(`unexpected member ${quoteKey(k)} in ${shape} tool call`, `${base}/${pointerToken(k)}`);
  }
}

function readId(o: Obj, key: string, required: boolean): string | null {
  const v = own(o, key);
  if (v === undefined || (v === null && !required)) {
    if (required) fail(`missing "${key}"`, `/${key}`);
    return null;
  }
  if (typeof v !== "string") fail(`"${key}" must be a string, got ${describe(v)}`, `/${key}`);
  return v;
}

function readName(o: Obj, key: string, location: string): string {
  const v = own(o, key);
  if (v === undefined) fail(`missing "${key}"`, location);
  if (typeof v !== "string") fail(`"${key}" must be a string, got ${describe(v)}`, location);
  if (v.length === 0) fail(`"${key}" must not be empty`, location);
  return v;
}

function readObjectArgs(o: Obj, key: string, location: string): Obj {
  const v = own(o, key);
  if (v === undefined) fail(`missing "${key}"`, location);
  if (!isObject(v)) fail(`"${key}" must be an object, got ${describe(v)}`, location);
  return v;
}

/** Either normalised arguments, or a failure from the strict core on the inner text. */
type InnerArgs = { ok: true; value: Obj } | { ok: false; error: ToolCallError };

function readStringArgs(o: Obj, key: string, location: string, limits?: JsonLimits): InnerArgs {
  const v = own(o, key);
  if (v === undefined) fail(`missing "${key}"`, location);
  if (isObject(v)) return { ok: true, value: v }; // tolerated: some servers send the object itself
  if (typeof v !== "string") fail(`"${key}" must be a JSON string, got ${describe(v)}`, location);
  // only JSON whitespace counts as blank; other white space (U+00A0…) is left to the parser, which names it
  if (JSON_BLANK.test(v)) fail(`"${key}" is an empty string; expected a JSON object`, location);
  const inner = parseStrict(v, limits);
  if (!inner.ok) {
    const e = inner.error;
    return {
      ok: false,
      error: {
        code: e.code,
        message: `${e.message} in ${location.slice(1)} at line ${e.line}, column ${e.column}`,
        details: jsonDetails(e, location),
      },
    };
  }
  if (!isObject(inner.value)) {
    fail(`"${key}" must encode a JSON object, got ${describe(inner.value)}`, location);
  }
  return { ok: true, value: inner.value };
}

function detectShape(o: Obj): ToolCallShape | null {
  if (Object.hasOwn(o, "tool")) return "agentcore";
  switch (own(o, "type")) {
    case "function":
      return "openai_chat";
    case "function_call":
      return "openai_responses";
    case "tool_use":
      return "anthropic";
    default:
      return null;
  }
}

/**
 * Normalise an already-validated value (for example a value produced by
 * `parseStrict`, or a call built in code) into a {@link ToolCall}.
 *
 * Never throws: every problem becomes `{ ok: false, error }` with
 * `code: "INVALID_CALL"` (or a JSON code for string arguments) and a JSON Pointer
 * in `details.location`.
 */
export function normalizeToolCall(value: unknown, limits?: JsonLimits): ToolCallParseResult {
  let id: string | null = null;
  let tool: string | null = null;
  try {
    if (!isObject(value)) fail(`a tool call must be a JSON object, got ${describe(value)}`, "");
    const shape = detectShape(value);
    if (shape === null) {
      fail('unrecognised tool-call shape: expected a "tool" member or "type" of "function", "function_call" or "tool_use"', "");
    }
    checkMembers(value, SHAPE_MEMBERS[shape], "", shape);
    let args: InnerArgs;
    switch (shape) {
      case "agentcore":
        id = readId(value, "id", false);
        tool = readName(value, "tool", "/tool");
        args = { ok: true, value: readObjectArgs(value, "arguments", "/arguments") };
        break;
      case "openai_chat": {
        id = readId(value, "id", true);
        const fn = own(value, "function");
        if (!isObject(fn)) fail(`"function" must be an object, got ${describe(fn)}`, "/function");
        checkMembers(fn, CHAT_FUNCTION_MEMBERS, "/function", shape);
        tool = readName(fn, "name", "/function/name");
        args = readStringArgs(fn, "arguments", "/function/arguments", limits);
        break;
      }
      case "openai_responses":
        readId(value, "id", false);
        id = readId(value, "call_id", true);
        tool = readName(value, "name", "/name");
        args = readStringArgs(value, "arguments", "/arguments", limits);
        break;
      case "anthropic":
        id = readId(value, "id", true);
        tool = readName(value, "name", "/name");
        args = { ok: true, value: readObjectArgs(value, "input", "/input") };
        break;
    }
    if (!args.ok) return { ok: false, error: args.error, id, tool };
    return { ok: true, call: { id, tool, arguments: args.value, shape } };
  } catch (e) {
    if (e instanceof CallShapeError) {
      return { ok: false, error: { code: "INVALID_CALL", message: e.message, details: { location: e.location } }, id, tool };
    }
    // Bad limits are a programming error and throw (as parseStrict does); anything
    // else came from reading the value itself (a throwing getter, a revoked Proxy).
    if (limits !== undefined) resolveLimits(limits);
    const kind = e instanceof Error ? e.name : typeof e;
    return {
      ok: false,
      error: {
        code: "INVALID_CALL",
        message: `the tool call could not be read (${kind} from one of its members)`,
        details: { location: "" },
      },
      id,
      tool,
    };
  }
}

/**
 * Parse and normalise one tool call from JSON text or UTF-8 bytes.
 *
 * The text is validated strictly (see `parseStrict`) before it becomes a value;
 * then the shape is recognised and checked. Never throws on bad input.
 *
 * @example
 * ```ts
 * const r = parseToolCall('{"id":"c1","tool":"echo","arguments":{"x":1}}');
 * if (r.ok) console.log(r.call.tool, r.call.arguments); // echo { x: 1 }
 * else console.error(r.error.code, r.error.message);
 * ```
 */
export function parseToolCall(input: string | Uint8Array, limits?: JsonLimits): ToolCallParseResult {
  const parsed = parseStrict(input, limits);
  if (!parsed.ok) {
    const e = parsed.error;
    return {
      ok: false,
      error: { code: e.code, message: e.message, details: jsonDetails(e) },
      id: null,
      tool: null,
    };
  }
  return normalizeToolCall(parsed.value, limits);
}
