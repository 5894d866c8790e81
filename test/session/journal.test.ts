import { describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import {
  JsonlSessionStorage,
  MemorySessionStorage,
  SessionSchemaVersionError,
  SessionSerializationError,
  sessionMessages,
} from "../../src/session/index.ts";
import { draft, result, twoRuns } from "../support/storage-contract.ts";
import { tmpPerTest } from "../support/tmp.ts";

export const tmp = tmpPerTest("agentcore-session-");

describe("JsonlSessionStorage", () => {
  test("file layout, sorted compact lines, projection", async () => {
    const dir = tmp();
    const store = new JsonlSessionStorage(dir);
    await twoRuns(store);
    const file = store.fileFor("s1");
    expect(path.basename(file)).toMatch(/^[0-9a-f]{64}\.jsonl$/);
    const lines = fs.readFileSync(file, "utf8").split("\n");
    expect(lines.at(-1)).toBe("");
    const first = lines[0];
    expect(
      first.startsWith(
        '{"agent_id":"agent-a","branch_id":"main","data":{"run_id":"r1","task":"first task"},"journal_schema_version":1,"parent_id":null,"record_id":"',
      ),
    ).toBe(true);
    const session = (await new JsonlSessionStorage(dir).load("s1"))!;
    expect(sessionMessages(session)).toEqual([
      { role: "user", content: "first task" },
      { role: "assistant", content: "one" },
      { role: "user", content: "second task" },
      { role: "assistant", content: "two" },
    ]);
    expect(session.runs.map((r) => [r.run_id, r.intent, r.finish_sequence])).toEqual([
      ["r1", "task", 3],
      ["r2", "task", 3],
    ]);
    expect(await new JsonlSessionStorage(dir).listSessions()).toEqual(["s1"]);
    expect(await store.load("nope")).toBeNull();
    expect(fs.existsSync(store.fileFor("nope"))).toBe(false);
  });

  test("torn tail is ignored on read and truncated by the next append", async () => {
    const dir = tmp();
    const store = new JsonlSessionStorage(dir);
    await twoRuns(store);
    const file = store.fileFor("s1");
    const good = fs.readFileSync(file);
    fs.appendFileSync(file, '{"agent_id":"agent-a","bra');
    const fresh = new JsonlSessionStorage(dir);
    expect((await fresh.records("s1")).length).toBe(6);
    const r = await fresh.append(draft("run_started", { run_id: "r3", task: "third" }, 1));
    expect(r.revision).toBe(7);
    const after = fs.readFileSync(file);
    expect(after.subarray(0, good.length).equals(good)).toBe(true);
    expect(after.toString("utf8").split("\n").length).toBe(8);
    expect((await new JsonlSessionStorage(dir).records("s1")).map((x) => x.revision)).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });

  test("a corrupt complete line names the file and line; never a missing session", async () => {
    const dir = tmp();
    const store = new JsonlSessionStorage(dir);
    await twoRuns(store);
    const file = store.fileFor("s1");
    const lines = fs.readFileSync(file, "utf8").split("\n");
    lines[2] = lines[2].replace('"revision":3', '"revision":3,"revision":3');
    fs.writeFileSync(file, lines.join("\n"));
    const err = await new JsonlSessionStorage(dir).load("s1").catch((e) => e);
    expect(err).toBeInstanceOf(SessionSerializationError);
    expect(err.file).toBe(file);
    expect(err.line).toBe(3);
    expect(err.message).toContain(file);
    expect(err.message).toContain("line 3");
  });

  test("an unsupported journal_schema_version is a clear error", async () => {
    const dir = tmp();
    const store = new JsonlSessionStorage(dir);
    await twoRuns(store);
    const file = store.fileFor("s1");
    fs.writeFileSync(file, fs.readFileSync(file, "utf8").replace('"journal_schema_version":1', '"journal_schema_version":999'));
    const err = await new JsonlSessionStorage(dir).checkout("s1").catch((e) => e);
    expect(err).toBeInstanceOf(SessionSchemaVersionError);
    expect(err.message).toContain("unsupported journal_schema_version 999; expected 1");
    expect(err.line).toBe(1);
  });

  test("an incomplete first record is a torn tail like any other: the session is empty, and the next append cuts it off", async () => {
    const dir = tmp();
    const repairs: unknown[] = [];
    const store = new JsonlSessionStorage(dir, { onRepair: (r) => repairs.push(r) });
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(store.fileFor("s1"), '{"agent_id":');
    expect(await store.load("s1")).toBeNull();
    expect(await store.records("s1")).toEqual([]);
    expect(await store.exists("s1")).toBe(true);
    expect(await store.tornTail("s1")).toEqual({ session_id: "s1", file: store.fileFor("s1"), line: 1, bytes: 12, repaired: false });
    await store.append(draft("run_started", { run_id: "r1", task: "t" }, 1));
    expect(repairs).toEqual([{ session_id: "s1", file: store.fileFor("s1"), line: 1, bytes: 12, repaired: true }]);
    expect(fs.readFileSync(store.fileFor("s1"), "utf8").startsWith('{"agent_id":"agent-a"')).toBe(true);
    expect((await new JsonlSessionStorage(dir).records("s1")).map((r) => r.revision)).toEqual([1]);
  });

  test("invalid drafts are rejected before any file is created", async () => {
    const dir = path.join(tmp(), "sub");
    const store = new JsonlSessionStorage(dir);
    await expect(store.append(draft("run_started", { run_id: "r1", task: "t", n: NaN }, 1))).rejects.toThrow("not JSON");
    await expect(store.append(draft("branch_created", {}, 0))).rejects.toThrow("fork(), rollback(), or prepareRetry()");
    expect(fs.existsSync(dir)).toBe(false);
    await expect(
      store.append(draft("message_appended", { run_id: "zz", message: { role: "assistant", content: "x" } }, 1)),
    ).rejects.toThrow("unknown run");
    expect((await store.records("s1")).length).toBe(0);
  });
});

// fork/rollback/retry, stale heads, restore and recovery for every storage: test/support/storage-contract.ts (storage-*.test.ts).
