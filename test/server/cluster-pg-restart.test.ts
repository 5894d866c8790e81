// The fault test of issue 15 §5 for cluster mode with PostgreSQL itself
// restarted during the load (a private cluster of this test's own, never the
// shared test server): two daemons (the compiled binary) keep serving, the
// runs in flight end cleanly (completed, or failed with the store's error:
// never run twice), the queued ones run once the server is back, and both
// daemons take new runs after it.
import { expect, test } from "bun:test";
import * as path from "node:path";
import { restartableCluster, skipMessage } from "../support/postgres.ts";
import { call, clusterFile, config, lines, startDaemon, waitFor } from "../support/cluster.ts";
import { tmpPerTest } from "../support/tmp.ts";
import { describe } from "bun:test";

const tmp = tmpPerTest("agentcore-cluster-pgrestart-");
const pg = restartableCluster();
// (the file's own database on the shared server is unused: the daemons use the restartable cluster)
await clusterFile("the PostgreSQL restart test");
if (pg === null) console.warn(`skipping the PostgreSQL restart test: ${skipMessage}`);
const maybe = pg === null ? describe.skip : describe;

const turn = (i: number) => ({
  content: null,
  tool_calls: [{ id: "w1", name: "exec", arguments: JSON.stringify({ argv: ["sh", "-c", `echo ${i} >> log.txt; sleep 1`] }) }],
});

maybe("cluster mode while PostgreSQL restarts", () => {
  test("runs submitted before a restart end once each; both daemons take new runs after it", async () => {
    const dir = tmp();
    const cfg = config(dir);
    const store = pg!.url;
    const a = await startDaemon(store, dir, "a", cfg, ["--max-active-runs", "2"]);
    const b = await startDaemon(store, dir, "b", cfg, ["--max-active-runs", "2"]);
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) {
      const r = await call(i % 2 === 0 ? a : b, "POST", "/v1/runs", { task: `run ${i}`, script: [turn(i), { content: `done ${i}` }] });
      expect(r.status).toBe(201);
      ids.push(r.json.run_id);
    }
    const rested = async (d: typeof a, id: string) => {
      const r = await call(d, "GET", `/v1/runs/${id}`).catch(() => null);
      return r?.status === 200 && r.json.status !== "running" && r.json.status !== "queued" && r.json.result !== undefined ? r.json : null;
    };
    await waitFor(
      async () => (await Promise.all(ids.map((id) => rested(a, id)))).filter((x) => x !== null && x.result !== null).length >= 2,
      "two runs to end",
    );
    // the server goes away for two seconds, then comes back on the same port
    pg!.restart(2000);
    // a request while the daemons reconnect fails cleanly (an envelope) or succeeds: never a crash
    const during = await call(a, "GET", "/v1/runs");
    expect([200, 500, 503]).toContain(during.status);
    const ended = new Map<string, { status: string; result: { status: string } | null; error: string | null }>();
    await waitFor(
      async () => {
        for (const id of ids) {
          if (ended.has(id)) continue;
          const v = await rested(b, id);
          if (v !== null && (v.result !== null || v.status === "failed")) ended.set(id, v);
        }
        return ended.size === ids.length;
      },
      "every run to end",
      180_000,
    );
    // no call ran twice; a run that completed ran its call exactly once
    const log = lines(path.join(dir, "log.txt"));
    expect(new Set(log).size).toBe(log.length);
    for (const [id, v] of ended) {
      const i = String(ids.indexOf(id));
      if (v.result?.status === "completed") expect(log.filter((l) => l === i).length).toBe(1);
      else expect(log.filter((l) => l === i).length).toBeLessThanOrEqual(1);
    }
    const completed = [...ended.values()].filter((v) => v.result?.status === "completed").length;
    console.error(
      `PostgreSQL restart: ${completed} of ${ids.length} runs completed, the others ended cleanly: ${[...ended.values()]
        .filter((v) => v.result?.status !== "completed")
        .map((v) => v.result?.status ?? v.status)
        .join(", ")}`,
    );
    // both daemons are back: a new run on each completes
    for (const d of [a, b]) {
      const r = await waitFor(async () => {
        const x = await call(d, "POST", "/v1/runs", { task: "after", script: [{ content: "after the restart" }] }).catch(() => null);
        return x?.status === 201 ? x : null;
      }, "a new run to be taken");
      const v = await waitFor(
        async () => {
          const x = await rested(d, r.json.run_id);
          return x !== null && x.result !== null ? x : null;
        },
        "the new run to end",
        60_000,
      );
      expect(v.result.output).toBe("after the restart");
    }
  }, 300_000);
});
