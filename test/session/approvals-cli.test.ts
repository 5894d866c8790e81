// Approvals that survive a restart, through the compiled binary as real child
// processes (issue 15): `agent --suspend-on-approval` ends the run (exit 3)
// with the request journaled; `sessions approvals|approve|deny` answer it from
// another process; `agent --resume` goes on. A process SIGKILLed while a call
// ran, or while an approval waited in a daemon, is not a loss.
import { afterEach, beforeAll, describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { JsonlSessionStorage, liveRunMarks, pendingApprovals } from "../../src/session/index.ts";
import { binaryPath } from "../support/binary.ts";
import { startOpenAIServer, textReply } from "../support/openai-server.ts";
import { tmpPerTest } from "../support/tmp.ts";

const ENV = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: os.tmpdir() };
let bin = "";
beforeAll(() => {
  bin = binaryPath();
}, 300_000);

const tmp = tmpPerTest("agentcore-approvals-cli-");
const live: { kill(signal?: number | NodeJS.Signals): void }[] = [];
afterEach(() => {
  for (const p of live.splice(0)) p.kill("SIGKILL");
});

function script(dir: string, name: string, ...turns: unknown[]): string {
  const f = path.join(dir, name);
  fs.writeFileSync(f, turns.map((t) => JSON.stringify(t)).join("\n") + "\n");
  return f;
}

function cli(cwd: string, ...args: string[]) {
  const p = Bun.spawnSync([bin, ...args], { cwd, stdout: "pipe", stderr: "pipe", stdin: "ignore", env: ENV });
  return { code: p.exitCode, stdout: p.stdout.toString(), stderr: p.stderr.toString() };
}

const sessionsDir = (dir: string) => path.join(dir, ".agentcore", "sessions");
const storageOf = (dir: string) => new JsonlSessionStorage(sessionsDir(dir));
const lines = (f: string) =>
  fs.existsSync(f)
    ? fs
        .readFileSync(f, "utf8")
        .split("\n")
        .filter((l) => l !== "").length
    : 0;

/** A config whose exec may run sh (the appending command), without isolation. */
function config(dir: string, extra: Record<string, unknown> = {}): string {
  const f = path.join(dir, "config.json");
  fs.writeFileSync(
    f,
    JSON.stringify({ tools: { exec: { allow: ["sh"], env: ["PATH"], isolation: "off", timeout_ms: 600_000 } }, ...extra }),
  );
  return f;
}

/** The daemon's policy (it has no default gate): side-effecting calls ask. */
const DAEMON_POLICY = {
  policy: {
    default: "allow",
    rules: [{ id: "side-effecting", action: "require_approval", effects: ["side_effecting"], reason: "ask first" }],
  },
};

/** A model turn that appends one line to count.txt (side-effecting exec), then maybe sleeps, and reads a file (read-only). */
function appendTurn(sleep = false) {
  // the sleeping shell writes its pid, so the test can end it after SIGKILLing agentcore
  const cmd = sleep ? "echo $$ > sleeper.pid; echo line >> count.txt; exec sleep 600" : "echo line >> count.txt";
  return {
    content: null,
    tool_calls: [
      { id: "w1", name: "exec", arguments: JSON.stringify({ argv: ["sh", "-c", cmd] }) },
      { id: "e1", name: "echo", arguments: JSON.stringify({ message: "same turn" }) },
    ],
  };
}

async function waitFor(check: () => boolean, what: string, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(25);
  }
}

const TOKEN = "t".repeat(43);

/** `agentcore serve` on a free loopback port with a known token, journaling under dir. */
async function startDaemon(dir: string, cfg: string) {
  const proc = Bun.spawn(
    [bin, "serve", "--config", cfg, "--port", "0", "--state-dir", path.join(dir, "state"), "--sessions-dir", sessionsDir(dir)],
    {
      cwd: dir,
      stdout: "ignore",
      stderr: "pipe",
      stdin: "ignore",
      env: { ...ENV, AGENTCORE_TOKEN: TOKEN },
    },
  );
  live.push(proc);
  const reader = proc.stderr.getReader();
  let printed = "";
  while (!/listening on (\S+)\n/.test(printed)) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`serve ended: ${printed}`);
    printed += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  const url = /listening on (\S+)\n/.exec(printed)![1]!;
  return { proc, url, auth: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" } };
}

describe("agent --suspend-on-approval, sessions approve|deny, agent --resume", () => {
  test("suspend → exit 3 → approvals lists the call → approve → --resume runs it once and completes", () => {
    const dir = tmp();
    const cfg = config(dir);
    const first = cli(
      dir,
      "agent",
      "--config",
      cfg,
      "--no-plan",
      "--session",
      "demo",
      "--suspend-on-approval",
      "--script",
      script(dir, "a.jsonl", appendTurn()),
      "count",
    );
    expect(first.code).toBe(3);
    expect(first.stderr).toContain("run suspended (awaiting_approval)");
    expect(first.stderr).toContain("agentcore sessions approve demo w1");
    expect(lines(path.join(dir, "count.txt"))).toBe(0);

    const listed = cli(dir, "sessions", "approvals", "demo", "--json");
    expect(listed.code).toBe(0);
    const body = JSON.parse(listed.stdout);
    expect(body.pending.map((a: { tool_call_id: string }) => a.tool_call_id)).toEqual(["w1"]);
    expect(body.pending[0]).toMatchObject({ tool: "exec", effect: "side_effecting", rule_id: "side-effecting", decision: null });

    // resuming with the approval unanswered is refused, naming it
    const early = cli(
      dir,
      "agent",
      "--config",
      cfg,
      "--no-plan",
      "--session",
      "demo",
      "--resume",
      "--script",
      script(dir, "b.jsonl", { content: "done" }),
    );
    expect(early.code).toBe(2);
    expect(early.stderr).toContain("cannot resume yet: 1 approval(s) wait");
    expect(early.stderr).toContain("call w1: exec");

    // --continue is not the way on: it says so
    const cont = cli(
      dir,
      "agent",
      "--config",
      cfg,
      "--no-plan",
      "--session",
      "demo",
      "--continue",
      "--script",
      script(dir, "k.jsonl", { content: "x" }),
    );
    expect(cont.code).toBe(2);
    expect(cont.stderr).toContain("then use --resume");

    const ok = cli(dir, "sessions", "approve", "demo", "w1", "--reason", "checked");
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain("call w1 (exec) approved");
    const again = cli(dir, "sessions", "approve", "demo", "w1");
    expect(again.code).toBe(2);
    expect(again.stderr).toContain("no approval of call 'w1' waits (it was answered already)");

    const resumed = cli(
      dir,
      "agent",
      "--config",
      cfg,
      "--no-plan",
      "--session",
      "demo",
      "--resume",
      "--script",
      script(dir, "c.jsonl", { content: "done" }),
    );
    expect(resumed.stderr).not.toContain("internal error");
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).toContain("done");
    expect(lines(path.join(dir, "count.txt"))).toBe(1);

    // nothing left to resume
    const twice = cli(
      dir,
      "agent",
      "--config",
      cfg,
      "--no-plan",
      "--session",
      "demo",
      "--resume",
      "--script",
      script(dir, "d.jsonl", { content: "x" }),
    );
    expect(twice.code).toBe(2);
    expect(twice.stderr).toContain("has no suspended run to resume");
    expect(lines(path.join(dir, "count.txt"))).toBe(1);
  }, 60_000);

  test("deny → --resume: the model's next request carries the policy's rejection payload, and the run goes on", async () => {
    const dir = tmp();
    const cfg = config(dir);
    expect(
      cli(
        dir,
        "agent",
        "--config",
        cfg,
        "--no-plan",
        "--session",
        "demo",
        "--suspend-on-approval",
        "--script",
        script(dir, "a.jsonl", appendTurn()),
        "count",
      ).code,
    ).toBe(3);
    const no = cli(dir, "sessions", "deny", "demo", "w1", "--reason", "not on a Friday");
    expect(no.code).toBe(0);
    const server = await startOpenAIServer([textReply("understood, not appending")]);
    try {
      const p = Bun.spawn(
        [bin, "agent", "--config", cfg, "--no-plan", "--session", "demo", "--resume", "--model-url", server.baseURL, "--model", "m"],
        {
          cwd: dir,
          stdout: "pipe",
          stderr: "pipe",
          stdin: "ignore",
          env: ENV,
        },
      );
      live.push(p);
      const code = await p.exited;
      const err = await new Response(p.stderr).text();
      expect([code, err]).toEqual([0, expect.any(String)]);
      const sent = server.requests[0]!.body.messages as { role: string; tool_call_id?: string; content: string }[];
      const answer = sent.find((m) => m.role === "tool" && m.tool_call_id === "w1")!;
      expect(JSON.parse(answer.content)).toEqual({
        status: "rejected",
        tool: "exec",
        reason: "not on a Friday",
        rule_id: "side-effecting",
      });
    } finally {
      await server.close();
    }
    expect(lines(path.join(dir, "count.txt"))).toBe(0);
  }, 60_000);

  test("adversarial: an unknown call, a call of another branch, a missing call id, resume while another process holds the branch", async () => {
    const dir = tmp();
    const cfg = config(dir);
    expect(cli(dir, "agent", "--no-plan", "--session", "demo", "--script", script(dir, "0.jsonl", { content: "hi" }), "hello").code).toBe(
      0,
    );
    expect(cli(dir, "sessions", "fork", "demo", "--name", "side").code).toBe(0);
    expect(
      cli(
        dir,
        "agent",
        "--config",
        cfg,
        "--no-plan",
        "--session",
        "demo",
        "--suspend-on-approval",
        "--script",
        script(dir, "a.jsonl", appendTurn()),
        "count",
      ).code,
    ).toBe(3);
    const unknown = cli(dir, "sessions", "approve", "demo", "c9");
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("no approval of call 'c9' waits; waiting: w1 (exec)");
    const other = cli(dir, "sessions", "approve", "demo", "w1", "--branch", "side");
    expect(other.code).toBe(2);
    expect(other.stderr).toContain("branch 'side': no approval of call 'w1' waits; waiting: none");
    const missing = cli(dir, "sessions", "deny", "demo");
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("deny needs the session id and the call id");
    expect(cli(dir, "sessions", "approvals", "demo", "--branch", "nope").code).toBe(2);
    expect(
      cli(dir, "agent", "--no-plan", "--suspend-on-approval", "--script", script(dir, "x.jsonl", { content: "x" }), "t").stderr,
    ).toContain("--suspend-on-approval needs --session ID");

    // one process resumes (its model waits), a second one is refused: the branch is taken
    expect(cli(dir, "sessions", "approve", "demo", "w1").code).toBe(0);
    const holder = Bun.spawn(
      [
        bin,
        "agent",
        "--config",
        cfg,
        "--no-plan",
        "--events",
        "jsonl",
        "--session",
        "demo",
        "--resume",
        "--script",
        script(dir, "slow.jsonl", { content: "late", delay_ms: 600_000 }),
      ],
      { cwd: dir, stdout: "pipe", stderr: "pipe", stdin: "ignore", env: ENV },
    );
    live.push(holder);
    await waitFor(() => lines(path.join(dir, "count.txt")) === 1, "the resumed call to run");
    const second = cli(
      dir,
      "agent",
      "--config",
      cfg,
      "--no-plan",
      "--session",
      "demo",
      "--resume",
      "--script",
      script(dir, "b.jsonl", { content: "x" }),
    );
    expect(second.code).toBe(2);
    expect(second.stderr).toMatch(/is still going in process \d+/);
    holder.kill("SIGTERM");
    expect(await holder.exited).toBe(143);
    expect(lines(path.join(dir, "count.txt"))).toBe(1);
  }, 60_000);
});

describe("crashes: nothing started is lost, nothing side-effecting runs twice", () => {
  test("a side-effecting call SIGKILLed mid-execution is answered interrupted on --resume, never re-run", async () => {
    const dir = tmp();
    const cfg = config(dir);
    const count = path.join(dir, "count.txt");
    const p = Bun.spawn(
      [
        bin,
        "agent",
        "--config",
        cfg,
        "--no-plan",
        "--approve-all",
        "--session",
        "demo",
        "--script",
        script(dir, "a.jsonl", appendTurn(true)),
        "count",
      ],
      { cwd: dir, stdout: "pipe", stderr: "pipe", stdin: "ignore", env: ENV },
    );
    live.push(p);
    await waitFor(() => lines(count) === 1, "the call to start");
    p.kill("SIGKILL");
    await p.exited;
    const sleeper = Number(fs.readFileSync(path.join(dir, "sleeper.pid"), "utf8").trim());
    if (Number.isSafeInteger(sleeper) && sleeper > 1)
      live.push({
        kill: () => {
          try {
            process.kill(sleeper, "SIGKILL");
          } catch {
            // gone already
          }
        },
      });
    // the journal shows the approval and no result
    const records = await storageOf(dir).records("demo");
    expect(records.map((r) => r.type)).toContain("approval_decided");
    const resumed = cli(
      dir,
      "agent",
      "--config",
      cfg,
      "--no-plan",
      "--session",
      "demo",
      "--resume",
      "--script",
      script(dir, "b.jsonl", { content: "checked, done" }),
    );
    expect(resumed.stderr).not.toContain("internal error");
    expect(resumed.code).toBe(0);
    expect(lines(count)).toBe(1);
    const c = (await storageOf(dir).checkout("demo"))!;
    const tool = c.session.entries.map((e) => e.message).find((m) => m.role === "tool" && m.tool_call_id === "w1")!;
    expect(JSON.parse(tool.content as string)).toMatchObject({ status: "interrupted", tool: "exec" });
    expect(tool.content).toContain("outcome is unknown");
    // the read-only call of the same turn ran again on resume
    const echo = c.session.entries.map((e) => e.message).find((m) => m.role === "tool" && m.tool_call_id === "e1")!;
    expect(JSON.parse(echo.content as string)).toEqual({ message: "same turn" });
    expect(c.session.runs.map((r) => r.result?.stop_reason)).toEqual(["awaiting_approval", "text_response"]);
  }, 60_000);

  test("agent SIGKILLed while its terminal prompt waits (a pty from script(1)): recover → suspended, approve, --resume completes", async () => {
    const dir = tmp();
    const cfg = config(dir);
    const a = script(dir, "a.jsonl", appendTurn());
    const quote = (w: string) => `'${w.replace(/'/g, "'\\''")}'`;
    const cmd = [bin, "agent", "--config", cfg, "--no-plan", "--session", "demo", "--script", a, "count"].map(quote).join(" ");
    // script gives the agent a terminal: its stdin is a TTY, so the approver asks and waits
    const term = Bun.spawn(["script", "-qfec", cmd, "/dev/null"], { cwd: dir, stdin: "pipe", stdout: "pipe", stderr: "pipe", env: ENV });
    live.push(term);
    const reader = term.stdout.getReader();
    let shown = "";
    while (!shown.includes("allow? [y]es")) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the agent ended before asking: ${shown}`);
      shown += new TextDecoder().decode(value);
    }
    // the request was journaled before the prompt; the agent's pid is in its live-run mark
    expect(fs.readFileSync(storageOf(dir).fileFor("demo"), "utf8")).toContain('"approval_requested"');
    const marks = liveRunMarks(storageOf(dir), "demo");
    expect(marks.length).toBe(1);
    process.kill(marks[0]!.pid, "SIGKILL");
    await term.exited;
    const rec = cli(dir, "sessions", "recover", "demo");
    expect(rec.code).toBe(0);
    expect(rec.stdout).toContain("closed as suspended (awaiting_approval)");
    expect(cli(dir, "sessions", "approve", "demo", "w1").code).toBe(0);
    const resumed = cli(
      dir,
      "agent",
      "--config",
      cfg,
      "--no-plan",
      "--session",
      "demo",
      "--resume",
      "--script",
      script(dir, "b.jsonl", { content: "done" }),
    );
    expect(resumed.code).toBe(0);
    expect(lines(path.join(dir, "count.txt"))).toBe(1);
  }, 60_000);

  test("a daemon SIGKILLed while its approval waits: recover → suspended, approve, --resume completes", async () => {
    const dir = tmp();
    const cfg = config(dir, DAEMON_POLICY);
    const d = await startDaemon(dir, cfg);
    const base = d.url;
    const auth = d.auth;
    const serve = d.proc;
    const run = await fetch(`${base}/v1/runs`, {
      method: "POST",
      headers: auth,
      body: JSON.stringify({ task: "count", session: "demo", detached: true, script: [appendTurn(), { content: "unused" }] }),
    });
    expect(run.status).toBeLessThan(300);
    // the request is journaled before anyone is asked: wait for it in the journal
    await waitFor(() => {
      try {
        return fs.readFileSync(storageOf(dir).fileFor("demo"), "utf8").includes('"approval_requested"');
      } catch {
        return false;
      }
    }, "the journaled approval request");
    serve.kill("SIGKILL");
    await serve.exited;
    const rec = cli(dir, "sessions", "recover", "demo");
    expect(rec.code).toBe(0);
    expect(rec.stdout).toContain("suspended (awaiting_approval)");
    expect(pendingApprovals((await storageOf(dir).checkout("demo"))!.session).map((a) => a.tool_call_id)).toEqual(["w1"]);
    expect(cli(dir, "sessions", "approve", "demo", "w1").code).toBe(0);
    const resumed = cli(
      dir,
      "agent",
      "--config",
      cfg,
      "--no-plan",
      "--session",
      "demo",
      "--resume",
      "--script",
      script(dir, "b.jsonl", { content: "done" }),
    );
    expect(resumed.code).toBe(0);
    expect(lines(path.join(dir, "count.txt"))).toBe(1);
  }, 60_000);
});

describe("the daemon: suspend_on_approval, the approval endpoint and resume (a real daemon on loopback)", () => {
  test("a run suspends, GET approvals lists it, adversarial answers are refused with the error envelope, an answer and a resume complete it", async () => {
    const dir = tmp();
    const cfg = config(dir, DAEMON_POLICY);
    const d = await startDaemon(dir, cfg);
    const req = (p: string, body?: unknown, accept = "application/json") =>
      fetch(d.url + p, {
        method: body === undefined ? "GET" : "POST",
        headers: { ...d.auth, accept },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
    const needsSession = await req("/v1/runs", { task: "t", suspend_on_approval: true, script: [{ content: "x" }] });
    expect(needsSession.status).toBe(400);
    expect((await needsSession.json()).error.message).toContain("/suspend_on_approval: needs session");

    const first = await req("/v1/runs", { task: "count", session: "demo", suspend_on_approval: true, script: [appendTurn()] });
    expect(first.status).toBe(201);
    const view = await first.json();
    expect(view.result).toMatchObject({ status: "suspended", stop_reason: "awaiting_approval" });
    expect(lines(path.join(dir, "count.txt"))).toBe(0);

    const listed = await (await req("/v1/sessions/demo/approvals")).json();
    expect(listed.pending.map((a: { tool_call_id: string }) => a.tool_call_id)).toEqual(["w1"]);

    const early = await req("/v1/sessions/demo/resume", { script: [{ content: "done" }] });
    expect(early.status).toBe(409);
    expect((await early.json()).error).toMatchObject({ code: "CONFLICT", details: { reason: "approvals_pending", pending: ["w1"] } });

    const unknown = await req("/v1/sessions/demo/approvals/nope", { approved: true });
    expect(unknown.status).toBe(404);
    expect((await unknown.json()).error).toMatchObject({ code: "NOT_FOUND", details: { reason: "approval_not_found", pending: ["w1"] } });
    const bad = await req("/v1/sessions/demo/approvals/w1", { approved: "yes" });
    expect(bad.status).toBe(400);
    const noSession = await req("/v1/sessions/ghost/approvals/w1", { approved: true });
    expect(noSession.status).toBe(404);

    const ok = await req("/v1/sessions/demo/approvals/w1", { approved: true, reason: "fine" });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ tool_call_id: "w1", approved: true, pending: [] });
    const twice = await req("/v1/sessions/demo/approvals/w1", { approved: false });
    expect(twice.status).toBe(409);
    expect((await twice.json()).error.details.reason).toBe("approval_answered");

    const taskInBody = await req("/v1/sessions/demo/resume", { task: "x", script: [{ content: "done" }] });
    expect(taskInBody.status).toBe(400);
    const resumed = await req("/v1/sessions/demo/resume", { script: [{ content: "done" }] });
    expect(resumed.status).toBe(201);
    const runId = resumed.headers.get("x-run-id")!;
    expect((await resumed.json()).result).toMatchObject({ status: "completed", stop_reason: "text_response", output: "done" });
    expect(lines(path.join(dir, "count.txt"))).toBe(1);
    // the resumed run is a daemon run like any other: its events replay from the start
    const events = await (await req(`/v1/runs/${runId}/events?after=0`, undefined, "text/event-stream")).text();
    expect(events).toContain('"kind":"agent_continued"');
    expect(events).toContain('"kind":"agent_finished"');
    const again = await req("/v1/sessions/demo/resume", { script: [{ content: "x" }] });
    expect(again.status).toBe(409);
    d.proc.kill("SIGTERM");
    await d.proc.exited;
  }, 60_000);
});
