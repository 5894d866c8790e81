/**
 * `agentcore run` throughput on N echo calls (default 100,000), against a
 * bare JSON.parse + JSON.stringify loop over the same lines
 * (scripts/bench/bare-loop.ts).
 *
 *   bun scripts/bench/run.ts [N] [--rounds R] [--json FILE]
 *
 * The headline row is the compiled agentcore binary against the bare loop
 * compiled the same way: both built from this checkout into a temporary
 * folder with the flags of scripts/build-binary.mjs. Secondary rows run the
 * sources: agentcore and the bare loop under the same Bun (and under Deno when
 * node_modules/.bin/deno exists). Each contender is a whole process reading
 * the same JSONL file and writing to /dev/null: wall time includes start-up.
 * Rounds alternate between contenders; medians are reported. Throughput vs
 * bare is the bare loop's wall time over the contender's (target: >= 50%).
 *
 * @module
 */
import { existsSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import type { Measure } from "./chart.ts";
import { median, RUNTIME, table } from "./lib.ts";
import { alternate, buildSameWay, contender, type Proc, tempDir } from "./procs.ts";

const { values, positionals } = parseArgs({
  options: { rounds: { type: "string" }, json: { type: "string" } },
  allowPositionals: true,
});
const N = Number(positionals[0] ?? 100_000);
const ROUNDS = Number(values.rounds ?? 7);
if (!Number.isInteger(N) || N < 1 || !Number.isInteger(ROUNDS) || ROUNDS < 1)
  throw new Error("usage: run.ts [N] [--rounds R] [--json FILE]");

const repo = resolve(import.meta.dirname ?? new URL(".", import.meta.url).pathname, "../..");
const dir = tempDir("agentcore-bench-run-");
const file = join(dir, "calls.jsonl");
let text = "";
for (let i = 0; i < N; i++)
  text += `{"id":"call_${String(i).padStart(6, "0")}","tool":"echo","arguments":{"message":"hello","n":${i},"tags":["a","b"]}}\n`;
writeFileSync(file, text);

console.error("run: building agentcore and the bare loop with the release flags …");
const built = buildSameWay(dir, { "bare-loop": join(repo, "scripts/bench/bare-loop.ts") });
const bun = process.execPath;
const deno = join(repo, "node_modules/.bin/deno");

const BIN = "agentcore run (compiled binary)";
const BIN_BARE = "bare loop (compiled the same way)";
const procs: Proc[] = [
  { name: BIN, argv: [built.agentcore, "run", file], cwd: repo },
  { name: BIN_BARE, argv: [built.others["bare-loop"]!, file], cwd: repo },
  { name: "bun: agentcore run (src)", argv: [bun, "src/cli/main.ts", "run", file], cwd: repo },
  { name: "bun: bare loop (src)", argv: [bun, "scripts/bench/bare-loop.ts", file], cwd: repo },
];
if (existsSync(deno)) {
  procs.push({ name: "deno: agentcore run (src)", argv: [deno, "run", "-A", "src/cli/main.ts", "run", file], cwd: repo });
  procs.push({ name: "deno: bare loop (src)", argv: [deno, "run", "-A", "scripts/bench/bare-loop.ts", file], cwd: repo });
}
const bareOf = (name: string) => (name === BIN ? BIN_BARE : name.replace("agentcore run", "bare loop"));

const samples = alternate(procs, ROUNDS, 1);
const med = (name: string) => median(samples.get(name)!.wall);
const medCpu = (name: string) => median(samples.get(name)!.cpu);

console.log(`## agentcore run on ${N.toLocaleString("en-US")} echo calls (driver: ${RUNTIME}; ${ROUNDS} rounds)\n`);
console.log(`binaries built with: bun build ${built.flags.join(" ")}\n`);
table(
  ["contender", "wall ms", "cpu ms", "calls/s", "throughput vs bare loop (same build)"],
  procs.map((p) => {
    const ms = med(p.name);
    const vs = p.name.includes("agentcore") ? `${((med(bareOf(p.name)) / ms) * 100).toFixed(0)}%` : "";
    return [p.name, ms.toFixed(0), medCpu(p.name).toFixed(0), Math.round(N / (ms / 1000)).toLocaleString("en-US"), vs];
  }),
);
console.log("\nthroughput vs bare loop: bare wall time / agentcore wall time, medians (target for the binary: >= 50%).");

if (values.json) {
  const perSecond = (ms: number) => N / (ms / 1000);
  const m: Measure = {
    id: "run.throughput",
    title: `agentcore run, ${N.toLocaleString("en-US")} echo calls`,
    unit: "lines/s",
    better: "higher",
    reference: BIN_BARE,
    contenders: [contender(BIN, samples.get(BIN)!.wall, perSecond), contender(BIN_BARE, samples.get(BIN_BARE)!.wall, perSecond)],
    ratio: med(BIN_BARE) / med(BIN),
    target: { op: ">=", value: 0.5, text: "≥ 0.5× the bare loop" },
    notes:
      `whole processes over the same JSONL file to /dev/null, start-up included, medians of ${ROUNDS} alternating rounds; ` +
      `both built with bun build ${built.flags.join(" ")}; from source under Bun: ${((med("bun: bare loop (src)") / med("bun: agentcore run (src)")) * 100).toFixed(0)}%; ` +
      `cpu ratio (binary): ${(medCpu(BIN_BARE) / medCpu(BIN)).toFixed(2)}`,
  };
  writeFileSync(values.json, `${JSON.stringify([m], null, 2)}\n`);
}
