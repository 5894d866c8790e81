/**
 * OpenTelemetry traces through the compiled binary: `agentcore agent` with
 * OTEL_EXPORTER_OTLP_ENDPOINT set sends its spans over OTLP/HTTP to a real
 * receiver on loopback, which decodes them with the official OTLP protobuf
 * definitions (opentelemetry-proto's .proto files, copied into
 * test/fixtures/opentelemetry-proto/ and loaded by protobufjs) or, for
 * http/json, as OTLP JSON. The model is
 * the scripted OpenAI-compatible server, which records each request's
 * headers (traceparent). And without the variable nothing of the SDK loads.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { binaryPath, REPO } from "../support/binary.ts";
import { chunk, startOpenAIServer, textReply, toolChunk, usageChunk, type ScriptedOpenAIServer } from "../support/openai-server.ts";
import { tmp } from "../support/tmp.ts";
import { collectStderr } from "../support/daemon.ts";
import protobuf from "protobufjs";
import { FIXTURES_DIR } from "../support/paths.ts";

interface KeyValue {
  key: string;
  value: Record<string, unknown>;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: KeyValue[];
  events: { name: string; attributes: KeyValue[] }[];
  status?: { code?: number; message?: string };
}
interface Received {
  contentType: string | null;
  apiKey: string | null;
  path: string;
  resource: Record<string, unknown>;
  spans: OtlpSpan[];
}

/** The official OTLP definitions (opentelemetry-proto 1.9.0), their imports resolved from the same folder. */
const PROTO_DIR = path.join(FIXTURES_DIR, "opentelemetry-proto");
const otlpRoot = new protobuf.Root();
otlpRoot.resolvePath = (_origin, target) => path.join(PROTO_DIR, target);
otlpRoot.loadSync("opentelemetry/proto/collector/trace/v1/trace_service.proto");
const ExportTraceServiceRequest = otlpRoot.lookupType("opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest");

/** An attribute value as a plain value (OTLP's AnyValue). */
function plain(v: Record<string, unknown>): unknown {
  if ("stringValue" in v) return v.stringValue;
  if ("boolValue" in v) return v.boolValue;
  if ("intValue" in v) return Number(v.intValue);
  if ("doubleValue" in v) return v.doubleValue;
  if ("arrayValue" in v) return ((v.arrayValue as { values?: Record<string, unknown>[] }).values ?? []).map(plain);
  return v;
}
const attrs = (list: KeyValue[] | undefined): Record<string, unknown> =>
  Object.fromEntries((list ?? []).map((kv) => [kv.key, plain(kv.value)]));

/** An OTLP/HTTP traces receiver on 127.0.0.1 that decodes protobuf with the official definitions, and OTLP JSON. */
function startReceiver() {
  const received: Received[] = [];
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const bytes = new Uint8Array(await req.arrayBuffer());
      const type = req.headers.get("content-type");
      let body: { resourceSpans?: { resource?: { attributes?: KeyValue[] }; scopeSpans?: { spans?: OtlpSpan[] }[] }[] };
      if (type === "application/json") body = JSON.parse(new TextDecoder().decode(bytes));
      else {
        // bytes as hex, as OTLP JSON writes them, so both paths compare alike
        const msg = ExportTraceServiceRequest.decode(bytes);
        body = ExportTraceServiceRequest.toObject(msg, { longs: String, bytes: String, defaults: false }) as typeof body;
        const hex = (b64: string) => Buffer.from(b64, "base64").toString("hex");
        for (const rs of body.resourceSpans ?? [])
          for (const ss of rs.scopeSpans ?? [])
            for (const s of ss.spans ?? []) {
              s.traceId = hex(s.traceId);
              s.spanId = hex(s.spanId);
              s.parentSpanId = s.parentSpanId ? hex(s.parentSpanId) : "";
            }
      }
      for (const rs of body.resourceSpans ?? []) {
        received.push({
          contentType: type,
          apiKey: req.headers.get("x-api-key"),
          path: new URL(req.url).pathname,
          resource: attrs(rs.resource?.attributes),
          spans: (rs.scopeSpans ?? []).flatMap((ss) => ss.spans ?? []).map((s) => ({ ...s, parentSpanId: s.parentSpanId ?? "" })),
        });
      }
      return new Response(type === "application/json" ? "{}" : new Uint8Array(0), {
        headers: { "content-type": type ?? "application/x-protobuf" },
      });
    },
  });
  return { url: `http://127.0.0.1:${server.port}`, received, stop: () => server.stop(true) };
}

let bin = "";
let receiver: ReturnType<typeof startReceiver>;
beforeAll(() => {
  bin = binaryPath();
  receiver = startReceiver();
}, 300_000);
afterAll(() => receiver.stop());

/** The model's two turns: write_file (asks for approval) and read_file of a missing file (fails), then a text answer. */
function replies() {
  return [
    {
      kind: "stream" as const,
      chunks: [
        chunk({ role: "assistant", content: null }),
        toolChunk(0, { id: "w1", name: "write_file", args: JSON.stringify({ path: "notes.txt", content: "SECRET-CONTENT" }) }),
        toolChunk(1, { id: "r1", name: "read_file", args: JSON.stringify({ path: "missing-SECRET.txt" }) }),
        chunk({}, "tool_calls"),
        usageChunk(30, 7),
      ],
    },
    textReply("all done SECRET-ANSWER", [50, 4]),
  ];
}

async function runAgent(
  env: Record<string, string>,
): Promise<{ code: number | null; stderr: string; model: ScriptedOpenAIServer; dir: string }> {
  const model = await startOpenAIServer(replies());
  const dir = tmp("agentcore-otel-");
  const p = Bun.spawn(
    [
      bin,
      "agent",
      "--no-plan",
      "--approve-all",
      "--tools",
      "write_file",
      "--root",
      dir,
      "--model-url",
      model.baseURL,
      "--model",
      "test-model",
      "write the notes SECRET-TASK",
    ],
    { cwd: dir, stdin: "ignore", stdout: "pipe", stderr: "pipe", env: { PATH: process.env.PATH ?? "", HOME: dir, ...env } },
  );
  const code = await p.exited;
  const stderr = await new Response(p.stderr).text();
  await model.close();
  return { code, stderr, model, dir };
}

const byName = (spans: OtlpSpan[], name: string) => spans.filter((s) => s.name === name);

describe("agent traces over OTLP/HTTP (the compiled binary)", () => {
  test("protobuf: the span tree, names, attributes, approval events, the tool error; traceparent on model requests; no content by default", async () => {
    receiver.received.length = 0;
    const r = await runAgent({
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_SERVICE_NAME: "agentcore-under-test",
      OTEL_EXPORTER_OTLP_HEADERS: "x-api-key=k123",
    });
    expect(r.stderr).not.toContain("Error");
    expect(r.code).toBe(0);
    expect(fs.readFileSync(path.join(r.dir, "notes.txt"), "utf8")).toBe("SECRET-CONTENT");

    expect(receiver.received.length).toBeGreaterThan(0);
    for (const b of receiver.received) {
      expect(b.path).toBe("/v1/traces");
      expect(b.contentType).toBe("application/x-protobuf");
      expect(b.resource["service.name"]).toBe("agentcore-under-test");
      expect(b.apiKey).toBe("k123");
    }
    const spans = receiver.received.flatMap((b) => b.spans);
    expect(spans.map((s) => s.name).sort()).toEqual([
      "chat test-model",
      "chat test-model",
      "execute_tool read_file",
      "execute_tool write_file",
      "invoke_agent",
    ]);
    const [run] = byName(spans, "invoke_agent");
    expect(run!.parentSpanId).toBe("");
    expect(run!.kind).toBe(1); // INTERNAL (OTLP SpanKind: 1 internal, 3 client)
    for (const s of spans) {
      expect(s.traceId).toBe(run!.traceId);
      if (s !== run) expect(s.parentSpanId).toBe(run!.spanId);
    }
    expect(attrs(run!.attributes)).toMatchObject({
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.provider.name": "openai",
      "gen_ai.request.model": "test-model",
      "agentcore.stop_reason": "text_response",
      "agentcore.run.status": "completed",
      "agentcore.turns": 2,
      "gen_ai.usage.input_tokens": 80,
      "gen_ai.usage.output_tokens": 11,
    });
    expect(typeof attrs(run!.attributes)["agentcore.run.id"]).toBe("string");
    expect(run!.status?.code ?? 0).toBe(0);

    const chats = byName(spans, "chat test-model");
    const [first, second] = chats.sort(
      (a, b) => Number(attrs(a.attributes)["agentcore.turn"]) - Number(attrs(b.attributes)["agentcore.turn"]),
    );
    expect(first!.kind).toBe(3); // CLIENT
    expect(attrs(first!.attributes)).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.request.model": "test-model",
      "gen_ai.response.model": "test-model",
      "gen_ai.response.finish_reasons": ["tool_calls"],
      "gen_ai.usage.input_tokens": 30,
      "gen_ai.usage.output_tokens": 7,
      "server.address": "127.0.0.1",
      "agentcore.turn": 1,
    });
    expect(attrs(second!.attributes)).toMatchObject({ "gen_ai.response.finish_reasons": ["stop"], "gen_ai.usage.input_tokens": 50 });

    // Each model request carried its own chat span's context.
    expect(r.model.requests.map((q) => q.headers.traceparent)).toEqual([
      `00-${run!.traceId}-${first!.spanId}-01`,
      `00-${run!.traceId}-${second!.spanId}-01`,
    ]);

    const [write] = byName(spans, "execute_tool write_file");
    expect(attrs(write!.attributes)).toMatchObject({
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": "write_file",
      "gen_ai.tool.call.id": "w1",
      "gen_ai.tool.type": "function",
      "agentcore.approval.required": true,
      "agentcore.approval.approved": true,
      "agentcore.approval.decided_by": "approve_all",
      "agentcore.tool.status": "ok",
    });
    expect(write!.events.map((e) => e.name)).toEqual(["agentcore.approval.requested", "agentcore.approval.decided"]);
    expect(attrs(write!.events[0]!.attributes)).toMatchObject({
      "agentcore.approval.effect": "side_effecting",
      "agentcore.approval.suspended": false,
    });

    const [read] = byName(spans, "execute_tool read_file");
    expect(read!.status?.code).toBe(2); // ERROR
    const readAttrs = attrs(read!.attributes);
    expect(readAttrs["agentcore.tool.status"]).toBe("error");
    expect(typeof readAttrs["error.type"]).toBe("string");
    expect(readAttrs["error.type"]).toMatch(/^[A-Z_]+$/);
    expect(readAttrs["error.type"]).not.toBe("TOOL_ERROR");

    // Content stays out unless asked for.
    const all = JSON.stringify(spans);
    expect(all).not.toContain("SECRET");
    for (const s of spans) {
      for (const k of ["gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "gen_ai.input.messages", "gen_ai.output.messages"])
        expect(attrs(s.attributes)[k]).toBeUndefined();
    }
  }, 60_000);

  test("http/json with OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true: arguments, results and messages are recorded", async () => {
    receiver.received.length = 0;
    const r = await runAgent({
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/v1/traces`,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: "true",
      OTEL_RESOURCE_ATTRIBUTES: "deployment.environment.name=test",
    });
    expect(r.code).toBe(0);
    const spans = receiver.received.flatMap((b) => b.spans);
    expect(receiver.received[0]!.contentType).toBe("application/json");
    expect(receiver.received[0]!.resource).toMatchObject({ "service.name": "agentcore", "deployment.environment.name": "test" });
    const [write] = byName(spans, "execute_tool write_file");
    expect(JSON.parse(String(attrs(write!.attributes)["gen_ai.tool.call.arguments"]))).toEqual({
      path: "notes.txt",
      content: "SECRET-CONTENT",
    });
    expect(String(attrs(write!.attributes)["gen_ai.tool.call.result"])).toContain("notes.txt");
    const [run] = byName(spans, "invoke_agent");
    expect(String(attrs(run!.attributes)["gen_ai.input.messages"])).toContain("SECRET-TASK");
    expect(String(attrs(run!.attributes)["gen_ai.output.messages"])).toContain("SECRET-ANSWER");
    const chat = byName(spans, "chat test-model").find((s) => attrs(s.attributes)["agentcore.turn"] === 2)!;
    const input = JSON.parse(String(attrs(chat.attributes)["gen_ai.input.messages"])) as { role: string }[];
    expect(input.map((m) => m.role)).toEqual(["user", "assistant", "tool", "tool"]);
    expect(String(attrs(chat.attributes)["gen_ai.output.messages"])).toContain("SECRET-ANSWER");
  }, 60_000);

  test("OTEL_TRACES_SAMPLER=always_off: nothing is exported, and the model requests still carry a traceparent (not sampled)", async () => {
    receiver.received.length = 0;
    const r = await runAgent({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_TRACES_SAMPLER: "always_off" });
    expect(r.code).toBe(0);
    expect(receiver.received).toEqual([]);
    const sent = r.model.requests.map((q) => String(q.headers.traceparent));
    expect(sent).toHaveLength(2);
    for (const t of sent) expect(t).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/);
    expect(new Set(sent.map((t) => t.split("-")[1])).size).toBe(1); // one trace: the run's
  }, 60_000);

  test("SIGTERM during a run: the run ends cancelled, its spans are flushed before exit 143", async () => {
    receiver.received.length = 0;
    const dir = tmp("agentcore-otel-term-");
    fs.writeFileSync(
      path.join(dir, "slow.jsonl"),
      [
        { content: null, tool_calls: [{ id: "c1", name: "echo", arguments: '{"step":1}' }] },
        { content: "never shown", delay_ms: 600_000 },
      ]
        .map((t) => JSON.stringify(t))
        .join("\n") + "\n",
    );
    const p = Bun.spawn([bin, "agent", "--events", "jsonl", "--no-plan", "--script", "slow.jsonl", "slow task"], {
      cwd: dir,
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
      env: { PATH: process.env.PATH ?? "", HOME: dir, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url },
    });
    const reader = p.stdout.getReader();
    let out = "";
    while (!out.includes('"kind":"tool_completed"')) {
      const { value, done } = await reader.read();
      if (done) break;
      out += new TextDecoder().decode(value);
    }
    p.kill("SIGTERM");
    expect(await p.exited).toBe(143);
    const spans = receiver.received.flatMap((b) => b.spans);
    const [run] = byName(spans, "invoke_agent");
    expect(attrs(run!.attributes)).toMatchObject({ "agentcore.stop_reason": "external_abort", "error.type": "external_abort" });
    expect(run!.status?.code).toBe(2);
    expect(byName(spans, "execute_tool echo")).toHaveLength(1);
  }, 60_000);

  test("a bad OTEL_ variable is a clear error (exit 2) naming the variable; OTEL_SDK_DISABLED=true exports nothing", async () => {
    const dir = tmp("agentcore-otel-bad-");
    const bad = Bun.spawnSync([bin, "agent", "--script", "x.jsonl", "hi"], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? "", OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" },
    });
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr.toString()).toContain('OTEL_EXPORTER_OTLP_PROTOCOL="grpc" is not supported');
    expect(bad.stderr.toString()).toContain("http/protobuf");
    const url = Bun.spawnSync([bin, "agent", "--script", "x.jsonl", "hi"], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? "", OTEL_EXPORTER_OTLP_ENDPOINT: "not a url" },
    });
    expect(url.exitCode).toBe(2);
    expect(url.stderr.toString()).toContain("OTEL_EXPORTER_OTLP_ENDPOINT is not a URL");
    const sampler = Bun.spawnSync([bin, "agent", "--script", "x.jsonl", "hi"], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? "", OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_TRACES_SAMPLER: "sometimes" },
    });
    expect(sampler.exitCode).toBe(2);
    expect(sampler.stderr.toString()).toContain('OTEL_TRACES_SAMPLER="sometimes" is not supported; use always_on');

    receiver.received.length = 0;
    fs.writeFileSync(path.join(dir, "s.jsonl"), `${JSON.stringify({ content: "hi" })}\n`);
    const off = Bun.spawnSync([bin, "agent", "--no-plan", "--script", "s.jsonl", "hi"], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? "", OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SDK_DISABLED: "true" },
    });
    expect(off.exitCode).toBe(0);
    expect(receiver.received).toEqual([]);
  }, 60_000);
});

describe("the daemon exports its runs' traces", () => {
  test("agentcore serve with OTEL_EXPORTER_OTLP_ENDPOINT: a run's spans (its session as gen_ai.conversation.id) arrive by shutdown", async () => {
    receiver.received.length = 0;
    const dir = tmp("agentcore-otel-serve-");
    const proc = Bun.spawn([bin, "serve", "--port", "0", "--state-dir", path.join(dir, "state"), "--root", dir], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? "", HOME: dir, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SERVICE_NAME: "agentcored" },
      stdout: "ignore",
      stderr: "pipe",
      stdin: "ignore",
    });
    const stderr = collectStderr(proc);
    try {
      const text = await stderr.ready(/token file .+\n/);
      const url = /listening on (http:\/\/\S+)/.exec(text)![1]!;
      const token = fs.readFileSync(/token file (.+)\n/.exec(text)![1]!, "utf8").trim();
      const r = await fetch(`${url}/v1/runs`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json" },
        body: JSON.stringify({
          task: "say hi",
          session: "traced-session",
          script: [{ content: null, tool_calls: [{ id: "e1", name: "echo", arguments: '{"message":"x"}' }] }, { content: "hi" }],
        }),
      });
      const body = await r.text();
      expect({ status: r.status, body }).toMatchObject({ status: 201 });
      expect(body).toContain('"completed"');
    } finally {
      proc.kill("SIGTERM");
    }
    expect(await stderr.exited).toBe(0);
    const spans = receiver.received.flatMap((b) => b.spans);
    expect(receiver.received.every((b) => b.resource["service.name"] === "agentcored")).toBe(true);
    const [run] = byName(spans, "invoke_agent");
    expect(attrs(run!.attributes)).toMatchObject({ "gen_ai.conversation.id": "traced-session", "agentcore.stop_reason": "text_response" });
    const [tool] = byName(spans, "execute_tool echo");
    expect(tool!.parentSpanId).toBe(run!.spanId);
    expect(byName(spans, "chat")).toHaveLength(2);
  }, 60_000);
});

/** Run `body` in a child Bun process; how many OpenTelemetry SDK modules (anything but the API) it loaded. */
function sdkModulesAfter(body: string, env: Record<string, string> = {}): { loaded: number; stderr: string } {
  const dir = tmp("agentcore-otel-lazy-");
  const file = path.join(dir, "probe.ts");
  fs.writeFileSync(
    file,
    `import { createRequire } from "node:module";
const REPO = ${JSON.stringify(REPO)};
${body}
const cache = createRequire(import.meta.url).cache;
console.log("SDK_MODULES=" + Object.keys(cache).filter((k) => /[\\\\/]node_modules[\\\\/]@opentelemetry[\\\\/](?!api[\\\\/])/.test(k)).length);
`,
  );
  fs.writeFileSync(path.join(dir, "s.jsonl"), `${JSON.stringify({ content: "hi" })}\n`);
  const p = Bun.spawnSync([process.execPath, file], {
    cwd: dir,
    stdout: "pipe",
    stderr: "pipe",
    env: { PATH: process.env.PATH ?? "", HOME: dir, ...env },
  });
  const m = /SDK_MODULES=(\d+)/.exec(p.stdout.toString());
  if (m === null) throw new Error(`probe failed (${p.exitCode}): ${p.stdout.toString()}\n${p.stderr.toString()}`);
  return { loaded: Number(m[1]), stderr: p.stderr.toString() };
}

describe("the OpenTelemetry SDK is loaded only when an OTLP endpoint is set", () => {
  const agentRun = `const { main } = await import(REPO + "/src/cli/main.ts");
console.error("STATUS=" + (await main(["agent", "--no-plan", "--script", "s.jsonl", "hi"])));`;

  test("the main entry, and an agent run through the CLI without the variable, load none of it", () => {
    expect(sdkModulesAfter(`await import(REPO + "/src/mod.ts");`).loaded).toBe(0);
    const r = sdkModulesAfter(agentRun);
    expect(r.stderr).toContain("STATUS=0");
    expect(r.loaded).toBe(0);
  });

  test("with OTEL_EXPORTER_OTLP_ENDPOINT set the same run loads it (the check sees the SDK)", () => {
    const r = sdkModulesAfter(agentRun, { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9", OTEL_EXPORTER_OTLP_TIMEOUT: "500" });
    expect(r.stderr).toContain("STATUS=0");
    expect(r.loaded).toBeGreaterThan(0);
  });

  test("the bundles of src/mod.ts and src/cli/main.ts import the SDK only with import()", async () => {
    for (const entry of ["src/mod.ts", "src/cli/main.ts"]) {
      const out = await Bun.build({ entrypoints: [path.join(REPO, entry)], target: "bun", format: "esm", packages: "external" });
      if (!out.success) throw new Error(out.logs.map(String).join("\n"));
      const code = await out.outputs[0]!.text();
      const stat = [...code.matchAll(/(?:^|[;\s])(?:import|export)\s*(?:[\w*${}\s,]+from\s*)?["'](@opentelemetry\/[^"']+)["']/gm)].map(
        (m) => m[1],
      );
      expect({ entry, static: stat.filter((s) => s !== "@opentelemetry/api") }).toEqual({ entry, static: [] });
    }
  });
});
