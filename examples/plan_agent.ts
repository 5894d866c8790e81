/**
 * The planning loop in a library program: an agent with the update_plan tool
 * and a scripted model; the checklist is printed each time the plan changes.
 *
 *   bun examples/plan_agent.ts
 */
import { createAgent, createPlanTool, createRuntime, PLAN_PROMPT } from "../src/mod.ts";
import { renderPlan } from "../src/entries/agent.ts";
import { ScriptedModel } from "../src/entries/testing.ts";

const step = (id: string, statuses: string[]) => ({
  content: null,
  tool_calls: [
    {
      id,
      name: "update_plan",
      arguments: JSON.stringify({ steps: ["Look around", "Answer"].map((title, i) => ({ title, status: statuses[i] })) }),
    },
  ],
});

const planner = createPlanTool({ onChange: (plan) => console.log(renderPlan(plan).join("\n")) });
const runtime = createRuntime();
runtime.registry.register(planner.tool);
const model = new ScriptedModel([
  step("p1", ["in_progress", "pending"]),
  { content: null, tool_calls: [{ id: "e1", name: "echo", arguments: '{"looked":true}' }] },
  step("p2", ["done", "in_progress"]),
  step("p3", ["done", "done"]),
  { content: "All done." },
]);
const agent = createAgent({ model, runtime, systemPrompt: PLAN_PROMPT });
const result = await agent.run("Look around, then answer");
console.log(result.status, result.output ?? "");
await agent.shutdown();
