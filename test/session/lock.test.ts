import { expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import type { AgentEvent } from "../../src/agent/index.ts";
import { JsonlSessionStorage, recordDraft, SessionLockTimeoutError, type SessionRecordDraft } from "../../src/session/index.ts";
import { tmpPerTest } from "../support/tmp.ts";

const tmp = tmpPerTest("agentcore-session-lock-");

const cp = (n: number): SessionRecordDraft => ({
  session_id: "l",
  agent_id: null,
  branch_id: "main",
  sequence: 0,
  type: "checkpoint",
  data: { document: { schema_version: 1, session: { session_id: "l", agent_id: null, entries: [], runs: [], compactions: [] } }, n },
});

test("a lock file left by a dead pid is broken; one held by a live pid times out", async () => {
  const dir = tmp();
  const storage = new JsonlSessionStorage(dir, { lockTimeoutMs: 100 });
  await storage.append(cp(0));
  const lock = storage.fileFor("l") + ".lock";
  // a pid that cannot be alive (above the kernel's pid_max)
  fs.writeFileSync(lock, "4194305 deadbeef\n");
  expect((await storage.append(cp(1))).revision).toBe(2);
  expect(fs.existsSync(lock)).toBe(false);
  // the parent of this test process is alive: its lock is respected until the timeout
  fs.writeFileSync(lock, `${process.ppid} cafe\n`);
  const err = await storage.append(cp(2)).catch((e) => e);
  expect(err).toBeInstanceOf(SessionLockTimeoutError);
  expect(err.message).toContain("timed out acquiring Session journal lock");
  fs.unlinkSync(lock);
  expect((await storage.append(cp(3))).revision).toBe(3);
});

test("in one process, concurrent appends through two storages are serialised", async () => {
  const dir = tmp();
  const a = new JsonlSessionStorage(dir);
  const b = new JsonlSessionStorage(dir);
  await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).append(cp(i))));
  const records = await new JsonlSessionStorage(dir).records("l");
  expect(records.map((r) => r.revision)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
});

test("recorder mapping: steering and completed compactions are journaled; deltas and discarded steering are not", () => {
  const env = { agent_id: "a", run_id: "r", sequence: 7 };
  const steer = recordDraft(
    {
      ...env,
      kind: "steering_applied",
      control: { input_id: "i1", kind: "steer", content: "be brief" },
      target_turn: 2,
    } as unknown as AgentEvent,
    "s",
    "main",
  );
  expect(steer).toEqual({
    session_id: "s",
    agent_id: "a",
    branch_id: "main",
    sequence: 7,
    type: "steering_applied",
    data: { run_id: "r", input_id: "i1", content: "be brief", target_turn: 2 },
  });
  expect(recordDraft({ ...env, kind: "assistant_text_delta", turn: 1, delta: "x" } as AgentEvent, "s", "main")).toBeNull();
  expect(recordDraft({ ...env, kind: "steering_discarded" } as unknown as AgentEvent, "s", "main")).toBeNull();
  const done = {
    ...env,
    kind: "compaction_completed",
    result: { operation_id: "op1", status: "completed", summary: { content: "sum" } },
  } as unknown as AgentEvent;
  expect(recordDraft(done, "s", "main")).toBeNull(); // no messages source
  const msgs = [{ role: "system" as const, content: "summary" }];
  expect(recordDraft(done, "s", "main", () => msgs)).toMatchObject({
    type: "compaction_applied",
    data: { operation_id: "op1", summary: { content: "sum" }, messages: msgs },
  });
  const skipped = {
    ...env,
    kind: "compaction_completed",
    result: { operation_id: "op2", status: "skipped", summary: null },
  } as unknown as AgentEvent;
  expect(recordDraft(skipped, "s", "main", () => msgs)).toBeNull();
});
