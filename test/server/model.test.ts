/**
 * Runs with a real model adapter: the daemon's OpenAI-compatible adapter
 * (the `openai` SDK) against the scripted OpenAI-compatible server over
 * loopback. The operator's MODEL_API_KEY goes to the configured MODEL_URL
 * only, never to a URL a request names.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startOpenAIServer, textReply, type ScriptedOpenAIServer } from "../support/openai-server.ts";
import { SseReader, startTestDaemon, type TestDaemon } from "../support/daemon.ts";

let model: ScriptedOpenAIServer;
let other: ScriptedOpenAIServer;
let d: TestDaemon;
beforeAll(async () => {
  model = await startOpenAIServer();
  other = await startOpenAIServer();
  d = await startTestDaemon({ env: { MODEL_URL: model.baseURL, CHAT_MODEL: "configured-model", MODEL_API_KEY: "sk-operator-secret" } });
});
afterAll(async () => {
  await d.stop();
  await model.close();
  await other.close();
});

test("a run on the configured model streams over SSE and sends the operator's key there", async () => {
  model.push(textReply("hello from the model", [10, 3]));
  const res = await d.req("/v1/runs", { method: "POST", json: { task: "greet", system: "be nice" } });
  expect(res.status).toBe(201);
  const sse = new SseReader(res);
  const done = await sse.until((m) => m.event === "done");
  expect(done!.data.result).toMatchObject({ status: "completed", output: "hello from the model" });
  expect(sse.messages.some((m) => m.event === "assistant_text_delta")).toBe(true);
  const req = model.requests.at(-1)!;
  expect(req.headers.authorization).toBe("Bearer sk-operator-secret");
  expect((req.body as { model: string }).model).toBe("configured-model");
  expect((req.body as { messages: { role: string }[] }).messages.map((m) => m.role)).toEqual(["system", "user"]);
});

test("a URL named by the request gets the run but never the operator's key", async () => {
  other.push(textReply("from elsewhere"));
  const res = await d.req("/v1/runs", {
    method: "POST",
    headers: { accept: "application/json" },
    json: { task: "greet", model: { url: other.baseURL, model: "m2" } },
  });
  expect(res.status).toBe(201);
  expect((await res.json()).result.output).toBe("from elsewhere");
  const seen = JSON.stringify(other.requests.at(-1)!.headers);
  expect(seen).not.toContain("sk-operator-secret");
  expect((other.requests.at(-1)!.body as { model: string }).model).toBe("m2");
});

test("a model that fails (HTTP 500) ends the run failed, and the stream still ends with done", async () => {
  model.push(
    { kind: "error", status: 500, body: { error: { message: "boom", type: "server_error" } } },
    { kind: "error", status: 500, body: { error: { message: "boom", type: "server_error" } } },
    { kind: "error", status: 500, body: { error: { message: "boom", type: "server_error" } } },
  );
  const res = await d.req("/v1/runs", { method: "POST", json: { task: "fail", max_steps: 1 } });
  const done = await new SseReader(res).until((m) => m.event === "done");
  expect(done!.data.result.status).toBe("failed");
});
