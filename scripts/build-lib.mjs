#!/usr/bin/env node
// Builds the npm package's JavaScript: removes what an earlier build of the
// library left in dist/, then emits dist/**/*.js, .d.ts and source maps with
// `tsc -p tsconfig.build.json`. Run by `prepack` (so by `npm pack`).
//
// It removes only its own output (see libOutputs): the folders named after
// src/'s folders and the compiled files at dist/'s top level. Everything else
// in dist/ stays: the binary dist/agentcore (npm run build), the release folder
// dist/release/ (npm run release) and whatever else was put there.
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, rmSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** What tsc writes for a module: the JavaScript, the declarations and their source maps. */
const COMPILED = /\.(js|d\.ts)(\.map)?$/;

/**
 * The entries of `dist` that the library build owns, as absolute paths: each
 * folder of `src` (tsc mirrors it under dist/), and each top-level file of
 * `dist` that tsc writes (`mod.js`, `mod.d.ts`, their maps, and those of a
 * top-level module that no longer exists). Nothing else is listed.
 *
 * @param {string} dist the library's output folder
 * @param {string} src the sources it is compiled from (rootDir)
 * @returns {string[]}
 */
export function libOutputs(dist, src) {
  if (!existsSync(dist)) return [];
  const srcFolders = new Set(readdirSync(src, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? [e.name] : [])));
  return readdirSync(dist)
    .filter((name) => (statSync(join(dist, name)).isDirectory() ? srcFolders.has(name) : COMPILED.test(name)))
    .map((name) => join(dist, name));
}

/**
 * Remove the library's earlier output from `dist` (see {@link libOutputs}).
 *
 * @param {string} dist
 * @param {string} src
 * @returns {string[]} what was removed
 */
export function cleanLib(dist, src) {
  const gone = libOutputs(dist, src);
  for (const path of gone) rmSync(path, { recursive: true, force: true });
  return gone;
}

function main() {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
  cleanLib(join(root, "dist"), join(root, "src"));
  const tsc = join(root, "node_modules/typescript/bin/tsc");
  if (!existsSync(tsc)) {
    console.error("build-lib: typescript is not installed (run npm install)");
    process.exit(2);
  }
  execFileSync(process.execPath, [tsc, "-p", "tsconfig.build.json"], { cwd: root, stdio: "inherit" });
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
