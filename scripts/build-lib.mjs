#!/usr/bin/env node
// Builds the npm package's JavaScript: removes what an earlier build left in
// dist/ (but not the compiled binary dist/agentcore), then emits dist/**/*.js,
// .d.ts and source maps with `tsc -p tsconfig.build.json`. Run by `prepack`.
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const dist = join(root, "dist");
if (existsSync(dist)) {
  for (const name of readdirSync(dist)) if (name !== "agentcore") rmSync(join(dist, name), { recursive: true, force: true });
}
const tsc = join(root, "node_modules/typescript/bin/tsc");
if (!existsSync(tsc)) {
  console.error("build-lib: typescript is not installed (run npm install)");
  process.exit(2);
}
execFileSync(process.execPath, [tsc, "-p", "tsconfig.build.json"], { cwd: root, stdio: "inherit" });
