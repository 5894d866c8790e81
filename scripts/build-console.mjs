#!/usr/bin/env node
// Embeds the browser console's script and styles (src/server/console/client/)
// as strings in src/server/console/assets.generated.ts, which is committed on purpose:
// the binary, the library build and Deno then need no loader for text files.
// The script is one ES module kept in parts (SCRIPT_PARTS, joined in order):
// each part uses the names the parts before it define, as one file would.
//
//   node scripts/build-console.mjs          rewrite src/server/console/assets.generated.ts
//   node scripts/build-console.mjs --check  exit 1 if it differs from the sources
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const target = join(root, "src/server/console/assets.generated.ts");
const read = (name) => readFileSync(join(root, "src/server/console/client", name), "utf8");
/** The parts of the console's script, in the order they are joined. */
const SCRIPT_PARTS = ["core.js", "runs.js", "sessions.js", "start.js", "pages.js", "router.js"];
const text =
  "// GENERATED FILE - do not edit. Produced by `node scripts/build-console.mjs`\n" +
  `// from src/server/console/client/ (${SCRIPT_PARTS.join(", ")}, console.css).\n` +
  "// `node scripts/build-console.mjs --check` verifies it matches them.\n\n" +
  "/** The console's script, served at /console/app.js. */\n" +
  `export const CONSOLE_JS: string = ${JSON.stringify(SCRIPT_PARTS.map(read).join("\n"))};\n\n` +
  "/** The console's styles, served at /console/console.css. */\n" +
  `export const CONSOLE_CSS: string = ${JSON.stringify(read("console.css"))};\n`;
if (process.argv.includes("--check")) {
  const current = existsSync(target) ? readFileSync(target, "utf8") : "";
  if (current !== text) {
    console.error("build-console --check: src/server/console/assets.generated.ts is out of date; run `node scripts/build-console.mjs`");
    process.exit(1);
  }
  console.log("build-console --check: ok");
} else {
  writeFileSync(target, text);
  console.log("build-console: wrote src/server/console/assets.generated.ts");
}
