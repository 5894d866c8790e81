/**
 * OpenTelemetry spans of an agent, after the GenAI semantic conventions,
 * through `@opentelemetry/api` only: whatever SDK the application registers
 * receives them, and without one every call below is the API's no-op.
 *
 * - `invoke_agent` (INTERNAL): one run, from `agent_started` (or
 *   `agent_continued`) to `agent_finished`; its stop reason, turns and the
 *   run's token use.
 * - `chat {model}` (CLIENT): one model request, the active span while the
 *   provider sends it (so `traceparent` goes out with it); model, usage,
 *   finish reason.
 * - `execute_tool {tool}` (INTERNAL): one tool call, from `tool_started` to
 *   `tool_completed`, the active span while the tool runs (an HTTP MCP call
 *   carries it); approval requests and answers are events on it.
 *
 * The tracer is built from the agent's own events (it receives each one
 * before the sinks, as the emitter's observer, and only the kinds it needs
 * while a run is untraced) and two wrappers: the model adapter, and the dispatch of a call. The loop
 * knows nothing of it.
 *
 * Arguments, results and message text are recorded only on opt-in:
 * `captureContent`, or `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`
 * in the environment.
 *
 * @module
 */
import {
  type Attributes,
  type Context,
  context,
  isSpanContextValid,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
  type Tracer,
} from "@opentelemetry/api";
import {
  ModelProviderError,
  type ChatMessage,
  type ModelAdapter,
  type ModelRequest,
  type ModelStreamEvent,
  streamModel,
} from "../providers/types.ts";
import { TRACER_NAME } from "../runtime/tracing.ts";
import { VERSION } from "../core/version.ts";
import type { AgentEvent } from "./events.ts";

/** The environment variable that turns content capture on (`true`), as in other GenAI instrumentations. */
export const CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT";

/** Tracing options of an agent (`AgentOptions.tracing`). */
export interface TracingOptions {
  /**
   * Record tool arguments and results, the task, the model's input and
   * output messages. Default: the environment's
   * `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` is `true`.
   */
  captureContent?: boolean;
  /** `gen_ai.conversation.id` on the run's spans (a session id). */
  conversationId?: string;
  /** `gen_ai.agent.name`; the run span is then named `invoke_agent NAME`. */
  agentName?: string;
  /** `gen_ai.provider.name` (default `openai` for the OpenAI-compatible adapter, else `_OTHER`). */
  providerName?: string;
  /** `gen_ai.request.model` when the adapter does not say. */
  model?: string;
}

/** Whether the environment opts in to content capture. */
export function captureContentFromEnv(): boolean {
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
  return (env?.[CAPTURE_CONTENT_ENV] ?? "").trim().toLowerCase() === "true";
}

interface ModelInfo {
  provider: string;
  model: string | null;
  address: string | null;
  port: number | null;
  temperature: number | null;
}

/** What an adapter tells of itself: the OpenAI-compatible one has a `config` with its model and base URL. */
function modelInfo(model: ModelAdapter, options: TracingOptions): ModelInfo {
  const cfg = (model as { config?: { model?: unknown; baseURL?: unknown; temperature?: unknown } }).config;
  const name = typeof cfg?.model === "string" ? cfg.model : null;
  let address: string | null = null;
  let port: number | null = null;
  if (name !== null) {
    try {
      const u = new URL(typeof cfg?.baseURL === "string" ? cfg.baseURL : "https://api.openai.com/v1");
      address = u.hostname.replace(/^\[|\]$/g, "");
      port = u.port !== "" ? Number(u.port) : u.protocol === "http:" ? 80 : 443;
    } catch {
      // no address then
    }
  }
  return {
    provider: options.providerName ?? (name !== null ? "openai" : "_OTHER"),
    model: options.model ?? name,
    address,
    port,
    temperature: typeof cfg?.temperature === "number" ? cfg.temperature : null,
  };
}

/** A tool call's error code, from the tool message agentcore wrote for it. */
function toolErrorType(content: string | undefined, cancelled: boolean): string {
  if (cancelled) return "CANCELLED";
  if (content === undefined) return "TOOL_CALL_REPEATED";
  try {
    const v = JSON.parse(content) as { code?: unknown; status?: unknown };
    // The schema-validation payload names its code in lower case; the envelope's code is INVALID_ARGUMENTS.
    if (v.code === "invalid_tool_arguments") return "INVALID_ARGUMENTS";
    if (typeof v.code === "string") return v.code;
    if (v.status === "not_run") return "NOT_RUN";
    if (v.status === "rejected" || v.status === "denied") return "DENIED";
    if (v.status === "invalid_arguments") return "INVALID_ARGUMENTS";
  } catch {
    // not JSON: fall through
  }
  return "TOOL_ERROR";
}

/** Messages in the GenAI input-messages shape (role and parts). */
function inputMessages(messages: readonly ChatMessage[]): unknown[] {
  return messages.map((m) => {
    if (m.role === "tool") return { role: "tool", parts: [{ type: "tool_call_response", id: m.tool_call_id, response: m.content }] };
    if (m.role === "assistant") {
      const parts: unknown[] = [];
      if (m.content) parts.push({ type: "text", content: m.content });
      for (const c of m.tool_calls ?? [])
        parts.push({ type: "tool_call", id: c.id, name: c.function.name, arguments: c.function.arguments });
      return { role: "assistant", parts };
    }
    return { role: m.role, parts: [{ type: "text", content: m.content }] };
  });
}

function errorType(err: unknown): string {
  if (err instanceof ModelProviderError) return err.kind;
  if (err instanceof Error) return err.name || "Error";
  return "_OTHER";
}

function endWithError(span: Span, type: string, message: string | null): void {
  span.setAttribute("error.type", type);
  span.setStatus({ code: SpanStatusCode.ERROR, ...(message ? { message } : {}) });
}

interface Open {
  span: Span;
  ctx: Context;
}

/**
 * The spans of one agent (one run at a time, as the agent runs them). Made
 * by the agent; an application sets it up through `AgentOptions.tracing`.
 */
export class AgentTracer {
  readonly #tracer: Tracer;
  readonly #info: ModelInfo;
  readonly #content: boolean;
  readonly #options: TracingOptions;
  #run: Open | null = null;
  /**
   * Whether the current run is traced: its span has a valid context (an SDK
   * is registered, or the caller's context carries a trace). When it is not,
   * the run makes no further spans and the model and tools are called
   * directly, so tracing off costs next to nothing. Unknown (null) between
   * runs.
   */
  #active: boolean | null = null;
  #turn = 0;
  readonly #tools = new Map<string, Open>();

  constructor(
    readonly agentId: string,
    model: ModelAdapter,
    options: TracingOptions = {},
  ) {
    this.#tracer = trace.getTracer(TRACER_NAME, VERSION);
    this.#info = modelInfo(model, options);
    this.#content = options.captureContent ?? captureContentFromEnv();
    this.#options = options;
  }

  /** Whether content (arguments, results, messages) is recorded. */
  get capturesContent(): boolean {
    return this.#content;
  }

  /**
   * The events the tracer needs now: a run's start and end always, the
   * others only while the run is traced (or not yet known to be untraced).
   * The agent's emitter skips the rest (see `EventObserver`).
   */
  wants(kind: AgentEvent["kind"]): boolean {
    return this.#active !== false || kind === "agent_started" || kind === "agent_continued" || kind === "agent_finished";
  }

  /** Open and close the run and tool spans (the agent's emitter calls this before the sinks). */
  handle(event: AgentEvent): void {
    this.#handle(event);
  }

  #common(): Attributes {
    const a: Attributes = { "gen_ai.provider.name": this.#info.provider, "gen_ai.agent.id": this.agentId };
    if (this.#options.agentName !== undefined) a["gen_ai.agent.name"] = this.#options.agentName;
    if (this.#options.conversationId !== undefined) a["gen_ai.conversation.id"] = this.#options.conversationId;
    return a;
  }

  #handle(event: AgentEvent): void {
    switch (event.kind) {
      case "agent_started":
      case "agent_continued":
        this.#startRun(event);
        return;
      case "turn_started":
        this.#turn = event.turn;
        return;
      case "tool_started":
        if (this.#active === false) return;
        this.#startTool(event.tool_call.id, event.tool_call.name, event.tool_call.arguments, event.turn);
        return;
      case "tool_approval_requested": {
        const span = this.#tools.get(event.tool_call.id)?.span;
        if (span === undefined || !span.isRecording()) return;
        span.setAttribute("agentcore.approval.required", true);
        span.addEvent("agentcore.approval.requested", {
          "agentcore.approval.effect": event.request.effect,
          "agentcore.approval.suspended": event.suspended,
          ...(event.request.rule_id !== null ? { "agentcore.approval.rule_id": event.request.rule_id } : {}),
        });
        return;
      }
      case "tool_approval_decided": {
        const span = this.#tools.get(event.tool_call_id)?.span;
        if (span === undefined || !span.isRecording()) return;
        span.setAttributes({ "agentcore.approval.approved": event.approved, "agentcore.approval.decided_by": event.decided_by });
        span.addEvent("agentcore.approval.decided", {
          "agentcore.approval.approved": event.approved,
          "agentcore.approval.decided_by": event.decided_by,
          ...(this.#content && event.reason ? { "agentcore.approval.reason": event.reason } : {}),
        });
        return;
      }
      case "tool_completed": {
        const open = this.#tools.get(event.tool_call.id);
        if (open === undefined) return;
        this.#tools.delete(event.tool_call.id);
        const { span } = open;
        const r = event.result;
        if (span.isRecording()) {
          const content = r.messages[0]?.content;
          if (this.#content && content !== undefined) span.setAttribute("gen_ai.tool.call.result", content);
          if (r.control !== "continue") span.setAttribute("agentcore.tool.control", r.control);
          span.setAttribute("agentcore.tool.status", r.cancelled ? "cancelled" : r.error !== null ? "error" : "ok");
          if (r.error !== null) endWithError(span, toolErrorType(content, r.cancelled), r.error);
        }
        span.end();
        return;
      }
      case "agent_finished":
        this.#finishRun(event.result);
        return;
      default:
        return;
    }
  }

  #startRun(event: AgentEvent & { kind: "agent_started" | "agent_continued" }): void {
    if (this.#run !== null) this.#run.span.end(); // not expected: one run at a time
    this.#run = null;
    this.#turn = 0;
    const name = this.#options.agentName === undefined ? "invoke_agent" : `invoke_agent ${this.#options.agentName}`;
    const attributes: Attributes = {
      "gen_ai.operation.name": "invoke_agent",
      ...this.#common(),
      "agentcore.run.id": event.run_id,
      "agentcore.run.continued": event.kind === "agent_continued",
    };
    if (this.#info.model !== null) attributes["gen_ai.request.model"] = this.#info.model;
    const parent = context.active();
    const span = this.#tracer.startSpan(name, { kind: SpanKind.INTERNAL, attributes }, parent);
    this.#active = isSpanContextValid(span.spanContext());
    if (!this.#active) {
      span.end();
      return;
    }
    if (this.#content && event.kind === "agent_started" && span.isRecording()) {
      span.setAttribute("gen_ai.input.messages", JSON.stringify([{ role: "user", parts: [{ type: "text", content: event.task }] }]));
    }
    this.#run = { span, ctx: trace.setSpan(parent, span) };
  }

  #finishRun(result: AgentEvent & { kind: "agent_finished" } extends { result: infer R } ? R : never): void {
    // Calls left waiting for an approval (a suspended run) end with the run.
    for (const [, open] of this.#tools) {
      if (open.span.isRecording()) open.span.setAttribute("agentcore.tool.status", "awaiting_approval");
      open.span.end();
    }
    this.#tools.clear();
    const run = this.#run;
    this.#run = null;
    this.#active = null;
    if (run === null) return;
    const { span } = run;
    if (span.isRecording()) {
      span.setAttributes({
        "agentcore.run.status": result.status,
        "agentcore.stop_reason": result.stop_reason,
        "agentcore.turns": result.turns,
        "gen_ai.usage.input_tokens": result.usage.input_tokens,
        "gen_ai.usage.output_tokens": result.usage.output_tokens,
      });
      if (this.#content && result.output !== null) {
        span.setAttribute(
          "gen_ai.output.messages",
          JSON.stringify([{ role: "assistant", parts: [{ type: "text", content: result.output }], finish_reason: result.stop_reason }]),
        );
      }
      if (result.status === "failed" || result.status === "cancelled" || result.status === "rejected") {
        endWithError(span, result.stop_reason, result.error);
      }
    }
    span.end();
  }

  #startTool(id: string, name: string, args: string, turn: number): void {
    const parent = this.#run?.ctx ?? context.active();
    const span = this.#tracer.startSpan(
      `execute_tool ${name}`,
      {
        kind: SpanKind.INTERNAL,
        attributes: {
          "gen_ai.operation.name": "execute_tool",
          "gen_ai.tool.name": name,
          "gen_ai.tool.call.id": id,
          "gen_ai.tool.type": "function",
          "agentcore.turn": turn,
        },
      },
      parent,
    );
    if (this.#content && span.isRecording()) span.setAttribute("gen_ai.tool.call.arguments", args);
    this.#tools.set(id, { span, ctx: trace.setSpan(parent, span) });
  }

  /**
   * Run `fn` (a call's dispatch) with the call's `execute_tool` span active,
   * so what the tool sends (an HTTP MCP request) carries its context.
   */
  withToolSpan<T>(callId: string, fn: () => T): T {
    const open = this.#tools.get(callId);
    return open === undefined ? fn() : context.with(open.ctx, fn);
  }

  /**
   * `model` with a `chat` span around each request (`complete` and
   * `stream`), active while the provider sends; `startup` and `shutdown`
   * pass through.
   */
  wrapModel(model: ModelAdapter): ModelAdapter {
    const self = this;
    const wrapped: ModelAdapter = {
      complete: async (request) => {
        if (self.#active === false) return model.complete(request);
        const open = self.#startChat(request);
        try {
          const r = await context.with(open.ctx, () => model.complete(request));
          self.#endChat(open.span, r.message, r.usage, r.finish_reason, undefined);
          return r;
        } catch (err) {
          self.#failChat(open.span, err);
          throw err;
        }
      },
      stream: (request) => (self.#active === false ? streamModel(model, request) : self.#stream(model, request)),
    };
    if (typeof model.startup === "function") wrapped.startup = () => model.startup!();
    if (typeof model.shutdown === "function") wrapped.shutdown = () => model.shutdown!();
    return wrapped;
  }

  #startChat(request: ModelRequest): Open {
    const info = this.#info;
    const attributes: Attributes = { "gen_ai.operation.name": "chat", ...this.#common(), "agentcore.turn": this.#turn };
    if (info.model !== null) attributes["gen_ai.request.model"] = info.model;
    if (info.address !== null) attributes["server.address"] = info.address;
    if (info.port !== null) attributes["server.port"] = info.port;
    if (info.temperature !== null) attributes["gen_ai.request.temperature"] = info.temperature;
    const parent = this.#run?.ctx ?? context.active();
    const span = this.#tracer.startSpan(info.model === null ? "chat" : `chat ${info.model}`, { kind: SpanKind.CLIENT, attributes }, parent);
    if (this.#content && span.isRecording()) span.setAttribute("gen_ai.input.messages", JSON.stringify(inputMessages(request.messages)));
    return { span, ctx: trace.setSpan(parent, span) };
  }

  #endChat(
    span: Span,
    message: { content: string | null; tool_calls?: readonly { id: string; name: string; arguments: string }[] },
    usage: { input_tokens: number; output_tokens: number; cache_read_tokens?: number } | undefined,
    finishReason: string | undefined,
    responseModel: string | undefined,
  ): void {
    if (span.isRecording()) {
      if (responseModel !== undefined) span.setAttribute("gen_ai.response.model", responseModel);
      if (finishReason !== undefined) span.setAttribute("gen_ai.response.finish_reasons", [finishReason]);
      if (usage !== undefined) {
        span.setAttributes({ "gen_ai.usage.input_tokens": usage.input_tokens, "gen_ai.usage.output_tokens": usage.output_tokens });
        if (usage.cache_read_tokens !== undefined) span.setAttribute("gen_ai.usage.cache_read.input_tokens", usage.cache_read_tokens);
      }
      if (this.#content) {
        const parts: unknown[] = [];
        if (message.content) parts.push({ type: "text", content: message.content });
        for (const c of message.tool_calls ?? []) parts.push({ type: "tool_call", id: c.id, name: c.name, arguments: c.arguments });
        span.setAttribute(
          "gen_ai.output.messages",
          JSON.stringify([{ role: "assistant", parts, ...(finishReason !== undefined ? { finish_reason: finishReason } : {}) }]),
        );
      }
    }
    span.end();
  }

  #failChat(span: Span, err: unknown): void {
    if (span.isRecording()) {
      endWithError(span, errorType(err), err instanceof Error ? err.message : String(err));
      if (err instanceof ModelProviderError && err.status !== undefined) span.setAttribute("http.response.status_code", err.status);
    }
    span.end();
  }

  async *#stream(model: ModelAdapter, request: ModelRequest): AsyncGenerator<ModelStreamEvent> {
    const open = this.#startChat(request);
    const it = streamModel(model, request)[Symbol.asyncIterator]();
    let ended = false;
    try {
      for (;;) {
        const step = await context.with(open.ctx, () => it.next());
        if (step.done) break;
        const ev = step.value;
        if (ev.type === "completed") {
          ended = true;
          const responseModel = (ev as { model?: unknown }).model;
          this.#endChat(open.span, ev.message, ev.usage, ev.finish_reason, typeof responseModel === "string" ? responseModel : undefined);
        }
        yield ev;
      }
    } catch (err) {
      if (!ended) {
        ended = true;
        this.#failChat(open.span, err);
      }
      throw err;
    } finally {
      if (!ended) open.span.end(); // closed early by the consumer
      // Closing the provider's stream too (the consumer closes ours after `completed`).
      void Promise.resolve(it.return?.()).catch(() => {});
    }
  }
}
