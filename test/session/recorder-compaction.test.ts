/**
 * A SessionRecorder wired as documented — `createAgent({ compaction, sinks:
 * [new SessionRecorder(id, storage)] })`, nothing else — journals the
 * compactions too, so a restored agent holds the live agent's conversation.
 */
import { describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { createAgent } from "../../src/agent/index.ts";
import { CompactionPolicy, type Compactor, type TokenEstimator } from "../../src/context/index.ts";
import { ScriptedModel } from "../../src/providers/scripted.ts";
import { createRuntime } from "../../src/runtime/runtime.ts";
import { JsonlSessionStorage, restoreSession, SessionRecorder } from "../../src/session/index.ts";
import { tmpPerTest } from "../support/tmp.ts";

const tmp = tmpPerTest("agentcore-recorder-");

const lengthEstimator: TokenEstimator = {
  estimateMessage: (m) =>
    m.role === "system" ? 1 : typeof (m as { content?: unknown }).content === "string" ? (m as { content: string }).content.length : 1,
  estimateTools: () => 0,
};
const compactor: Compactor = { compact: async () => ({ content: "SUMMARY of the first task", source: "stub" }) };
const compaction = () => ({
  policy: new CompactionPolicy({ contextWindow: 100_000, reserveTokens: 0, keepRecentTokens: 10 }, true, lengthEstimator),
  compactor,
});

describe("SessionRecorder with the documented wiring", () => {
  test("two runs and compact(): the journal has compaction_applied and a restored agent has the live agent's messages", async () => {
    const storage = new JsonlSessionStorage(tmp());
    const agent = createAgent({
      agentId: "agent-a",
      model: new ScriptedModel([{ content: "first answer" }, { content: "second answer" }]),
      runtime: createRuntime(),
      compaction: compaction(),
      sinks: [new SessionRecorder("s1", storage)],
    });
    await agent.run("task one");
    await agent.run("task two");
    const r = await agent.compact();
    expect(r.status).toBe("completed");
    await agent.waitForIdle();
    const live = structuredClone(agent.messages);
    expect(live.length).toBe(3);
    await agent.shutdown();

    const records = await storage.records("s1");
    const applied = records.filter((x) => x.type === "compaction_applied");
    expect(applied.length).toBe(1);
    expect(applied[0]!.data.messages).toEqual(live);

    const restored = createAgent({ agentId: "agent-a", model: new ScriptedModel([]), runtime: createRuntime(), compaction: compaction() });
    restoreSession(restored, (await storage.checkout("s1"))!);
    expect(restored.messages).toEqual(live);
    await restored.shutdown();
  });

  test("a compaction that is skipped (nothing to summarise) writes no record", async () => {
    const storage = new JsonlSessionStorage(tmp());
    const agent = createAgent({
      agentId: "agent-a",
      model: new ScriptedModel([{ content: "only" }]),
      runtime: createRuntime(),
      compaction: compaction(),
      sinks: [new SessionRecorder("s2", storage)],
    });
    await agent.run("t");
    expect((await agent.compact()).status).toBe("skipped");
    await agent.shutdown();
    expect((await storage.records("s2")).map((x) => x.type)).not.toContain("compaction_applied");
  });
});
