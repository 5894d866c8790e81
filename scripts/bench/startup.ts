/**
 * Start-up of the agentcore binary against a `bun build --compile`
 * hello-world built with the same flags (scripts/build-binary.mjs): whole
 * processes, from start to exit, in alternating rounds.
 *
 *   bun scripts/bench/startup.ts [--rounds N] [--json FILE]
 *
 * Contenders: the hello-world (prints one line), `agentcore --version`, and
 * `agentcore execute` of one echo call. Both binaries are built from this
 * checkout into a temporary folder. The ratio is agentcore's median wall time
 * over the hello-world's, in the same run (targets: --version ≤ 3×,
 * execute ≤ 6×); CPU time (user + system) is printed beside it.
 *
 * @module
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import type { Measure } from "./chart.ts";
import { median, RUNTIME, table } from "./lib.ts";
import { alternate, buildSameWay, contender, type Proc, tempDir } from "./procs.ts";

const { values } = parseArgs({ options: { rounds: { type: "string" }, json: { type: "string" } } });
const ROUNDS = Number(values.rounds ?? 21);
if (!Number.isInteger(ROUNDS) || ROUNDS < 1) throw new Error("--rounds takes a positive integer");

const dir = tempDir("agentcore-bench-startup-");
const helloSrc = join(dir, "hello.ts");
writeFileSync(helloSrc, 'console.log("hello, world");\n');
console.error("startup: building agentcore and the hello-world with the release flags …");
const built = buildSameWay(dir, { hello: helloSrc });
const hello = built.others.hello!;
const CALL = '{"tool":"echo","arguments":{"message":"hello"}}';

const HELLO = "hello-world (bun build --compile)";
const procs: Proc[] = [
  { name: HELLO, argv: [hello], cwd: dir },
  { name: "agentcore --version", argv: [built.agentcore, "--version"], cwd: dir },
  { name: "agentcore execute (one echo call)", argv: [built.agentcore, "execute", CALL], cwd: dir },
];
const samples = alternate(procs, ROUNDS, 2);
const base = samples.get(HELLO)!;

console.log(`## Start-up, whole process (driver: ${RUNTIME}; binaries built with ${built.flags.join(" ")}; ${ROUNDS} rounds)\n`);
table(
  ["contender", "wall ms (median)", "cpu ms (median)", "wall vs hello-world", "cpu vs hello-world"],
  procs.map((p) => {
    const s = samples.get(p.name)!;
    return [
      p.name,
      median(s.wall).toFixed(1),
      median(s.cpu).toFixed(1),
      `${(median(s.wall) / median(base.wall)).toFixed(2)}x`,
      `${(median(s.cpu) / median(base.cpu)).toFixed(2)}x`,
    ];
  }),
);
console.log("\ntargets: --version <= 3x, execute <= 6x the hello-world (wall, medians of the same run).");

if (values.json) {
  const measure = (id: string, title: string, name: string, value: number, notes: string): Measure => {
    const s = samples.get(name)!;
    return {
      id,
      title,
      unit: "ms",
      better: "lower",
      reference: HELLO,
      contenders: [contender(name, s.wall), contender(HELLO, base.wall)],
      ratio: median(s.wall) / median(base.wall),
      target: { op: "<=", value, text: `≤ ${value}× hello-world` },
      notes: `${notes}; wall time of the whole process, medians of ${ROUNDS} alternating rounds; both built with bun build ${built.flags.join(" ")}; cpu ratio ${(median(s.cpu) / median(base.cpu)).toFixed(2)}`,
    };
  };
  const out: Measure[] = [
    measure(
      "startup.version",
      "agentcore --version",
      "agentcore --version",
      3,
      "agentcore --version against a compiled console.log hello-world",
    ),
    measure("startup.execute", "agentcore execute, one echo call", "agentcore execute (one echo call)", 6, `agentcore execute '${CALL}'`),
  ];
  writeFileSync(values.json, `${JSON.stringify(out, null, 2)}\n`);
}
