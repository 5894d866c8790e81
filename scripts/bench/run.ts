/**
 * `agentcore run` throughput on 100k echo calls, against a bare
 * JSON.parse + JSON.stringify loop over the same lines in the same runtime.
 *
 *   bun scripts/bench/run.ts [N]
 *
 * Each contender is a real child process reading the same JSONL file and
 * writing to /dev/null; wall time includes process start-up. Rounds alternate
 * between contenders; medians are reported. Deno rows appear when deno is
 * installed (node_modules/.bin/deno); the compiled-binary row when dist/agentcore exists.
 *
 * @module
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, openSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { median, RUNTIME, table } from "./lib.ts";

const N = Number(process.argv[2] ?? 100_000);
const repo = resolve(import.meta.dirname ?? new URL(".", import.meta.url).pathname, "../..");
const dir = mkdtempSync(join(tmpdir(), "agentcore-bench-"));
const file = join(dir, "calls.jsonl");
let text = "";
for (let i = 0; i < N; i++)
  text += `{"id":"call_${String(i).padStart(6, "0")}","tool":"echo","arguments":{"message":"hello","n":${i},"tags":["a","b"]}}\n`;
writeFileSync(file, text);

const bun = process.execPath.includes("bun") ? process.execPath : join(repo, "node_modules/.bin/bun");
const deno = join(repo, "node_modules/.bin/deno");
const binary = join(repo, "dist/agentcore");

interface Cmd {
  name: string;
  argv: string[];
}
const cmds: Cmd[] = [
  { name: "bun: bare JSON.parse+stringify loop", argv: [bun, "scripts/bench/bare-loop.ts", file] },
  { name: "bun: agentcore run (src)", argv: [bun, "src/cli/main.ts", "run", file] },
];
if (existsSync(binary)) cmds.push({ name: "agentcore run (compiled binary)", argv: [binary, "run", file] });
if (existsSync(deno)) {
  cmds.push({ name: "deno: bare JSON.parse+stringify loop", argv: [deno, "run", "-A", "scripts/bench/bare-loop.ts", file] });
  cmds.push({ name: "deno: agentcore run (src)", argv: [deno, "run", "-A", "src/cli/main.ts", "run", file] });
}

function timeCmd(c: Cmd): number {
  const devnull = openSync("/dev/null", "w");
  const t0 = performance.now();
  const r = spawnSync(c.argv[0]!, c.argv.slice(1), { cwd: repo, stdio: ["ignore", devnull, "pipe"] });
  const dt = performance.now() - t0;
  if (r.status !== 0) throw new Error(`${c.name} exited ${r.status}: ${r.stderr}`);
  return dt;
}

const samples = new Map<string, number[]>(cmds.map((c) => [c.name, []]));
for (const c of cmds) timeCmd(c); // warm caches
for (let r = 0; r < 5; r++) {
  for (const c of r % 2 ? [...cmds].reverse() : cmds) samples.get(c.name)!.push(timeCmd(c));
}
rmSync(dir, { recursive: true, force: true });

console.log(`## agentcore run on ${N.toLocaleString("en-US")} echo calls (driver: ${RUNTIME})\n`);
const med = new Map([...samples].map(([k, v]) => [k, median(v)]));
const bareBun = med.get("bun: bare JSON.parse+stringify loop")!;
const bareDeno = med.get("deno: bare JSON.parse+stringify loop");
table(
  ["contender", "wall ms", "calls/s", "throughput vs bare loop (same runtime)"],
  cmds.map((c) => {
    const ms = med.get(c.name)!;
    const bare = c.name.startsWith("deno") ? bareDeno! : bareBun;
    return [c.name, ms.toFixed(0), Math.round(N / (ms / 1000)).toLocaleString("en-US"), `${((bare / ms) * 100).toFixed(0)}%`];
  }),
);
console.log("\nthroughput vs bare loop: bare wall time / contender wall time (target: >= 50%).");
