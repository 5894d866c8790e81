/**
 * The read-only workspace tools (list_dir, glob, grep) on a real tree with
 * symlinks pointing outside the root, a .git folder, binary and large files.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { code, OUTSIDE, sandbox, type Sandbox } from "../../support/workspace.ts";
import { Glob, GlobSyntaxError } from "../../../src/tools/workspace/globmatch.ts";
import { tmp } from "../../support/tmp.ts";

// real child processes and files on a machine shared with other jobs: generous per-test limits
setDefaultTimeout(60_000);

let sb: Sandbox;

beforeAll(() => {
  sb = sandbox({ list_dir: { max_entries: 50 }, glob: true, grep: { max_file_bytes: 10_000, timeout_ms: 1500 } });
  const w = (rel: string, content: string | Uint8Array) => {
    fs.mkdirSync(path.dirname(path.join(sb.root, rel)), { recursive: true });
    fs.writeFileSync(path.join(sb.root, rel), content);
  };
  w("README.md", "# Title\nhello world\n");
  w("src/a.ts", "export const a = 1;\n// TODO: fix a\n");
  w("src/b.ts", "export const b = 2;\r\nconst todo = 'todo';\r\n");
  w("src/deep/c.ts", "// TODO deep\n");
  w("src/deep/d.js", "// TODO js\n");
  w(".git/config", "[core]\n# TODO in git config\n");
  w("bin/blob.bin", new Uint8Array([0x54, 0x4f, 0x44, 0x4f, 0, 1, 2]));
  w("bin/latin1.txt", new Uint8Array([0x54, 0x4f, 0x44, 0x4f, 0xe9]));
  w("big.txt", "TODO\n".repeat(3000));
  w("redos.txt", "a".repeat(5000) + "!\n");
  fs.symlinkSync(sb.outside, path.join(sb.root, "outlink"));
  fs.symlinkSync(path.join(sb.outside, "secret.txt"), path.join(sb.root, "src", "secret-link.ts"));
  fs.writeFileSync(path.join(sb.outside, "secret.txt"), `TODO ${OUTSIDE}\n`);
});

afterAll(() => sb.cleanup());

describe("list_dir", () => {
  test("lists the root sorted, with types and file sizes; symlinks are not followed", async () => {
    const env = await sb.call("list_dir", {});
    expect(env.success).toBe(true);
    const r = env.result as { path: string; entries: { name: string; type: string; size?: number }[]; truncated: boolean };
    expect(r.path).toBe(".");
    expect(r.truncated).toBe(false);
    expect(r.entries.map((e) => e.name)).toEqual([".git", "README.md", "big.txt", "bin", "outlink", "redos.txt", "src"]);
    expect(r.entries.find((e) => e.name === "outlink")).toEqual({ name: "outlink", type: "symlink" });
    expect(r.entries.find((e) => e.name === "README.md")).toEqual({ name: "README.md", type: "file", size: 20 });
    expect(r.entries.find((e) => e.name === "src")).toEqual({ name: "src", type: "dir" });
  });

  test("a subfolder; max_entries truncates", async () => {
    const env = await sb.call("list_dir", { path: "src", max_entries: 2 });
    expect(env.result).toEqual({
      path: "src",
      entries: [
        { name: "a.ts", type: "file", size: 35 },
        { name: "b.ts", type: "file", size: 43 },
      ],
      truncated: true,
    });
  });

  test("escapes and non-folders fail with the rooted codes", async () => {
    expect(code(await sb.call("list_dir", { path: "outlink" }))).toBe("PATH_SYMLINK");
    expect(code(await sb.call("list_dir", { path: "outlink/sub" }))).toBe("PATH_SYMLINK");
    expect(code(await sb.call("list_dir", { path: ".." }))).toBe("PATH_TRAVERSAL");
    expect(code(await sb.call("list_dir", { path: sb.outside }))).toBe("PATH_ABSOLUTE");
    expect(code(await sb.call("list_dir", { path: "README.md" }))).toBe("NOT_FOUND");
    expect(code(await sb.call("list_dir", { path: "nope" }))).toBe("NOT_FOUND");
    expect(code(await sb.call("list_dir", { path: 3 }))).toBe("INVALID_ARGUMENTS");
    expect(code(await sb.call("list_dir", { max_entries: 0 }))).toBe("INVALID_ARGUMENTS");
  });
});

describe("glob", () => {
  const g = async (args: Record<string, unknown>) => {
    const env = await sb.call("glob", args);
    expect(env.error).toBeNull();
    return env.result as { matches: string[]; truncated: boolean };
  };

  test("** and *, folders marked with '/', .git skipped, symlinks matched but not entered", async () => {
    expect((await g({ pattern: "**/*.ts" })).matches).toEqual(["src/a.ts", "src/b.ts", "src/deep/c.ts", "src/secret-link.ts"]);
    expect((await g({ pattern: "src/*" })).matches).toEqual(["src/a.ts", "src/b.ts", "src/deep/", "src/secret-link.ts"]);
    expect((await g({ pattern: "**/config" })).matches).toEqual([]);
    expect((await g({ pattern: "outlink/**" })).matches).toEqual(["outlink"]); // ** matches no segment: the link itself, nothing below it
    expect((await g({ pattern: "outlink/*" })).matches).toEqual([]);
    expect((await g({ pattern: "outlink" })).matches).toEqual(["outlink"]);
  });

  test("braces, classes, ?, and a search folder", async () => {
    expect((await g({ pattern: "src/**/*.{js,ts}", path: "src/deep" })).matches).toEqual(["src/deep/c.ts", "src/deep/d.js"]);
    expect((await g({ pattern: "src/[ab].ts" })).matches).toEqual(["src/a.ts", "src/b.ts"]);
    expect((await g({ pattern: "src/[!a].ts" })).matches).toEqual(["src/b.ts"]);
    expect((await g({ pattern: "bi?/*" })).matches).toEqual(["bin/blob.bin", "bin/latin1.txt"]);
  });

  test("max_results truncates", async () => {
    const r = await g({ pattern: "**", max_results: 3 });
    expect(r.matches.length).toBe(3);
    expect(r.truncated).toBe(true);
  });

  test("absolute, '..' and malformed patterns are refused", async () => {
    expect(code(await sb.call("glob", { pattern: "/etc/*" }))).toBe("PATH_ABSOLUTE");
    expect(code(await sb.call("glob", { pattern: "../outside/*" }))).toBe("PATH_TRAVERSAL");
    expect(code(await sb.call("glob", { pattern: "src/../../*" }))).toBe("PATH_TRAVERSAL");
    expect(code(await sb.call("glob", { pattern: "*", path: "../outside" }))).toBe("PATH_TRAVERSAL");
    expect(code(await sb.call("glob", { pattern: "*", path: "outlink" }))).toBe("PATH_SYMLINK");
    const bad = await sb.call("glob", { pattern: "src/[ab" });
    expect(code(bad)).toBe("INVALID_ARGUMENTS");
    expect(bad.error?.message).toContain("unclosed '['");
    expect(code(await sb.call("glob", { pattern: "{a,b" }))).toBe("INVALID_ARGUMENTS");
    expect(code(await sb.call("glob", { pattern: "" }))).toBe("INVALID_ARGUMENTS");
  });
});

describe("glob matcher", () => {
  test("semantics", () => {
    const m = (p: string, s: string) => new Glob(p).matches(s);
    expect(m("*.ts", "a.ts")).toBe(true);
    expect(m("*.ts", "src/a.ts")).toBe(false);
    expect(m("**/a.ts", "a.ts")).toBe(true);
    expect(m("a/**/b", "a/b")).toBe(true);
    expect(m("a/**/b", "a/x/y/b")).toBe(true);
    expect(m("a/**", "a/x/y")).toBe(true);
    expect(m("\\*", "*")).toBe(true);
    expect(m("\\*", "x")).toBe(false);
    expect(m("[a-c]x", "bx")).toBe(true);
    expect(m("[a-c]x", "dx")).toBe(false);
    expect(m("{a,{b,c}}.md", "c.md")).toBe(true);
    expect(m("é?", "éü")).toBe(true);
    expect(() => new Glob("x".repeat(1025))).toThrow(GlobSyntaxError);
    expect(() => new Glob("{a,b}{c,d}{e,f}{g,h}{i,j}{k,l}{m,n}")).toThrow(/more than 64/);
  });

  test("patterns that would backtrack exponentially as regexes finish", () => {
    const name = "a".repeat(250);
    expect(new Glob("*a*a*a*a*a*a*a*a*a*a*b").matches(name)).toBe(false);
    const deep = Array.from({ length: 60 }, () => "a").join("/");
    expect(new Glob("**/**/**/**/**/**/**/b").matches(deep)).toBe(false);
  });
});

describe("grep", () => {
  type R = { matches: { path: string; line: number; text: string }[]; files_searched: number; files_skipped: number; truncated: boolean };
  const grep = async (args: Record<string, unknown>) => {
    const env = await sb.call("grep", args);
    expect(env.error).toBeNull();
    return env.result as R;
  };

  test("reports path, 1-based line and text; skips .git, binary, invalid UTF-8, over-size files and symlinks", async () => {
    const r = await grep({ pattern: "TODO" });
    expect(r.matches).toEqual([
      { path: "src/a.ts", line: 2, text: "// TODO: fix a" },
      { path: "src/deep/c.ts", line: 1, text: "// TODO deep" },
      { path: "src/deep/d.js", line: 1, text: "// TODO js" },
    ]);
    expect(r.files_skipped).toBe(3); // blob.bin (NUL), latin1.txt (not UTF-8), big.txt (over 10 000 bytes)
    expect(r.truncated).toBe(false);
    expect(JSON.stringify(r)).not.toContain(OUTSIDE);
  });

  test("ignore_case, literal, glob filter, CRLF lines, a single file", async () => {
    expect((await grep({ pattern: "todo", ignore_case: true, glob: "src/*.ts" })).matches).toEqual([
      { path: "src/a.ts", line: 2, text: "// TODO: fix a" },
      { path: "src/b.ts", line: 2, text: "const todo = 'todo';" },
    ]);
    expect((await grep({ pattern: "a = 1;", literal: true })).matches).toEqual([
      { path: "src/a.ts", line: 1, text: "export const a = 1;" },
    ]);
    expect((await grep({ pattern: "(", literal: true, path: "README.md" })).matches).toEqual([]);
    expect((await grep({ pattern: "^hello", path: "README.md" })).matches).toEqual([{ path: "README.md", line: 2, text: "hello world" }]);
  });

  test("exactly max_results matches is not truncation", async () => {
    const r = await grep({ pattern: "TODO", max_results: 3 });
    expect(r.matches.length).toBe(3);
    expect(r.truncated).toBe(false);
    const w = await grep({ pattern: "TOD+O", max_results: 3 }); // the worker path
    expect(w).toEqual(r);
    expect((await grep({ pattern: "TODO", max_results: 2 })).truncated).toBe(true);
  });

  test("max_results caps and flags truncation; long lines are cut", async () => {
    const r = await grep({ pattern: "\\w", max_results: 2 });
    expect(r.matches.length).toBe(2);
    expect(r.truncated).toBe(true);
    const long = await grep({ pattern: "^a+!$", path: "redos.txt" });
    expect(long.matches[0]!.text.length).toBe(300);
  });

  test("an invalid regex is INVALID_ARGUMENTS; escapes are refused", async () => {
    const env = await sb.call("grep", { pattern: "([a-" });
    expect(code(env)).toBe("INVALID_ARGUMENTS");
    expect(env.error?.message).toContain("not a valid regular expression");
    expect(code(await sb.call("grep", { pattern: "x", path: "../outside" }))).toBe("PATH_TRAVERSAL");
    expect(code(await sb.call("grep", { pattern: "x", path: "outlink" }))).toBe("PATH_SYMLINK");
    expect(code(await sb.call("grep", { pattern: "x", glob: "/etc/*" }))).toBe("PATH_ABSOLUTE");
    expect(code(await sb.call("grep", { pattern: "x".repeat(1001) }))).toBe("INVALID_ARGUMENTS");
  });

  test("catastrophic backtracking is stopped by the time budget (the worker is terminated)", async () => {
    const env = await sb.call("grep", { pattern: "a*a*a*a*a*b", path: "redos.txt" });
    expect(code(env)).toBe("TIMEOUT");
    expect(env.error?.details).toEqual({ timeout_ms: 1500 });
    // the runtime is still responsive afterwards
    expect((await grep({ pattern: "Title", path: "README.md" })).matches.length).toBe(1);
  });

  test("quantifier-free patterns are matched inline, others in the worker: same results", async () => {
    const { isLinearPattern } = await import("../../../src/tools/workspace/grep.ts");
    expect(isLinearPattern("TODO")).toBe(true);
    expect(isLinearPattern("^(foo|bar)\\b[a-z]\\d$")).toBe(true);
    for (const p of ["a*", "a+", "a?", "a{2}", "(?:x)", "x".repeat(101)]) expect(isLinearPattern(p)).toBe(false);
    const inline = await grep({ pattern: "TODO", ignore_case: true });
    const worker = await grep({ pattern: "TODO{1}", ignore_case: true });
    expect(worker).toEqual(inline);
    expect(inline.matches.length).toBe(4);
  });

  test("cancellation terminates the search", async () => {
    const ac = new AbortController();
    const pending = sb.call("grep", { pattern: "a*a*a*a*a*b", path: "redos.txt" }, ac.signal);
    setTimeout(() => ac.abort(), 50);
    expect(code(await pending)).toBe("CANCELLED");
  });
});

describe("glob pruning", () => {
  test("literal prefix and depth bound which folders are entered", async () => {
    const { worthEntering } = await import("../../../src/tools/workspace/glob.ts");
    const g = (p: string) => new Glob(p);
    expect(g("src/lib/**/*.ts").literalPrefix).toBe("src/lib");
    expect(g("src/a.ts").literalPrefix).toBe("src");
    expect(g("*.md").literalPrefix).toBe("");
    expect(g("{src,lib}/*.ts").literalPrefix).toBe("");
    expect(g("src/*/x").maxSegments).toBe(3);
    expect(g("src/**/x").maxSegments).toBe(Infinity);
    expect(worthEntering(g("src/lib/**/*.ts"), "src")).toBe(true);
    expect(worthEntering(g("src/lib/**/*.ts"), "src/lib/deep/er")).toBe(true);
    expect(worthEntering(g("src/lib/**/*.ts"), "docs")).toBe(false);
    expect(worthEntering(g("src/lib/**/*.ts"), "src/libx")).toBe(false);
    expect(worthEntering(g("*/*.ts"), "a")).toBe(true);
    expect(worthEntering(g("*/*.ts"), "a/b")).toBe(false);
  });

  test("results are the same as an unpruned walk would give", async () => {
    const env = await sb.call("glob", { pattern: "src/deep/*.{ts,js}" });
    expect(env.result).toEqual({ matches: ["src/deep/c.ts", "src/deep/d.js"], truncated: false });
    expect((await sb.call("glob", { pattern: "src/**" })).result).toEqual({
      matches: ["src/", "src/a.ts", "src/b.ts", "src/deep/", "src/deep/c.ts", "src/deep/d.js", "src/secret-link.ts"],
      truncated: false,
    });
    expect((await sb.call("glob", { pattern: "*" })).result).toEqual({
      matches: ["README.md", "big.txt", "bin/", "outlink", "redos.txt", "src/"],
      truncated: false,
    });
  });
});

describe("grep: alternatives in groups are not matched inline", () => {
  test("isLinearPattern: a quantifier or two groups of alternatives go to the worker; words, top-level alternation and one group stay inline", async () => {
    const { isLinearPattern } = await import("../../../src/tools/workspace/grep.ts");
    for (const p of ["(a|a)".repeat(19) + "b", "(a|a)(a|a)b", "((a|b)|c)", "(?:x|y)[)](?:z|w)", "a+", "x{2}"])
      expect(isLinearPattern(p)).toBe(false);
    for (const p of ["TODO", "foo|bar", "(foo)bar", "^(foo|bar|baz)\\b", "[(|]x(y|z)", "\\(a|b\\)(c|d)", "^import ", "a\\.b"])
      expect(isLinearPattern(p)).toBe(true);
  });

  test("under deno run, a runaway match answers TIMEOUT and the process exits: (a|a)x19 b (was matched inline for minutes) and (a+)+$ (the stuck Web Worker kept deno running)", () => {
    const dir = tmp("agentcore-grep-deno-");
    try {
      fs.mkdirSync(path.join(dir, "alt"));
      fs.mkdirSync(path.join(dir, "nest"));
      fs.writeFileSync(path.join(dir, "alt", "a.txt"), ("a".repeat(4000) + "cb\n").repeat(40));
      fs.writeFileSync(path.join(dir, "nest", "a.txt"), ("a".repeat(40) + "!\n").repeat(10));
      const cfg = path.join(dir, "c.jsonc");
      fs.writeFileSync(cfg, JSON.stringify({ root: dir, tools: { grep: { timeout_ms: 1500 } } }));
      const repo = path.join(import.meta.dir, "../../..");
      for (const [pattern, where] of [
        ["(a|a)".repeat(19) + "b", "alt"],
        ["(a+)+$", "nest"],
      ]) {
        const call = JSON.stringify({ id: "g", tool: "grep", arguments: { pattern, path: where } });
        // killed after 100 s at the latest; the assertion is only that it exited by itself with status 1
        const r = Bun.spawnSync(
          [
            path.join(repo, "node_modules/.bin/deno"),
            "run",
            "--allow-read",
            "--allow-env",
            path.join(repo, "src/cli/main.ts"),
            "--config",
            cfg,
            "execute",
            call,
          ],
          { cwd: repo, timeout: 100_000 },
        );
        expect(r.signalCode ?? null).toBeNull();
        expect(r.exitCode).toBe(1);
        expect(JSON.parse(r.stdout.toString()).error).toMatchObject({ code: "TIMEOUT", details: { timeout_ms: 1500 } });
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 240_000);
});
