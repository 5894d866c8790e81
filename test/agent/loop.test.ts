import { describe, expect, test } from "bun:test";
import { createAgent, type AgentEvent } from "../../src/agent/index.ts";
import { toolOutcome, type ToolControl, type ToolDefinition } from "../../src/tools/definition.ts";
import { ScriptedModel } from "../../src/providers/scripted.ts";
import { call, calls, deferred, quietLogger, Recorder, type Step, text } from "../support/agent.ts";
import { createRuntime } from "../../src/runtime/runtime.ts";

const echo: ToolDefinition<{ text: string }> = {
  name: "echo",
  description: "echo text",
  parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  handler: ({ text }) => ({ status: "success", text }),
};

function setup(steps: Step[], opts: Partial<Parameters<typeof createAgent>[0]> = {}) {
  const model = new ScriptedModel(steps);
  const rec = new Recorder();
  const agent = createAgent({ model, tools: [echo as never], sinks: [rec.sink], agentId: "a1", ...opts });
  return { model, rec, agent };
}

describe("events (harness tests 1-4)", () => {
  test("1: a text run emits ordered, correlated, frozen events", async () => {
    const { rec, agent } = setup([text("hello")]);
    const result = await agent.run("say hi");
    // the streamed text arrives as one delta event inside the turn, before message_completed
    expect(rec.kinds()).toEqual([
      "agent_started",
      "turn_started",
      "assistant_text_delta",
      "message_completed",
      "turn_completed",
      "agent_finished",
    ]);
    expect(rec.lifecycle()).toEqual(["agent_started", "turn_started", "message_completed", "turn_completed", "agent_finished"]);
    expect(rec.events.map((e) => e.sequence)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(new Set(rec.events.map((e) => e.run_id)).size).toBe(1);
    expect(rec.events[0].run_id).toMatch(/^[0-9a-f]{32}$/);
    for (const e of rec.events) {
      expect(e.agent_id).toBe("a1");
      expect(Object.isFrozen(e)).toBe(true);
    }
    const finished = rec.of("agent_finished")[0];
    expect(finished.result).toBe(result);
    expect(result).toMatchObject({ status: "completed", stop_reason: "text_response", turns: 1, output: "hello", error: null });
    expect(rec.of("agent_started")[0].task).toBe("say hi");
    // a second run has a new run id and starts its sequence again at 1
    const before = rec.events.length;
    await agent.run("again").catch(() => {});
    expect(rec.events[before].sequence).toBe(1);
    expect(rec.events[before].run_id).not.toBe(rec.events[0].run_id);
  });

  test("2: tool events sit between message_completed and turn_completed", async () => {
    const { rec, agent, model } = setup([call("c1", "echo", { text: "hi" }), text("done")]);
    const result = await agent.run("echo hi");
    expect(rec.lifecycle()).toEqual([
      "agent_started",
      "turn_started",
      "message_completed",
      "tool_started",
      "tool_completed",
      "turn_completed",
      "turn_started",
      "message_completed",
      "turn_completed",
      "agent_finished",
    ]);
    expect(result).toMatchObject({ status: "completed", stop_reason: "text_response", turns: 2, output: "done" });
    const completed = rec.of("tool_completed")[0];
    expect(completed.result.control).toBe("continue");
    expect(completed.result.messages).toEqual([{ role: "tool", tool_call_id: "c1", content: '{"status":"success","text":"hi"}' }]);
    // the second request carries the assistant tool call and its result, without usage
    expect(model.requests[1].messages.slice(-2)).toEqual([
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "c1", type: "function", function: { name: "echo", arguments: '{"text":"hi"}' } }],
      },
      { role: "tool", tool_call_id: "c1", content: '{"status":"success","text":"hi"}' },
    ]);
    expect(model.requests[0].tools.map((t) => t.name)).toEqual(["echo"]);
  });

  test("3: a provider failure still completes the turn and run events", async () => {
    const { rec, agent } = setup([{ error: { kind: "provider_error", message: "upstream exploded" } }]);
    const result = await agent.run("x");
    expect(rec.kinds()).toEqual(["agent_started", "turn_started", "turn_completed", "agent_finished"]);
    expect(result).toMatchObject({ status: "failed", stop_reason: "runtime_error", turns: 1, output: null });
    expect(result.error).toContain("upstream exploded");
    expect(result.usage).toMatchObject({ request_count: 1, reported_request_count: 0, complete: false });
  });

  test("3b: context overflow from the provider ends as context_overflow", async () => {
    const { agent } = setup([{ error: { kind: "context_overflow", message: "too many tokens" } }]);
    expect(await agent.run("x")).toMatchObject({ status: "failed", stop_reason: "context_overflow" });
  });

  const cases: [ToolControl, string, string, string | null][] = [
    ["complete", "completed", "tool_completion", null],
    ["reject", "rejected", "tool_rejected", "tool execution was rejected"],
    ["cancel", "cancelled", "tool_cancelled", "tool execution was cancelled"],
  ];
  for (const [control, status, stop, error] of cases) {
    test(`4: tool control ${control} → ${status}/${stop}`, async () => {
      const finish: ToolDefinition = {
        name: "finish",
        description: "end",
        parameters: { type: "object" },
        handler: () => toolOutcome({ answer: 42 }, { control }),
      };
      const model = new ScriptedModel([call("c1", "finish", {}), text("never")]);
      const rec = new Recorder();
      const agent = createAgent({ model, tools: [finish], sinks: [rec.sink] });
      const result = await agent.run("go");
      expect(result).toMatchObject({ status, stop_reason: stop, turns: 1, output: '{"answer":42}', error });
      expect(rec.of("tool_completed")[0].result.control).toBe(control);
      expect(rec.of("tool_completed")[0].result.output).toBe('{"answer":42}');
      expect(rec.of("agent_finished")[0].result).toBe(result);
      expect(model.requests.length).toBe(1);
    });
  }
});

describe("repeat guard (harness test 5)", () => {
  test("the third identical call fails before execution", async () => {
    let n = 0;
    const t: ToolDefinition = { name: "look", description: "", parameters: { type: "object" }, handler: () => ++n };
    const model = new ScriptedModel([
      call("1", "look", '{"a":1,"b":2}'),
      call("2", "look", '{"b":2, "a":1}'),
      call("3", "look", '{"a":1,"b":2}'),
      text("no"),
    ]);
    const rec = new Recorder();
    const agent = createAgent({ model, tools: [t], sinks: [rec.sink] });
    const result = await agent.run("go");
    expect(n).toBe(2);
    expect(result).toMatchObject({ status: "failed", stop_reason: "repeated_tool_call", turns: 3 });
    expect(result.error).toContain("consecutive times");
    const last = rec.of("tool_completed").at(-1)!;
    expect(last.result.messages).toEqual([]);
    expect(last.result.error).toContain("consecutive times");
    expect(rec.kinds().slice(-3)).toEqual(["tool_completed", "turn_completed", "agent_finished"]);
    expect(agent.canContinue).toBe(false);
    expect(agent.continueRejectionReason).toBe("unsupported_stop_reason");
  });

  test("a different call in between resets the count; a new run resets it too", async () => {
    let n = 0;
    const t: ToolDefinition = { name: "look", description: "", parameters: { type: "object" }, handler: () => ++n };
    const model = new ScriptedModel([
      call("1", "look", "{}"),
      call("2", "look", '{"x":1}'),
      call("3", "look", "{}"),
      call("4", "look", "{}"),
      text("ok"),
      call("5", "look", "{}"),
      text("ok"),
    ]);
    const agent = createAgent({ model, tools: [t] });
    expect((await agent.run("go")).stop_reason).toBe("text_response");
    expect((await agent.run("again")).stop_reason).toBe("text_response");
    expect(n).toBe(5);
  });
});

describe("repeat guard: unparsable arguments", () => {
  test("identical invalid argument text counts as a repeat (raw-string signature)", async () => {
    const { agent, rec } = setup([call("1", "echo", "{oops"), call("2", "echo", "{oops"), call("3", "echo", "{oops")]);
    const r = await agent.run("go");
    expect(r.stop_reason).toBe("repeated_tool_call");
    expect(rec.of("tool_completed").map((e) => e.result.messages.length)).toEqual([1, 1, 0]);
  });
});

describe("explicit finish (harness test 6)", () => {
  test("plain text gets transient retry notes, then fails at the limit", async () => {
    const { agent, model } = setup([text("a"), text("b"), text("c")], { policy: { requireExplicitFinish: true } });
    const result = await agent.run("task");
    expect(result).toMatchObject({ status: "failed", stop_reason: "max_no_tool_responses", turns: 3 });
    expect(result.error).toContain("without a completing tool call");
    expect(model.requests.length).toBe(3);
    const notes = model.requests.slice(1).map((r) => r.messages.at(-1)!);
    expect(notes.every((m) => m.role === "system")).toBe(true);
    expect(notes[0].content).not.toBe(notes[1].content);
    expect(notes[1].content).toContain("Retry 2/3");
    expect(notes[0].content).not.toContain("Retry");
    // never stored in state; the first request has no retry note
    expect(agent.messages.some((m) => m.role === "system")).toBe(false);
    expect(model.requests[0].messages.filter((m) => m.role === "system").length).toBe(1); // the explicit-finish note
    expect(model.requests[0].messages.at(-1)).toEqual({ role: "user", content: "task" });
  });

  test("a completing tool ends an explicit-finish run", async () => {
    const done: ToolDefinition = {
      name: "done",
      description: "",
      parameters: { type: "object" },
      handler: () => toolOutcome("all good", { control: "complete" }),
    };
    const model = new ScriptedModel([text("thinking aloud"), call("c", "done", {})]);
    const agent = createAgent({ model, tools: [done], policy: { requireExplicitFinish: true }, systemPrompt: "Be useful." });
    expect(await agent.run("t")).toMatchObject({ status: "completed", stop_reason: "tool_completion", output: "all good", turns: 2 });
    expect(model.requests[0].messages[0].role).toBe("system");
    expect(model.requests[0].messages[0].content).toContain("Be useful.");
  });
});

describe("bad tool calls from the model (harness test 7, issue §3)", () => {
  const bad: [string, string, string, string][] = [
    ["invalid JSON", "{bad", "JSON_PARSE", "unexpected character 'b' at offset 1 (line 1, column 2)"],
    ["duplicate keys", '{"text":"a","text":"b"}', "JSON_DUPLICATE_KEY", 'duplicate key "text" at offset 12 (line 1, column 13)'],
    ["non-object", "[1,2]", "INVALID_ARGUMENTS", "tool arguments must be a JSON object, got an array"],
    [
      "empty string",
      "",
      "JSON_PARSE",
      "arguments are empty, expected a JSON object: unexpected end of data at offset 0 (line 1, column 1)",
    ],
  ];
  for (const [label, args, code, error] of bad) {
    test(`${label} becomes a tool message and the run goes on`, async () => {
      const { agent, model, rec } = setup([call("c1", "echo", args), text("recovered")]);
      const result = await agent.run("go");
      expect(result).toMatchObject({ status: "completed", stop_reason: "text_response", output: "recovered", turns: 2 });
      const content = JSON.stringify({ status: "error", tool: "echo", code, error });
      expect(model.requests[1].messages.at(-1)).toEqual({ role: "tool", tool_call_id: "c1", content });
      expect(rec.of("tool_completed")[0].result).toMatchObject({ control: "continue", error, cancelled: false });
    });
  }

  test("the contract example: duplicate key a", async () => {
    const t: ToolDefinition = { name: "x", description: "", parameters: { type: "object" }, handler: () => "unused" };
    const model = new ScriptedModel([call("c1", "x", '{"a":1, "a":2}'), text("ok")]);
    const agent = createAgent({ model, tools: [t] });
    await agent.run("go");
    expect(model.requests[1].messages.at(-1)!.content).toBe(
      '{"status":"error","tool":"x","code":"JSON_DUPLICATE_KEY","error":"duplicate key \\"a\\" at offset 8 (line 1, column 9)"}',
    );
  });

  test("non-object JSON mentions a JSON object (harness test 7)", async () => {
    const { agent, model } = setup([call("c1", "echo", '"just a string"'), text("ok")]);
    await agent.run("go");
    const msg = JSON.parse(model.requests[1].messages.at(-1)!.content as string);
    expect(msg.status).toBe("error");
    expect(msg.error).toContain("JSON object");
  });

  test("an unknown tool lists the available tools", async () => {
    const { agent, model } = setup([call("c1", "nope", {}), text("ok")]);
    expect((await agent.run("go")).stop_reason).toBe("text_response");
    expect(JSON.parse(model.requests[1].messages.at(-1)!.content as string)).toEqual({
      status: "error",
      tool: "nope",
      code: "UNKNOWN_TOOL",
      error: 'unknown tool "nope"; available tools: echo',
    });
  });

  test("schema failures go through dispatch validation and come back with their errors", async () => {
    const { agent, model } = setup([call("c1", "echo", { text: 5 }), text("ok")]);
    await agent.run("go");
    const msg = JSON.parse(model.requests[1].messages.at(-1)!.content as string);
    // The non-terminal payload of harness-contracts §6 (issue 4 §2).
    expect(msg).toEqual({
      status: "error",
      tool: "echo",
      code: "invalid_tool_arguments",
      errors: [{ path: "/text", keyword: "type", message: "value does not match the required type" }],
      truncated: false,
    });
  });

  test("a throwing handler is an ordinary tool result", async () => {
    const t: ToolDefinition = {
      name: "boom",
      description: "",
      parameters: { type: "object" },
      handler: () => {
        throw new Error("kaput");
      },
    };
    const model = new ScriptedModel([call("c1", "boom", {}), text("ok")]);
    const agent = createAgent({ model, tools: [t] });
    expect((await agent.run("go")).status).toBe("completed");
    expect(JSON.parse(model.requests[1].messages.at(-1)!.content as string)).toEqual({
      status: "error",
      tool: "boom",
      code: "TOOL_ERROR",
      error: "kaput",
    });
  });

  test("string results are sent as-is", async () => {
    const t: ToolDefinition = { name: "s", description: "", parameters: { type: "object" }, handler: async () => "plain text" };
    const model = new ScriptedModel([call("c1", "s", {}), text("ok")]);
    await createAgent({ model, tools: [t] }).run("go");
    expect(model.requests[1].messages.at(-1)!.content).toBe("plain text");
  });
});

describe("loop limits and hooks", () => {
  test("empty response fails", async () => {
    const { agent } = setup([{ content: "" }]);
    expect(await agent.run("x")).toMatchObject({ status: "failed", stop_reason: "empty_response" });
  });

  test("max_steps", async () => {
    const { agent } = setup([call("1", "echo", { text: "a" }), call("2", "echo", { text: "b" })], { policy: { maxSteps: 2 } });
    const r = await agent.run("x");
    expect(r).toMatchObject({ status: "failed", stop_reason: "max_steps", turns: 2 });
    expect(r.error).toContain("within 2 steps");
    const one = setup([call("1", "echo", { text: "a" })], { policy: { maxSteps: 1 } });
    expect((await one.agent.run("x")).error).toMatch(/within 1 step$/);
  });

  test("text and thinking deltas are events of the turn", async () => {
    const { agent, rec } = setup([{ content: "abcdef", thinking: "hmm", chunk_size: 2 }]);
    await agent.run("x");
    expect(rec.of("assistant_text_delta").map((e) => e.delta)).toEqual(["ab", "cd", "ef"]);
    // The scripted model streams thinking in chunk_size pieces too.
    expect(rec.of("assistant_thinking_delta").map((e) => e.delta)).toEqual(["hm", "m"]);
    expect(rec.kinds().indexOf("assistant_text_delta")).toBeLessThan(rec.kinds().indexOf("message_completed"));
  });

  test("afterTurn stop ends the run after the tool result, with its output; the run can be continued", async () => {
    const seen: number[] = [];
    const { agent, rec, model } = setup([call("1", "echo", { text: "a" }), text("after continue")], {
      hooks: {
        afterTurn: (snap) => {
          seen.push(snap.turn);
          expect(snap.messages.at(-1)!.role).toBe("tool");
          return { action: "stop", output: "stopped by hook" };
        },
      },
    });
    const r = await agent.run("x");
    expect(r).toMatchObject({ status: "completed", stop_reason: "behavior_stop", output: "stopped by hook", turns: 1 });
    expect(model.requests.length).toBe(1);
    expect(rec.kinds().slice(-2)).toEqual(["turn_completed", "agent_finished"]);
    expect(seen).toEqual([1]);
    expect(agent.canContinue).toBe(true);
  });

  test("abort interrupts a slow afterTurn hook", async () => {
    const entered = deferred();
    const { agent } = setup([call("1", "echo", { text: "a" })], {
      hooks: { afterTurn: () => (entered.resolve(), new Promise<never>(() => {})) },
    });
    const p = agent.run("x");
    await entered.promise;
    agent.abort();
    expect(await p).toMatchObject({ status: "cancelled", stop_reason: "external_abort", turns: 1 });
  });

  test("an invalid hook decision is a runtime error", async () => {
    const { agent } = setup([call("1", "echo", { text: "a" })], { hooks: [{ afterTurn: () => ({ action: "maybe" }) as never }] });
    const r = await agent.run("x");
    expect(r).toMatchObject({ status: "failed", stop_reason: "runtime_error" });
    expect(r.error).toContain("afterTurn");
  });

  test("a failing sink is logged and never changes the run", async () => {
    const warnings: string[] = [];
    const runtime = createRuntime({ builtins: false, tools: [echo as never], logger: quietLogger(warnings) });
    const rec = new Recorder();
    const agent = createAgent({
      model: new ScriptedModel([text("fine")]),
      runtime,
      sinks: [
        () => {
          throw new Error("sink down");
        },
        {
          handle: async () => {
            throw new Error("async sink down");
          },
        },
        rec.sink,
      ],
    });
    const r = await agent.run("x");
    expect(r).toMatchObject({ status: "completed", output: "fine" });
    expect(rec.kinds()).toHaveLength(6);
    expect(warnings.filter((w) => w === "agent event sink failed").length).toBe(12);
  });

  test("events() yields every event as an async iterable", async () => {
    const { agent } = setup([text("one")]);
    const it = agent.events();
    const got: AgentEvent[] = [];
    const reading = (async () => {
      for await (const e of it) {
        got.push(e);
        if (e.kind === "agent_finished") break;
      }
    })();
    await agent.run("x");
    await reading;
    expect(got.map((e) => e.kind)).toEqual([
      "agent_started",
      "turn_started",
      "assistant_text_delta",
      "message_completed",
      "turn_completed",
      "agent_finished",
    ]);
  });

  test("events(): a consumer that falls behind gets the buffered events, then an overflow error", async () => {
    const { agent } = setup([text("one")]);
    const it = agent.events({ bufferSize: 2 });
    await agent.run("x");
    expect((await it.next()).value?.kind).toBe("agent_started");
    expect((await it.next()).value?.kind).toBe("turn_started");
    await expect(it.next()).rejects.toThrow("fell more than 2 events behind");
    expect((await it.next()).done).toBe(true);
  });

  test("events(): concurrent next() calls get consecutive events", async () => {
    const { agent } = setup([text("one")]);
    const it = agent.events();
    const a = it.next();
    const b = it.next();
    await agent.run("x");
    expect([(await a).value?.sequence, (await b).value?.sequence]).toEqual([1, 2]);
    await it.return?.();
  });

  test("runtime and tools together are refused", () => {
    expect(() => createAgent({ model: new ScriptedModel([]), runtime: createRuntime({ builtins: false }), tools: [] })).toThrow(
      "either runtime or tools",
    );
  });

  test("events() ends at shutdown", async () => {
    const { agent } = setup([text("one")]);
    const it = agent.events();
    await agent.run("x");
    await agent.shutdown();
    const kinds: string[] = [];
    for await (const e of it) kinds.push(e.kind);
    expect(kinds).toHaveLength(6);
    await expect(agent.run("y")).rejects.toThrow("shut down");
    expect((await agent.events().next()).done).toBe(true);
  });
});
