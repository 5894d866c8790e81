// Approvals in the journal (issue 15): requests journaled before anyone is
// asked, a run that suspends instead of waiting, answers given later through
// the journal, resume, and the crash rules of recoverRuns, on the JSONL
// storage with real agents and scripted models.
import { describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import { createAgent, type AgentEvent } from "../../src/agent/index.ts";
import { ScriptedModel } from "../../src/providers/scripted.ts";
import { policyFromConfig } from "../../src/runtime/middleware/policy.ts";
import { createRuntime } from "../../src/runtime/runtime.ts";
import {
  decideApproval,
  INTERRUPTED_CALL_ERROR,
  JsonlSessionStorage,
  pendingApprovals,
  restoreSession,
  resumeDecisions,
  SessionApprovalError,
  SessionRecorder,
  SessionValidationError,
  type JournalStorage,
  type SessionRecordDraft,
} from "../../src/session/index.ts";
import type { ToolDefinition } from "../../src/tools/definition.ts";
import { tmpPerTest } from "../support/tmp.ts";

const tmp = tmpPerTest("agentcore-approvals-");

function tools(log: string[]) {
  const write: ToolDefinition<{ text: string }> = {
    name: "write",
    description: "side-effecting",
    parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
    effect: "side_effecting",
    handler: ({ text }) => {
      log.push(`write:${text}`);
      return { written: text };
    },
  };
  const look: ToolDefinition<{ q: string }> = {
    name: "look",
    description: "read-only",
    parameters: { type: "object", properties: { q: { type: "string" } }, required: ["q"] },
    effect: "read_only",
    handler: ({ q }) => {
      log.push(`look:${q}`);
      return { seen: q };
    },
  };
  return [write, look];
}

const gate = (approver?: () => Promise<{ approved: boolean; reason?: string }>) =>
  policyFromConfig(
    {
      default: "require_approval",
      rules: [
        { id: "read-only", action: "allow", effects: ["read_only"] },
        { id: "side-effecting", action: "require_approval", effects: ["side_effecting"], reason: "asks first" },
      ],
    },
    approver === undefined ? {} : { approver },
  );

const call = (id: string, name: string, args: unknown) => ({ id, name, arguments: JSON.stringify(args) });

function agentOn(
  storage: JournalStorage,
  log: string[],
  turns: unknown[],
  opts: { suspend?: boolean; approver?: () => Promise<{ approved: boolean; reason?: string }> } = {},
) {
  const events: AgentEvent[] = [];
  const agent = createAgent({
    agentId: "a1",
    model: new ScriptedModel(turns as never),
    runtime: createRuntime({ builtins: false, tools: tools(log), middleware: [gate(opts.approver)] }),
    sinks: [new SessionRecorder("s", storage), (e: AgentEvent) => void events.push(e)],
    ...(opts.suspend === true ? { suspendOnApproval: true } : {}),
  });
  return { agent, events };
}

describe("suspend on approval", () => {
  test("the run settles the turn's other calls, ends suspended / awaiting_approval, the request is journaled before the end", async () => {
    const storage = new JsonlSessionStorage(tmp());
    const log: string[] = [];
    const { agent } = agentOn(
      storage,
      log,
      [{ content: null, tool_calls: [call("w1", "write", { text: "x", token: "s3cret" }), call("l1", "look", { q: "y" })] }],
      {
        suspend: true,
      },
    );
    const r = await agent.run("do it");
    await agent.shutdown();
    expect(r).toMatchObject({ status: "suspended", stop_reason: "awaiting_approval", turns: 1 });
    expect(log).toEqual(["look:y"]);
    const records = await storage.records("s");
    const types = records.map((x) => x.type);
    expect(types).toEqual(["run_started", "message_appended", "approval_requested", "messages_appended", "run_finished"]);
    const req = records[2]!;
    expect(req.data).toMatchObject({
      tool_call_id: "w1",
      tool: "write",
      effect: "side_effecting",
      rule_id: "side-effecting",
      reason: "asks first",
      suspended: true,
    });
    // the journaled preview is redacted
    expect(req.data.arguments).toEqual({ text: "x", token: "[redacted]" });
    const c = (await storage.checkout("s"))!;
    expect(pendingApprovals(c.session).map((a) => a.tool_call_id)).toEqual(["w1"]);
  });

  test("approve, then resume: the approved call runs once, the loop goes on", async () => {
    const storage = new JsonlSessionStorage(tmp());
    const log: string[] = [];
    const first = agentOn(storage, log, [{ content: null, tool_calls: [call("w1", "write", { text: "x" })] }], { suspend: true });
    await first.agent.run("do it");
    await first.agent.shutdown();
    await decideApproval(storage, "s", "w1", { approved: true, reason: "fine", decidedBy: "test" });
    const c = (await storage.checkout("s"))!;
    expect(pendingApprovals(c.session)).toEqual([]);
    const second = agentOn(storage, log, [{ content: "done" }]);
    restoreSession(second.agent, c);
    const r = await second.agent.resumeRun(resumeDecisions(c.session));
    await second.agent.shutdown();
    expect(r).toMatchObject({ status: "completed", stop_reason: "text_response", output: "done" });
    expect(log).toEqual(["write:x"]);
    const after = (await storage.checkout("s"))!;
    expect(after.session.approvals).toBeUndefined();
    const tool = after.session.entries.find((e) => e.message.role === "tool")!;
    expect(JSON.parse(tool.message.content as string)).toEqual({ written: "x" });
    // the approver was never asked in the second process: no second request
    expect((await storage.records("s")).filter((x) => x.type === "approval_requested").length).toBe(1);
  });

  test("deny, then resume: the model gets the policy's rejection payload and the run goes on", async () => {
    const storage = new JsonlSessionStorage(tmp());
    const log: string[] = [];
    const first = agentOn(storage, log, [{ content: null, tool_calls: [call("w1", "write", { text: "x" })] }], { suspend: true });
    await first.agent.run("do it");
    await first.agent.shutdown();
    await decideApproval(storage, "s", "w1", { approved: false, reason: "not today" });
    const c = (await storage.checkout("s"))!;
    const model = new ScriptedModel([{ content: "ok, I will not" }]);
    const agent = createAgent({
      agentId: "a1",
      model,
      runtime: createRuntime({ builtins: false, tools: tools(log), middleware: [gate()] }),
      sinks: [new SessionRecorder("s", storage)],
    });
    restoreSession(agent, c);
    const r = await agent.resumeRun(resumeDecisions(c.session));
    await agent.shutdown();
    expect(r).toMatchObject({ status: "completed", output: "ok, I will not" });
    expect(log).toEqual([]);
    const tool = agent.messages.find((m) => m.role === "tool")!;
    expect(JSON.parse(tool.content as string)).toEqual({
      status: "rejected",
      tool: "write",
      reason: "not today",
      rule_id: "side-effecting",
    });
  });

  test("adversarial answers: an unknown call, twice, and a call of another branch are refused naming what waits", async () => {
    const storage = new JsonlSessionStorage(tmp());
    const log: string[] = [];
    // a branch forked before the suspension
    const warm = agentOn(storage, log, [{ content: "hi" }]);
    await warm.agent.run("hello");
    await warm.agent.shutdown();
    await storage.fork("s", { branchId: "side" });
    const c0 = (await storage.checkout("s"))!;
    const first = agentOn(storage, log, [{ content: null, tool_calls: [call("w1", "write", { text: "x" })] }], { suspend: true });
    restoreSession(first.agent, c0);
    await first.agent.run("do it");
    await first.agent.shutdown();
    const unknown = await decideApproval(storage, "s", "nope", { approved: true }).catch((e) => e);
    expect(unknown).toBeInstanceOf(SessionApprovalError);
    expect(unknown.message).toContain("no approval of call 'nope' waits; waiting: w1 (write)");
    const other = await decideApproval(storage, "s", "w1", { approved: true, branch: "side" }).catch((e) => e);
    expect(other).toBeInstanceOf(SessionApprovalError);
    expect(other.message).toContain("waiting: none");
    await decideApproval(storage, "s", "w1", { approved: true });
    const twice = await decideApproval(storage, "s", "w1", { approved: false }).catch((e) => e);
    expect(twice).toBeInstanceOf(SessionApprovalError);
    expect(twice.message).toContain("answered already");
    // a raw second decision is refused by the journal itself
    const raw: SessionRecordDraft = {
      session_id: "s",
      agent_id: "a1",
      branch_id: "main",
      sequence: 0,
      type: "approval_decided",
      data: { tool_call_id: "w1", approved: false },
    };
    expect(storage.append(raw)).rejects.toBeInstanceOf(SessionValidationError);
  });

  test("an in-process approval journals request and answer around the call", async () => {
    const storage = new JsonlSessionStorage(tmp());
    const log: string[] = [];
    const { agent } = agentOn(storage, log, [{ content: null, tool_calls: [call("w1", "write", { text: "x" })] }, { content: "done" }], {
      approver: async () => ({ approved: true, reason: "yes" }),
    });
    await agent.run("do it");
    await agent.shutdown();
    const records = await storage.records("s");
    expect(records.map((r) => r.type)).toEqual([
      "run_started",
      "message_appended",
      "approval_requested",
      "approval_decided",
      "messages_appended",
      "message_appended",
      "run_finished",
    ]);
    expect(records[3]!.data).toMatchObject({ tool_call_id: "w1", approved: true, reason: "yes", decided_by: "approver" });
    expect((await storage.checkout("s"))!.session.approvals).toBeUndefined();
  });
});

describe("recoverRuns: the crash rules", () => {
  const base = (type: SessionRecordDraft["type"], data: Record<string, unknown>, sequence: number): SessionRecordDraft => ({
    session_id: "s",
    agent_id: "a1",
    branch_id: "main",
    sequence,
    type,
    data,
  });
  const tc = (id: string, name: string) => ({
    id,
    type: "function",
    function: { name, arguments: name === "look" ? '{"q":"z"}' : '{"text":"z"}' },
  });
  const req = (id: string, tool: string, effect: string, seq: number) =>
    base("approval_requested", { run_id: "r1", tool_call_id: id, tool, effect, rule_id: "x", reason: null, arguments: {} }, seq);

  test("a run killed while an approval waits becomes suspended (its tool never started); approved and resumed, it completes", async () => {
    const storage = new JsonlSessionStorage(tmp());
    await storage.append(base("run_started", { run_id: "r1", task: "t" }, 1));
    await storage.append(
      base("message_appended", { run_id: "r1", message: { role: "assistant", content: null, tool_calls: [tc("w1", "write")] } }, 3),
    );
    await storage.append(req("w1", "write", "side_effecting", 5));
    const r = await storage.recoverRuns("s");
    expect(r.recovered[0]).toMatchObject({ cancelled_tool_calls: [], interrupted_tool_calls: [], resumable_tool_calls: ["w1"] });
    expect(r.recovered[0]!.result).toMatchObject({ status: "suspended", stop_reason: "awaiting_approval" });
    await decideApproval(storage, "s", "w1", { approved: true });
    const log: string[] = [];
    const c = (await storage.checkout("s"))!;
    const { agent } = agentOn(storage, log, [{ content: "done" }]);
    restoreSession(agent, c);
    expect(await agent.resumeRun(resumeDecisions(c.session))).toMatchObject({ status: "completed" });
    await agent.shutdown();
    expect(log).toEqual(["write:z"]);
  });

  test("an approved side-effecting call with no result is answered interrupted (never replayed); a read-only one is left to run again", async () => {
    const storage = new JsonlSessionStorage(tmp());
    await storage.append(base("run_started", { run_id: "r1", task: "t" }, 1));
    await storage.append(
      base(
        "message_appended",
        { run_id: "r1", message: { role: "assistant", content: null, tool_calls: [tc("w1", "write"), tc("l1", "look")] } },
        3,
      ),
    );
    await storage.append(req("w1", "write", "side_effecting", 5));
    await storage.append(
      base("approval_decided", { run_id: "r1", tool_call_id: "w1", approved: true, reason: null, decided_by: "terminal" }, 6),
    );
    const r = await storage.recoverRuns("s", { toolEffect: (n) => (n === "look" ? "read_only" : undefined) });
    expect(r.recovered[0]).toMatchObject({ interrupted_tool_calls: ["w1"], resumable_tool_calls: ["l1"] });
    const c = (await storage.checkout("s"))!;
    const answer = c.session.entries.find((e) => e.message.role === "tool")!;
    expect(JSON.parse(answer.message.content as string)).toEqual({ status: "interrupted", tool: "write", error: INTERRUPTED_CALL_ERROR });
    const log: string[] = [];
    const { agent } = agentOn(storage, log, [{ content: "done" }]);
    restoreSession(agent, c);
    expect(await agent.resumeRun(resumeDecisions(c.session))).toMatchObject({ status: "completed" });
    await agent.shutdown();
    expect(log).toEqual(["look:z"]);
  });

  test("without approvals or calls to run again, a recovery closes the run cancelled as before", async () => {
    const storage = new JsonlSessionStorage(tmp());
    await storage.append(base("run_started", { run_id: "r1", task: "t" }, 1));
    await storage.append(
      base("message_appended", { run_id: "r1", message: { role: "assistant", content: null, tool_calls: [tc("w1", "write")] } }, 3),
    );
    const r = await storage.recoverRuns("s");
    expect(r.recovered[0]).toMatchObject({ cancelled_tool_calls: ["w1"], resumable_tool_calls: [] });
    expect(r.recovered[0]!.result).toMatchObject({ status: "cancelled", stop_reason: "external_abort" });
  });
});

describe("a real process killed mid-call (SIGKILL)", () => {
  const FIXTURE = new URL("./fixtures/crash-agent.ts", import.meta.url).pathname;

  test("a read-only call that was running is run again on resume (its effect from the resuming registry)", async () => {
    const dir = tmp();
    const child = Bun.spawn([process.execPath, FIXTURE, dir], { stdout: "pipe", stderr: "pipe", stdin: "ignore" });
    const reader = child.stdout.getReader();
    let out = "";
    while (!out.includes("probing")) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the child ended: ${await new Response(child.stderr).text()}`);
      out += new TextDecoder().decode(value);
    }
    child.kill("SIGKILL");
    await child.exited;
    const storage = new JsonlSessionStorage(`${dir}/sessions`);
    const probes = () => fs.readFileSync(`${dir}/probe.log`, "utf8").split("\n").filter(Boolean).length;
    expect(probes()).toBe(1);
    const r = await storage.recoverRuns("s", { toolEffect: (n) => (n === "probe" ? "read_only" : undefined) });
    expect(r.recovered[0]).toMatchObject({ resumable_tool_calls: ["p1"], interrupted_tool_calls: [] });
    expect(r.recovered[0]!.result.stop_reason).toBe("awaiting_approval");
    const c = (await storage.checkout("s"))!;
    const log: string[] = [];
    const probe: ToolDefinition<{ q: string }> = {
      name: "probe",
      description: "read-only probe",
      parameters: { type: "object", properties: { q: { type: "string" } }, required: ["q"] },
      effect: "read_only",
      handler: ({ q }) => {
        log.push(q);
        fs.appendFileSync(`${dir}/probe.log`, "probe\n");
        return { seen: q };
      },
    };
    const agent = createAgent({
      agentId: "a1",
      model: new ScriptedModel([{ content: "seen" }]),
      runtime: createRuntime({ builtins: false, tools: [probe], middleware: [gate()] }),
      sinks: [new SessionRecorder("s", storage)],
    });
    restoreSession(agent, c);
    expect(await agent.resumeRun(resumeDecisions(c.session))).toMatchObject({ status: "completed", output: "seen" });
    await agent.shutdown();
    expect(log).toEqual(["x"]);
    expect(probes()).toBe(2);
  }, 30_000);
});
