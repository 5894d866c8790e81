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
});
