#!/usr/bin/env node
// Compiles the AssemblyScript core in asm/ and embeds the resulting .wasm bytes
// as base64 in src/core/core-wasm.ts (which is committed on purpose, so that
// the library loads without any file beside it).
//
//   node scripts/build-wasm.mjs          rebuild and rewrite src/core/core-wasm.ts
//   node scripts/build-wasm.mjs --check  rebuild into a temp dir; exit 1 if the
//                                        committed src/core/core-wasm.ts differs
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const entry = "asm/json.ts";
const target = join(root, "src/core/core-wasm.ts");
const check = process.argv.includes("--check");

const ascBin = join(root, "node_modules/assemblyscript/bin/asc.js");
if (!existsSync(ascBin)) {
  console.error("build-wasm: assemblyscript is not installed (run npm install)");
  process.exit(2);
}

const tmp = mkdtempSync(join(tmpdir(), "agentcore-wasm-"));
try {
  const out = join(tmp, "core.wasm");
  const args = [ascBin, entry, "-O3", "--runtime", "stub", "--enable", "simd", "--noAssert", "--outFile", out];
  execFileSync(process.execPath, args, { cwd: root, stdio: ["ignore", "inherit", "inherit"] });
  const bytes = readFileSync(out);
  const b64 = bytes.toString("base64");
  const lines = [];
  for (let i = 0; i < b64.length; i += 100) lines.push(b64.slice(i, i + 100));
  const text =
    "// GENERATED FILE - do not edit. Produced by `node scripts/build-wasm.mjs`\n" +
    "// (npm run build:wasm) from the AssemblyScript sources in asm/.\n" +
    "// `node scripts/build-wasm.mjs --check` verifies it matches the sources.\n" +
    `// ${bytes.length} bytes of WebAssembly, base64-encoded.\n` +
    "export const CORE_WASM_BASE64 =\n" +
    lines.map((l) => `  "${l}"`).join(" +\n") +
    ";\n";
  if (check) {
    const current = existsSync(target) ? readFileSync(target, "utf8") : "";
    if (current !== text) {
      console.error("build-wasm --check: src/core/core-wasm.ts is out of date; run `npm run build:wasm`");
      process.exit(1);
    }
    console.log(`build-wasm --check: ok (${bytes.length} bytes)`);
  } else {
    writeFileSync(target, text);
    console.log(`build-wasm: wrote src/core/core-wasm.ts (${bytes.length} bytes of wasm)`);
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
