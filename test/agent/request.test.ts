/**
 * The per-turn shortcuts of the loop keep their contracts: the request array
 * the model gets is the agent's own (it grows in place, and an adapter that
 * changes it anyway cannot change the history or the next request), events
 * nobody receives are still numbered, and an abort still interrupts a model
 * stream that hangs.
 */
import { describe, expect, test } from "bun:test";
import { createAgent, type AgentEvent } from "../../src/agent/index.ts";
import { EventEmitter } from "../../src/agent/events.ts";
import type { ModelRequest } from "../../src/providers/types.ts";
import type { ToolDefinition } from "../../src/tools/definition.ts";
import { ScriptedModel } from "../../src/providers/scripted.ts";
import { call, quietLogger, text } from "../support/agent.ts";

const echo: ToolDefinition<{ text: string }> = {
  name: "echo",
  description: "echo text",
  parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  handler: ({ text }) => ({ status: "success", text }),
};

describe("the request context", () => {
  test("an adapter that adds and removes messages changes neither the history nor the next request", async () => {
    const model = new ScriptedModel([
      (req: ModelRequest) => {
        const messages = req.messages as unknown as { role: string; content: string }[];
        messages.push({ role: "user", content: "injected by the adapter" });
        messages.splice(0, 1); // the system message
        return call("c1", "echo", { text: "a" });
      },
      (req: ModelRequest) => {
        (req.messages as unknown as unknown[]).length = 0;
        return call("c2", "echo", { text: "b" });
      },
      text("done"),
    ]);
    const agent = createAgent({ model, tools: [echo as never], systemPrompt: "sys" });
    const r = await agent.run("go");
    expect(r.status).toBe("completed");
    const roles = (req: ModelRequest) => req.messages.map((m) => m.role);
    expect(roles(model.requests[1]!)).toEqual(["system", "user", "assistant", "tool"]);
    expect(roles(model.requests[2]!)).toEqual(["system", "user", "assistant", "tool", "assistant", "tool"]);
    expect(JSON.stringify(model.requests[2])).not.toContain("injected");
    expect(agent.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant", "tool", "assistant"]);
  });

  test("the messages of a request are frozen, and a later request carries the same message objects", async () => {
    const seen: ModelRequest["messages"][] = [];
    const model = new ScriptedModel([
      (req: ModelRequest) => {
        seen.push(req.messages.slice());
        return call("c1", "echo", { text: "a" });
      },
      (req: ModelRequest) => {
        seen.push(req.messages.slice());
        return text("done");
      },
    ]);
    const agent = createAgent({ model, tools: [echo as never], systemPrompt: "sys" });
    await agent.run("go");
    for (const m of seen[1]!) expect(Object.isFrozen(m)).toBe(true);
    expect(seen[1]![0]).toBe(seen[0]![0]);
    expect(seen[1]![1]).toBe(seen[0]![1]);
  });
});

describe("events nobody receives", () => {
  test("are numbered all the same: a subscriber that joins later sees the run's sequence go on", async () => {
    const emitter = new EventEmitter("a1", [], quietLogger());
    emitter.beginRun();
    expect(emitter.listens("turn_started")).toBe(false);
    await emitter.emit({ kind: "turn_started", turn: 1 });
    const sub = emitter.subscribe();
    expect(emitter.listens("turn_started")).toBe(true);
    await emitter.emit({ kind: "turn_completed", turn: 1 });
    const first = await sub.next();
    expect(first.done).toBe(false);
    expect((first.value as AgentEvent).kind).toBe("turn_completed");
    expect((first.value as AgentEvent).sequence).toBe(2);
    expect(Object.isFrozen(first.value)).toBe(true);
  });

  test("an event emitted while an earlier one is still being delivered waits its turn, even with no sink left to want it", async () => {
    const order: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const observer = {
      wants: (kind: string) => kind === "turn_started",
      handle: async (e: AgentEvent) => {
        order.push(e.kind);
        if (e.kind === "turn_started") await gate;
      },
    };
    const emitter = new EventEmitter("a1", [], quietLogger(), { messages: [] }, observer);
    emitter.beginRun();
    const sub = emitter.subscribe();
    const a = emitter.emit({ kind: "turn_started", turn: 1 });
    await sub.return!();
    const b = emitter.emit({ kind: "turn_completed", turn: 1 }); // pending delivery ahead: chained, not skipped
    let bDone = false;
    void b.then(() => (bDone = true));
    await Promise.resolve();
    expect(bDone).toBe(false);
    release();
    await a;
    await b;
    expect(order).toEqual(["turn_started", "turn_completed"]);
  });
});

describe("abort", () => {
  test("interrupts a model stream that never yields, and the next run works", async () => {
    const model = new ScriptedModel([
      () => new Promise<never>(() => {}), // hangs, ignoring the signal
      text("second"),
    ]);
    const agent = createAgent({ model });
    const run = agent.run("one");
    await new Promise((r) => setTimeout(r, 20));
    agent.abort("stop now");
    const r = await run;
    expect(r.status).toBe("cancelled");
    expect(r.error).toBe("stop now");
    const again = await agent.run("two");
    expect(again.output).toBe("second");
  });
});

describe("repeat guard signatures", () => {
  test("the same arguments to another tool are not a repeat; the same parsed value in another spelling is", async () => {
    const seen: string[] = [];
    const tool = (name: string): ToolDefinition => ({
      name,
      description: "",
      parameters: { type: "object" },
      handler: () => void seen.push(name),
    });
    const model = new ScriptedModel([
      call("1", "a", '{"x":1}'),
      call("2", "b", '{"x":1}'),
      call("3", "a", '{"x":1}'),
      call("4", "a", '{ "x": 1 }'),
      call("5", "a", '{"x":1.0}'),
      text("unreachable"),
    ]);
    const agent = createAgent({ model, tools: [tool("a"), tool("b")] });
    const r = await agent.run("go");
    expect(r.stop_reason).toBe("repeated_tool_call");
    expect(r.turns).toBe(5);
    expect(seen).toEqual(["a", "b", "a", "a"]);
  });
});

describe("the assistant message a sink receives", () => {
  test("is frozen through its calls", async () => {
    const events: AgentEvent[] = [];
    const model = new ScriptedModel([call("c1", "echo", { text: "a" }), text("done")]);
    const agent = createAgent({ model, tools: [echo as never], sinks: [(e) => void events.push(e)] });
    await agent.run("go");
    const done = events.find((e) => e.kind === "message_completed" && e.message.tool_calls.length > 0) as Extract<
      AgentEvent,
      { kind: "message_completed" }
    >;
    expect(Object.isFrozen(done.message)).toBe(true);
    expect(Object.isFrozen(done.message.tool_calls)).toBe(true);
    expect(Object.isFrozen(done.message.tool_calls[0])).toBe(true);
  });
});
