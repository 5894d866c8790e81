/**
 * A durable agent turn: the cost per turn of an agent run journaled by
 * `SessionRecorder` into a `JsonlSessionStorage` (fsync on, real disk),
 * side by side with bare loops that write the same bytes.
 *
 *   bun scripts/bench/durable-turn.ts [--turns N] [--rounds R] [--dir DIR] [--before SRC] [--json FILE]
 *
 * One run is N tool turns (turn i calls `echo` with {"n": i}) and a final
 * text turn, from a zero-latency scripted model, so a turn costs only the
 * harness and the journal. Each round writes into a fresh directory under
 * DIR (default: the OS temp directory; it must be a real disk, not tmpfs, for
 * the fsyncs to mean anything).
 *
 * Contenders, in alternating rounds (medians, with min and max):
 * - agentcore durable: createAgent with a SessionRecorder sink on a
 *   JsonlSessionStorage (lock, write, fsync per group of records).
 * - bare, one write+fsync per turn (the reference of issue 17): the journal's
 *   own lines (taken from an agentcore run), one write and one fsync per
 *   turn (a turn's assistant message and its tool results; the run's start
 *   goes with the first turn, its end with the last), to a file kept open.
 * - bare, one write+fsync per record: the same lines, a write and an fsync
 *   each (what a journal does that must make a turn's tool call durable
 *   before the tool runs, and its result durable after: two per tool turn).
 * - agentcore in memory: the same agent with no sink (for reference), and
 *   with a SessionRecorder on a MemorySessionStorage (the journal's CPU cost
 *   without I/O).
 *
 * - with `--before SRC`: the same durable run with the agent and the
 *   journal of another agentcore tree (SRC holds its `src/`, e.g.
 *   `git archive <commit> src | tar -x -C SRC` with node_modules linked in),
 *   for a before/after ratio from the same run.
 *
 * `--json FILE` also writes the measures (scripts/bench/chart.ts) to FILE.
 *
 * @module
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parseArgs } from "node:util";
import * as agentMod from "../../src/agent/index.ts";
import * as scriptedMod from "../../src/providers/scripted.ts";
import * as runtimeMod from "../../src/runtime/index.ts";
import * as journalMod from "../../src/session/journal.ts";
import * as jsonlMod from "../../src/session/jsonl.ts";
import * as recorderMod from "../../src/session/recorder.ts";
import type { Measure } from "./chart.ts";
import { median, RUNTIME, table } from "./lib.ts";

const { values: opts } = parseArgs({
  options: {
    turns: { type: "string" },
    rounds: { type: "string" },
    dir: { type: "string" },
    before: { type: "string" },
    json: { type: "string" },
  },
});
const TURNS = Number(opts.turns ?? 200);
const ROUNDS = Number(opts.rounds ?? 7);
if (!Number.isSafeInteger(TURNS) || TURNS < 1) throw new Error(`--turns must be a positive integer, got ${opts.turns}`);
if (!Number.isSafeInteger(ROUNDS) || ROUNDS < 1) throw new Error(`--rounds must be a positive integer, got ${opts.rounds}`);
const root = fs.mkdtempSync(path.join(opts.dir ?? os.tmpdir(), "agentcore-bench-durable-"));
let dirs = 0;
const freshDir = () => path.join(root, `d${++dirs}`);

/** The modules a run uses: this tree's, or another's (`--before`). */
interface Impl {
  createAgent: typeof agentMod.createAgent;
  ScriptedModel: typeof scriptedMod.ScriptedModel;
  createRuntime: typeof runtimeMod.createRuntime;
  MemorySessionStorage: typeof journalMod.MemorySessionStorage;
  JsonlSessionStorage: typeof jsonlMod.JsonlSessionStorage;
  SessionRecorder: typeof recorderMod.SessionRecorder;
}
const HERE: Impl = { ...agentMod, ...scriptedMod, ...runtimeMod, ...journalMod, ...jsonlMod, ...recorderMod };
async function implAt(src: string): Promise<Impl> {
  const at = (p: string) => import(path.resolve(src, "src", p));
  const [a, sc, rt, jn, jl, rc] = await Promise.all(
    ["agent/index.ts", "providers/scripted.ts", "runtime/index.ts", "session/journal.ts", "session/jsonl.ts", "session/recorder.ts"].map(
      at,
    ),
  );
  return { ...a, ...sc, ...rt, ...jn, ...jl, ...rc } as Impl;
}
const BEFORE: Impl | null = opts.before === undefined ? null : await implAt(opts.before);

type Storage = InstanceType<Impl["JsonlSessionStorage"]> | InstanceType<Impl["MemorySessionStorage"]>;

/** One agent run of TURNS echo turns and a text answer; `storage` journals it when given. */
async function runAgent(storage: Storage | null, session: string, impl: Impl = HERE): Promise<void> {
  const { createAgent, ScriptedModel, createRuntime, SessionRecorder } = impl;
  const script = [];
  for (let i = 0; i < TURNS; i++)
    script.push({
      content: null,
      tool_calls: [{ id: `call_${i}`, name: "echo", arguments: `{"n":${i}}` }],
      usage: { input_tokens: 10, output_tokens: 5 },
    });
  script.push({ content: "done", usage: { input_tokens: 10, output_tokens: 5 } });
  const recorder = storage === null ? null : new SessionRecorder(session, storage as never);
  const agent = createAgent({
    model: new ScriptedModel(script, { recordRequests: false }),
    runtime: createRuntime(),
    systemPrompt: "You are a test agent.",
    policy: { maxSteps: TURNS + 5 },
    tracing: false,
    ...(recorder === null ? {} : { sinks: [recorder] }),
  });
  const r = await agent.run("go");
  await agent.shutdown();
  if (r.status !== "completed") throw new Error(`the run ended ${r.status}/${r.stop_reason}: ${r.error}`);
  if (recorder !== null && recorder.errors.length > 0) throw recorder.errors[0]!;
}

async function durable(impl: Impl = HERE): Promise<void> {
  await runAgent(new impl.JsonlSessionStorage(freshDir()), "bench", impl);
}

/** The journal's lines of one run, grouped by turn. */
async function journalTurns(): Promise<{ perTurn: Buffer[]; perRecord: Buffer[] }> {
  const storage = new HERE.JsonlSessionStorage(freshDir());
  await runAgent(storage, "bench");
  const lines = (await storage.journalText("bench")).split("\n").slice(0, -1);
  const types = lines.map((l) => (JSON.parse(l) as { type: string }).type);
  // run_started, then per tool turn message_appended + messages_appended, then the answer and run_finished.
  const expected = 1 + 2 * TURNS + 2;
  if (lines.length !== expected) throw new Error(`expected ${expected} records, the journal holds ${lines.length}: ${types.join(", ")}`);
  const groups: string[][] = [];
  for (let t = 0; t < TURNS; t++) groups.push(lines.slice(1 + 2 * t, 3 + 2 * t));
  groups[0]!.unshift(lines[0]!);
  groups[groups.length - 1]!.push(...lines.slice(1 + 2 * TURNS));
  return {
    perTurn: groups.map((g) => Buffer.from(g.map((l) => `${l}\n`).join(""))),
    perRecord: lines.map((l) => Buffer.from(`${l}\n`)),
  };
}

/** Write each buffer with one write and one fsync, to a new file kept open. */
function bareLoop(chunks: Buffer[]): void {
  const dir = freshDir();
  fs.mkdirSync(dir, { recursive: true });
  const fd = fs.openSync(path.join(dir, "bare.jsonl"), "a", 0o600);
  try {
    for (const c of chunks) {
      let off = 0;
      while (off < c.length) off += fs.writeSync(fd, c, off, c.length - off);
      fs.fsyncSync(fd);
    }
  } finally {
    fs.closeSync(fd);
  }
}

const { perTurn, perRecord } = await journalTurns();

const DURABLE = "agentcore durable (JSONL, fsync)";
const BARE_TURN = "bare loop, one write+fsync per turn";
const BARE_RECORD = "bare loop, one write+fsync per record";
const MEMORY_JOURNAL = "agentcore, journal in memory";
const MEMORY = "agentcore, no journal";
const DURABLE_BEFORE = `agentcore durable, ${opts.before ?? ""}`;

const entries: { name: string; fn: () => Promise<void> | void }[] = [
  { name: DURABLE, fn: () => durable() },
  ...(BEFORE === null ? [] : [{ name: DURABLE_BEFORE, fn: () => durable(BEFORE) }]),
  { name: BARE_TURN, fn: () => bareLoop(perTurn) },
  { name: BARE_RECORD, fn: () => bareLoop(perRecord) },
  { name: MEMORY_JOURNAL, fn: () => runAgent(new HERE.MemorySessionStorage(), "bench") },
  { name: MEMORY, fn: () => runAgent(null, "bench") },
];

for (const e of entries) await e.fn(); // warm-up
const samples = new Map<string, number[]>(entries.map((e) => [e.name, []]));
for (let r = 0; r < ROUNDS; r++) {
  for (const e of r % 2 ? [...entries].reverse() : entries) {
    const t0 = performance.now();
    await e.fn();
    samples.get(e.name)!.push(((performance.now() - t0) * 1000) / (TURNS + 1));
  }
}
fs.rmSync(root, { recursive: true, force: true });

const med = new Map([...samples].map(([k, v]) => [k, median(v)]));
const stat = (name: string) => {
  const xs = samples.get(name)!;
  return { name, median: med.get(name)!, min: Math.min(...xs), max: Math.max(...xs) };
};
const ours = med.get(DURABLE)!;
console.log(
  `## A durable agent turn: ${TURNS} echo turns + 1, JSONL journal with fsync (${RUNTIME}, ${ROUNDS} alternating rounds, ${os.platform()})\n`,
);
table(
  ["contender", "µs per turn (median)", "min–max", "durable ÷ this"],
  entries.map((e) => {
    const s = stat(e.name);
    return [e.name, s.median.toFixed(1), `${s.min.toFixed(1)}–${s.max.toFixed(1)}`, `${(ours / s.median).toFixed(2)}x`];
  }),
);
const vsTurn = ours / med.get(BARE_TURN)!;
const vsRecord = ours / med.get(BARE_RECORD)!;
console.log(`\nagentcore durable ÷ bare one fsync per turn: ${vsTurn.toFixed(2)} (target: <= 1.3)`);
console.log(`agentcore durable ÷ bare one fsync per record: ${vsRecord.toFixed(2)}`);
if (BEFORE !== null) {
  const before = med.get(DURABLE_BEFORE)!;
  console.log(
    `before (${opts.before}): ÷ bare one fsync per turn ${(before / med.get(BARE_TURN)!).toFixed(2)}, ÷ per record ${(before / med.get(BARE_RECORD)!).toFixed(2)}; after ÷ before ${(ours / before).toFixed(2)}`,
  );
}

const notes =
  `${TURNS} tool turns (echo {"n": i}) + 1 text turn from a zero-latency scripted model, a SessionRecorder on a JsonlSessionStorage in a fresh ` +
  `directory per round on the real disk; the bare loops write the journal's own lines (${perRecord.length} records) to a file kept open. ` +
  `Medians of ${ROUNDS} alternating rounds, per turn (the run's time ÷ ${TURNS + 1}).`;
const measures: Measure[] = [
  {
    id: "durable.turn",
    title: "durable agent turn (JSONL journal, fsync) against one write+fsync per turn",
    unit: "µs/turn",
    better: "lower",
    reference: BARE_TURN,
    contenders: [
      stat(DURABLE),
      stat(BARE_TURN),
      stat(BARE_RECORD),
      stat(MEMORY_JOURNAL),
      stat(MEMORY),
      ...(BEFORE === null ? [] : [stat(DURABLE_BEFORE)]),
    ],
    ratio: vsTurn,
    target: { op: "<=", value: 1.3, text: "≤ 1.3× the bare write+fsync loop with one fsync per turn" },
    notes,
  },
  {
    id: "durable.turn_per_record",
    title: "durable agent turn against one write+fsync per record (the same number of fsyncs)",
    unit: "µs/turn",
    better: "lower",
    reference: BARE_RECORD,
    contenders: [stat(DURABLE), stat(BARE_RECORD)],
    ratio: vsRecord,
    notes:
      notes +
      " A tool turn needs two fsyncs: the assistant message (the tool call's intent) before the tool runs, its result after (docs/sessions.md).",
  },
];
if (opts.json !== undefined) fs.writeFileSync(opts.json, `${JSON.stringify(measures, null, 2)}\n`);
