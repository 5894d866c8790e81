// Cluster mode (issue 15 §4, docs/cluster.md): several `agentcore serve`
// processes (the compiled binary) on one real PostgreSQL store, on loopback.
// A run created on one daemon is followed, steered, aborted and approved on
// another; the daemons share one token; a daemon SIGKILLed mid-run loses its
// run to another, which takes it over from its last committed record without
// running its side-effecting call again; --max-active-runs bounds the runs a
// daemon works at once. No timing assertions: bounded waits only.
import { expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { binaryPath } from "../support/binary.ts";
import { tmpPerTest } from "../support/tmp.ts";
import {
  ASK,
  clusterFile,
  ENV,
  call,
  config,
  lines,
  settled,
  shTurn,
  sleepers,
  sse,
  startDaemon,
  waitFor,
  type Daemon,
} from "../support/cluster.ts";

const tmp = tmpPerTest("agentcore-cluster-");
const { db, maybe } = await clusterFile();

maybe("cluster mode: several daemons on one PostgreSQL store", () => {
  test("the daemons share one token; a run created on A is followed on B, replay included; GET /v1/runs on B shows it", async () => {
    const dir = tmp();
    const cfg = config(dir);
    const a = await startDaemon(db!, dir, "a", cfg);
    const b = await startDaemon(db!, dir, "b", cfg);
    expect(fs.readFileSync(a.tokenFile, "utf8")).toBe(fs.readFileSync(b.tokenFile, "utf8"));
    // the other daemon's token is refused by neither (it is the same), a wrong one by both
    expect((await fetch(`${b.url}/v1/runs`, { headers: { authorization: `Bearer ${"x".repeat(43)}` } })).status).toBe(401);
    const created = await call(a, "POST", "/v1/runs", { task: "hi", script: [{ content: "hello from the cluster" }] });
    expect(created.status).toBe(201);
    expect(created.json.status).toBe("queued");
    expect(created.json.session.session_id).toStartWith("session-");
    const id = created.json.run_id as string;
    const all = await sse(b, id);
    expect(all.status).toBe(200);
    const kinds = all.messages.map((m) => m.event);
    expect(kinds[0]).toBe("agent_started");
    expect(kinds).toContain("agent_finished");
    expect(kinds.at(-1)).toBe("done");
    expect(all.messages.at(-1)!.data.result.output).toBe("hello from the cluster");
    // ids are numbered from 1 with no gap; Last-Event-ID replays the rest
    const ids = all.messages.filter((m) => m.id !== null).map((m) => m.id);
    expect(ids).toEqual(ids.map((_, i) => i + 1));
    const rest = await sse(a, id, 2);
    expect(rest.messages[0]!.id).toBe(3);
    expect(rest.messages.map((m) => m.event)).toEqual(kinds.slice(2));
    const onB = await settled(b, id);
    expect(onB.result.output).toBe("hello from the cluster");
    const list = await call(b, "GET", "/v1/runs");
    expect(list.json.runs.map((r: { run_id: string }) => r.run_id)).toContain(id);
    // a run no daemon knows: 404 on both, for the view, the events and the commands
    for (const d of [a, b]) {
      expect((await call(d, "GET", "/v1/runs/run_nope")).status).toBe(404);
      expect((await call(d, "GET", "/v1/runs/run_nope/events")).status).toBe(404);
      expect((await call(d, "POST", "/v1/runs/run_nope/steer", { content: "x" })).status).toBe(404);
    }
  }, 120_000);

  test("a run on A waiting for an approval is listed, steered, and approved on B; another is aborted on B; the call runs once", async () => {
    const dir = tmp();
    const cfg = config(dir, ASK);
    const a = await startDaemon(db!, dir, "a", cfg);
    const count = path.join(dir, "count.txt");
    const first = await call(a, "POST", "/v1/runs", { task: "count", script: [shTurn("echo line >> count.txt"), { content: "done" }] });
    const id = first.json.run_id as string;
    const pendingOn = (d: Daemon) =>
      waitFor(async () => {
        const r = await call(d, "GET", "/v1/approvals");
        return (r.json.approvals as { approval_id: string; tool_call_id: string }[]).find((x) => x.tool_call_id === "w1") ?? null;
      }, "the pending approval");
    await pendingOn(a);
    // B starts only now: the run is A's
    const b = await startDaemon(db!, dir, "b", cfg);
    const onB = await pendingOn(b);
    const steer = await call(b, "POST", `/v1/runs/${id}/steer`, { content: "steered from B" });
    expect(steer.status).toBe(202);
    expect(steer.json.status).toBe("accepted");
    // adversarial answers through B: no field, a wrong type, an unknown approval
    expect((await call(b, "POST", `/v1/approvals/${onB.approval_id}`, {})).status).toBe(400);
    expect((await call(b, "POST", `/v1/approvals/${onB.approval_id}`, { approved: "yes" })).status).toBe(400);
    expect((await call(b, "POST", "/v1/approvals/appr_nope", { approved: true })).status).toBe(404);
    const yes = await call(b, "POST", `/v1/approvals/${onB.approval_id}`, { approved: true });
    expect(yes.status).toBe(200);
    expect(yes.json).toMatchObject({ approval_id: onB.approval_id, approved: true });
    // answered once: a second answer finds nothing waiting
    expect((await call(b, "POST", `/v1/approvals/${onB.approval_id}`, { approved: true })).status).toBe(404);
    const done = await settled(b, id);
    expect(done.result.status).toBe("completed");
    expect(lines(count)).toEqual(["line"]);
    const events = (await sse(b, id)).messages.map((m) => m.event);
    expect(events).toContain("approval_requested");
    expect(events).toContain("approval_resolved");
    // the steering message reached the run's conversation (journaled in the store)
    const session = await call(b, "GET", `/v1/sessions/${done.session.session_id}`);
    expect(JSON.stringify(session.json.messages)).toContain("steered from B");

    // abort through B: a run of A (A claims it while B is told not to take jobs: it is stopped first)
    b.proc.kill("SIGTERM");
    await b.proc.exited;
    const second = await call(a, "POST", "/v1/runs", {
      task: "again",
      script: [shTurn("echo other >> count.txt", "w2"), { content: "x" }],
    });
    const id2 = second.json.run_id as string;
    await waitFor(async () => {
      const r = await call(a, "GET", "/v1/approvals");
      return (r.json.approvals as { tool_call_id: string }[]).some((x) => x.tool_call_id === "w2");
    }, "the second approval");
    const b2 = await startDaemon(db!, dir, "b2", cfg);
    const aborted = await call(b2, "POST", `/v1/runs/${id2}/abort`, { reason: "stopped from B" });
    expect(aborted.status).toBe(200);
    expect(aborted.json).toEqual({ run_id: id2, aborted: true });
    const end = await settled(b2, id2);
    expect(end.result.status).toBe("cancelled");
    expect(lines(count)).toEqual(["line"]);

    // the session's approval route answers a live run's call too, through a daemon that does not run it
    const third = await call(a, "POST", "/v1/runs", { task: "third", script: [shTurn("echo third >> count.txt", "w3"), { content: "y" }] });
    const id3 = third.json.run_id as string;
    const sid3 = third.json.session.session_id as string;
    await waitFor(async () => {
      const r = await call(a, "GET", "/v1/approvals");
      return (r.json.approvals as { tool_call_id: string }[]).some((x) => x.tool_call_id === "w3");
    }, "the third approval");
    const aRuns = (await call(a, "GET", `/v1/runs/${id3}`)).json;
    const other = aRuns.agent_id !== undefined ? b2 : a;
    expect((await call(other, "POST", `/v1/sessions/${sid3}/approvals/nope`, { approved: true })).status).toBe(404);
    const viaSession = await call(other, "POST", `/v1/sessions/${sid3}/approvals/w3`, { approved: true, reason: "fine" });
    expect(viaSession.status).toBe(200);
    expect(viaSession.json).toMatchObject({ tool_call_id: "w3", approved: true, live: true });
    expect((await settled(other, id3)).result.status).toBe("completed");
    expect(lines(count)).toEqual(["line", "third"]);
  }, 180_000);

  for (const withRead of [true, false])
    test(`SIGKILL the owner mid-call${withRead ? " (a read-only call in the same turn)" : " (the only call of its turn)"}: another daemon takes the run over from its last record; the side-effecting call ran once`, async () => {
      const dir = tmp();
      const cfg = config(dir);
      const count = path.join(dir, "count.txt");
      const pidFile = path.join(dir, "sleeper.pid");
      sleepers.push(pidFile);
      const a = await startDaemon(db!, dir, "a", cfg);
      const turn = shTurn("echo $$ > sleeper.pid; echo line >> count.txt; exec sleep 600");
      if (!withRead) turn.tool_calls.pop();
      const created = await call(a, "POST", "/v1/runs", { task: "count", script: [turn, { content: "finished after the takeover" }] });
      const id = created.json.run_id as string;
      // A's own view once its run manager has the run (the claim is in the table a moment before)
      const ownerA = await waitFor(async () => {
        const r = await call(a, "GET", `/v1/runs/${id}`);
        return r.status === 200 && r.json.agent_id !== undefined ? r.json : null;
      }, "daemon A to run it");
      expect(ownerA.agent_id).toBe("agentcore-daemon");
      await waitFor(
        async () => lines(count).length === 1 && fs.existsSync(pidFile) && fs.readFileSync(pidFile, "utf8").trim() !== "",
        "the call to start",
      );
      const b = await startDaemon(db!, dir, "b", cfg);
      a.proc.kill("SIGKILL");
      await a.proc.exited;
      process.kill(Number(fs.readFileSync(pidFile, "utf8").trim()), "SIGKILL");
      const done = await settled(b, id, 120_000);
      expect(done.result.status).toBe("completed");
      expect(done.result.output).toBe("finished after the takeover");
      // nothing ran twice: one line; the call is answered interrupted (outcome unknown), a read-only one ran again
      expect(lines(count)).toEqual(["line"]);
      const session = await call(b, "GET", `/v1/sessions/${done.session.session_id}`);
      const tools = (session.json.messages as { role: string; tool_call_id?: string; content: string }[]).filter((m) => m.role === "tool");
      expect(JSON.parse(tools.find((m) => m.tool_call_id === "w1")!.content)).toMatchObject({ status: "interrupted", tool: "exec" });
      if (withRead) expect(JSON.parse(tools.find((m) => m.tool_call_id === "w1-echo")!.content)).toEqual({ message: "same turn" });
      const events = (await sse(b, id)).messages;
      const taken = events.find((m) => m.event === "run_taken_over")!;
      expect(taken.data.epoch).toBe(2);
      // the events of both owners are one numbered stream
      const ids = events.filter((m) => m.id !== null).map((m) => m.id);
      expect(ids).toEqual(ids.map((_, i) => i + 1));
      expect(events.filter((m) => m.event === "agent_started").length).toBe(1);
    }, 180_000);

  test("SIGKILL the owner while an approval waits: the takeover leaves the run suspended; approved and resumed through B, it completes once", async () => {
    const dir = tmp();
    const cfg = config(dir, ASK);
    const count = path.join(dir, "count.txt");
    const a = await startDaemon(db!, dir, "a", cfg);
    const created = await call(a, "POST", "/v1/runs", { task: "count", script: [shTurn("echo line >> count.txt"), { content: "done" }] });
    const id = created.json.run_id as string;
    const sid = created.json.session.session_id as string;
    await waitFor(async () => {
      const r = await call(a, "GET", "/v1/approvals");
      return (r.json.approvals as { tool_call_id: string }[]).some((x) => x.tool_call_id === "w1");
    }, "the approval to wait");
    const b = await startDaemon(db!, dir, "b", cfg);
    a.proc.kill("SIGKILL");
    await a.proc.exited;
    const rest = await settled(b, id, 120_000);
    expect(rest.status).toBe("suspended");
    expect(rest.result.stop_reason).toBe("awaiting_approval");
    // nothing waits in a live daemon any more: the journal's request is what is answered
    expect((await call(b, "GET", "/v1/approvals")).json.approvals).toEqual([]);
    const pending = await call(b, "GET", `/v1/sessions/${sid}/approvals`);
    expect(pending.json.pending.map((p: { tool_call_id: string }) => p.tool_call_id)).toEqual(["w1"]);
    expect((await call(b, "POST", `/v1/sessions/${sid}/approvals/w1`, { approved: true })).status).toBe(200);
    const resumed = await call(b, "POST", `/v1/sessions/${sid}/resume`, { script: [{ content: "done" }] }, { accept: "application/json" });
    expect(resumed.status).toBe(201);
    expect(resumed.json.result.status).toBe("completed");
    expect(lines(count)).toEqual(["line"]);
  }, 180_000);

  test("an owner that is only cut off (SIGSTOP) is fenced: another daemon takes the run over, and the old one, let go on, writes nothing more to it", async () => {
    const dir = tmp();
    const cfg = config(dir);
    const count = path.join(dir, "count.txt");
    const pidFile = path.join(dir, "sleeper.pid");
    sleepers.push(pidFile);
    const a = await startDaemon(db!, dir, "a", cfg);
    const created = await call(a, "POST", "/v1/runs", {
      task: "count",
      script: [shTurn("echo $$ > sleeper.pid; echo line >> count.txt; exec sleep 600"), { content: "finished by B" }],
    });
    const id = created.json.run_id as string;
    const sid = created.json.session.session_id as string;
    await waitFor(
      async () => lines(count).length === 1 && fs.existsSync(pidFile) && fs.readFileSync(pidFile, "utf8").trim() !== "",
      "the call to start",
    );
    const b = await startDaemon(db!, dir, "b", cfg);
    a.proc.kill("SIGSTOP");
    try {
      // A's heartbeat and leases lapse; B takes the run over and finishes it
      const done = await settled(b, id, 150_000);
      expect(done.result.output).toBe("finished by B");
      // (B's first claims may find A's leases live until they expire: each claim moves the epoch on)
      expect(done.status).toBe("idle");
      expect(done.epoch).toBeGreaterThanOrEqual(2);
    } finally {
      a.proc.kill("SIGCONT");
    }
    const before = (await call(b, "GET", `/v1/sessions/${sid}/tree`)).json.records.length;
    const eventsBefore = (await sse(b, id)).messages.length;
    // the old owner's call now ends: its result must not reach the journal or the run's events
    process.kill(Number(fs.readFileSync(pidFile, "utf8").trim()), "SIGKILL");
    await waitFor(async () => (await call(a, "GET", "/v1/health").catch(() => null))?.status === 200, "A to answer again");
    // it stopped its run: its next event write found the epoch moved (the journal refused its appends meanwhile),
    // and the run left A's live table
    await waitFor(async () => /run taken over by another daemon; stopping it here/.test(a.stderr()), "A to find its run fenced");
    await waitFor(async () => {
      const r = await call(a, "GET", "/v1/runs");
      return (
        r.status === 200 &&
        !(r.json.runs as { run_id: string; agent_id?: string }[]).some((x) => x.run_id === id && x.agent_id !== undefined)
      );
    }, "A's run to stop");
    expect((await call(b, "GET", `/v1/sessions/${sid}/tree`)).json.records.length).toBe(before);
    expect((await sse(b, id)).messages.length).toBe(eventsBefore);
    // A's view is the store's row, as B's: B owns the run, which B finished
    const onA = (await call(a, "GET", `/v1/runs/${id}`)).json;
    const onB = (await call(b, "GET", `/v1/runs/${id}`)).json;
    expect(onA).toEqual(onB);
    expect(onA).toMatchObject({ status: "idle", result: { output: "finished by B" } });
    expect(Number(onA.owner.split(":")[1])).toBe(b.proc.pid);
    expect(lines(count)).toEqual(["line"]);
  }, 240_000);

  test("the execution history goes to the store, and GET /v1/history (the console's History page) reads it there on any daemon", async () => {
    const dir = tmp();
    const cfg = config(dir);
    const a = await startDaemon(db!, dir, "a", cfg);
    const b = await startDaemon(db!, dir, "b", cfg);
    const marker = `history-${crypto.randomUUID()}`;
    const r = await call(a, "POST", "/v1/calls", { id: marker, tool: "echo", arguments: { text: marker } });
    expect(r.status).toBe(200);
    for (const d of [a, b]) {
      const h = await call(d, "GET", "/v1/history?tool=echo");
      expect(h.status).toBe(200);
      expect(h.json.enabled).toBe(true);
      expect((h.json.records as { call_id: string; tool: string; success: boolean }[]).find((x) => x.call_id === marker)).toMatchObject({
        tool: "echo",
        success: true,
      });
    }
    expect((await call(b, "GET", "/v1/history?failed=maybe")).status).toBe(400);
  }, 120_000);

  test("serve refuses a store it cannot use, with exit 2 and a message that says what to do", async () => {
    const dir = tmp();
    const serve = (...args: string[]) => {
      const p = Bun.spawnSync([binaryPath(), "serve", "--port", "0", "--state-dir", path.join(dir, "state"), ...args], {
        cwd: dir,
        env: ENV,
        stdin: "ignore",
      });
      return { code: p.exitCode, stderr: p.stderr.toString() };
    };
    const both = serve("--store", db!, "--sessions-dir", dir);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("--store and --sessions-dir both name the session store");
    const empty = serve("--store", " ");
    expect(empty.code).toBe(2);
    expect(empty.stderr).toContain("--store must not be empty");
    const away = serve("--store", "postgres://nobody@127.0.0.1:1/none");
    expect(away.code).toBe(2);
    expect(away.stderr).toContain("cannot connect");
    expect(away.stderr).not.toContain("    at ");
    const scheme = serve("--store", "mysql://x@y/z");
    expect(scheme.code).toBe(2);
    expect(scheme.stderr).toContain("unsupported store");
  }, 60_000);

  test("--max-active-runs 1: the daemon works one run at a time from the queue", async () => {
    const dir = tmp();
    const cfg = config(dir);
    const a = await startDaemon(db!, dir, "a", cfg, ["--max-active-runs", "1"]);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await call(a, "POST", "/v1/runs", {
        task: `run ${i}`,
        script: [shTurn(`echo start >> log.txt; sleep 0.5; echo end >> log.txt`, `c${i}`), { content: "ok" }],
      });
      expect(r.status).toBe(201);
      ids.push(r.json.run_id);
    }
    for (const id of ids) expect((await settled(a, id)).result.status).toBe("completed");
    expect(lines(path.join(dir, "log.txt"))).toEqual(["start", "end", "start", "end", "start", "end"]);
  }, 180_000);
});
