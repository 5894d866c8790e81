/**
 * Per-turn overhead of the agent harness, side by side with its peers.
 *
 *   bun scripts/bench/agent.ts [TURNS] [--rounds N] [--only NAMES] [--json FILE]
 *
 * One run of TURNS + 1 model turns: turn i (< TURNS) calls `echo` with
 * {"n": i}, the last turn answers with text. The model costs nothing (each is
 * a zero-latency in-process scripted model), so the time per turn is the
 * harness's own overhead: building the context, streaming, events, argument
 * parsing and validation, tool dispatch and bookkeeping, over a conversation
 * that grows by two messages per turn. The scripted model and its script
 * and the tools (agentcore's runtime with its registry; pi's tool array)
 * are made before the clock starts; the harness (agentcore's agent, pi's
 * Agent, the Agents SDK's agent and runner) is made and run on the clock.
 *
 * Contenders, each named in the output:
 * - agentcore: createAgent + ScriptedModel (recordRequests off), the echo
 *   tool through the runtime's dispatch (ajv validation), no sinks.
 * - pi runAgentLoop: pi-agent-core's loop function with a minimal stream
 *   function (pi's fastest honest configuration; the reference).
 * - pi Agent: pi-agent-core's Agent class with pi-ai's faux provider.
 * - openai agents-core: the Runner with a scripted Model, tracing disabled.
 *
 * agentcore also runs at 100 turns, for the growth of its per-turn cost with
 * history (TURNS ÷ 100). Runs of 100 turns are repeated so that a sample
 * holds about as many turns as a TURNS-turn run. Rounds alternate between
 * contenders (15 by default; pi's Agent takes part in the first 7, the
 * Agents SDK, whose 1,000-turn run takes seconds, in the first 3), each
 * sample after a full garbage collection (so that none pays for the garbage
 * of the one before); medians are reported, with min and max.
 *
 * `--only` takes a comma-separated subset of: agentcore, pi-loop, pi-agent,
 * openai (agentcore and pi-loop are always run: the ratio needs them).
 * `--json FILE` also writes the measures (scripts/bench/chart.ts) to FILE.
 *
 *   bun scripts/bench/agent.ts [TURNS] --tracing
 *
 * The cost of tracing, agentcore alone, side by side in one run: no tracer
 * (`tracing: false`), the default tracer with no OpenTelemetry SDK
 * registered (tracing off: the API's no-op), and an SDK registered (a
 * tracer provider, the AsyncLocalStorage context manager, a batch span
 * processor whose exporter drops the spans: every span is made, nothing is
 * sent).
 *
 * @module
 */
import { createAgent } from "../../src/agent/index.ts";
import { ScriptedModel } from "../../src/providers/scripted.ts";
import { createRuntime } from "../../src/runtime/index.ts";
import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { median, RUNTIME, table } from "./lib.ts";
import { prepareOpenAIAgents, preparePi, preparePiLoop } from "./peers.ts";

const { values: opts, positionals } = parseArgs({
  args: process.argv.slice(2),
  allowPositionals: true,
  options: {
    tracing: { type: "boolean" },
    rounds: { type: "string" },
    only: { type: "string" },
    json: { type: "string" },
  },
});
const TRACING = opts.tracing === true;
const TURNS = Number(positionals[0] ?? 1000);
const ROUNDS = Number(opts.rounds ?? 15);
const SMALL = 100;
if (!Number.isSafeInteger(TURNS) || TURNS < 1) throw new Error(`TURNS must be a positive integer, got ${positionals[0]}`);
if (!Number.isSafeInteger(ROUNDS) || ROUNDS < 1) throw new Error(`--rounds must be a positive integer, got ${opts.rounds}`);

/** A run, its fixture (the scripted model) made beforehand; it returns the number of model calls. */
type Run = () => Promise<number>;

/**
 * A run of agentcore's agent for `turns` tool turns plus a final text turn:
 * the scripted model and the runtime (the tool registry, as pi's tools are
 * a module constant) now, the agent when the run starts.
 */
export function prepareAgentcore(turns: number, tracing?: false): Run {
  const script = [];
  for (let i = 0; i < turns; i++) {
    script.push({
      content: null,
      tool_calls: [{ id: `call_${i}`, name: "echo", arguments: `{"n":${i}}` }],
      usage: { input_tokens: 10, output_tokens: 5 },
    });
  }
  script.push({ content: "done", usage: { input_tokens: 10, output_tokens: 5 } });
  const model = new ScriptedModel(script, { recordRequests: false });
  const runtime = createRuntime();
  return async () => {
    const agent = createAgent({
      model,
      runtime,
      systemPrompt: "You are a test agent.",
      policy: { maxSteps: turns + 5 },
      ...(tracing === false ? { tracing: false as const } : {}),
    });
    const r = await agent.run("go");
    if (r.status !== "completed" || r.output !== "done") throw new Error(`agentcore ended ${r.status}/${r.stop_reason}: ${r.error}`);
    await agent.shutdown();
    return r.turns;
  };
}

/** agentcore with an OpenTelemetry SDK registered for the run (spans made and batched, the exporter drops them). */
function prepareAgentcoreWithSdk(turns: number): Run {
  const run = prepareAgentcore(turns);
  return async () => {
    const api = await import("@opentelemetry/api");
    const sdk = await import("@opentelemetry/sdk-trace");
    const { AsyncLocalStorageContextManager } = await import("@opentelemetry/context-async-hooks");
    const exporter = { export: (_spans: unknown[], done: (r: { code: number }) => void) => done({ code: 0 }), shutdown: async () => {} };
    const provider = new sdk.TracerProvider({ spanProcessors: [new sdk.BatchSpanProcessor({ exporter })] });
    api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    api.trace.setGlobalTracerProvider(provider);
    try {
      return await run();
    } finally {
      await provider.shutdown();
      api.trace.disable();
      api.context.disable();
    }
  };
}

const AGENTCORE = "agentcore";
const AGENTCORE_SMALL = `agentcore, ${SMALL} turns`;
const PI_LOOP = "pi runAgentLoop (minimal stream function)";
const PI_AGENT = "pi Agent (pi-ai faux provider)";
const OPENAI = "openai agents-core Runner (scripted Model)";

/** A full garbage collection, where the runtime offers one (Bun; Node with --expose-gc). */
function collectGarbage(): void {
  const g = globalThis as { Bun?: { gc(sync: boolean): void }; gc?: () => void };
  if (g.Bun !== undefined) g.Bun.gc(true);
  else g.gc?.();
}

/** One measure for the report (the shape scripts/bench/chart.ts reads). */
interface Measure {
  id: string;
  title: string;
  unit: string;
  better: "lower" | "higher";
  reference: string;
  contenders: { name: string; median: number; min: number; max: number }[];
  ratio: number;
  target?: { op: "<=" | ">="; value: number; text: string };
  notes?: string;
}

/** A contender: its name, the turns of one run, and the runs per sample. */
interface Entry {
  name: string;
  turns: number;
  runs: number;
  prepare: (n: number) => Run;
  /** Rounds this contender takes part in (the slow peers run fewer). */
  rounds?: number;
}

const only = opts.only === undefined ? null : new Set(opts.only.split(","));
const entries: Entry[] = TRACING
  ? [
      { name: "agentcore, tracing: false", turns: TURNS, runs: 1, prepare: (n) => prepareAgentcore(n, false) },
      { name: "agentcore, tracing off (no SDK)", turns: TURNS, runs: 1, prepare: prepareAgentcore },
      { name: "agentcore, SDK registered", turns: TURNS, runs: 1, prepare: prepareAgentcoreWithSdk },
    ]
  : [
      { name: AGENTCORE, turns: TURNS, runs: 1, prepare: prepareAgentcore },
      ...(TURNS > SMALL ? [{ name: AGENTCORE_SMALL, turns: SMALL, runs: Math.ceil(TURNS / SMALL), prepare: prepareAgentcore }] : []),
      { name: PI_LOOP, turns: TURNS, runs: 1, prepare: preparePiLoop },
      ...(only === null || only.has("pi-agent") ? [{ name: PI_AGENT, turns: TURNS, runs: 1, prepare: preparePi, rounds: 7 }] : []),
      ...(only === null || only.has("openai") ? [{ name: OPENAI, turns: TURNS, runs: 1, prepare: prepareOpenAIAgents, rounds: 3 }] : []),
    ];

for (const e of entries) await e.prepare(Math.min(e.turns, 200))(); // warm-up
const samples = new Map<string, number[]>(entries.map((e) => [e.name, []]));
for (let r = 0; r < ROUNDS; r++) {
  for (const e of r % 2 ? [...entries].reverse() : entries) {
    if (r >= (e.rounds ?? ROUNDS)) continue;
    const runs = Array.from({ length: e.runs }, () => e.prepare(e.turns));
    collectGarbage(); // each sample starts on a clean heap, not paying for the previous contender's garbage
    const t0 = performance.now();
    for (const run of runs) {
      const turns = await run();
      if (turns < e.turns) throw new Error(`${e.name} ran only ${turns} turns`);
    }
    const dt = performance.now() - t0;
    samples.get(e.name)!.push((dt * 1000) / (e.runs * (e.turns + 1)));
  }
}
const med = new Map([...samples].map(([k, v]) => [k, median(v)]));
const stat = (name: string) => {
  const xs = samples.get(name)!;
  return { name, median: med.get(name)!, min: Math.min(...xs), max: Math.max(...xs) };
};

if (TRACING) {
  console.log(`## The cost of tracing per turn, ${TURNS.toLocaleString("en-US")} tool turns + 1 (${RUNTIME})\n`);
  const base = med.get("agentcore, tracing: false")!;
  table(
    ["agentcore", "µs per turn", "vs tracing: false"],
    [...med].map(([k, v]) => [k, v.toFixed(1), `${(v / base).toFixed(3)}x`]),
  );
  process.exit(0);
}

console.log(
  `## Agent harness overhead per turn, ${TURNS.toLocaleString("en-US")} tool turns + 1, in memory (${RUNTIME}, ${ROUNDS} rounds)\n`,
);
const ours = med.get(AGENTCORE)!;
const piLoop = med.get(PI_LOOP)!;
table(
  ["harness", "µs per turn (median)", "min–max", "÷ pi runAgentLoop"],
  entries.map((e) => {
    const s = stat(e.name);
    return [e.name, s.median.toFixed(1), `${s.min.toFixed(1)}–${s.max.toFixed(1)}`, `${(s.median / piLoop).toFixed(2)}x`];
  }),
);
const ratio = ours / piLoop;
console.log(`\nagentcore ÷ pi runAgentLoop (minimal stream function), ${TURNS} turns: ${ratio.toFixed(2)} (target: <= 1.5)`);
const measures: Measure[] = [
  {
    id: "agent.turn",
    title: `agent loop per turn, ${TURNS.toLocaleString("en-US")} turns, in memory`,
    unit: "µs/turn",
    better: "lower",
    reference: PI_LOOP,
    contenders: entries.filter((e) => e.name !== AGENTCORE_SMALL).map((e) => stat(e.name)),
    ratio,
    target: { op: "<=", value: 1.5, text: "≤ 1.5× pi runAgentLoop" },
    notes:
      `${TURNS} tool turns (echo {"n": i}) + 1 text turn, zero-latency scripted models, no event sinks; ` +
      `medians of ${ROUNDS} alternating rounds (pi Agent: ${Math.min(7, ROUNDS)}, openai agents-core: ${Math.min(3, ROUNDS)}). pi runAgentLoop: a stream function pushing the next prebuilt message as one done event, ` +
      "convertToLlm the identity, a no-op emit.",
  },
];
if (med.has(AGENTCORE_SMALL)) {
  const small = med.get(AGENTCORE_SMALL)!;
  const growth = ours / small;
  console.log(`agentcore ${TURNS} turns ÷ ${SMALL} turns, per turn: ${growth.toFixed(2)} (target: <= 1.2)`);
  measures.push({
    id: "agent.growth",
    title: `agentcore per turn at ${TURNS.toLocaleString("en-US")} turns ÷ at ${SMALL} turns`,
    unit: "µs/turn",
    better: "lower",
    reference: AGENTCORE_SMALL,
    contenders: [stat(AGENTCORE), stat(AGENTCORE_SMALL)],
    ratio: growth,
    target: { op: "<=", value: 1.2, text: `≤ 1.2× its ${SMALL}-turn figure` },
    notes: `The same agentcore run at ${TURNS} and at ${SMALL} turns (the ${SMALL}-turn run repeated ${Math.ceil(TURNS / SMALL)} times per sample), in the same alternating rounds.`,
  });
}
if (opts.json !== undefined) writeFileSync(opts.json, `${JSON.stringify(measures, null, 2)}\n`);
