/** The agent driven by the providers' public ScriptedModel (JSONL scripts), with the runtime's built-in tools. */
import { describe, expect, test } from "bun:test";
import { createAgent } from "../../src/agent/index.ts";
import { ScriptedModel } from "../../src/providers/scripted.ts";
import { createRuntime } from "../../src/runtime/runtime.ts";
import { Recorder } from "../support/agent.ts";

function jsonl(...lines: unknown[]): string {
  return lines.map((l) => JSON.stringify(l)).join("\n") + "\n";
}

describe("agent + ScriptedModel", () => {
  test("built-in echo, a malformed call the model corrects, then a streamed answer", async () => {
    const model = ScriptedModel.fromJsonl(
      jsonl(
        {
          content: null,
          tool_calls: [{ id: "c1", name: "echo", arguments: '{"message":"hi","message":"again"}' }],
          usage: { input_tokens: 10, output_tokens: 5 },
        },
        {
          content: null,
          tool_calls: [{ id: "c2", name: "echo", arguments: '{"message":"hi"}' }],
          usage: { input_tokens: 20, output_tokens: 5 },
        },
        { content: "All done.", thinking: "wrap up", chunk_size: 4, usage: { input_tokens: 30, output_tokens: 3 } },
      ),
    );
    const runtime = createRuntime();
    const rec = new Recorder();
    const agent = createAgent({ model, runtime, sinks: [rec.sink], systemPrompt: "You are terse." });
    const r = await agent.run("echo hi");
    expect(r).toMatchObject({ status: "completed", stop_reason: "text_response", output: "All done.", turns: 3 });
    expect(r.usage).toMatchObject({
      input_tokens: 60,
      output_tokens: 13,
      total_tokens: 73,
      request_count: 3,
      reported_request_count: 3,
      complete: true,
    });
    const toolMsgs = agent.messages.filter((m) => m.role === "tool").map((m) => JSON.parse(m.content as string));
    expect(toolMsgs[0]).toMatchObject({ status: "error", tool: "echo", code: "JSON_DUPLICATE_KEY" });
    expect(toolMsgs[0].error).toMatch(/^duplicate key "message" at offset \d+ \(line 1, column \d+\)$/);
    expect(toolMsgs[1]).toEqual({ message: "hi" });
    expect(
      rec
        .of("assistant_text_delta")
        .map((e) => e.delta)
        .join(""),
    ).toBe("All done.");
    expect(
      rec
        .of("assistant_thinking_delta")
        .map((e) => e.delta)
        .join(""),
    ).toBe("wrap up");
    expect(model.requests[0].messages[0]).toEqual({ role: "system", content: "You are terse." });
    expect(model.requests[0].tools.map((t) => t.name)).toEqual(["echo", "read_file"]);
  });

  test("abort during a slow scripted turn ends cancelled/external_abort", async () => {
    const model = new ScriptedModel([{ content: "too slow", delay_ms: 600_000 }]);
    const rec = new Recorder();
    const agent = createAgent({ model, sinks: [rec.sink] });
    const p = agent.run("wait");
    await rec.waitFor("turn_started");
    expect(agent.abort("stop now")).toBe(true);
    expect(await p).toMatchObject({ status: "cancelled", stop_reason: "external_abort", error: "stop now" });
    expect(rec.lifecycle()).toEqual(["agent_started", "turn_started", "turn_completed", "agent_finished"]);
  });

  test("a scripted provider error is a runtime_error run", async () => {
    const model = new ScriptedModel([{ error: { kind: "rate_limit", message: "slow down" } }]);
    const r = await createAgent({ model }).run("x");
    expect(r).toMatchObject({ status: "failed", stop_reason: "runtime_error" });
    expect(r.error).toContain("slow down");
  });
});
