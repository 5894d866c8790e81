// Issue 30 §1 for cluster runs: a run whose journal append is refused ends
// failed / store_failed, and its row in the cluster table says so, on every
// daemon. The refusal is real: a PostgreSQL trigger on agentcore.records
// raises `53100` (disk_full) for every record of one session after its
// run_started, so the store takes the start of the run and nothing after it.
// Two daemons of the compiled binary on one PostgreSQL store, on loopback.
// No timing assertions: bounded waits only.
import { expect, test } from "bun:test";
import { call, clusterFile, config, sse, startDaemon, waitFor } from "../support/cluster.ts";
import { tmpPerTest } from "../support/tmp.ts";

const tmp = tmpPerTest("agentcore-cluster-store-failed-");
const { db, maybe } = await clusterFile("the cluster store-failure tests");

/** Run SQL on the test's database; returns the rows. */
async function sql(text: string, params: unknown[] = []): Promise<Record<string, unknown>[]> {
  const { default: pg } = await import("pg");
  const client = new pg.Client({ connectionString: db! });
  await client.connect();
  try {
    return (await client.query(text, params)).rows;
  } finally {
    await client.end();
  }
}

maybe("cluster mode: a run its store stopped", () => {
  test("the POST is 201 (queued), and GET /v1/runs/{id} on both daemons reads failed with STORE_FULL, never completed", async () => {
    const dir = tmp();
    const cfg = config(dir);
    const daemons = [await startDaemon(db!, dir, "a", cfg), await startDaemon(db!, dir, "b", cfg)];
    await sql(`CREATE FUNCTION agentcore.test_full() RETURNS trigger LANGUAGE plpgsql AS $$
                 BEGIN RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = '53100'; END $$;
               CREATE TRIGGER test_full BEFORE INSERT ON agentcore.records FOR EACH ROW
                 WHEN (NEW.session_id = 'full-session' AND NEW.type <> 'run_started') EXECUTE FUNCTION agentcore.test_full()`);
    try {
      const created = await call(daemons[0]!, "POST", "/v1/runs", {
        task: "write this",
        session: "full-session",
        script: [{ content: null, tool_calls: [{ id: "e1", name: "echo", arguments: '{"message":"hi"}' }] }, { content: "done" }],
      });
      // cluster mode answers before the run runs (docs/durability.md): its end is read from the row and the events
      expect(created.status).toBe(201);
      const id = created.json.run_id as string;
      const views = await waitFor(
        async () => {
          const out = [];
          for (const d of daemons) out.push((await call(d, "GET", `/v1/runs/${id}`)).json);
          return out.every((v) => v.status !== "queued" && v.status !== "running" && v.result !== null) ? out : null;
        },
        "the run's row to rest on both daemons",
        60_000,
      );
      for (const v of views) {
        expect(v).toMatchObject({
          run_id: id,
          status: "failed",
          result: { status: "failed", stop_reason: "store_failed", error_code: "STORE_FULL" },
        });
        expect(v.error).toContain("No space left on device");
      }
      // the stream, on the daemon that did not run it as on the other, ends with the same failed end
      for (const d of daemons) {
        const s = await sse(d, id, undefined, 30_000);
        expect(s.messages.at(-1)?.event).toBe("done");
        expect(s.messages.at(-1)!.data.result).toMatchObject({ status: "failed", error_code: "STORE_FULL" });
        const finished = s.messages.filter((m) => m.event === "agent_finished").map((m) => m.data.result.status);
        expect(finished).not.toContain("completed");
      }
      // the store has the start of the run and no end: nothing says it completed
      const types = (await sql("SELECT type FROM agentcore.records WHERE session_id = 'full-session' ORDER BY revision")).map(
        (r) => r.type,
      );
      expect(types).toContain("run_started");
      expect(types).not.toContain("run_finished");
    } finally {
      await sql("DROP TRIGGER test_full ON agentcore.records; DROP FUNCTION agentcore.test_full()");
    }
  }, 180_000);

  test("when the store also refuses the run's final status, the job's retry writes the failed end: never left running, not run again", async () => {
    const dir = tmp();
    const d = await startDaemon(db!, dir, "solo", config(dir));
    // the journal refuses the run's records after its start; the run table refuses its end five times (every try of
    // the owner's writer), counted by a sequence, which a refused transaction does not roll back
    await sql(`CREATE FUNCTION agentcore.test_full() RETURNS trigger LANGUAGE plpgsql AS $$
                 BEGIN RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = '53100'; END $$;
               CREATE TRIGGER test_full BEFORE INSERT ON agentcore.records FOR EACH ROW
                 WHEN (NEW.session_id = 'lost-end' AND NEW.type <> 'run_started') EXECUTE FUNCTION agentcore.test_full();
               CREATE SEQUENCE agentcore.test_refusals;
               CREATE FUNCTION agentcore.test_refuse_end() RETURNS trigger LANGUAGE plpgsql AS $$
                 BEGIN
                   IF nextval('agentcore.test_refusals') <= 5 THEN
                     RAISE EXCEPTION 'the database is going away' USING ERRCODE = '57P01';
                   END IF;
                   RETURN NEW;
                 END $$;
               CREATE TRIGGER test_refuse_end BEFORE UPDATE ON agentcore.runs FOR EACH ROW
                 WHEN (NEW.session_id = 'lost-end' AND NEW.status IN ('idle', 'failed')) EXECUTE FUNCTION agentcore.test_refuse_end()`);
    try {
      const created = await call(d, "POST", "/v1/runs", { task: "write this", session: "lost-end", script: [{ content: "done" }] });
      expect(created.status).toBe(201);
      const id = created.json.run_id as string;
      let last: any = null;
      const rested = await waitFor(
        async () => {
          last = (await call(d, "GET", `/v1/runs/${id}`)).json;
          return last.status !== "queued" && last.status !== "running" ? last : null;
        },
        "the run's row to rest",
        60_000,
      ).catch(() => null);
      expect(rested ?? last).toMatchObject({
        status: "failed",
        result: { status: "failed", stop_reason: "store_failed", error_code: "STORE_FULL" },
      });
      // the end was refused five times, then taken
      expect(Number((await sql("SELECT last_value FROM agentcore.test_refusals"))[0]!.last_value)).toBeGreaterThanOrEqual(6);
      // the task was not run again: one start in the journal, no takeover among the run's events
      const starts = await sql("SELECT count(*)::int AS n FROM agentcore.records WHERE session_id = 'lost-end' AND type = 'run_started'");
      expect(starts[0]!.n).toBe(1);
      const kinds = (await sql("SELECT item FROM agentcore.run_events WHERE run_id = $1 ORDER BY seq", [id])).map(
        (r) => (r.item as { type: string; event?: { kind?: string } }).event?.kind ?? (r.item as { type: string }).type,
      );
      expect(kinds).not.toContain("run_taken_over");
      const s = await sse(d, id, undefined, 30_000);
      expect(s.messages.at(-1)?.event).toBe("done");
      expect(s.messages.at(-1)!.data.result).toMatchObject({ status: "failed", error_code: "STORE_FULL" });
    } finally {
      await sql(`DROP TRIGGER test_full ON agentcore.records; DROP FUNCTION agentcore.test_full();
                 DROP TRIGGER test_refuse_end ON agentcore.runs; DROP FUNCTION agentcore.test_refuse_end();
                 DROP SEQUENCE agentcore.test_refusals`);
    }
  }, 180_000);
});
