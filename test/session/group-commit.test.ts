/**
 * Group commit in the JSONL journal: what a turn's records share (one
 * transaction, so one write and one fsync), the records the journal refuses
 * to write, the descriptor it keeps open across appends (a journal deleted
 * or torn under it), and its lock made as a symbolic link.
 */
import { expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { createAgent } from "../../src/agent/index.ts";
import { ScriptedModel } from "../../src/providers/scripted.ts";
import { createRuntime } from "../../src/runtime/runtime.ts";
import {
  JsonlSessionStorage,
  type JournalRepair,
  SessionRecorder,
  type SessionRecord,
  type SessionRecordDraft,
  SessionLockTimeoutError,
  SessionValidationError,
  serializeRecord,
} from "../../src/session/index.ts";
import { canonicalJson } from "../../src/core/canonical.ts";
import { lockExists } from "../../src/session/lock.ts";
import { type AppendOptions, JournalIndex, recordLine } from "../../src/session/journal.ts";
import { tmpPerTest } from "../support/tmp.ts";

const tmp = tmpPerTest("agentcore-group-commit-");

/** The JSONL storage, telling which records each transaction of `appendMany` carried. */
class CountingStorage extends JsonlSessionStorage {
  readonly groups: string[][] = [];
  override async appendMany(drafts: readonly SessionRecordDraft[], options?: AppendOptions): Promise<SessionRecord[]> {
    this.groups.push(drafts.map((d) => d.type));
    return await super.appendMany(drafts, options);
  }
}

const cp = (n: number): SessionRecordDraft => ({
  session_id: "g",
  agent_id: null,
  branch_id: "main",
  sequence: 0,
  type: "checkpoint",
  data: { document: { schema_version: 1, session: { session_id: "g", agent_id: null, entries: [], runs: [], compactions: [] } }, n },
});

test("the results of a turn's parallel read-only calls are journaled as one group; the tool call's intent before the calls run", async () => {
  const storage = new CountingStorage(tmp());
  const calls = ["a", "b", "c"].map((id) => ({ id, name: "echo", arguments: `{"message":"${id}"}` }));
  const agent = createAgent({
    model: new ScriptedModel([{ content: null, tool_calls: calls }, { content: "done" }]),
    runtime: createRuntime(),
    policy: { parallelToolCalls: true },
    sinks: [new SessionRecorder("s", storage)],
  });
  expect((await agent.run("go")).status).toBe("completed");
  await agent.shutdown();
  expect(storage.groups).toEqual([
    ["run_started"],
    ["message_appended"],
    ["messages_appended", "messages_appended", "messages_appended"],
    ["message_appended"],
    ["run_finished"],
  ]);
  const records = await new JsonlSessionStorage(storage.dir).records("s");
  expect(records.map((r) => r.revision)).toEqual([1, 2, 3, 4, 5, 6, 7]);
  const tools = records
    .filter((r) => r.type === "messages_appended")
    .map((r) => (r.data.messages as { tool_call_id: string }[])[0]!.tool_call_id);
  expect(tools).toEqual(["a", "b", "c"]);
});

test("each record is its canonical line (sorted keys, compact), serialised once; data that is not JSON is refused by name", () => {
  const index = new JournalIndex("s");
  const record = index.build(
    {
      session_id: "s",
      agent_id: 'quote"d',
      branch_id: "main",
      sequence: 3,
      type: "message_appended",
      data: { z: 1, run_id: "r", a: [1, "line\u2028sep", { q: null, b: true, é: -0, A: 1e21, n: 0.1 }] },
    },
    null,
  );
  expect(recordLine(record)).toBe(`${canonicalJson(record)}\n`);
  expect(serializeRecord(record)).toBe(`${canonicalJson(record)}\n`);
  expect(JSON.parse(recordLine(record))).toEqual(JSON.parse(canonicalJson(record)));
  const bad = (data: Record<string, unknown>) => () => recordLine(index.build({ ...cp(0), session_id: "s", data }, null));
  expect(bad({ x: Number.POSITIVE_INFINITY })).toThrow("data.x is not JSON: Infinity");
  expect(bad({ x: { y: undefined } })).toThrow("data.x.y is not JSON (undefined)");
  expect(bad({ x: new Date(0) })).toThrow("data.x is not a plain object");
  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  expect(bad({ c: cyclic })).toThrow("is a cycle");
  expect(bad({ x: [1, , 3] })).toThrow("data.x[1] is not JSON (a hole in an array)");
  // deeper than the one-pass serialiser goes: still written, by the slower path
  let deep: unknown = "leaf";
  for (let i = 0; i < 400; i++) deep = { d: deep };
  const line = recordLine(index.build({ ...cp(0), session_id: "s", data: { deep } }, null));
  expect(line.endsWith("}\n")).toBe(true);
});

test("a journal deleted between two appends of one storage is written anew, not into the deleted file", async () => {
  const storage = new JsonlSessionStorage(tmp());
  await storage.append(cp(0));
  await storage.append(cp(1));
  const file = storage.fileFor("g");
  fs.unlinkSync(file);
  expect((await storage.append(cp(2))).revision).toBe(1);
  expect(fs.readFileSync(file, "utf8").split("\n").filter(Boolean).length).toBe(1);
  expect((await new JsonlSessionStorage(storage.dir).records("g")).map((r) => r.data.n)).toEqual([2]);
});

test("a torn tail left under an open journal is cut off by the same storage's next append", async () => {
  const repairs: JournalRepair[] = [];
  const storage = new JsonlSessionStorage(tmp(), { onRepair: (r) => repairs.push(r) });
  await storage.append(cp(0));
  fs.appendFileSync(storage.fileFor("g"), '{"journal_schema_version":1,"rec');
  expect((await storage.appendMany([cp(1), cp(2)])).map((r) => r.revision)).toEqual([2, 3]);
  expect(repairs).toEqual([expect.objectContaining({ line: 2, bytes: 32, repaired: true })]);
  const text = fs.readFileSync(storage.fileFor("g"), "utf8");
  expect(text.endsWith("\n")).toBe(true);
  expect((await new JsonlSessionStorage(storage.dir).records("g")).map((r) => r.data.n)).toEqual([0, 1, 2]);
});

test("the journal lock is a symbolic link holding the owner; a dead owner's is broken, a live one's waited for", async () => {
  const storage = new JsonlSessionStorage(tmp(), { lockTimeoutMs: 100 });
  await storage.append(cp(0));
  const lock = `${storage.fileFor("g")}.lock`;
  expect(lockExists(lock)).toBe(false);
  // a pid that cannot be alive (above the kernel's pid_max)
  fs.symlinkSync("4194305 deadbeef\n", lock);
  expect(lockExists(lock)).toBe(true); // a dangling link is a lock all the same
  expect((await storage.append(cp(1))).revision).toBe(2);
  expect(lockExists(lock)).toBe(false);
  fs.symlinkSync(`${process.ppid} cafe\n`, lock);
  expect(await storage.append(cp(2)).catch((e) => e)).toBeInstanceOf(SessionLockTimeoutError);
  // a reader waits for it too, even before the journal has a first line
  const fresh = new JsonlSessionStorage(path.join(storage.dir, "other"), { lockTimeoutMs: 100 });
  fs.mkdirSync(fresh.dir);
  fs.symlinkSync(`${process.ppid} cafe\n`, `${fresh.fileFor("g")}.lock`);
  expect(await fresh.records("g").catch((e) => e)).toBeInstanceOf(SessionLockTimeoutError);
  fs.unlinkSync(lock);
  expect((await storage.append(cp(3))).revision).toBe(3);
});
