/**
 * exec's git and the repository's own configuration: with only `git`
 * allowlisted, a hostile `.git/config` (and `.gitattributes`, `.git/info/
 * attributes`, files it includes) must not make `git add`/`status`/`diff`/
 * `log -p`/`show`/`stash apply`/`commit` run a program it names. Each attack
 * is first shown to be real with plain git (the marker file appears), then
 * run through exec (the marker never appears; git works or fails clearly).
 * The operator's own drivers (global config) keep running.
 */
import { afterAll, beforeEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { createExecTool } from "../../../src/tools/workspace/exec.ts";
import { gitConfigOverrides, parseScopedConfig } from "../../../src/tools/workspace/rules.ts";
import { ToolError, type ToolContext } from "../../../src/tools/definition.ts";
import { binaryPath } from "../../support/binary.ts";
import { SEARCH_PATH } from "../../support/procs.ts";
import { tmp } from "../../support/tmp.ts";

setDefaultTimeout(60_000);

const base = tmp("agentcore-gitcfg-");
afterAll(() => fs.rmSync(base, { recursive: true, force: true }));

let n = 0;
let root: string;
let home: string;
let marker: string;
let evil: string;

/** A fresh root holding a repository with one commit, a HOME of its own, and a script that records that it ran (and passes stdin through). */
beforeEach(() => {
  const dir = path.join(base, `t${n++}`);
  root = path.join(dir, "root");
  home = path.join(dir, "home");
  fs.mkdirSync(root, { recursive: true });
  fs.mkdirSync(home);
  marker = path.join(dir, "MARKER");
  evil = path.join(dir, "evil.sh");
  fs.writeFileSync(evil, `#!/bin/sh\necho "$0 $*" >> '${marker}'\ncat\n`, { mode: 0o755 });
  fs.writeFileSync(path.join(home, ".gitconfig"), "[user]\n\tname = t\n\temail = t@example.com\n");
  plain(["init", "-q"]);
  fs.writeFileSync(path.join(root, "a.txt"), "one\n");
  plain(["add", "a.txt"]);
  plain(["commit", "-qm", "first"]);
});

/** git run directly (no exec), with the test's HOME: how an unprotected git behaves. */
function plain(args: string[], cwd = root) {
  const r = Bun.spawnSync(["git", ...args], {
    cwd,
    env: { PATH: process.env.PATH!, HOME: home, GIT_CONFIG_NOSYSTEM: "1" },
    stdin: "ignore",
  });
  return { code: r.exitCode, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

function setLocal(key: string, value: string): void {
  expect(plain(["config", key, value]).code).toBe(0);
}

const ctx = (): ToolContext => ({ signal: new AbortController().signal }) as unknown as ToolContext;

type Result = { exit_code: number | null; stdout: string; stderr: string };
async function execGit(args: string[], opts: { cwd?: string } = {}): Promise<Result> {
  const tool = createExecTool({
    root,
    allow: ["git"],
    isolation: "off",
    searchPath: SEARCH_PATH,
    sourceEnv: { PATH: process.env.PATH!, HOME: home },
    warn: () => {},
  });
  return (await tool.handler({ argv: ["git", ...args], ...(opts.cwd !== undefined ? { cwd: opts.cwd } : {}) }, ctx())) as Result;
}

async function refusal(args: string[]): Promise<ToolError> {
  try {
    await execGit(args);
  } catch (e) {
    expect(e).toBeInstanceOf(ToolError);
    return e as ToolError;
  }
  throw new Error("expected a refusal");
}

const ran = () => fs.existsSync(marker);

describe("filters the repository names never run", () => {
  test("a clean filter named x=y (a name -c can't spell): plain git add runs it, exec's git add stores the file as is", async () => {
    fs.writeFileSync(path.join(root, ".gitattributes"), "*.txt filter=x=y\n");
    setLocal("filter.x=y.clean", evil);
    setLocal("filter.x=y.smudge", evil);
    setLocal("filter.x=y.required", "true");
    fs.writeFileSync(path.join(root, "a.txt"), "two\n");
    expect(plain(["add", "a.txt"]).code).toBe(0);
    expect(ran()).toBe(true);
    plain(["reset", "-q"]); // runs the filter too
    fs.rmSync(marker);

    fs.writeFileSync(path.join(root, "a.txt"), "three\n");
    const r = await execGit(["add", "a.txt"]);
    expect(r).toMatchObject({ exit_code: 0, stderr: "" });
    expect(plain(["show", ":a.txt"]).stdout).toBe("three\n");
    const s = await execGit(["status", "--porcelain"]);
    expect(s.exit_code).toBe(0);
    expect(s.stdout).toContain("M  a.txt");
    fs.rmSync(path.join(root, "a.txt"));
    expect((await execGit(["checkout", "--", "a.txt"])).exit_code).toBe(0);
    expect(fs.readFileSync(path.join(root, "a.txt"), "utf8")).toBe("three\n");
    expect(ran()).toBe(false);
  });

  test("a process filter, chosen through .git/info/attributes", async () => {
    fs.mkdirSync(path.join(root, ".git", "info"), { recursive: true });
    fs.writeFileSync(path.join(root, ".git", "info", "attributes"), "*.txt filter=proc\n");
    setLocal("filter.proc.process", evil);
    fs.writeFileSync(path.join(root, "a.txt"), "two\n");
    plain(["add", "a.txt"]); // the script speaks no protocol: git fails, but it ran
    expect(ran()).toBe(true);
    fs.rmSync(marker);

    const r = await execGit(["add", "a.txt"]);
    expect(r.exit_code).toBe(0);
    expect((await execGit(["diff", "--cached", "--stat"])).stdout).toContain("a.txt");
    expect(ran()).toBe(false);
  });

  test("a filter defined in a file that .git/config includes (include.path to a file in the git directory)", async () => {
    fs.writeFileSync(path.join(root, ".git", "inc.cfg"), `[filter "inc"]\n\tclean = ${evil}\n\trequired = true\n`);
    fs.appendFileSync(path.join(root, ".git", "config"), "[include]\n\tpath = inc.cfg\n");
    fs.writeFileSync(path.join(root, ".gitattributes"), "*.txt filter=inc\n");
    fs.writeFileSync(path.join(root, "a.txt"), "two\n");
    expect(plain(["status", "--porcelain"]).code).toBe(0);
    plain(["add", "a.txt"]);
    expect(ran()).toBe(true);
    plain(["reset", "-q"]); // runs the filter too
    fs.rmSync(marker);

    expect((await execGit(["status", "--porcelain"])).exit_code).toBe(0);
    expect((await execGit(["add", "a.txt"])).exit_code).toBe(0);
    expect(plain(["show", ":a.txt"]).stdout).toBe("two\n");
    expect(ran()).toBe(false);
  });

  test("an include of a file in the work tree (which a checkout or stash apply rewrites while git runs) or of one git writes (COMMIT_EDITMSG) is refused, naming the fix", async () => {
    fs.writeFileSync(path.join(root, "inc.cfg"), `[filter "inc"]\n\tclean = ${evil}\n`);
    fs.writeFileSync(path.join(root, ".gitattributes"), "*.txt filter=inc\n");
    for (const [section, target] of [
      ["include", "../inc.cfg"],
      ['includeIf "onbranch:nope"', "../inc.cfg"],
      ["include", "COMMIT_EDITMSG"],
    ] as const) {
      const cfg = path.join(root, ".git", "config");
      const before = fs.readFileSync(cfg, "utf8");
      fs.appendFileSync(cfg, `[${section}]\n\tpath = ${target}\n`);
      if (target === "COMMIT_EDITMSG") fs.writeFileSync(path.join(root, ".git", "COMMIT_EDITMSG"), "first\n");
      const e = await refusal(["status"]);
      expect(e.code).toBe("COMMAND_NOT_ALLOWED");
      expect(e.details).toMatchObject({ reason: "git_config_include_rewritable" });
      expect(e.message).toContain("move them into .git/config or your global git config");
      fs.writeFileSync(cfg, before);
    }
    expect(ran()).toBe(false);

    // the attack is real: the included file is harmless when git starts, git stash apply rewrites it, git's status subprocess runs the filter
    fs.writeFileSync(path.join(root, "inc.cfg"), "# nothing here\n");
    plain(["add", "."]);
    plain(["commit", "-qm", "benign include"]);
    fs.appendFileSync(path.join(root, ".git", "config"), "[include]\n\tpath = ../inc.cfg\n");
    fs.writeFileSync(path.join(root, "inc.cfg"), `[filter "inc"]\n\tclean = ${evil}\n`);
    fs.writeFileSync(path.join(root, "a.txt"), "two\n");
    plain(["stash", "-q"]);
    fs.rmSync(marker, { force: true });
    expect(fs.readFileSync(path.join(root, "inc.cfg"), "utf8")).toBe("# nothing here\n");
    plain(["stash", "apply"]);
    expect(ran()).toBe(true);
    fs.rmSync(marker);
    plain(["checkout", "-q", "--", "."]);
    fs.rmSync(marker, { force: true });
    expect((await refusal(["stash", "apply"])).details).toMatchObject({ reason: "git_config_include_rewritable", key: "include.path" });
    expect(ran()).toBe(false);
  });

  test("a filter from an includeIf onbranch: file, for a branch the command itself switches to (git stash branch, then its git status)", async () => {
    fs.writeFileSync(path.join(root, ".git", "evil.cfg"), `[filter "ob"]\n\tclean = ${evil}\n`);
    fs.appendFileSync(path.join(root, ".git", "config"), '[includeIf "onbranch:evil*"]\n\tpath = evil.cfg\n');
    fs.writeFileSync(path.join(root, ".gitattributes"), "*.txt filter=ob\n");
    plain(["add", ".gitattributes"]);
    plain(["commit", "-qm", "attrs"]);
    const stash = () => {
      fs.writeFileSync(path.join(root, "a.txt"), `changed ${Math.random()}\n`);
      expect(plain(["stash", "-q"]).code).toBe(0);
    };
    stash();
    expect(ran()).toBe(false);
    expect(plain(["stash", "branch", "evil1"]).code).toBe(0);
    expect(ran()).toBe(true);
    fs.rmSync(marker);
    plain(["checkout", "-q", "-f", "master"]);
    fs.rmSync(marker, { force: true });

    stash();
    fs.rmSync(marker, { force: true });
    const r = await execGit(["stash", "branch", "evil2"]);
    expect(r.exit_code).toBe(0);
    expect(ran()).toBe(false);
    expect((await execGit(["status", "--porcelain"])).stdout).toContain(" M a.txt");
    expect(ran()).toBe(false);
  });

  test("a nested repository (a submodule's own config) is not looked into by git status", async () => {
    const sub = path.join(root, "sub");
    fs.mkdirSync(sub);
    plain(["init", "-q"], sub);
    fs.writeFileSync(path.join(sub, "f.txt"), "x\n");
    plain(["add", "."], sub);
    plain(["commit", "-qm", "s"], sub);
    plain(["add", "sub"]);
    plain(["commit", "-qm", "with sub"]);
    fs.writeFileSync(path.join(sub, ".gitattributes"), "*.txt filter=ev\n");
    expect(plain(["config", "filter.ev.clean", evil], sub).code).toBe(0);
    fs.writeFileSync(path.join(sub, "f.txt"), "y\n");
    plain(["status", "--porcelain"]);
    expect(ran()).toBe(true);
    fs.rmSync(marker);

    const r = await execGit(["status", "--porcelain"]);
    expect(r.exit_code).toBe(0);
    expect(ran()).toBe(false);

    // .gitmodules (and the repository's config) asking git to look into it: still not
    fs.writeFileSync(path.join(root, ".gitmodules"), '[submodule "s"]\n\tpath = sub\n\tignore = none\n');
    plain(["status", "--porcelain"]);
    expect(ran()).toBe(true);
    fs.rmSync(marker);
    expect((await execGit(["status", "--porcelain"])).exit_code).toBe(0);
    expect(ran()).toBe(false);
    setLocal("submodule.s.ignore", "none");
    expect((await execGit(["status", "--porcelain"])).exit_code).toBe(0);
    expect((await execGit(["diff", "--stat"])).exit_code).toBe(0);
    expect((await execGit(["commit", "-q", "--allow-empty", "-m", "e"])).exit_code).toBe(0);
    expect((await execGit(["status", "--ignore-submodules=all"])).exit_code).toBe(0);
    expect(ran()).toBe(false);
    for (const args of [
      ["status", "--ignore-submodules=none"],
      ["diff", "--ignore-sub=dirty"],
      ["checkout", "--recurse-submodules", "HEAD"],
      ["grep", "--recurse", "x"],
    ]) {
      const e = await refusal(args);
      expect(e.code).toBe("COMMAND_NOT_ALLOWED");
    }
    expect(ran()).toBe(false);
  });
});

describe("diff and merge drivers", () => {
  test("a textconv driver: plain git log -p and show run it; exec's show the file's own text", async () => {
    fs.writeFileSync(path.join(root, ".gitattributes"), "*.txt diff=tc\n");
    setLocal("diff.tc.textconv", evil);
    setLocal("diff.tc.cachetextconv", "true");
    fs.writeFileSync(path.join(root, "a.txt"), "two\n");
    plain(["add", "."]);
    plain(["commit", "-qm", "second"]);
    expect(plain(["log", "-p", "-1"]).code).toBe(0);
    expect(ran()).toBe(true);
    fs.rmSync(marker);

    const log = await execGit(["log", "-p", "-1", "--format=%s"]);
    expect(log.exit_code).toBe(0);
    expect(log.stdout).toContain("-one\n+two\n");
    const show = await execGit(["show", "--format=", "HEAD", "--", "a.txt"]);
    expect(show.exit_code).toBe(0);
    expect(show.stdout).toContain("+two\n");
    fs.writeFileSync(path.join(root, "a.txt"), "three\n");
    const diff = await execGit(["diff"]);
    expect(diff.exit_code).toBe(0);
    expect(diff.stdout).toContain("-two\n+three\n");
    expect((await execGit(["blame", "a.txt"])).exit_code).toBe(0);
    expect(ran()).toBe(false);
  });

  test("a merge driver, run by git stash apply: exec's stash apply fails without running it", async () => {
    fs.writeFileSync(path.join(root, ".gitattributes"), "*.txt merge=md\n");
    fs.writeFileSync(path.join(root, "a.txt"), "a\nb\nc\n");
    plain(["add", "."]);
    plain(["commit", "-qm", "base"]);
    setLocal("merge.md.driver", `${evil} %A`);
    const conflict = () => {
      fs.writeFileSync(path.join(root, "a.txt"), "a\nX\nc\n");
      plain(["stash", "-q"]);
      fs.writeFileSync(path.join(root, "a.txt"), "a\nY\nc\n");
      plain(["commit", "-qam", "theirs"]);
    };
    conflict();
    plain(["stash", "apply"]);
    expect(ran()).toBe(true);
    fs.rmSync(marker);
    plain(["reset", "-q", "--hard"]);

    const r = await execGit(["stash", "apply"]);
    expect(r.exit_code).not.toBe(0);
    expect(r.stderr).toContain("cannot run");
    expect(fs.readFileSync(path.join(root, "a.txt"), "utf8")).toBe("a\nY\nc\n");
    expect(ran()).toBe(false);
  });
});

describe("signing, ssh, trace2, worktree", () => {
  test("gpg.program with commit.gpgSign: plain git commit runs it; exec's runs the default gpg instead (and says when it fails)", async () => {
    setLocal("gpg.program", evil);
    setLocal("commit.gpgSign", "true");
    plain(["commit", "-q", "--allow-empty", "-m", "signed"]);
    expect(ran()).toBe(true);
    fs.rmSync(marker);

    const r = await execGit(["commit", "-q", "--allow-empty", "-m", "signed?"]);
    expect(ran()).toBe(false);
    // no key in this HOME: git's default gpg fails to sign, and git says so
    if (r.exit_code !== 0) expect(r.stderr).toContain("gpg");
    const plainCommit = await execGit(["commit", "-q", "--allow-empty", "--no-gpg-sign", "-m", "unsigned"]);
    expect(plainCommit.exit_code).toBe(0);
    expect(ran()).toBe(false);
  });

  test("trace2 targets: git itself reads them only from the operator's config (a repository's is ignored, plain or not)", async () => {
    const target = path.join(base, `trace-${n}.json`);
    setLocal("trace2.eventTarget", target);
    expect(plain(["status"]).code).toBe(0);
    expect(fs.existsSync(target)).toBe(false);
    expect((await execGit(["status"])).exit_code).toBe(0);
    expect(fs.existsSync(target)).toBe(false);
  });

  test("core.sshCommand and credential helpers are replaced (no allowed subcommand reaches the network, so this is belt and braces)", () => {
    const listing = [
      ["global", "file:/h/.gitconfig", "credential.helper\nstore"],
      ["local", "file:.git/config", "credential.helper\n!evil"],
      ["local", "file:.git/config", "core.sshcommand\nevil"],
      ["local", "file:.git/config", "remote.o.uploadpack\nevil"],
      ["local", "file:.git/config", "protocol.file.allow\nalways"],
      ["local", "file:.git/config", "core.askpass\nevil"],
    ]
      .map((e) => e.join("\0"))
      .join("\0");
    const out = gitConfigOverrides(parseScopedConfig(`${listing}\0`), { root: "/r", cwd: "/r", cat: "/bin/cat" });
    expect(out).toEqual([
      ["credential.helper", ""],
      ["credential.helper", "store"],
      ["core.sshcommand", ""],
      ["remote.o.uploadpack", ""],
      ["protocol.file.allow", "never"],
      ["core.askpass", ""],
    ]);
  });

  test("core.worktree leading outside the root is refused, naming the key and the fix", async () => {
    const elsewhere = path.join(base, `wt-${n}`);
    fs.mkdirSync(elsewhere);
    setLocal("core.worktree", elsewhere);
    const e = await refusal(["status"]);
    expect(e.code).toBe("COMMAND_NOT_ALLOWED");
    expect(e.details).toMatchObject({ key: "core.worktree", scope: "local" });
    expect(e.message).toContain("git config --unset core.worktree");
    plain(["config", "--unset", "core.worktree"]);
    setLocal("core.worktree", "..");
    expect((await execGit(["status"])).exit_code).toBe(0);
  });
});

describe("the operator's drivers keep running", () => {
  test("a filter from the global config (HOME's .gitconfig) runs, even when the repository redefines it", async () => {
    const ok = path.join(base, `global-ran-${n}`);
    const good = path.join(base, `good-${n}.sh`);
    fs.writeFileSync(good, `#!/bin/sh\necho ran >> '${ok}'\ntr a-z A-Z\n`, { mode: 0o755 });
    fs.appendFileSync(path.join(home, ".gitconfig"), `[filter "lfsish"]\n\tclean = ${good}\n\trequired = true\n`);
    fs.writeFileSync(path.join(root, ".gitattributes"), "*.txt filter=lfsish\n");
    setLocal("filter.lfsish.clean", evil);
    fs.writeFileSync(path.join(root, "a.txt"), "abc\n");
    const r = await execGit(["add", "a.txt"]);
    expect(r.exit_code).toBe(0);
    expect(fs.existsSync(ok)).toBe(true);
    expect(plain(["show", ":a.txt"]).stdout).toBe("ABC\n");
    expect(ran()).toBe(false);
  });
});

describe("through the compiled binary", () => {
  test("agentcore execute git add with a hostile filter: exit 0, file stored as is, nothing run", () => {
    fs.writeFileSync(path.join(root, ".gitattributes"), "*.txt filter=x=y diff=tc\n");
    setLocal("filter.x=y.clean", evil);
    setLocal("filter.x=y.required", "true");
    setLocal("diff.tc.textconv", evil);
    fs.writeFileSync(path.join(root, "a.txt"), "two\n");
    const cfg = path.join(path.dirname(root), "agentcore.json");
    fs.writeFileSync(cfg, JSON.stringify({ root: "./root", tools: { exec: { allow: ["git"], isolation: "off" } } }));
    const run = (args: unknown) => {
      const r = Bun.spawnSync([binaryPath(), "--config", cfg, "execute", JSON.stringify({ id: "t", tool: "exec", arguments: args })], {
        cwd: path.dirname(root),
        stdin: "ignore",
        env: { PATH: process.env.PATH!, HOME: home, NO_COLOR: "1" },
      });
      return { status: r.exitCode, out: JSON.parse(r.stdout.toString()) };
    };
    const add = run({ argv: ["git", "add", "a.txt"] });
    expect(add.status).toBe(0);
    expect(add.out.result).toMatchObject({ exit_code: 0 });
    const diff = run({ argv: ["git", "diff", "--cached"] });
    expect(diff.out.result.stdout).toContain("-one\n+two\n");
    expect(plain(["show", ":a.txt"]).stdout).toBe("two\n");
    expect(ran()).toBe(false);
  }, 180_000);
});
