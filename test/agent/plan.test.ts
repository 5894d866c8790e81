/**
 * The planning loop: the `update_plan` tool in a real agent run with a
 * ScriptedModel (plan written first, steps advance, final checklist all
 * done), its events, its refusals of bad plans, restoring a plan from a
 * conversation, and the checklist renderer.
 */
import { describe, expect, test } from "bun:test";
import { createAgent, type AgentEvent } from "../../src/agent/index.ts";
import {
  checkPlan,
  createPlanTool,
  PLAN_PROMPT,
  PLAN_TOOL_NAME,
  planFromMessages,
  renderPlan,
  type Plan,
  type PlanStepStatus,
} from "../../src/agent/plan.ts";
import { ScriptedModel } from "../../src/providers/scripted.ts";
import { createRuntime } from "../../src/runtime/index.ts";
import { ruleBasedPolicy } from "../../src/runtime/middleware/index.ts";

const TITLES = ["Read the notes", "Summarise them", "Report"];

function planCall(id: string, statuses: PlanStepStatus[], titles = TITLES) {
  const steps = statuses.map((status, i) => ({ title: titles[i]!, status }));
  return { id, name: PLAN_TOOL_NAME, arguments: JSON.stringify({ steps }) };
}

function setup(turns: unknown[], middleware: Parameters<typeof createRuntime>[0] = {}) {
  const changes: Plan[] = [];
  const planner = createPlanTool({ onChange: (p) => changes.push(p) });
  const runtime = createRuntime(middleware);
  runtime.registry.register(planner.tool);
  const model = new ScriptedModel(turns);
  const events: AgentEvent[] = [];
  const agent = createAgent({ model, runtime, systemPrompt: PLAN_PROMPT, sinks: [(e) => void events.push(e)] });
  return { planner, changes, model, events, agent };
}

describe("update_plan in an agent run", () => {
  test("the plan is written first, its steps advance, and the final checklist is all done", async () => {
    const { planner, changes, model, events, agent } = setup([
      { content: null, tool_calls: [planCall("p1", ["in_progress", "pending", "pending"])] },
      { content: null, tool_calls: [{ id: "e1", name: "echo", arguments: '{"note":"reading"}' }] },
      { content: null, tool_calls: [planCall("p2", ["done", "in_progress", "pending"])] },
      { content: null, tool_calls: [planCall("p3", ["done", "done", "in_progress"])] },
      { content: null, tool_calls: [planCall("p4", ["done", "done", "done"])] },
      { content: "All three steps are done." },
    ]);
    const result = await agent.run("Summarise the notes");
    expect(result.status).toBe("completed");
    expect(result.stop_reason).toBe("text_response");

    // The first tool the model called is the plan, and the model was told to plan first.
    const started = events.filter((e) => e.kind === "tool_started").map((e) => (e as { tool_call: { name: string } }).tool_call.name);
    expect(started[0]).toBe(PLAN_TOOL_NAME);
    expect(model.requests[0]!.messages[0]).toEqual({ role: "system", content: PLAN_PROMPT });
    expect(model.requests[0]!.tools.map((t) => t.name)).toContain(PLAN_TOOL_NAME);

    // Each accepted plan is a tool_progressed event carrying the whole plan, in order.
    const progressed = events
      .filter((e) => e.kind === "tool_progressed")
      .map((e) => (e as { update: { message: string; data: { plan: Plan } } }).update);
    expect(progressed.map((u) => u.message)).toEqual(["plan updated", "plan updated", "plan updated", "plan updated"]);
    const statuses = progressed.map((u) => u.data.plan.steps.map((s) => s.status).join(","));
    expect(statuses).toEqual(["in_progress,pending,pending", "done,in_progress,pending", "done,done,in_progress", "done,done,done"]);
    expect(changes.map((p) => p.steps.map((s) => s.status).join(","))).toEqual(statuses);
    expect(planner.plan).toEqual({ steps: TITLES.map((title) => ({ title, status: "done" as const })) });
    expect(renderPlan(planner.plan!)).toEqual(["Plan (3/3 done)", "  [x] Read the notes", "  [x] Summarise them", "  [x] Report"]);

    // The model sees a summary of each update.
    const toolMessages = agent.messages.filter((m) => m.role === "tool");
    expect(JSON.parse(toolMessages.at(-1)!.content)).toEqual({ updated: true, total: 3, done: 3, in_progress: 0, pending: 0 });
    await agent.shutdown();
  });

  test("a plan with two steps in progress is refused with a pointer, and the previous plan stays", async () => {
    const { planner, events, agent } = setup([
      { content: null, tool_calls: [planCall("p1", ["in_progress", "pending", "pending"])] },
      { content: null, tool_calls: [planCall("p2", ["in_progress", "in_progress", "pending"])] },
      { content: "ok" },
    ]);
    const result = await agent.run("go");
    expect(result.status).toBe("completed");
    const bad = agent.messages.filter((m) => m.role === "tool").at(-1)!;
    const payload = JSON.parse(bad.content);
    expect(payload.status).toBe("error");
    expect(payload.code).toBe("INVALID_ARGUMENTS");
    expect(payload.error).toContain("/steps/1/status");
    expect(payload.error).toContain("at most one step may be in_progress");
    expect(planner.plan!.steps.map((s) => s.status)).toEqual(["in_progress", "pending", "pending"]);
    expect(events.filter((e) => e.kind === "tool_progressed").length).toBe(1);
    await agent.shutdown();
  });

  test("schema violations (unknown status, missing title, extra member, empty list) never change the plan", async () => {
    const bad = [
      { steps: [{ title: "a", status: "started" }] },
      { steps: [{ status: "pending" }] },
      { steps: [{ title: "a", status: "pending", owner: "me" }] },
      { steps: [] },
      { steps: [{ title: "a", status: "pending" }], extra: 1 },
      { plan: "do it" },
    ];
    const { planner, agent } = setup([
      ...bad.map((args, i) => ({ content: null, tool_calls: [{ id: `b${i}`, name: PLAN_TOOL_NAME, arguments: JSON.stringify(args) }] })),
      { content: "gave up" },
    ]);
    const result = await agent.run("go");
    expect(result.status).toBe("completed");
    const payloads = agent.messages.filter((m) => m.role === "tool").map((m) => JSON.parse(m.content));
    expect(payloads.length).toBe(bad.length);
    for (const p of payloads) {
      expect(p.status).toBe("error");
      expect(p.code).toBe("invalid_tool_arguments");
    }
    expect(planner.plan).toBeNull();
    await agent.shutdown();
  });

  test("the plan tool is read_only: a policy that asks about side-effecting tools lets it through without an approver", async () => {
    const gate = ruleBasedPolicy({ rules: [{ id: "reads", action: "allow", effects: ["read_only"] }], defaultAction: "require_approval" });
    const { planner, agent } = setup([{ content: null, tool_calls: [planCall("p1", ["done", "done", "done"])] }, { content: "done" }], {
      middleware: [gate],
    });
    expect((await agent.run("go")).status).toBe("completed");
    expect(planner.plan!.steps.every((s) => s.status === "done")).toBe(true);
    await agent.shutdown();
  });
});

describe("update_plan's schema on the wire", () => {
  // The keywords OpenAI's strict mode (structured outputs) accepts in a function's schema.
  const STRICT_KEYWORDS = new Set([
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
    "description",
    "title",
    "anyOf",
    "$defs",
    "$ref",
    "minItems",
    "maxItems",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
  ]);
  function keywords(schema: unknown, out: Set<string>, inProperties = false): Set<string> {
    if (typeof schema !== "object" || schema === null) return out;
    if (Array.isArray(schema)) {
      for (const v of schema) keywords(v, out); // anyOf members (enum and required hold plain values)
      return out;
    }
    for (const [k, v] of Object.entries(schema)) {
      if (k === "enum" || k === "required" || k === "const") {
        out.add(k);
        continue;
      }
      if (!inProperties) out.add(k);
      keywords(v, out, !inProperties && k === "properties");
    }
    return out;
  }

  test("strict, with only keywords strict mode accepts (no minLength/maxLength); bad titles still go back to the model", async () => {
    const { tool } = createPlanTool();
    expect(tool.strict).toBe(true);
    const used = [...keywords(tool.parameters, new Set())];
    expect(used.filter((k) => !STRICT_KEYWORDS.has(k))).toEqual([]);
    const { agent, events } = setup([
      {
        content: null,
        tool_calls: [{ id: "b1", name: PLAN_TOOL_NAME, arguments: JSON.stringify({ steps: [{ title: "  ", status: "pending" }] }) }],
      },
      {
        content: null,
        tool_calls: [
          { id: "b2", name: PLAN_TOOL_NAME, arguments: JSON.stringify({ steps: [{ title: "x".repeat(201), status: "pending" }] }) },
        ],
      },
      { content: "gave up" },
    ]);
    expect((await agent.run("plan")).status).toBe("completed");
    const answers = events
      .filter((e) => e.kind === "tool_completed")
      .map((e) => JSON.parse((e as { result: { messages: { content: string }[] } }).result.messages[0]!.content));
    expect(answers).toEqual([
      expect.objectContaining({ status: "error", code: "INVALID_ARGUMENTS", error: expect.stringContaining("/steps/0/title") }),
      expect.objectContaining({ status: "error", code: "INVALID_ARGUMENTS", error: expect.stringContaining("/steps/0/title") }),
    ]);
  });
});

describe("plan state helpers", () => {
  test("planFromMessages returns the last plan the tool accepted, skipping refused and malformed calls", () => {
    const good = JSON.stringify({
      steps: [
        { title: "one", status: "done" },
        { title: "two", status: "in_progress" },
      ],
    });
    const refused = JSON.stringify({
      steps: [
        { title: "x", status: "in_progress" },
        { title: "y", status: "in_progress" },
      ],
    });
    const plan = planFromMessages([
      { role: "user", content: "go" },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "a", type: "function", function: { name: PLAN_TOOL_NAME, arguments: good } }],
      },
      { role: "tool", tool_call_id: "a", content: '{"updated":true,"total":2,"done":1,"in_progress":1,"pending":0}' },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "b", type: "function", function: { name: PLAN_TOOL_NAME, arguments: refused } }],
      },
      { role: "tool", tool_call_id: "b", content: '{"status":"error","tool":"update_plan","code":"INVALID_ARGUMENTS","error":"…"}' },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "c", type: "function", function: { name: PLAN_TOOL_NAME, arguments: "{not json" } }],
      },
      { role: "tool", tool_call_id: "c", content: '{"updated":true}' },
    ]);
    expect(plan).toEqual({
      steps: [
        { title: "one", status: "done" },
        { title: "two", status: "in_progress" },
      ],
    });
    expect(planFromMessages([{ role: "user", content: "hi" }])).toBeNull();
  });

  test("checkPlan names the offending member", () => {
    const cases: [unknown, string][] = [
      [null, ""],
      [[], ""],
      [{ steps: "x" }, "/steps"],
      [{ steps: [] }, "/steps"],
      [{ steps: Array.from({ length: 31 }, () => ({ title: "t", status: "pending" })) }, "/steps"],
      [{ steps: [{ title: "  ", status: "pending" }] }, "/steps/0/title"],
      [{ steps: [{ title: "a", status: "pending" }, 7] }, "/steps/1"],
      [{ steps: [{ title: "a", status: "pending", "a/b": 1 }] }, "/steps/0/a~1b"],
      [{ steps: [{ title: "x".repeat(201), status: "pending" }] }, "/steps/0/title"],
    ];
    for (const [value, pointer] of cases) {
      const r = checkPlan(value);
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.problem.pointer).toBe(pointer);
    }
    const ok = checkPlan({ steps: [{ title: " trimmed ", status: "pending" }] });
    expect(ok).toEqual({ ok: true, plan: { steps: [{ title: "trimmed", status: "pending" }] } });
  });

  test("set() validates, and the tracker hands out copies", () => {
    const t = createPlanTool();
    expect(() => t.set({ steps: [] })).toThrow(/\/steps/);
    t.set({ steps: [{ title: "a", status: "pending" }] });
    const p = t.plan!;
    p.steps[0]!.status = "done";
    expect(t.plan!.steps[0]!.status).toBe("pending");
    t.set(null);
    expect(t.plan).toBeNull();
  });

  test("renderPlan marks each status and keeps titles on one line", () => {
    expect(
      renderPlan({
        steps: [
          { title: "a\nb", status: "pending" },
          { title: "c", status: "in_progress" },
          { title: "d", status: "done" },
        ],
      }),
    ).toEqual(["Plan (1/3 done)", "  [ ] a b", "  [~] c", "  [x] d"]);
  });
});
