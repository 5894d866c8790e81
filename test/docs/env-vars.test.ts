/**
 * Every `AGENTCORE_*` environment variable the README and docs/ name is one
 * the code reads: a string literal, a property (`process.env.NAME`) or a
 * shell expansion (`$NAME`) in src/, scripts/, test/, .ci/ or install.sh,
 * not merely a name in a comment.
 */
import { expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { REPO } from "../support/binary.ts";
import { docPages } from "../support/doc-blocks.ts";

function files(dir: string): string[] {
  const out: string[] = [];
  for (const e of fs.readdirSync(path.join(REPO, dir), { withFileTypes: true })) {
    const rel = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...files(rel));
    else if (/\.(ts|mts|mjs|js|sh)$/.test(e.name) || dir === ".ci") out.push(rel);
  }
  return out;
}

test("every AGENTCORE_* variable the docs name is read by the code", () => {
  const pages = docPages(REPO);
  const named = new Map<string, string>();
  for (const p of pages)
    for (const m of fs.readFileSync(path.join(REPO, p), "utf8").matchAll(/\bAGENTCORE_[A-Z0-9_]+\b/g))
      if (!named.has(m[0])) named.set(m[0], p);
  expect(named.size).toBeGreaterThan(0);
  const code = [...files("src"), ...files("scripts"), ...files("test"), ...files(".ci"), "install.sh"]
    .filter((f) => fs.existsSync(path.join(REPO, f)))
    .map((f) => fs.readFileSync(path.join(REPO, f), "utf8"))
    .join("\n");
  const unread = [...named]
    .filter(([name]) => !new RegExp(`["']${name}["']|\\.${name}\\b|\\$\\{?${name}\\b`).test(code))
    .map(([name, page]) => `${name} (named in ${page})`);
  expect(unread).toEqual([]);
});
