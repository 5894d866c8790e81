// Issue 30 §3: the cluster keeps taking work. A flood of short scripted runs
// (one model turn each, every run in its own session) through one daemon
// (the compiled binary) on a PostgreSQL store, then through two daemons on
// one store, 8 clients at a time: each client creates a run and follows its
// event stream (on the other daemon when there are two) to its end. Every
// run completes, every run's row reads its final status on every daemon, no
// daemon holds a live run afterwards (a finished cluster run leaves the live
// table at once; its record is read from the store), and a daemon's memory
// after the flood is about what it was after the first 100 runs.
// AGENTCORE_CLUSTER_FLOOD_RUNS sets the number of runs (default 1000, the
// issue's figure); no timing assertions, only bounded waits.
import { expect, test } from "bun:test";
import * as fs from "node:fs";
import { tmpPerTest } from "../support/tmp.ts";
import { call, clusterFile, config, sse, startDaemon, type Daemon } from "../support/cluster.ts";

const tmp = tmpPerTest("agentcore-cluster-flood-");
const { db, maybe } = await clusterFile("the cluster flood test");
const RUNS = Number(process.env.AGENTCORE_CLUSTER_FLOOD_RUNS ?? 1000);
const CLIENTS = 8;
/** How long one run's stream may take before the run counts as stuck (a bound, not a measure). */
const STREAM_BOUND_MS = 30_000;

/** The daemon's resident set, in KiB (Linux). */
function rssKiB(d: Daemon): number {
  const status = fs.readFileSync(`/proc/${d.proc.pid}/status`, "utf8");
  return Number(/^VmRSS:\s+(\d+) kB$/m.exec(status)![1]);
}

/** The runs the daemon holds live: its own runs in GET /v1/runs carry `agent_id`; the store's rows do not. */
async function liveRuns(d: Daemon): Promise<string[]> {
  const r = await call(d, "GET", "/v1/runs");
  expect(r.status).toBe(200);
  return (r.json.runs as { run_id: string; agent_id?: string }[]).filter((x) => x.agent_id !== undefined).map((x) => x.run_id);
}

/** `fn` over `items`, `CLIENTS` at a time. */
async function eachBounded<T>(items: T[], fn: (item: T, i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      for (let i = next++; i < items.length; i = next++) await fn(items[i]!, i);
    }),
  );
}

/** RUNS runs through `daemons` (created round-robin, each followed on the next daemon); what went wrong, and the RSS after 100. */
async function flood(daemons: Daemon[]): Promise<{ ids: string[]; problems: string[]; rssAt100: number[] }> {
  const ids: string[] = [];
  const problems: string[] = [];
  let completed = 0;
  let rssAt100: number[] = [];
  await eachBounded(
    Array.from({ length: RUNS }, (_, i) => i),
    async (i) => {
      // a stuck daemon: each client has seen a run that does not end; the rest would only wait the same way
      if (problems.length >= CLIENTS) return;
      const via = daemons[i % daemons.length]!;
      const follow = daemons[(i + 1) % daemons.length]!;
      const r = await call(via, "POST", "/v1/runs", { task: `run ${i}`, script: [{ content: `done ${i}` }] });
      if (r.status !== 201) {
        problems.push(`run ${i}: POST /v1/runs answered ${r.status} ${r.text.slice(0, 300)}`);
        return;
      }
      ids[i] = r.json.run_id as string;
      const s = await sse(follow, ids[i]!, undefined, STREAM_BOUND_MS);
      const end = s.messages.at(-1);
      if (end?.event !== "done" || end.data.result?.output !== `done ${i}`) {
        const row = await call(follow, "GET", `/v1/runs/${ids[i]}`);
        problems.push(
          `run ${i} (${ids[i]}): its stream did not end with done within ${STREAM_BOUND_MS} ms; events ${s.messages.map((m) => m.event).join(",")}; row ${row.text.slice(0, 300)}`,
        );
        return;
      }
      if (++completed === 100) rssAt100 = daemons.map(rssKiB);
    },
  );
  return { ids, problems, rssAt100 };
}

/** Every run's row reads its final status (idle, with its completed result) on every daemon. */
async function expectFinalEverywhere(daemons: Daemon[], ids: string[]): Promise<void> {
  const wrong: string[] = [];
  await eachBounded(ids, async (id, i) => {
    for (const d of daemons) {
      const r = await call(d, "GET", `/v1/runs/${id}`);
      if (r.status !== 200 || r.json.status !== "idle" || r.json.result?.status !== "completed" || r.json.result?.output !== `done ${i}`)
        wrong.push(`run ${i} (${id}) on ${d.url}: ${r.status} ${r.text.slice(0, 300)}`);
    }
  });
  expect(wrong).toEqual([]);
}

/** The memory of the daemons after the flood, against after the first 100 runs: flat, within a loose bound (GC noise). */
function expectFlat(daemons: Daemon[], rssAt100: number[], what: string): void {
  const after = daemons.map(rssKiB);
  console.error(
    `cluster flood (${what}): ${RUNS} runs; RSS after 100 runs ${rssAt100.map((k) => `${(k / 1024).toFixed(0)} MiB`).join(", ")}, after all ${after.map((k) => `${(k / 1024).toFixed(0)} MiB`).join(", ")}`,
  );
  for (let i = 0; i < daemons.length; i++) expect(after[i]!).toBeLessThanOrEqual(rssAt100[i]! * 1.5 + 64 * 1024);
}

maybe("cluster mode keeps taking work", () => {
  test(`${RUNS} short runs through one daemon: all complete, the live table empties, memory stays flat`, async () => {
    const dir = tmp();
    const a = await startDaemon(db!, dir, "a", config(dir));
    const { ids, problems, rssAt100 } = await flood([a]);
    expect(problems).toEqual([]);
    expect(ids.length).toBe(RUNS);
    expect(await liveRuns(a)).toEqual([]);
    await expectFinalEverywhere([a], ids);
    expectFlat([a], rssAt100, "one daemon");
  }, 600_000);

  test(`${RUNS} short runs through two daemons on one store, each followed on the daemon it was not created on: all complete, on both`, async () => {
    const dir = tmp();
    const cfg = config(dir);
    const daemons = [await startDaemon(db!, dir, "a", cfg), await startDaemon(db!, dir, "b", cfg)];
    const { ids, problems, rssAt100 } = await flood(daemons);
    expect(problems).toEqual([]);
    expect(ids.length).toBe(RUNS);
    for (const d of daemons) expect(await liveRuns(d)).toEqual([]);
    await expectFinalEverywhere(daemons, ids);
    expectFlat(daemons, rssAt100, "two daemons");
  }, 600_000);
});
