/**
 * Acceptance-review regressions for the workspace tools (second review):
 * each test failed before the fix it names.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { sandbox, type Sandbox } from "./helpers.ts";
import { SEARCH_PATH } from "./procs.ts";

setDefaultTimeout(60_000);

describe("exec: git option abbreviations down to one letter", () => {
  let sb: Sandbox;
  beforeAll(() => {
    sb = sandbox(
      { write_file: true, exec: { allow: ["git"], isolation: "off", timeout_ms: 20_000 } },
      "agentcore-review2-",
      { searchPath: SEARCH_PATH, warn: () => {} },
    );
  });
  afterAll(() => sb.cleanup());

  test("git init --t=DIR (= --template) is refused, so a model-written template config can't make git add run a filter", async () => {
    const marker = path.join(sb.root, "sub", "pwned.txt");
    // A template whose config defines a clean filter, and a folder whose .gitattributes uses it.
    for (const [p, content] of [
      ["tpl/config", '[core]\n\trepositoryformatversion = 0\n\tbare = false\n[filter "x"]\n\tclean = sh -c "echo ran > pwned.txt; cat"\n'],
      ["sub/.gitattributes", "* filter=x\n"],
      ["sub/f.txt", "data\n"],
    ]) {
      expect((await sb.call("write_file", { path: p, content })).success).toBe(true);
    }
    for (const argv of [["git", "init", "--t=tpl", "sub"], ["git", "init", "--t", "tpl", "sub"], ["git", "init", "--te=tpl", "sub"]]) {
      const env = await sb.call("exec", { argv });
      expect(env.error?.code).toBe("COMMAND_NOT_ALLOWED");
      expect(env.error?.details).toMatchObject({ argv_index: 2 });
    }
    expect(fs.existsSync(path.join(sb.root, "sub", ".git"))).toBe(false);
    // what the refused call would have led to: git add running the template's filter
    const add = await sb.call("exec", { argv: ["git", "add", "f.txt"], cwd: "sub" });
    expect(add.success).toBe(true);
    expect(fs.existsSync(marker)).toBe(false);
  });

  test("one-letter abbreviations of other denied options are refused too; ordinary options are not", async () => {
    const { checkArguments } = await import("../../../src/tools/workspace/rules.ts");
    for (const [program, args] of [["git", ["init", "--t=x"]], ["git", ["log", "--u=x"]], ["tar", ["--t=sh", "-xf", "a.tar"]], ["sort", ["--c=sh", "f"]]] as [string, string[]][]) {
      expect(() => checkArguments(program, args)).toThrow(/not allowed/);
    }
    for (const [program, args] of [["git", ["init", "-q", "sub"]], ["git", ["log", "--oneline", "-3"]], ["git", ["init", "--bare", "x"]], ["tar", ["-cf", "a.tar", "x"]], ["git", ["log", "--", "--t=x"]]] as [string, string[]][]) {
      expect(() => checkArguments(program, args)).not.toThrow();
    }
  });
});

describe("timeouts a timer can't hold", () => {
  test("a tools timeout_ms above 2^31-1 ms is a config error naming the key (it made grep and git_diff always TIMEOUT and exec kill at 1 ms)", async () => {
    const { parseToolsConfig } = await import("../../../src/tools/workspace/config.ts");
    for (const [tool, settings] of [["grep", {}], ["git_diff", {}], ["exec", { allow: ["ls"] }]] as [string, Record<string, unknown>][]) {
      expect(() => parseToolsConfig({ [tool]: { ...settings, timeout_ms: 3_000_000_000 } })).toThrow(`"tools.${tool}.timeout_ms" must be a positive integer of at most 2147483647`);
      expect(() => parseToolsConfig({ [tool]: { ...settings, timeout_ms: 2_147_483_647 } })).not.toThrow();
    }
  });

  test("the CLI refuses such a config with exit 2 before running anything", () => {
    const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "agentcore-review2-cli-")));
    try {
      fs.writeFileSync(path.join(dir, "a.txt"), "hello\n");
      const cfg = path.join(dir, "c.jsonc");
      fs.writeFileSync(cfg, JSON.stringify({ root: dir, tools: { grep: { timeout_ms: 3_000_000_000 } } }));
      const r = Bun.spawnSync([process.execPath, path.join(import.meta.dir, "../../../src/cli/main.ts"), "--config", cfg, "execute", '{"id":"g","tool":"grep","arguments":{"pattern":"hel+o"}}']);
      expect(r.exitCode).toBe(2);
      expect(r.stderr.toString()).toContain('"tools.grep.timeout_ms" must be a positive integer of at most 2147483647');
      expect(r.stdout.toString()).toBe("");
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test("the library refuses it at creation (RangeError), and 2^31-1 works", async () => {
    const { workspaceTools } = await import("../../../src/tools/workspace/index.ts");
    const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "agentcore-review2-lib-")));
    try {
      for (const o of [{ grep: { timeout_ms: 3_000_000_000 } }, { git_diff: { timeout_ms: 2 ** 31 } }, { exec: { allow: ["ls"], timeout_ms: 2 ** 32, isolation: "off" as const } }]) {
        expect(() => workspaceTools(o, root, { searchPath: SEARCH_PATH, warn: () => {} })).toThrow(RangeError);
      }
      const sb = sandbox({ grep: { timeout_ms: 2_147_483_647 } }, "agentcore-review2-");
      try {
        fs.writeFileSync(path.join(sb.root, "a.txt"), "hello\n");
        const env = await sb.call("grep", { pattern: "hel+o" });
        expect(env.error).toBeNull();
        expect(env.result).toMatchObject({ matches: [{ path: "a.txt", line: 1, text: "hello" }] });
      } finally {
        sb.cleanup();
      }
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});
