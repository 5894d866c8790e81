/**
 * Session store benchmark: JSONL against PostgreSQL, side by side in one run.
 *
 *   bun scripts/bench/store.ts [--pg URL] [--appends N] [--writers W] [--per-writer M] [--rounds R]
 *
 * The stores: a JSONL folder in the temp directory (the baseline), and
 * PostgreSQL. With `--pg URL` (or AGENTCORE_TEST_PG) that server is used as
 * it is (its fsync setting is read and shown); without, two private clusters
 * are started like the tests' (test/support/pg-cluster.ts): one with fsync
 * and synchronous_commit on (a durable server), one with them off.
 *
 * 1. Record append, sequential: N appends to one session, latency p50/p99
 *    and throughput.
 * 2. Record append, W concurrent writers on different sessions (one storage
 *    instance each store, as a daemon has), M appends each: latency p50/p99
 *    and total throughput.
 * 3. Checkout (restore) of a 1,000-record session by a fresh storage
 *    instance (read, validate, project): median of R runs.
 *
 * The contenders run in alternating rounds (R, default 3), so machine noise
 * hits them alike; ratios are against JSONL.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parseArgs } from "node:util";
import { JournalStorage, MemorySessionStorage } from "../../src/session/journal.ts";
import { JsonlSessionStorage } from "../../src/session/jsonl.ts";
import { PostgresSessionStorage } from "../../src/session/postgres/storage.ts";
import type { SessionRecord, SessionRecordDraft } from "../../src/session/types.ts";
import { type PrivateCluster, startCluster } from "../../test/support/pg-cluster.ts";
import { median, RUNTIME, table } from "./lib.ts";

const { values } = parseArgs({
  options: {
    pg: { type: "string" },
    appends: { type: "string" },
    writers: { type: "string" },
    "per-writer": { type: "string" },
    rounds: { type: "string" },
  },
});
const N = Number(values.appends ?? 600);
const W = Number(values.writers ?? 8);
const M = Number(values["per-writer"] ?? 60);
const R = Number(values.rounds ?? 3);
const root = fs.mkdtempSync(path.join(os.tmpdir(), "agentcore-bench-store-"));

interface Store {
  name: string;
  /** A fresh storage instance on this store (a new process would open one). */
  open(): Promise<JournalStorage>;
  close(s: JournalStorage): Promise<void>;
}

const clusters: PrivateCluster[] = [];
const stores: Store[] = [
  {
    name: "JSONL (fsync per record)",
    open: async () => new JsonlSessionStorage(path.join(root, "jsonl")),
    close: async () => {},
  },
];

async function pgStore(url: string, label: string): Promise<Store> {
  const s = await PostgresSessionStorage.open(url);
  await s.close();
  return {
    name: label,
    open: () => PostgresSessionStorage.open(url, { maxConnections: W + 2 }),
    close: (x) => (x as PostgresSessionStorage).close(),
  };
}

async function setting(url: string, name: string): Promise<string> {
  const { default: pg } = await import("pg");
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return String((await c.query(`SHOW ${name}`)).rows[0]![name]);
  } finally {
    await c.end();
  }
}

const given = values.pg ?? (process.env.AGENTCORE_TEST_PG || undefined);
if (given !== undefined) {
  const fsync = await setting(given, "fsync");
  const sync = await setting(given, "synchronous_commit");
  stores.push(await pgStore(given, `PostgreSQL (given server: fsync ${fsync}, synchronous_commit ${sync})`));
} else {
  for (const fsync of [true, false]) {
    const c = startCluster({ fsync });
    if (c === null) {
      console.log("PostgreSQL's server is not installed and no --pg URL was given: JSONL only");
      break;
    }
    clusters.push(c);
    stores.push(await pgStore(c.url, `PostgreSQL (private cluster, fsync ${fsync ? "on" : "off"})`));
  }
}

const draft = (session: string, i: number): SessionRecordDraft =>
  i === 0
    ? { session_id: session, agent_id: "bench", branch_id: "main", sequence: 1, type: "run_started", data: { run_id: "r", task: "bench" } }
    : {
        session_id: session,
        agent_id: "bench",
        branch_id: "main",
        sequence: i + 1,
        type: "message_appended",
        // about the size of an assistant message with a tool call
        data: {
          run_id: "r",
          message: {
            role: "assistant",
            content: null,
            tool_calls: [{ id: `c${i}`, type: "function", function: { name: "read_file", arguments: `{"path":"src/file${i % 50}.ts"}` } }],
            usage: { input_tokens: 1200, output_tokens: 80 },
          },
        },
      };

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};

interface Sample {
  lat: number[];
  ms: number;
  n: number;
}
const seq = new Map<string, Sample>(stores.map((s) => [s.name, { lat: [], ms: 0, n: 0 }]));
const conc = new Map<string, Sample>(stores.map((s) => [s.name, { lat: [], ms: 0, n: 0 }]));
const restore = new Map<string, number[]>(stores.map((s) => [s.name, []]));

// A 1,000-record session, built once and imported into each store.
const mem = new MemorySessionStorage();
for (let i = 0; i < 1000; i++) await mem.append(draft("restore", i));
const restoreRecords: SessionRecord[] = await mem.records("restore");

for (let round = 0; round < R; round++) {
  const order = round % 2 === 0 ? stores : [...stores].reverse();
  for (const store of order) {
    const s = await store.open();
    // 1. sequential
    const session = `seq-${round}`;
    const per = Math.ceil(N / R);
    const t0 = performance.now();
    for (let i = 0; i < per; i++) {
      const a = performance.now();
      await s.append(draft(session, i));
      seq.get(store.name)!.lat.push(performance.now() - a);
    }
    seq.get(store.name)!.ms += performance.now() - t0;
    seq.get(store.name)!.n += per;
    // 2. W writers at once, on different sessions
    const t1 = performance.now();
    await Promise.all(
      Array.from({ length: W }, async (_, w) => {
        for (let i = 0; i < Math.ceil(M / R); i++) {
          const a = performance.now();
          await s.append(draft(`conc-${round}-${w}`, i));
          conc.get(store.name)!.lat.push(performance.now() - a);
        }
      }),
    );
    conc.get(store.name)!.ms += performance.now() - t1;
    conc.get(store.name)!.n += W * Math.ceil(M / R);
    // 3. restore of 1,000 records by a fresh instance
    const id = `restore-${round}`;
    await s.importRecords(restoreRecords.map((r) => ({ ...r, session_id: id })));
    await store.close(s);
    const fresh = await store.open();
    const t2 = performance.now();
    const c = await fresh.checkout(id);
    restore.get(store.name)!.push(performance.now() - t2);
    if (c === null || c.head?.revision !== 1000) throw new Error(`${store.name}: the restore lost records`);
    await store.close(fresh);
  }
}

const base = stores[0]!.name;
const f = (x: number, d = 2) => x.toFixed(d);
console.log(
  `Session store benchmark (${RUNTIME}, ${os.platform()} ${os.cpus().length} cores; ${R} alternating rounds; ratios against ${base})`,
);
console.log();
console.log(`1. Sequential appends to one session (${seq.get(base)!.n} per store)`);
table(
  ["store", "p50 ms", "p99 ms", "records/s", "throughput vs JSONL"],
  stores.map((s) => {
    const x = seq.get(s.name)!;
    const rate = x.n / (x.ms / 1000);
    const b = seq.get(base)!;
    return [s.name, f(pct(x.lat, 50)), f(pct(x.lat, 99)), f(rate, 0), `${f(rate / (b.n / (b.ms / 1000)))}x`];
  }),
);
console.log();
console.log(`2. ${W} concurrent writers on different sessions, one storage instance (${conc.get(base)!.n} appends per store)`);
table(
  ["store", "p50 ms", "p99 ms", "records/s", "throughput vs JSONL"],
  stores.map((s) => {
    const x = conc.get(s.name)!;
    const rate = x.n / (x.ms / 1000);
    const b = conc.get(base)!;
    return [s.name, f(pct(x.lat, 50)), f(pct(x.lat, 99)), f(rate, 0), `${f(rate / (b.n / (b.ms / 1000)))}x`];
  }),
);
console.log();
console.log("3. Checkout (restore) of a 1,000-record session by a fresh storage instance (median of the rounds)");
table(
  ["store", "ms", "vs JSONL"],
  stores.map((s) => [s.name, f(median(restore.get(s.name)!), 1), `${f(median(restore.get(s.name)!) / median(restore.get(base)!))}x`]),
);

fs.rmSync(root, { recursive: true, force: true });
for (const c of clusters) c.stop();
