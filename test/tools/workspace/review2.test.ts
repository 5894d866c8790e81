/**
 * Acceptance-review regressions for the workspace tools (second review):
 * each test failed before the fix it names.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import * as fs from "node:fs";
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
