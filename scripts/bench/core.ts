/**
 * Strict core against JSON.parse and against pure-JS strict parsers, side by side.
 *
 *   bun scripts/bench/core.ts         (or: deno run -A scripts/bench/core.ts)
 *
 * For each corpus in test/fixtures/bench-data and for typical 100 B / 1 KB / 10 KB calls:
 * - JSON.parse: the native parser, no duplicate or UTF-8 checks (baseline);
 * - parseStrict: WebAssembly validation, then materialisation with JSON.parse;
 * - validateStrict(bytes): validation alone, from UTF-8 bytes;
 * - validateStrict(text): validation alone, from the JS string (encoding included);
 * - momoa: @humanwhocodes/momoa AST parse plus a duplicate-key walk (pure JS);
 * - jsonc-parser: its visitor with a key set per object (pure JS).
 *
 * momoa builds a tree, so it is compared with parseStrict. The jsonc-parser
 * visitor builds no value: it is shown against parseStrict (strict parsing
 * either way) and, like for like, against validateStrict(text) (both only
 * validate the same string).
 *
 * @module
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse as momoaParse } from "@humanwhocodes/momoa";
import { visit } from "jsonc-parser";
import { parseStrict, validateStrict } from "../../src/core/index.ts";
import { typicalCall } from "./calls.ts";
import { compare, keep, mbps, ratio, BENCH_DATA, RUNTIME, table } from "./lib.ts";

const BIG = { maxBytes: 64 * 1024 * 1024 };

type Node = { type: string; members?: { name: { value: string }; value: Node }[]; elements?: { value: Node }[] };

function momoaStrict(text: string): unknown {
  const doc = momoaParse(text, { mode: "json" }) as unknown as { body: Node };
  const stack: Node[] = [doc.body];
  while (stack.length) {
    const n = stack.pop()!;
    if (n.type === "Object") {
      const seen = new Set<string>();
      for (const m of n.members!) {
        if (seen.has(m.name.value)) throw new Error("duplicate");
        seen.add(m.name.value);
        stack.push(m.value);
      }
    } else if (n.type === "Array") for (const e of n.elements!) stack.push(e.value);
  }
  return doc;
}

function jsoncStrict(text: string): void {
  const keys: Set<string>[] = [];
  let bad = false;
  visit(
    text,
    {
      onObjectBegin: () => void keys.push(new Set()),
      onObjectEnd: () => void keys.pop(),
      onObjectProperty: (p) => {
        const s = keys[keys.length - 1]!;
        if (s.has(p)) bad = true;
        s.add(p);
      },
      onError: () => {
        bad = true;
      },
    },
    { disallowComments: true, allowTrailingComma: false },
  );
  if (bad) throw new Error("invalid");
}

const inputs: { name: string; text: string }[] = [];
for (const f of [
  "twitter.json",
  "twitterescaped.json",
  "citm_catalog.json",
  "canada.json",
  "numbers.json",
  "github_events.json",
  "update-center.json",
  "twitter_api_compact_response.json",
]) {
  inputs.push({ name: f.replace(/\.json$/, ""), text: readFileSync(join(BENCH_DATA, f), "utf8") });
}
for (const size of [100, 1000, 10_000])
  inputs.push({ name: `call ${size >= 1000 ? `${size / 1000} KB` : `${size} B`}`, text: typicalCall(size, size) });

console.log(`## Strict core vs JSON.parse (${RUNTIME})\n`);
const rows: string[][] = [];
for (const { name, text } of inputs) {
  const bytes = new TextEncoder().encode(text);
  const check = parseStrict(text, BIG);
  if (!check.ok) throw new Error(`${name}: ${check.error.message}`);
  const t = compare(
    [
      { name: "json", fn: () => keep(JSON.parse(text)) },
      { name: "strict", fn: () => keep(parseStrict(text, BIG)) },
      { name: "validate", fn: () => keep(validateStrict(bytes, BIG)) },
      { name: "validateText", fn: () => keep(validateStrict(text, BIG)) },
      { name: "momoa", fn: () => keep(momoaStrict(text)) },
      { name: "jsonc", fn: () => keep(jsoncStrict(text)) },
    ],
    { rounds: bytes.length > 100_000 ? 5 : 7, minMs: 40 },
  );
  const n = bytes.length;
  rows.push([
    name,
    n.toLocaleString("en-US"),
    mbps(n, t.get("json")!),
    mbps(n, t.get("strict")!),
    ratio(t.get("strict")!, t.get("json")!),
    mbps(n, t.get("validate")!),
    ratio(t.get("momoa")!, t.get("strict")!),
    ratio(t.get("jsonc")!, t.get("strict")!),
    ratio(t.get("jsonc")!, t.get("validateText")!),
  ]);
}
table(
  [
    "input",
    "bytes",
    "JSON.parse MB/s",
    "parseStrict MB/s",
    "strict / JSON.parse",
    "validate only MB/s",
    "momoa / strict",
    "jsonc-parser / strict",
    "jsonc-parser / validate(text)",
  ],
  rows,
);
console.log(
  "\nstrict / JSON.parse: time ratio, lower is better (1.00x = free). momoa and jsonc-parser columns: how many times slower the pure-JS strict parsers are (the last one: the jsonc-parser visitor against validateStrict on the same string, validation against validation).",
);
