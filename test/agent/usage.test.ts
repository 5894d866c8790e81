import { describe, expect, test } from "bun:test";
import {
  AgentRunError,
  assertRunSucceeded,
  createAgent,
  DEFAULT_POLICY,
  resolvePolicy,
  runSucceeded,
  UsageAccumulator,
} from "../../src/agent/index.ts";
import type { ToolDefinition } from "../../src/tools/definition.ts";
import { ScriptedModel } from "../../src/providers/scripted.ts";
import { call, Recorder, text } from "../support/agent.ts";

const echo: ToolDefinition = { name: "echo", description: "", parameters: { type: "object" }, handler: (a) => a };

describe("token budget (harness test 14)", () => {
  test("the budget stops before the next request, after the crossing turn's tools settle", async () => {
    let ran = 0;
    const t: ToolDefinition = { name: "t", description: "", parameters: { type: "object" }, handler: () => ++ran };
    const model = new ScriptedModel([call("1", "t", {}, { input_tokens: 100, output_tokens: 100 }), text("never")]);
    const rec = new Recorder();
    const agent = createAgent({ model, tools: [t], sinks: [rec.sink], policy: { maxRunTokens: 150 } });
    const r = await agent.run("go");
    expect(r).toMatchObject({ status: "failed", stop_reason: "token_budget_exceeded", turns: 1 });
    expect(ran).toBe(1);
    expect(model.requests.length).toBe(1);
    expect(r.usage).toMatchObject({
      input_tokens: 100,
      output_tokens: 100,
      total_tokens: 200,
      request_count: 1,
      reported_request_count: 1,
      complete: true,
    });
    expect(rec.lifecycle().filter((k) => k === "turn_started")).toHaveLength(1);
    expect(agent.canContinue).toBe(true);
  });

  test("a final text response may exceed the budget", async () => {
    const model = new ScriptedModel([text("big answer", { input_tokens: 1000, output_tokens: 1000 })]);
    const agent = createAgent({ model, policy: { maxRunTokens: 10 } });
    expect(await agent.run("go")).toMatchObject({ status: "completed", stop_reason: "text_response" });
  });

  test("missing usage makes the budget unenforceable: usage_unavailable", async () => {
    const model = new ScriptedModel([call("1", "echo", {}), text("never")]);
    const agent = createAgent({ model, tools: [echo], policy: { maxRunTokens: 1000 } });
    const r = await agent.run("go");
    expect(r).toMatchObject({ status: "failed", stop_reason: "usage_unavailable", turns: 1 });
    expect(r.error).toContain("1 model request(s) did not report usage");
    expect(r.usage).toMatchObject({
      request_count: 1,
      reported_request_count: 0,
      complete: false,
      total_tokens: 0,
      cache_read_tokens: null,
    });
  });

  test("without a budget, missing usage is only recorded", async () => {
    const model = new ScriptedModel([call("1", "echo", {}, { input_tokens: 3, output_tokens: 4 }), text("ok")]);
    const r = await createAgent({ model, tools: [echo] }).run("go");
    expect(r.usage).toMatchObject({
      input_tokens: 3,
      output_tokens: 4,
      total_tokens: 7,
      request_count: 2,
      reported_request_count: 1,
      complete: false,
    });
  });

  test("assistant messages keep their usage in state but not in requests", async () => {
    const model = new ScriptedModel([call("1", "echo", {}, { input_tokens: 3, output_tokens: 4 }), text("ok")]);
    const rec = new Recorder();
    const agent = createAgent({ model, tools: [echo], sinks: [rec.sink] });
    await agent.run("go");
    expect(agent.messages[1]).toMatchObject({ role: "assistant", usage: { input_tokens: 3, output_tokens: 4, total_tokens: 7 } });
    expect(JSON.stringify(model.requests[1].messages)).not.toContain("usage");
    expect(rec.of("message_completed").map((e) => e.usage)).toEqual([{ input_tokens: 3, output_tokens: 4, total_tokens: 7 }, null]);
  });
});

describe("result helpers", () => {
  test("runSucceeded / assertRunSucceeded", async () => {
    const ok = await createAgent({ model: new ScriptedModel([text("fine")]) }).run("x");
    expect(runSucceeded(ok)).toBe(true);
    expect(assertRunSucceeded(ok)).toBe(ok);
    const bad = await createAgent({ model: new ScriptedModel([{ content: "" }]) }).run("x");
    expect(runSucceeded(bad)).toBe(false);
    expect(() => assertRunSucceeded(bad)).toThrow(AgentRunError);
    expect(() => assertRunSucceeded(bad)).toThrow("agent run failed (empty_response)");
  });
});

describe("usage aggregation", () => {
  test("unknown stays distinct from zero", () => {
    const u = new UsageAccumulator();
    expect(u.snapshot()).toEqual({
      input_tokens: 0,
      output_tokens: 0,
      total_tokens: 0,
      cache_read_tokens: null,
      cache_write_tokens: null,
      reasoning_tokens: null,
      request_count: 0,
      reported_request_count: 0,
      complete: true,
    });
    u.beginRequest();
    u.record({ input_tokens: 1, output_tokens: 2, total_tokens: 3, cache_read_tokens: 5, reasoning_tokens: 0 });
    expect(u.snapshot()).toMatchObject({
      total_tokens: 3,
      cache_read_tokens: 5,
      cache_write_tokens: null,
      reasoning_tokens: 0,
      complete: true,
    });
    u.beginRequest();
    u.record({ input_tokens: 1, output_tokens: 1, total_tokens: 2, cache_read_tokens: 1 });
    expect(u.snapshot()).toMatchObject({
      total_tokens: 5,
      cache_read_tokens: 6,
      reasoning_tokens: null,
      request_count: 2,
      reported_request_count: 2,
    });
    u.beginRequest();
    u.record(undefined);
    expect(u.snapshot()).toMatchObject({ cache_read_tokens: 6, request_count: 3, reported_request_count: 2, complete: false });
  });
});

describe("policy", () => {
  test("defaults", () => {
    expect(resolvePolicy()).toEqual(DEFAULT_POLICY);
    expect(DEFAULT_POLICY).toEqual({
      maxSteps: 20,
      maxNoToolResponses: 3,
      maxRepeatedToolCalls: 3,
      maxRunTokens: null,
      requireExplicitFinish: false,
      parallelToolCalls: false,
      maxParallelToolCalls: null,
    });
    expect(Object.isFrozen(resolvePolicy({ maxSteps: 5 }))).toBe(true);
  });

  test("invalid values name the field", () => {
    expect(() => resolvePolicy({ maxSteps: 0 })).toThrow(RangeError);
    expect(() => resolvePolicy({ maxSteps: 0 })).toThrow("policy.maxSteps");
    expect(() => resolvePolicy({ maxSteps: 1.5 })).toThrow("policy.maxSteps");
    expect(() => resolvePolicy({ maxRunTokens: -1 })).toThrow("policy.maxRunTokens");
    expect(() => resolvePolicy({ maxParallelToolCalls: true as never })).toThrow(TypeError);
    expect(() => resolvePolicy({ maxParallelToolCalls: true as never })).toThrow("policy.maxParallelToolCalls");
    expect(() => resolvePolicy({ parallelToolCalls: 1 as never })).toThrow("policy.parallelToolCalls must be a boolean");
    expect(() => resolvePolicy({ requireExplicitFinish: "yes" as never })).toThrow(TypeError);
    expect(() => resolvePolicy({ maxStep: 3 } as never)).toThrow('unknown policy field "maxStep"');
    expect(() => createAgent({ model: new ScriptedModel([]), policy: { maxNoToolResponses: 0 } })).toThrow("policy.maxNoToolResponses");
    expect(resolvePolicy({ maxRunTokens: null, maxParallelToolCalls: 4 })).toMatchObject({ maxRunTokens: null, maxParallelToolCalls: 4 });
  });

  test("invalid agent options", () => {
    expect(() => createAgent({ model: {} as never })).toThrow("model");
    expect(() => createAgent({ model: new ScriptedModel([]), steeringQueueCapacity: 0 })).toThrow("steeringQueueCapacity");
    expect(() => createAgent({ model: new ScriptedModel([]), followUpFailurePolicy: "retry" as never })).toThrow("followUpFailurePolicy");
    expect(() => createAgent({ model: new ScriptedModel([]), sinks: [42 as never] })).toThrow("sinks");
  });

  test("run rejects an empty task", async () => {
    await expect(createAgent({ model: new ScriptedModel([]) }).run("  ")).rejects.toThrow("non-empty");
  });
});
