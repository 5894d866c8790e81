/**
 * The run loop is a function of its context: no Agent, no class state. Its
 * owner supplies the history, the request context, compaction and skills as
 * hooks; the loop only calls them.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { EventEmitter, type AgentEvent } from "../../src/agent/events.ts";
import { type LoopContext, type LoopHooks, runLoop } from "../../src/agent/loop.ts";
import { ToolExecutor } from "../../src/agent/tools.ts";
import { type AgentMessage, resolvePolicy, UsageAccumulator } from "../../src/agent/types.ts";
import { ScriptedModel } from "../../src/providers/scripted.ts";
import type { ChatMessage } from "../../src/providers/types.ts";
import { createRuntime } from "../../src/runtime/runtime.ts";

function harness(script: ConstructorParameters<typeof ScriptedModel>[0], extra: Partial<LoopHooks> = {}, steering: string[] = []) {
  const history: AgentMessage[] = [];
  const events: AgentEvent[] = [];
  const calls: string[] = [];
  const runtime = createRuntime({
    builtins: false,
    tools: [{ name: "echo", description: "echo", parameters: { type: "object" }, handler: (a: Record<string, unknown>) => a }],
  });
  const policy = resolvePolicy({ maxSteps: 5 });
  const emitter = new EventEmitter("a1", [(e: AgentEvent) => void events.push(e)], runtime.logger);
  const runId = emitter.beginRun();
  const hooks: LoopHooks = {
    append: (m) => void history.push(m),
    messages: () => structuredClone(history),
    context: (n) => {
      calls.push(`context:${n}`);
      return [
        { role: "system", content: "request-only" } as ChatMessage,
        ...history.map((m) => ({ ...m, usage: undefined }) as unknown as ChatMessage),
      ];
    },
    tools: () => runtime.registry.list().map((t) => ({ name: t.name, description: t.description, parameters: t.parameters })),
    ...extra,
  };
  const controller = new AbortController();
  const queue = [...steering];
  const ctx: LoopContext = {
    agentId: "a1",
    runId,
    task: "go",
    model: new ScriptedModel(script),
    policy,
    executor: new ToolExecutor(runtime, policy, emitter, (m) => void history.push(m)),
    behaviors: [],
    hooks,
    usage: new UsageAccumulator(),
    counters: { turns: 0 },
    signal: controller.signal,
    abortReason: () => "stopped",
    drainSteering: () => queue.splice(0).map((content) => ({ input_id: "s", kind: "steering" as const, content })),
    hasSteering: () => queue.length > 0,
    emit: (e) => emitter.emit(e),
  };
  history.push({ role: "user", content: "go" });
  return { ctx, history, events, calls, model: ctx.model as ScriptedModel, controller };
}

describe("runLoop", () => {
  test("runs turns to a stop reason through its hooks alone", async () => {
    const h = harness([{ content: null, tool_calls: [{ id: "c1", name: "echo", arguments: '{"n":1}' }] }, { content: "done" }]);
    const res = await runLoop(h.ctx);
    expect(res).toMatchObject({ status: "completed", stop_reason: "text_response", output: "done", turns: 2 });
    expect(h.history.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
    expect(h.calls).toEqual(["context:0", "context:0"]);
    // The request is what the context hook built (its request-only message included), never stored.
    expect(h.model.requests[1]!.messages[0]).toEqual({ role: "system", content: "request-only" });
    expect(h.history.some((m) => m.content === "request-only")).toBe(false);
    expect(h.events.map((e) => e.kind)).toContain("tool_completed");
  });

  test("steering goes through append and onSteering; pressure and compaction through their hooks", async () => {
    const seen: string[] = [];
    const h = harness(
      [{ content: "done" }],
      {
        onSteering: async () => void seen.push("onSteering"),
        evaluatePressure: async (turn) => {
          seen.push(`pressure:${turn}`);
          return { can_compact: false } as never;
        },
        compact: async (trigger) => {
          seen.push(`compact:${trigger}`);
          return "skipped";
        },
        autoCompaction: { enabled: true, compactOnPressure: true, recoverOnOverflow: true, maxOverflowRetries: 1 },
      },
      ["also this"],
    );
    const res = await runLoop(h.ctx);
    expect(res).toMatchObject({ status: "completed", output: "done" });
    expect(seen).toEqual(["onSteering", "pressure:1", "compact:pressure"]);
    expect(h.history[1]).toEqual({ role: "user", content: "also this" });
  });

  test("an aborted signal ends the loop by throwing, for the owner to map", async () => {
    const h = harness([{ content: "never" }]);
    h.controller.abort();
    await expect(runLoop(h.ctx)).rejects.toThrow("stopped");
  });

  test("the loop imports no skills or context code (types only)", () => {
    const src = readFileSync(join(import.meta.dir, "../../src/agent/loop.ts"), "utf8");
    const imports = [...src.matchAll(/^import (type )?[^;]*? from "([^"]+)";/gms)].map((m) => ({ type: m[1] !== undefined, from: m[2]! }));
    for (const i of imports) {
      if (/\/(skills|context)\//.test(i.from)) expect({ from: i.from, typeOnly: i.type }).toEqual({ from: i.from, typeOnly: true });
      expect(i.from).not.toMatch(/\.\/agent\.ts$/);
    }
  });
});
