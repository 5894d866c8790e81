import { MemorySessionStorage, SessionRecorder, sessionMessages } from "../../src/session/index.ts";
import { describe, expect, test } from "bun:test";
import { createAgent, SKIPPED_AFTER_TERMINAL } from "../../src/agent/index.ts";
import { toolOutcome, type ToolControl, type ToolDefinition } from "../../src/tools/definition.ts";
import { ScriptedModel } from "../../src/providers/scripted.ts";
import { calls, type Deferred, deferred, Recorder, text } from "../support/agent.ts";

/** A read-only tool whose calls wait until the test releases them, tracking concurrency. */
function gatedTools() {
  let active = 0;
  let maxActive = 0;
  const log: string[] = [];
  const gates = new Map<string, Deferred<ToolControl>>();
  const entered = new Map<string, Deferred<void>>();
  const gate = (key: string) => {
    if (!gates.has(key)) gates.set(key, deferred<ToolControl>());
    return gates.get(key)!;
  };
  const enteredGate = (key: string) => {
    if (!entered.has(key)) entered.set(key, deferred());
    return entered.get(key)!;
  };
  const make = (name: string, effect: "read_only" | "side_effecting"): ToolDefinition<{ key: string }> => ({
    name,
    description: "",
    effect,
    parameters: { type: "object", properties: { key: { type: "string" } }, required: ["key"] },
    handler: async ({ key }, ctx) => {
      active++;
      maxActive = Math.max(maxActive, active);
      log.push(`start ${key}`);
      ctx.progress(`working on ${key}`, { key });
      enteredGate(key).resolve();
      const control = await gate(key).promise;
      log.push(`end ${key}`);
      active--;
      return toolOutcome({ key }, { control });
    },
  });
  return {
    read: make("read", "read_only"),
    write: make("write", "side_effecting"),
    release: (key: string, control: ToolControl = "continue") => gate(key).resolve(control),
    entered: (key: string) => enteredGate(key).promise,
    log,
    get maxActive() {
      return maxActive;
    },
  };
}

describe("parallel read-only batches (harness tests 11-13)", () => {
  test("11: read-only calls overlap but start, complete and commit in source order", async () => {
    const t = gatedTools();
    const model = new ScriptedModel([
      calls([
        ["r1", "read", { key: "r1" }],
        ["r2", "read", { key: "r2" }],
      ]),
      text("done"),
    ]);
    const rec = new Recorder();
    const storage = new MemorySessionStorage();
    const journal = new SessionRecorder("s11", storage);
    const agent = createAgent({ model, tools: [t.read as never], sinks: [rec.sink, journal], policy: { parallelToolCalls: true } });
    const p = agent.run("go");
    await Promise.all([t.entered("r1"), t.entered("r2")]);
    expect(t.maxActive).toBe(2);
    t.release("r2"); // the later call finishes first
    t.release("r1");
    expect((await p).output).toBe("done");
    expect(t.log).toEqual(["start r1", "start r2", "end r2", "end r1"]);
    expect(rec.of("tool_started").map((e) => e.tool_call.id)).toEqual(["r1", "r2"]);
    expect(rec.of("tool_completed").map((e) => e.tool_call.id)).toEqual(["r1", "r2"]);
    const k = rec.kinds();
    expect(k.lastIndexOf("tool_started")).toBeLessThan(k.indexOf("tool_progressed"));
    expect(k.lastIndexOf("tool_progressed")).toBeLessThan(k.indexOf("tool_completed"));
    expect(rec.of("tool_progressed").map((e) => e.update)).toEqual([
      { message: "working on r1", data: { key: "r1" } },
      { message: "working on r2", data: { key: "r2" } },
    ]);
    expect(agent.messages.filter((m) => m.role === "tool").map((m) => (m as { tool_call_id: string }).tool_call_id)).toEqual(["r1", "r2"]);
    expect(model.requests[1].messages.slice(-2).map((m) => m.content)).toEqual(['{"key":"r1"}', '{"key":"r2"}']);
    // the session journal holds the tool messages in source order too (harness test 11)
    expect(journal.errors).toEqual([]);
    const checkout = await storage.checkout("s11");
    const sessionTools = sessionMessages(checkout!.session).filter((m) => m.role === "tool");
    expect(sessionTools.map((m) => (m as { tool_call_id: string }).tool_call_id)).toEqual(["r1", "r2"]);
  });

  test("without the policy, read-only calls run one by one", async () => {
    const t = gatedTools();
    const model = new ScriptedModel([
      calls([
        ["r1", "read", { key: "r1" }],
        ["r2", "read", { key: "r2" }],
      ]),
      text("done"),
    ]);
    const agent = createAgent({ model, tools: [t.read as never] });
    const p = agent.run("go");
    await t.entered("r1");
    t.release("r1");
    await t.entered("r2");
    t.release("r2");
    await p;
    expect(t.maxActive).toBe(1);
  });

  test("12: a side-effecting call is a barrier between read batches", async () => {
    const t = gatedTools();
    const model = new ScriptedModel([
      calls([
        ["r1", "read", { key: "r1" }],
        ["r2", "read", { key: "r2" }],
        ["w", "write", { key: "w" }],
        ["r3", "read", { key: "r3" }],
        ["r4", "read", { key: "r4" }],
      ]),
      text("done"),
    ]);
    const rec = new Recorder();
    const agent = createAgent({
      model,
      tools: [t.read as never, t.write as never],
      sinks: [rec.sink],
      policy: { parallelToolCalls: true },
    });
    const p = agent.run("go");
    await Promise.all([t.entered("r1"), t.entered("r2")]);
    expect(t.log).toEqual(["start r1", "start r2"]);
    t.release("r1");
    t.release("r2");
    await t.entered("w");
    expect(t.log.slice(2)).toEqual(["end r1", "end r2", "start w"]);
    t.release("w");
    await Promise.all([t.entered("r3"), t.entered("r4")]);
    t.release("r4");
    t.release("r3");
    await p;
    expect(t.log).toEqual(["start r1", "start r2", "end r1", "end r2", "start w", "end w", "start r3", "start r4", "end r4", "end r3"]);
    expect(rec.of("tool_completed").map((e) => e.tool_call.id)).toEqual(["r1", "r2", "w", "r3", "r4"]);
    expect(t.maxActive).toBe(2);
  });

  test("13: the first terminal result in source order wins after peers settle; later group calls are skipped", async () => {
    const t = gatedTools();
    const model = new ScriptedModel([
      calls([
        ["r1", "read", { key: "r1" }],
        ["r2", "read", { key: "r2" }],
        ["late", "read", { key: "late" }],
        ["w", "write", { key: "w" }],
      ]),
      text("never"),
    ]);
    const rec = new Recorder();
    const agent = createAgent({
      model,
      tools: [t.read as never, t.write as never],
      sinks: [rec.sink],
      policy: { parallelToolCalls: true, maxParallelToolCalls: 2 },
    });
    const p = agent.run("go");
    await Promise.all([t.entered("r1"), t.entered("r2")]);
    t.release("r2", "reject"); // settles first, but r1 comes first in source order
    t.release("r1", "complete");
    const r = await p;
    expect(r).toMatchObject({ status: "completed", stop_reason: "tool_completion", output: '{"key":"r1"}', turns: 1 });
    expect(t.log).toEqual(["start r1", "start r2", "end r2", "end r1"]);
    const done = rec.of("tool_completed");
    expect(done.map((e) => [e.tool_call.id, e.result.control, e.result.cancelled])).toEqual([
      ["r1", "complete", false],
      ["r2", "reject", false],
      ["late", "continue", true],
    ]);
    expect(JSON.parse(done[2].result.messages[0].content)).toEqual({ status: "cancelled", tool: "read", error: SKIPPED_AFTER_TERMINAL });
    expect(rec.of("tool_started").map((e) => e.tool_call.id)).toEqual(["r1", "r2", "late"]);
    expect(model.requests.length).toBe(1);
  });

  test("chunks respect maxParallelToolCalls", async () => {
    const t = gatedTools();
    const model = new ScriptedModel([
      calls([
        ["a", "read", { key: "a" }],
        ["b", "read", { key: "b" }],
        ["c", "read", { key: "c" }],
      ]),
      text("ok"),
    ]);
    const agent = createAgent({ model, tools: [t.read as never], policy: { parallelToolCalls: true, maxParallelToolCalls: 2 } });
    const p = agent.run("go");
    await Promise.all([t.entered("a"), t.entered("b")]);
    expect(t.log).toEqual(["start a", "start b"]);
    t.release("a");
    t.release("b");
    await t.entered("c");
    t.release("c");
    await p;
    expect(t.maxActive).toBe(2);
  });

  test("a group that would trip the repeat guard runs sequentially and fails at the repeated call", async () => {
    let n = 0;
    const look: ToolDefinition = { name: "look", description: "", effect: "read_only", parameters: { type: "object" }, handler: () => ++n };
    const model = new ScriptedModel([
      calls([
        ["a", "look", {}],
        ["b", "look", {}],
        ["c", "look", {}],
      ]),
    ]);
    const agent = createAgent({ model, tools: [look], policy: { parallelToolCalls: true } });
    const r = await agent.run("go");
    expect(r.stop_reason).toBe("repeated_tool_call");
    expect(n).toBe(2);
  });
});

describe("parallel batches: barriers and abort", () => {
  test("an unknown tool is a barrier (treated as side-effecting)", async () => {
    const t = gatedTools();
    const model = new ScriptedModel([
      calls([
        ["r1", "read", { key: "r1" }],
        ["x", "ghost", {}],
        ["r2", "read", { key: "r2" }],
      ]),
      text("ok"),
    ]);
    const rec = new Recorder();
    const agent = createAgent({ model, tools: [t.read as never], sinks: [rec.sink], policy: { parallelToolCalls: true } });
    const p = agent.run("go");
    await t.entered("r1");
    t.release("r1");
    await t.entered("r2");
    t.release("r2");
    await p;
    expect(t.maxActive).toBe(1);
    expect(rec.of("tool_completed").map((e) => e.tool_call.id)).toEqual(["r1", "x", "r2"]);
  });

  test("abort during a parallel group settles the group and every later call as cancelled", async () => {
    const t = gatedTools();
    const model = new ScriptedModel([
      calls([
        ["r1", "read", { key: "r1" }],
        ["r2", "read", { key: "r2" }],
        ["w", "write", { key: "w" }],
      ]),
    ]);
    const rec = new Recorder();
    const agent = createAgent({
      model,
      tools: [t.read as never, t.write as never],
      sinks: [rec.sink],
      policy: { parallelToolCalls: true },
    });
    const p = agent.run("go");
    await Promise.all([t.entered("r1"), t.entered("r2")]);
    agent.abort("enough");
    const r = await p;
    expect(r).toMatchObject({ status: "cancelled", stop_reason: "external_abort", error: "enough" });
    expect(rec.of("tool_completed").map((e) => [e.tool_call.id, e.result.cancelled])).toEqual([
      ["r1", true],
      ["r2", true],
      ["w", true],
    ]);
    expect(t.log).toEqual(["start r1", "start r2"]);
    expect(agent.messages.filter((m) => m.role === "tool")).toHaveLength(3);
  });
});

describe("progress", () => {
  test("progress reports become tool_progressed events; reports after the call settles are ignored", async () => {
    let later: ((m: string) => void) | undefined;
    const t: ToolDefinition = {
      name: "p",
      description: "",
      parameters: { type: "object" },
      handler: async (_a, ctx) => {
        ctx.progress("half way", { pct: 50 });
        ctx.progress("");
        later = (m) => ctx.progress(m);
        return "ok";
      },
    };
    const rec = new Recorder();
    const agent = createAgent({
      model: new ScriptedModel([{ content: null, tool_calls: [{ id: "1", name: "p", arguments: "{}" }] }, text("done")]),
      tools: [t],
      sinks: [rec.sink],
    });
    await agent.run("go");
    later!("too late");
    const progressed = rec.of("tool_progressed");
    expect(progressed).toHaveLength(1);
    expect(progressed[0]).toMatchObject({ turn: 1, tool_call: { id: "1", name: "p" }, update: { message: "half way", data: { pct: 50 } } });
    expect(rec.kinds().indexOf("tool_progressed")).toBeLessThan(rec.kinds().indexOf("tool_completed"));
    // progress is never stored in the conversation
    expect(JSON.stringify(agent.messages)).not.toContain("half way");
  });
});
