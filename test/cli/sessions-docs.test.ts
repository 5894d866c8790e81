/**
 * The fork/rollback examples of `sessions SUB --help`, run as written through
 * the compiled binary in a git repository holding the examples. (The shell
 * blocks of docs/sessions.md run in test/docs/shell-blocks.test.ts.)
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { binaryPath } from "../support/binary.ts";
import { tmp } from "../support/tmp.ts";

const REPO = path.join(import.meta.dir, "../..");
let work: string;
let bin: string;

beforeAll(() => {
  work = tmp("agentcore-sessions-docs-");
  bin = binaryPath();
}, 120_000);

afterAll(() => {
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

function project(name: string): string {
  const d = path.join(work, name);
  fs.mkdirSync(d);
  fs.cpSync(path.join(REPO, "examples"), path.join(d, "examples"), { recursive: true });
  Bun.spawnSync(["git", "init", "-q"], { cwd: d });
  return d;
}

/** Shell words of one command line (the page quotes with double quotes only). */
function words(line: string): string[] {
  return [...line.matchAll(/"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2]!);
}

function run(cwd: string, argv: string[]) {
  const r = Bun.spawnSync([bin, ...argv], { cwd, stdin: "pipe", env: { ...process.env, AGENTCORE_CONFIG: "" }, timeout: 30_000 });
  return { status: r.exitCode ?? -1, out: r.stdout.toString() + r.stderr.toString() };
}

test("sessions fork/rollback --help examples work on a session of one run", () => {
  const d = project("help");
  expect(run(d, ["agent", "--session", "demo", "--script", "examples/agent_script.jsonl", "Read examples/hello.txt"]).status).toBe(0);
  for (const sub of ["fork", "rollback"]) {
    const help = run(d, ["sessions", sub, "--help"]).out;
    const example = help
      .split("\n")
      .map((l) => l.trim())
      .find((l) => l.startsWith(`agentcore sessions ${sub} demo`));
    expect(example).toBeDefined();
    const r = run(d, words(example!).slice(1));
    if (r.status !== 0) throw new Error(`'${example}' failed (exit ${r.status}):\n${r.out}`);
  }
}, 60_000);
