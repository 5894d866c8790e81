// Retention of cluster runs (issue 24 §3, docs/cluster.md "Retention"): a
// daemon (the compiled binary) on a real PostgreSQL store queues the prune
// job on pg-boss every AGENTCORE_RUN_PRUNE_EVERY; the job deletes the rows of
// runs that finished longer ago than AGENTCORE_RUN_RETENTION, with their
// events, commands and approvals. Fresh finished runs, and queued, running and
// suspended runs of any age stay; every session record stays (`sessions show`
// and GET /v1/sessions/{id} still work), and GET /v1/runs/{id} of a pruned
// run answers 404. Runs are aged by moving their timestamps back in SQL; the
// job's effect is awaited with a bounded poll. Today's main never prunes: the
// poll runs out.
import { afterAll, expect, test } from "bun:test";
import pg from "pg";
import { binaryPath } from "../support/binary.ts";
import { ASK, call, clusterFile, config, ENV, settled, shTurn, startDaemon, waitFor } from "../support/cluster.ts";
import { tmpPerTest } from "../support/tmp.ts";

const tmp = tmpPerTest("agentcore-cluster-prune-");
const { db, maybe } = await clusterFile("the cluster retention tests");
const clients: pg.Client[] = [];
afterAll(async () => {
  for (const c of clients) await c.end().catch(() => {});
});

async function sql(): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: db! });
  c.on("error", () => {}); // the file's database is dropped after it
  await c.connect();
  clients.push(c);
  return c;
}

const count = async (c: pg.Client, table: string, runId: string) =>
  Number((await c.query(`SELECT count(*)::int AS n FROM agentcore.${table} WHERE run_id = $1`, [runId])).rows[0].n);

maybe("cluster retention: finished runs' rows are pruned by a job on the queue", () => {
  test("old finished runs go with their events, commands and approvals; fresh, queued, running and suspended runs and all sessions stay", async () => {
    const dir = tmp();
    const d = await startDaemon(db!, dir, "a", config(dir, ASK), [], {
      AGENTCORE_RUN_RETENTION: "1d",
      AGENTCORE_RUN_PRUNE_EVERY: "1s",
    });
    const old = await call(d, "POST", "/v1/runs", { task: "old", script: [{ content: "an old answer" }] });
    const fresh = await call(d, "POST", "/v1/runs", { task: "fresh", script: [{ content: "a fresh answer" }] });
    const waiting = await call(d, "POST", "/v1/runs", { task: "ask", script: [shTurn("echo hi"), { content: "after" }] });
    for (const r of [old, fresh, waiting]) expect(r.status).toBe(201);
    const [oldId, freshId, waitingId] = [old.json.run_id, fresh.json.run_id, waiting.json.run_id] as string[];
    expect((await settled(d, oldId)).status).toBe("idle");
    expect((await settled(d, freshId)).status).toBe("idle");
    // a live run: it waits on its approval in the daemon (its row says running)
    await waitFor(async () => (await call(d, "GET", "/v1/approvals")).text.includes('"w1"'), "the approval to wait");
    expect((await call(d, "GET", `/v1/runs/${waitingId}`)).json.status).toBe("running");
    const oldSession = old.json.session.session_id as string;

    const c = await sql();
    // rows no daemon works: a failed run, a run still marked running by a daemon that is gone, a queued run, a suspended run
    await c.query(
      `INSERT INTO agentcore.runs (run_id, session_id, branch, request, status, owner) VALUES
         ('run_failed', 's-failed', 'main', '{}', 'failed', 'gone'),
         ('run_running', 's-running', 'main', '{}', 'running', 'gone'),
         ('run_queued', 's-queued', 'main', '{}', 'queued', NULL),
         ('run_suspended', 's-suspended', 'main', '{}', 'suspended', 'gone')`,
    );
    await c.query("INSERT INTO agentcore.run_events (run_id, seq, item) VALUES ('run_failed', 1, '{}'), ('run_running', 1, '{}')");
    await c.query(
      "INSERT INTO agentcore.run_commands (run_id, target, kind, body, status) VALUES ($1, 'gone', 'steer', '{}', 'done'), ('run_running', 'gone', 'steer', '{}', 'pending')",
      [oldId],
    );
    expect(await count(c, "run_events", oldId)).toBeGreaterThan(0);
    expect(await count(c, "run_approvals", waitingId)).toBe(1);
    const recordsBefore = Number((await c.query("SELECT count(*)::int AS n FROM agentcore.records")).rows[0].n);
    expect(recordsBefore).toBeGreaterThan(0);

    // two days old: everything but the fresh run
    const aged = [oldId, waitingId, "run_failed", "run_running", "run_queued", "run_suspended"];
    await c.query(
      "UPDATE agentcore.runs SET created_at = now() - interval '2 days', updated_at = now() - interval '2 days' WHERE run_id = ANY($1)",
      [aged],
    );

    await waitFor(
      async () => (await c.query("SELECT 1 FROM agentcore.runs WHERE run_id = ANY($1)", [[oldId, "run_failed"]])).rows.length === 0,
      "the prune job to delete the old finished runs",
      60_000,
    );
    const left = (await c.query("SELECT run_id, status FROM agentcore.runs ORDER BY run_id")).rows;
    expect(left.map((r) => r.run_id).sort()).toEqual([freshId, waitingId, "run_queued", "run_running", "run_suspended"].sort());
    for (const [table, runId] of [
      ["run_events", oldId],
      ["run_events", "run_failed"],
      ["run_commands", oldId],
    ] as const)
      expect({ table, runId, n: await count(c, table, runId) }).toEqual({ table, runId, n: 0 });
    expect(await count(c, "run_events", freshId)).toBeGreaterThan(0);
    expect(await count(c, "run_events", waitingId)).toBeGreaterThan(0);
    expect(await count(c, "run_events", "run_running")).toBe(1);
    expect(await count(c, "run_commands", "run_running")).toBe(1);
    expect(await count(c, "run_approvals", waitingId)).toBe(1);
    // sessions are never pruned
    expect(Number((await c.query("SELECT count(*)::int AS n FROM agentcore.records")).rows[0].n)).toBe(recordsBefore);

    // a pruned run is gone from the API, cleanly; its session is all there; the waiting run still waits
    expect((await call(d, "GET", "/v1/approvals")).text).toContain('"w1"');
    const gone = await call(d, "GET", `/v1/runs/${oldId}`);
    expect(gone.status).toBe(404);
    expect(gone.json.error.code).toBeString();
    expect((await call(d, "GET", `/v1/runs/${freshId}`)).status).toBe(200);
    const session = await call(d, "GET", `/v1/sessions/${oldSession}`);
    expect(session.status).toBe(200);
    expect(session.text).toContain("an old answer");
    const show = Bun.spawnSync([binaryPath(), "sessions", "show", oldSession, "--store", db!], { cwd: dir, env: ENV });
    expect(show.stderr.toString()).toBe("");
    expect(show.exitCode).toBe(0);
    expect(show.stdout.toString()).toContain("an old answer");
  }, 180_000);

  test("a retention or job period that is not a duration is refused at start (exit 2, naming the variable)", async () => {
    const dir = tmp();
    for (const [name, bad] of [
      ["AGENTCORE_RUN_RETENTION", "30"],
      ["AGENTCORE_RUN_RETENTION", "0d"],
      ["AGENTCORE_RUN_PRUNE_EVERY", "soon"],
      ["AGENTCORE_RUN_PRUNE_EVERY", "off"],
    ] as const) {
      const p = Bun.spawnSync([binaryPath(), "serve", "--config", config(dir), "--store", db!, "--port", "0", "--state-dir", dir], {
        cwd: dir,
        env: { ...ENV, [name]: bad },
        timeout: 30_000, // a daemon that took it would serve on: stopped, and the exit code is not 2
      });
      expect({ name, bad, code: p.exitCode }).toEqual({ name, bad, code: 2 });
      expect(p.stderr.toString()).toContain(`${name} must be a duration such as 30d`);
      expect(p.stderr.toString()).toContain(`got '${bad}'`);
    }
  }, 120_000);
});
