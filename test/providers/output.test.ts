/**
 * Structured output (`outputSchema`): an agent on the OpenAI-compatible
 * adapter (the real `openai` SDK) against the scripted server on loopback.
 * The response format is sent, or refused with a 400 and replaced by
 * instructions (remembered by the adapter); the answer is parsed strictly
 * and checked with ajv; one repair turn names the JSON Pointer errors; a
 * second failure is `output_invalid`.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { OpenAIModelAdapter, ScriptedModel } from "../../src/providers/index.ts";
import { createAgent, type AgentEvent, STOP_REASONS } from "../../src/agent/index.ts";
import { recordDraft, SessionRecorder } from "../../src/session/recorder.ts";
import { MemorySessionStorage } from "../../src/session/journal.ts";
import { restoreSession } from "../../src/session/restore.ts";
import { SchemaCompileError } from "../../src/tools/schema.ts";
import { errorBody, type ScriptedOpenAIServer, type ScriptedReply, startOpenAIServer, textReply } from "../support/openai-server.ts";

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

const PERSON = {
  title: "person record",
  type: "object",
  properties: { name: { type: "string" }, age: { type: "integer", minimum: 0 } },
  required: ["name", "age"],
  additionalProperties: false,
};

const refusal: ScriptedReply = {
  kind: "error",
  status: 400,
  body: errorBody("'response_format.type' must be 'json_object' or 'text'", "invalid_request_error"),
};

function run(model: OpenAIModelAdapter | ScriptedModel, schema: Record<string, unknown> = PERSON) {
  const events: AgentEvent[] = [];
  const agent = createAgent({ model, systemPrompt: "be precise", sinks: [(e) => void events.push(e)] });
  return {
    events,
    result: agent.run("who is it?", { outputSchema: schema }).finally(() => agent.shutdown()),
  };
}

describe("outputSchema against the scripted OpenAI-compatible server", () => {
  test("the request carries response_format json_schema, and a valid answer is the result's output_value", async () => {
    const model = await adapterFor([textReply('{"name": "Ada", "age": 36}')]);
    const { result } = run(model);
    const r = await result;
    expect(r).toMatchObject({ status: "completed", stop_reason: "text_response", output: '{"name": "Ada", "age": 36}' });
    expect(r.output_value).toEqual({ name: "Ada", age: 36 });
    const body = server!.requests[0]!.body;
    expect(body.response_format).toEqual({
      type: "json_schema",
      json_schema: { name: "person_record", schema: PERSON, strict: true },
    });
    // No instructions in the messages when the server takes the format.
    expect(JSON.stringify(body.messages)).not.toContain("JSON Schema");
    expect(model.responseFormatRefused).toBe(false);
  });

  test("refused with a 400: the same request again without response_format, the schema as instructions; remembered for the next run", async () => {
    const model = await adapterFor([refusal, textReply('{"name": "Bo", "age": 4}'), textReply('{"name": "Cy", "age": 5}')]);
    const first = await run(model).result;
    expect(first.output_value).toEqual({ name: "Bo", age: 4 });
    expect(server!.requests).toHaveLength(2);
    expect(server!.requests[0]!.body.response_format).toBeDefined();
    const fallback = server!.requests[1]!.body;
    expect("response_format" in fallback).toBe(false);
    // The instructions join the leading system message, which keeps its text.
    expect(fallback.messages[0]!.role).toBe("system");
    expect(fallback.messages[0]!.content).toStartWith("be precise\n\n");
    expect(fallback.messages[0]!.content).toContain(JSON.stringify(PERSON));
    expect(fallback.messages.filter((m) => m.role === "system")).toHaveLength(1);
    expect(model.responseFormatRefused).toBe(true);
    // The adapter remembers: the next request goes straight to the instructions.
    const second = await run(model).result;
    expect(second.output_value).toEqual({ name: "Cy", age: 5 });
    expect(server!.requests).toHaveLength(3);
    expect("response_format" in server!.requests[2]!.body).toBe(false);
    expect(server!.requests[2]!.body.messages[0]!.content).toContain(JSON.stringify(PERSON));
  });

  test("a 400 that the plain request gets too is reported as it is, and nothing is remembered", async () => {
    const model = await adapterFor([
      refusal,
      { kind: "error", status: 400, body: errorBody("messages: bad role", "invalid_request_error") },
    ]);
    const r = await run(model).result;
    expect(r.status).toBe("failed");
    expect(r.stop_reason).toBe("runtime_error");
    expect(r.error).toContain("messages: bad role");
    expect(server!.requests).toHaveLength(2);
    expect(model.responseFormatRefused).toBe(false);
  });

  test("one repaired answer: the repair turn's message names the JSON Pointers, and the second answer is the value", async () => {
    const model = await adapterFor([textReply('{"name": "Ada", "age": -1, "extra": true}'), textReply('{"name": "Ada", "age": 36}')]);
    const { result, events } = run(model);
    const r = await result;
    expect(r).toMatchObject({ status: "completed", stop_reason: "text_response", turns: 2 });
    expect(r.output_value).toEqual({ name: "Ada", age: 36 });
    const repair = server!.requests[1]!.body.messages.at(-1)!;
    expect(repair.role).toBe("user");
    expect(repair.content).toContain("/age");
    expect(repair.content).toContain("/extra");
    // The model's invalid answer stays in the history before the repair message.
    expect(server!.requests[1]!.body.messages.at(-2)).toMatchObject({
      role: "assistant",
      content: '{"name": "Ada", "age": -1, "extra": true}',
    });
    // Every request asks for the format, the repair turn's too.
    expect(server!.requests[1]!.body.response_format).toBeDefined();
    const ev = events.find((e) => e.kind === "output_repair_requested");
    if (ev?.kind !== "output_repair_requested") throw new Error("no output_repair_requested event");
    expect(ev.errors.map((e) => e.path).sort()).toEqual(["/age", "/extra"]);
    expect(ev.message).toBe(repair.content as string);
    // The repair message is journaled as part of the conversation.
    expect(recordDraft(ev, "s", "main")).toMatchObject({
      type: "messages_appended",
      data: { messages: [{ role: "user", content: repair.content }] },
    });
  });

  test("an answer that is not JSON gets a repair turn naming the parse error and its byte", async () => {
    const model = await adapterFor([textReply('Sure! {"name": "Ada"}'), textReply('{"name": "Ada", "age": 1}')]);
    const r = await run(model).result;
    expect(r.output_value).toEqual({ name: "Ada", age: 1 });
    const repair = server!.requests[1]!.body.messages.at(-1)!.content as string;
    expect(repair).toContain("(the whole answer): not one JSON document:");
    expect(repair).toContain("at byte 0");
  });

  test("an answer that stays invalid ends the run output_invalid, naming the pointers", async () => {
    const model = await adapterFor([textReply('{"name": 1, "age": 2}'), textReply('{"age": "old"}')]);
    const r = await run(model).result;
    expect(r.status).toBe("failed");
    expect(r.stop_reason).toBe("output_invalid");
    expect(STOP_REASONS).toContain("output_invalid");
    expect(r.output).toBe('{"age": "old"}');
    expect("output_value" in r).toBe(false);
    expect(r.error).toStartWith("the final answer does not match the output schema after one repair turn:");
    expect(r.error).toContain("/name");
    expect(r.error).toContain("/age");
    expect(server!.requests).toHaveLength(2);
  });

  test("a schema that does not compile rejects the run before any request", async () => {
    const model = await adapterFor([]);
    const agent = createAgent({ model });
    const bad = agent.run("go", { outputSchema: { type: "object", properties: { a: { type: "not-a-type" } } } });
    await expect(bad).rejects.toBeInstanceOf(SchemaCompileError);
    await expect(bad).rejects.toThrow(/^outputSchema: /);
    await expect(agent.run("go", { outputSchema: [] as unknown as Record<string, unknown> })).rejects.toThrow(
      "outputSchema must be a JSON Schema object",
    );
    await expect(agent.run("go", { outputSchema: PERSON, outputSchemaName: "has space" })).rejects.toThrow(/outputSchemaName/);
    await agent.shutdown();
    expect(server!.requests).toHaveLength(0);
  });

  test("a run without outputSchema sends no response_format and keeps its free text", async () => {
    const model = await adapterFor([textReply("plain words")]);
    const agent = createAgent({ model });
    const r = await agent.run("go");
    await agent.shutdown();
    expect(r.output).toBe("plain words");
    expect("output_value" in r).toBe(false);
    expect("response_format" in server!.requests[0]!.body).toBe(false);
  });

  test("the ScriptedModel records the format asked for", async () => {
    const model = new ScriptedModel([{ content: '{"name": "S", "age": 0}' }]);
    const r = await run(model).result;
    expect(r.output_value).toEqual({ name: "S", age: 0 });
    expect(model.requests[0]!.responseFormat).toEqual({ name: "person_record", schema: PERSON, strict: true });
  });

  test("a session journals the repair turn: the restored conversation is the same, repair message included", async () => {
    const storage = new MemorySessionStorage();
    const model = new ScriptedModel([{ content: '{"name": "A"}' }, { content: '{"name": "A", "age": 1}' }]);
    const agent = createAgent({ agentId: "a", model, sinks: [new SessionRecorder("s", storage)] });
    const r = await agent.run("who?", { outputSchema: PERSON });
    await agent.shutdown();
    expect(r.output_value).toEqual({ name: "A", age: 1 });
    expect(agent.messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
    const again = createAgent({ agentId: "a", model: new ScriptedModel([]) });
    restoreSession(again, (await storage.checkout("s"))!);
    expect(again.messages).toEqual(agent.messages);
    expect(again.lastResult?.output_value).toEqual({ name: "A", age: 1 });
    await again.shutdown();
  });
});
