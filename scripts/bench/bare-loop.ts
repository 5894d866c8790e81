/**
 * The baseline for `run` throughput: read a JSONL file, JSON.parse and
 * JSON.stringify every non-blank line, write the lines to stdout in 64 KiB
 * blocks. No validation, no dispatch. Used by scripts/bench/run.ts.
 *
 *   bun scripts/bench/bare-loop.ts FILE > /dev/null
 *
 * @module
 */
import { readFileSync, writeSync } from "node:fs";

const file = process.argv[2];
if (!file) throw new Error("usage: bare-loop.ts FILE");
const text = readFileSync(file, "utf8");
let out = "";
for (const line of text.split("\n")) {
  if (line.trim() === "") continue;
  out += JSON.stringify(JSON.parse(line)) + "\n";
  if (out.length > 65536) {
    writeSync(1, out);
    out = "";
  }
}
writeSync(1, out);
