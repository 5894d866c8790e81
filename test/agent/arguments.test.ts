/**
 * A tool call is parsed once: the provider's verdict on the arguments (the
 * value, or the first error with its offset) is what the agent acts on.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { createAgent } from "../../src/agent/index.ts";
import {
  OpenAIModelAdapter,
  ScriptedModel,
  type ModelAdapter,
  type ModelStreamEvent,
  type ModelToolCall,
} from "../../src/providers/index.ts";
import type { ToolDefinition } from "../../src/tools/definition.ts";
import { chunk, type ScriptedOpenAIServer, startOpenAIServer, textReply, toolChunk } from "../support/openai-server.ts";

let server: ScriptedOpenAIServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

function echoTool(seen: unknown[]): ToolDefinition {
  return {
    name: "echo",
    description: "echo",
    parameters: { type: "object" },
    handler: (args) => {
      seen.push(args);
      return "echoed";
    },
  };
}

/** The last tool message of a conversation, parsed. */
function toolMessage(messages: readonly { role: string; content?: unknown }[]): unknown {
  const m = messages.findLast((x) => x.role === "tool");
  return m === undefined ? undefined : JSON.parse(m.content as string);
}

describe("the provider's verdict drives the call", () => {
  test("streamed over HTTP: the adapter's argument limits decide, and the model gets that error with its offset", async () => {
    // Valid JSON, but deeper than the adapter allows: before, the agent parsed
    // the text again with its own limits and ran the tool anyway.
    server = await startOpenAIServer([
      {
        kind: "stream",
        chunks: [
          chunk({ role: "assistant", content: null }),
          toolChunk(0, { id: "c1", name: "echo", args: '{"a":{"b"' }),
          toolChunk(0, { args: ':{"c":1}}}' }),
          chunk({}, "tool_calls"),
        ],
      },
      textReply("recovered"),
    ]);
    const model = new OpenAIModelAdapter(
      { model: "m", baseURL: server.baseURL, apiKey: "sk-test", timeoutMs: 10_000 },
      { argumentLimits: { maxDepth: 2 } },
    );
    const seen: unknown[] = [];
    const agent = createAgent({ model, tools: [echoTool(seen)] });
    const result = await agent.run("go");
    await agent.shutdown();
    expect(result).toMatchObject({ status: "completed", output: "recovered", turns: 2 });
    expect(seen).toEqual([]);
    const msg = toolMessage(agent.messages) as { status: string; code: string; error: string };
    expect(msg.status).toBe("error");
    expect(msg.code).toBe("JSON_DEPTH");
    expect(msg.error).toMatch(/ at offset 10 \(line 1, column 11\)$/);
    // The second request shows the model the same words.
    const sent = server.requests[1]!.body as { messages: { role: string; content: string }[] };
    expect(JSON.parse(sent.messages.at(-1)!.content)).toEqual(msg);
  });

  test("streamed over HTTP: valid arguments reach the tool as the adapter parsed them", async () => {
    server = await startOpenAIServer([
      {
        kind: "stream",
        chunks: [
          chunk({ role: "assistant", content: null }),
          toolChunk(0, { id: "c1", name: "echo", args: '{"text":"caf' }),
          toolChunk(0, { args: '\\u00e9"}' }),
          chunk({}, "tool_calls"),
        ],
      },
      textReply("done"),
    ]);
    const model = new OpenAIModelAdapter({ model: "m", baseURL: server.baseURL, apiKey: "sk-test", timeoutMs: 10_000 });
    const seen: unknown[] = [];
    const agent = createAgent({ model, tools: [echoTool(seen)] });
    expect(await agent.run("go")).toMatchObject({ status: "completed", output: "done" });
    await agent.shutdown();
    expect(seen).toEqual([{ text: "café" }]);
  });

  test("an adapter's verdict is used as given; the text is not parsed again", async () => {
    const seen: unknown[] = [];
    let turn = 0;
    const model: ModelAdapter = {
      async complete() {
        throw new Error("unused");
      },
      async *stream(): AsyncGenerator<ModelStreamEvent> {
        const call: ModelToolCall = {
          id: "c1",
          name: "echo",
          arguments: '{"text":"raw"}',
          parsed: { ok: true, value: { text: "verdict" } },
        };
        yield turn++ === 0
          ? { type: "completed", message: { content: null, tool_calls: [call] } }
          : { type: "completed", message: { content: "ok", tool_calls: [] } };
      },
    };
    const agent = createAgent({ model, tools: [echoTool(seen)] });
    expect(await agent.run("go")).toMatchObject({ status: "completed", output: "ok" });
    expect(seen).toEqual([{ text: "verdict" }]);
    // Events and the history keep the call's wire shape (no verdict in them).
    expect(agent.messages[1]).toEqual({
      role: "assistant",
      content: null,
      tool_calls: [{ id: "c1", type: "function", function: { name: "echo", arguments: '{"text":"raw"}' } }],
    });
  });

  test("the scripted model hands over the same shape, and bad arguments get the same precise error", async () => {
    const model = new ScriptedModel([
      { content: null, tool_calls: [{ id: "c1", name: "echo", arguments: '{"text":"a","text":"b"}' }] },
      { content: "recovered" },
    ]);
    const seen: unknown[] = [];
    const agent = createAgent({ model, tools: [echoTool(seen)] });
    expect(await agent.run("go")).toMatchObject({ status: "completed", output: "recovered" });
    expect(seen).toEqual([]);
    expect(toolMessage(agent.messages)).toEqual({
      status: "error",
      tool: "echo",
      code: "JSON_DUPLICATE_KEY",
      error: 'duplicate key "text" at offset 12 (line 1, column 13)',
    });
    const direct = await new ScriptedModel([{ content: null, tool_calls: [{ id: "c1", name: "echo", arguments: "{bad" }] }]).complete({
      messages: [],
      tools: [],
    });
    expect(direct.message.tool_calls[0]!.parsed).toMatchObject({ ok: false, error: { code: "JSON_PARSE", offset: 1, line: 1, column: 2 } });
  });
});
