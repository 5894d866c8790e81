/**
 * The README stays true. Its set-up commands are the ones package.json and
 * .ci/run define, the first one's output is what the README says, and every
 * command of its tour runs as written through the compiled binary (in a fresh
 * folder holding the examples and `dist/agentcore`), printing what the README
 * shows under it (`# ` lines; "…" stands for any text).
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

/** A line the README shows matches a line of output; "…" stands for any text. */
function matches(shown: string, actual: string): boolean {
  return new RegExp(
    `^${shown
      .split("…")
      .map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
      .join(".*")}$`,
  ).test(actual);
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

  test("every tour command runs as written and prints what the README shows", () => {
    const blocks = shBlocks(section("Tour"));
    expect(blocks.length).toBeGreaterThanOrEqual(6);
    const d = path.join(work, "tour");
    fs.mkdirSync(path.join(d, "dist"), { recursive: true });
    fs.cpSync(path.join(REPO, "examples"), path.join(d, "examples"), { recursive: true });
    fs.symlinkSync(bin, path.join(d, "dist", "agentcore"));
    const home = path.join(work, "home");
    fs.mkdirSync(home);
    const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home, XDG_STATE_HOME: path.join(home, "state"), TMPDIR: work };
    for (const block of blocks) {
      const lines = block.trimEnd().split("\n");
      const script = lines.filter((l) => !l.startsWith("# ")).join("\n");
      const shown = lines.filter((l) => l.startsWith("# ")).map((l) => l.slice(2));
      expect(shown.length).toBeGreaterThan(0);
      const r = Bun.spawnSync(["sh", "-c", script], { cwd: d, env, timeout: 60_000 });
      const printed = r.stdout.toString().trimEnd().split("\n");
      const ok = printed.length === shown.length && shown.every((s, k) => matches(s, printed[k]!));
      expect({ script, printed, ok }).toEqual({ script, printed, ok: true });
    }
    // the tour leaves no daemon and no log behind, and the chat wrote into its own temp root
    expect(fs.existsSync(path.join(d, "serve.log"))).toBe(false);
    expect(fs.existsSync(path.join(d, "notes.txt"))).toBe(false);
  }, 120_000);
});
