// POST /v1/sessions/{id}/recover on a real daemon (HTTP on 127.0.0.1): a
// session whose run a crash left unfinished refuses new runs with a 409 that
// names the route; the route closes the run; a run of the daemon itself that
// is still going is never closed from under it. Last, a real daemon process
// SIGKILLed mid-run and a new one on the same root.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REPO_ROOT } from "../support/paths.ts";
import { JsonlSessionStorage, type SessionRecordDraft } from "../../src/session/index.ts";
import { SseReader, startTestDaemon, type TestDaemon } from "../support/daemon.ts";

let d: TestDaemon;
beforeAll(async () => {
  d = await startTestDaemon();
});
afterAll(() => d.stop());

const draft = (session: string, type: SessionRecordDraft["type"], data: Record<string, unknown>, sequence: number): SessionRecordDraft => ({
  session_id: session,
  agent_id: "agentcore-daemon",
  branch_id: "main",
  sequence,
  type,
  data,
});

/** The journal a daemon killed mid-run leaves: a run started, a tool call asked for, no answer, no run_finished. */
async function crashedSession(id: string): Promise<string> {
  const storage = new JsonlSessionStorage(join(d.dir, "sessions"));
  await storage.append(draft(id, "run_started", { run_id: "r-crashed", task: "work" }, 1));
  await storage.append(
    draft(
      id,
      "message_appended",
      {
        run_id: "r-crashed",
        message: {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "c1", type: "function", function: { name: "sleep", arguments: '{"ms":1}' } }],
        },
      },
      4,
    ),
  );
  return "r-crashed";
}

const post = (path: string, json?: unknown) => d.req(path, json === undefined ? { method: "POST" } : { method: "POST", json });

describe("POST /v1/sessions/{id}/recover", () => {
  test("a crashed session: runs refused with 409 naming the route; recover closes the run; a second recover is a no-op; runs work again", async () => {
    const runId = await crashedSession("crashed");
    let r = await d.req("/v1/runs", {
      method: "POST",
      headers: { accept: "application/json" },
      json: { task: "next", session: "crashed", script: [{ content: "ok" }] },
    });
    expect(r.status).toBe(409);
    const refused = (await r.json()).error;
    expect(refused.code).toBe("CONFLICT");
    expect(refused.details).toEqual({ reason: "session_unfinished_run", run_ids: [runId], recover: "POST /v1/sessions/crashed/recover" });
    expect(refused.message).toContain("has unfinished run(s): r-crashed");

    r = await post("/v1/sessions/crashed/recover");
    expect(r.status).toBe(200);
    const body = await r.json();
    expect(body).toMatchObject({ session_id: "crashed", branch_id: "main", recovered: [{ run_id: runId, cancelled_tool_calls: ["c1"] }] });
    expect(body.recovered[0].result).toMatchObject({ status: "cancelled", stop_reason: "external_abort", turns: 1 });
    expect(body.recovered[0].result.error).toContain("run interrupted");

    r = await post("/v1/sessions/crashed/recover", {});
    expect(r.status).toBe(200);
    expect((await r.json()).recovered).toEqual([]);

    r = await d.req("/v1/runs", {
      method: "POST",
      headers: { accept: "application/json" },
      json: { task: "next", session: "crashed", script: [{ content: "after recovery" }] },
    });
    expect(r.status).toBe(201);
    expect((await r.json()).result).toMatchObject({ status: "completed", output: "after recovery" });
    const shown = await (await d.req("/v1/sessions/crashed")).json();
    expect(shown.messages.map((m: { role: string }) => m.role)).toEqual(["user", "assistant", "tool", "user", "assistant"]);
    expect(shown.messages.at(-1).content).toBe("after recovery");
  });

  test("a run of the daemon still going on the branch: 409 session_busy, nothing written", async () => {
    const res = await d.req("/v1/runs", {
      method: "POST",
      json: { task: "slow", session: "busy", script: [{ content: "late", delay_ms: 60_000 }] },
    });
    expect(res.status).toBe(201);
    const runId = res.headers.get("x-run-id")!;
    const sse = new SseReader(res);
    expect(await sse.until((m) => m.event === "turn_started")).not.toBeNull();
    const before = (await (await d.req("/v1/sessions/busy/tree")).json()).records.length;
    const r = await post("/v1/sessions/busy/recover");
    expect(r.status).toBe(409);
    expect((await r.json()).error.details).toEqual({ reason: "session_busy", run_id: runId });
    expect((await (await d.req("/v1/sessions/busy/tree")).json()).records.length).toBe(before);
    await post(`/v1/runs/${runId}/abort`, { reason: "test over" });
    await sse.until((m) => m.event === "done");
    // the abort journaled run_finished: nothing left to recover
    expect((await (await post("/v1/sessions/busy/recover")).json()).recovered).toEqual([]);
  });

  test("a run of another process (its live-run mark names a live pid): 409 session_busy; force: true recovers it", async () => {
    const runId = await crashedSession("foreign");
    const other = Bun.spawn(["sleep", "600"], { stdout: "ignore", stderr: "ignore" });
    try {
      const storage = new JsonlSessionStorage(join(d.dir, "sessions"));
      writeFileSync(storage.runMarkFile("foreign", runId), `${other.pid} ${runId}\n`);
      // a new run on it: in use by that process (not "recover it")
      let r = await d.req("/v1/runs", {
        method: "POST",
        headers: { accept: "application/json" },
        json: { task: "next", session: "foreign", script: [{ content: "ok" }] },
      });
      expect(r.status).toBe(409);
      const busy = (await r.json()).error;
      expect(busy.details).toEqual({ reason: "session_busy", run_id: runId, pid: other.pid });
      expect(busy.message).toContain(`is still going in process ${other.pid}`);
      r = await post("/v1/sessions/foreign/recover");
      expect(r.status).toBe(409);
      expect((await r.json()).error.details).toEqual({ reason: "session_busy", run_id: runId, pid: other.pid });
      expect((await storage.records("foreign")).length).toBe(2);
      r = await post("/v1/sessions/foreign/recover", { force: true });
      expect(r.status).toBe(200);
      expect((await r.json()).recovered.map((x: { run_id: string }) => x.run_id)).toEqual([runId]);
      expect(existsSync(storage.runMarkFile("foreign", runId))).toBe(false);
    } finally {
      other.kill("SIGKILL");
    }
  });

  test("unknown session or branch: 404; an unknown field: 400", async () => {
    await crashedSession("other");
    let r = await post("/v1/sessions/nope/recover");
    expect(r.status).toBe(404);
    expect((await r.json()).error.code).toBe("NOT_FOUND");
    r = await post("/v1/sessions/other/recover", { branch: "ghost" });
    expect(r.status).toBe(404);
    expect((await r.json()).error.message).toContain("no branch 'ghost'");
    r = await post("/v1/sessions/other/recover", { brunch: "main" });
    expect(r.status).toBe(400);
    expect((await r.json()).error.code).toBe("INVALID_REQUEST");
    // nothing was recovered by the failed requests
    expect((await (await d.req("/v1/sessions/other")).json()).session.runs[0].result).toBeNull();
  });
});

/** `agentcore serve` from source as a child process on root `dir`; resolves once it listens. */
async function serve(dir: string) {
  const proc = Bun.spawn(
    [process.execPath, join(REPO_ROOT, "src/cli/main.ts"), "serve", "--port", "0", "--state-dir", join(dir, "state"), "--root", dir],
    {
      cwd: dir,
      env: { PATH: process.env.PATH ?? "", HOME: dir },
      stdout: "ignore",
      stderr: "pipe",
    },
  );
  let text = "";
  const reader = proc.stderr.getReader();
  const dec = new TextDecoder();
  while (!/token file (.+)\n/.test(text)) {
    const { done, value } = await reader.read();
    if (done) throw new Error(`serve ended: ${text}`);
    text += dec.decode(value, { stream: true });
  }
  const url = /listening on (\S+)\n/.exec(text)![1]!;
  const token = readFileSync(/token file (.+)\n/.exec(text)![1]!, "utf8").trim();
  const req = (path: string, init: RequestInit & { json?: unknown } = {}) =>
    fetch(url + path, {
      ...init,
      headers: {
        authorization: `Bearer ${token}`,
        ...(init.json !== undefined ? { "content-type": "application/json" } : {}),
        ...(init.headers as Record<string, string> | undefined),
      },
      body: init.json !== undefined ? JSON.stringify(init.json) : init.body,
    });
  return { proc, req };
}

describe("a daemon killed mid-run (real processes)", () => {
  test("SIGKILL during a session run; the next daemon refuses runs on it with 409, recovers it, then runs", async () => {
    const dir = mkdtempSync(join(tmpdir(), "agentcore-daemon-crash-"));
    const first = await serve(dir);
    let second: Awaited<ReturnType<typeof serve>> | null = null;
    try {
      const res = await first.req("/v1/runs", {
        method: "POST",
        json: { task: "slow", session: "d", script: [{ content: "late", delay_ms: 600_000 }] },
      });
      expect(res.status).toBe(201);
      expect(await new SseReader(res).until((m) => m.event === "turn_started")).not.toBeNull();
      first.proc.kill("SIGKILL");
      await first.proc.exited;

      second = await serve(dir);
      const run = () =>
        second!.req("/v1/runs", {
          method: "POST",
          headers: { accept: "application/json" },
          json: { task: "again", session: "d", script: [{ content: "back" }] },
        });
      let r = await run();
      expect(r.status).toBe(409);
      const err = (await r.json()).error;
      expect(err.details.reason).toBe("session_unfinished_run");
      expect(err.details.recover).toBe("POST /v1/sessions/d/recover");
      r = await second.req("/v1/sessions/d/recover", { method: "POST" });
      expect(r.status).toBe(200);
      expect((await r.json()).recovered).toHaveLength(1);
      r = await run();
      expect(r.status).toBe(201);
      expect((await r.json()).result).toMatchObject({ status: "completed", output: "back" });
    } finally {
      first.proc.kill("SIGKILL");
      second?.proc.kill("SIGKILL");
      await Promise.all([first.proc.exited, second?.proc.exited]);
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
