/**
 * git_diff against a real repository, including one whose own configuration
 * tries to run programs (fsmonitor, clean filter, external diff, textconv,
 * pager): none of them may run through git_diff, while plain git runs them.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { code, sandbox, type Sandbox } from "../../support/workspace.ts";

// real child processes and files on a machine shared with other jobs: generous per-test limits
setDefaultTimeout(60_000);

let sb: Sandbox;
let marker: string;

function git(...args: string[]): string {
  const r = Bun.spawnSync(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", ...args], {
    cwd: sb.root,
    env: { PATH: process.env.PATH!, HOME: sb.base },
  });
  if (r.exitCode !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr.toString()}`);
  return r.stdout.toString();
}

beforeAll(() => {
  sb = sandbox({ git_diff: { max_bytes: 100_000 } }, "agentcore-git-");
  marker = path.join(sb.base, "EXECUTED");
  git("init", "-q");
  fs.writeFileSync(path.join(sb.root, "a.txt"), "one\ntwo\n");
  fs.writeFileSync(path.join(sb.root, "b.txt"), "bee\n");
  git("add", ".");
  git("commit", "-qm", "first");
  git("tag", "v1");
  fs.writeFileSync(path.join(sb.root, "a.txt"), "one\nTWO\n");
  fs.writeFileSync(path.join(sb.root, "b.txt"), "bee\nstaged\n");
  git("add", "b.txt");
  fs.writeFileSync(path.join(sb.root, "new.txt"), "untracked\n");
});

afterAll(() => sb.cleanup());

async function diff(args: Record<string, unknown>) {
  const env = await sb.call("git_diff", args);
  expect(env.error).toBeNull();
  return env.result as { mode: string; output: string; truncated: boolean };
}

describe("git_diff", () => {
  test("status, worktree, staged, against a ref, limited to paths, stat", async () => {
    expect(await diff({ mode: "status" })).toEqual({ mode: "status", output: " M a.txt\nM  b.txt\n?? new.txt\n", truncated: false });
    const wt = await diff({});
    expect(wt.mode).toBe("worktree");
    expect(wt.output).toContain("diff --git a/a.txt b/a.txt");
    expect(wt.output).toContain("-two\n+TWO\n");
    expect(wt.output).not.toContain("b.txt");
    const st = await diff({ mode: "staged" });
    expect(st.output).toContain("+staged\n");
    expect(st.output).not.toContain("a.txt");
    const ref = await diff({ mode: "ref", ref: "v1", paths: ["b.txt"] });
    expect(ref.output).toContain("+staged\n");
    expect(ref.output).not.toContain("a.txt");
    expect((await diff({ mode: "ref", ref: "HEAD", stat: true })).output).toContain("2 files changed");
  });

  test("output is capped", async () => {
    fs.writeFileSync(path.join(sb.root, "a.txt"), "x\n".repeat(100_000));
    const r = await diff({ paths: ["a.txt"] });
    expect(r.truncated).toBe(true);
    expect(r.output).toContain("bytes truncated]");
    fs.writeFileSync(path.join(sb.root, "a.txt"), "one\nTWO\n");
  });

  test("refs and paths are checked; pathspec magic is literal", async () => {
    for (const ref of ["--output=/tmp/x", "-p", "main..evil", "a//b", "HEAD@{1}", "x;rm", "refs/heads/x.lock"]) {
      expect(code(await sb.call("git_diff", { mode: "ref", ref }))).toBe("INVALID_ARGUMENTS");
    }
    expect(code(await sb.call("git_diff", { mode: "ref" }))).toBe("INVALID_ARGUMENTS");
    expect(code(await sb.call("git_diff", { ref: "HEAD" }))).toBe("INVALID_ARGUMENTS");
    expect(code(await sb.call("git_diff", { mode: "bogus" }))).toBe("INVALID_ARGUMENTS");
    expect(code(await sb.call("git_diff", { paths: ["../x"] }))).toBe("PATH_TRAVERSAL");
    expect(code(await sb.call("git_diff", { paths: ["/etc/passwd"] }))).toBe("PATH_ABSOLUTE");
    expect((await diff({ paths: [":(top)a.txt"] })).output).toBe("");
    const bad = await sb.call("git_diff", { mode: "ref", ref: "no-such-ref" });
    expect(code(bad)).toBe("GIT_FAILED");
    expect(bad.error?.details).toMatchObject({ exit_code: 128 });
  });

  test("a hostile repository configuration runs nothing (plain git does run it)", async () => {
    const cmd = `touch ${marker}; cat`;
    git("config", "core.fsmonitor", `touch ${marker}; false`);
    git("config", "core.pager", cmd);
    git("config", "pager.diff", "true");
    git("config", "diff.external", `touch ${marker}; true`);
    git("config", "filter.evil.clean", cmd);
    git("config", "diff.evil.textconv", `touch ${marker}; cat`);
    fs.writeFileSync(path.join(sb.root, ".git", "info", "attributes"), "*.txt filter=evil diff=evil\n");
    fs.writeFileSync(path.join(sb.root, ".git", "hooks", "post-index-change"), `#!/bin/sh\ntouch ${marker}\n`, { mode: 0o755 });
    for (const mode of ["status", "worktree", "staged"]) {
      const env = await sb.call("git_diff", { mode });
      expect(env.success).toBe(true);
      expect(fs.existsSync(marker)).toBe(false);
    }
    expect((await diff({ mode: "ref", ref: "v1", stat: true })).output).toContain("a.txt");
    expect(fs.existsSync(marker)).toBe(false);
    // control: the same repository makes plain git run a program
    Bun.spawnSync(["git", "diff"], { cwd: sb.root, env: { PATH: process.env.PATH!, HOME: sb.base } });
    expect(fs.existsSync(marker)).toBe(true);
  });

  test("a root inside a bigger repository: nothing outside the root shows, names are relative to the root", async () => {
    // sb.base is the repository; its subfolder root/ is the tools' root. Changes outside root/ must not leak.
    const big = sandbox({ git_diff: true }, "agentcore-subroot-");
    try {
      const g = (...a: string[]) => {
        const r = Bun.spawnSync(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", ...a], {
          cwd: big.base,
          env: { PATH: process.env.PATH!, HOME: big.base },
        });
        if (r.exitCode !== 0) throw new Error(r.stderr.toString());
      };
      fs.writeFileSync(path.join(big.root, "in.txt"), "in\n");
      g("init", "-q");
      g("add", ".");
      g("commit", "-qm", "x");
      g("tag", "t0");
      fs.appendFileSync(path.join(big.outside, "secret.txt"), "\nLEAKED CHANGE");
      fs.writeFileSync(path.join(big.base, "untracked-outside.txt"), "x");
      fs.appendFileSync(path.join(big.root, "in.txt"), "more\n");
      const call = async (args: Record<string, unknown>) => {
        const env = await big.call("git_diff", args);
        expect(env.error).toBeNull();
        return (env.result as { output: string }).output;
      };
      expect(await call({ mode: "status" })).toBe(" M in.txt\n");
      const wt = await call({});
      expect(wt).toContain("diff --git a/in.txt b/in.txt");
      expect(await call({ mode: "ref", ref: "t0", stat: true })).toContain("in.txt");
      for (const out of [wt, await call({ mode: "ref", ref: "t0" }), await call({ mode: "ref", ref: "t0", stat: true })]) {
        expect(out).not.toContain("secret");
        expect(out).not.toContain("LEAKED");
        expect(out).not.toContain("root/");
      }
      g("add", "-A");
      expect(await call({ mode: "staged" })).not.toContain("LEAKED");
    } finally {
      big.cleanup();
    }
  });

  test("a folder written to look like a bare repository is not used as one", async () => {
    // No .git in the root: the model writes HEAD, config (a clean filter, a worktree outside), objects/, refs/.
    const bare = sandbox({ git_diff: true }, "agentcore-fakebare-");
    try {
      const mark = path.join(bare.base, "FAKE-BARE-RAN");
      fs.writeFileSync(path.join(bare.root, "HEAD"), "ref: refs/heads/main\n");
      fs.mkdirSync(path.join(bare.root, "objects"));
      fs.mkdirSync(path.join(bare.root, "refs"));
      fs.writeFileSync(
        path.join(bare.root, "config"),
        `[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ${bare.outside}\n[filter "x"]\n\tclean = touch ${mark}; cat\n`,
      );
      fs.writeFileSync(path.join(bare.outside, ".gitattributes"), "* filter=x\n");
      const env = await bare.call("git_diff", { mode: "status" });
      expect(code(env)).toBe("GIT_FAILED");
      expect(JSON.stringify(env)).not.toContain("secret.txt");
      expect(fs.existsSync(mark)).toBe(false);
    } finally {
      bare.cleanup();
    }
  });

  test("a folder that is not a repository is GIT_FAILED", async () => {
    const other = sandbox({ git_diff: true }, "agentcore-nogit-");
    try {
      const env = await other.call("git_diff", { mode: "status" });
      expect(code(env)).toBe("GIT_FAILED");
      expect(env.error?.message).toContain("not a git repository");
    } finally {
      other.cleanup();
    }
  });
});
