// Writing a run's records is part of the run (issue 30): a storage whose
// appends fail at chosen points, in process, over the JSONL and the memory
// storage. The run stops at the failed write, ends failed / store_failed with
// the store error's code, calls no tool after it, and nothing after the
// recorder (a sink, an events() subscriber) ever hears `completed`.
import { describe, expect, test } from "bun:test";
import { type AgentEvent, createAgent } from "../../src/agent/index.ts";
import { ScriptedModel } from "../../src/providers/scripted.ts";
import type { ToolDefinition } from "../../src/tools/definition.ts";
import { JsonlSessionStorage, MemorySessionStorage, SessionConflictError, SessionRecorder } from "../../src/session/index.ts";
import type { JournalStorage } from "../../src/session/journal.ts";
import { errnoError, failAppends, pgShutdownError } from "../support/failing-storage.ts";
import { tmpPerTest } from "../support/tmp.ts";

const tmp = tmpPerTest("agentcore-store-failure-");

const STORAGES: [string, () => JournalStorage][] = [
  ["memory", () => new MemorySessionStorage()],
  ["jsonl", () => new JsonlSessionStorage(tmp())],
];

/** A tool that counts its calls. */
function counter(): { tool: ToolDefinition; calls: () => number } {
  let n = 0;
  return {
    tool: { name: "bump", description: "", effect: "side_effecting", parameters: { type: "object" }, handler: () => ++n },
    calls: () => n,
  };
}

/** Two tool turns, then an answer: run_started, message, tool, message, tool, message, run_finished. */
const SCRIPT = [
  { content: null, tool_calls: [{ id: "c1", name: "bump", arguments: "{}" }] },
  { content: null, tool_calls: [{ id: "c2", name: "bump", arguments: "{}" }] },
  { content: "done" },
];

async function runWith(storage: JournalStorage, options: { retryDelaysMs?: number[] } = {}) {
  const { tool, calls } = counter();
  const model = new ScriptedModel(SCRIPT);
  const recorder = new SessionRecorder("s1", storage, "main", options);
  const after: AgentEvent[] = [];
  const agent = createAgent({ model, tools: [tool], sinks: [recorder, (e) => void after.push(e)] });
  const subscribed: AgentEvent[] = [];
  const sub = (async () => {
    for await (const e of agent.events()) subscribed.push(e);
  })();
  const result = await agent.run("go");
  await agent.shutdown();
  await sub;
  const records = await storage.records("s1").catch(() => []);
  return { result, calls: calls(), model, recorder, after, subscribed, records };
}

/** No sink after the recorder and no subscriber heard a completed end. */
function neverCompleted(events: AgentEvent[]): void {
  const ends = events.filter((e) => e.kind === "agent_finished").map((e) => (e as { result: { status: string } }).result.status);
  expect(ends).toEqual(["failed"]);
}

describe.each(STORAGES)("a failed append stops the run (%s storage)", (_name, make) => {
  test("at run_started: no model request, no tool, failed STORE_FULL", async () => {
    const storage = failAppends(make(), (n) => (n === 1 ? errnoError("ENOSPC") : null));
    const r = await runWith(storage);
    expect(r.result).toMatchObject({ status: "failed", stop_reason: "store_failed", error_code: "STORE_FULL" });
    expect(r.result.error).toContain("is full (ENOSPC)");
    expect(r.model.requests.length).toBe(0);
    expect(r.calls).toBe(0);
    neverCompleted(r.after);
    neverCompleted(r.subscribed);
    expect(r.recorder.errors.map((e) => (e as { code?: string }).code)).toEqual(["STORE_FULL"]);
  });

  test("at the first answer: the tool it asks for is never called, the end is recorded failed", async () => {
    const storage = failAppends(make(), (n, types) => (n === 2 && types.includes("message_appended") ? errnoError("ENOSPC") : null));
    const r = await runWith(storage);
    expect(r.result).toMatchObject({ status: "failed", stop_reason: "store_failed", error_code: "STORE_FULL" });
    expect(r.calls).toBe(0);
    expect(r.model.requests.length).toBe(1);
    neverCompleted(r.after);
    neverCompleted(r.subscribed);
    // The disk had room again for the end: the journal says what the client was told.
    expect(r.records.map((x) => x.type)).toEqual(["run_started", "run_finished"]);
    expect(r.records[1]!.data.result).toMatchObject({ status: "failed", stop_reason: "store_failed", error_code: "STORE_FULL" });
  });

  test("at a tool's result: no further model request or tool call", async () => {
    // 1 run_started, 2 message, 3 tool result (fails, for good: the disk stays full)
    const storage = failAppends(make(), (n) => (n >= 3 ? errnoError("EDQUOT") : null));
    const r = await runWith(storage);
    expect(r.result).toMatchObject({ status: "failed", stop_reason: "store_failed", error_code: "STORE_FULL" });
    expect(r.calls).toBe(1);
    expect(r.model.requests.length).toBe(1);
    neverCompleted(r.after);
    neverCompleted(r.subscribed);
    expect(r.records.map((x) => x.type)).toEqual(["run_started", "message_appended"]);
  });

  test("at run_finished: the run is failed, never completed, and nobody after the recorder heard completed", async () => {
    const storage = failAppends(make(), (_n, types) => (types.includes("run_finished") ? errnoError("ENOSPC") : null));
    const r = await runWith(storage);
    expect(r.result).toMatchObject({ status: "failed", stop_reason: "store_failed", error_code: "STORE_FULL" });
    expect(r.calls).toBe(2);
    neverCompleted(r.after);
    neverCompleted(r.subscribed);
    expect(r.records.some((x) => x.type === "run_finished")).toBe(false);
  });

  test("a read-only store: STORE_READONLY", async () => {
    const storage = failAppends(make(), (n) => (n >= 2 ? errnoError("EROFS") : null));
    const r = await runWith(storage);
    expect(r.result).toMatchObject({ status: "failed", stop_reason: "store_failed", error_code: "STORE_READONLY" });
    expect(r.calls).toBe(0);
  });

  test("a store unavailable for a moment: the write is retried and the run completes with every record", async () => {
    const storage = failAppends(make(), (n) => (n === 3 || n === 4 ? pgShutdownError() : null));
    const r = await runWith(storage, { retryDelaysMs: [5, 5, 5] });
    expect(r.result.status).toBe("completed");
    expect(r.calls).toBe(2);
    expect(r.records.map((x) => x.type)).toEqual([
      "run_started",
      "message_appended",
      "messages_appended",
      "message_appended",
      "messages_appended",
      "message_appended",
      "run_finished",
    ]);
  });

  test("a write that landed but whose answer was lost is not written twice: the retry finds it at the head", async () => {
    // 1: run_started (unconditional), 2: the first answer (conditional): each lands, then its answer is lost once.
    const storage = failAppends(
      make(),
      () => null,
      (n) => (n === 1 || n === 3 ? pgShutdownError() : null),
    );
    const r = await runWith(storage, { retryDelaysMs: [5, 5, 5] });
    expect(r.result.status).toBe("completed");
    expect(r.records.map((x) => x.type)).toEqual([
      "run_started",
      "message_appended",
      "messages_appended",
      "message_appended",
      "messages_appended",
      "message_appended",
      "run_finished",
    ]);
  });

  test("a store unavailable past the retries: failed STORE_UNAVAILABLE, after exactly the bounded attempts", async () => {
    const storage = failAppends(make(), (n) => (n >= 3 ? pgShutdownError() : null));
    const r = await runWith(storage, { retryDelaysMs: [5, 5, 5] });
    expect(r.result).toMatchObject({ status: "failed", stop_reason: "store_failed", error_code: "STORE_UNAVAILABLE" });
    expect(r.calls).toBe(1);
    // The tool result: 1 + 3 retries; then the end: once.
    expect(storage.calls.filter((c) => c.failed).length).toBe(5);
    neverCompleted(r.after);
  });

  test("another error of the store keeps its own code", async () => {
    const storage = failAppends(make(), (n) => (n === 2 ? new SessionConflictError("the branch head moved") : null));
    const r = await runWith(storage);
    expect(r.result).toMatchObject({ status: "failed", stop_reason: "store_failed", error_code: "SESSION_CONFLICT" });
    expect(r.calls).toBe(0);
  });
});

test("a group of parallel results that cannot be written stops the run before the next request", async () => {
  let n = 0;
  const look: ToolDefinition = { name: "look", description: "", effect: "read_only", parameters: { type: "object" }, handler: () => ++n };
  const storage = failAppends(new MemorySessionStorage(), (_n, types) =>
    types.filter((t) => t === "messages_appended").length === 2 ? errnoError("ENOSPC") : null,
  );
  const model = new ScriptedModel([
    {
      content: null,
      tool_calls: [
        { id: "a", name: "look", arguments: "{}" },
        { id: "b", name: "look", arguments: "{}" },
      ],
    },
    { content: "never asked" },
  ]);
  const agent = createAgent({ model, tools: [look], policy: { parallelToolCalls: true }, sinks: [new SessionRecorder("s1", storage)] });
  const result = await agent.run("go");
  expect(result).toMatchObject({ status: "failed", stop_reason: "store_failed", error_code: "STORE_FULL" });
  expect(n).toBe(2);
  expect(model.requests.length).toBe(1);
  expect(storage.calls.some((c) => c.failed && c.types.length === 2)).toBe(true);
  await agent.shutdown();
});
