// Journal durability in the library: record times (and journals written
// before them), torn first records, branch claims taken before a run.
import { describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { createAgent } from "../../src/agent/index.ts";
import { ScriptedModel } from "../../src/providers/scripted.ts";
import { createRuntime } from "../../src/runtime/runtime.ts";
import {
  JsonlSessionStorage,
  MemorySessionStorage,
  recordTime,
  restoreSession,
  SessionBranchBusyError,
  SessionRecorder,
  SessionRunActiveError,
  SessionSerializationError,
  SessionStorageError,
  sessionMessages,
  type SessionRecordDraft,
} from "../../src/session/index.ts";
import { tmpPerTest } from "../support/tmp.ts";

const CORPUS = path.join(import.meta.dir, "corpus");
const tmp = tmpPerTest("agentcore-durable-");

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** A sessions folder holding a fixture journal as session `id`. */
function fromFixture(name: string, id: string): JsonlSessionStorage {
  const dir = tmp();
  const storage = new JsonlSessionStorage(dir);
  fs.copyFileSync(path.join(CORPUS, name), storage.fileFor(id));
  return storage;
}

const draft = (session: string, type: SessionRecordDraft["type"], data: Record<string, unknown>, sequence: number): SessionRecordDraft => ({
  session_id: session,
  agent_id: "agent-a",
  branch_id: "main",
  sequence,
  type,
  data,
});

/** A pid that was just used and is gone. */
function deadPid(): number {
  const p = Bun.spawnSync(["true"]);
  return p.pid;
}

describe("record times", () => {
  test("every record is stamped on append (ISO-8601 UTC, milliseconds), in file order", async () => {
    const storage = new JsonlSessionStorage(tmp());
    const before = Date.now();
    const a = await storage.append(draft("s", "run_started", { run_id: "r1", task: "t" }, 1));
    const b = await storage.append(draft("s", "message_appended", { run_id: "r1", message: { role: "assistant", content: "x" } }, 2));
    const lines = fs
      .readFileSync(storage.fileFor("s"), "utf8")
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    for (const l of lines) expect(l.time).toMatch(ISO_MS);
    expect(lines.map((l) => l.time)).toEqual([a.time, b.time]);
    expect(Date.parse(recordTime(a)!)).toBeGreaterThanOrEqual(before - 1000);
    expect(Date.parse(recordTime(b)!)).toBeGreaterThanOrEqual(Date.parse(recordTime(a)!));
    // the memory storage stamps them too
    const mem = new MemorySessionStorage();
    expect(recordTime(await mem.append(draft("s", "run_started", { run_id: "r1", task: "t" }, 1)))).toMatch(ISO_MS);
  });

  test("recordTime: null for records written before times, or with a time that is not a timestamp", () => {
    expect(recordTime({})).toBeNull();
    expect(recordTime({ time: 12 })).toBeNull();
    expect(recordTime({ time: "yesterday" })).toBeNull();
    expect(recordTime({ time: "2026-13-45T99:00:00.000Z" })).toBeNull();
    expect(recordTime({ time: "2026-12-01T09:42:38.123Z" })).toBe("2026-12-01T09:42:38.123Z");
  });

  test("a record whose time is not a string is an invalid record naming the line", async () => {
    const storage = fromFixture("v1-timed/cli-fork.jsonl", "timed");
    const file = storage.fileFor("timed");
    const lines = fs.readFileSync(file, "utf8").split("\n");
    lines[1] = lines[1]!.replace(/"time":"[^"]*"/, '"time":42');
    fs.writeFileSync(file, lines.join("\n"));
    const err = await storage.records("timed").catch((e) => e);
    expect(err).toBeInstanceOf(SessionSerializationError);
    expect(err.line).toBe(2);
    expect(err.message).toContain("time must be a string");
  });

  // Two journals of the corpus (test/session/corpus/, see its README):
  // v1-untimed/cli-fork.jsonl was written by `agentcore agent` before records
  // carried times (commit 05d8439), and v1-timed/cli-fork.jsonl by the version
  // that added them, from the same script: a run with a tool call, a
  // --continue, a fork "exp" with a run on it.
  for (const [name, id, timed] of [
    ["v1-untimed/cli-fork.jsonl", "legacy", false],
    ["v1-timed/cli-fork.jsonl", "timed", true],
  ] as const) {
    test(`${name}: loads, restores into an agent, takes a new run (stamped) on main and on the fork`, async () => {
      const storage = fromFixture(name, id);
      const records = await storage.records(id);
      expect(records.map((r) => r.type)).toEqual([
        "run_started",
        "message_appended",
        "messages_appended",
        "message_appended",
        "run_finished",
        "run_continued",
        "message_appended",
        "run_finished",
        "branch_created",
        "run_started",
        "message_appended",
        "run_finished",
      ]);
      for (const r of records) {
        if (timed) expect(recordTime(r)).toMatch(ISO_MS);
        else expect(recordTime(r)).toBeNull();
      }
      expect(await storage.listSessions()).toEqual([id]);
      expect((await storage.listBranches(id)).map((b) => b.branch_id)).toEqual(["main", "exp"]);
      const main = (await storage.checkout(id, "main"))!;
      expect(sessionMessages(main.session).map((m) => [m.role, m.content])).toEqual([
        ["user", "say hi"],
        ["assistant", null],
        ["tool", '{"message":"hi"}'],
        ["assistant", "said hi"],
        ["assistant", "continued"],
      ]);
      expect(main.session.runs.map((r) => [r.intent, r.result?.status])).toEqual([
        ["task", "completed"],
        ["continue", "completed"],
      ]);
      expect((await storage.checkout(id, "exp"))!.session.runs.map((r) => r.task)).toEqual(["say hi", null, "fork task"]);

      for (const branch of ["main", "exp"]) {
        const c = (await storage.checkout(id, branch))!;
        const agent = createAgent({
          model: new ScriptedModel([{ content: `more on ${branch}` }]),
          runtime: createRuntime({ tools: [] }),
          agentId: c.session.agent_id!,
          sinks: [new SessionRecorder(id, storage, branch)],
        });
        restoreSession(agent, c);
        const result = await agent.run(`next on ${branch}`);
        expect(result.status).toBe("completed");
        await agent.shutdown();
      }
      const after = await new JsonlSessionStorage(storage.dir).records(id);
      expect(after.length).toBe(records.length + 6);
      // what this version appended is stamped; what was there is read as it was
      for (const r of after.slice(records.length)) expect(recordTime(r)).toMatch(ISO_MS);
      expect(after.slice(0, records.length)).toEqual(records);
      expect(sessionMessages((await storage.checkout(id, "exp"))!.session).at(-1)).toEqual({ role: "assistant", content: "more on exp" });
    });
  }
});

describe("torn first records", () => {
  test("listSessions names a session whose torn first record still holds its id; the others are reported, never silently left out", async () => {
    const dir = tmp();
    const storage = new JsonlSessionStorage(dir);
    await storage.append(draft("whole", "run_started", { run_id: "r1", task: "t" }, 1));
    const full = fs.readFileSync(storage.fileFor("whole"), "utf8").replaceAll('"whole"', '"late"');
    fs.writeFileSync(storage.fileFor("late"), full.slice(0, full.indexOf('"type"'))); // torn after its session id
    fs.writeFileSync(storage.fileFor("early"), full.slice(0, 30)); // torn before it
    fs.writeFileSync(storage.fileFor("empty"), "");
    // an id that does not hash to the file name is not believed
    fs.writeFileSync(storage.fileFor("liar"), full.replace('"late"', '"someone-else"').slice(0, full.indexOf('"type"')));
    expect(await storage.listSessions()).toEqual(["late", "whole"]);
    const unreadable = await storage.unreadableJournals();
    expect(unreadable.map((u) => u.file).sort()).toEqual(
      [storage.fileFor("early"), storage.fileFor("empty"), storage.fileFor("liar")].sort(),
    );
    expect(unreadable.find((u) => u.file === storage.fileFor("early"))!.problem).toContain(
      "its first record is torn (30 bytes, a write cut short) before its session id",
    );
    expect(unreadable.find((u) => u.file === storage.fileFor("empty"))!.problem).toContain("empty");
    // each is an empty session that takes a run
    for (const id of ["late", "early", "empty"]) {
      expect(await storage.load(id)).toBeNull();
      expect(await storage.exists(id)).toBe(true);
      const r = await storage.append(draft(id, "run_started", { run_id: "r1", task: "t" }, 1));
      expect(r.revision).toBe(1);
    }
    expect(await storage.listSessions()).toEqual(["early", "empty", "late", "whole"]);
  });

  test("a first record longer than 64 KiB is listed (the whole first line is read)", async () => {
    const storage = new JsonlSessionStorage(tmp());
    await storage.append(draft("big", "run_started", { run_id: "r1", task: "x".repeat(200_000) }, 1));
    expect(await storage.listSessions()).toEqual(["big"]);
  });

  test("a torn first line followed by whole records is corruption: an error naming the file, the line and the way out; nothing is written", async () => {
    const dir = tmp();
    const storage = new JsonlSessionStorage(dir);
    await storage.append(draft("s", "run_started", { run_id: "r1", task: "t" }, 1));
    await storage.append(draft("s", "run_finished", { run_id: "r1", result: { status: "completed" } }, 2));
    const file = storage.fileFor("s");
    const whole = fs.readFileSync(file, "utf8");
    for (const broken of [`{"agent_id":"agent-a","bra${whole}`, `{"agent_id":"agent-a","bra\n${whole}`]) {
      fs.writeFileSync(file, broken);
      for (const s of [
        new JsonlSessionStorage(dir),
        new JsonlSessionStorage(dir, {
          onRepair: () => {
            throw new Error("nothing is repaired");
          },
        }),
      ]) {
        const err = await s.append(draft("s", "run_started", { run_id: "r2", task: "t" }, 1)).catch((e) => e);
        expect(err).toBeInstanceOf(SessionSerializationError);
        expect(err.file).toBe(file);
        expect(err.line).toBe(1);
        expect(err.message).toContain(`Session journal ${file}: invalid JSON at line 1`);
        expect(err.message).toContain("changes nothing in this journal: keep a copy of the file, then mend or delete line 1 by hand");
        expect(await s.load("s").catch((e) => e)).toBeInstanceOf(SessionSerializationError);
        expect(await s.repair("s").catch((e) => e)).toBeInstanceOf(SessionSerializationError);
      }
      expect(fs.readFileSync(file, "utf8")).toBe(broken);
    }
  });

  test("repair() cuts a torn tail off at once and reports it; recoverRuns on an empty journal recovers nothing", async () => {
    const dir = tmp();
    const seen: unknown[] = [];
    const storage = new JsonlSessionStorage(dir, { onRepair: (r) => seen.push(r) });
    fs.writeFileSync(storage.fileFor("s"), '{"agent_id":"x"');
    expect(await storage.recoverRuns("s")).toEqual({ session_id: "s", branch_id: "main", recovered: [], head_id: null });
    expect(seen).toEqual([{ session_id: "s", file: storage.fileFor("s"), line: 1, bytes: 15, repaired: true }]);
    expect(fs.readFileSync(storage.fileFor("s"), "utf8")).toBe("");
    expect(await storage.repair("s")).toBeNull();
    await expect(storage.recoverRuns("s", { branch: "exp" })).rejects.toThrow("no session 's'");
    await expect(storage.recoverRuns("nope")).rejects.toThrow("no session 'nope'");
  });
});

describe("branch claims", () => {
  // one holder per branch, on every storage: test/support/storage-contract.ts
  test("jsonl: the claim is a file next to the journal; another instance sees it; a claim whose pid is dead is taken over", async () => {
    const dir = tmp();
    const a = new JsonlSessionStorage(dir);
    const b = new JsonlSessionStorage(dir);
    const claim = await a.claimBranch("s", "main", "agentcore agent");
    const file = a.branchClaimFile("s", "main");
    expect(JSON.parse(fs.readFileSync(file, "utf8"))).toMatchObject({
      pid: process.pid,
      session_id: "s",
      branch_id: "main",
      holder: "agentcore agent",
    });
    await expect(b.claimBranch("s", "main")).rejects.toBeInstanceOf(SessionBranchBusyError);
    claim.release();
    expect(fs.existsSync(file)).toBe(false);
    // a holder that was killed left its claim: its pid is gone, so it is stale
    const dead = deadPid();
    fs.writeFileSync(
      file,
      JSON.stringify({
        pid: dead,
        token: "t",
        session_id: "s",
        branch_id: "main",
        holder: "agentcore agent",
        since: "2026-01-01T00:00:00.000Z",
      }) + "\n",
    );
    expect(await b.branchOwner("s", "main")).toBeNull();
    const taken = await b.claimBranch("s", "main");
    expect(JSON.parse(fs.readFileSync(file, "utf8")).pid).toBe(process.pid);
    taken.release();
    // a claim file that is not one (garbage) does not block forever either
    fs.writeFileSync(file, "garbage");
    (await b.claimBranch("s", "main")).release();
    expect(fs.readdirSync(dir).filter((n) => n.includes(".branch-") || n.endsWith(".tmp") || n.endsWith(".break"))).toEqual([]);
  });

  test("recoverRuns leaves a run alone while its branch is claimed by a live process; force clears a claim whose pid is not agentcore", async () => {
    const dir = tmp();
    const storage = new JsonlSessionStorage(dir);
    await storage.append(draft("s", "run_started", { run_id: "r1", task: "t" }, 1));
    // a live process that is not agentcore holds the claim (a reused pid)
    const other = Bun.spawn(["sleep", "60"]);
    try {
      fs.writeFileSync(
        storage.branchClaimFile("s", "main"),
        JSON.stringify({ pid: other.pid, token: "t", holder: "agentcore agent", since: null }) + "\n",
      );
      await expect(storage.claimBranch("s", "main")).rejects.toBeInstanceOf(SessionBranchBusyError);
      const err = await storage.recoverRuns("s").catch((e) => e);
      expect(err).toBeInstanceOf(SessionRunActiveError);
      expect(err.pid).toBe(other.pid);
      expect((await storage.records("s")).length).toBe(1);
      const r = await storage.recoverRuns("s", { force: true });
      expect(r.recovered.map((x) => x.run_id)).toEqual(["r1"]);
      expect(fs.existsSync(storage.branchClaimFile("s", "main"))).toBe(false);
      (await storage.claimBranch("s", "main")).release();
    } finally {
      other.kill();
    }
  });

  test("a journal that cannot be written is refused when claiming: a sessions folder under a regular file", async () => {
    const dir = tmp();
    fs.writeFileSync(path.join(dir, "file"), "x");
    const storage = new JsonlSessionStorage(path.join(dir, "file", "sessions"));
    const err = await storage.claimBranch("s").catch((e) => e);
    expect(err).toBeInstanceOf(SessionStorageError);
    expect(err.message).toContain(`cannot create ${path.join(dir, "file", "sessions")}`);
  });
});
