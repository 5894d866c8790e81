/**
 * The README stays true. Its set-up commands are the ones package.json and
 * .ci/run define, the first one's output is what the README says, it is at
 * most 200 lines, and its daemon example cannot hang. Every command of its
 * tour runs as written, printing what the README shows under it, in
 * test/docs/shell-blocks.test.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { binaryPath, REPO } from "../support/binary.ts";
import { tmp } from "../support/tmp.ts";

const readme = fs.readFileSync(path.join(REPO, "README.md"), "utf8");
let work: string;
let bin: string;

beforeAll(() => {
  work = tmp("agentcore-readme-");
  bin = binaryPath();
}, 120_000);

afterAll(() => {
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

/** The text of a `## ` section, up to the next one. */
function section(title: string): string {
  const at = readme.indexOf(`\n## ${title}\n`);
  expect(at).toBeGreaterThan(0);
  const next = readme.indexOf("\n## ", at + 1);
  return readme.slice(at, next === -1 ? undefined : next);
}

/** The fenced `sh` blocks of a text, in order. */
function shBlocks(text: string): string[] {
  return [...text.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

describe("README", () => {
  test("the two set-up commands are the ones package.json and .ci/run define", () => {
    const [setup] = shBlocks(section("Set-up: two commands"));
    const commands = setup!.split("\n").filter((l) => l !== "" && !l.startsWith("#"));
    expect(commands).toEqual(["npm ci && npm run build && ./dist/agentcore run examples/tool_calls.jsonl", "npm ci && npm test"]);
    const pkg = JSON.parse(fs.readFileSync(path.join(REPO, "package.json"), "utf8")) as {
      scripts: Record<string, string>;
      engines: { node: string };
    };
    expect(pkg.scripts.build).toContain("--outfile dist/agentcore");
    expect(pkg.scripts.test).toContain("bun test");
    expect(pkg.engines.node).toBe(">=22.15.0");
    expect(readme).toContain("Node.js 22.15.0 or later");
    const ci = fs.readFileSync(path.join(REPO, ".ci/run"), "utf8");
    expect(ci).toContain("npm ci ");
    expect(ci).toMatch(/^npm test /m);
  });

  test("the first command's run prints nine envelopes and exits 1, as the README says", () => {
    expect(section("Set-up: two commands")).toContain("prints nine envelopes and exits with status 1");
    const r = Bun.spawnSync([bin, "run", "examples/tool_calls.jsonl"], { cwd: REPO, env: { PATH: process.env.PATH ?? "/usr/bin:/bin" } });
    expect(r.exitCode).toBe(1);
    expect(r.stdout.toString().trimEnd().split("\n").length).toBe(9);
  });

  test("is at most 200 lines", () => {
    expect(readme.split("\n").length - (readme.endsWith("\n") ? 1 : 0)).toBeLessThanOrEqual(200);
  });

  test("the daemon example ends, showing serve's log, when the daemon cannot start", () => {
    // (the tour's commands themselves run in test/docs/shell-blocks.test.ts)
    const block = shBlocks(section("Tour")).find((b) => b.includes(" serve "));
    expect(block).toBeDefined();
    const d = path.join(work, "no-daemon");
    fs.mkdirSync(path.join(d, "dist"), { recursive: true });
    // a serve that fails as a taken port makes it fail: a message on stderr, exit 2
    fs.writeFileSync(path.join(d, "dist", "agentcore"), "#!/bin/sh\necho 'agentcore serve: cannot listen: port in use' >&2\nexit 2\n", {
      mode: 0o755,
    });
    const r = Bun.spawnSync(["bash", "-c", block!], { cwd: d, env: { PATH: process.env.PATH ?? "/usr/bin:/bin" }, timeout: 20_000 });
    expect(r.signalCode ?? null).toBeNull();
    expect(r.stdout.toString()).toContain("agentcore serve: cannot listen: port in use");
  }, 30_000);
});
