/**
 * Quick local timing of the strict core against JSON.parse (for iterating on
 * hot paths; the full benchmark suite lives in scripts/bench/all.ts).
 *
 *   bun scripts/bench/core-quick.ts [filter]
 *   deno run -A scripts/bench/core-quick.ts [filter]
 */
import { readdirSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { JsonStreamValidator, parseStrict, validateStrict } from "../../src/core/index.ts";
import { BENCH_DATA } from "./lib.ts";

const dir = BENCH_DATA;
const filter = process.argv[2] ?? "";
const enc = new TextEncoder();

/**
 * Best time per call (ms) of each function, measured in interleaved rounds so
 * that load changes on a shared machine hit all of them alike.
 */
function timeAll(fns: (() => void)[], rounds = 12, roundMs = 25): number[] {
  for (const fn of fns) for (let i = 0; i < 5; i++) fn();
  const best = fns.map(() => Infinity);
  for (let r = 0; r < rounds; r++) {
    fns.forEach((fn, k) => {
      let n = 0;
      const t0 = performance.now();
      let t = t0;
      while (t - t0 < roundMs) {
        fn();
        n++;
        t = performance.now();
      }
      best[k] = Math.min(best[k], (t - t0) / n);
    });
  }
  return best;
}

const rows: string[] = [];
const fmt = (bytes: number, ms: number) => (bytes / 1e6 / (ms / 1e3)).toFixed(0).padStart(6);
function bench(name: string, text: string) {
  const bytes = enc.encode(text);
  const limits = { maxBytes: Math.max(bytes.length, 1024) };
  const [tParse, tStrict, tValStr, tValBytes] = timeAll([
    () => JSON.parse(text),
    () => {
      const r = parseStrict(text, limits);
      if (!r.ok) throw new Error(JSON.stringify(r.error));
    },
    () => validateStrict(text, limits),
    () => validateStrict(bytes, limits),
  ]);
  rows.push(
    `${name.padEnd(34)} ${String(bytes.length).padStart(8)}  JSON.parse ${fmt(bytes.length, tParse)} MB/s  strict ${fmt(bytes.length, tStrict)} MB/s  ratio ${(tStrict / tParse).toFixed(2)}x  validate(str) ${fmt(bytes.length, tValStr)}  validate(bytes) ${fmt(bytes.length, tValBytes)} MB/s`,
  );
}

for (const f of readdirSync(dir)
  .filter((f) => f.endsWith(".json") && f.includes(filter))
  .sort()) {
  bench(f, readFileSync(resolve(dir, f), "utf8"));
}
// typical tool calls
const call = (n: number) => {
  const args: Record<string, unknown> = { path: "src/main.ts", max_bytes: 4096, flags: [true, false, null] };
  let i = 0;
  while (JSON.stringify({ id: "call_1", tool: "read_file", arguments: args }).length < n) args["k" + i++] = "value " + i;
  return JSON.stringify({ id: "call_1", tool: "read_file", arguments: args });
};
if (!filter) for (const n of [100, 1000, 10000]) bench(`call ${n} B`, call(n));

// incremental: 100 KB argument string in 20-byte deltas
if (!filter) {
  const doc = JSON.stringify({ path: "a.txt", content: "lorem ipsum dolor sit amet, é😀 ".repeat(3300) });
  const [tInc, tOne, tOneStrict] = timeAll([
    () => {
      const v = new JsonStreamValidator();
      for (let i = 0; i < doc.length; i += 20) v.push(doc.slice(i, i + 20));
      if (v.finish().state !== "complete") throw new Error("bad");
      v.dispose();
    },
    () => validateStrict(doc),
    () => parseStrict(doc),
  ]);
  rows.push(
    `incremental 100KB in 20 B deltas: ${tInc.toFixed(3)} ms; one-shot validate ${tOne.toFixed(3)} ms (${(tInc / tOne).toFixed(1)}x), one-shot parseStrict ${tOneStrict.toFixed(3)} ms (${(tInc / tOneStrict).toFixed(1)}x)`,
  );
}
console.log(rows.join("\n"));
