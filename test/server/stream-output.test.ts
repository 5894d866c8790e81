/**
 * A real daemon process (the compiled binary's `serve`) on loopback: the
 * streamed tool-argument deltas over SSE (not journaled), and `output_schema`
 * on `POST /v1/runs` (the value in the result, a repair turn, output_invalid,
 * a 400 naming /output_schema, and response_format sent to MODEL_URL).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { binaryPath } from "../support/binary.ts";
import { startOpenAIServer, textReply, type ScriptedOpenAIServer } from "../support/openai-server.ts";
import { collectStderr, SseReader } from "../support/daemon.ts";

let dir: string;
let proc: ReturnType<typeof Bun.spawn>;
let url: string;
let token: string;
let model: ScriptedOpenAIServer;

beforeAll(async () => {
  model = await startOpenAIServer();
  dir = mkdtempSync(join(tmpdir(), "agentcore-stream-output-serve-"));
  proc = Bun.spawn([binaryPath(), "serve", "--state-dir", join(dir, "state"), "--root", dir, "--port", "0", "--heartbeat-ms", "100"], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? "", HOME: dir, MODEL_URL: model.baseURL, CHAT_MODEL: "served-model" },
    stdout: "pipe",
    stderr: "pipe",
  });
  const err = collectStderr(proc);
  const text = await err.ready(/token (file .+|from AGENTCORE_TOKEN)\n/);
  url = /serve: listening on (\S+)\n/.exec(text)![1]!;
  token = readFileSync(/token file (.+)\n/.exec(text)![1]!, "utf8").trim();
}, 120_000);

afterAll(async () => {
  if (proc.exitCode === null) {
    proc.kill("SIGTERM");
    await proc.exited;
  }
  await model.close();
  rmSync(dir, { recursive: true, force: true });
});

function post(path: string, body: unknown, accept = "text/event-stream"): Promise<Response> {
  return fetch(url + path, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept },
    body: JSON.stringify(body),
  });
}

const SCHEMA = {
  type: "object",
  properties: { city: { type: "string" }, population: { type: "integer", minimum: 0 } },
  required: ["city", "population"],
};

describe("serve: tool_call_arguments_delta over SSE", () => {
  test("each argument piece is an SSE event, in order, with the verdict once the text goes bad; the journal has none", async () => {
    const res = await post("/v1/runs", {
      task: "look",
      session: "deltas",
      script: [
        {
          content: null,
          tool_calls: [
            { id: "ok", name: "read_file", arguments: '{"path":"a.txt"}' },
            { id: "bad", name: "read_file", arguments: '{"path":: 1}' },
          ],
          arguments_chunk_size: 6,
        },
        { content: "done" },
      ],
    });
    expect(res.status).toBe(201);
    const sse = new SseReader(res);
    const done = await sse.until((m) => m.event === "done");
    expect(done!.data.result).toMatchObject({ status: "completed", output: "done" });
    const deltas = sse.messages.filter((m) => m.event === "tool_call_arguments_delta").map((m) => m.data);
    expect(deltas.filter((d) => d.tool_call_id === "ok").map((d) => d.delta)).toEqual(['{"path', '":"a.t', 'xt"}']);
    expect(deltas.every((d) => d.kind === "tool_call_arguments_delta" && d.tool === "read_file")).toBe(true);
    const bad = deltas.filter((d) => d.tool_call_id === "bad");
    expect(bad.map((d) => d.delta)).toEqual(['{"path', '":: 1}']);
    expect(bad[0].error).toBeUndefined();
    // '{"path":' is fine, the second ':' (byte 8) cannot be.
    expect(bad[1].error).toMatchObject({ offset: 8, line: 1, column: 9 });
    // In order: every delta's SSE id comes before the first tool_started.
    const ids = sse.messages.filter((m) => m.event === "tool_call_arguments_delta").map((m) => Number(m.id));
    const started = Number(sse.messages.find((m) => m.event === "tool_started")!.id);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(Math.max(...ids)).toBeLessThan(started);
    const sessions = join(dir, ".agentcore", "sessions");
    const journal = readdirSync(sessions, { recursive: true })
      .map(String)
      .filter((f) => f.endsWith(".jsonl"))
      .map((f) => readFileSync(join(sessions, f), "utf8"))
      .join("");
    expect(journal).toContain('"type":"run_finished"');
    expect(journal).not.toContain("tool_call_arguments_delta");
  });
});

describe("serve: output_schema", () => {
  test("a valid answer: the result carries output_value", async () => {
    const res = await post(
      "/v1/runs",
      { task: "where?", output_schema: SCHEMA, script: [{ content: '{"city": "Oslo", "population": 709000}' }] },
      "application/json",
    );
    expect(res.status).toBe(201);
    const run = await res.json();
    expect(run.result).toMatchObject({
      status: "completed",
      stop_reason: "text_response",
      output_value: { city: "Oslo", population: 709000 },
    });
  });

  test("one repair turn over SSE (output_repair_requested names the pointer), then the value", async () => {
    const res = await post("/v1/runs", {
      task: "where?",
      output_schema: SCHEMA,
      script: [{ content: '{"city": "Oslo", "population": -5}' }, { content: '{"city": "Oslo", "population": 5}' }],
    });
    const sse = new SseReader(res);
    const done = await sse.until((m) => m.event === "done");
    const repair = sse.messages.find((m) => m.event === "output_repair_requested")!;
    expect(repair.data.errors).toEqual([{ path: "/population", keyword: "minimum", message: expect.any(String) }]);
    expect(done!.data.result).toMatchObject({ status: "completed", turns: 2, output_value: { city: "Oslo", population: 5 } });
  });

  test("an answer that stays invalid ends the run output_invalid", async () => {
    const res = await post(
      "/v1/runs",
      { task: "where?", output_schema: SCHEMA, script: [{ content: "Oslo" }, { content: '{"city": "Oslo"}' }] },
      "application/json",
    );
    const run = await res.json();
    expect(run.result).toMatchObject({ status: "failed", stop_reason: "output_invalid", output: '{"city": "Oslo"}' });
    expect(run.result.error).toContain("/population");
    expect(run.result.output_value).toBeUndefined();
  });

  test("a schema that is not an object, or does not compile, is a 400 at /output_schema", async () => {
    for (const schema of [[], "x", { type: "strnig" }, { properties: { a: { minimum: "zero" } } }]) {
      const res = await post("/v1/runs", { task: "t", output_schema: schema, script: [{ content: "{}" }] }, "application/json");
      expect(res.status).toBe(400);
      const body = await res.json();
      expect(body.error).toMatchObject({ code: "INVALID_REQUEST", details: { location: "/output_schema" } });
      expect(body.error.message).toContain("/output_schema");
    }
  });

  test("on MODEL_URL: response_format goes out; refused with a 400, the daemon's adapter falls back to instructions", async () => {
    model.push(
      { kind: "error", status: 400, body: { error: { message: "unsupported response_format", type: "invalid_request_error" } } },
      textReply('{"city": "Bergen", "population": 1}'),
    );
    const before = model.requests.length;
    const res = await post("/v1/runs", { task: "where?", output_schema: { ...SCHEMA, title: "place" } }, "application/json");
    const run = await res.json();
    expect(run.result).toMatchObject({ status: "completed", output_value: { city: "Bergen", population: 1 } });
    const [asked, fallback] = model.requests.slice(before);
    expect(asked!.body.response_format).toEqual({
      type: "json_schema",
      json_schema: { name: "place", schema: { ...SCHEMA, title: "place" }, strict: true },
    });
    expect("response_format" in fallback!.body).toBe(false);
    expect(fallback!.body.messages[0]).toMatchObject({ role: "system" });
    expect(fallback!.body.messages[0]!.content).toContain(JSON.stringify({ ...SCHEMA, title: "place" }));
  });
});

test("serve: resume refuses output_schema (it would not apply), naming the field", async () => {
  const res = await post("/v1/sessions/none/resume", { output_schema: SCHEMA, script: [{ content: "{}" }] }, "application/json");
  expect(res.status).toBe(400);
  const body = await res.json();
  expect(body.error).toMatchObject({ code: "INVALID_REQUEST", details: { location: "/output_schema" } });
  expect(body.error.message).toContain("not taken by resume");
});
