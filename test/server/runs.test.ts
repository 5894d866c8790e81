/**
 * Agent runs over the daemon with scripted models: SSE streaming, JSON
 * results, approvals, abort, disconnects, two runs at once, steering,
 * follow-ups, continue, compaction and sessions. Real sockets throughout.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { JsonlSessionStorage } from "../../src/session/jsonl.ts";
import { binaryPath } from "../support/binary.ts";
import { chunk, startOpenAIServer, type ScriptedOpenAIServer } from "../support/openai-server.ts";
import { collectStderr, eventually, SseReader, startTestDaemon, type TestDaemon } from "../support/daemon.ts";

const echoCall = (id: string, message: string) => ({ id, name: "echo", arguments: JSON.stringify({ message }) });
const sleepCall = (id: string, ms: number) => ({ id, name: "sleep", arguments: JSON.stringify({ ms }) });

let d: TestDaemon;
beforeAll(async () => {
  d = await startTestDaemon({
    policy: { default: "allow", rules: [{ id: "ask-echo", action: "require_approval", tools: ["echo"], reason: "echo is reviewed" }] },
  });
});
afterAll(() => d.stop());

/** Start a run and return its SSE reader. */
async function startRun(body: Record<string, unknown>, daemon = d): Promise<{ res: Response; sse: SseReader; runId: string }> {
  const res = await daemon.req("/v1/runs", { method: "POST", json: body });
  expect(res.status).toBe(201);
  expect(res.headers.get("content-type")).toContain("text/event-stream");
  const runId = res.headers.get("x-run-id")!;
  expect(runId).toMatch(/^run_[0-9a-f]{24}$/);
  expect(res.headers.get("location")).toBe(`/v1/runs/${runId}`);
  return { res, sse: new SseReader(res), runId };
}

async function runView(runId: string, daemon = d) {
  const r = await daemon.req(`/v1/runs/${runId}`);
  expect(r.status).toBe(200);
  return r.json();
}

describe("runs over SSE", () => {
  test("a scripted run streams its events in order, then done with the result", async () => {
    const { sse, runId } = await startRun({
      task: "say hi",
      script: [{ content: "Let me sleep.", tool_calls: [sleepCall("c1", 1)] }, { content: "Hi there." }],
    });
    const all = await sse.all();
    expect(all.map((m) => m.event)).toEqual([
      "agent_started",
      "turn_started",
      "assistant_text_delta",
      "message_completed",
      "tool_started",
      "tool_progressed",
      "tool_completed",
      "turn_completed",
      "turn_started",
      "assistant_text_delta",
      "message_completed",
      "turn_completed",
      "agent_finished",
      "done",
    ]);
    // ids number the run's items from 1; done closes the stream and has none
    expect(all.slice(0, -1).map((m) => Number(m.id))).toEqual(all.slice(0, -1).map((_, i) => i + 1));
    expect(all.at(-1)!.id).toBeUndefined();
    const agentEvents = all.slice(0, -1).map((m) => m.data);
    expect(agentEvents.map((e) => e.sequence)).toEqual(agentEvents.map((_, i) => i + 1));
    expect(new Set(agentEvents.map((e) => e.run_id)).size).toBe(1);
    expect(all[0]!.data.task).toBe("say hi");
    expect(all.find((m) => m.event === "tool_completed")!.data.result.error).toBeNull();
    const done = all.at(-1)!.data;
    expect(done.run_id).toBe(runId);
    expect(done.status).toBe("idle");
    expect(done.result).toMatchObject({ status: "completed", stop_reason: "text_response", turns: 2, output: "Hi there." });
    const view = await runView(runId);
    expect(view).toMatchObject({
      run_id: runId,
      status: "idle",
      result: { status: "completed" },
      can_continue: true,
      pending_approvals: 0,
    });
    expect(view.results).toHaveLength(1);
  });

  test("heartbeat comments keep a quiet stream alive", async () => {
    const { sse } = await startRun({ task: "wait", script: [{ content: "slow", delay_ms: 400 }] });
    await sse.all();
    expect(sse.heartbeats).toBeGreaterThan(0);
    expect(sse.messages.at(-1)!.data.result.status).toBe("completed");
  });

  test("Accept: application/json returns the run once it is idle", async () => {
    const r = await d.req("/v1/runs", {
      method: "POST",
      headers: { accept: "application/json" },
      json: { task: "t", script: [{ content: "answer" }], max_steps: 3, system: "be brief" },
    });
    expect(r.status).toBe(201);
    expect(r.headers.get("content-type")).toContain("application/json");
    const view = await r.json();
    expect(view.status).toBe("idle");
    expect(view.result).toMatchObject({ status: "completed", output: "answer" });
  });

  test("a model failure still finishes the run (failed) and the stream", async () => {
    const { sse } = await startRun({ task: "t", script: [{ error: { kind: "rate_limit", message: "slow down" } }] });
    const all = await sse.all();
    expect(all.at(-1)!.data.result).toMatchObject({ status: "failed", stop_reason: "runtime_error" });
  });
});

describe("approvals", () => {
  test("round trip: the approval shows as an event and at GET /v1/approvals; approving runs the tool", async () => {
    const { sse, runId } = await startRun({
      task: "echo it",
      script: [{ content: null, tool_calls: [echoCall("c1", "hello")] }, { content: "echoed" }],
    });
    const req = await sse.until((m) => m.event === "approval_requested");
    const approval = req!.data.approval;
    const agentRun = sse.messages.find((m) => m.event === "agent_started")!.data;
    expect(approval.run_id).toBe(agentRun.run_id);
    expect(approval.agent_id).toBe(agentRun.agent_id);
    expect(approval).toMatchObject({
      tool: "echo",
      effect: "read_only",
      tool_call_id: "c1",
      reason: "echo is reviewed",
      rule_id: "ask-echo",
      arguments: { message: "hello" },
    });
    const list = await (await d.req("/v1/approvals")).json();
    expect(list.approvals.map((a: { approval_id: string }) => a.approval_id)).toContain(approval.approval_id);
    expect((await runView(runId)).pending_approvals).toBe(1);
    const ans = await d.req(`/v1/approvals/${approval.approval_id}`, { method: "POST", json: { approved: true, reason: "fine" } });
    expect(ans.status).toBe(200);
    expect(await ans.json()).toEqual({ approval_id: approval.approval_id, approved: true, reason: "fine" });
    const resolved = await sse.until((m) => m.event === "approval_resolved");
    expect(resolved!.data.outcome).toMatchObject({ approved: true, by: "client" });
    const done = await sse.until((m) => m.event === "done");
    const completed = sse.messages.find((m) => m.event === "tool_completed")!.data;
    expect(completed.result.error).toBeNull();
    expect(done!.data.result).toMatchObject({ status: "completed", output: "echoed" });
    // answered approvals are gone; answering twice is a 404
    expect((await (await d.req("/v1/approvals")).json()).approvals).toEqual([]);
    const again = await d.req(`/v1/approvals/${approval.approval_id}`, { method: "POST", json: { approved: true } });
    expect(again.status).toBe(404);
  });

  test("denying ends the run rejected, without running the tool", async () => {
    const { sse } = await startRun({
      task: "echo it",
      script: [{ content: null, tool_calls: [echoCall("c1", "secret")] }, { content: "never" }],
    });
    const req = await sse.until((m) => m.event === "approval_requested");
    const bad = await d.req(`/v1/approvals/${req!.data.approval.approval_id}`, { method: "POST", json: { approved: "yes" } });
    expect(bad.status).toBe(400);
    await d.req(`/v1/approvals/${req!.data.approval.approval_id}`, { method: "POST", json: { approved: false, reason: "not today" } });
    const done = await sse.until((m) => m.event === "done");
    expect(done!.data.result).toMatchObject({ status: "rejected", stop_reason: "tool_rejected" });
    expect(done!.data.result.output).toContain("not today");
  });

  test("an unanswered approval times out to deny", async () => {
    const t = await startTestDaemon({ approvalTimeoutMs: 100, policy: { default: "require_approval" } });
    try {
      const { sse } = await startRun(
        { task: "t", script: [{ content: null, tool_calls: [echoCall("c1", "x")] }, { content: "never" }] },
        t,
      );
      const resolved = await sse.until((m) => m.event === "approval_resolved");
      expect(resolved!.data.outcome).toMatchObject({ approved: false, by: "timeout" });
      const done = await sse.until((m) => m.event === "done");
      expect(done!.data.result).toMatchObject({ status: "rejected", stop_reason: "tool_rejected" });
    } finally {
      await t.stop();
    }
  });
});

describe("control", () => {
  test("abort in the middle of a run: the tool is interrupted and the run ends cancelled", async () => {
    const { sse, runId } = await startRun({
      task: "t",
      script: [{ content: null, tool_calls: [sleepCall("c1", 600_000)] }, { content: "never" }],
    });
    await sse.until((m) => m.event === "tool_progressed");
    expect((await runView(runId)).status).toBe("running");
    const r = await d.req(`/v1/runs/${runId}/abort`, { method: "POST", json: { reason: "changed my mind" } });
    expect(await r.json()).toEqual({ run_id: runId, aborted: true });
    const done = await sse.until((m) => m.event === "done");
    expect(done!.data.result).toMatchObject({ status: "cancelled", stop_reason: "external_abort", error: "changed my mind" });
    // nothing left to abort (an empty body is allowed here)
    const again = await d.req(`/v1/runs/${runId}/abort`, { method: "POST" });
    expect(await again.json()).toEqual({ run_id: runId, aborted: false });
  });

  test("a client that disconnects aborts its run", async () => {
    const { sse, runId } = await startRun({
      task: "t",
      script: [{ content: null, tool_calls: [sleepCall("c1", 600_000)] }, { content: "never" }],
    });
    await sse.until((m) => m.event === "tool_progressed");
    await sse.cancel();
    const view = await eventually(async () => {
      const v = await runView(runId);
      return v.status === "idle" ? v : undefined;
    });
    expect(view.result).toMatchObject({ status: "cancelled", stop_reason: "external_abort", error: "the client disconnected" });
  });

  test("a detached run survives its client; the client reattaches with Last-Event-ID and misses nothing", async () => {
    const { sse, runId } = await startRun({
      task: "t",
      detached: true,
      script: [{ content: null, tool_calls: [sleepCall("c1", 300)] }, { content: "finished alone" }],
    });
    const seen = await sse.until((m) => m.event === "tool_progressed");
    await sse.cancel();
    const watch = new SseReader(await d.req(`/v1/runs/${runId}/events`, { headers: { "last-event-id": seen!.id! } }));
    const done = await watch.until((m) => m.event === "done");
    expect(done!.data.result).toMatchObject({ status: "completed", output: "finished alone" });
    const ids = [...sse.messages, ...watch.messages].filter((m) => m.id !== undefined).map((m) => Number(m.id));
    expect(ids).toEqual(ids.map((_, i) => i + 1)); // no gap, no duplicate across the two streams
    expect(watch.messages[0]!.event).toBe("tool_completed");
    expect((await runView(runId)).result.status).toBe("completed");
    // after=0 replays the whole run to a late watcher, then done
    const late = new SseReader(await d.req(`/v1/runs/${runId}/events?after=0`));
    const replay = await late.all();
    expect(replay[0]!.event).toBe("agent_started");
    expect(replay.at(-1)!.event).toBe("done");
    expect(replay.length).toBe(ids.length + 1);
    const bad = await d.req(`/v1/runs/${runId}/events`, { headers: { "last-event-id": "x1" } });
    expect(bad.status).toBe(400);
  });

  test("two runs at once: both wait for approval at the same time, each stream carries only its own run", async () => {
    const a = await startRun({ task: "a", script: [{ content: null, tool_calls: [echoCall("a1", "from a")] }, { content: "A done" }] });
    const b = await startRun({ task: "b", script: [{ content: null, tool_calls: [echoCall("b1", "from b")] }, { content: "B done" }] });
    const ra = await a.sse.until((m) => m.event === "approval_requested");
    const rb = await b.sse.until((m) => m.event === "approval_requested");
    const pending = (await (await d.req("/v1/approvals")).json()).approvals;
    expect(pending).toHaveLength(2);
    expect(
      (await (await d.req("/v1/runs")).json()).runs.filter((r: { status: string }) => r.status === "running").length,
    ).toBeGreaterThanOrEqual(2);
    for (const r of [rb, ra]) await d.req(`/v1/approvals/${r!.data.approval.approval_id}`, { method: "POST", json: { approved: true } });
    const [da, db] = await Promise.all([a.sse.until((m) => m.event === "done"), b.sse.until((m) => m.event === "done")]);
    expect(da!.data.result.output).toBe("A done");
    expect(db!.data.result.output).toBe("B done");
    const ids = (s: SseReader) => new Set(s.messages.filter((m) => m.data.agent_id !== undefined).map((m) => m.data.agent_id));
    expect(ids(a.sse).size).toBe(1);
    expect(ids(b.sse).size).toBe(1);
    expect([...ids(a.sse)][0]).not.toBe([...ids(b.sse)][0]);
    expect(a.sse.messages.some((m) => JSON.stringify(m.data).includes("from b"))).toBe(false);
  });

  test("steer during a tool, and a follow-up that runs after the task in the same stream", async () => {
    const { sse, runId } = await startRun({
      task: "t",
      script: [{ content: null, tool_calls: [sleepCall("c1", 300)] }, { content: "after steering" }, { content: "follow-up answer" }],
    });
    await sse.until((m) => m.event === "tool_progressed");
    const s = await d.req(`/v1/runs/${runId}/steer`, { method: "POST", json: { content: "also mention cats" } });
    expect(s.status).toBe(202);
    expect(await s.json()).toMatchObject({ run_id: runId, status: "accepted", queue_size: 1 });
    const f = await d.req(`/v1/runs/${runId}/follow_up`, { method: "POST", json: { task: "and then?" } });
    expect(f.status).toBe(202);
    const all = await sse.all();
    expect(all.filter((m) => m.event === "steering_applied")).toHaveLength(1);
    expect(all.filter((m) => m.event === "agent_started").map((m) => m.data.task)).toEqual(["t", "and then?"]);
    expect(all.at(-1)!.data.result.output).toBe("follow-up answer");
    // steering an idle run is refused with its receipt
    const idle = await d.req(`/v1/runs/${runId}/steer`, { method: "POST", json: { content: "late" } });
    expect(idle.status).toBe(409);
    expect((await idle.json()).status).toBe("agent_idle");
    expect((await runView(runId)).results).toHaveLength(2);
  });

  test("continue runs again on the same agent; continuing an active run is a conflict", async () => {
    const { sse, runId } = await startRun({ task: "t", script: [{ content: "first", delay_ms: 200 }, { content: "continued" }] });
    await sse.until((m) => m.event === "turn_started");
    const junk = await d.req(`/v1/runs/${runId}/continue`, { method: "POST", headers: { "content-type": "text/plain" }, body: "please" });
    expect(junk.status).toBe(415);
    const extra = await d.req(`/v1/runs/${runId}/continue`, { method: "POST", json: { task: "x" } });
    expect(extra.status).toBe(400);
    expect((await extra.json()).error.details.location).toBe("/task");
    const busy = await d.req(`/v1/runs/${runId}/continue`, { method: "POST", json: {} });
    expect(busy.status).toBe(409);
    expect((await busy.json()).error.details.reason).toBe("agent_active");
    await sse.all();
    const c = await d.req(`/v1/runs/${runId}/continue`, { method: "POST", headers: { accept: "application/json" } });
    if (c.status !== 200) throw new Error(await c.text());
    const view = await c.json();
    expect(view.results.map((r: { result: { output: string } }) => r.result.output)).toEqual(["first", "continued"]);
  });

  test("compact needs compaction settings; with them it compacts in its own event run", async () => {
    const { sse, runId } = await startRun({ task: "t", script: [{ content: "x" }] });
    await sse.all();
    const no = await d.req(`/v1/runs/${runId}/compact`, { method: "POST" });
    expect(no.status).toBe(409);
    expect((await no.json()).error.details.reason).toBe("compaction_not_configured");

    const long = "word ".repeat(200);
    const c = await startRun({
      task: `first ${long}`,
      compaction: { context_window: 100_000, reserve_tokens: 0, keep_recent_tokens: 10 },
      script: [{ content: `answer ${long}`, delay_ms: 200 }, { content: "second answer" }, { content: "SUMMARY of the talk" }],
    });
    await c.sse.until((m) => m.event === "turn_started");
    expect((await d.req(`/v1/runs/${c.runId}/follow_up`, { method: "POST", json: { task: "second task" } })).status).toBe(202);
    await c.sse.all();
    const s2 = new SseReader(await d.req(`/v1/runs/${c.runId}/compact`, { method: "POST" }));
    const events = (await s2.all()).map((m) => m.event);
    expect(events).toContain("compaction_started");
    expect(events).toContain("compaction_completed");
    const completed = s2.messages.find((m) => m.event === "compaction_completed")!.data.result;
    expect(completed.status).toBe("completed");
  });
});

describe("sessions", () => {
  test("two runs at once on two branches of one session: every journal line whole, revisions in order, each branch intact", async () => {
    const first = await d.req("/v1/runs", {
      method: "POST",
      headers: { accept: "application/json" },
      json: { task: "base", session: "s2", script: [{ content: "base done" }] },
    });
    expect(first.status).toBe(201);
    await first.text();
    expect((await d.req("/v1/sessions/s2/fork", { method: "POST", json: { name: "side" } })).status).toBe(201);
    const script = (tag: string) => [
      { content: null, tool_calls: [sleepCall(`${tag}1`, 150)] },
      { content: null, tool_calls: [sleepCall(`${tag}2`, 150)] },
      { content: `${tag} done` },
    ];
    const [a, b] = await Promise.all([
      startRun({ task: "on main", session: "s2", script: script("m") }),
      startRun({ task: "on side", session: "s2", branch: "side", script: script("s") }),
    ]);
    // both are running at the same time before either finishes
    await Promise.all([a.sse.until((m) => m.event === "tool_progressed"), b.sse.until((m) => m.event === "tool_progressed")]);
    const [da, db] = await Promise.all([a.sse.until((m) => m.event === "done"), b.sse.until((m) => m.event === "done")]);
    expect(da!.data.result.output).toBe("m done");
    expect(db!.data.result.output).toBe("s done");
    const file = new JsonlSessionStorage(join(d.dir, "sessions")).fileFor("s2");
    const records = readFileSync(file, "utf8")
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(records.map((r) => r.revision)).toEqual(records.map((_, i) => i + 1));
    for (const branch of ["main", "side"]) {
      const mine = records.filter((r) => r.branch_id === branch && r.type !== "branch_created");
      expect(mine.filter((r) => r.type === "run_finished").length).toBeGreaterThanOrEqual(1);
    }
    const main = await (await d.req("/v1/sessions/s2")).json();
    const side = await (await d.req("/v1/sessions/s2?branch=side")).json();
    expect(main.messages.at(-1).content).toBe("m done");
    expect(side.messages.at(-1).content).toBe("s done");
    expect(main.messages.some((m: { content: string | null }) => m.content === "s done")).toBe(false);
    expect(side.messages[0].content).toBe("base");
  });

  test("a session run is journaled; a second run on the same branch meanwhile is a conflict; list/show/tree/fork/rollback/retry", async () => {
    const { sse } = await startRun({
      task: "remember 42",
      session: "s1",
      script: [{ content: null, tool_calls: [sleepCall("c1", 200)] }, { content: "noted" }],
    });
    await sse.until((m) => m.event === "tool_progressed");
    const clash = await d.req("/v1/runs", { method: "POST", json: { task: "other", session: "s1", script: [{ content: "x" }] } });
    expect(clash.status).toBe(409);
    expect((await clash.json()).error.details.reason).toBe("session_busy");
    await sse.all();

    const file = new JsonlSessionStorage(join(d.dir, "sessions")).fileFor("s1");
    const lines = readFileSync(file, "utf8").trimEnd().split("\n");
    const records = lines.map((l) => JSON.parse(l));
    expect(records.map((r) => r.type)).toEqual([
      "run_started",
      "message_appended",
      "messages_appended",
      "message_appended",
      "run_finished",
    ]);

    // A new run on the session resumes its messages.
    const again = await d.req("/v1/runs", {
      method: "POST",
      headers: { accept: "application/json" },
      json: { task: "what was it?", session: "s1", script: [{ content: "42" }] },
    });
    expect((await again.json()).result.output).toBe("42");

    const list = await (await d.req("/v1/sessions")).json();
    expect(list.sessions).toContainEqual({ session_id: "s1", records: 8, branches: ["main"], runs: 2 });
    const show = await (await d.req("/v1/sessions/s1")).json();
    expect(show.messages.map((m: { role: string }) => m.role)).toEqual(["user", "assistant", "tool", "assistant", "user", "assistant"]);
    const tree = await (await d.req("/v1/sessions/s1/tree")).json();
    expect(tree.records).toHaveLength(8);
    const firstRun = tree.records[0].data.run_id;

    const fork = await d.req("/v1/sessions/s1/fork", { method: "POST", json: { name: "alt" } });
    expect(fork.status).toBe(201);
    expect((await fork.json()).branch).toMatchObject({ branch_id: "alt", intent: "fork" });
    // the same name again: a conflict with what exists (409, as the OpenAPI document says), not a bad request
    for (const [route, body] of [
      ["fork", { name: "alt" }],
      ["rollback", { to: tree.records[4].record_id, name: "alt" }],
      ["retry", { run: firstRun, name: "alt" }],
    ] as const) {
      const again = await d.req(`/v1/sessions/s1/${route}`, { method: "POST", json: body });
      expect(again.status).toBe(409);
      expect((await again.json()).error).toMatchObject({ code: "CONFLICT", message: "branch 'alt' already exists" });
    }
    const rb = await d.req("/v1/sessions/s1/rollback", { method: "POST", json: { to: tree.records[4].record_id, name: "rb" } });
    if (rb.status !== 201) throw new Error(await rb.text());
    const retry = await d.req("/v1/sessions/s1/retry", { method: "POST", json: { run: firstRun, name: "again" } });
    expect(retry.status).toBe(201);
    expect(await retry.json()).toMatchObject({ task: "remember 42", retried_run_id: firstRun, messages: 0 });
    const onBranch = await d.req("/v1/runs", {
      method: "POST",
      headers: { accept: "application/json" },
      json: { task: "remember 42", session: "s1", branch: "again", script: [{ content: "retried" }] },
    });
    expect((await onBranch.json()).session).toEqual({ session_id: "s1", branch: "again" });
    const alt = await (await d.req("/v1/sessions/s1?branch=alt")).json();
    expect(alt.messages).toHaveLength(6);
    const rolled = await (await d.req("/v1/sessions/s1?branch=rb")).json();
    expect(rolled.messages).toHaveLength(4);
    const midRun = await d.req("/v1/sessions/s1/rollback", { method: "POST", json: { to: tree.records[1].record_id } });
    expect(midRun.status).toBe(400);
    expect((await midRun.json()).error.message).toContain("unfinished run");

    for (const [p, init] of [
      ["/v1/sessions/nope", {}],
      ["/v1/sessions/nope/tree", {}],
      ["/v1/sessions/s1?branch=zzz", {}],
      ["/v1/sessions/nope/fork", { method: "POST" }],
      ["/v1/sessions/nope/rollback", { method: "POST", json: { to: "x" } }],
      ["/v1/sessions/nope/retry", { method: "POST", json: { run: "x" } }],
    ] as const) {
      const r = await d.req(p, init);
      expect(r.status).toBe(404);
      expect((await r.json()).error.code).toBe("NOT_FOUND");
    }
    const badRecord = await d.req("/v1/sessions/s1/rollback", { method: "POST", json: { to: "nope" } });
    expect(badRecord.status).toBe(400);
    expect((await badRecord.json()).error).toMatchObject({ code: "INVALID_REQUEST", message: "record nope does not exist" });
    // Session ids never become paths: "../etc" is journaled (hashed) inside the sessions directory.
    const odd = await d.req("/v1/runs", {
      method: "POST",
      headers: { accept: "application/json" },
      json: { task: "x", session: "../etc", script: [{ content: "x" }] },
    });
    expect(odd.status).toBe(201);
    await odd.text();
    const oddFile = new JsonlSessionStorage(join(d.dir, "sessions")).fileFor("../etc");
    expect(oddFile.startsWith(join(d.dir, "sessions") + "/")).toBe(true);
    expect(readFileSync(oddFile, "utf8")).toContain('"run_finished"');
    const noBranch = await d.req("/v1/runs", {
      method: "POST",
      json: { task: "x", session: "s1", branch: "nope", script: [{ content: "x" }] },
    });
    expect(noBranch.status).toBe(404);
  });
});

// ---------------------------------------------------------------------------
// The compiled binary's daemon (`agentcore serve` as a child process).

interface BinaryDaemon {
  url: string;
  dir: string;
  req(path: string, init?: { method?: string; json?: unknown; headers?: Record<string, string> }): Promise<Response>;
  stop(): Promise<void>;
}

async function spawnBinaryDaemon(): Promise<BinaryDaemon> {
  const dir = mkdtempSync(join(tmpdir(), "agentcore-runs-bin-"));
  const proc = Bun.spawn([binaryPath(), "serve", "--port", "0", "--state-dir", join(dir, "state"), "--root", dir], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? "", HOME: dir },
    stdout: "ignore",
    stderr: "pipe",
  });
  const err = collectStderr(proc);
  const text = await err.ready(/token file .+\n/);
  const url = /serve: listening on (\S+)\n/.exec(text)![1]!;
  const token = readFileSync(/token file (.+)\n/.exec(text)![1]!, "utf8").trim();
  return {
    url,
    dir,
    req: (path, init = {}) =>
      fetch(url + path, {
        method: init.method ?? "GET",
        headers: {
          authorization: `Bearer ${token}`,
          ...(init.json !== undefined ? { "content-type": "application/json" } : {}),
          ...init.headers,
        },
        ...(init.json !== undefined ? { body: JSON.stringify(init.json) } : {}),
      }),
    async stop() {
      if (proc.exitCode === null) proc.kill("SIGTERM");
      await err.exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

describe("the binary's daemon", () => {
  let b: BinaryDaemon;
  let model: ScriptedOpenAIServer;
  beforeAll(async () => {
    b = await spawnBinaryDaemon();
    model = await startOpenAIServer();
  }, 120_000);
  afterAll(async () => {
    await b?.stop();
    await model?.close();
  });

  test("an answer cut off at the output limit ends max_tokens: in the stream, the run, and the journal's run_finished", async () => {
    const res = await b.req("/v1/runs", {
      method: "POST",
      json: { task: "explain", session: "cut", script: [{ content: "Half an ans", finish_reason: "length" }] },
    });
    expect(res.status).toBe(201);
    const all = await new SseReader(res).all();
    const finished = all.find((m) => m.event === "agent_finished")!.data.result;
    expect(finished).toMatchObject({ status: "failed", stop_reason: "max_tokens", output: "Half an ans" });
    expect(finished.error).toContain('finish_reason "length"');
    expect(all.at(-1)!.event).toBe("done");
    expect(all.at(-1)!.data.result.stop_reason).toBe("max_tokens");
    const view = await (await b.req(`/v1/runs/${res.headers.get("x-run-id")}`)).json();
    expect(view).toMatchObject({ result: { stop_reason: "max_tokens" }, can_continue: true });
    const file = new JsonlSessionStorage(join(b.dir, ".agentcore", "sessions")).fileFor("cut");
    const records = readFileSync(file, "utf8")
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(records.find((r) => r.type === "run_finished").data.result.stop_reason).toBe("max_tokens");
  });

  test("finish_reason content_filter from a real OpenAI-compatible server ends content_filter; the OpenAPI enum lists both", async () => {
    model.push({
      kind: "stream",
      chunks: [chunk({ role: "assistant", content: "" }), chunk({ content: "I can" }), chunk({}, "content_filter")],
    });
    const r = await b.req("/v1/runs", {
      method: "POST",
      headers: { accept: "application/json" },
      json: { task: "something", model: { url: model.baseURL, model: "m" } },
    });
    expect(r.status).toBe(201);
    const view = await r.json();
    expect(view.result).toMatchObject({ status: "failed", stop_reason: "content_filter", output: "I can" });
    expect(view.can_continue).toBe(false);
    const doc = await (await b.req("/v1/openapi.json")).json();
    const reasons = doc.components.schemas.RunResult.properties.stop_reason.enum as string[];
    expect(reasons).toContain("max_tokens");
    expect(reasons).toContain("content_filter");
    expect(doc.components.schemas.RunRequest.properties.compaction.required).toEqual(["context_window"]);
  });

  test("compaction: {context_window: N} alone derives the rest as agent --context-window does", async () => {
    const long = "word ".repeat(200);
    const res = await b.req("/v1/runs", {
      method: "POST",
      json: {
        task: `first ${long}`,
        compaction: { context_window: 4096 },
        script: [{ content: `answer ${long}`, delay_ms: 200 }, { content: "second answer" }, { content: "SUMMARY" }],
      },
    });
    expect(res.status).toBe(201);
    const runId = res.headers.get("x-run-id")!;
    const sse = new SseReader(res);
    const pressure = (await sse.until((m) => m.event === "context_pressure_evaluated"))!.data.decision;
    // A quarter of the window kept free: compaction is due at three quarters.
    expect(pressure).toMatchObject({ context_window: 4096, threshold_tokens: 3072 });
    expect((await b.req(`/v1/runs/${runId}/follow_up`, { method: "POST", json: { task: "second task" } })).status).toBe(202);
    await sse.all();
    const c = new SseReader(await b.req(`/v1/runs/${runId}/compact`, { method: "POST" }));
    const done = (await c.until((m) => m.event === "compaction_completed"))!.data.result;
    // keep_recent_tokens 1: every turn but the latest is summarised.
    expect(done).toMatchObject({ status: "completed", messages_before: 4, messages_after: 3, summary: { content: "SUMMARY" } });
    await c.all();
  });

  test("bad compaction values are 400s naming the field", async () => {
    const cases: [unknown, string, string][] = [
      [{ context_window: 100 }, "/compaction/context_window", "must be at least 1024 tokens, got 100"],
      [{ context_window: "big" }, "/compaction/context_window", "must be an integer"],
      [{ context_window: 4096.5 }, "/compaction/context_window", "must be an integer"],
      [{ context_window: -1 }, "/compaction/context_window", "must be an integer"],
      [{ reserve_tokens: 10 }, "/compaction/context_window", "is required"],
      [{ context_window: 4096, reserve_tokens: 4096 }, "/compaction/reserve_tokens", "must be less than context_window (4096), got 4096"],
      [
        { context_window: 4096, keep_recent_tokens: 4000 },
        "/compaction/keep_recent_tokens",
        "must be at most context_window - reserve_tokens (3072), got 4000",
      ],
      [{ context_window: 4096, window: 1 }, "/compaction/window", "unknown member"],
      [4096, "/compaction", 'must be an object, such as {"context_window": 4096}'],
      [[4096], "/compaction", "must be an object"],
    ];
    for (const [compaction, location, message] of cases) {
      const r = await b.req("/v1/runs", { method: "POST", json: { task: "t", compaction, script: [{ content: "x" }] } });
      expect(r.status).toBe(400);
      const e = (await r.json()).error;
      expect(e).toMatchObject({ code: "INVALID_REQUEST", details: { location } });
      expect(e.message).toContain(`${location}: ${message}`);
    }
    // The full form keeps its own range: a small window with explicit values is fine.
    const ok = await b.req("/v1/runs", {
      method: "POST",
      headers: { accept: "application/json" },
      json: { task: "t", compaction: { context_window: 100, reserve_tokens: 0, keep_recent_tokens: 10 }, script: [{ content: "x" }] },
    });
    expect(ok.status).toBe(201);
    await ok.text();
  });
});
