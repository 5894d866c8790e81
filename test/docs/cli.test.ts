/**
 * docs/cli.md stays true: its list of commands is the one `agentcore --help`
 * prints, and the shared options in its table are ones the binary takes.
 */
import { beforeAll, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { binaryPath, REPO } from "../support/binary.ts";

let bin: string;
beforeAll(() => {
  bin = binaryPath();
}, 120_000);

const doc = fs.readFileSync(path.join(REPO, "docs/cli.md"), "utf8");

function help(...args: string[]): string {
  const r = Bun.spawnSync([bin, ...args, "--help"], {
    cwd: REPO,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", AGENTCORE_CONFIG: "" },
  });
  expect(r.exitCode).toBe(0);
  return r.stdout.toString();
}

test("the Commands block names exactly the commands of agentcore --help", () => {
  const overview = help();
  const listed = [...overview.slice(overview.indexOf("Commands:")).matchAll(/^ {2}([a-z]+) {2,}/gm)].map((m) => m[1]!);
  expect(listed.length).toBeGreaterThanOrEqual(10);
  const block = /## Commands\n\n```\n([\s\S]*?)```/.exec(doc)![1]!;
  const documented = [...new Set([...block.matchAll(/^agentcore ([a-z]+)/gm)].map((m) => m[1]!))];
  expect(documented.sort()).toEqual([...listed].sort());
});

test("every option in the shared-options table is in the help of a command that takes it", () => {
  const options = [...doc.matchAll(/^\| `(--[a-z-]+)[^`]*` \|/gm)].map((m) => m[1]!);
  expect(options).toEqual(["--root", "--max-input-bytes", "--max-depth", "--config", "--json", "--tools"]);
  const run = help("run");
  for (const o of ["--root", "--max-input-bytes", "--max-depth", "--config"]) expect(run).toContain(o);
  expect(help("tools")).toContain("--json");
  expect(help("agent")).toContain("--tools");
});
