/**
 * A/B timing of builds of the WebAssembly core, validation only, in one
 * process: every build validates every corpus in alternating rounds, so load
 * from other work on the machine hits all builds alike. Prints, per input, the
 * throughput of each build (median of the rounds) and the time ratio of each
 * build against the first one, from the best round and from the medians (on a
 * busy machine the best round is the steadier figure).
 *
 *   bun scripts/bench/core-ab.ts [--rounds N] [--filter S]... A.wasm B.wasm ...
 *
 * `committed` as a path stands for the module embedded in src/core/core-wasm.ts.
 * To build a variant of asm/json.ts (the flags of scripts/build-wasm.mjs):
 *
 *   node node_modules/assemblyscript/bin/asc.js asm/json.ts -O3 --runtime stub \
 *     --enable simd --noAssert --outFile /tmp/variant.wasm
 *
 * @module
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { CORE_WASM_BASE64 } from "../../src/core/core-wasm.ts";
import { typicalCall } from "./calls.ts";
import { BENCH_DATA, median, RUNTIME } from "./lib.ts";

const argv = process.argv.slice(2);
const builds: string[] = [];
const filters: string[] = [];
let rounds = 25;
for (let i = 0; i < argv.length; i++) {
  const a = argv[i]!;
  if (a === "--rounds") rounds = Number(argv[++i]);
  else if (a === "--filter") filters.push(argv[++i]!);
  else builds.push(a);
}
if (builds.length === 0 || !(rounds >= 3)) {
  console.error("usage: bun scripts/bench/core-ab.ts [--rounds N] [--filter S]... A.wasm|committed [B.wasm ...]");
  process.exit(2);
}

function moduleBytes(path: string): Uint8Array {
  if (path !== "committed") return new Uint8Array(readFileSync(path));
  const bin = atob(CORE_WASM_BASE64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

interface Raw {
  memory: WebAssembly.Memory;
  setSeed(lo: number, hi: number): void;
  begin(maxDepth: number, allowProto: number, cap: number): number;
  validateFresh(n: number, maxDepth: number, allowProto: number): number;
}

/** A validator over one build: copies the bytes in (as validateStrict(bytes) does) and validates. */
function validatorFor(path: string): (bytes: Uint8Array) => number {
  const mod = new WebAssembly.Module(moduleBytes(path) as Uint8Array<ArrayBuffer>);
  const x = new WebAssembly.Instance(mod, {
    env: {
      numcheck: () => 1,
      abort: () => {
        throw new Error("core aborted");
      },
    },
  }).exports as unknown as Raw;
  x.setSeed(0x9e3779b9, 0x85ebca6b);
  let cap = 0;
  let ptr = 0;
  let mem = new Uint8Array(0);
  return (bytes) => {
    if (bytes.length > cap || mem.length === 0) {
      cap = Math.max(bytes.length, 65536);
      ptr = x.begin(64, 0, cap);
      mem = new Uint8Array(x.memory.buffer);
    }
    mem.set(bytes, ptr);
    return x.validateFresh(bytes.length, 64, 0);
  };
}

const inputs: { name: string; bytes: Uint8Array }[] = [];
const dir = BENCH_DATA;
for (const f of readdirSync(dir)
  .filter((f) => f.endsWith(".json"))
  .sort()) {
  inputs.push({ name: f.replace(/\.json$/, ""), bytes: new Uint8Array(readFileSync(join(dir, f))) });
}
const enc = new TextEncoder();
for (const size of [100, 1000, 10_000]) inputs.push({ name: `call ${size} B`, bytes: enc.encode(typicalCall(size, size)) });

const validators = builds.map(validatorFor);
console.log(`## Core builds A/B, validation only (${RUNTIME}, ${rounds} rounds)\n`);
const head = [
  "input",
  ...builds.map((b, k) => `${String.fromCharCode(65 + k)} MB/s`),
  ...builds.slice(1).map((_, k) => `${String.fromCharCode(66 + k)}/A best, median`),
];
console.log(`| ${head.join(" | ")} |`);
console.log(`|${head.map(() => "---").join("|")}|`);
for (const { name, bytes } of inputs) {
  if (filters.length > 0 && !filters.some((f) => name.includes(f))) continue;
  for (const v of validators) {
    if (v(bytes) !== 1) throw new Error(`${name}: a build rejects the input`);
  }
  const per = Math.max(1, Math.floor(4_000_000 / bytes.length));
  const samples = validators.map(() => [] as number[]);
  for (let r = 0; r < rounds; r++) {
    for (let j = 0; j < validators.length; j++) {
      const k = r % 2 === 0 ? j : validators.length - 1 - j;
      const v = validators[k]!;
      const t0 = performance.now();
      for (let i = 0; i < per; i++) v(bytes);
      samples[k]!.push((performance.now() - t0) / per);
    }
  }
  const med = samples.map(median);
  const best = samples.map((s) => Math.min(...s));
  const mbs = med.map((ms) => (bytes.length / 1e6 / (ms / 1e3)).toFixed(0));
  const ratios = builds.slice(1).map((_, k) => `${(best[k + 1]! / best[0]!).toFixed(3)}, ${(med[k + 1]! / med[0]!).toFixed(3)}`);
  console.log(`| ${[name, ...mbs, ...ratios].join(" | ")} |`);
}
console.log("\nB/A: time ratio against the first build (below 1 = faster).");
