/**
 * The options of an agent (`createAgent`) and of one run (`run`,
 * `continueRun`, `resumeRun`), with their checks: the output schema a run
 * asks for, the queue capacities, the control inputs.
 *
 * @module
 */
import type { InstructionFile } from "../context/events.ts";
import type { ImageInput } from "../providers/images.ts";
import type { ModelAdapter } from "../providers/types.ts";
import type { Runtime } from "../runtime/runtime.ts";
import type { SkillCatalog } from "../skills/catalog.ts";
import type { AnyToolDefinition } from "../tools/definition.ts";
import { SchemaCompileError, SchemaCompiler } from "../tools/schema.ts";
import type { CompactionOptions } from "./compaction.ts";
import { type AgentEventSink, randomHex } from "./events.ts";
import type { AgentHooks, LoopOutput } from "./loop.ts";
import type { TracingOptions } from "./tracing.ts";
import type {
  AgentRunResult,
  ControlInput,
  ControlInputKind,
  ControlReceipt,
  FollowUpFailurePolicy,
  RuntimePolicyOptions,
} from "./types.ts";

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

/** A steering or follow-up input: trimmed, non-empty, with an id of its own. */
export function makeControl(kind: ControlInputKind, content: unknown): ControlInput {
  if (typeof content !== "string") throw new TypeError("control content must be a string");
  const c = content.trim();
  if (c.length === 0) throw new RangeError("control content must not be empty");
  return Object.freeze({ input_id: randomHex(16), kind, content: c });
}

/** A queue capacity option: a positive integer (the default when absent). */
export function positiveCapacity(name: string, v: number | undefined): number {
  const n = v ?? DEFAULT_QUEUE_CAPACITY;
  if (!Number.isSafeInteger(n) || n <= 0) throw new RangeError(`${name} must be a positive integer, got ${n}`);
  return n;
}
