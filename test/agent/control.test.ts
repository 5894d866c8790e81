import { MemorySessionStorage, SessionRecorder } from "../../src/session/index.ts";
import { describe, expect, test } from "bun:test";
import { ContinueRejectedError, createAgent, FollowUpDiscardedError, FollowUpRejectedError } from "../../src/agent/index.ts";
import type { ToolDefinition } from "../../src/tools/definition.ts";
import { toolOutcome } from "../../src/tools/definition.ts";
import { ScriptedModel } from "../../src/providers/scripted.ts";
import type { ModelRequest } from "../../src/providers/types.ts";
import { call, deferred, Recorder, text, type Step } from "../support/agent.ts";

const echo: ToolDefinition = {
  name: "echo",
  description: "echo",
  parameters: { type: "object" },
  handler: (args) => args,
};

describe("steering (harness tests 8-10)", () => {
  test("8: steering during the response forces another turn, applied FIFO", async () => {
    const gate = deferred();
    const streaming = deferred();
    const model = new ScriptedModel([
      async () => {
        streaming.resolve();
        await gate.promise;
        return text("first answer");
      },
      text("final"),
    ]);
    const rec = new Recorder();
    const agent = createAgent({ model, tools: [echo], sinks: [rec.sink] });
    const running = agent.run("task");
    await streaming.promise;
    const r1 = agent.steer("  one  ");
    const r2 = agent.steer("two");
    expect([r1.status, r1.queue_size, r2.status, r2.queue_size]).toEqual(["accepted", 1, "accepted", 2]);
    expect(r1.control).toMatchObject({ kind: "steering", content: "one" });
    expect(r1.control.input_id).toMatch(/^[0-9a-f]{32}$/);
    gate.resolve();
    const result = await running;
    expect(result).toMatchObject({ status: "completed", output: "final", turns: 2 });
    expect(model.requests[1].messages.slice(-3)).toEqual([
      { role: "assistant", content: "first answer" },
      { role: "user", content: "one" },
      { role: "user", content: "two" },
    ]);
    const applied = rec.of("steering_applied");
    expect(applied.map((e) => e.target_turn)).toEqual([2, 2]);
    expect(applied.map((e) => e.control.content)).toEqual(["one", "two"]);
    expect(rec.lifecycle().indexOf("steering_applied")).toBeGreaterThan(rec.lifecycle().indexOf("turn_started", 3));
  });

  test("9: a running tool finishes before steering reaches the next model call", async () => {
    const toolGate = deferred();
    const toolRunning = deferred();
    const slow: ToolDefinition = {
      name: "slow",
      description: "",
      parameters: { type: "object" },
      handler: async () => {
        toolRunning.resolve();
        await toolGate.promise;
        return "slow done";
      },
    };
    const model = new ScriptedModel([call("c1", "slow", {}), text("answer")]);
    const rec = new Recorder();
    const storage = new MemorySessionStorage();
    const journal = new SessionRecorder("s9", storage);
    const agent = createAgent({ model, tools: [slow], sinks: [rec.sink, journal] });
    const running = agent.run("task");
    await toolRunning.promise;
    expect(agent.steer("be brief").status).toBe("accepted");
    toolGate.resolve();
    const result = await running;
    expect(result.turns).toBe(2);
    // the journal, in order (harness test 9)
    expect(journal.errors).toEqual([]);
    const records = await storage.records("s9");
    expect(records.map((r) => r.type)).toEqual([
      "run_started",
      "message_appended",
      "messages_appended",
      "steering_applied",
      "message_appended",
      "run_finished",
    ]);
    expect((records[3]!.data as { target_turn: number }).target_turn).toBe(2);
    const k = rec.lifecycle();
    const toolDone = k.indexOf("tool_completed");
    const turn1Done = k.indexOf("turn_completed");
    const applied = k.indexOf("steering_applied");
    expect(toolDone).toBeLessThan(turn1Done);
    expect(turn1Done).toBeLessThan(applied);
    expect(rec.of("steering_applied")[0].target_turn).toBe(2);
    expect(model.requests[1].messages.slice(-2)).toEqual([
      { role: "tool", tool_call_id: "c1", content: "slow done" },
      { role: "user", content: "be brief" },
    ]);
    expect(agent.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "user", "assistant"]);
  });

  test("10: an aborted run discards unapplied steering and never stores it", async () => {
    const toolGate = deferred();
    const toolRunning = deferred();
    const slow: ToolDefinition = {
      name: "slow",
      description: "",
      parameters: { type: "object" },
      handler: async (_args, ctx) => {
        toolRunning.resolve();
        await Promise.race([toolGate.promise, new Promise((r) => ctx.signal.addEventListener("abort", r))]);
        return "late";
      },
    };
    const model = new ScriptedModel([call("c1", "slow", {}), text("never")]);
    const rec = new Recorder();
    const storage = new MemorySessionStorage();
    const journal = new SessionRecorder("s10", storage);
    const agent = createAgent({ model, tools: [slow], sinks: [rec.sink, journal] });
    const running = agent.run("task");
    await toolRunning.promise;
    expect(agent.steer("queued").status).toBe("accepted");
    expect(agent.abort("user pressed stop")).toBe(true);
    expect(agent.abort()).toBe(false);
    expect(agent.steer("too late").status).toBe("run_closing");
    const result = await running;
    expect(result).toMatchObject({ status: "cancelled", stop_reason: "external_abort", error: "user pressed stop", turns: 1 });
    const discarded = rec.of("steering_discarded");
    expect(discarded).toHaveLength(1);
    expect(discarded[0]).toMatchObject({ reason: "external_abort", control: { content: "queued" } });
    expect(rec.of("steering_applied")).toHaveLength(0);
    expect(agent.messages.some((m) => m.role === "user" && m.content === "queued")).toBe(false);
    // the cancelled tool still got its tool message
    expect(agent.messages.at(-1)).toEqual({
      role: "tool",
      tool_call_id: "c1",
      content: '{"status":"cancelled","tool":"slow","error":"user pressed stop"}',
    });
    expect(rec.of("tool_completed")[0].result.cancelled).toBe(true);
    expect(model.requests.length).toBe(1);
    expect(agent.steer("idle now")).toMatchObject({ status: "agent_idle", queue_size: 0 });
    // the journal never holds the discarded steering (harness test 10)
    expect(journal.errors).toEqual([]);
    const types = (await storage.records("s10")).map((r) => r.type);
    expect(types).not.toContain("steering_applied");
    expect(types.at(-1)).toBe("run_finished");
  });

  test("steering queue capacity", async () => {
    const gate = deferred();
    const streaming = deferred();
    const model = new ScriptedModel([async () => (streaming.resolve(), await gate.promise, text("a")), text("b")]);
    const agent = createAgent({ model, steeringQueueCapacity: 1 });
    const running = agent.run("t");
    await streaming.promise;
    expect(agent.steer("x").status).toBe("accepted");
    expect(agent.steer("y")).toMatchObject({ status: "queue_full", queue_size: 1 });
    expect(() => agent.steer("   ")).toThrow("must not be empty");
    gate.resolve();
    await running;
  });
});

describe("abort", () => {
  test("abort mid-model-stream ends cancelled/external_abort and still closes turn and run", async () => {
    const started = deferred();
    let sawSignal: AbortSignal | undefined;
    const model = new ScriptedModel([
      (req: ModelRequest) => {
        sawSignal = req.signal;
        started.resolve();
        return new Promise(() => {}); // a model that never answers
      },
    ]);
    const rec = new Recorder();
    const agent = createAgent({ model, sinks: [rec.sink] });
    const running = agent.run("t");
    await started.promise;
    expect(agent.abort()).toBe(true);
    const r = await running;
    expect(r).toMatchObject({ status: "cancelled", stop_reason: "external_abort", error: "agent run was aborted", turns: 1 });
    expect(sawSignal?.aborted).toBe(true);
    expect(rec.lifecycle()).toEqual(["agent_started", "turn_started", "turn_completed", "agent_finished"]);
    expect(agent.status).toBe("cancelled");
    await agent.waitForIdle();
  });

  test("a model that throws its own error on abort still ends external_abort", async () => {
    const started = deferred();
    const model = new ScriptedModel([
      (req: ModelRequest) =>
        new Promise((_res, rej) => {
          started.resolve();
          req.signal!.addEventListener("abort", () => rej(new Error("request aborted by the SDK")));
        }),
    ]);
    const agent = createAgent({ model });
    const p = agent.run("t");
    await started.promise;
    agent.abort("bye");
    expect(await p).toMatchObject({ status: "cancelled", stop_reason: "external_abort", error: "bye" });
  });

  test("abort with no run returns false", () => {
    const agent = createAgent({ model: new ScriptedModel([]) });
    expect(agent.abort()).toBe(false);
  });

  test("abort while a tool runs settles every remaining call of the message as cancelled", async () => {
    const running = deferred();
    const slow: ToolDefinition = {
      name: "slow",
      description: "",
      parameters: { type: "object" },
      handler: (_a, ctx) =>
        new Promise((_res, rej) => {
          running.resolve();
          ctx.signal.addEventListener("abort", () => rej(new Error("stopped")));
        }),
    };
    const model = new ScriptedModel([
      {
        content: null,
        tool_calls: [
          { id: "a", name: "slow", arguments: "{}" },
          { id: "b", name: "echo", arguments: "{}" },
          { id: "c", name: "echo", arguments: "{}" },
        ],
      },
    ]);
    const rec = new Recorder();
    const agent = createAgent({ model, tools: [slow, echo], sinks: [rec.sink] });
    const p = agent.run("t");
    await running.promise;
    agent.abort("halt");
    const r = await p;
    expect(r.stop_reason).toBe("external_abort");
    expect(rec.of("tool_started").map((e) => e.tool_call.id)).toEqual(["a", "b", "c"]);
    expect(rec.of("tool_completed").map((e) => [e.tool_call.id, e.result.cancelled])).toEqual([
      ["a", true],
      ["b", true],
      ["c", true],
    ]);
    expect(agent.messages.filter((m) => m.role === "tool").map((m) => (m as { tool_call_id: string }).tool_call_id)).toEqual([
      "a",
      "b",
      "c",
    ]);
  });
});

describe("continueRun", () => {
  test("rejections in check order, then a continued run without a new user message", async () => {
    const gate = deferred();
    const streaming = deferred();
    const model = new ScriptedModel([async () => (streaming.resolve(), await gate.promise, text("first")), text("continued")]);
    const rec = new Recorder();
    const agent = createAgent({ model, sinks: [rec.sink] });
    expect(agent.continueRejectionReason).toBe("no_previous_run");
    const err = await agent.continueRun().catch((e) => e);
    expect(err).toBeInstanceOf(ContinueRejectedError);
    expect(err.message).toBe("continue run was rejected: no_previous_run");
    const p = agent.run("start");
    await streaming.promise;
    expect(agent.continueRejectionReason).toBe("agent_active");
    gate.resolve();
    await p;
    expect(agent.canContinue).toBe(true);
    const before = rec.events.length;
    const r = await agent.continueRun();
    expect(r).toMatchObject({ status: "completed", output: "continued", turns: 1 });
    expect(rec.events[before]).toMatchObject({ kind: "agent_continued", sequence: 1 });
    expect(agent.messages.map((m) => m.role)).toEqual(["user", "assistant", "assistant"]);
    expect(model.requests[1].messages.at(-1)).toEqual({ role: "assistant", content: "first" });
    await agent.shutdown();
    expect(agent.continueRejectionReason).toBe("agent_shutting_down");
  });

  test("unsupported stop reason and incomplete tool state", async () => {
    const cancelTool: ToolDefinition = {
      name: "c",
      description: "",
      parameters: { type: "object" },
      handler: () => toolOutcome("x", { control: "cancel" }),
    };
    const a1 = createAgent({ model: new ScriptedModel([call("1", "c", {})]), tools: [cancelTool] });
    await a1.run("t");
    expect(a1.continueRejectionReason).toBe("unsupported_stop_reason");

    // tool_completion with a later call left without a result → incomplete tool state
    const done: ToolDefinition = {
      name: "done",
      description: "",
      parameters: { type: "object" },
      handler: () => toolOutcome("ok", { control: "complete" }),
    };
    const a2 = createAgent({
      model: new ScriptedModel([
        {
          content: null,
          tool_calls: [
            { id: "1", name: "done", arguments: "{}" },
            { id: "2", name: "done", arguments: "{}" },
          ],
        },
      ]),
      tools: [done],
    });
    expect(await a2.run("t")).toMatchObject({ stop_reason: "tool_completion" });
    expect(a2.continueRejectionReason).toBe("incomplete_tool_state");
    a2.reset();
    expect(a2.continueRejectionReason).toBe("no_previous_run");
  });
});

describe("follow-ups and serialisation", () => {
  function gated(first: string): { steps: Step[]; streaming: Promise<void>; open(): void } {
    const gate = deferred();
    const streaming = deferred();
    return {
      steps: [async () => (streaming.resolve(), await gate.promise, text(first))],
      streaming: streaming.promise,
      open: () => gate.resolve(),
    };
  }

  test("accepted follow-ups drain FIFO after a successful run, each its own run", async () => {
    const g = gated("one");
    const model = new ScriptedModel([...g.steps, text("two"), text("three")]);
    const rec = new Recorder();
    const agent = createAgent({ model, sinks: [rec.sink] });
    expect(agent.followUp("early").receipt.status).toBe("agent_idle");
    const p = agent.run("first");
    await g.streaming;
    const h1 = agent.followUp("second");
    const h2 = agent.followUp("third");
    expect([h1.receipt.status, h1.receipt.queue_size, h2.receipt.queue_size]).toEqual(["accepted", 1, 2]);
    expect(h1.receipt.control.kind).toBe("follow_up");
    g.open();
    expect((await p).output).toBe("one");
    expect((await h1.wait()).output).toBe("two");
    expect((await h2.wait()).output).toBe("three");
    await agent.waitForIdle();
    expect(rec.of("agent_started").map((e) => e.task)).toEqual(["first", "second", "third"]);
    expect(new Set(rec.of("agent_started").map((e) => e.run_id)).size).toBe(3);
    expect(
      await agent
        .followUp("x")
        .wait()
        .catch((e) => e),
    ).toBeInstanceOf(FollowUpRejectedError);
  });

  test("a failed run discards pending follow-ups (default policy)", async () => {
    const gate = deferred();
    const streaming = deferred();
    const model = new ScriptedModel([
      async () => (streaming.resolve(), await gate.promise, { error: { kind: "rate_limit", message: "slow down" } }),
      text("never"),
    ]);
    const agent = createAgent({ model });
    const p = agent.run("first");
    await streaming.promise;
    const h = agent.followUp("second");
    gate.resolve();
    expect((await p).status).toBe("failed");
    const err = await h.wait().catch((e) => e);
    expect(err).toBeInstanceOf(FollowUpDiscardedError);
    expect(err.reason).toBe("previous_run_not_completed");
    expect(model.requests.length).toBe(1);
  });

  test("followUpFailurePolicy continue runs follow-ups after a failure", async () => {
    const gate = deferred();
    const streaming = deferred();
    const model = new ScriptedModel([
      async () => (streaming.resolve(), await gate.promise, { error: { kind: "timeout", message: "t" } }),
      text("second ok"),
    ]);
    const agent = createAgent({ model, followUpFailurePolicy: "continue" });
    const p = agent.run("first");
    await streaming.promise;
    const h = agent.followUp("second");
    gate.resolve();
    expect((await p).status).toBe("failed");
    expect((await h.wait()).output).toBe("second ok");
  });

  test("shutdown discards follow-ups with agent_shutdown", async () => {
    const gate = deferred();
    const streaming = deferred();
    const model = new ScriptedModel([async () => (streaming.resolve(), await gate.promise, text("a"))]);
    const agent = createAgent({ model });
    const p = agent.run("first");
    await streaming.promise;
    const h = agent.followUp("second");
    const closing = agent.shutdown();
    expect(agent.followUp("third").receipt.status).toBe("run_closing");
    gate.resolve();
    await closing;
    expect((await p).output).toBe("a");
    expect((await h.wait().catch((e) => e)).reason).toBe("agent_shutdown");
  });

  test("a second run waits for the first", async () => {
    const g = gated("first");
    const model = new ScriptedModel([...g.steps, text("second")]);
    const rec = new Recorder();
    const agent = createAgent({ model, sinks: [rec.sink] });
    const p1 = agent.run("a");
    const p2 = agent.run("b");
    await g.streaming;
    expect(model.requests.length).toBe(1);
    g.open();
    const [r1, r2] = await Promise.all([p1, p2]);
    expect([r1.output, r2.output]).toEqual(["first", "second"]);
    expect(rec.lifecycle().filter((k) => k === "agent_started" || k === "agent_finished")).toEqual([
      "agent_started",
      "agent_finished",
      "agent_started",
      "agent_finished",
    ]);
    expect(agent.messages.map((m) => m.content)).toEqual(["a", "first", "b", "second"]);
  });

  test("reset while active throws; waitForIdle resolves after the run", async () => {
    const g = gated("x");
    const agent = createAgent({ model: new ScriptedModel(g.steps) });
    const p = agent.run("t");
    await g.streaming;
    expect(() => agent.reset()).toThrow("active");
    expect(agent.status).toBe("running");
    const idle = agent.waitForIdle();
    g.open();
    await idle;
    expect(agent.isActive).toBe(false);
    expect((await p).status).toBe("completed");
    expect(agent.status).toBe("completed");
  });
});
