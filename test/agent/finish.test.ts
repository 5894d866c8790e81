/**
 * A model answer that the provider cut off (finish_reason `length` or
 * `content_filter`) ends the run `failed` with its own stop reason; its tool
 * calls are not run, but answered, so the history stays well formed.
 */
import { describe, expect, test } from "bun:test";
import { createAgent } from "../../src/agent/index.ts";
import { ScriptedModel } from "../../src/providers/scripted.ts";
import { createRuntime } from "../../src/runtime/runtime.ts";
import type { ToolDefinition } from "../../src/tools/definition.ts";
import { Recorder } from "../support/agent.ts";

function countingTool(calls: unknown[]): ToolDefinition<{ text: string }> {
  return {
    name: "write_note",
    description: "records its argument",
    parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
    effect: "read_only",
    handler: (args) => {
      calls.push(args);
      return { ok: true };
    },
  };
}

describe("finish_reason length and content_filter", () => {
  test("length: failed / max_tokens, the partial text is the output, and the run can be continued", async () => {
    const model = new ScriptedModel([{ content: "The answer starts here and", finish_reason: "length" }, { content: " ends here." }]);
    const rec = new Recorder();
    const agent = createAgent({ model, sinks: [rec.sink] });
    const r = await agent.run("explain");
    expect(r).toMatchObject({ status: "failed", stop_reason: "max_tokens", turns: 1, output: "The answer starts here and" });
    expect(r.error).toContain('finish_reason "length"');
    expect(rec.lifecycle()).toEqual(["agent_started", "turn_started", "message_completed", "turn_completed", "agent_finished"]);
    expect(rec.of("agent_finished")[0]!.result.stop_reason).toBe("max_tokens");
    // The cut-off answer is kept in the history, and continuing asks the model to go on.
    expect(agent.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
    expect(agent.canContinue).toBe(true);
    expect(await agent.continueRun()).toMatchObject({ status: "completed", stop_reason: "text_response", output: " ends here." });
  });

  test("content_filter: failed / content_filter, not continuable", async () => {
    const model = new ScriptedModel([{ content: null, finish_reason: "content_filter" }]);
    const agent = createAgent({ model });
    const r = await agent.run("something filtered");
    expect(r).toMatchObject({ status: "failed", stop_reason: "content_filter", output: null });
    expect(r.error).toContain("content filter");
    expect(agent.continueRejectionReason).toBe("unsupported_stop_reason");
  });

  test("the tool calls of a cut-off answer are never executed; each is answered as not run", async () => {
    const ran: unknown[] = [];
    const runtime = createRuntime({ builtins: false, tools: [countingTool(ran)] });
    const model = new ScriptedModel([
      {
        content: null,
        tool_calls: [
          { id: "c1", name: "write_note", arguments: '{"text":"whole"}' },
          { id: "c2", name: "write_note", arguments: '{"text":"half' },
        ],
        finish_reason: "length",
      },
    ]);
    const rec = new Recorder();
    const agent = createAgent({ model, runtime, sinks: [rec.sink] });
    const r = await agent.run("take notes");
    expect(r).toMatchObject({ status: "failed", stop_reason: "max_tokens" });
    expect(r.error).toContain("2 tool call(s) were not run");
    expect(ran).toEqual([]);
    const done = rec.of("tool_completed");
    expect(done.map((e) => e.tool_call.id)).toEqual(["c1", "c2"]);
    for (const e of done) {
      expect(e.result.cancelled).toBe(false);
      expect(JSON.parse(e.result.messages[0]!.content)).toMatchObject({ status: "not_run", tool: "write_note" });
    }
    // Every call has its answer: the run can be continued.
    expect(agent.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "tool"]);
    expect(agent.continueRejectionReason).toBeNull();
  });

  test("stop, tool_calls or no finish reason change nothing", async () => {
    const model = new ScriptedModel([
      { content: null, tool_calls: [{ id: "c1", name: "echo", arguments: '{"a":1}' }], finish_reason: "tool_calls" },
      { content: "done", finish_reason: "stop" },
    ]);
    const r = await createAgent({ model, runtime: createRuntime() }).run("go");
    expect(r).toMatchObject({ status: "completed", stop_reason: "text_response", output: "done" });
  });

  test("a script's finish_reason is checked", () => {
    expect(() => new ScriptedModel([{ content: "x", finish_reason: "truncated" }])).toThrow(
      'turn 1: "finish_reason" must be one of stop, tool_calls, length, content_filter, got "truncated"',
    );
    expect(() => new ScriptedModel([{ content: "x", finish_reason: 3 }])).toThrow('"finish_reason" must be one of');
  });
});
