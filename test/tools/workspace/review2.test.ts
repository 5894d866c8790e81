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

describe("apply_patch: hunks longer than their header", () => {
  let sb: Sandbox;
  beforeAll(() => {
    sb = sandbox({ apply_patch: true }, "agentcore-review2-");
  });
  afterAll(() => sb.cleanup());

  test("a '+', '-' or ' ' line after the counted ones is PATCH_INVALID naming the patch line; nothing is written (it was dropped and the rest applied)", async () => {
    fs.writeFileSync(path.join(sb.root, "p.txt"), "one\ntwo\nthree\n");
    fs.writeFileSync(path.join(sb.root, "q.txt"), "alpha\n");
    const good = "--- a/q.txt\n+++ b/q.txt\n@@ -1 +1 @@\n-alpha\n+ALPHA\n";
    for (const [extra, line] of [["+EXTRA\n three\n", 12], ["-three\n", 12], [" three\n", 12]] as [string, number][]) {
      const patch = good + "--- a/p.txt\n+++ b/p.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+TWO\n" + extra;
      const env = await sb.call("apply_patch", { patch });
      expect(env.error?.code).toBe("PATCH_INVALID");
      expect(env.error?.message).toBe(`patch line ${line}: hunk @@ -1,2 +1,2 @@ has more lines than its header says (2 old, 2 new); correct the counts`);
      expect(fs.readFileSync(path.join(sb.root, "p.txt"), "utf8")).toBe("one\ntwo\nthree\n");
      expect(fs.readFileSync(path.join(sb.root, "q.txt"), "utf8")).toBe("alpha\n");
    }
  });

  test("what may follow a hunk still does: blank lines, the next file, git's headers, a format-patch signature", async () => {
    fs.writeFileSync(path.join(sb.root, "r.txt"), "1\n2\n");
    fs.writeFileSync(path.join(sb.root, "s.txt"), "x\n");
    const patch =
      "From 0000 Mon Sep 17 00:00:00 2001\nSubject: [PATCH] t\n\n---\n" +
      "diff --git a/r.txt b/r.txt\nindex 1..2 100644\n--- a/r.txt\n+++ b/r.txt\n@@ -1,2 +1,2 @@\n 1\n-2\n+two\n" +
      "diff --git a/s.txt b/s.txt\n--- a/s.txt\n+++ b/s.txt\n@@ -1 +1 @@\n-x\n+y\n\n-- \n2.39.5\n\n";
    const env = await sb.call("apply_patch", { patch });
    expect(env.error).toBeNull();
    expect(fs.readFileSync(path.join(sb.root, "r.txt"), "utf8")).toBe("1\ntwo\n");
    expect(fs.readFileSync(path.join(sb.root, "s.txt"), "utf8")).toBe("y\n");
  });
});

describe("apply_patch: paths git writes in quotes", () => {
  let sb: Sandbox;
  beforeAll(() => {
    sb = sandbox({ apply_patch: true }, "agentcore-review2-");
  });
  afterAll(() => sb.cleanup());

  const git = (...args: string[]) => {
    const r = Bun.spawnSync(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", ...args], { cwd: sb.root, env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: sb.base, GIT_CONFIG_NOSYSTEM: "1" } });
    expect(r.exitCode).toBe(0);
    return r.stdout.toString();
  };

  test("a real git diff of non-ASCII and tab names (\"a/caf\\303\\251.txt\") applies, also creating a file; it was refused as a rename, or made a folder named '\"b'", async () => {
    const names = ["café.txt", "tab\tname.txt"];
    git("init", "-q", ".");
    for (const n of names) fs.writeFileSync(path.join(sb.root, n), "old\n");
    git("add", ".");
    git("commit", "-qm", "one");
    for (const n of names) fs.writeFileSync(path.join(sb.root, n), "new\n");
    fs.writeFileSync(path.join(sb.root, "neu-ü.txt"), "created\n");
    git("add", "neu-ü.txt");
    const patch = git("diff", "HEAD");
    expect(patch).toContain('+++ "b/caf\\303\\251.txt"');
    expect(patch).toContain('+++ "b/neu-\\303\\274.txt"');
    expect(patch).toContain('+++ "b/tab\\tname.txt"');
    git("reset", "-q", "--hard", "HEAD");
    expect(fs.existsSync(path.join(sb.root, "neu-ü.txt"))).toBe(false);

    const env = await sb.call("apply_patch", { patch });
    expect(env.error).toBeNull();
    expect((env.result as { files: unknown[] }).files).toEqual([
      { path: "café.txt", action: "modified" },
      { path: "neu-ü.txt", action: "created" },
      { path: "tab\tname.txt", action: "modified" },
    ]);
    for (const n of names) expect(fs.readFileSync(path.join(sb.root, n), "utf8")).toBe("new\n");
    expect(fs.readFileSync(path.join(sb.root, "neu-ü.txt"), "utf8")).toBe("created\n");
    expect(fs.readdirSync(sb.root).filter((n) => n.startsWith('"'))).toEqual([]);
  });

  test("a quoted path that is not UTF-8, has an unknown escape or no closing quote is PATCH_INVALID naming the line", async () => {
    for (const [header, message] of [
      ['--- /dev/null\n+++ "b/x\\377.txt"\n', 'patch line 2: the quoted path "\\"b/x\\\\377.txt\\"" is not UTF-8'],
      ['--- /dev/null\n+++ "b/x\\q.txt"\n', 'patch line 2: unknown escape \\q in the quoted path "\\"b/x\\\\q.txt\\""'],
      ['--- /dev/null\n+++ "b/x.txt\n', 'patch line 2: the quoted path "\\"b/x.txt" has no closing quote'],
    ]) {
      const env = await sb.call("apply_patch", { patch: `${header}@@ -0,0 +1 @@\n+x\n` });
      expect(env.error?.code).toBe("PATCH_INVALID");
      expect(env.error?.message).toBe(message);
    }
    expect(fs.readdirSync(sb.root).filter((n) => n.startsWith('"') || n.startsWith("x"))).toEqual([]);
  });
});

describe("apply_patch edits: overlapping occurrences", () => {
  let sb: Sandbox;
  beforeAll(() => {
    sb = sandbox({ apply_patch: true }, "agentcore-review2-");
  });
  afterAll(() => sb.cleanup());

  test("an 'old' text that occurs twice overlapping (\"aa\" in \"aaa\", a blank line in three) is ambiguous: PATCH_MISMATCH, file unchanged", async () => {
    fs.writeFileSync(path.join(sb.root, "o.txt"), "aaa\n");
    fs.writeFileSync(path.join(sb.root, "b.txt"), "x\n\n\n\ny\n");
    let env = await sb.call("apply_patch", { edits: [{ path: "o.txt", old: "aa", new: "b" }] });
    expect(env.error?.code).toBe("PATCH_MISMATCH");
    expect(env.error?.details).toMatchObject({ occurrences: 2, line: 1 });
    env = await sb.call("apply_patch", { edits: [{ path: "b.txt", old: "\n\n\n", new: "\n\n" }] });
    expect(env.error?.code).toBe("PATCH_MISMATCH");
    expect(env.error?.message).toBe('b.txt: edit 1: "old" text occurs 2 times (lines 1, 2); add surrounding text to make it unique');
    expect(fs.readFileSync(path.join(sb.root, "o.txt"), "utf8")).toBe("aaa\n");
    expect(fs.readFileSync(path.join(sb.root, "b.txt"), "utf8")).toBe("x\n\n\n\ny\n");
    // a unique one still applies
    env = await sb.call("apply_patch", { edits: [{ path: "o.txt", old: "aaa", new: "b" }] });
    expect(env.error).toBeNull();
    expect(fs.readFileSync(path.join(sb.root, "o.txt"), "utf8")).toBe("b\n");
  });
});

describe("grep: alternatives in groups are not matched inline", () => {
  test("isLinearPattern: a quantifier or two groups of alternatives go to the worker; words, top-level alternation and one group stay inline", async () => {
    const { isLinearPattern } = await import("../../../src/tools/workspace/grep.ts");
    for (const p of ["(a|a)".repeat(19) + "b", "(a|a)(a|a)b", "((a|b)|c)", "(?:x|y)[)](?:z|w)", "a+", "x{2}"]) expect(isLinearPattern(p)).toBe(false);
    for (const p of ["TODO", "foo|bar", "(foo)bar", "^(foo|bar|baz)\\b", "[(|]x(y|z)", "\\(a|b\\)(c|d)", "^import ", "a\\.b"]) expect(isLinearPattern(p)).toBe(true);
  });

  test("under deno run, a runaway match answers TIMEOUT and the process exits: (a|a)x19 b (was matched inline for minutes) and (a+)+$ (the stuck Web Worker kept deno running)", () => {
    const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "agentcore-review2-deno-")));
    try {
      fs.mkdirSync(path.join(dir, "alt"));
      fs.mkdirSync(path.join(dir, "nest"));
      fs.writeFileSync(path.join(dir, "alt", "a.txt"), ("a".repeat(4000) + "cb\n").repeat(40));
      fs.writeFileSync(path.join(dir, "nest", "a.txt"), ("a".repeat(40) + "!\n").repeat(10));
      const cfg = path.join(dir, "c.jsonc");
      fs.writeFileSync(cfg, JSON.stringify({ root: dir, tools: { grep: { timeout_ms: 1500 } } }));
      const repo = path.join(import.meta.dir, "../../..");
      for (const [pattern, where] of [["(a|a)".repeat(19) + "b", "alt"], ["(a+)+$", "nest"]]) {
        const call = JSON.stringify({ id: "g", tool: "grep", arguments: { pattern, path: where } });
        // killed after 100 s at the latest; the assertion is only that it exited by itself with status 1
        const r = Bun.spawnSync([path.join(repo, "node_modules/.bin/deno"), "run", "--allow-read", "--allow-env", path.join(repo, "src/cli/main.ts"), "--config", cfg, "execute", call], { cwd: repo, timeout: 100_000 });
        expect(r.signalCode ?? null).toBeNull();
        expect(r.exitCode).toBe(1);
        expect(JSON.parse(r.stdout.toString()).error).toMatchObject({ code: "TIMEOUT", details: { timeout_ms: 1500 } });
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 240_000);
});

describe("write_file and apply_patch: long non-ASCII names", () => {
  let sb: Sandbox;
  beforeAll(() => {
    sb = sandbox({ write_file: true, apply_patch: true }, "agentcore-review2-");
  });
  afterAll(() => sb.cleanup());

  test("a name of 255 UTF-8 bytes (84 CJK characters) can be written and patched; the temp file's name was over the limit (PATH_INVALID 'too long')", async () => {
    const name = "字".repeat(84) + ".md";
    expect(Buffer.byteLength(name)).toBe(255);
    let env = await sb.call("write_file", { path: `d/${name}`, content: "one\n" });
    expect(env.error).toBeNull();
    expect(fs.readFileSync(path.join(sb.root, "d", name), "utf8")).toBe("one\n");
    env = await sb.call("apply_patch", { edits: [{ path: `d/${name}`, old: "one", new: "two" }] });
    expect(env.error).toBeNull();
    expect(fs.readdirSync(path.join(sb.root, "d"))).toEqual([name]);
    expect(fs.readFileSync(path.join(sb.root, "d", name), "utf8")).toBe("two\n");
    // one byte more is the file system's limit, named as such
    env = await sb.call("write_file", { path: `d/${"字".repeat(86)}`, content: "x" });
    expect(env.error?.code).toBe("PATH_INVALID");
  });
});
