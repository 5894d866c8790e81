/**
 * The agent's spans in process, with the OpenTelemetry SDK registered here
 * (an in-memory exporter, the AsyncLocalStorage context manager, the W3C
 * propagator): the tool span is the active one while a tool runs (a real
 * MCP server over streamable HTTP gets its traceparent), failures set the
 * status and error.type, a call left waiting for an approval ends with its
 * run, and `tracing: false` makes no spans. The binary's export over
 * OTLP/HTTP is tested in test/host/telemetry.test.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { context, propagation, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import { createAgent } from "../../src/agent/index.ts";
import { attachMcpServers } from "../../src/mcp/attach.ts";
import { ScriptedModel } from "../../src/providers/scripted.ts";
import { policyFromConfig } from "../../src/runtime/middleware/policy.ts";
import { createRuntime } from "../../src/runtime/runtime.ts";
import { MemorySessionStorage, SessionRecorder } from "../../src/session/index.ts";
import { traceHeaders } from "../../src/runtime/tracing.ts";
import type { ToolDefinition } from "../../src/tools/definition.ts";
import { startEverythingHttp } from "../support/mcp.ts";
import { REPO } from "../support/binary.ts";
import { errnoError, failAppends } from "../support/failing-storage.ts";
import { tmp } from "../support/tmp.ts";

const exporter = new InMemorySpanExporter();
const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
beforeAll(() => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
});
afterAll(async () => {
  await provider.shutdown();
  trace.disable();
  propagation.disable();
  context.disable();
});

const spans = (): ReadableSpan[] => exporter.getFinishedSpans();
const named = (name: string) => spans().filter((s) => s.name === name);
const call = (id: string, name: string, args: unknown) => ({ id, name, arguments: JSON.stringify(args) });

/** A tool that reports the trace headers it would send (as an HTTP client in a tool would). */
const probe: ToolDefinition<{ n: number }> = {
  name: "probe",
  description: "returns the trace headers of the active context",
  parameters: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] },
  effect: "read_only",
  handler: async () => {
    await Promise.resolve();
    return traceHeaders();
  },
};
const write: ToolDefinition<{ text: string }> = {
  name: "write",
  description: "side-effecting",
  parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  effect: "side_effecting",
  handler: ({ text }) => ({ written: text }),
};

describe("agent spans (SDK registered in process)", () => {
  test("the execute_tool span is active while the tool runs; the chat and tool spans are children of invoke_agent", async () => {
    exporter.reset();
    const agent = createAgent({
      model: new ScriptedModel([{ content: null, tool_calls: [call("p1", "probe", { n: 1 })] }, { content: "ok" }]),
      tools: [probe],
    });
    const r = await agent.run("probe it");
    expect(r.status).toBe("completed");
    const [tool] = named("execute_tool probe");
    const [run] = named("invoke_agent");
    expect(tool!.parentSpanContext?.spanId).toBe(run!.spanContext().spanId);
    const sent = JSON.parse(agent.messages.find((m) => m.role === "tool")!.content as string) as { traceparent?: string };
    expect(sent.traceparent).toBe(`00-${tool!.spanContext().traceId}-${tool!.spanContext().spanId}-01`);
    for (const c of named("chat")) expect(c.parentSpanContext?.spanId).toBe(run!.spanContext().spanId);
    expect(named("chat")).toHaveLength(2);
    expect(run!.attributes["gen_ai.provider.name"]).toBe("_OTHER");
  });

  test("a run inside the application's span joins its trace", async () => {
    exporter.reset();
    const outer = trace.getTracer("app").startSpan("request");
    const agent = createAgent({ model: new ScriptedModel([{ content: "ok" }]) });
    await context.with(trace.setSpan(context.active(), outer), () => agent.run("hi"));
    outer.end();
    const [run] = named("invoke_agent");
    expect(run!.spanContext().traceId).toBe(outer.spanContext().traceId);
    expect(run!.parentSpanContext?.spanId).toBe(outer.spanContext().spanId);
  });

  test("a model failure: the chat span has error.type = the provider error kind, the run span the stop reason", async () => {
    exporter.reset();
    const agent = createAgent({ model: new ScriptedModel([{ error: { kind: "rate_limit", message: "slow down" } }] as never) });
    const r = await agent.run("hi");
    expect(r.status).toBe("failed");
    const [chat] = named("chat");
    expect(chat!.status.code).toBe(2);
    expect(chat!.attributes["error.type"]).toBe("rate_limit");
    const [run] = named("invoke_agent");
    expect(run!.status.code).toBe(2);
    expect(run!.attributes["error.type"]).toBe(r.stop_reason);
    expect(run!.attributes["agentcore.stop_reason"]).toBe(r.stop_reason);
  });

  test("invalid arguments and an unknown tool: error spans with their codes; a denial is DENIED", async () => {
    exporter.reset();
    const gate = policyFromConfig({ default: "allow", rules: [{ id: "no-writes", action: "deny", tools: ["write"], reason: "not here" }] });
    const agent = createAgent({
      model: new ScriptedModel([
        {
          content: null,
          tool_calls: [call("a", "probe", { n: "not a number" }), call("b", "nope", {}), call("c", "write", { text: "x" })],
        },
        { content: "ok" },
      ]),
      runtime: createRuntime({ builtins: false, tools: [probe, write], middleware: [gate] }),
    });
    await agent.run("go");
    const byId = (id: string) => spans().find((s) => s.attributes["gen_ai.tool.call.id"] === id)!;
    expect(byId("a").attributes["error.type"]).toBe("INVALID_ARGUMENTS");
    expect(byId("b").attributes["error.type"]).toBe("UNKNOWN_TOOL");
    expect(byId("c").attributes["error.type"]).toBe("DENIED");
    for (const id of ["a", "b", "c"]) expect(byId(id).status.code).toBe(2);
  });

  test("a call left waiting for an approval (suspend) ends with its run: approval requested, status awaiting_approval", async () => {
    exporter.reset();
    const gate = policyFromConfig({ default: "allow", rules: [{ id: "ask", action: "require_approval", tools: ["write"] }] });
    const agent = createAgent({
      model: new ScriptedModel([{ content: null, tool_calls: [call("w", "write", { text: "x" })] }]),
      runtime: createRuntime({ builtins: false, tools: [write], middleware: [gate] }),
      suspendOnApproval: true,
    });
    const r = await agent.run("go");
    expect(r.stop_reason).toBe("awaiting_approval");
    const [tool] = named("execute_tool write");
    expect(tool!.attributes["agentcore.tool.status"]).toBe("awaiting_approval");
    expect(tool!.events.map((e) => [e.name, e.attributes?.["agentcore.approval.suspended"]])).toEqual([
      ["agentcore.approval.requested", true],
    ]);
    const [run] = named("invoke_agent");
    expect(run!.attributes["agentcore.run.status"]).toBe("suspended");
    expect(run!.status.code).toBe(0); // waiting is not an error
  });

  test("a run whose end could not be recorded: the run span says failed / store_failed, never completed", async () => {
    exporter.reset();
    const storage = failAppends(new MemorySessionStorage(), (_n, types) => (types.includes("run_finished") ? errnoError("ENOSPC") : null));
    const agent = createAgent({ model: new ScriptedModel([{ content: "done" }]), sinks: [new SessionRecorder("s1", storage)] });
    const r = await agent.run("go");
    expect(r).toMatchObject({ status: "failed", stop_reason: "store_failed", error_code: "STORE_FULL" });
    const runs = named("invoke_agent");
    expect(runs).toHaveLength(1);
    expect(runs[0]!.attributes["agentcore.run.status"]).toBe("failed");
    expect(runs[0]!.attributes["agentcore.stop_reason"]).toBe("store_failed");
    await agent.shutdown();
  });

  test("tracing: false makes no spans", async () => {
    exporter.reset();
    const agent = createAgent({
      model: new ScriptedModel([{ content: null, tool_calls: [call("p", "probe", { n: 1 })] }, { content: "ok" }]),
      tools: [probe],
      tracing: false,
    });
    await agent.run("go");
    expect(spans()).toEqual([]);
    expect(() => createAgent({ model: new ScriptedModel([]), tracing: "yes" as never })).toThrow("tracing must be an object");
  });

  test("an MCP server over streamable HTTP receives the tool span's traceparent", async () => {
    exporter.reset();
    const srv = await startEverythingHttp("streamableHttp");
    // A recording proxy in front of the real server: which traceparent came with each tools/call.
    const seen: (string | null)[] = [];
    const proxy = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      idleTimeout: 0,
      async fetch(req) {
        const body = req.method === "POST" ? await req.text() : undefined;
        if (body?.includes('"tools/call"')) seen.push(req.headers.get("traceparent"));
        const url = new URL(req.url);
        const headers = new Headers(req.headers);
        headers.delete("host");
        return fetch(`http://127.0.0.1:${srv.port}${url.pathname}${url.search}`, { method: req.method, headers, body });
      },
    });
    const runtime = createRuntime({ builtins: false });
    const mcp = await attachMcpServers(runtime, { web: { url: `http://127.0.0.1:${proxy.port}/mcp` } });
    try {
      const agent = createAgent({
        model: new ScriptedModel([{ content: null, tool_calls: [call("m1", "web__echo", { message: "hi" })] }, { content: "ok" }]),
        runtime,
      });
      const r = await agent.run("echo over MCP");
      expect(r.status).toBe("completed");
      const [tool] = named("execute_tool web__echo");
      expect(tool!.attributes["agentcore.tool.status"]).toBe("ok");
      expect(seen).toEqual([`00-${tool!.spanContext().traceId}-${tool!.spanContext().spanId}-01`]);
    } finally {
      await mcp.close();
      proxy.stop(true);
      await srv.stop();
    }
  }, 60_000);
});

describe("docs/tracing.md", () => {
  test("the In a program example runs as written and prints the span names its comments say", () => {
    const page = fs.readFileSync(path.join(REPO, "docs/tracing.md"), "utf8");
    const at = page.indexOf("## In a program");
    const code = /```ts\n([\s\S]*?)```/.exec(page.slice(at))![1]!.replace(/from "\.\/src\//g, `from "${path.join(REPO, "src")}/`);
    const expected = [...code.matchAll(/^\/\/ (.+)$/gm)].map((m) => m[1]!);
    expect(expected).toEqual(["chat", "execute_tool echo", "chat", "invoke_agent demo"]);
    const dir = tmp("agentcore-tracing-doc-");
    const file = path.join(dir, "example.ts");
    fs.writeFileSync(file, code);
    // Run from the repository, so its node_modules (the SDK) resolve.
    const copy = path.join(REPO, `.tracing-doc-example-${process.pid}.ts`);
    fs.copyFileSync(file, copy);
    try {
      const r = Bun.spawnSync([process.execPath, copy], { cwd: REPO, env: { PATH: process.env.PATH ?? "/usr/bin:/bin" } });
      expect(r.stderr.toString()).toBe("");
      expect(r.exitCode).toBe(0);
      expect(r.stdout.toString()).toBe(`${expected.join("\n")}\n`);
    } finally {
      fs.rmSync(copy, { force: true });
    }
  });
});
