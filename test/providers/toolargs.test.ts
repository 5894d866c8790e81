/**
 * Streamed tool-call arguments as events: the real `openai` SDK (through
 * OpenAIModelAdapter) against the scripted OpenAI-compatible server on
 * loopback, the ScriptedModel's `arguments_chunk_size`, and the agent's
 * `tool_call_arguments_delta` events (never journaled).
 */
import { afterEach, describe, expect, test } from "bun:test";
import { OpenAIModelAdapter, ScriptedModel, type ModelStreamEvent, type ToolCallDeltaEvent } from "../../src/providers/index.ts";
import { createAgent, type AgentEvent } from "../../src/agent/index.ts";
import { recordDraft } from "../../src/session/recorder.ts";
import { chunk, type ScriptedOpenAIServer, type ScriptedReply, startOpenAIServer, textReply, toolChunk } from "../support/openai-server.ts";
import type { AnyToolDefinition } from "../../src/tools/definition.ts";

let server: ScriptedOpenAIServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function adapterFor(replies: ScriptedReply[]): Promise<OpenAIModelAdapter> {
  server = await startOpenAIServer(replies);
  return new OpenAIModelAdapter(
    { model: "test-model", baseURL: server.baseURL, apiKey: "sk-test", timeoutMs: 10_000 },
    { retry: { sleep: async () => {}, random: () => 0.5 } },
  );
}

const request = { messages: [{ role: "user" as const, content: "go" }], tools: [] };

const echoTool: AnyToolDefinition = {
  name: "echo",
  description: "echo its arguments",
  effect: "read_only",
  parameters: { type: "object" },
  handler: async (args: unknown) => ({ echoed: args }),
} as unknown as AnyToolDefinition;

describe("tool_call_delta from the OpenAI-compatible adapter (wire level)", () => {
  test("the deltas of two interleaved calls arrive in order, named, and concatenate to each call's arguments", async () => {
    const first = ['{"path": "', "é/ünï", 'code.txt"', "}"];
    const second = ["[", "1, 2", ", 3]"];
    const adapter = await adapterFor([
      {
        kind: "stream",
        chunks: [
          chunk({ role: "assistant", content: null }),
          toolChunk(0, { id: "call_a", name: "read_file", args: first[0] }),
          toolChunk(1, { id: "call_b", name: "sum" }),
          toolChunk(0, { args: first[1] }),
          toolChunk(1, { args: second[0] }),
          toolChunk(1, { args: second[1] }),
          toolChunk(0, { args: first[2] }),
          toolChunk(0, { args: first[3] }),
          toolChunk(1, { args: second[2] }),
          chunk({}, "tool_calls"),
        ],
      },
    ]);
    const events: ModelStreamEvent[] = [];
    for await (const ev of adapter.stream(request)) events.push(ev);
    const deltas = events.filter((e): e is ToolCallDeltaEvent => e.type === "tool_call_delta");
    // One event per argument piece, in wire order; the fragment with no arguments yields none.
    expect(deltas.map((d) => [d.index, d.id, d.name, d.delta])).toEqual([
      [0, "call_a", "read_file", first[0]],
      [0, "call_a", "read_file", first[1]],
      [1, "call_b", "sum", second[0]],
      [1, "call_b", "sum", second[1]],
      [0, "call_a", "read_file", first[2]],
      [0, "call_a", "read_file", first[3]],
      [1, "call_b", "sum", second[2]],
    ]);
    expect(deltas.every((d) => d.error === undefined)).toBe(true);
    const completed = events.at(-1)!;
    expect(completed.type).toBe("completed");
    if (completed.type !== "completed") throw new Error("unreachable");
    for (const call of completed.message.tool_calls) {
      const joined = deltas
        .filter((d) => d.id === call.id)
        .map((d) => d.delta)
        .join("");
      expect(joined).toBe(call.arguments);
    }
    expect(completed.message.tool_calls.map((c) => c.parsed)).toEqual([
      { ok: true, value: { path: "é/ünïcode.txt" } },
      { ok: true, value: [1, 2, 3] },
    ]);
  });

  test("arguments that go bad mid-stream get the verdict at the first impossible byte, while the stream is still open", async () => {
    const pieces = ['{"path": "é.txt", ', '"n": 1', "2x, ", '"more": true}'];
    const adapter = await adapterFor([
      {
        kind: "stream",
        chunks: [
          toolChunk(0, { id: "call_bad", name: "read_file", args: pieces[0] }),
          toolChunk(0, { args: pieces[1] }),
          toolChunk(0, { args: pieces[2] }),
          toolChunk(0, { args: pieces[3] }),
        ],
        // The server never finishes this response: the verdict cannot come from the end of the stream.
        end: "stall",
      },
    ]);
    const ctrl = new AbortController();
    const it = adapter.stream({ ...request, signal: ctrl.signal })[Symbol.asyncIterator]();
    const seen: ToolCallDeltaEvent[] = [];
    for (;;) {
      const step = await it.next();
      expect(step.done).toBe(false);
      const ev = step.value as ModelStreamEvent;
      expect(ev.type).toBe("tool_call_delta");
      seen.push(ev as ToolCallDeltaEvent);
      if ((ev as ToolCallDeltaEvent).error !== undefined) break;
    }
    // The verdict rides on the piece holding the first impossible byte: "x" after the number 12.
    expect(seen.map((d) => d.delta)).toEqual(pieces.slice(0, 3));
    expect(seen.slice(0, 2).every((d) => d.error === undefined)).toBe(true);
    const bad = seen[2]!.error!;
    const offset = Buffer.byteLength('{"path": "é.txt", "n": 12');
    expect(bad.offset).toBe(offset);
    expect(bad.code).toBeString();
    expect(bad.message).toBeString();
    expect(bad.line).toBe(1);
    expect(bad.column).toBe(Array.from('{"path": "é.txt", "n": 12').length + 1);
    // Later pieces of the call carry the verdict too.
    const later = await it.next();
    expect((later.value as ToolCallDeltaEvent).delta).toBe(pieces[3]);
    expect((later.value as ToolCallDeltaEvent).error).toEqual(bad);
    expect(server!.requests).toHaveLength(1);
    ctrl.abort(new Error("test done"));
    await expect(it.next()).rejects.toThrow();
  });

  test("a stream cut after an argument delta is not retried (the pieces were shown), and says responseStarted", async () => {
    const adapter = await adapterFor([
      { kind: "stream", chunks: [toolChunk(0, { id: "c", name: "read_file", args: '{"pa' })], end: "end" },
      textReply("never asked for"),
    ]);
    const events: ModelStreamEvent[] = [];
    let error: unknown;
    try {
      for await (const ev of adapter.stream(request)) events.push(ev);
    } catch (e) {
      error = e;
    }
    expect(events).toEqual([{ type: "tool_call_delta", index: 0, id: "c", name: "read_file", delta: '{"pa' }]);
    expect((error as { responseStarted?: boolean }).responseStarted).toBe(true);
    expect(server!.requests).toHaveLength(1);
  });

  test("a call whose id comes late keeps one id across its deltas and the completed call", async () => {
    const adapter = await adapterFor([
      {
        kind: "stream",
        chunks: [
          chunk({ tool_calls: [{ index: 0, function: { name: "echo", arguments: '{"a":' } }] }),
          toolChunk(0, { args: "1}" }),
          chunk({}, "tool_calls"),
        ],
      },
    ]);
    const events: ModelStreamEvent[] = [];
    for await (const ev of adapter.stream(request)) events.push(ev);
    const deltas = events.filter((e): e is ToolCallDeltaEvent => e.type === "tool_call_delta");
    expect(deltas).toHaveLength(2);
    expect(deltas[0]!.id).toMatch(/^call_/);
    expect(deltas[1]!.id).toBe(deltas[0]!.id);
    const done = events.at(-1)!;
    if (done.type !== "completed") throw new Error("no completed event");
    expect(done.message.tool_calls[0]!.id).toBe(deltas[0]!.id);
  });
});

describe("tool_call_arguments_delta on the agent's event stream", () => {
  test("through the OpenAI adapter: the deltas come before tool_started, a bad call keeps its precise error, and none is journaled", async () => {
    const model = await adapterFor([
      {
        kind: "stream",
        chunks: [
          toolChunk(0, { id: "good", name: "echo", args: '{"x":' }),
          toolChunk(0, { args: " [1]}" }),
          toolChunk(1, { id: "bad", name: "echo", args: '{"y": tru' }),
          toolChunk(1, { args: "th}" }),
          chunk({}, "tool_calls"),
        ],
      },
      textReply("done"),
    ]);
    const events: AgentEvent[] = [];
    const agent = createAgent({ model, tools: [echoTool], sinks: [(e) => void events.push(e)] });
    const result = await agent.run("go");
    await agent.shutdown();
    expect(result).toMatchObject({ status: "completed", output: "done" });
    const deltas = events.filter((e) => e.kind === "tool_call_arguments_delta");
    expect(deltas.map((e) => (e.kind === "tool_call_arguments_delta" ? [e.turn, e.index, e.tool_call_id, e.tool, e.delta] : []))).toEqual([
      [1, 0, "good", "echo", '{"x":'],
      [1, 0, "good", "echo", " [1]}"],
      [1, 1, "bad", "echo", '{"y": tru'],
      [1, 1, "bad", "echo", "th}"],
    ]);
    const badDelta = deltas[3]!;
    if (badDelta.kind !== "tool_call_arguments_delta") throw new Error("unreachable");
    // "trut": the fourth byte of the literal is the first impossible one.
    expect(badDelta.error?.offset).toBe(Buffer.byteLength('{"y": tru'));
    expect("error" in deltas[2]!).toBe(false);
    const firstStart = events.findIndex((e) => e.kind === "tool_started");
    const lastDelta = events.lastIndexOf(badDelta);
    expect(lastDelta).toBeLessThan(firstStart);
    // The model gets the precise error, as before.
    const badResult = events.find((e) => e.kind === "tool_completed" && e.tool_call.id === "bad");
    if (badResult?.kind !== "tool_completed") throw new Error("no tool_completed for the bad call");
    expect(badResult.result.messages[0]!.content).toContain(`at offset ${Buffer.byteLength('{"y": tru')}`);
    // Never journaled.
    for (const d of deltas) expect(recordDraft(d, "s", "main")).toBeNull();
  });

  test("the ScriptedModel streams argument pieces with arguments_chunk_size, with the same verdicts", async () => {
    const model = new ScriptedModel([
      {
        content: null,
        tool_calls: [
          { id: "c1", name: "echo", arguments: '{"k": "välue"}' },
          { id: "c2", name: "echo", arguments: '{"k": 1,,}' },
        ],
        arguments_chunk_size: 4,
      },
      { content: "ok" },
    ]);
    const events: AgentEvent[] = [];
    const agent = createAgent({ model, tools: [echoTool], sinks: [(e) => void events.push(e)] });
    await agent.run("go");
    await agent.shutdown();
    const deltas = events.flatMap((e) => (e.kind === "tool_call_arguments_delta" ? [e] : []));
    expect(deltas.filter((d) => d.tool_call_id === "c1").map((d) => d.delta)).toEqual(['{"k"', ': "v', "älue", '"}']);
    const c2 = deltas.filter((d) => d.tool_call_id === "c2");
    expect(c2.map((d) => d.delta).join("")).toBe('{"k": 1,,}');
    const firstBad = c2.findIndex((d) => d.error !== undefined);
    // '{"k"' then ': 1,' then ',}': the second comma (byte 8) is impossible.
    expect(firstBad).toBe(2);
    expect(c2[2]!.error!.offset).toBe(8);
    expect(deltas.every((d) => d.tool === "echo" && d.turn === 1)).toBe(true);
  });

  test("a script without arguments_chunk_size yields no argument deltas (existing scripts unchanged)", async () => {
    const model = new ScriptedModel([{ content: null, tool_calls: [{ id: "c1", name: "echo", arguments: "{}" }] }, { content: "ok" }]);
    const events: AgentEvent[] = [];
    const agent = createAgent({ model, tools: [echoTool], sinks: [(e) => void events.push(e)] });
    await agent.run("go");
    await agent.shutdown();
    expect(events.some((e) => e.kind === "tool_call_arguments_delta")).toBe(false);
  });

  test("arguments_chunk_size must be a positive integer", () => {
    expect(() => new ScriptedModel([{ content: null, arguments_chunk_size: 0 }])).toThrow(
      /"arguments_chunk_size" must be an integer >= 1, got 0/,
    );
  });
});
