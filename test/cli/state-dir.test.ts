/**
 * `.agentcore/` stays out of `git status`: when agentcore creates the folder
 * (the first `agent --session`), it writes `.agentcore/.gitignore` holding
 * `*`. Through the compiled binary, in real git repositories.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { binaryPath } from "../support/binary.ts";
import { makeStateDir } from "../../src/session/index.ts";
import { tmp } from "../support/tmp.ts";

let work: string;
let bin: string;
let script: string;
const ENV = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: os.tmpdir(), GIT_CONFIG_NOSYSTEM: "1" };

beforeAll(() => {
  work = tmp("agentcore-statedir-");
  bin = binaryPath();
  // outside every repository below, so it never shows in their status
  script = path.join(work, "answer.jsonl");
  fs.writeFileSync(script, JSON.stringify({ content: "done" }) + "\n");
}, 120_000);

afterAll(() => {
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

function sh(cwd: string, cmd: string[]) {
  const r = Bun.spawnSync(cmd, { cwd, stdin: "ignore", env: ENV });
  return { status: r.exitCode ?? -1, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

function repo(name: string): string {
  const d = path.join(work, name);
  fs.mkdirSync(d);
  expect(sh(d, ["git", "init", "-q"]).status).toBe(0);
  return d;
}

function agent(cwd: string, ...extra: string[]) {
  const r = sh(cwd, [bin, "agent", "--session", "S", "--script", script, ...extra, "do it"]);
  expect(r.stderr).toBe("");
  expect(r.status).toBe(0);
}

describe(".agentcore/.gitignore", () => {
  test("a new .agentcore/ gets a .gitignore holding *, and git status stays empty", () => {
    const d = repo("fresh");
    agent(d);
    expect(fs.readFileSync(path.join(d, ".agentcore", ".gitignore"), "utf8")).toBe("*\n");
    expect(fs.readdirSync(path.join(d, ".agentcore", "sessions")).some((n) => n.endsWith(".jsonl"))).toBe(true);
    expect(sh(d, ["git", "status", "--porcelain", "--untracked-files=all"]).stdout).toBe("");
    // a second run in the same folder changes nothing of it
    agent(d);
    expect(fs.readFileSync(path.join(d, ".agentcore", ".gitignore"), "utf8")).toBe("*\n");
    expect(sh(d, ["git", "status", "--porcelain", "--untracked-files=all"]).stdout).toBe("");
  }, 60_000);

  test("--root: the .agentcore/ under the root gets it, the working directory nothing", () => {
    const d = repo("rooted");
    const elsewhere = path.join(work, "elsewhere");
    fs.mkdirSync(elsewhere);
    agent(elsewhere, "--root", d);
    expect(fs.readFileSync(path.join(d, ".agentcore", ".gitignore"), "utf8")).toBe("*\n");
    expect(fs.existsSync(path.join(elsewhere, ".agentcore"))).toBe(false);
    expect(sh(d, ["git", "status", "--porcelain", "--untracked-files=all"]).stdout).toBe("");
  }, 60_000);

  test("an existing .gitignore in .agentcore/ is never replaced; a folder the user made gets none", () => {
    const d = repo("theirs");
    fs.mkdirSync(path.join(d, ".agentcore"));
    fs.writeFileSync(path.join(d, ".agentcore", ".gitignore"), "sessions/\n");
    agent(d);
    expect(fs.readFileSync(path.join(d, ".agentcore", ".gitignore"), "utf8")).toBe("sessions/\n");
    // their rule applies: the journal is ignored, the .gitignore itself is theirs to commit
    expect(sh(d, ["git", "status", "--porcelain", "--untracked-files=all"]).stdout).toBe("?? .agentcore/.gitignore\n");

    const e = repo("skills-only");
    fs.mkdirSync(path.join(e, ".agentcore", "skills"), { recursive: true });
    agent(e);
    expect(fs.existsSync(path.join(e, ".agentcore", ".gitignore"))).toBe(false);
  }, 60_000);

  test("--sessions-dir outside .agentcore writes no .gitignore anywhere", () => {
    const d = repo("custom");
    agent(d, "--sessions-dir", "journals");
    expect(fs.existsSync(path.join(d, ".agentcore"))).toBe(false);
    expect(fs.existsSync(path.join(d, "journals", ".gitignore"))).toBe(false);
    expect(sh(d, ["git", "status", "--porcelain"]).stdout).toBe("?? journals/\n");
  }, 60_000);

  test("sessions commands that only read create nothing", () => {
    const d = repo("readonly");
    expect(sh(d, [bin, "sessions", "list"]).stdout).toBe("no sessions\n");
    expect(sh(d, [bin, "sessions", "recover", "nope"]).status).toBe(2);
    expect(fs.existsSync(path.join(d, ".agentcore"))).toBe(false);
  }, 60_000);
});

describe(".agentcore/.gitignore for the daemon", () => {
  test("serve --state-dir .agentcore/daemon: the folder it creates gets the .gitignore; git status stays empty", async () => {
    const d = repo("daemon");
    const proc = Bun.spawn([bin, "serve", "--port", "0", "--state-dir", ".agentcore/daemon", "--root", d], {
      cwd: d,
      env: ENV,
      stdin: "ignore",
      stdout: "ignore",
      stderr: "pipe",
    });
    let err = "";
    const reader = proc.stderr.getReader();
    const decoder = new TextDecoder();
    try {
      // bounded: the token file line comes once the daemon listens
      for (let i = 0; i < 1000 && !/token file /.test(err); i++) {
        const { value, done } = await reader.read();
        if (done) break;
        err += decoder.decode(value);
      }
      expect(err).toContain("token file ");
      expect(fs.readFileSync(path.join(d, ".agentcore", ".gitignore"), "utf8")).toBe("*\n");
      expect(sh(d, ["git", "status", "--porcelain", "--untracked-files=all"]).stdout).toBe("");
    } finally {
      proc.kill("SIGTERM");
      reader.releaseLock();
      await proc.exited;
    }
  }, 60_000);
});

describe("makeStateDir", () => {
  test("a .agentcore that is a file is an error from mkdir, and nothing is written", () => {
    const d = fs.mkdtempSync(path.join(work, "file-"));
    fs.writeFileSync(path.join(d, ".agentcore"), "not a folder");
    expect(() => makeStateDir(path.join(d, ".agentcore", "sessions"))).toThrow();
    expect(fs.readFileSync(path.join(d, ".agentcore"), "utf8")).toBe("not a folder");
  });

  test("only the .agentcore folders it creates get a .gitignore; folders are 0700", () => {
    const d = fs.mkdtempSync(path.join(work, "dirignore-"));
    makeStateDir(path.join(d, ".agentcore"));
    expect(fs.readFileSync(path.join(d, ".agentcore", ".gitignore"), "utf8")).toBe("*\n");
    const e = fs.mkdtempSync(path.join(work, "nested-"));
    // only the .agentcore folders this call creates get one
    makeStateDir(path.join(e, "a", ".agentcore", "sessions"));
    expect(fs.readFileSync(path.join(e, "a", ".agentcore", ".gitignore"), "utf8")).toBe("*\n");
    expect(fs.existsSync(path.join(e, "a", ".gitignore"))).toBe(false);
    expect(fs.statSync(path.join(e, "a", ".agentcore")).mode & 0o777).toBe(0o700);
  });
});
