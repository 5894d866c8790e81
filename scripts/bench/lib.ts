/**
 * Side-by-side timing helpers for the benchmarks in this folder.
 *
 * Contenders of one comparison are run in alternating rounds in the same
 * process, so machine noise hits them alike; each result is the median of the
 * rounds. Ratios are computed from those medians. Runs on Bun, Deno and Node.
 *
 * @module
 */
import { resolve } from "node:path";

/** The benchmark corpora, copied into the repository (see its README.md for their source and license). */
export const BENCH_DATA = resolve(import.meta.dirname ?? new URL(".", import.meta.url).pathname, "../../test/fixtures/bench-data");

export const RUNTIME: string =
  typeof (globalThis as { Bun?: { version: string } }).Bun !== "undefined"
    ? `bun ${(globalThis as unknown as { Bun: { version: string } }).Bun.version}`
    : typeof (globalThis as { Deno?: { version: { deno: string } } }).Deno !== "undefined"
      ? `deno ${(globalThis as unknown as { Deno: { version: { deno: string } } }).Deno.version.deno}`
      : `node ${process.version}`;

/** A sink that keeps results alive so the engine cannot drop the work. */
export let blackhole: unknown = null;
export function keep(v: unknown): void {
  blackhole = v;
}

/** Milliseconds per call of `fn`, measured over at least `minMs` of work. */
function timeOnce(fn: () => void, minMs: number): number {
  let n = 1;
  for (;;) {
    const t0 = performance.now();
    for (let i = 0; i < n; i++) fn();
    const dt = performance.now() - t0;
    if (dt >= minMs) return dt / n;
    n = dt < minMs / 8 ? n * 8 : Math.ceil((n * minMs * 1.2) / Math.max(dt, 0.001));
  }
}

export interface Contender {
  name: string;
  fn: () => void;
}

/** Median ms per call for each contender, in alternating rounds. */
export function compare(contenders: Contender[], opts: { rounds?: number; minMs?: number } = {}): Map<string, number> {
  const rounds = opts.rounds ?? 7;
  const minMs = opts.minMs ?? 60;
  for (const c of contenders) timeOnce(c.fn, minMs / 2); // warm-up
  const samples = new Map<string, number[]>(contenders.map((c) => [c.name, []]));
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? contenders : [...contenders].reverse();
    for (const c of order) samples.get(c.name)!.push(timeOnce(c.fn, minMs));
  }
  const out = new Map<string, number>();
  for (const [name, xs] of samples) out.set(name, median(xs));
  return out;
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** MB/s (10^6 bytes per second) for `bytes` processed in `ms`. */
export function mbps(bytes: number, ms: number): string {
  return (bytes / 1e6 / (ms / 1000)).toFixed(0);
}

export function ratio(a: number, b: number): string {
  return `${(a / b).toFixed(2)}x`;
}

/** Print a Markdown table. */
export function table(head: string[], rows: string[][]): void {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(" | ")} |`;
  console.log(line(head));
  console.log(`| ${widths.map((w) => "-".repeat(w)).join(" | ")} |`);
  for (const r of rows) console.log(line(r));
}
