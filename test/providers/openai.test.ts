import { afterEach, describe, expect, test } from "bun:test";
import {
  ModelProviderError,
  OpenAIModelAdapter,
  type ModelRequest,
  type ModelStreamEvent,
  type ModelToolCall,
  type ModelToolSpec,
  type RetryOptions,
} from "../../src/providers/index.ts";
import {
  chunk,
  errorBody,
  type ScriptedOpenAIServer,
  type ScriptedReply,
  splitBytes,
  sseBytes,
  startOpenAIServer,
  textReply,
  toolChunk,
  usageChunk,
} from "../support/openai-server.ts";
import { collect, failure } from "../support/providers.ts";

let server: ScriptedOpenAIServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

interface Harness {
  server: ScriptedOpenAIServer;
  adapter: OpenAIModelAdapter;
  sleeps: number[];
}

async function setup(
  replies: ScriptedReply[],
  opts: { timeoutMs?: number; retry?: RetryOptions; includeUsage?: boolean } = {},
): Promise<Harness> {
  server = await startOpenAIServer(replies);
  const sleeps: number[] = [];
  const adapter = new OpenAIModelAdapter(
    {
      model: "test-model",
      baseURL: server.baseURL,
      apiKey: "sk-test",
      timeoutMs: opts.timeoutMs ?? 10_000,
      includeUsage: opts.includeUsage,
    },
    {
      retry: {
        sleep: async (ms) => {
          sleeps.push(ms);
        },
        random: () => 0.5,
        ...opts.retry,
      },
    },
  );
  return { server, adapter, sleeps };
}

const userRequest = (tools: ModelToolSpec[] = [], signal?: AbortSignal): ModelRequest => ({
  messages: [{ role: "user", content: "hi" }],
  tools,
  signal,
});

const readFile: ModelToolSpec = {
  name: "read_file",
  description: "Read a file",
  parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
};

/** A completed call as the adapter hands it over: the text and its verdict (the parsed value). */
function streamed(id: string, name: string, args: string): ModelToolCall {
  return { id, name, arguments: args, parsed: { ok: true, value: JSON.parse(args) } };
}

describe("OpenAIModelAdapter: streaming", () => {
  test("text deltas, completed message and usage from the final chunk", async () => {
    const { adapter, server } = await setup([
      {
        kind: "stream",
        chunks: [
          chunk({ role: "assistant", content: "" }),
          chunk({ content: "Hel" }),
          chunk({ content: "lo" }),
          chunk({}, "stop"),
          usageChunk(11, 7, { prompt_tokens_details: { cached_tokens: 3 }, completion_tokens_details: { reasoning_tokens: 2 } }),
        ],
      },
    ]);
    const events = await collect(adapter.stream(userRequest()));
    expect(events).toEqual([
      { type: "text_delta", delta: "Hel" },
      { type: "text_delta", delta: "lo" },
      {
        type: "completed",
        message: { content: "Hello", tool_calls: [] },
        usage: { input_tokens: 11, output_tokens: 7, total_tokens: 18, cache_read_tokens: 3, reasoning_tokens: 2 },
        finish_reason: "stop",
        // the stream's `model` field (the span's gen_ai.response.model)
        model: "test-model",
      },
    ]);
    expect(server.requests).toHaveLength(1);
    const r = server.requests[0];
    expect(r.method).toBe("POST");
    expect(r.url).toBe("/v1/chat/completions");
    expect(r.headers.authorization).toBe("Bearer sk-test");
    expect(r.body.model).toBe("test-model");
    expect(r.body.stream).toBe(true);
    expect(r.body.stream_options).toEqual({ include_usage: true });
    expect(r.body.temperature).toBe(0.7);
    expect(r.body.messages).toEqual([{ role: "user", content: "hi" }]);
    expect(r.body.tools).toBeUndefined();
  });

  test("finish_reason length and content_filter are reported on the completed event and by complete()", async () => {
    const { adapter } = await setup([
      {
        kind: "stream",
        chunks: [chunk({ role: "assistant", content: "" }), chunk({ content: "cut o" }), chunk({}, "length"), usageChunk(5, 2)],
      },
      { kind: "stream", chunks: [chunk({ role: "assistant", content: "" }), chunk({}, "content_filter")] },
      {
        kind: "stream",
        chunks: [
          chunk({ role: "assistant", content: null }),
          toolChunk(0, { id: "call_1", name: "read_file", args: '{"pa' }),
          chunk({}, "length"),
        ],
      },
    ]);
    const first = await collect(adapter.stream(userRequest()));
    expect(first.at(-1)).toEqual({
      type: "completed",
      message: { content: "cut o", tool_calls: [] },
      usage: { input_tokens: 5, output_tokens: 2, total_tokens: 7 },
      finish_reason: "length",
      model: "test-model",
    });
    expect(await adapter.complete(userRequest())).toEqual({ message: { content: null, tool_calls: [] }, finish_reason: "content_filter" });
    // A call cut inside its arguments: still reported (with the parser's verdict), and the finish reason says why.
    const third = (await collect(adapter.stream(userRequest([readFile])))).at(-1) as Extract<ModelStreamEvent, { type: "completed" }>;
    expect(third.finish_reason).toBe("length");
    expect(third.message.tool_calls[0]).toMatchObject({ id: "call_1", name: "read_file", arguments: '{"pa' });
    expect(third.message.tool_calls[0]!.arguments_error).toBeDefined();
  });

  test("include_usage is not sent when turned off; usage is then absent", async () => {
    const { adapter, server } = await setup([textReply("ok")], { includeUsage: false });
    const res = await adapter.complete(userRequest());
    expect(res).toEqual({ message: { content: "ok", tool_calls: [] }, finish_reason: "stop" });
    expect(server.requests[0].body.stream_options).toBeUndefined();
  });

  test("reasoning_content and reasoning become thinking deltas", async () => {
    const { adapter } = await setup([
      {
        kind: "stream",
        chunks: [
          chunk({ role: "assistant", reasoning_content: "Let me " }),
          chunk({ reasoning_content: "think." }),
          chunk({ reasoning: " More." }),
          chunk({ content: "Answer" }),
          chunk({}, "stop"),
        ],
      },
    ]);
    const events = await collect(adapter.stream(userRequest()));
    expect(events.map((e) => (e.type === "completed" ? e.type : `${e.type}:${e.delta}`))).toEqual([
      "thinking_delta:Let me ",
      "thinking_delta:think.",
      "thinking_delta: More.",
      "text_delta:Answer",
      "completed",
    ]);
    const done = events.at(-1) as Extract<ModelStreamEvent, { type: "completed" }>;
    expect(done.message.content).toBe("Answer");
  });

  test("tools are sent in the wire shape, strict only for strict tools", async () => {
    const { adapter, server } = await setup([textReply("ok")]);
    const strictTool: ModelToolSpec = { ...readFile, name: "write_file", strict: true };
    await adapter.complete(userRequest([readFile, strictTool]));
    expect(server.requests[0].body.tools).toEqual([
      { type: "function", function: { name: "read_file", description: "Read a file", parameters: readFile.parameters } },
      { type: "function", function: { name: "write_file", description: "Read a file", parameters: readFile.parameters, strict: true } },
    ]);
    expect("strict" in server.requests[0].body.tools![0]!.function).toBe(false);
  });

  test("a tool call split across chunks at awkward points (inside a key, inside a \\u escape, between surrogate halves)", async () => {
    // Arguments text: {"path":"caf\u00e9 😀.txt","n":1}
    const args = '{"path":"caf\\u00e9 \\ud83d\\ude00.txt","n":1}';
    const pieces = ['{"pa', 'th":"caf\\u0', "0e9 \\ud83d", "\\ude00.tx", 't","', 'n":', "1}"];
    expect(pieces.join("")).toBe(args);
    const { adapter } = await setup([
      {
        kind: "stream",
        chunks: [
          chunk({ role: "assistant", content: null }),
          toolChunk(0, { id: "call_1", name: "read_file", args: "" }),
          ...pieces.map((p) => toolChunk(0, { args: p })),
          chunk({}, "tool_calls"),
        ],
      },
    ]);
    const res = await adapter.complete(userRequest([readFile]));
    expect(res.message).toEqual({
      content: null,
      tool_calls: [{ id: "call_1", name: "read_file", arguments: args, parsed: { ok: true, value: JSON.parse(args) } }],
    });
    expect(JSON.parse(res.message.tool_calls[0].arguments)).toEqual({ path: "café 😀.txt", n: 1 });
  });

  test("literal multibyte characters split between UTF-8 bytes of the raw SSE stream", async () => {
    const args = '{"city":"Zürich 🗻"}';
    const chunks = [
      chunk({ role: "assistant", content: "é" }),
      toolChunk(0, { id: "call_9", name: "weather", args: args.slice(0, 12) }),
      toolChunk(0, { args: args.slice(12) }),
      chunk({}, "tool_calls"),
    ];
    const bytes = sseBytes(chunks);
    // Split inside every multibyte sequence: after the first byte of each.
    const offsets: number[] = [];
    for (let i = 0; i < bytes.length; i++) if (bytes[i] >= 0xc0) offsets.push(i + 1);
    expect(offsets.length).toBeGreaterThanOrEqual(3);
    const { adapter } = await setup([{ kind: "stream", chunks: splitBytes(bytes, offsets), end: "end" }]);
    const events = await collect(adapter.stream(userRequest()));
    const done = events.at(-1) as Extract<ModelStreamEvent, { type: "completed" }>;
    expect(done.message).toEqual({
      content: "é",
      tool_calls: [{ id: "call_9", name: "weather", arguments: args, parsed: { ok: true, value: JSON.parse(args) } }],
    });
  });

  test("parallel tool calls with interleaved indexes are assembled per index, in index order", async () => {
    const { adapter } = await setup([
      {
        kind: "stream",
        chunks: [
          chunk({ role: "assistant", content: null }),
          toolChunk(0, { id: "call_a", name: "read_file", args: '{"pa' }),
          toolChunk(1, { id: "call_b", name: "echo", args: '{"te' }),
          toolChunk(0, { args: 'th":"a.txt"' }),
          toolChunk(1, { args: 'xt":"hi"}' }),
          toolChunk(0, { args: "}" }),
          chunk({}, "tool_calls"),
          usageChunk(5, 9),
        ],
      },
    ]);
    const res = await adapter.complete(userRequest([readFile]));
    expect(res.message.tool_calls).toEqual([
      streamed("call_a", "read_file", '{"path":"a.txt"}'),
      streamed("call_b", "echo", '{"text":"hi"}'),
    ]);
    expect(res.usage).toEqual({ input_tokens: 5, output_tokens: 9, total_tokens: 14 });
  });

  test("Ollama's quirk: every call sent with index 0, each with its own id, gives separate calls in order", async () => {
    const { adapter } = await setup([
      {
        kind: "stream",
        chunks: [
          chunk({ role: "assistant", content: "" }),
          toolChunk(0, { id: "call_h", name: "write_file", args: '{"path":"hello.py","content":"print(\\"hello\\")"}' }),
          toolChunk(0, { id: "call_w", name: "write_file", args: '{"path":"world.py",' }),
          // a continuation without an id (or repeating its id) stays with the call it continues
          toolChunk(0, { args: '"content":' }),
          toolChunk(0, { id: "call_w", args: '"print(\\"world\\")"}' }),
          toolChunk(0, { id: "call_r", name: "read_file", args: '{"path":"a.txt"}' }),
          chunk({}, "tool_calls"),
        ],
      },
    ]);
    const res = await adapter.complete(userRequest([readFile]));
    expect(res.message.tool_calls).toEqual([
      streamed("call_h", "write_file", '{"path":"hello.py","content":"print(\\"hello\\")"}'),
      streamed("call_w", "write_file", '{"path":"world.py","content":"print(\\"world\\")"}'),
      streamed("call_r", "read_file", '{"path":"a.txt"}'),
    ]);
  });

  test("malformed streamed arguments: the call carries the strict parser's verdict and the raw text", async () => {
    const { adapter } = await setup([
      {
        kind: "stream",
        chunks: [
          toolChunk(0, { id: "c1", name: "read_file", args: '{"path":' }),
          toolChunk(0, { args: '"a", "path": "b"}' }),
          toolChunk(1, { id: "c2", name: "read_file", args: '{"path": "x"' }),
          toolChunk(2, { id: "c3", name: "read_file", args: "" }),
          toolChunk(3, { id: "c4", name: "read_file", args: "{} extra" }),
          chunk({}, "tool_calls"),
        ],
      },
    ]);
    const res = await adapter.complete(userRequest([readFile]));
    const [dup, unfinished, empty, trailing] = res.message.tool_calls;
    expect(dup.arguments).toBe('{"path":"a", "path": "b"}');
    expect(dup.arguments_error).toMatchObject({ code: "JSON_DUPLICATE_KEY", message: 'duplicate key "path"', offset: 13, line: 1 });
    expect(unfinished.arguments).toBe('{"path": "x"');
    expect(unfinished.arguments_error).toMatchObject({ code: "JSON_PARSE", message: "unexpected end of data", offset: 12 });
    expect(empty.arguments).toBe("");
    expect(empty.arguments_error).toMatchObject({ code: "JSON_PARSE", message: "unexpected end of data", offset: 0 });
    expect(trailing.arguments).toBe("{} extra");
    expect(trailing.arguments_error).toMatchObject({ code: "JSON_PARSE", offset: 3 });
  });

  test("a valid call has no arguments_error", async () => {
    const { adapter } = await setup([
      { kind: "stream", chunks: [toolChunk(0, { id: "c1", name: "read_file", args: '{"path":"a"}' }), chunk({}, "tool_calls")] },
    ]);
    const res = await adapter.complete(userRequest([readFile]));
    expect("arguments_error" in res.message.tool_calls[0]).toBe(false);
  });
});

describe("OpenAIModelAdapter: errors and retries", () => {
  test("401 → authentication, not retried", async () => {
    const { adapter, server, sleeps } = await setup([
      { kind: "error", status: 401, body: errorBody("Incorrect API key provided", "invalid_request_error", "invalid_api_key") },
    ]);
    const e = await failure(adapter.complete(userRequest()));
    expect(e).toBeInstanceOf(ModelProviderError);
    const err = e as ModelProviderError;
    expect(err.kind).toBe("authentication");
    expect(err.status).toBe(401);
    expect(err.responseStarted).toBe(false);
    expect(err.message.startsWith("chat completion failed: ")).toBe(true);
    expect(server.requests).toHaveLength(1);
    expect(sleeps).toEqual([]);
  });

  test("stream() failures use the stream prefix", async () => {
    const { adapter } = await setup([{ kind: "error", status: 403, body: errorBody("forbidden", "permission_error") }]);
    const err = (await failure(collect(adapter.stream(userRequest())))) as ModelProviderError;
    expect(err.kind).toBe("authentication");
    expect(err.message.startsWith("chat completion stream failed: ")).toBe(true);
  });

  test("429 with Retry-After is retried after the advertised wait, then succeeds", async () => {
    const { adapter, server, sleeps } = await setup([
      {
        kind: "error",
        status: 429,
        body: errorBody("Rate limit reached", "requests", "rate_limit_exceeded"),
        headers: { "retry-after": "2" },
      },
      textReply("after the wait"),
    ]);
    const res = await adapter.complete(userRequest());
    expect(res.message.content).toBe("after the wait");
    expect(sleeps).toEqual([2000]);
    expect(server.requests).toHaveLength(2);
  });

  test("retry-after-ms and HTTP-date forms; the wait is capped", async () => {
    const later = new Date(Date.now() + 3_600_000).toUTCString();
    const { adapter, sleeps } = await setup(
      [
        { kind: "error", status: 429, headers: { "retry-after-ms": "150" } },
        { kind: "error", status: 429, headers: { "retry-after": later } },
        textReply("ok"),
      ],
      { retry: { retryAfterCapMs: 5000 } },
    );
    await adapter.complete(userRequest());
    expect(sleeps).toEqual([150, 5000]);
  });

  test("429 exhausting the retries → rate_limit with retryAfterMs", async () => {
    const r429 = (): ScriptedReply => ({
      kind: "error",
      status: 429,
      body: errorBody("slow down", "requests"),
      headers: { "retry-after": "1" },
    });
    const { adapter, server, sleeps } = await setup([r429(), r429(), r429()], { retry: { maxRetries: 2 } });
    const err = (await failure(adapter.complete(userRequest()))) as ModelProviderError;
    expect(err.kind).toBe("rate_limit");
    expect(err.status).toBe(429);
    expect(err.retryAfterMs).toBe(1000);
    expect(server.requests).toHaveLength(3);
    expect(sleeps).toEqual([1000, 1000]);
  });

  test("500 is retried with exponential backoff, then succeeds", async () => {
    const { adapter, server, sleeps } = await setup(
      [
        { kind: "error", status: 500, body: errorBody("The server had an error", "server_error") },
        { kind: "error", status: 503, body: "upstream unavailable" },
        textReply("fine"),
      ],
      { retry: { baseDelayMs: 100 } },
    );
    const res = await adapter.complete(userRequest());
    expect(res.message.content).toBe("fine");
    expect(server.requests).toHaveLength(3);
    // random() = 0.5: half the exponential delay plus half of the other half.
    expect(sleeps).toEqual([75, 150]);
  });

  test("500 exhausting the retries → provider_error with the status", async () => {
    const { adapter, server } = await setup(
      [
        { kind: "error", status: 502 },
        { kind: "error", status: 502 },
      ],
      { retry: { maxRetries: 1 } },
    );
    const err = (await failure(adapter.complete(userRequest()))) as ModelProviderError;
    expect(err.kind).toBe("provider_error");
    expect(err.status).toBe(502);
    expect(server.requests).toHaveLength(2);
  });

  test("a connection cut before any delta is retried", async () => {
    const { adapter, server } = await setup([
      { kind: "stream", chunks: [chunk({ role: "assistant" })], end: "destroy" },
      textReply("second try"),
    ]);
    const res = await adapter.complete(userRequest());
    expect(res.message.content).toBe("second try");
    expect(server.requests).toHaveLength(2);
  });

  test("429 for an exhausted quota (insufficient_quota) → rate_limit, not retried: waiting cannot help", async () => {
    const { adapter, server, sleeps } = await setup([
      {
        kind: "error",
        status: 429,
        body: errorBody(
          "You exceeded your current quota, please check your plan and billing details.",
          "insufficient_quota",
          "insufficient_quota",
        ),
      },
      textReply("never asked for"),
    ]);
    const err = (await failure(adapter.complete(userRequest()))) as ModelProviderError;
    expect(err.kind).toBe("rate_limit");
    expect(err.status).toBe(429);
    expect(err.message).toContain("exceeded your current quota");
    expect(server.requests).toHaveLength(1);
    expect(sleeps).toEqual([]);
  });

  test("a 200 answer that is not an event stream (an HTML page, a JSON body) is one clear error, not retried", async () => {
    const { adapter, server, sleeps } = await setup([
      {
        kind: "error",
        status: 200,
        body: "<html><body>Welcome to the web UI</body></html>",
        headers: { "content-type": "text/html; charset=utf-8" },
      },
      {
        kind: "json",
        body: {
          id: "x",
          object: "chat.completion",
          choices: [{ index: 0, message: { role: "assistant", content: "hi" }, finish_reason: "stop" }],
        },
      },
      textReply("never asked for"),
    ]);
    const html = (await failure(collect(adapter.stream(userRequest())))) as ModelProviderError;
    expect(html).toBeInstanceOf(ModelProviderError);
    expect(html.kind).toBe("provider_error");
    expect(html.message).toBe(
      `chat completion stream failed: ${server.baseURL} answered 200 with "text/html; charset=utf-8", not a stream of server-sent events: is it an OpenAI-compatible /v1 URL?`,
    );
    const json = (await failure(adapter.complete(userRequest()))) as ModelProviderError;
    expect(json.message).toBe(
      `chat completion failed: ${server.baseURL} answered 200 with "application/json", not a stream of server-sent events: is it an OpenAI-compatible /v1 URL?`,
    );
    expect(server.requests).toHaveLength(2);
    expect(sleeps).toEqual([]);
  });

  test("an event stream cut before its first chunk is still retried", async () => {
    const { adapter, server } = await setup([{ kind: "stream", chunks: [], end: "destroy" }, textReply("second try")]);
    const res = await adapter.complete(userRequest());
    expect(res.message.content).toBe("second try");
    expect(server.requests).toHaveLength(2);
  });

  test("nothing listening (LM Studio not started): retried, then an error naming the endpoint and the cause", async () => {
    // A port that was just in use and is closed now: connections are refused.
    const probe = await startOpenAIServer();
    const url = new URL(probe.baseURL);
    await probe.close();
    url.username = "user";
    url.password = "secret-in-url";
    url.search = "?key=secret-in-query";
    const sleeps: number[] = [];
    const adapter = new OpenAIModelAdapter(
      { model: "local", baseURL: url.href, timeoutMs: 10_000 },
      { retry: { maxRetries: 2, sleep: async (ms) => void sleeps.push(ms) } },
    );
    const err = (await failure(collect(adapter.stream(userRequest())))) as ModelProviderError;
    expect(err).toBeInstanceOf(ModelProviderError);
    expect(err.kind).toBe("provider_error");
    expect(sleeps).toHaveLength(2);
    expect(err.message).toStartWith(`chat completion stream failed: cannot connect to http://${url.host}/v1: `);
    expect(err.message).toContain("ECONNREFUSED");
    expect(err.message).not.toContain("secret");
  });

  test("context-length error body → context_overflow, not retried", async () => {
    const { adapter, server, sleeps } = await setup([
      {
        kind: "error",
        status: 400,
        body: errorBody(
          "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",
          "invalid_request_error",
          "context_length_exceeded",
        ),
      },
    ]);
    const err = (await failure(adapter.complete(userRequest()))) as ModelProviderError;
    expect(err.kind).toBe("context_overflow");
    expect(err.status).toBe(400);
    expect(server.requests).toHaveLength(1);
    expect(sleeps).toEqual([]);
  });

  test("context overflow recognised by phrase alone (a local server's wording)", async () => {
    const { adapter } = await setup([{ kind: "error", status: 400, body: { error: "Prompt is too long for this model" } }]);
    const err = (await failure(adapter.complete(userRequest()))) as ModelProviderError;
    expect(err.kind).toBe("context_overflow");
  });

  test("LM Studio's and llama.cpp's overflow answers → context_overflow, not retried", async () => {
    const replies: ScriptedReply[] = [
      // LM Studio (its wording, garbled order included, as a bare string error)
      {
        kind: "error",
        status: 400,
        body: {
          error:
            "Trying to keep the first 9000 tokens when context the overflows. However, the model is loaded with context length of only 4096 tokens, which is not enough. Try to load the model with a larger context length, or provide a shorter input",
        },
      },
      // llama.cpp server, newer (type) and older (message only)
      {
        kind: "error",
        status: 400,
        body: {
          error: {
            code: 400,
            message: "request (9000 tokens) exceeds the available context size (4096 tokens), try increasing it",
            type: "exceed_context_size_error",
            n_prompt_tokens: 9000,
            n_ctx: 4096,
          },
        },
      },
      {
        kind: "error",
        status: 400,
        body: {
          error: { code: 400, message: "the request exceeds the available context size, try increasing it", type: "invalid_request_error" },
        },
      },
    ];
    const { adapter, server, sleeps } = await setup(replies);
    for (let i = 0; i < replies.length; i++) {
      const err = (await failure(adapter.complete(userRequest()))) as ModelProviderError;
      expect(err).toBeInstanceOf(ModelProviderError);
      expect(err.kind).toBe("context_overflow");
      expect(err.status).toBe(400);
    }
    expect(server.requests).toHaveLength(replies.length);
    expect(sleeps).toEqual([]);
  });

  test("other 4xx → provider_error, not retried", async () => {
    const { adapter, server } = await setup([{ kind: "error", status: 400, body: errorBody("bad tool schema", "invalid_request_error") }]);
    const err = (await failure(adapter.complete(userRequest()))) as ModelProviderError;
    expect(err.kind).toBe("provider_error");
    expect(err.status).toBe(400);
    expect(server.requests).toHaveLength(1);
  });

  test("server hangs → timeout, not retried", async () => {
    const { adapter, server } = await setup([{ kind: "hang" }], { timeoutMs: 150 });
    const err = (await failure(adapter.complete(userRequest()))) as ModelProviderError;
    expect(err).toBeInstanceOf(ModelProviderError);
    expect(err.kind).toBe("timeout");
    expect(err.responseStarted).toBe(false);
    expect(err.message).toBe("chat completion failed: no response from the model within 150 ms");
    expect(server.requests).toHaveLength(1);
  });

  test("stream stalls after a delta → timeout with responseStarted, not retried", async () => {
    const { adapter, server } = await setup(
      [{ kind: "stream", chunks: [chunk({ role: "assistant", content: "partial" })], end: "stall" }, textReply("unused")],
      { timeoutMs: 150 },
    );
    const seen: ModelStreamEvent[] = [];
    let caught: unknown;
    try {
      for await (const ev of adapter.stream(userRequest())) seen.push(ev);
    } catch (e) {
      caught = e;
    }
    expect(seen).toEqual([{ type: "text_delta", delta: "partial" }]);
    const err = caught as ModelProviderError;
    expect(err.kind).toBe("timeout");
    expect(err.responseStarted).toBe(true);
    expect(server.requests).toHaveLength(1);
  });

  test("a failure after a delta was yielded is not retried and has responseStarted", async () => {
    const { adapter, server, sleeps } = await setup([
      { kind: "stream", chunks: [chunk({ role: "assistant", content: "Hello" }), chunk({ content: " wor" })], end: "destroy" },
      textReply("should not be used"),
    ]);
    const seen: string[] = [];
    const err = (await failure(
      (async () => {
        for await (const ev of adapter.stream(userRequest())) if (ev.type === "text_delta") seen.push(ev.delta);
      })(),
    )) as ModelProviderError;
    expect(seen).toEqual(["Hello", " wor"]);
    expect(err).toBeInstanceOf(ModelProviderError);
    expect(err.kind).toBe("provider_error");
    expect(err.responseStarted).toBe(true);
    expect(server.requests).toHaveLength(1);
    expect(sleeps).toEqual([]);
  });

  test("an in-stream server_error before any delta is retried like a 5xx; rate_limit_exceeded is rate_limit", async () => {
    const { adapter, server, sleeps } = await setup([
      {
        kind: "stream",
        chunks: [{ error: { message: "The server had an error while processing your request", type: "server_error" } }],
        end: "end",
      },
      {
        kind: "stream",
        chunks: [{ error: { message: "Rate limit reached for requests", type: "requests", code: "rate_limit_exceeded" } }],
        end: "end",
      },
      textReply("third try"),
    ]);
    const res = await adapter.complete(userRequest());
    expect(res.message.content).toBe("third try");
    expect(server.requests).toHaveLength(3);
    expect(sleeps).toHaveLength(2);
    await server.close(); // setup() below starts the next one
    const { adapter: once } = await setup(
      [{ kind: "stream", chunks: [{ error: { message: "Rate limit reached", code: "rate_limit_exceeded" } }], end: "end" }],
      { retry: { maxRetries: 0 } },
    );
    const err = (await failure(once.complete(userRequest()))) as ModelProviderError;
    expect(err.kind).toBe("rate_limit");
    expect(err.responseStarted).toBe(false);
  });

  test("an in-stream error event after a delta → not retried", async () => {
    const { adapter, server } = await setup([
      {
        kind: "stream",
        chunks: [chunk({ content: "Hi" }), { error: { message: "The server had an error while processing", type: "server_error" } }],
        end: "end",
      },
      textReply("unused"),
    ]);
    const err = (await failure(collect(adapter.stream(userRequest())))) as ModelProviderError;
    expect(err.kind).toBe("provider_error");
    expect(err.responseStarted).toBe(true);
    expect(server.requests).toHaveLength(1);
  });

  test("a stream that ends without a finish reason is an error, not a truncated success", async () => {
    const { adapter } = await setup([
      { kind: "stream", chunks: [toolChunk(0, { id: "c", name: "read_file", args: '{"pa' })], end: "end" },
      textReply("retried"),
    ]);
    // Nothing was yielded (tool fragments are not events), so this is retried.
    const res = await adapter.complete(userRequest());
    expect(res.message.content).toBe("retried");
  });

  test("a stream cut short after a delta → provider_error with responseStarted", async () => {
    const { adapter, server } = await setup([{ kind: "stream", chunks: [chunk({ content: "Hi" })], end: "end" }, textReply("unused")]);
    const err = (await failure(collect(adapter.stream(userRequest())))) as ModelProviderError;
    expect(err.kind).toBe("provider_error");
    expect(err.responseStarted).toBe(true);
    expect(err.message).toBe("chat completion stream failed: the stream ended before the response was finished");
    expect(server.requests).toHaveLength(1);
  });
});

describe("OpenAIModelAdapter: consumers and the support server", () => {
  test("breaking out of the stream closes the connection", async () => {
    const { adapter, server } = await setup([
      { kind: "stream", chunks: [chunk({ content: "one" }), chunk({ content: "two" })], end: "stall" },
    ]);
    for await (const ev of adapter.stream(userRequest())) {
      expect(ev).toEqual({ type: "text_delta", delta: "one" });
      break;
    }
    for (let i = 0; i < 200 && server.disconnects === 0; i++) await new Promise((r) => setTimeout(r, 5));
    expect(server.disconnects).toBe(1);
  });

  test("a delayed reply is still taken", async () => {
    const { adapter } = await setup([{ ...textReply("slow but fine"), delayMs: 20 }]);
    expect((await adapter.complete(userRequest())).message.content).toBe("slow but fine");
  });

  test("the server also answers non-stream requests with plain JSON", async () => {
    const body = {
      id: "chatcmpl-1",
      object: "chat.completion",
      created: 1,
      model: "test-model",
      choices: [{ index: 0, message: { role: "assistant", content: "plain", refusal: null }, logprobs: null, finish_reason: "stop" }],
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
    };
    const { adapter, server } = await setup([{ kind: "json", body }]);
    const r = await (await adapter.client()).chat.completions.create({ model: "test-model", messages: [{ role: "user", content: "x" }] });
    expect(r.choices[0].message.content).toBe("plain");
    expect(server.requests[0].body.stream).toBeUndefined();
  });
});

describe("OpenAIModelAdapter: abort", () => {
  test("abort mid-stream rejects with the abort reason, not a provider error", async () => {
    const { adapter, server } = await setup([{ kind: "stream", chunks: [chunk({ content: "first" })], end: "stall" }]);
    const ctrl = new AbortController();
    const seen: string[] = [];
    const err = await failure(
      (async () => {
        for await (const ev of adapter.stream(userRequest([], ctrl.signal))) {
          if (ev.type === "text_delta") {
            seen.push(ev.delta);
            setTimeout(() => ctrl.abort(), 5);
          }
        }
      })(),
    );
    expect(seen).toEqual(["first"]);
    expect(err).not.toBeInstanceOf(ModelProviderError);
    expect((err as Error).name).toBe("AbortError");
    expect(server.requests).toHaveLength(1);
  });

  test("abort with a reason rethrows that reason", async () => {
    const { adapter } = await setup([{ kind: "hang" }]);
    const ctrl = new AbortController();
    const reason = new Error("user pressed Ctrl-C");
    setTimeout(() => ctrl.abort(reason), 20);
    const err = await failure(adapter.complete(userRequest([], ctrl.signal)));
    expect(err).toBe(reason);
  });

  test("an already aborted signal sends nothing", async () => {
    const { adapter, server } = await setup([textReply("unused")]);
    const ctrl = new AbortController();
    ctrl.abort();
    const err = await failure(adapter.complete(userRequest([], ctrl.signal)));
    expect((err as Error).name).toBe("AbortError");
    expect(server.requests).toHaveLength(0);
  });

  test("abort during the retry wait stops retrying", async () => {
    const ctrl = new AbortController();
    const { adapter, server } = await setup([{ kind: "error", status: 429, headers: { "retry-after": "30" } }, textReply("unused")], {
      retry: {
        sleep: (_ms, signal) =>
          new Promise((_, reject) => {
            signal?.addEventListener("abort", () => reject(signal.reason), { once: true });
            ctrl.abort();
          }),
      },
    });
    const err = await failure(adapter.complete(userRequest([], ctrl.signal)));
    expect((err as Error).name).toBe("AbortError");
    expect(server.requests).toHaveLength(1);
  });
});
