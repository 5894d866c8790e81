// The library side of recovery: JournalStorage.recoverRuns on the memory and
// JSONL storages, the error restoreSession raises for an unfinished run, and
// an agent that resumes the recovered session (its model sees every tool call
// answered).
import { beforeEach, describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { createAgent } from "../../src/agent/index.ts";
import { setRemedyWording } from "../../src/session/remedy.ts";
import { ScriptedModel } from "../../src/providers/scripted.ts";
import { createRuntime } from "../../src/runtime/runtime.ts";
import {
  MemorySessionStorage,
  restoreSession,
  SessionNotFoundError,
  SessionUnfinishedRunError,
  SessionValidationError,
} from "../../src/session/index.ts";
import { crashed, draft } from "../support/storage-contract.ts";

// the library's wording (a CLI main() run in this process would have installed its own)
beforeEach(() => {
  setRemedyWording(null);
});

// Closing an interrupted run, and a run still going, on every storage: test/support/storage-contract.ts.
describe("JournalStorage.recoverRuns", () => {
  test("unknown session and branch are SessionNotFoundError; another branch is recovered on its own", async () => {
    const storage = new MemorySessionStorage();
    await expect(storage.recoverRuns("nope")).rejects.toThrow(SessionNotFoundError);
    await storage.append(draft("run_started", { run_id: "r0", task: "t" }, 1));
    await storage.append(
      draft(
        "run_finished",
        { run_id: "r0", result: { status: "completed", stop_reason: "text_response", turns: 1, output: "x", error: null, usage: {} } },
        2,
      ),
    );
    await expect(storage.recoverRuns("s1", { branch: "ghost" })).rejects.toThrow("session 's1' has no branch 'ghost'");
    await storage.fork("s1", { branchId: "side" });
    await storage.append(draft("run_started", { run_id: "r1", task: "t" }, 1, "side"));
    expect((await storage.recoverRuns("s1")).recovered).toEqual([]);
    const side = await storage.recoverRuns("s1", { branch: "side" });
    expect(side.recovered.map((x) => x.run_id)).toEqual(["r1"]);
    expect(side.recovered[0]!.result.turns).toBe(0);
    expect((await storage.checkout("s1", "side"))!.session.runs.map((x) => x.result?.status)).toEqual(["completed", "cancelled"]);
  });

  test("a fork at a head with an unfinished run names the recovery; one inside a finished run says to pick another record", async () => {
    const storage = new MemorySessionStorage();
    await crashed(storage);
    // the library words the remedy as its own call, never as CLI syntax
    await expect(storage.fork("s1")).rejects.toThrow('mark it interrupted first with: JournalStorage.recoverRuns("s1")');
    await storage.recoverRuns("s1");
    const mid = (await storage.records("s1"))[1]!.record_id;
    await expect(storage.rollback("s1", mid)).rejects.toThrow("choose a record before the run started");
    expect((await storage.fork("s1", { branchId: "ok" })).branch.branch_id).toBe("ok");
  });
});

describe("restoreSession after a crash", () => {
  test("refuses with SessionUnfinishedRunError naming the recovery; after recoverRuns the agent resumes and its model sees every call answered", async () => {
    const storage = new MemorySessionStorage();
    await crashed(storage);
    const model = new ScriptedModel([{ content: "resumed" }]);
    const agent = createAgent({ agentId: "agent-a", model, runtime: createRuntime() });
    try {
      let err: unknown;
      try {
        restoreSession(agent, (await storage.checkout("s1"))!);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(SessionUnfinishedRunError);
      expect(err).toBeInstanceOf(SessionValidationError);
      expect((err as SessionUnfinishedRunError).runIds).toEqual(["r1"]);
      expect((err as Error).message).toContain("has unfinished run(s): r1");
      expect((err as Error).message).toContain('JournalStorage.recoverRuns("s1")');
      expect((err as Error).message).not.toContain("agentcore");
      expect((err as SessionUnfinishedRunError).remedy).toEqual({ action: "recover", session_id: "s1", branch_id: "main", force: false });

      await storage.recoverRuns("s1");
      restoreSession(agent, (await storage.checkout("s1"))!);
      expect(agent.lastResult).toMatchObject({ status: "cancelled", stop_reason: "external_abort" });
      expect((await agent.run("go on")).output).toBe("resumed");
      const sent = model.requests[0]!.messages;
      const asked = sent.flatMap((m) => (m.role === "assistant" ? (m.tool_calls ?? []).map((c) => c.id) : []));
      const answered = sent.flatMap((m) => (m.role === "tool" ? [m.tool_call_id] : []));
      expect(asked).toEqual(["a", "b", "c"]);
      expect(answered).toEqual(["a", "b", "c"]);
    } finally {
      await agent.shutdown();
    }
  });
});
