/**
 * exec's rules, entry by entry: every environment variable on the denylist is
 * refused by the config check (naming the key), by the tool's creation and
 * per call; git's abbreviation rule (an exact option is itself, a prefix of a
 * refused option is refused), checked against real git.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { code, sandbox, type Sandbox } from "../../support/workspace.ts";
import { SEARCH_PATH } from "../../support/procs.ts";
import { parseToolsConfig, ToolsConfigError } from "../../../src/tools/workspace/config.ts";
import { createExecTool } from "../../../src/tools/workspace/exec.ts";
import { checkArguments, ENV_DENYLIST, envDenial, envNameAllowed, FORBIDDEN_ENV } from "../../../src/tools/workspace/rules.ts";

setDefaultTimeout(60_000);

/** A name the entry covers: the name itself, or the prefix with a suffix. */
const sample = (e: { name: string; prefix?: true }) => (e.prefix === true ? `${e.name}X_1` : e.name);

let sb: Sandbox;
beforeAll(() => {
  sb = sandbox(
    { exec: { allow: ["git", "ls"], env: ["PATH", "HOME", "LANG"], isolation: "off", timeout_ms: 20_000 } },
    "agentcore-rules-",
    { searchPath: SEARCH_PATH, warn: () => {} },
  );
});
afterAll(() => sb.cleanup());

describe("the environment denylist, every entry", () => {
  test("each entry has a reason, and names are unique", () => {
    const names = ENV_DENYLIST.map((e) => `${e.name}${e.prefix ? "*" : ""}`);
    expect(new Set(names).size).toBe(names.length);
    for (const e of ENV_DENYLIST) expect(e.reason.length).toBeGreaterThan(10);
    // the list is covered
    for (const n of [
      "TAR_OPTIONS",
      "GCONV_PATH",
      "ZIPOPT",
      "RIPGREP_CONFIG_PATH",
      "LD_PRELOAD",
      "LD_AUDIT",
      "BASH_ENV",
      "ENV",
      "PYTHONSTARTUP",
      "NODE_OPTIONS",
      "PERL5OPT",
      "GIT_SSH_COMMAND",
      "GIT_CONFIG_PARAMETERS",
      "LESSOPEN",
      "PAGER",
      "EDITOR",
    ]) {
      expect(envDenial(n)).not.toBeNull();
    }
  });

  test.each(ENV_DENYLIST.map((e) => [sample(e), e] as const))(
    "%s: refused by the config (naming the key), at creation and per call",
    async (name, entry) => {
      expect(envDenial(name)).toBe(entry.reason);
      expect(envNameAllowed(name)).toBe(false);
      expect(FORBIDDEN_ENV.some((re) => re.test(name))).toBe(true);
      // the config file check names the key, the variable and the reason
      const config = { exec: { allow: ["ls"], env: ["PATH", name] } };
      expect(() => parseToolsConfig(config)).toThrow(ToolsConfigError);
      expect(() => parseToolsConfig(config)).toThrow(
        `"tools.exec.env[1]": environment variable "${name}" can't be allowlisted: ${entry.reason}`,
      );
      // the library refuses it too
      expect(() =>
        createExecTool({ root: sb.root, allow: ["ls"], env: ["PATH", name], searchPath: SEARCH_PATH, isolation: "off", warn: () => {} }),
      ).toThrow(`"${name}" can't be allowlisted`);
      // and a call can't set it
      const env = await sb.call("exec", { argv: ["ls"], env: { [name]: "x" } });
      expect(code(env)).toBe("COMMAND_NOT_ALLOWED");
      expect(env.error?.details).toEqual({ env: name });
    },
  );

  test("docs/workspace-tools.md lists every entry (prefixes as NAME*), and nothing that is not one", () => {
    const docs = fs.readFileSync(path.join(import.meta.dir, "../../../docs/workspace-tools.md"), "utf8");
    const section = docs.slice(docs.indexOf("They are one list, `ENV_DENYLIST`"), docs.indexOf("No list of this kind is complete"));
    const listed = new Set([...section.matchAll(/`([A-Za-z_][A-Za-z0-9_]*\*?)`/g)].map((m) => m[1]!));
    listed.delete("ENV_DENYLIST");
    const entries = ENV_DENYLIST.map((e) => (e.prefix === true ? `${e.name}*` : e.name));
    expect([...listed].sort()).toEqual([...entries].sort());
  });

  test("names that merely resemble entries pass: the prefixes and names are exact", () => {
    for (const n of [
      "LANG",
      "LC_ALL",
      "TERM",
      "TZ",
      "HOME",
      "PATH",
      "XLD_PRELOAD",
      "MY_GIT_THING",
      "ENVIRONMENT",
      "CCACHE_DIR",
      "PAGERX",
      "ZIPPY",
      "TAR_OPTION",
    ]) {
      expect(envDenial(n)).toBeNull();
      expect(() => parseToolsConfig({ exec: { allow: ["ls"], env: [n] } })).not.toThrow();
    }
    expect(() => parseToolsConfig({ exec: { allow: ["ls"], env: ["A-B"] } })).toThrow(
      '"tools.exec.env[0]" must be an environment variable name',
    );
  });
});

describe("git's abbreviation rule", () => {
  test("an exact option of the subcommand is itself; prefixes of refused options stay refused", () => {
    const ok: string[][] = [
      ["diff", "--text"],
      ["diff", "--text", "--stat"],
      ["log", "-p", "--text"],
      ["show", "--text", "HEAD"],
      ["grep", "--text", "x"],
      ["blame", "--text", "f"],
      ["diff", "--stat", "--", "--textconv"],
    ];
    for (const args of ok) expect(() => checkArguments("git", args)).not.toThrow();
    const refused: string[][] = [
      ["diff", "--textc"],
      ["diff", "--textconv"],
      ["diff", "--tex"], // ambiguous between --text and --textconv: refused
      ["diff", "--ext-diff"],
      ["diff", "--ext-d"],
      ["cat-file", "--text", "HEAD:f"], // cat-file has no --text: git reads it as --textconv
      ["cat-file", "--te", "HEAD:f"],
      ["grep", "--textc", "x"],
      ["init", "--t=/somewhere"],
      ["init", "--template=/somewhere"],
      ["log", "--outp=x"],
      ["log", "--output=x"],
    ];
    for (const args of refused) expect(() => checkArguments("git", args)).toThrow(/not allowed/);
  });

  test("through exec: git diff --text runs (and shows a binary change as text); --textc, --textconv, cat-file --text are refused; git diff and show work, without the repository's diff.external", async () => {
    const g = (...a: string[]) => Bun.spawnSync(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", ...a], { cwd: sb.root });
    g("init", "-q");
    fs.writeFileSync(path.join(sb.root, "bin.dat"), "one\0two\n");
    g("add", ".");
    g("commit", "-qm", "x");
    fs.writeFileSync(path.join(sb.root, "bin.dat"), "one\0three\n");
    // a repository's own external diff must not run (exec's git ignores diff.external)
    const marker = path.join(sb.base, "EXTERNAL-DIFF-RAN");
    g("config", "diff.external", `touch ${marker}; true`);
    try {
      // git diff and git show of a change work (an empty diff.external alone made git fail: "cannot run :")
      const plain = await sb.call("exec", { argv: ["git", "diff"] });
      expect(plain.result).toMatchObject({ exit_code: 0, stderr: "" });
      expect((plain.result as { stdout: string }).stdout).toContain("Binary files");
      const show = await sb.call("exec", { argv: ["git", "--no-pager", "show", "--stat", "HEAD"] });
      expect(show.result).toMatchObject({ exit_code: 0, stderr: "" });
      expect(fs.existsSync(marker)).toBe(false);
      const text = await sb.call("exec", { argv: ["git", "diff", "--text"] });
      expect(text.error).toBeNull();
      expect(text.result).toMatchObject({ exit_code: 0 });
      expect((text.result as { stdout: string }).stdout).toContain("+one\0three");
      for (const argv of [
        ["git", "diff", "--textc"],
        ["git", "diff", "--textconv"],
        ["git", "diff", "--ext-diff"],
        ["git", "cat-file", "--text", "HEAD:bin.dat"],
        ["git", "init", `--t=${sb.base}`],
      ]) {
        const env = await sb.call("exec", { argv });
        expect(code(env)).toBe("COMMAND_NOT_ALLOWED");
        expect(env.error?.details).toMatchObject({ argv_index: 2 });
      }
    } finally {
      fs.rmSync(path.join(sb.root, ".git"), { recursive: true, force: true });
    }
  });

  test("plain git reads cat-file --text as --textconv (why it stays refused there)", () => {
    const dir = fs.mkdtempSync(path.join(sb.base, "g-"));
    const g = (...a: string[]) =>
      Bun.spawnSync(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", ...a], {
        cwd: dir,
        env: { PATH: process.env.PATH!, HOME: sb.base },
      });
    g("init", "-q");
    fs.writeFileSync(path.join(dir, "f"), "x\n");
    fs.writeFileSync(path.join(dir, ".gitattributes"), "f diff=up\n");
    g("config", "diff.up.textconv", "tr a-z A-Z <");
    g("add", ".");
    g("commit", "-qm", "x");
    expect(g("cat-file", "--text", "HEAD:f").stdout.toString()).toBe("X\n");
    // and `git diff --text` is the exact option -a, which git does not abbreviate
    expect(g("diff", "--textc").exitCode).not.toBe(0);
  });
});

describe("exec: git option abbreviations down to one letter", () => {
  let sb: Sandbox;
  beforeAll(() => {
    sb = sandbox({ write_file: true, exec: { allow: ["git"], isolation: "off", timeout_ms: 20_000 } }, "agentcore-ws-", {
      searchPath: SEARCH_PATH,
      warn: () => {},
    });
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
    for (const argv of [
      ["git", "init", "--t=tpl", "sub"],
      ["git", "init", "--t", "tpl", "sub"],
      ["git", "init", "--te=tpl", "sub"],
    ]) {
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
    for (const [program, args] of [
      ["git", ["init", "--t=x"]],
      ["git", ["log", "--u=x"]],
      ["tar", ["--t=sh", "-xf", "a.tar"]],
      ["sort", ["--c=sh", "f"]],
    ] as [string, string[]][]) {
      expect(() => checkArguments(program, args)).toThrow(/not allowed/);
    }
    for (const [program, args] of [
      ["git", ["init", "-q", "sub"]],
      ["git", ["log", "--oneline", "-3"]],
      ["git", ["init", "--bare", "x"]],
      ["tar", ["-cf", "a.tar", "x"]],
      ["git", ["log", "--", "--t=x"]],
    ] as [string, string[]][]) {
      expect(() => checkArguments(program, args)).not.toThrow();
    }
  });
});
