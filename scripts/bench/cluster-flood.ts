/**
 * Cluster flood benchmark (issue 30): does a cluster daemon keep its pace over
 * a long flood of runs, and how soon does a stream opened right after
 * `POST /v1/runs` see the run's end? One run of this script, side by side:
 *
 *   bun scripts/bench/cluster-flood.ts [--pg URL] [--runs N] [--clients C] [--binary PATH]
 *
 * Contenders (real `agentcore serve` processes, the compiled binary, on
 * loopback; N runs each, default 1000; C clients, default 8, each creating a
 * run and following its stream to `done` before the next; every run a
 * scripted two-turn agent in a session of its own: one echo call, then the
 * answer):
 *   1. one daemon on JSONL journals: the reference. Its stream is the answer
 *      of `POST /v1/runs` itself.
 *   2. one daemon on a PostgreSQL store (cluster mode): `POST /v1/runs` queues
 *      the run; the client then opens `GET /v1/runs/{id}/events?after=0`.
 *
 * Figures: runs/s over the whole flood, over the first 100 runs to end and
 * over the last 100, and their ratio (no decay: about 1.0); the event
 * latency, from opening the stream to its `done` (median, p95 and max: a
 * stream that waited for the once-a-second poll would show; for the cluster
 * also from sending the POST); the daemon's live runs after the flood (runs
 * in GET /v1/runs with an `agent_id`; a JSONL daemon keeps its last 256 on
 * purpose, for `continue`) and its RSS after 100 runs and at the end.
 *
 * PostgreSQL: --pg URL or AGENTCORE_TEST_PG, else a private cluster with
 * fsync off, like the tests'.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parseArgs } from "node:util";
import {
  benchBinary,
  benchConfig,
  benchPgServer,
  callDaemon,
  freshBenchDatabase,
  startBenchDaemon,
  stopDaemons,
  type Daemon,
} from "./daemons.ts";
import { median, table } from "./lib.ts";

const { values } = parseArgs({
  options: { pg: { type: "string" }, runs: { type: "string" }, clients: { type: "string" }, binary: { type: "string" } },
});
const N = Number(values.runs ?? 1000);
const CLIENTS = Number(values.clients ?? 8);
if (!(Number.isSafeInteger(N) && N >= 200)) throw new Error("--runs must be a whole number of at least 200 (two windows of 100)");
if (!(Number.isSafeInteger(CLIENTS) && CLIENTS >= 1 && CLIENTS <= 16)) throw new Error("--clients must be a whole number from 1 to 16");
const work = fs.mkdtempSync(path.join(os.tmpdir(), "agentcore-bench-flood-"));
const BIN = benchBinary(work, values.binary);
const server = benchPgServer(values.pg);
const cfg = benchConfig(work);

const script = (i: number) => [
  { content: null, tool_calls: [{ id: "e1", name: "echo", arguments: '{"message":"hi"}' }] },
  { content: `done ${i}` },
];

/** Read an SSE response until its `done` event; throws if it ends without one. */
async function untilDone(res: Response, what: string): Promise<void> {
  if (res.status !== 200 && res.status !== 201) throw new Error(`${what}: ${res.status} ${await res.text()}`);
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`${what}: the stream ended without done`);
    text += decoder.decode(value, { stream: true });
    if (/^event: done$/m.test(text)) {
      await reader.cancel().catch(() => {});
      return;
    }
    text = text.slice(Math.max(0, text.lastIndexOf("\n\n")));
  }
}

const rssMiB = (d: Daemon) => Number(/^VmRSS:\s+(\d+) kB$/m.exec(fs.readFileSync(`/proc/${d.proc.pid}/status`, "utf8"))![1]) / 1024;

interface Flood {
  /** ms since the flood began at which each run ended, in order. */
  ends: number[];
  /** From opening the stream to its done, per run (ms). */
  subscribeToEnd: number[];
  /** From sending the POST to the stream's done, per run (ms). */
  postToEnd: number[];
  rssAt100: number;
  rssAtEnd: number;
  live: number;
}

/** N runs through `d`, CLIENTS at a time; `cluster`: POST, then follow the run's events. */
async function flood(d: Daemon, cluster: boolean): Promise<Flood> {
  const headers = { authorization: `Bearer ${d.token}`, "content-type": "application/json" };
  const out: Flood = { ends: [], subscribeToEnd: [], postToEnd: [], rssAt100: 0, rssAtEnd: 0, live: 0 };
  let next = 0;
  const t0 = performance.now();
  const client = async () => {
    for (let i = next++; i < N; i = next++) {
      const body = JSON.stringify({ task: `run ${i}`, script: script(i), session: `flood-${i}` });
      const posted = performance.now();
      const res = await fetch(`${d.url}/v1/runs`, { method: "POST", headers, body });
      let subscribed = posted;
      if (cluster) {
        const created = (await res.json()) as { run_id: string };
        if (res.status !== 201) throw new Error(`POST /v1/runs: ${res.status} ${JSON.stringify(created)}`);
        subscribed = performance.now();
        await untilDone(await fetch(`${d.url}/v1/runs/${created.run_id}/events?after=0`, { headers }), `run ${i}'s events`);
      } else await untilDone(res, `run ${i}`);
      const end = performance.now();
      out.subscribeToEnd.push(end - subscribed);
      out.postToEnd.push(end - posted);
      out.ends.push(end - t0);
      if (out.ends.length === 100) out.rssAt100 = rssMiB(d);
    }
  };
  await Promise.all(Array.from({ length: CLIENTS }, client));
  out.rssAtEnd = rssMiB(d);
  const list = await callDaemon(d, "GET", "/v1/runs");
  out.live = (list.json.runs as { agent_id?: string }[]).filter((r) => r.agent_id !== undefined).length;
  return out;
}

const p95 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil(xs.length * 0.95) - 1)]!;
const rate = (ends: number[], from: number, to: number) => 100 / ((ends[to]! - (from < 0 ? 0 : ends[from]!)) / 1000);

const results: [string, Flood][] = [];
{
  const d = await startBenchDaemon(BIN, work, cfg, "jsonl", null);
  results.push(["1 daemon, JSONL journals (reference)", await flood(d, false)]);
  await stopDaemons([d]);
}
{
  const d = await startBenchDaemon(BIN, work, cfg, "cluster", await freshBenchDatabase(server));
  results.push(["1 cluster daemon, PostgreSQL store", await flood(d, true)]);
  await stopDaemons([d]);
}

const ref = results[0]![1];
const whole = (f: Flood) => N / (f.ends.at(-1)! / 1000);
console.log(`\nruns per second over ${N} runs (${CLIENTS} clients, ${os.cpus().length} cores): first 100 against last 100`);
table(
  ["contender", "runs/s (all)", "first 100", "last 100", "last / first", "vs reference", "live runs after", "RSS after 100 / end (MiB)"],
  results.map(([name, f]) => {
    const first = rate(f.ends, -1, 99);
    const last = rate(f.ends, N - 101, N - 1);
    return [
      name,
      whole(f).toFixed(1),
      first.toFixed(1),
      last.toFixed(1),
      (last / first).toFixed(2),
      (whole(f) / whole(ref)).toFixed(2),
      String(f.live),
      `${f.rssAt100.toFixed(0)} / ${f.rssAtEnd.toFixed(0)}`,
    ];
  }),
);
console.log("\nevent latency: from opening the run's stream to its done (ms; JSONL: the POST is the stream)");
table(
  ["contender", "median", "p95", "max", "median vs reference", "POST to done: median", "p95"],
  results.map(([name, f]) => [
    name,
    median(f.subscribeToEnd).toFixed(1),
    p95(f.subscribeToEnd).toFixed(1),
    Math.max(...f.subscribeToEnd).toFixed(1),
    (median(f.subscribeToEnd) / median(ref.subscribeToEnd)).toFixed(2),
    median(f.postToEnd).toFixed(1),
    p95(f.postToEnd).toFixed(1),
  ]),
);
fs.rmSync(work, { recursive: true, force: true });
