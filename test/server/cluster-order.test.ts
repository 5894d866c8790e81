// Issue 30 §4: a cluster run's state in order, its events on time. Daemons of
// the compiled binary on one PostgreSQL store, on loopback.
// - Order: PostgreSQL answers every update of the run table after a random
//   delay of up to a second (a trigger that sleeps before the statement
//   touches a row), so two status updates of a run sent one after the other
//   on two connections would often land the other way round. Every finished run's row
//   must still read `idle`, on both daemons, and its stream on the daemon
//   that did not run it must end.
// - Latency: a daemon whose poll fallback is an hour (AGENTCORE_CLUSTER_POLL_MS)
//   serves streams opened right after POST /v1/runs: each one must get every
//   event and its end from the notifications alone; one that waited for the
//   poll would be cut by the bound.
// - A finished run has left its owner: a command to it is a 409
//   `run_not_owned` on either daemon, and its record is the store's.
// No timing assertions: bounded waits only.
import { expect, test } from "bun:test";
import { binaryPath } from "../support/binary.ts";
import { call, clusterFile, config, ENV, sse, startDaemon, waitFor, type Daemon } from "../support/cluster.ts";
import { tmpPerTest } from "../support/tmp.ts";

const tmp = tmpPerTest("agentcore-cluster-order-");
const { db, maybe } = await clusterFile("the cluster order tests");

/** Run SQL on the test's database. */
async function sql(text: string): Promise<void> {
  const { default: pg } = await import("pg");
  const client = new pg.Client({ connectionString: db! });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

/** The daemon of `daemons` whose name (host:pid:…) is `owner`. */
function daemonNamed(daemons: Daemon[], owner: string): Daemon {
  const d = daemons.find((x) => x.proc.pid === Number(owner.split(":")[1]));
  if (d === undefined) throw new Error(`no daemon is ${owner}`);
  return d;
}

maybe("cluster mode: state in order, events on time", () => {
  test("with every update of the run table delayed at random, no finished run reads running, and its stream ends on the other daemon", async () => {
    const dir = tmp();
    const cfg = config(dir);
    // two runs at a time each: the delays, not a queue for the database's connections, decide the order
    const daemons = [
      await startDaemon(db!, dir, "a", cfg, ["--max-active-runs", "2"]),
      await startDaemon(db!, dir, "b", cfg, ["--max-active-runs", "2"]),
    ];
    // before the statement locks any row: two updates sent in order may commit in either order
    await sql(`CREATE FUNCTION agentcore.test_slow() RETURNS trigger LANGUAGE plpgsql AS $$
                 BEGIN PERFORM pg_sleep(random()); RETURN NULL; END $$;
               CREATE TRIGGER test_slow BEFORE UPDATE ON agentcore.runs FOR EACH STATEMENT EXECUTE FUNCTION agentcore.test_slow()`);
    try {
      const ids: string[] = [];
      for (let i = 0; i < 30; i++) {
        const r = await call(daemons[i % 2]!, "POST", "/v1/runs", {
          task: `run ${i}`,
          script: [{ content: null, tool_calls: [{ id: "e1", name: "echo", arguments: '{"message":"hi"}' }] }, { content: `done ${i}` }],
        });
        expect(r.status).toBe(201);
        ids.push(r.json.run_id);
      }
      // every run has its result; then every row on both daemons must come to read idle (a stale `running` never does)
      const rows = async () => {
        const out: { id: string; on: string; status: string; result: { status: string } | null; owner: string | null }[] = [];
        for (const id of ids)
          for (const d of daemons) {
            const r = await call(d, "GET", `/v1/runs/${id}`);
            out.push({ id, on: d.url, status: r.json.status, result: r.json.result, owner: r.json.owner ?? r.json.cluster?.owner ?? null });
          }
        return out;
      };
      await waitFor(async () => (await rows()).every((r) => r.result !== null), "every run to have its result", 120_000);
      let last: Awaited<ReturnType<typeof rows>> = [];
      const settled = await waitFor(
        async () => {
          last = await rows();
          return last.every((r) => r.status === "idle" && r.result?.status === "completed") ? last : null;
        },
        "every finished run's row to read idle",
        20_000,
      ).catch(() => null);
      expect(settled === null ? last.filter((r) => r.status !== "idle") : []).toEqual([]);
      // each run's stream, on the daemon that did not run it, ends with its result
      for (const row of settled!.filter((_, i) => i % 2 === 0)) {
        const owner = daemonNamed(daemons, row.owner!);
        const other = daemons.find((d) => d !== owner)!;
        const s = await sse(other, row.id, undefined, 20_000);
        expect({ id: row.id, end: s.messages.at(-1)?.event }).toEqual({ id: row.id, end: "done" });
        expect(s.messages.at(-1)!.data.result.status).toBe("completed");
      }
    } finally {
      await sql("DROP TRIGGER test_slow ON agentcore.runs; DROP FUNCTION agentcore.test_slow()");
    }
  }, 300_000);

  test("a stream opened right after POST /v1/runs gets every event and the end from the notifications (the poll is an hour)", async () => {
    const dir = tmp();
    const d = await startDaemon(db!, dir, "slowpoll", config(dir), [], { AGENTCORE_CLUSTER_POLL_MS: "3600000" });
    for (let i = 0; i < 20; i++) {
      const created = await call(d, "POST", "/v1/runs", {
        task: `run ${i}`,
        script: [{ content: null, tool_calls: [{ id: "e1", name: "echo", arguments: '{"message":"hi"}' }] }, { content: `done ${i}` }],
      });
      expect(created.status).toBe(201);
      const s = await sse(d, created.json.run_id, undefined, 20_000);
      const kinds = s.messages.map((m) => m.event);
      expect({ run: i, end: kinds.at(-1) }).toEqual({ run: i, end: "done" });
      expect(kinds[0]).toBe("agent_started");
      expect(kinds).toContain("tool_completed");
      expect(kinds).toContain("agent_finished");
      const numbered = s.messages.filter((m) => m.id !== null).map((m) => m.id);
      expect(numbered).toEqual(numbered.map((_, k) => k + 1));
      expect(s.messages.at(-1)!.data.result.output).toBe(`done ${i}`);
    }
  }, 300_000);

  test("a finished run has left its owner: commands to it are 409 run_not_owned on both daemons; its record is the store's", async () => {
    const dir = tmp();
    const cfg = config(dir);
    const daemons = [await startDaemon(db!, dir, "a", cfg), await startDaemon(db!, dir, "b", cfg)];
    const created = await call(daemons[0]!, "POST", "/v1/runs", { task: "t", script: [{ content: "over" }] });
    const id = created.json.run_id as string;
    const end = (await sse(daemons[1]!, id, undefined, 30_000)).messages.at(-1);
    expect(end?.event).toBe("done");
    for (const d of daemons) {
      const view = await call(d, "GET", `/v1/runs/${id}`);
      expect(view.json).toMatchObject({ run_id: id, status: "idle", result: { status: "completed", output: "over" } });
      expect(view.json.agent_id).toBeUndefined();
      for (const [op, body] of [
        ["steer", { content: "more" }],
        ["follow_up", { task: "more" }],
        ["continue", {}],
        ["abort", {}],
      ] as const) {
        const r = await call(d, "POST", `/v1/runs/${id}/${op}`, body);
        expect({ op, status: r.status, reason: r.json?.error?.details?.reason }).toEqual({ op, status: 409, reason: "run_not_owned" });
        expect(r.json.error.message).toContain(`start a new run on session '${created.json.session.session_id}'`);
      }
      // a bad body is still a 400 before anything else
      expect((await call(d, "POST", `/v1/runs/${id}/steer`, { content: 5 })).status).toBe(400);
    }
    // the session goes on with a new run
    const next = await call(daemons[1]!, "POST", "/v1/runs", {
      task: "again",
      session: created.json.session.session_id,
      script: [{ content: "again" }],
    });
    expect(next.status).toBe(201);
    expect((await sse(daemons[0]!, next.json.run_id, undefined, 30_000)).messages.at(-1)?.data.result.output).toBe("again");
  }, 120_000);

  test("a poll period that is not a whole number of milliseconds from 10 to an hour is refused at start (exit 2, naming it)", async () => {
    const dir = tmp();
    for (const bad of ["fast", "5", "-1", "1e3", "3600001"]) {
      const p = Bun.spawnSync([binaryPath(), "serve", "--config", config(dir), "--store", db!, "--port", "0", "--state-dir", dir], {
        cwd: dir,
        env: { ...ENV, AGENTCORE_CLUSTER_POLL_MS: bad },
        timeout: 30_000, // a daemon that took it would serve on: stopped, and the exit code is not 2
      });
      expect({ bad, code: p.exitCode }).toEqual({ bad, code: 2 });
      expect(p.stderr.toString()).toContain(
        `AGENTCORE_CLUSTER_POLL_MS must be a whole number of milliseconds from 10 to 3600000, got '${bad}'`,
      );
    }
  }, 120_000);
});
