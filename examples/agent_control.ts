/**
 * Run control in a library program, with scripted models (no network):
 * steering a run, a follow-up, continuing after a step limit, and aborting.
 * Each part prints what happened; docs/agent.md walks through it.
 *
 *   bun examples/agent_control.ts
 *   deno run --allow-read --allow-env examples/agent_control.ts
 */
import { createAgent, createRuntime, type AgentEvent } from "../src/mod.ts";
import type { FollowUpHandle } from "../src/entries/agent.ts";
import { ScriptedModel } from "../src/entries/testing.ts";

// The controls below are called from an event sink, at a known point of the
// run, so the program prints the same thing every time. From a UI you would
// call them whenever the user acts.

// 1. Steering: a message queued while the model answers is applied before
//    the next model request, so the model sees it and answers again.
{
  const model = new ScriptedModel([{ content: "Paris." }, { content: "Paris, on the Seine." }]);
  const kinds: string[] = [];
  const agent = createAgent({
    model,
    runtime: createRuntime(),
    sinks: [
      (e: AgentEvent) => {
        kinds.push(e.kind);
        if (e.kind === "assistant_text_delta" && e.turn === 1) console.log("steer:", agent.steer("Also name its river.").status);
      },
    ],
  });
  const result = await agent.run("What is the capital of France?");
  console.log("steered run:", result.status, result.turns, "turns,", JSON.stringify(result.output));
  console.log("events:", kinds.filter((k) => k !== "assistant_text_delta").join(" "));
  await agent.shutdown();
}

// 2. A follow-up runs after the current run, on the same conversation.
{
  const model = new ScriptedModel([{ content: "First answer." }, { content: "Second answer." }]);
  let handle: FollowUpHandle | undefined;
  const agent = createAgent({
    model,
    runtime: createRuntime(),
    sinks: [
      (e: AgentEvent) => {
        if (e.kind === "agent_started" && handle === undefined) handle = agent.followUp("second task");
      },
    ],
  });
  const first = await agent.run("first task");
  console.log("follow-up:", handle!.receipt.status);
  console.log("first:", first.output, "| follow-up:", (await handle!.wait()).output);
  console.log("messages:", agent.messages.map((m) => m.role).join(" "));
  await agent.shutdown();
}

// 3. A run stopped by its step limit can be continued (no new user message).
{
  const call = (id: string) => ({ content: null, tool_calls: [{ id, name: "echo", arguments: `{"step":"${id}"}` }] });
  const model = new ScriptedModel([call("a"), call("b"), { content: "Done after three steps." }]);
  const agent = createAgent({ model, runtime: createRuntime(), policy: { maxSteps: 2 } });
  const stopped = await agent.run("work in steps");
  console.log("limited:", stopped.status, stopped.stop_reason, "| can continue:", agent.canContinue);
  const resumed = await agent.continueRun();
  console.log("continued:", resumed.status, JSON.stringify(resumed.output));
  await agent.shutdown();
}

// 4. abort() ends the active run at once: cancelled / external_abort.
{
  const model = new ScriptedModel([{ content: "too late", delay_ms: 60_000 }]);
  const agent = createAgent({
    model,
    runtime: createRuntime(),
    sinks: [
      (e: AgentEvent) => {
        if (e.kind === "turn_started") agent.abort("the user changed their mind");
      },
    ],
  });
  const result = await agent.run("a long task");
  console.log("aborted:", result.status, result.stop_reason, JSON.stringify(result.error));
  await agent.shutdown();
}
