/**
 * Deterministic "typical" tool calls of about 100 B, 1 KB and 10 KB, in the
 * agentcore shape, for the benchmarks. Content mixes ASCII prose, some
 * non-ASCII text, escapes, numbers and nesting, as model-produced calls do.
 *
 * @module
 */
const WORDS = [
  "read",
  "the",
  "file",
  "and",
  "summarise",
  "naïve",
  "café",
  "λ-calculus",
  "🙂",
  "path",
  "src/main.ts",
  "line\n",
  "tab\t",
  'quote"',
];

function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** One call whose compact JSON is close to `size` bytes (never above it by more than ~60 B). */
export function typicalCall(size: number, seed = 1): string {
  const rnd = prng(seed);
  const text = (n: number) => Array.from({ length: n }, () => WORDS[Math.floor(rnd() * WORDS.length)]).join(" ");
  const args: Record<string, unknown> = { path: "src/agent/loop.ts", max_bytes: 4096 };
  const call = { id: `call_${seed.toString(16).padStart(8, "0")}`, tool: "edit_file", arguments: args };
  const base = JSON.stringify(call).length;
  if (size <= base + 20) return JSON.stringify({ id: call.id, tool: "read_file", arguments: { path: "README.md" } });
  const edits: unknown[] = [];
  args.edits = edits;
  let i = 0;
  while (JSON.stringify(call).length < size - 60) {
    edits.push({ line: Math.floor(rnd() * 1000), old: text(3), new: text(4), ok: rnd() > 0.5, score: Math.round(rnd() * 1e6) / 1e3 });
    i++;
    if (i > 10_000) break;
  }
  return JSON.stringify(call);
}
