// A refused request changes nothing (issue 30): every refusal (4xx) of every
// state-changing route of the daemon leaves the store as it was. The table of
// routes comes from the daemon's own OpenAPI document, so a new route without
// refusal cases here fails the walk. Each refusal is provoked on a daemon over
// real HTTP on loopback, on a JSONL store (every file of the daemon's folder,
// byte for byte) and on PostgreSQL (every record of every session) when a
// server is there; the store is snapshotted before and after each one. Then
// the crash case with real processes: a daemon SIGKILLed mid-run, a new one
// on the same folder, a refused resume (409, journal bytes unchanged), and the
// accepted operations that recover the run as docs/durable-runs.md says.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REPO_ROOT } from "../support/paths.ts";
import { freshDatabase } from "../support/postgres.ts";
import { folderSnapshot, storeSnapshot } from "../support/snapshot.ts";
import { JsonlSessionStorage, type JournalStorage } from "../../src/session/index.ts";
import { crashedRun } from "../support/journals.ts";
import { PostgresSessionStorage } from "../../src/session/postgres/storage.ts";
import type { AnyToolDefinition } from "../../src/tools/definition.ts";
import { collectStderr, rawRequest, SseReader, sleepTool, startTestDaemon, type TestDaemon } from "../support/daemon.ts";

/** A side-effecting tool: the daemon's policy below asks before it runs. */
const touchTool = {
  name: "touch",
  description: "pretend to change something",
  effect: "side_effecting",
  parameters: { type: "object", properties: {}, additionalProperties: false },
  handler: async () => ({ touched: true }),
} as unknown as AnyToolDefinition;

const POLICY = {
  default: "allow" as const,
  rules: [{ id: "side-effecting", action: "require_approval" as const, effects: ["side_effecting" as const], reason: "ask first" }],
};
const MAX_BODY = 4096;
/** A database of this file's own (null without a PostgreSQL server: that variant is skipped). */
const pgDb = await freshDatabase();

interface Case {
  /** What the refusal is. */
  what: string;
  path: string;
  init?: RequestInit & { json?: unknown };
  status: number;
  /** The refusal's `details.reason` when it has one worth checking. */
  reason?: string;
}

interface World {
  d: TestDaemon;
  storage: JournalStorage;
  /** A run of the daemon waiting on its model (its session `busy`). */
  liveRun: string;
  /** A finished run of the daemon, idle (its session `done`). */
  idleRun: string;
  snapshot(): Promise<unknown>;
}

const ask = { accept: "application/json" };
const post = (json?: unknown, headers: Record<string, string> = {}): RequestInit & { json?: unknown } => ({
  method: "POST",
  headers: { ...ask, ...headers },
  ...(json !== undefined ? { json } : {}),
});

/**
 * The refusals of each state-changing operation of the OpenAPI document,
 * beyond the ones every route shares (see {@link common}): bad bodies,
 * unknown targets, wrong states, conflicts.
 */
function routeCases(w: World): Record<string, Case[]> {
  const script = [{ content: "ok" }];
  return {
    "POST /v1/calls": [
      {
        what: "not JSON",
        path: "/v1/calls",
        init: { method: "POST", headers: { "content-type": "application/json" }, body: "{" },
        status: 400,
      },
    ],
    "POST /v1/calls/batch": [
      { what: "not NDJSON", path: "/v1/calls/batch", init: post({ id: "1", tool: "echo", arguments: {} }), status: 415 },
    ],
    "POST /v1/runs": [
      { what: "no task", path: "/v1/runs", init: post({ session: "done", script }), status: 400 },
      { what: "an unknown field", path: "/v1/runs", init: post({ task: "t", session: "done", script, nope: 1 }), status: 400 },
      { what: "an unknown tool", path: "/v1/runs", init: post({ task: "t", session: "fresh", tools: ["ghost"], script }), status: 400 },
      { what: "a bad script", path: "/v1/runs", init: post({ task: "t", session: "fresh", script: "nope" }), status: 400 },
      { what: "an unknown branch", path: "/v1/runs", init: post({ task: "t", session: "done", branch: "ghost", script }), status: 404 },
      {
        what: "an output schema that does not compile",
        path: "/v1/runs",
        init: post({ task: "t", session: "done", output_schema: { type: "nope" }, script }),
        status: 400,
      },
      {
        what: "an image that is not base64",
        path: "/v1/runs",
        init: post({ task: "t", session: "done", images: [{ media_type: "image/png", data: "%%%" }], script }),
        status: 400,
      },
      { what: "a busy session", path: "/v1/runs", init: post({ task: "t", session: "busy", script }), status: 409, reason: "session_busy" },
      {
        what: "a crashed session",
        path: "/v1/runs",
        init: post({ task: "t", session: "crashed", script }),
        status: 409,
        reason: "session_unfinished_run",
      },
    ],
    "POST /v1/runs/{run_id}/abort": [
      { what: "an unknown run", path: "/v1/runs/run_ghost/abort", init: post({}), status: 404 },
      { what: "a reason that is not a string", path: `/v1/runs/${w.liveRun}/abort`, init: post({ reason: 1 }), status: 400 },
    ],
    "POST /v1/runs/{run_id}/steer": [
      { what: "an unknown run", path: "/v1/runs/run_ghost/steer", init: post({ content: "x" }), status: 404 },
      { what: "no content", path: `/v1/runs/${w.liveRun}/steer`, init: post({}), status: 400 },
      { what: "an idle run", path: `/v1/runs/${w.idleRun}/steer`, init: post({ content: "x" }), status: 409 },
    ],
    "POST /v1/runs/{run_id}/follow_up": [
      { what: "an unknown run", path: "/v1/runs/run_ghost/follow_up", init: post({ task: "x" }), status: 404 },
      { what: "no task", path: `/v1/runs/${w.idleRun}/follow_up`, init: post({}), status: 400 },
    ],
    "POST /v1/runs/{run_id}/continue": [
      { what: "an unknown run", path: "/v1/runs/run_ghost/continue", init: post({}), status: 404 },
      { what: "a field", path: `/v1/runs/${w.idleRun}/continue`, init: post({ task: "x" }), status: 400 },
      { what: "an active run", path: `/v1/runs/${w.liveRun}/continue`, init: post({}), status: 409, reason: "agent_active" },
    ],
    "POST /v1/runs/{run_id}/compact": [
      { what: "an unknown run", path: "/v1/runs/run_ghost/compact", init: post({}), status: 404 },
      { what: "a field", path: `/v1/runs/${w.idleRun}/compact`, init: post({ x: 1 }), status: 400 },
      {
        what: "no compaction settings",
        path: `/v1/runs/${w.idleRun}/compact`,
        init: post({}),
        status: 409,
        reason: "compaction_not_configured",
      },
    ],
    "POST /v1/approvals/{approval_id}": [
      { what: "an unknown approval", path: "/v1/approvals/ghost", init: post({ approved: true }), status: 404 },
      { what: "no answer", path: "/v1/approvals/ghost", init: post({}), status: 400 },
    ],
    "POST /v1/sessions/{session_id}/fork": [
      { what: "an unknown session", path: "/v1/sessions/ghost/fork", init: post({}), status: 404 },
      { what: "an unknown field", path: "/v1/sessions/done/fork", init: post({ nope: 1 }), status: 400 },
      { what: "an unknown record", path: "/v1/sessions/done/fork", init: post({ from: "rec_ghost" }), status: 400 },
      { what: "a branch name taken", path: "/v1/sessions/done/fork", init: post({ name: "main" }), status: 409 },
      { what: "a crashed session's head", path: "/v1/sessions/crashed/fork", init: post({}), status: 400 },
    ],
    "POST /v1/sessions/{session_id}/rollback": [
      { what: "no record", path: "/v1/sessions/done/rollback", init: post({}), status: 400 },
      { what: "an unknown session", path: "/v1/sessions/ghost/rollback", init: post({ to: "x" }), status: 404 },
      { what: "an unknown record", path: "/v1/sessions/done/rollback", init: post({ to: "rec_ghost" }), status: 400 },
    ],
    "POST /v1/sessions/{session_id}/retry": [
      { what: "no run", path: "/v1/sessions/done/retry", init: post({}), status: 400 },
      { what: "an unknown session", path: "/v1/sessions/ghost/retry", init: post({ run: "x" }), status: 404 },
      { what: "an unknown run", path: "/v1/sessions/done/retry", init: post({ run: "run_ghost" }), status: 400 },
    ],
    "POST /v1/sessions/{session_id}/recover": [
      { what: "an unknown session", path: "/v1/sessions/ghost/recover", init: post({}), status: 404 },
      { what: "an unknown branch", path: "/v1/sessions/crashed/recover", init: post({ branch: "ghost" }), status: 404 },
      { what: "an unknown field", path: "/v1/sessions/crashed/recover", init: post({ brunch: "main" }), status: 400 },
      { what: "a run of the daemon going on", path: "/v1/sessions/busy/recover", init: post({}), status: 409, reason: "session_busy" },
    ],
    "POST /v1/sessions/{session_id}/approvals/{tool_call_id}": [
      { what: "no answer", path: "/v1/sessions/waiting/approvals/w1", init: post({ approved: "yes" }), status: 400 },
      { what: "an unknown session", path: "/v1/sessions/ghost/approvals/w1", init: post({ approved: true }), status: 404 },
      {
        what: "a call that does not wait",
        path: "/v1/sessions/waiting/approvals/ghost",
        init: post({ approved: true }),
        status: 404,
        reason: "approval_not_found",
      },
      {
        what: "a call answered already",
        path: "/v1/sessions/answered/approvals/w1",
        init: post({ approved: false }),
        status: 409,
        reason: "approval_answered",
      },
      {
        what: "a crashed run's call",
        path: "/v1/sessions/crashed-approval/approvals/c1",
        init: post({ approved: true }),
        status: 409,
        reason: "session_unfinished_run",
      },
    ],
    "POST /v1/sessions/{session_id}/resume": [
      { what: "a task", path: "/v1/sessions/waiting/resume", init: post({ task: "x", script }), status: 400 },
      { what: "an unknown session", path: "/v1/sessions/ghost/resume", init: post({ script }), status: 404 },
      { what: "an unknown branch", path: "/v1/sessions/crashed/resume", init: post({ branch: "ghost", script }), status: 404 },
      { what: "a finished run", path: "/v1/sessions/done/resume", init: post({ script }), status: 409, reason: "not_suspended" },
      {
        what: "approvals that wait",
        path: "/v1/sessions/waiting/resume",
        init: post({ script }),
        status: 409,
        reason: "approvals_pending",
      },
      { what: "a run going on", path: "/v1/sessions/busy/resume", init: post({ script }), status: 409, reason: "session_busy" },
      {
        what: "a run of another process going on",
        path: "/v1/sessions/foreign/resume",
        init: post({ script }),
        status: 409,
        reason: "session_busy",
      },
      // a crashed run that recovery would close cancelled: nothing to resume, and nothing recovered
      {
        what: "a crashed run with nothing to resume",
        path: "/v1/sessions/crashed/resume",
        init: post({ script }),
        status: 409,
        reason: "not_suspended",
      },
      // a crashed run whose approval still waits: recovery would suspend it, but the resume is refused
      {
        what: "a crashed run whose approval waits",
        path: "/v1/sessions/crashed-approval/resume",
        init: post({ script }),
        status: 409,
        reason: "approvals_pending",
      },
      // a crashed run a resume would take (a read-only call runs again), refused for its request
      {
        what: "a resumable crashed run, a bad script",
        path: "/v1/sessions/crashed-readonly/resume",
        init: post({ script: [{ nope: 1 }] }),
        status: 400,
      },
      {
        what: "a resumable crashed run, an unknown tool",
        path: "/v1/sessions/crashed-readonly/resume",
        init: post({ script, tools: ["ghost"] }),
        status: 400,
      },
    ],
    "POST /mcp": [
      {
        what: "not JSON-RPC",
        path: "/mcp",
        init: {
          method: "POST",
          headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
          body: "[1]",
        },
        status: 400,
      },
    ],
  };
}

/** The refusals every state-changing route shares: no token, a foreign Origin, a body too large, a body that is not JSON. */
function common(path: string): Case[] {
  return [
    { what: "no token", path, init: { method: "POST", headers: { authorization: "" }, json: {} }, status: 401 },
    { what: "a foreign Origin", path, init: { method: "POST", headers: { origin: "http://evil.example" }, json: {} }, status: 403 },
    {
      what: "a body over the cap",
      path,
      init: {
        method: "POST",
        headers: { "content-type": path.endsWith("/batch") ? "application/x-ndjson" : "application/json" },
        body: JSON.stringify({ task: "x".repeat(MAX_BODY * 2) }),
      },
      status: 413,
    },
    { what: "a body that is not JSON", path, init: { method: "POST", headers: { "content-type": "text/plain" }, body: "{}" }, status: 415 },
  ];
}

/** The state-changing operations of the daemon's OpenAPI document, as "METHOD /path" with the document's path. */
async function stateChanging(d: TestDaemon): Promise<{ op: string; path: string }[]> {
  const doc = await (await d.req("/v1/openapi.json")).json();
  const out = [];
  for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, unknown>>))
    for (const method of Object.keys(item))
      if (["post", "put", "patch", "delete"].includes(method)) out.push({ op: `${method.toUpperCase()} ${path}`, path });
  return out;
}

/** The daemon's store filled with one session of each state a refusal needs. */
async function world(d: TestDaemon, storage: JournalStorage, snapshot: () => Promise<unknown>): Promise<World> {
  let r = await d.req("/v1/runs", post({ task: "hi", session: "done", script: [{ content: "ok" }] }));
  expect(r.status).toBe(201);
  const idleRun = r.headers.get("x-run-id")!;
  await r.text();
  const suspend = (session: string) =>
    d.req(
      "/v1/runs",
      post({
        task: "change it",
        session,
        suspend_on_approval: true,
        script: [{ content: null, tool_calls: [{ id: "w1", name: "touch", arguments: "{}" }] }],
      }),
    );
  for (const s of ["waiting", "answered"]) {
    r = await suspend(s);
    expect((await r.json()).result).toMatchObject({ status: "suspended", stop_reason: "awaiting_approval" });
  }
  r = await d.req("/v1/sessions/answered/approvals/w1", post({ approved: true }));
  expect(r.status).toBe(200);
  await crashedRun(storage, "agentcore-daemon", "crashed", "touch");
  await crashedRun(storage, "agentcore-daemon", "crashed-approval", "touch", true);
  await crashedRun(storage, "agentcore-daemon", "crashed-readonly", "sleep");
  // a run of another process still going (its live mark names a live pid: this test's)
  await crashedRun(storage, "agentcore-daemon", "foreign", "touch");
  await storage.markRunLive("foreign", "r-foreign");
  r = await d.req("/v1/runs", {
    method: "POST",
    json: { task: "slow", session: "busy", script: [{ content: "late", delay_ms: 600_000 }] },
  });
  expect(r.status).toBe(201);
  const liveRun = r.headers.get("x-run-id")!;
  const sse = new SseReader(r);
  expect(await sse.until((m) => m.event === "turn_started")).not.toBeNull();
  void sse.all().catch(() => {});
  return { d, storage, liveRun, idleRun, snapshot };
}

/** Send each refusal and check the store is as it was; then the accepted operations recover as documented. */
async function walk(w: World): Promise<void> {
  const ops = await stateChanging(w.d);
  const table = routeCases(w);
  // a state-changing route without refusal cases here (a new route) fails the walk
  expect(ops.map((o) => o.op).sort()).toEqual(Object.keys(table).sort());
  const failures: string[] = [];
  for (const { op, path } of ops) {
    const concrete = path.replace("{run_id}", w.liveRun).replace(/\{[a-z_]+\}/g, (m) => (m === "{session_id}" ? "done" : "x"));
    for (const c of [...common(concrete), ...table[op]!]) {
      const before = await w.snapshot();
      const res = await w.d.req(c.path, c.init);
      const text = await res.text();
      const after = await w.snapshot();
      const label = `${op}, ${c.what}: ${res.status} ${text.slice(0, 300)}`;
      if (res.status !== c.status) failures.push(`${label} (expected ${c.status})`);
      else if (c.reason !== undefined && JSON.parse(text).error?.details?.reason !== c.reason)
        failures.push(`${label} (expected reason ${c.reason})`);
      if (!Bun.deepEquals(before, after)) failures.push(`${label}: the store changed`);
    }
  }
  // a Host that is not the daemon's (DNS rebinding), on every route, over a raw socket
  for (const { op, path } of ops) {
    const before = await w.snapshot();
    const body = "{}";
    const res = await rawRequest(
      w.d.port,
      `POST ${path.replace(/\{[a-z_]+\}/g, "done")} HTTP/1.1\r\nHost: evil.example:${w.d.port}\r\nAuthorization: Bearer ${w.d.token}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close`,
      body,
    );
    if (res.status !== 403) failures.push(`${op}, a foreign Host: ${res.status} (expected 403)`);
    if (!Bun.deepEquals(before, await w.snapshot())) failures.push(`${op}, a foreign Host: the store changed`);
  }
  expect(failures).toEqual([]);

  // The accepted operations recover what a crash left open, as docs/durable-runs.md says.
  // A resume that goes on: its read-only call is closed resumable, runs again, and the run completes.
  let r = await w.d.req("/v1/sessions/crashed-readonly/resume", post({ script: [{ content: "after" }] }));
  expect(r.status).toBe(201);
  expect((await r.json()).result).toMatchObject({ status: "completed", output: "after" });
  const runs = (await w.storage.checkout("crashed-readonly", "main"))!.session.runs;
  expect(runs[0]!.result).toMatchObject({ status: "suspended", stop_reason: "awaiting_approval" });
  expect(runs[0]!.result!.error).toContain("recovered by POST /v1/sessions/{id}/resume");
  // A crashed run with nothing to resume: POST recover closes it cancelled; a resume is still refused.
  r = await w.d.req("/v1/sessions/crashed/recover", post({}));
  expect(r.status).toBe(200);
  expect((await r.json()).recovered[0].result).toMatchObject({ status: "cancelled", stop_reason: "external_abort" });
  // A crashed run whose approval waits: recover closes it suspended, the answer is taken, and a resume runs the call.
  r = await w.d.req("/v1/sessions/crashed-approval/resume", post({ script: [{ content: "after" }] }));
  expect((await r.json()).error.details).toMatchObject({
    reason: "approvals_pending",
    pending: ["c1"],
    recover: "POST /v1/sessions/crashed-approval/recover",
  });
  r = await w.d.req("/v1/sessions/crashed-approval/recover", post({}));
  expect((await r.json()).recovered[0].result).toMatchObject({ status: "suspended", stop_reason: "awaiting_approval" });
  expect((await w.d.req("/v1/sessions/crashed-approval/approvals/c1", post({ approved: true }))).status).toBe(200);
  r = await w.d.req("/v1/sessions/crashed-approval/resume", post({ script: [{ content: "after" }] }));
  expect(r.status).toBe(201);
  expect((await r.json()).result).toMatchObject({ status: "completed", output: "after" });
  const messages = (await (await w.d.req("/v1/sessions/crashed-approval")).json()).messages;
  expect(messages.find((m: { role: string }) => m.role === "tool").content).toContain("touched");
  // The live run ends; nothing else was left open by the walk.
  r = await w.d.req(`/v1/runs/${w.liveRun}/abort`, post({ reason: "walk over" }));
  expect(r.status).toBe(200);
}

describe("every refusal of a state-changing route leaves the store as it was", () => {
  test("on a JSONL store: every file of the daemon's folder, byte for byte", async () => {
    const d = await startTestDaemon({ policy: POLICY, maxBodyBytes: MAX_BODY, runtimeOptions: { tools: [sleepTool, touchTool] } });
    try {
      const storage = new JsonlSessionStorage(join(d.dir, "sessions"));
      await walk(await world(d, storage, async () => folderSnapshot(d.dir)));
    } finally {
      await d.stop();
    }
  }, 120_000);

  test.skipIf(pgDb === null)(
    "on a PostgreSQL store: every record and branch of every session",
    async () => {
      const storage = await PostgresSessionStorage.open(pgDb!);
      const d = await startTestDaemon({
        policy: POLICY,
        maxBodyBytes: MAX_BODY,
        storage,
        runtimeOptions: { tools: [sleepTool, touchTool] },
      });
      try {
        await walk(await world(d, storage, () => storeSnapshot(storage)));
      } finally {
        await d.stop();
        await storage.close();
      }
    },
    120_000,
  );
});

/** `agentcore serve` from source as a child process on `dir`; resolves once it listens. */
async function serve(dir: string) {
  const proc = Bun.spawn(
    [process.execPath, join(REPO_ROOT, "src/cli/main.ts"), "serve", "--port", "0", "--state-dir", join(dir, "state"), "--root", dir],
    { cwd: dir, env: { PATH: process.env.PATH ?? "", HOME: dir }, stdout: "ignore", stderr: "pipe" },
  );
  const text = await collectStderr(proc).ready(/token file (.+)\n/);
  const url = /listening on (\S+)\n/.exec(text)![1]!;
  const token = readFileSync(/token file (.+)\n/.exec(text)![1]!, "utf8").trim();
  const req = (path: string, json?: unknown, headers: Record<string, string> = ask) =>
    fetch(url + path, {
      method: json === undefined ? "GET" : "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...headers },
      body: json === undefined ? undefined : JSON.stringify(json),
    });
  return { proc, req };
}

describe("a daemon killed mid-run (real processes)", () => {
  const dir = mkdtempSync(join(tmpdir(), "agentcore-refusals-crash-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  test("SIGKILL mid-run, a new daemon: resume is refused (409 not_suspended) with the journal unchanged; recover closes the run; a run goes on", async () => {
    const first = await serve(dir);
    let second: Awaited<ReturnType<typeof serve>> | null = null;
    try {
      const res = await first.req("/v1/runs", { task: "slow", session: "d", script: [{ content: "late", delay_ms: 600_000 }] }, {});
      expect(res.status).toBe(201);
      expect(await new SseReader(res).until((m) => m.event === "turn_started")).not.toBeNull();
      first.proc.kill("SIGKILL");
      await first.proc.exited;

      second = await serve(dir);
      const sessions = join(dir, ".agentcore", "sessions");
      const before = folderSnapshot(sessions);
      let r = await second.req("/v1/sessions/d/resume", { script: [{ content: "x" }] });
      expect(r.status).toBe(409);
      const err = (await r.json()).error;
      expect(err.details).toMatchObject({ reason: "not_suspended", recover: "POST /v1/sessions/d/recover" });
      expect(err.message).toContain("POST /v1/sessions/d/recover");
      // nothing was written: no run_finished "recovered by POST /v1/sessions/{id}/resume"
      expect(folderSnapshot(sessions)).toEqual(before);
      const storage = new JsonlSessionStorage(sessions);
      expect((await storage.checkout("d", "main"))!.session.runs.map((x) => x.result)).toEqual([null]);

      // the accepted operation recovers: the run is closed cancelled, and says by whom
      r = await second.req("/v1/sessions/d/recover", {});
      expect(r.status).toBe(200);
      const recovered = (await r.json()).recovered;
      expect(recovered).toHaveLength(1);
      expect(recovered[0].result).toMatchObject({ status: "cancelled", stop_reason: "external_abort" });
      expect(recovered[0].result.error).toContain("recovered through the daemon");
      r = await second.req("/v1/runs", { task: "again", session: "d", script: [{ content: "back" }] });
      expect(r.status).toBe(201);
      expect((await r.json()).result).toMatchObject({ status: "completed", output: "back" });
    } finally {
      first.proc.kill("SIGKILL");
      second?.proc.kill("SIGKILL");
      await Promise.all([first.proc.exited, second?.proc.exited]);
    }
  }, 120_000);
});
