/**
 * The contract every session storage keeps (src/session/journal.ts's
 * JournalStorage), as bun:test cases registered by {@link storageContract}
 * for one storage: revisions and parents, branches, fork/rollback/retry,
 * conflicts on a stale head, restore (a checkout gives the same messages to
 * a new agent), recoverRuns, listSessions/exists, branch claims, a run that
 * is still going, approvals (request, answer once, a crash while one waits),
 * and torn writes where the storage has files.
 * Run from test/session/storage-memory.test.ts, storage-jsonl.test.ts and
 * storage-postgres.test.ts.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { createAgent } from "../../src/agent/index.ts";
import { ScriptedModel } from "../../src/providers/scripted.ts";
import { createRuntime } from "../../src/runtime/runtime.ts";
import {
  INTERRUPTED_RUN_ERROR,
  type JournalStorage,
  restoreSession,
  SessionBranchBusyError,
  SessionConflictError,
  SessionError,
  SessionNotFoundError,
  SessionRecorder,
  type SessionRecordDraft,
  SessionRunActiveError,
  sessionMessages,
  decideApproval,
  pendingApprovals,
  resumeDecisions,
  SessionApprovalError,
  SessionValidationError,
  serializeRecord,
} from "../../src/session/index.ts";
import { setRemedyWording } from "../../src/session/remedy.ts";

/** One fresh, empty store for a test. */
export interface ContractStore {
  storage: JournalStorage;
  /**
   * Another instance on the same store, as another process would open it
   * (the memory storage, which lives in one instance, gives itself).
   */
  another(): Promise<JournalStorage>;
}

/** How the suite makes and tears down the storage under test. */
export interface ContractHarness {
  /** A fresh, empty store. */
  open(): Promise<ContractStore>;
  /** Ends what `open` made (connections); called after each test. */
  close?(storage: JournalStorage): Promise<void>;
  /**
   * Leave a torn write at the end of a session's journal (a crash mid-line),
   * for storages that can have one (files); omitted: the torn-write cases
   * are not registered.
   */
  tear?(storage: JournalStorage, sessionId: string, fragment: string): void;
}

export const draft = (
  type: SessionRecordDraft["type"],
  data: Record<string, unknown>,
  sequence: number,
  branch = "main",
  session = "s1",
): SessionRecordDraft => ({
  session_id: session,
  agent_id: "agent-a",
  branch_id: branch,
  sequence,
  type,
  data,
});

export const result = (output: string) => ({
  status: "completed",
  stop_reason: "text_response",
  turns: 1,
  output,
  error: null,
  usage: { input_tokens: 0, output_tokens: 0, total_tokens: 0, request_count: 1, reported_request_count: 0, complete: false },
});

/** Two finished runs on main of session s1. */
export async function twoRuns(store: JournalStorage) {
  const a = await store.append(draft("run_started", { run_id: "r1", task: "first task" }, 1));
  await store.append(draft("message_appended", { run_id: "r1", message: { role: "assistant", content: "one" } }, 2));
  const f1 = await store.append(draft("run_finished", { run_id: "r1", result: result("one") }, 3));
  const b = await store.append(draft("run_started", { run_id: "r2", task: "second task" }, 1));
  await store.append(draft("message_appended", { run_id: "r2", message: { role: "assistant", content: "two" } }, 2));
  await store.append(draft("run_finished", { run_id: "r2", result: result("two") }, 3));
  return { a, f1, b };
}

const call = (id: string, name: string) => ({ id, type: "function", function: { name, arguments: "{}" } });

/** A run cut off after its second assistant message, which asked for two calls (one answered). */
export async function crashed(storage: JournalStorage): Promise<void> {
  await storage.append(draft("run_started", { run_id: "r1", task: "work" }, 1));
  await storage.append(
    draft(
      "message_appended",
      {
        run_id: "r1",
        message: {
          role: "assistant",
          content: null,
          tool_calls: [call("a", "echo")],
          usage: { input_tokens: 10, output_tokens: 2, total_tokens: 12 },
        },
      },
      3,
    ),
  );
  await storage.append(draft("messages_appended", { run_id: "r1", messages: [{ role: "tool", tool_call_id: "a", content: "ok" }] }, 5));
  await storage.append(
    draft(
      "message_appended",
      {
        run_id: "r1",
        message: {
          role: "assistant",
          content: null,
          tool_calls: [call("b", "read_file"), call("c", "echo")],
          usage: { input_tokens: "x" },
        },
      },
      9,
    ),
  );
  await storage.append(draft("messages_appended", { run_id: "r1", messages: [{ role: "tool", tool_call_id: "b", content: "ok" }] }, 11));
}

/** Register the contract's cases for the storage `name` made by `harness`. */
export function storageContract(name: string, harness: ContractHarness): void {
  const opened: JournalStorage[] = [];
  const open = async (): Promise<ContractStore> => {
    const store = await harness.open();
    opened.push(store.storage);
    return {
      storage: store.storage,
      another: async () => {
        const s = await store.another();
        if (!opened.includes(s)) opened.push(s);
        return s;
      },
    };
  };
  afterEach(async () => {
    setRemedyWording(null);
    for (const s of opened.splice(0)) await harness.close?.(s);
  });

  describe(`${name}: the storage contract`, () => {
    test("revisions count up from 1 across branches; each record's parent is its branch's previous head", async () => {
      const { storage, another } = await open();
      const { a, f1 } = await twoRuns(storage);
      const records = await storage.records("s1");
      expect(records.map((r) => r.revision)).toEqual([1, 2, 3, 4, 5, 6]);
      expect(records[0]!.parent_id).toBeNull();
      for (let i = 1; i < records.length; i++) expect(records[i]!.parent_id).toBe(records[i - 1]!.record_id);
      expect(a.revision).toBe(1);
      expect(f1.revision).toBe(3);
      const fork = await storage.fork("s1", { branchId: "side", fromRecordId: f1.record_id });
      expect(fork.head!.revision).toBe(7);
      expect(fork.head!.parent_id).toBe(f1.record_id);
      const onSide = await storage.append(draft("run_started", { run_id: "r3", task: "side task" }, 1, "side"));
      expect(onSide).toMatchObject({ revision: 8, parent_id: fork.head!.record_id, branch_id: "side" });
      const onMain = await storage.append(draft("run_started", { run_id: "r4", task: "main task" }, 1));
      expect(onMain).toMatchObject({ revision: 9, parent_id: records[5]!.record_id });
      // another instance reads the same records, byte for byte
      const other = await another();
      expect(await other.records("s1")).toEqual(await storage.records("s1"));
      expect((await other.head("s1", "side"))!.record_id).toBe(onSide.record_id);
    });

    test("fork, rollback, retry with the original task, save/load; main is never rewritten", async () => {
      const { storage: store } = await open();
      const { a, f1, b } = await twoRuns(store);
      const fork = await store.fork("s1", { branchId: "exp" });
      expect(fork.branch).toMatchObject({ branch_id: "exp", intent: "fork", source_branch_id: "main" });
      expect(sessionMessages(fork.session).length).toBe(4);
      const rb = await store.rollback("s1", f1.record_id, { branchId: "rolled" });
      expect(sessionMessages(rb.session).map((m) => m.content)).toEqual(["first task", "one"]);
      const retry = await store.prepareRetry("s1", "r2");
      expect(retry.task).toBe("second task");
      expect(retry.retried_run_id).toBe("r2");
      expect(retry.checkout.branch.base_record_id).toBe(b.parent_id);
      expect(retry.checkout.branch.branch_id).toMatch(/^retry-[0-9a-f]{12}$/);
      expect(sessionMessages(retry.checkout.session).map((m) => m.content)).toEqual(["first task", "one"]);
      const root = await store.prepareRetry("s1", "r1", { branchId: "again" });
      expect(root.task).toBe("first task");
      expect(root.checkout.head?.parent_id).toBeNull();
      expect(root.checkout.session.entries).toEqual([]);
      await expect(store.fork("s1", { branchId: "exp" })).rejects.toThrow("already exists");
      await expect(store.rollback("s1", "missing")).rejects.toThrow("does not exist");
      await store.append({ ...draft("run_started", { run_id: "r3", task: "on the branch" }, 1, "rolled") });
      expect((await store.checkout("s1", "main"))!.head!.revision).toBe(6);
      expect((await store.listBranches("s1")).map((x) => x.branch_id)).toEqual([
        "main",
        "exp",
        "rolled",
        retry.checkout.branch.branch_id,
        "again",
      ]);
      const audit = await store.checkout("s1", "main", a.record_id);
      expect(audit!.session.runs[0]!.result).toBeNull();
      const cp = await store.save((await store.load("s1"))!);
      expect(cp.type).toBe("checkpoint");
      expect(sessionMessages((await store.load("s1"))!).length).toBe(4);
      await expect(store.append(draft("run_started", { run_id: "r4", task: "t" }, 1, "nope"))).rejects.toThrow("unknown branch");
    });

    test("a conditional append against a stale head is a SessionConflictError, and writes nothing", async () => {
      const { storage: a, another } = await open();
      const b = await another();
      const first = await a.append(draft("run_started", { run_id: "r1", task: "t" }, 1));
      const seen = (await b.head("s1"))!;
      expect(seen.record_id).toBe(first.record_id);
      await a.append(draft("message_appended", { run_id: "r1", message: { role: "assistant", content: "x" } }, 2), {
        expectedHeadId: first.record_id,
        checkHead: true,
      });
      const err = await b
        .append(draft("message_appended", { run_id: "r1", message: { role: "assistant", content: "y" } }, 3), {
          expectedHeadId: seen.record_id,
          checkHead: true,
        })
        .catch((e) => e);
      expect(err).toBeInstanceOf(SessionConflictError);
      expect(err.message).toContain("Session branch 'main' head changed from");
      expect((await b.records("s1")).length).toBe(2);
      // a new branch expected to be new, but already started
      const fresh = await b
        .append(draft("run_started", { run_id: "r9", task: "t" }, 1, "main"), { expectedHeadId: null, checkHead: true })
        .catch((e) => e);
      expect(fresh).toBeInstanceOf(SessionConflictError);
    });

    test("invalid drafts are refused and write nothing", async () => {
      const { storage } = await open();
      await expect(storage.append(draft("run_started", { run_id: "r1", task: "t", n: Number.NaN }, 1))).rejects.toThrow("not JSON");
      await expect(storage.append(draft("branch_created", {}, 0))).rejects.toThrow("fork(), rollback(), or prepareRetry()");
      await expect(
        storage.append(draft("message_appended", { run_id: "zz", message: { role: "assistant", content: "x" } }, 1)),
      ).rejects.toThrow("unknown run");
      expect(await storage.records("s1")).toEqual([]);
      expect(await storage.exists("s1")).toBe(false);
      expect(await storage.listSessions()).toEqual([]);
      // the session still takes a valid first record at revision 1
      expect((await storage.append(draft("run_started", { run_id: "r1", task: "t" }, 1))).revision).toBe(1);
    });

    test("appendMany: a group's records chain in order on their branch heads; another instance reads them", async () => {
      const { storage, another } = await open();
      const written = await storage.appendMany([
        draft("run_started", { run_id: "r1", task: "t" }, 1),
        draft("message_appended", { run_id: "r1", message: { role: "assistant", content: null, tool_calls: [call("a", "echo")] } }, 2),
        draft("messages_appended", { run_id: "r1", messages: [{ role: "tool", tool_call_id: "a", content: "ok" }] }, 3),
      ]);
      expect(written.map((r) => [r.revision, r.type])).toEqual([
        [1, "run_started"],
        [2, "message_appended"],
        [3, "messages_appended"],
      ]);
      expect(written.map((r) => r.parent_id)).toEqual([null, written[0]!.record_id, written[1]!.record_id]);
      const again = await (await another()).records("s1");
      expect(again.map((r) => r.record_id)).toEqual(written.map((r) => r.record_id));
      expect(again.map((r) => serializeRecord(r))).toEqual(written.map((r) => serializeRecord(r)));
      // checkHead applies to the group's first record
      const stale = await storage
        .appendMany([draft("run_finished", { run_id: "r1", result: result("x") }, 4)], {
          expectedHeadId: written[0]!.record_id,
          checkHead: true,
        })
        .catch((e) => e);
      expect(stale).toBeInstanceOf(SessionConflictError);
      expect(await storage.appendMany([])).toEqual([]);
    });

    test("appendMany is all or none: a group with one bad record writes nothing, and the session goes on", async () => {
      const { storage, another } = await open();
      await storage.append(draft("run_started", { run_id: "r1", task: "t" }, 1));
      const ok = draft("message_appended", { run_id: "r1", message: { role: "assistant", content: "x" } }, 2);
      // refused before anything is written: data that is not JSON, a branch_created, another session
      await expect(storage.appendMany([ok, draft("messages_appended", { run_id: "r1", n: Number.NaN }, 3)])).rejects.toThrow("not JSON");
      await expect(storage.appendMany([ok, draft("branch_created", {}, 0)])).rejects.toThrow("fork(), rollback(), or prepareRetry()");
      await expect(storage.appendMany([ok, draft("run_finished", { run_id: "r1" }, 3, "main", "other")])).rejects.toThrow(
        "belong to one session",
      );
      // refused by the journal's rules part-way through the group
      await expect(
        storage.appendMany([ok, draft("message_appended", { run_id: "zz", message: { role: "assistant", content: "y" } }, 3)]),
      ).rejects.toThrow("unknown run");
      expect((await storage.records("s1")).map((r) => r.type)).toEqual(["run_started"]);
      expect((await (await another()).records("s1")).map((r) => r.type)).toEqual(["run_started"]);
      const next = await storage.appendMany([ok, draft("run_finished", { run_id: "r1", result: result("x") }, 3)]);
      expect(next.map((r) => r.revision)).toEqual([2, 3]);
      expect((await (await another()).records("s1")).map((r) => r.revision)).toEqual([1, 2, 3]);
    });

    test("listSessions and exists: sorted ids of the sessions that hold records; nothing is created by reading", async () => {
      const { storage, another } = await open();
      expect(await storage.listSessions()).toEqual([]);
      expect(await storage.load("nope")).toBeNull();
      expect(await storage.head("nope")).toBeNull();
      expect(await storage.exists("nope")).toBe(false);
      for (const id of ["zeta", "alpha", "Mid é", "s1"])
        await storage.append(draft("run_started", { run_id: "r1", task: "t" }, 1, "main", id));
      expect(await storage.listSessions()).toEqual(["Mid é", "alpha", "s1", "zeta"]);
      expect(await (await another()).listSessions()).toEqual(["Mid é", "alpha", "s1", "zeta"]);
      expect(await storage.exists("alpha")).toBe(true);
      expect(await storage.exists(" alpha ")).toBe(true);
      expect(await storage.exists("nope")).toBe(false);
    });

    test("restore: a checkout gives a new agent the same messages, and it continues the session", async () => {
      const { storage, another } = await open();
      const script = () => [
        {
          content: null,
          tool_calls: [{ id: "c1", name: "echo", arguments: '{"message":"hi"}' }],
          usage: { input_tokens: 10, output_tokens: 5 },
        },
        { content: "done", usage: { input_tokens: 20, output_tokens: 2 } },
        { content: "continued", usage: { input_tokens: 30, output_tokens: 2 } },
      ];
      const recorder = new SessionRecorder("s1", storage);
      const agent = createAgent({ agentId: "agent-a", model: new ScriptedModel(script()), runtime: createRuntime(), sinks: [recorder] });
      expect((await agent.run("echo hi")).status).toBe("completed");
      expect(recorder.errors).toEqual([]);
      const live = agent.messages.map((m) => ({ role: m.role, content: m.content }));
      await agent.shutdown();

      const other = await another();
      const records = await other.records("s1");
      expect(records.map((x) => x.type)).toEqual([
        "run_started",
        "message_appended",
        "messages_appended",
        "message_appended",
        "run_finished",
      ]);
      expect(records[1]!.data.message).toMatchObject({ role: "assistant", usage: { input_tokens: 10 } });
      const checkout = (await other.checkout("s1"))!;
      expect(sessionMessages(checkout.session).map((m) => ({ role: m.role, content: m.content }))).toEqual(live);

      const model2 = new ScriptedModel(script().slice(2));
      const agent2 = createAgent({
        agentId: "agent-a",
        model: model2,
        runtime: createRuntime(),
        sinks: [new SessionRecorder("s1", other)],
      });
      expect(agent2.canContinue).toBe(false);
      restoreSession(agent2, checkout);
      expect(agent2.lastResult?.output).toBe("done");
      expect(agent2.canContinue).toBe(true);
      expect((await agent2.continueRun()).output).toBe("continued");
      expect(model2.requests[0]!.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
      await agent2.shutdown();
      const after = (await storage.checkout("s1"))!;
      expect(after.session.runs.map((x) => x.intent)).toEqual(["task", "continue"]);
      expect(sessionMessages(after.session).at(-1)).toMatchObject({ role: "assistant", content: "continued" });

      const stranger = createAgent({ agentId: "agent-b", model: new ScriptedModel([]), runtime: createRuntime() });
      expect(() => restoreSession(stranger, after)).toThrow("belongs to agent 'agent-a'");
      await stranger.shutdown();
    });

    test("recoverRuns closes an interrupted run, answers the unanswered call, keeps sequences in order; a second call is a no-op", async () => {
      const { storage } = await open();
      await crashed(storage);
      const out = await storage.recoverRuns("s1", { reason: "test" });
      expect(out).toMatchObject({ session_id: "s1", branch_id: "main" });
      expect(out.recovered).toHaveLength(1);
      const [r] = out.recovered;
      expect(r!.run_id).toBe("r1");
      expect(r!.cancelled_tool_calls).toEqual(["c"]);
      expect(r!.result).toMatchObject({
        status: "cancelled",
        stop_reason: "external_abort",
        turns: 2,
        output: null,
        error: `${INTERRUPTED_RUN_ERROR} (test)`,
      });
      expect(r!.result.usage).toMatchObject({
        input_tokens: 10,
        output_tokens: 2,
        total_tokens: 12,
        request_count: 2,
        reported_request_count: 1,
        complete: false,
      });
      const records = await storage.records("s1");
      expect(records.map((x) => [x.type, x.sequence])).toEqual([
        ["run_started", 1],
        ["message_appended", 3],
        ["messages_appended", 5],
        ["message_appended", 9],
        ["messages_appended", 11],
        ["messages_appended", 12],
        ["run_finished", 13],
      ]);
      expect(records[5]!.data.messages).toEqual([
        {
          role: "tool",
          tool_call_id: "c",
          content: JSON.stringify({ status: "cancelled", tool: "echo", error: `${INTERRUPTED_RUN_ERROR} (test)` }),
        },
      ]);
      expect(records[6]!.record_id).toBe(r!.record_id);
      expect(out.head_id).toBe(r!.record_id);
      expect((await storage.load("s1"))!.runs[0]!.result).toEqual(r!.result);
      expect((await storage.recoverRuns("s1")).recovered).toEqual([]);
      expect(await storage.records("s1")).toHaveLength(7);
      await expect(storage.recoverRuns("nope")).rejects.toThrow(SessionNotFoundError);
      await expect(storage.recoverRuns("s1", { branch: "ghost" })).rejects.toThrow("session 's1' has no branch 'ghost'");
    });

    test("branch claims: one holder per branch, seen by another instance; other branches and sessions are free; released, it can be taken again", async () => {
      const { storage, another } = await open();
      const other = await another();
      const a = await storage.claimBranch("s", "main", "test a");
      for (const who of [storage, other]) {
        const err = await who.claimBranch("s", "main", "test b").catch((e) => e);
        expect(err).toBeInstanceOf(SessionBranchBusyError);
        expect(err).toMatchObject({ sessionId: "s", branchId: "main", pid: process.pid, holder: "test a" });
        expect(err.message).toContain(`session 's' branch 'main' is in use by process ${process.pid} (test a`);
        expect(await who.branchOwner("s", "main")).toBe(process.pid);
      }
      const side = await other.claimBranch("s", "exp");
      const otherSession = await storage.claimBranch("t", "main");
      a.release();
      a.release(); // idempotent
      expect(await storage.branchOwner("s", "main")).toBeNull();
      expect(await other.branchOwner("s", "main")).toBeNull();
      (await other.claimBranch("s", "main")).release();
      side.release();
      otherSession.release();
      // asked through the instance that released it (a network store releases in the background)
      expect(await other.branchOwner("s", "exp")).toBeNull();
    });

    test("a run that is still going is never recovered: SessionRunActiveError, nothing written; fine once it finished", async () => {
      const { storage: recorded, another } = await open();
      const other = await another();
      const agent = createAgent({
        agentId: "agent-a",
        model: new ScriptedModel([{ content: "late", delay_ms: 600_000 }]),
        runtime: createRuntime(),
        sinks: [new SessionRecorder("s1", recorded)],
      });
      const done = agent.run("slow");
      for (let i = 0; i < 400 && (await other.records("s1")).length === 0; i++) await Bun.sleep(10);
      expect((await other.records("s1")).map((r) => r.type)).toEqual(["run_started"]);
      const runId = (await other.records("s1"))[0]!.data.run_id as string;
      for (let i = 0; i < 400 && (await other.runOwner("s1", runId)) === null; i++) await Bun.sleep(10);
      const err = await other.recoverRuns("s1").catch((e) => e);
      expect(err).toBeInstanceOf(SessionRunActiveError);
      expect((err as SessionRunActiveError).pid).toBe(process.pid);
      expect((err as Error).message).toContain("is still going in process");
      expect(await other.records("s1")).toHaveLength(1);
      agent.abort("test over");
      expect((await done).status).toBe("cancelled");
      await agent.shutdown();
      expect((await other.recoverRuns("s1")).recovered).toEqual([]);
      expect(await other.runOwner("s1", runId)).toBeNull();
    });

    test("force clears a claim and recovers a run whose holder is not really there", async () => {
      const { storage, another } = await open();
      await storage.append(draft("run_started", { run_id: "r1", task: "t" }, 1));
      const held = await storage.claimBranch("s1", "main", "stuck");
      const other = await another();
      expect(await other.recoverRuns("s1").catch((e) => e)).toBeInstanceOf(SessionRunActiveError);
      const r = await other.recoverRuns("s1", { force: true });
      expect(r.recovered.map((x) => x.run_id)).toEqual(["r1"]);
      expect(await other.branchOwner("s1", "main")).toBeNull();
      (await other.claimBranch("s1", "main")).release();
      held.release();
    });

    test("approvals: a journaled request waits, another instance answers it once, a crash while it waits suspends the run", async () => {
      const { storage, another } = await open();
      await storage.append(draft("run_started", { run_id: "r1", task: "t" }, 1));
      const call = { id: "w1", type: "function", function: { name: "write", arguments: "{}" } };
      await storage.append(
        draft("message_appended", { run_id: "r1", message: { role: "assistant", content: null, tool_calls: [call] } }, 3),
      );
      await storage.append(
        draft(
          "approval_requested",
          { run_id: "r1", tool_call_id: "w1", tool: "write", effect: "side_effecting", rule_id: "ask", reason: null, arguments: {} },
          5,
        ),
      );
      const other = await another();
      expect(pendingApprovals((await other.checkout("s1"))!.session).map((a) => a.tool_call_id)).toEqual(["w1"]);
      // the crash rules: the tool never started, so the run is suspended, not cancelled
      const r = await storage.recoverRuns("s1");
      expect(r.recovered[0]!.result).toMatchObject({ status: "suspended", stop_reason: "awaiting_approval" });
      expect(r.recovered[0]!.resumable_tool_calls).toEqual(["w1"]);
      await decideApproval(other, "s1", "w1", { approved: true, decidedBy: "contract" });
      expect(pendingApprovals((await storage.checkout("s1"))!.session)).toEqual([]);
      expect(resumeDecisions((await storage.checkout("s1"))!.session).get("w1")).toMatchObject({ approved: true, ruleId: "ask" });
      const twice = await decideApproval(storage, "s1", "w1", { approved: false }).catch((e) => e);
      expect(twice).toBeInstanceOf(SessionApprovalError);
      const raw = draft("approval_decided", { tool_call_id: "w1", approved: false }, 0);
      expect(storage.append(raw)).rejects.toBeInstanceOf(SessionValidationError);
    });

    test("importRecords writes a whole session exactly as given (ids, parents, revisions, times); another instance reads it the same", async () => {
      const { storage: source } = await open();
      await twoRuns(source);
      await source.fork("s1", { branchId: "alt" });
      const records = await source.records("s1");
      const { storage, another } = await open();
      expect(await storage.importRecords(records)).toEqual({ session_id: "s1", records: records.length });
      expect(await storage.records("s1")).toEqual(records);
      expect(await (await another()).records("s1")).toEqual(records);
      // the journal's text: one canonical line per record, in revision order
      expect(await storage.journalText("s1")).toBe(records.map((r) => serializeRecord(r)).join(""));
      expect(await storage.journalText("nope")).toBe("");
      expect((await storage.listBranches("s1")).map((b) => b.branch_id)).toEqual(["main", "alt"]);
      // a copy under another id keeps the record ids
      const copy = structuredClone(records).map((r) => ({ ...r, session_id: "s2" }));
      await storage.importRecords(copy);
      expect(sessionMessages((await storage.checkout("s2"))!.session)).toEqual(sessionMessages((await storage.checkout("s1"))!.session));
      // and the session goes on from its imported head
      const next = await storage.append(draft("run_started", { run_id: "r3", task: "third" }, 1));
      expect(next.revision).toBe(records.length + 1);
    });

    test("a record over the JSON core's 1 MiB input limit (a 2 MiB task) is written and read back whole, by another instance too", async () => {
      const { storage, another } = await open();
      const task = `summarise:\n${"y".repeat(2 << 20)}`;
      await storage.append(draft("run_started", { run_id: "big", task }, 1));
      expect((await storage.records("s1"))[0]!.data.task).toBe(task);
      expect((await (await another()).records("s1"))[0]!.data.task).toBe(task);
    });

    test("importRecords refuses a session that exists, and records that break the journal's rules, writing nothing", async () => {
      const { storage: source } = await open();
      await twoRuns(source);
      const records = await source.records("s1");
      const { storage } = await open();
      await storage.append(draft("run_started", { run_id: "x", task: "t" }, 1, "main", "taken"));
      const taken = records.map((r) => ({ ...r, session_id: "taken" }));
      expect(storage.importRecords(taken)).rejects.toBeInstanceOf(SessionConflictError);
      expect((await storage.records("taken")).length).toBe(1);
      const gap = records.filter((r) => r.revision !== 3);
      const orphan = records.map((r, i) => (i === 4 ? { ...r, parent_id: "no-such-record" } : r));
      const dup = records.map((r, i) => (i === 5 ? { ...r, record_id: records[1]!.record_id } : r));
      const mixed = records.map((r, i) => (i === 2 ? { ...r, session_id: "other" } : r));
      const version = records.map((r, i) => (i === 1 ? { ...r, journal_schema_version: 99 } : r));
      for (const bad of [gap, orphan, dup, mixed, version, []]) {
        const err = await storage.importRecords(bad as typeof records).catch((e) => e);
        expect(err).toBeInstanceOf(SessionError);
        expect(await storage.exists("s1")).toBe(false);
      }
    });

    if (harness.tear !== undefined) {
      const tear = harness.tear;
      test("a torn write is ignored on read and cut off by the next append", async () => {
        const { storage, another } = await open();
        await twoRuns(storage);
        tear(storage, "s1", '{"agent_id":"agent-a","bra');
        const fresh = await another();
        expect((await fresh.records("s1")).length).toBe(6);
        const r = await fresh.append(draft("run_started", { run_id: "r3", task: "third" }, 1));
        expect(r.revision).toBe(7);
        expect((await (await another()).records("s1")).map((x) => x.revision)).toEqual([1, 2, 3, 4, 5, 6, 7]);
      });

      test("a torn first write leaves an empty session that exists; the next append starts it at revision 1", async () => {
        const { storage, another } = await open();
        tear(storage, "s1", '{"agent_id":');
        expect(await storage.load("s1")).toBeNull();
        expect(await storage.records("s1")).toEqual([]);
        expect(await storage.exists("s1")).toBe(true);
        await storage.append(draft("run_started", { run_id: "r1", task: "t" }, 1));
        expect((await (await another()).records("s1")).map((r) => r.revision)).toEqual([1]);
      });
    }
  });
}
