/**
 * Per-turn overhead of the agent harness, side by side with two peers.
 *
 *   bun scripts/bench/agent.ts [TURNS]
 *
 * One run of TURNS + 1 model turns: turn i (< TURNS) calls `echo` with
 * {"n": i}, the last turn answers with text. The model costs nothing (each is
 * a zero-latency in-process scripted model), so the time per turn is the
 * harness's own overhead: building the context, streaming, events, argument
 * parsing and validation, tool dispatch and bookkeeping, over a conversation
 * that grows by two messages per turn.
 *
 * - agentcore: createAgent + ScriptedModel (recordRequests off), the echo
 *   tool through the runtime's dispatch (ajv validation).
 * - pi: @mariozechner/pi-agent-core with pi-ai's faux provider.
 * - openai-agents: @openai/agents-core Runner with a scripted Model.
 *
 * Rounds alternate between contenders; medians are reported.
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
import { median, RUNTIME, table } from "./lib.ts";
import { runOpenAIAgents, runPi } from "./peers.ts";

const TRACING = process.argv.includes("--tracing");
const TURNS = Number(process.argv.slice(2).find((a) => !a.startsWith("--")) ?? 1000);

/** Run agentcore's agent for `turns` tool turns plus a final text turn. Returns the number of model calls. */
export async function runAgentcore(turns: number, tracing?: false): Promise<number> {
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
  const agent = createAgent({
    model,
    runtime: createRuntime(),
    systemPrompt: "You are a test agent.",
    policy: { maxSteps: turns + 5 },
    ...(tracing === false ? { tracing: false as const } : {}),
  });
  const r = await agent.run("go");
  if (r.status !== "completed" || r.output !== "done") throw new Error(`agentcore ended ${r.status}/${r.stop_reason}: ${r.error}`);
  await agent.shutdown();
  return r.turns;
}

/** agentcore with an OpenTelemetry SDK registered for the run (spans made and batched, the exporter drops them). */
async function runAgentcoreWithSdk(turns: number): Promise<number> {
  const api = await import("@opentelemetry/api");
  const sdk = await import("@opentelemetry/sdk-trace");
  const { AsyncLocalStorageContextManager } = await import("@opentelemetry/context-async-hooks");
  const exporter = { export: (_spans: unknown[], done: (r: { code: number }) => void) => done({ code: 0 }), shutdown: async () => {} };
  const provider = new sdk.TracerProvider({ spanProcessors: [new sdk.BatchSpanProcessor({ exporter })] });
  api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  api.trace.setGlobalTracerProvider(provider);
  try {
    return await runAgentcore(turns);
  } finally {
    await provider.shutdown();
    api.trace.disable();
    api.context.disable();
  }
}

const contenders: [string, (n: number) => Promise<number>][] = TRACING
  ? [
      ["agentcore, tracing: false", (n) => runAgentcore(n, false)],
      ["agentcore, tracing off (no SDK)", runAgentcore],
      ["agentcore, SDK registered", runAgentcoreWithSdk],
    ]
  : [
      ["agentcore", runAgentcore],
      ["pi-agent-core", runPi],
      ["openai agents-core", runOpenAIAgents],
    ];

for (const [, fn] of contenders) await fn(Math.min(TURNS, 200)); // warm-up
const samples = new Map<string, number[]>(contenders.map(([n]) => [n, []]));
const rounds = 5;
for (let r = 0; r < rounds; r++) {
  for (const [name, fn] of r % 2 ? [...contenders].reverse() : contenders) {
    const t0 = performance.now();
    const turns = await fn(TURNS);
    const dt = performance.now() - t0;
    if (turns < TURNS) throw new Error(`${name} ran only ${turns} turns`);
    samples.get(name)!.push((dt * 1000) / (TURNS + 1));
  }
}

if (TRACING) {
  console.log(`## The cost of tracing per turn, ${TURNS.toLocaleString("en-US")} tool turns + 1 (${RUNTIME})\n`);
  const med = new Map([...samples].map(([k, v]) => [k, median(v)]));
  const base = med.get("agentcore, tracing: false")!;
  table(
    ["agentcore", "µs per turn", "vs tracing: false"],
    [...med].map(([k, v]) => [k, v.toFixed(1), `${(v / base).toFixed(3)}x`]),
  );
  process.exit(0);
}

console.log(`## Agent harness overhead per turn, ${TURNS.toLocaleString("en-US")} tool turns + 1 (${RUNTIME})\n`);
const med = new Map([...samples].map(([k, v]) => [k, median(v)]));
const ours = med.get("agentcore")!;
const fastestPeer = Math.min(med.get("pi-agent-core")!, med.get("openai agents-core")!);
table(
  ["harness", "µs per turn", "vs agentcore"],
  [...med].map(([k, v]) => [k, v.toFixed(1), `${(v / ours).toFixed(2)}x`]),
);
console.log(`\nagentcore / fastest peer: ${(ours / fastestPeer).toFixed(2)} (target: <= 0.50)`);
