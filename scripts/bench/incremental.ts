/**
 * Streamed tool-call arguments: incremental validation against re-parsing.
 *
 *   bun scripts/bench/incremental.ts     (or: deno run -A scripts/bench/incremental.ts)
 *
 * A ~100 KB `arguments` text (a file write: code with escapes and some
 * non-ASCII) arrives in 20-byte deltas, as a model stream delivers it. Every
 * contender handles the whole stream:
 * - one-shot: validateStrict on the complete text (the floor), and parseStrict
 *   (validation plus the value, what a caller that waits for the end pays);
 * - JsonStreamValidator: push() per delta, finish() at the end;
 * - JSON.parse per delta: re-parse the accumulated text at every delta with the
 *   native parser (what a naive "is it complete yet?" check does);
 * - partial-json per delta: the `partial-json` package re-parsing the
 *   accumulated text at every delta, as partial-JSON parsers do;
 * - @streamparser/json: a pure-JS streaming tokenizer fed the same deltas.
 *
 * @module
 */
import { parse as partialParse } from "partial-json";
import { JSONParser } from "@streamparser/json";
import { JsonStreamValidator, parseStrict, validateStrict } from "../../src/core/index.ts";
import { compare, keep, RUNTIME, table } from "./lib.ts";

function codeText(bytes: number): string {
  const lines = [
    "export function greet(name: string): string {",
    '  return `Hello, ${name}!`; // "quoted" and \\ backslash',
    "}",
    'const naïve = "café — λ 🙂";',
    '\tif (x < 10 && y > 2) { console.log("tab\tseparated"); }',
  ];
  let out = "";
  for (let i = 0; out.length < bytes; i++) out += lines[i % lines.length] + "\n";
  return out.slice(0, bytes);
}

const args = JSON.stringify({ path: "src/generated/module.ts", content: codeText(100_000), mode: "overwrite", create_dirs: true });
const deltas: string[] = [];
for (let i = 0; i < args.length; i += 20) deltas.push(args.slice(i, i + 20));
const LIMITS = { maxBytes: 1 << 20 };

function incremental(): void {
  const v = new JsonStreamValidator(LIMITS);
  for (const d of deltas) {
    const s = v.push(d);
    if (s.state === "error") throw new Error(s.error.message);
  }
  const f = v.finish();
  if (f.state !== "complete") throw new Error("not complete");
  v.dispose();
}

function reparseNative(): void {
  let acc = "";
  let done = false;
  for (const d of deltas) {
    acc += d;
    try {
      keep(JSON.parse(acc));
      done = true;
    } catch {
      done = false;
    }
  }
  if (!done) throw new Error("not complete");
}

function reparsePartial(): void {
  let acc = "";
  for (const d of deltas) {
    acc += d;
    keep(partialParse(acc));
  }
}

function streamparser(): void {
  const p = new JSONParser({ paths: ["$"] });
  let got = false;
  p.onValue = () => {
    got = true;
  };
  for (const d of deltas) p.write(d);
  // The parser closes itself once the top-level value is complete.
  if (!got) throw new Error("not complete");
}

console.log(`## Incremental validation of streamed arguments (${RUNTIME})\n`);
console.log(`arguments text: ${args.length.toLocaleString("en-US")} characters in ${deltas.length.toLocaleString("en-US")} deltas of 20\n`);
const fast = compare(
  [
    { name: "oneshot", fn: () => keep(validateStrict(args, LIMITS)) },
    { name: "oneshotParse", fn: () => keep(parseStrict(args, LIMITS)) },
    { name: "incremental", fn: incremental },
    { name: "streamparser", fn: streamparser },
  ],
  { rounds: 7, minMs: 100 },
);
const slow = compare(
  [
    { name: "native", fn: reparseNative },
    { name: "partial", fn: reparsePartial },
  ],
  { rounds: 3, minMs: 1 },
);
const inc = fast.get("incremental")!;
const row = (name: string, ms: number) => [name, ms.toFixed(3), `${(ms / inc).toFixed(2)}x`];
table(
  ["contender (whole stream)", "ms", "vs JsonStreamValidator"],
  [
    row("validateStrict, one-shot on the complete text", fast.get("oneshot")!),
    row("parseStrict, one-shot on the complete text", fast.get("oneshotParse")!),
    row("JsonStreamValidator, push per delta", inc),
    row("@streamparser/json, write per delta", fast.get("streamparser")!),
    row("JSON.parse of the accumulated text per delta", slow.get("native")!),
    row("partial-json of the accumulated text per delta", slow.get("partial")!),
  ],
);
console.log(`\nincremental total / one-shot validateStrict: ${(inc / fast.get("oneshot")!).toFixed(2)}x (target: within 2x)`);
console.log(`incremental total / one-shot parseStrict: ${(inc / fast.get("oneshotParse")!).toFixed(2)}x`);
