/**
 * Cluster benchmark: scripted runs per second through real `agentcore serve`
 * processes (the compiled binary) on loopback, and the takeover time after a
 * SIGKILL, in one run.
 *
 *   bun scripts/bench/cluster.ts [--pg URL] [--runs N] [--binary PATH]
 *
 * Contenders for runs per second (N runs each, default 120; every run is a
 * scripted two-turn agent: one echo tool call, then the answer):
 *   1. one daemon, JSONL store (the baseline: no queue, no database);
 *   2. one daemon, PostgreSQL store (the run queue, the run table, events in
 *      the database);
 *   3. three daemons on that store, runs submitted round-robin.
 * The client keeps at most 16 runs per daemon in flight (a JSONL daemon
 * answers 503 past its --max-active-runs, 16 by default). Each contender gets
 * a fresh database. On this two-core machine three daemons share the cores
 * with the database and the client: the point is that it scales at all and
 * what a run costs, not a speed-up.
 *
 * Takeover: two daemons on one store; a run whose tool call sleeps is
 * claimed by one of them, which is then SIGKILLed. The time from the kill to
 * the run's first event from the other daemon is the takeover time: mostly
 * the queue's heartbeat expiry (pg-boss's heartbeatSeconds, see
 * docs/cluster.md), then the recovery and resume.
 *
 * PostgreSQL: --pg URL or AGENTCORE_TEST_PG, else a private cluster with
 * fsync off, like the tests'.
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parseArgs } from "node:util";
import {
  benchBinary,
  benchConfig,
  benchPgServer,
  callDaemon as call,
  freshBenchDatabase,
  startBenchDaemon,
  stopDaemons as stopAll,
  type Daemon,
} from "./daemons.ts";
import { table } from "./lib.ts";

const { values } = parseArgs({ options: { pg: { type: "string" }, runs: { type: "string" }, binary: { type: "string" } } });
const N = Number(values.runs ?? 120);
const WINDOW = 16;
const work = fs.mkdtempSync(path.join(os.tmpdir(), "agentcore-bench-cluster-"));
const BIN = benchBinary(work, values.binary);
const server = benchPgServer(values.pg);
const freshDatabase = () => freshBenchDatabase(server);
const cfg = benchConfig(work);
const start = (name: string, store: string | null) => startBenchDaemon(BIN, work, cfg, name, store);

const SCRIPT = [{ content: null, tool_calls: [{ id: "e1", name: "echo", arguments: '{"message":"hi"}' }] }, { content: "done" }];

async function settle(d: Daemon, id: string): Promise<void> {
  for (;;) {
    const r = await call(d, "GET", `/v1/runs/${id}`);
    if (r.status === 200 && r.json.status !== "running" && r.json.status !== "queued" && r.json.result !== null) {
      if (r.json.result.status !== "completed") throw new Error(`run ${id} ended ${r.json.result.status}`);
      return;
    }
    await Bun.sleep(20);
  }
}

/** N runs through `daemons`, round-robin, at most WINDOW per daemon in flight; runs per second. */
async function throughput(daemons: Daemon[]): Promise<number> {
  let next = 0;
  const t0 = performance.now();
  const lane = async (d: Daemon) => {
    for (;;) {
      const i = next++;
      if (i >= N) return;
      const r = await call(d, "POST", "/v1/runs", { task: `run ${i}`, script: SCRIPT, session: `bench-${i}`, detached: true });
      if (r.status !== 201 && r.status !== 202) throw new Error(`POST /v1/runs: ${r.status} ${JSON.stringify(r.json)}`);
      await settle(d, r.json.run_id);
    }
  };
  await Promise.all(daemons.flatMap((d) => Array.from({ length: WINDOW }, () => lane(d))));
  return N / ((performance.now() - t0) / 1000);
}

const rows: string[][] = [];
let base = 0;
{
  const d = await start("jsonl", null);
  base = await throughput([d]);
  rows.push(["1 daemon, JSONL store (baseline)", base.toFixed(1), "1.00"]);
  await stopAll([d]);
}
{
  const db = await freshDatabase();
  const d = await start("pg1", db);
  const r = await throughput([d]);
  rows.push(["1 daemon, PostgreSQL store", r.toFixed(1), (r / base).toFixed(2)]);
  await stopAll([d]);
}
{
  const db = await freshDatabase();
  const ds = [await start("pg3a", db), await start("pg3b", db), await start("pg3c", db)];
  const r = await throughput(ds);
  rows.push(["3 daemons, one PostgreSQL store", r.toFixed(1), (r / base).toFixed(2)]);
  await stopAll(ds);
}
console.log(`\nscripted runs per second (${N} runs each, ${os.cpus().length} cores, ratio to the baseline)`);
table(["contender", "runs/s", "ratio"], rows);

// Takeover after a SIGKILL.
{
  const db = await freshDatabase();
  const a = await start("takeover-a", db);
  const b = await start("takeover-b", db);
  const sleepy = [
    {
      content: null,
      tool_calls: [{ id: "s1", name: "exec", arguments: JSON.stringify({ argv: ["sh", "-c", "sleep 600; : agentcore-bench-takeover"] }) }],
    },
    { content: "after the takeover" },
  ];
  const created = await call(a, "POST", "/v1/runs", { task: "sleep", script: sleepy, session: "bench-takeover", detached: true });
  const id = created.json.run_id as string;
  // wait until a daemon owns it: the other daemon's view names the owner (host:pid:…)
  let owner = null as Daemon | null;
  for (let i = 0; i < 600 && owner === null; i++) {
    for (const d of [a, b]) {
      const o = (await call(d, "GET", `/v1/runs/${id}`)).json?.owner as string | null | undefined;
      const pid = typeof o === "string" ? Number(o.split(":")[1]) : Number.NaN;
      owner ??= pid === a.proc.pid ? a : pid === b.proc.pid ? b : null;
    }
    if (owner === null) await Bun.sleep(100);
  }
  if (owner === null) throw new Error("the takeover run was never claimed");
  await Bun.sleep(500);
  const other = owner === a ? b : a;
  const t0 = performance.now();
  owner.proc.kill("SIGKILL");
  // taken over: the run is local to the other daemon now (its view no longer names another owner)
  for (;;) {
    const r = await call(other, "GET", `/v1/runs/${id}`);
    const o = r.json?.owner as string | null | undefined;
    if (o === undefined || (typeof o === "string" && Number(o.split(":")[1]) === other.proc.pid)) break;
    await Bun.sleep(50);
  }
  const claimedMs = performance.now() - t0;
  await settle(other, id);
  const finishedMs = performance.now() - t0;
  console.log("\ntakeover after SIGKILL of the daemon running the run (from the kill)");
  table(
    ["step", "seconds"],
    [
      ["claimed by the other daemon", (claimedMs / 1000).toFixed(1)],
      ["run finished there (recovered, resumed)", (finishedMs / 1000).toFixed(1)],
    ],
  );
  await stopAll([other]);
  // the killed daemon's tool process had no one left to stop it
  spawnSync("pkill", ["-f", "agentcore-bench-takeover"]);
}
fs.rmSync(work, { recursive: true, force: true });
