/**
 * Whole-process timing for the start-up and `run` benchmarks: commands run
 * in alternating rounds (the order reversed every other round, so a drift in
 * the machine's speed hits all of them alike), each run's wall time from a
 * monotonic clock around the child and its CPU time (user + system) from the
 * operating system's accounting of the finished child. Bun only (it reads
 * `Bun.spawnSync`'s resource usage).
 *
 * Also builds a program with exactly the flags the agentcore binary is built
 * with (scripts/build-binary.mjs), so that a reference binary differs from
 * agentcore's only in its source.
 *
 * @module
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildBinary, bunExecutable, ENTRY, ROOT } from "../build-binary.mjs";
import type { Measure } from "./chart.ts";
import { median } from "./lib.ts";

/** A command of a comparison: its name and argv (run with `cwd`, stdout to /dev/null). */
export interface Proc {
  name: string;
  argv: string[];
  cwd?: string;
}

/** The samples of one command: wall and CPU milliseconds per run. */
export interface ProcSamples {
  wall: number[];
  cpu: number[];
}

/** Run `p` once; throws with its stderr when it exits non-zero. */
export function runOnce(p: Proc): { wall: number; cpu: number } {
  const t0 = performance.now();
  const r = Bun.spawnSync(p.argv, { cwd: p.cwd, stdin: "ignore", stdout: "ignore", stderr: "pipe" });
  const wall = performance.now() - t0;
  if (r.exitCode !== 0) throw new Error(`${p.name} exited ${r.exitCode}: ${r.stderr.toString().slice(0, 2000)}`);
  const cpu = Number(r.resourceUsage?.cpuTime.total ?? 0n) / 1000;
  return { wall, cpu };
}

/** `rounds` alternating rounds of every command, after `warmup` unmeasured ones. */
export function alternate(procs: Proc[], rounds: number, warmup = 1): Map<string, ProcSamples> {
  for (let i = 0; i < warmup; i++) for (const p of procs) runOnce(p);
  const out = new Map<string, ProcSamples>(procs.map((p) => [p.name, { wall: [], cpu: [] }]));
  for (let r = 0; r < rounds; r++) {
    for (const p of r % 2 === 0 ? procs : [...procs].reverse()) {
      const s = runOnce(p);
      out.get(p.name)!.wall.push(s.wall);
      out.get(p.name)!.cpu.push(s.cpu);
    }
  }
  return out;
}

/** A contender of a measure from samples (median, min, max), mapped through `f` (e.g. ms → lines/s). */
export function contender(name: string, xs: number[], f: (x: number) => number = (x) => x): Measure["contenders"][number] {
  const ys = xs.map(f);
  return { name, median: median(ys), min: Math.min(...ys), max: Math.max(...ys) };
}

/** A temporary folder, removed when the process exits. */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * Build the agentcore binary of this checkout into `dir` (scripts/build-binary.mjs),
 * and each of `others` (entry files) with the very same `bun build` arguments.
 * Returns the agentcore binary's path, the others' paths and the flags used.
 */
export function buildSameWay(
  dir: string,
  others: Record<string, string>,
): { agentcore: string; others: Record<string, string>; flags: string[] } {
  const built = buildBinary({ outfile: join(dir, "agentcore") });
  const at = built.args.indexOf(ENTRY);
  if (at < 0) throw new Error(`build-binary.mjs's arguments do not name ${ENTRY}: ${built.args.join(" ")}`);
  const paths: Record<string, string> = {};
  for (const [name, entry] of Object.entries(others)) {
    const out = join(dir, name);
    const args = built.args.map((a, i) => (i === at ? entry : a));
    args[args.indexOf("--outfile") + 1] = out;
    const r = Bun.spawnSync([bunExecutable(), ...args], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
    if (r.exitCode !== 0) throw new Error(`bun ${args.join(" ")} failed: ${r.stderr.toString()}`);
    paths[name] = out;
  }
  const flags = built.args.filter(
    (a, i) => a.startsWith("--") && a !== "--outfile" && a !== "--define" && built.args[i - 1] !== "--define",
  );
  return { agentcore: built.outfile, others: paths, flags };
}
