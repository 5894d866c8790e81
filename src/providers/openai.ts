/**
 * The OpenAI-compatible adapter, on the official `openai` SDK (OpenAI, LM
 * Studio, Ollama, vLLM, DeepSeek, …).
 *
 * Every request is streamed. The SDK's own retries are off (`maxRetries: 0`):
 * {@link retryingStream} retries rate limits, 5xx answers and network
 * failures, and only before any delta was yielded. `timeoutMs` bounds the
 * wait for the response and then every wait for the next chunk, so a stream
 * that stalls ends as a `timeout` too.
 *
 * The SDK is imported on first use (the first request, or `client()`), so
 * importing agentcore does not load it.
 *
 * @module
 */
import type OpenAI from "openai";
import type { JsonLimits } from "../core/errors.ts";
import { type ModelConfig, type ModelConfigInput, resolveModelConfig } from "./config.ts";
import {
  abortReason,
  COMPLETION_FAILED_PREFIX,
  type KeyInfo,
  normalizeModelError,
  retryableModelError,
  shownEndpoint,
  STREAM_FAILED_PREFIX,
  useOpenAISDK,
} from "./errors.ts";
import { resolveRetryOptions, retryingStream, type ResolvedRetryOptions, type RetryOptions } from "./retry.ts";
import { ToolCallAssembler, type ToolCallFragment } from "./toolcalls.ts";
import { traceHeaders } from "../runtime/tracing.ts";
import {
  ModelProviderError,
  type ModelAdapter,
  type ModelRequest,
  type ModelResponse,
  type ModelStreamEvent,
  type ModelToolSpec,
  type ModelUsage,
  withOutputInstructions,
} from "./types.ts";

export const OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1";

/** Options of {@link OpenAIModelAdapter} beyond the model config. */
export interface OpenAIModelAdapterOptions {
  /** Retry policy (default: 3 retries, backoff from 500 ms, Retry-After capped at 30 s). */
  retry?: RetryOptions;
  /** Limits for validating streamed tool-call arguments (default: the core's, 1 MiB / depth 64). */
  argumentLimits?: JsonLimits;
  /** A `fetch` to use instead of the global one. */
  fetch?: typeof fetch;
  /** Extra headers sent with every request. */
  headers?: Record<string, string>;
  /**
   * What holds the API key, for the message of an authentication error:
   * `name` (default `apiKey`; `MODEL_API_KEY` when the key came from the
   * environment) and, when no key is sent, `whyNone`. The key itself is never
   * shown in any error.
   */
  key?: Omit<KeyInfo, "value">;
}

/** The request body this adapter sends (the fields it sets). */
export interface ChatCompletionBody {
  model: string;
  messages: readonly unknown[];
  temperature: number;
  stream: true;
  stream_options?: { include_usage: true };
  tools?: Array<{
    type: "function";
    function: { name: string; description: string; parameters: Record<string, unknown>; strict?: boolean };
  }>;
  response_format?: { type: "json_schema"; json_schema: { name: string; schema: Record<string, unknown>; strict: boolean } };
}

/** Tools in the chat-completions wire shape; `strict` only when the tool sets it. */
export function toWireTools(tools: readonly ModelToolSpec[]): ChatCompletionBody["tools"] {
  return tools.map((t) => {
    const fn: { name: string; description: string; parameters: Record<string, unknown>; strict?: boolean } = {
      name: t.name,
      description: t.description,
      parameters: t.parameters,
    };
    if (t.strict !== undefined) fn.strict = t.strict;
    return { type: "function" as const, function: fn };
  });
}

interface WireUsage {
  prompt_tokens?: number | null;
  completion_tokens?: number | null;
  prompt_tokens_details?: { cached_tokens?: number | null } | null;
  completion_tokens_details?: { reasoning_tokens?: number | null } | null;
}

function count(v: unknown): number | undefined {
  return typeof v === "number" && Number.isFinite(v) && v >= 0 ? v : undefined;
}

/** Map a chat-completions usage record to {@link ModelUsage}. */
export function toModelUsage(u: WireUsage): ModelUsage {
  const input = count(u.prompt_tokens) ?? 0;
  const output = count(u.completion_tokens) ?? 0;
  const usage: ModelUsage = { input_tokens: input, output_tokens: output, total_tokens: input + output };
  const cached = count(u.prompt_tokens_details?.cached_tokens);
  if (cached !== undefined) usage.cache_read_tokens = cached;
  const reasoning = count(u.completion_tokens_details?.reasoning_tokens);
  if (reasoning !== undefined) usage.reasoning_tokens = reasoning;
  return usage;
}

interface WireDelta {
  content?: string | null;
  reasoning_content?: string | null;
  reasoning?: string | null;
  tool_calls?: ToolCallFragment[] | null;
}

interface WireChunk {
  choices?: Array<{ index?: number; delta?: WireDelta | null; finish_reason?: string | null }> | null;
  usage?: WireUsage | null;
  model?: string | null;
}

const STOPPED = Symbol("stopped");

/** A {@link ModelAdapter} for any OpenAI-compatible chat-completions endpoint. */
export class OpenAIModelAdapter implements ModelAdapter {
  readonly config: ModelConfig;
  readonly #retry: ResolvedRetryOptions;
  readonly #limits: JsonLimits | undefined;
  readonly #clientOptions: ConstructorParameters<typeof OpenAI>[0];
  readonly #key: KeyInfo;
  #client: Promise<OpenAI> | null = null;
  #formatRefused = false;

  constructor(config: ModelConfigInput, options: OpenAIModelAdapterOptions = {}) {
    this.config = resolveModelConfig(config);
    this.#retry = resolveRetryOptions(options.retry);
    this.#limits = options.argumentLimits;
    this.#key = { ...options.key, ...(this.config.apiKey !== undefined ? { value: this.config.apiKey } : {}) };
    this.#clientOptions = {
      // The SDK insists on a key; local servers ignore this placeholder.
      apiKey: this.config.apiKey ?? "no-key",
      baseURL: this.config.baseURL ?? OPENAI_DEFAULT_BASE_URL,
      timeout: this.config.timeoutMs,
      maxRetries: 0,
      logLevel: "off",
      ...(options.fetch ? { fetch: options.fetch } : {}),
      ...(options.headers ? { defaultHeaders: options.headers } : {}),
    };
  }

  /** The `openai` SDK client of this adapter (the SDK is imported on the first call). */
  client(): Promise<OpenAI> {
    if (this.#client === null) {
      const p = import("openai").then((sdk) => {
        useOpenAISDK(sdk);
        return new sdk.default(this.#clientOptions);
      });
      // A failed import is tried again next time.
      p.catch(() => {
        if (this.#client === p) this.#client = null;
      });
      this.#client = p;
    }
    return this.#client;
  }

  /** The body sent for a request (exposed for inspection and tests). */
  requestBody(request: ModelRequest): ChatCompletionBody {
    const body: ChatCompletionBody = {
      model: this.config.model,
      messages: request.messages,
      temperature: this.config.temperature,
      stream: true,
    };
    if (this.config.includeUsage) body.stream_options = { include_usage: true };
    if (request.tools.length > 0) body.tools = toWireTools(request.tools);
    const f = request.responseFormat;
    if (f !== undefined) body.response_format = { type: "json_schema", json_schema: { name: f.name, schema: f.schema, strict: f.strict } };
    return body;
  }

  /**
   * True once this adapter's server refused a JSON-schema response format
   * (a 400 answer to a request carrying one, where the same request without
   * it then went through): later requests put the schema in the messages.
   */
  get responseFormatRefused(): boolean {
    return this.#formatRefused;
  }

  stream(request: ModelRequest): AsyncIterable<ModelStreamEvent> {
    return this.#withFormatFallback(request, (r) => retryingStream(() => this.#attempt(r, true), this.#retry, r.signal));
  }

  /**
   * A request with a response format, and the fallback when the server
   * refuses it (LM Studio and some Ollama versions answer 400): the same
   * request without it, the schema given as instructions in the messages.
   * The refusal is remembered only once the plain request went through, so
   * a 400 for another reason is reported as it is.
   */
  async *#withFormatFallback(
    request: ModelRequest,
    run: (r: ModelRequest) => AsyncIterable<ModelStreamEvent>,
  ): AsyncGenerator<ModelStreamEvent> {
    const format = request.responseFormat;
    if (format === undefined) return yield* run(request);
    const plain: ModelRequest = { ...request, messages: withOutputInstructions(request.messages, format) };
    delete plain.responseFormat;
    if (this.#formatRefused) return yield* run(plain);
    let started = false;
    try {
      for await (const ev of run(request)) {
        started = true;
        yield ev;
      }
      return;
    } catch (err) {
      const refused =
        !started && err instanceof ModelProviderError && err.status === 400 && err.kind !== "context_overflow" && !request.signal?.aborted;
      if (!refused) throw err;
    }
    for await (const ev of run(plain)) {
      this.#formatRefused = true;
      yield ev;
    }
  }

  async complete(request: ModelRequest): Promise<ModelResponse> {
    const events = this.#withFormatFallback(request, (r) => retryingStream(() => this.#attempt(r, false), this.#retry, r.signal));
    for await (const ev of events) {
      if (ev.type === "completed")
        return { message: ev.message, usage: ev.usage, ...(ev.finish_reason !== undefined ? { finish_reason: ev.finish_reason } : {}) };
    }
    throw new ModelProviderError("provider_error", COMPLETION_FAILED_PREFIX + "the stream ended without a result");
  }

  /** One request, no retries. */
  async *#attempt(request: ModelRequest, streaming: boolean): AsyncGenerator<ModelStreamEvent> {
    const signal = request.signal;
    if (signal?.aborted) throw abortReason(signal);
    const timeoutMs = this.config.timeoutMs;
    const ctrl = new AbortController();
    let timedOut = false;
    let started = false;
    let finished = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const disarm = () => {
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
    };
    const arm = () => {
      disarm();
      timer = setTimeout(() => {
        timedOut = true;
        ctrl.abort(new DOMException("model request timed out", "TimeoutError"));
      }, timeoutMs);
    };
    const onCallerAbort = () => ctrl.abort(signal?.reason);
    signal?.addEventListener("abort", onCallerAbort, { once: true });
    // Rejects as soon as the request is aborted (by the caller or the timer),
    // so a stalled read never delays the outcome.
    const stopped = new Promise<never>((_, reject) => {
      ctrl.signal.addEventListener("abort", () => reject(STOPPED), { once: true });
    });
    stopped.catch(() => {});
    const calls = new ToolCallAssembler(this.#limits);
    let iterator: AsyncIterator<WireChunk> | undefined;
    try {
      arm();
      const body = this.requestBody(request);
      const client = await Promise.race([this.client(), stopped]);
      const pending = client.chat.completions
        .create(body as unknown as OpenAI.ChatCompletionCreateParamsStreaming, {
          signal: ctrl.signal,
          timeout: timeoutMs,
          maxRetries: 0,
          // The active span's context (traceparent), when an OpenTelemetry SDK is registered.
          headers: traceHeaders(),
        })
        .withResponse();
      pending.catch(() => {});
      const { data: sdkStream, response } = await Promise.race([pending, stopped]);
      iterator = (sdkStream as unknown as AsyncIterable<WireChunk>)[Symbol.asyncIterator]();
      let chunks = 0;

      let text = "";
      let sawText = false;
      let finishReason: string | undefined;
      let usage: ModelUsage | undefined;
      let responseModel: string | undefined;
      for (;;) {
        const next = iterator.next();
        next.catch(() => {});
        const r = await Promise.race([next, stopped]);
        if (r.done) break;
        chunks++;
        const chunk = r.value;
        const events: ModelStreamEvent[] = [];
        for (const choice of chunk.choices ?? []) {
          if (choice.index !== undefined && choice.index !== 0) continue;
          const d = choice.delta;
          if (d) {
            const thinking =
              typeof d.reasoning_content === "string" ? d.reasoning_content : typeof d.reasoning === "string" ? d.reasoning : "";
            if (thinking !== "") events.push({ type: "thinking_delta", delta: thinking });
            if (typeof d.content === "string" && d.content !== "") {
              text += d.content;
              sawText = true;
              events.push({ type: "text_delta", delta: d.content });
            }
            if (Array.isArray(d.tool_calls)) {
              for (const f of d.tool_calls) {
                if (!f) continue;
                // Argument deltas go to stream() consumers; complete() only needs the calls (and can still be retried).
                const deltas = calls.add(f);
                if (streaming) events.push(...deltas);
              }
            }
          }
          if (choice.finish_reason) finishReason = choice.finish_reason;
        }
        if (chunk.usage) usage = toModelUsage(chunk.usage);
        if (typeof chunk.model === "string" && chunk.model !== "") responseModel = chunk.model;
        if (events.length > 0) {
          disarm(); // the consumer's time is not the provider's
          for (const ev of events) {
            started = true;
            yield ev;
          }
          if (signal?.aborted) throw abortReason(signal);
        }
        arm();
      }
      disarm();
      // The SDK ends a stream quietly when its request is aborted.
      if (signal?.aborted) throw abortReason(signal);
      if (timedOut) throw STOPPED;
      if (finishReason === undefined && chunks === 0) {
        // Not an event stream at all (an HTML page, a JSON body): the URL is
        // not a streaming chat-completions endpoint. Asking again won't help.
        const type = response.headers.get("content-type") ?? "";
        if (!/^\s*text\/event-stream\s*(;|$)/i.test(type)) {
          throw new ModelProviderError(
            "provider_error",
            `${streaming ? STREAM_FAILED_PREFIX : COMPLETION_FAILED_PREFIX}${shownEndpoint(this.config.baseURL ?? OPENAI_DEFAULT_BASE_URL)} answered ${response.status} with ${type === "" ? "no content type" : JSON.stringify(type)}, not a stream of server-sent events: is it an OpenAI-compatible /v1 URL?`,
            { status: response.status },
          );
        }
      }
      if (finishReason === undefined) {
        // The connection ended early: a network failure (retryable before any delta).
        throw retryableModelError(
          "provider_error",
          (streaming ? STREAM_FAILED_PREFIX : COMPLETION_FAILED_PREFIX) + "the stream ended before the response was finished",
          { responseStarted: started },
        );
      }
      const toolCalls = calls.finish();
      finished = true;
      yield {
        type: "completed",
        message: { content: sawText ? text : null, tool_calls: toolCalls },
        ...(usage ? { usage } : {}),
        finish_reason: finishReason,
        ...(responseModel !== undefined ? { model: responseModel } : {}),
      };
    } catch (err) {
      if (timedOut && !signal?.aborted) {
        const waited = started ? "no chunk from the model" : "no response from the model";
        throw new ModelProviderError(
          "timeout",
          `${streaming ? STREAM_FAILED_PREFIX : COMPLETION_FAILED_PREFIX}${waited} within ${timeoutMs} ms`,
          {
            responseStarted: started,
            cause: err === STOPPED ? ctrl.signal.reason : err,
          },
        );
      }
      throw normalizeModelError(err === STOPPED ? ctrl.signal.reason : err, {
        signal,
        responseStarted: started,
        streaming,
        timedOut,
        endpoint: this.config.baseURL ?? OPENAI_DEFAULT_BASE_URL,
        key: this.#key,
      });
    } finally {
      disarm();
      signal?.removeEventListener("abort", onCallerAbort);
      calls.dispose();
      if (!finished) {
        if (!ctrl.signal.aborted) ctrl.abort(new DOMException("stream closed", "AbortError"));
        iterator?.return?.()?.catch?.(() => {});
      }
    }
  }
}
