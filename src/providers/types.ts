/**
 * The provider-neutral model contract: messages, tool calls, usage, stream
 * events and the `ModelAdapter` interface every provider implements.
 *
 * Data records that travel as JSON (messages, usage, events) use snake_case
 * field names, like every wire format in agentcore.
 *
 * @module
 */
import { AgentcoreError } from "../core/errors.ts";
import type { JsonError, ParseResult } from "../core/errors.ts";

/**
 * A tool call as the model produced it. `arguments` is the raw JSON text as
 * it arrived; `parsed` is the adapter's strict verdict on it, so the agent
 * never parses the text a second time.
 */
export interface ModelToolCall {
  id: string;
  name: string;
  arguments: string;
  /**
   * The strict parser's verdict on `arguments`: the parsed value, or the
   * first error (code, message, byte offset, line, column). The built-in
   * adapters always set it (the streaming one validates the pieces as they
   * arrive); an adapter that leaves it out gets its arguments parsed by the
   * agent (see `toolCallArguments`).
   */
  parsed?: ParseResult;
  /** The same error as `parsed.error`, when `arguments` is not one valid JSON document. */
  arguments_error?: JsonError;
}

/** Token usage of one model request, as reported by the provider. */
export interface ModelUsage {
  input_tokens: number;
  output_tokens: number;
  /** Always `input_tokens + output_tokens`. */
  total_tokens: number;
  cache_read_tokens?: number;
  cache_write_tokens?: number;
  reasoning_tokens?: number;
}

/** One assistant turn. `content` is null when the model only called tools. */
export interface AssistantMessage {
  content: string | null;
  tool_calls: ModelToolCall[];
}

/** A tool call in the OpenAI chat wire shape, as stored in assistant messages. */
export interface WireToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

/** A part of a user message's content (OpenAI chat content parts): text, or an image as a data URL. */
export type UserContentPart = { type: "text"; text: string } | { type: "image_url"; image_url: { url: string } };

/** A message of the conversation, in the OpenAI chat shape every provider here speaks. */
export type ChatMessage =
  | { role: "system"; content: string }
  | { role: "user"; content: string | UserContentPart[] }
  | { role: "assistant"; content: string | null; tool_calls?: WireToolCall[] }
  | { role: "tool"; tool_call_id: string; content: string };

/** A tool as offered to the model. */
export interface ModelToolSpec {
  name: string;
  description: string;
  /** JSON Schema of the arguments object. */
  parameters: Record<string, unknown>;
  /** Ask the provider for strict schema adherence (OpenAI `strict: true`). */
  strict?: boolean;
}

/** What an adapter is asked for: the context of one model request. */
export interface ModelRequest {
  /**
   * The request's context. Read it during the request; do not change it and
   * do not keep it afterwards (copy what you keep): the agent hands over its
   * own array, which grows in place with the conversation, rather than a
   * copy per request. The messages in it are frozen.
   */
  messages: readonly ChatMessage[];
  tools: ModelToolSpec[];
  /** Aborts the request; adapters must stop promptly and throw. */
  signal?: AbortSignal;
  /**
   * Ask for the answer as one JSON document matching a schema (structured
   * output). An adapter sends it as the provider's JSON-schema response
   * format where the server takes it, and otherwise puts
   * {@link outputInstructions} into the request's messages; an adapter that
   * does neither leaves it to the model. The agent checks the answer itself.
   */
  responseFormat?: ResponseFormat;
}

/** A JSON-schema response format (OpenAI `response_format: {type: "json_schema", json_schema}`). */
export interface ResponseFormat {
  /** The schema's name as the provider sees it (`[A-Za-z0-9_-]`, at most 64). */
  name: string;
  /** The JSON Schema the answer must match. */
  schema: Record<string, unknown>;
  /** Ask the provider for strict adherence (OpenAI `strict`). */
  strict: boolean;
}

/**
 * The plain-text instruction an adapter adds when the server takes no
 * response format: answer with one JSON document matching the schema.
 */
export function outputInstructions(format: ResponseFormat): string {
  return (
    "Give your final answer as one JSON document, and nothing else (no prose, no code fence), " +
    `matching this JSON Schema (named ${JSON.stringify(format.name)}):\n` +
    JSON.stringify(format.schema)
  );
}

/**
 * The request's messages with {@link outputInstructions} added: appended to
 * the leading system message, or as a new first system message.
 */
export function withOutputInstructions(messages: readonly ChatMessage[], format: ResponseFormat): ChatMessage[] {
  const text = outputInstructions(format);
  const out = [...messages];
  const first = out[0];
  if (first !== undefined && first.role === "system") out[0] = { role: "system", content: `${first.content}\n\n${text}` };
  else out.unshift({ role: "system", content: text });
  return out;
}

/**
 * Why the model stopped answering, as the provider said (OpenAI's
 * `finish_reason`): `stop` (done), `tool_calls`, `length` (cut off at its
 * output-token limit), `content_filter` (stopped by the provider's filter),
 * or another string a server sends. Absent when the provider said nothing.
 */
export type FinishReason = "stop" | "length" | "tool_calls" | "content_filter" | (string & {});

/** The outcome of one complete (non-streamed, or fully consumed) request. */
export interface ModelResponse {
  message: AssistantMessage;
  usage?: ModelUsage;
  finish_reason?: FinishReason;
}

/**
 * A piece of a tool call's arguments as it streamed. `index` is the call's
 * position in the response; `id` and `name` are the call's as far as known
 * (the id is the one the completed call carries). `error` is the
 * incremental validator's verdict once the text can no longer become valid
 * JSON (code, message, byte offset of the first impossible byte): set on the
 * piece that held that byte and on every later piece of the call.
 */
export interface ToolCallDeltaEvent {
  type: "tool_call_delta";
  index: number;
  id: string;
  name: string;
  delta: string;
  error?: JsonError;
}

/** Events of a streamed response; exactly one `completed` ends a successful stream. */
export type ModelStreamEvent =
  | { type: "text_delta"; delta: string }
  | { type: "thinking_delta"; delta: string }
  | ToolCallDeltaEvent
  /** `model`: the model the server says answered (a stream's `model` field), when it says. */
  | { type: "completed"; message: AssistantMessage; usage?: ModelUsage; finish_reason?: FinishReason; model?: string };

/**
 * A model provider.
 *
 * Contract: `complete()` resolves with the whole response or rejects with a
 * {@link ModelProviderError}. `stream()`, when present, yields deltas and then
 * exactly one `completed` event; failures are thrown from the iterator as
 * `ModelProviderError`. Adapters without `stream()` are streamed through
 * {@link streamFromComplete}. `startup()`/`shutdown()` are optional and
 * idempotent.
 */
export interface ModelAdapter {
  complete(request: ModelRequest): Promise<ModelResponse>;
  stream?(request: ModelRequest): AsyncIterable<ModelStreamEvent>;
  startup?(): Promise<void>;
  shutdown?(): Promise<void>;
}

/** The kinds a provider failure is normalised to (wire strings). */
export type ModelErrorKind = "context_overflow" | "rate_limit" | "timeout" | "authentication" | "provider_error";

export const MODEL_ERROR_KINDS: readonly ModelErrorKind[] = [
  "context_overflow",
  "rate_limit",
  "timeout",
  "authentication",
  "provider_error",
];

/** A normalised provider failure. */
export class ModelProviderError extends AgentcoreError {
  readonly code: string = "MODEL_REQUEST_FAILED";
  override name = "ModelProviderError";
  readonly kind: ModelErrorKind;
  /** True once any delta of the response had been exposed; such failures are never retried. */
  readonly responseStarted: boolean;
  /** HTTP status, when there was one. */
  readonly status?: number;
  /** Server-requested wait before a retry (Retry-After), in ms. */
  readonly retryAfterMs?: number;

  constructor(
    kind: ModelErrorKind,
    message: string,
    options: { responseStarted?: boolean; status?: number; retryAfterMs?: number; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.kind = kind;
    this.responseStarted = options.responseStarted ?? false;
    this.status = options.status;
    this.retryAfterMs = options.retryAfterMs;
  }
}

/** A default `stream()` for adapters that only implement `complete()`. */
export async function* streamFromComplete(adapter: ModelAdapter, request: ModelRequest): AsyncGenerator<ModelStreamEvent> {
  const r = await adapter.complete(request);
  if (r.message.content) yield { type: "text_delta", delta: r.message.content };
  yield {
    type: "completed",
    message: r.message,
    usage: r.usage,
    ...(r.finish_reason !== undefined ? { finish_reason: r.finish_reason } : {}),
  };
}

/** Stream a request through `adapter.stream` when it exists, else through `complete()`. */
export function streamModel(adapter: ModelAdapter, request: ModelRequest): AsyncIterable<ModelStreamEvent> {
  return adapter.stream ? adapter.stream(request) : streamFromComplete(adapter, request);
}
