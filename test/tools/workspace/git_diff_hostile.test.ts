/**
 * git_diff against hostile repositories (issue 13, items 1 and 2), with real
 * git in temp folders:
 *
 * - programs the repository names (filters under names git's `-c` can't
 *   spell, `process` filters, drivers chosen by `.git/info/attributes`, by
 *   a macro, defined through `include.path`, textconv and external diff
 *   drivers, `diff.external`, `core.fsmonitor`, `core.pager`, hooks) never
 *   run, and the diff still comes back; each attack is checked against plain
 *   git first, so the test proves the attack is real;
 * - `core.worktree`, a `.git` file or symlink, a linked worktree,
 *   alternates and symlinked objects leading outside the root are refused,
 *   and neither the outside file's name nor its content shows in any output;
 * - the repro through the compiled binary, with hostile `GIT_*`
 *   variables in agentcore's own environment;
 * - with a working bubblewrap, git runs inside it.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { binaryPath } from "../../support/binary.ts";
import { gitBwrapArgs } from "../../../src/tools/workspace/gitenv.ts";
import { detectBwrap, pathDirs } from "../../../src/tools/workspace/sandbox.ts";
import { code, sandbox, type Sandbox } from "../../support/workspace.ts";

setDefaultTimeout(120_000);

const MODES: Record<string, unknown>[] = [
  { mode: "status" },
  {},
  { mode: "staged" },
  { mode: "ref", ref: "HEAD" },
  { mode: "ref", ref: "HEAD", stat: true },
];

function gitIn(cwd: string, home: string, ...args: string[]): string {
  const r = Bun.spawnSync(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", ...args], {
    cwd,
    env: { PATH: process.env.PATH!, HOME: home },
  });
  if (r.exitCode !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr.toString()}`);
  return r.stdout.toString();
}

/** A root holding a repository with f.txt committed (and staged g.txt), f.txt then changed in the work tree. */
function repoSandbox(prefix: string, host = {}): Sandbox & { git: (...a: string[]) => string } {
  const sb = sandbox({ git_diff: true }, prefix, host);
  const git = (...a: string[]) => gitIn(sb.root, sb.base, ...a);
  git("init", "-q");
  fs.writeFileSync(path.join(sb.root, "f.txt"), "one\n");
  fs.writeFileSync(path.join(sb.root, "g.txt"), "gee\n");
  git("add", ".");
  git("commit", "-qm", "first");
  fs.writeFileSync(path.join(sb.root, "g.txt"), "gee\nstaged\n");
  git("add", "g.txt");
  fs.writeFileSync(path.join(sb.root, "f.txt"), "one\nchanged\n");
  return Object.assign(sb, { git });
}

/** Every mode's envelope as text (to check nothing leaks, whatever the outcome). */
async function everyMode(sb: Sandbox): Promise<{ texts: string[]; envs: Awaited<ReturnType<Sandbox["call"]>>[] }> {
  const envs = [];
  for (const args of MODES) envs.push(await sb.call("git_diff", args));
  return { texts: envs.map((e) => JSON.stringify(e)), envs };
}

interface Attack {
  name: string;
  /** Set the repository up; `cmd` is a shell command that creates the marker and passes stdin through. */
  arm(sb: Sandbox & { git: (...a: string[]) => string }, cmd: string, marker: string): void;
  /** Plain git, which must run the attack (proves it is real); null when plain git needs a terminal. */
  control: string[][] | null;
}

const attrs = (sb: Sandbox, text: string) => fs.writeFileSync(path.join(sb.root, ".gitattributes"), text);

const ATTACKS: Attack[] = [
  {
    name: "a clean filter named x=y (the issue's spelling: git's -c splits at the first '=')",
    arm: (sb, cmd) => {
      sb.git("config", "filter.x=y.clean", cmd);
      attrs(sb, "*.txt filter=x=y\n");
    },
    control: [["diff"]],
  },
  {
    name: "a clean filter named a.b",
    arm: (sb, cmd) => {
      sb.git("config", "filter.a.b.clean", cmd);
      attrs(sb, "*.txt filter=a.b\n");
    },
    control: [["diff"]],
  },
  {
    name: "a clean filter named q\"=.z (a quote, '=' and a dot)",
    arm: (sb, cmd) => {
      sb.git("config", 'filter.q"=.z.clean', cmd);
      attrs(sb, '*.txt filter=q"=.z\n');
    },
    control: [["diff"]],
  },
  {
    name: "filters named 'with space' and 'x' both defined; the attribute picks the one -c can spell",
    arm: (sb, cmd) => {
      // an attribute value can't hold a space, so a driver named so is never chosen; its neighbour is
      sb.git("config", "filter.with space.clean", cmd);
      sb.git("config", "filter.with.clean", cmd);
      attrs(sb, "*.txt filter=with\n");
    },
    control: [["diff"]],
  },
  {
    name: "a process filter named p=q",
    arm: (sb, cmd) => {
      sb.git("config", "filter.p=q.process", cmd);
      sb.git("config", "filter.p=q.required", "true");
      attrs(sb, "*.txt filter=p=q\n");
    },
    control: [["diff"]],
  },
  {
    name: "a filter chosen by .git/info/attributes, not the work tree",
    arm: (sb, cmd) => {
      sb.git("config", "filter.i=a.clean", cmd);
      fs.writeFileSync(path.join(sb.root, ".git", "info", "attributes"), "*.txt filter=i=a\n");
    },
    control: [["diff"]],
  },
  {
    name: "a filter chosen through a macro attribute",
    arm: (sb, cmd) => {
      sb.git("config", "filter.m=m.clean", cmd);
      attrs(sb, "[attr]evil filter=m=m\n*.txt evil\n");
    },
    control: [["diff"]],
  },
  {
    name: "a filter defined in a file the config includes (include.path, into the work tree)",
    arm: (sb, cmd) => {
      fs.writeFileSync(path.join(sb.root, "evil.cfg"), `[filter "inc=1"]\n\tclean = ${cmd}\n`);
      sb.git("config", "include.path", "../evil.cfg");
      attrs(sb, "*.txt filter=inc=1\n");
    },
    control: [["diff"]],
  },
  {
    name: "a filter defined through includeIf",
    arm: (sb, cmd) => {
      fs.writeFileSync(path.join(sb.base, "cond.cfg"), `[filter "cond"]\n\tclean = ${cmd}\n`);
      sb.git("config", `includeIf.gitdir:${sb.root}/.git.path`, path.join(sb.base, "cond.cfg"));
      attrs(sb, "*.txt filter=cond\n");
    },
    control: [["diff"]],
  },
  {
    name: "a diff driver with textconv, named t=x",
    arm: (sb, cmd) => {
      sb.git("config", "diff.t=x.textconv", cmd); // git appends the file's path: "touch M; cat FILE"
      attrs(sb, "*.txt diff=t=x\n");
    },
    control: [["diff"]],
  },
  {
    name: "a diff driver with an external command",
    arm: (sb, _cmd, marker) => {
      sb.git("config", "diff.ext.command", `touch ${marker}; true`);
      attrs(sb, "*.txt diff=ext\n");
    },
    control: [["diff"]],
  },
  {
    name: "diff.external",
    arm: (sb, _cmd, marker) => sb.git("config", "diff.external", `touch ${marker}; true`),
    control: [["diff"]],
  },
  {
    name: "core.fsmonitor",
    arm: (sb, _cmd, marker) => sb.git("config", "core.fsmonitor", `touch ${marker}; false`),
    control: [["status"]],
  },
  {
    name: "core.pager and pager.diff (plain git pages only on a terminal: no control)",
    arm: (sb, _cmd, marker) => {
      sb.git("config", "core.pager", `touch ${marker}; cat`);
      sb.git("config", "pager.diff", `touch ${marker}; cat`);
      sb.git("config", "pager.status", `touch ${marker}; cat`);
    },
    control: null,
  },
  {
    name: "hooks in a core.hooksPath of the repository's choosing",
    arm: (sb, _cmd, marker) => {
      const hooks = path.join(sb.root, "myhooks");
      fs.mkdirSync(hooks);
      for (const h of ["post-index-change", "reference-transaction", "fsmonitor-watchman"])
        fs.writeFileSync(path.join(hooks, h), `#!/bin/sh\ntouch ${marker}\n`, { mode: 0o755 });
      sb.git("config", "core.hooksPath", hooks);
      sb.git("config", "core.fsmonitor", path.join(hooks, "fsmonitor-watchman"));
    },
    control: [["status"]],
  },
];

/** A search path holding git alone, so git_diff runs git without bubblewrap even where bwrap works. */
let gitOnly: string;
beforeAll(() => {
  gitOnly = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "agentcore-gitonly-")));
  const git = pathDirs()
    .map((d) => path.join(d, "git"))
    .find((p) => fs.existsSync(p))!;
  fs.symlinkSync(git, path.join(gitOnly, "git"));
});
afterAll(() => fs.rmSync(gitOnly, { recursive: true, force: true }));

for (const variant of ["bubblewrap when it works here", "no bubblewrap"]) {
  describe(`git_diff: programs the repository names never run (${variant})`, () => {
    for (const attack of ATTACKS) {
      test(attack.name, async () => {
        const sb = repoSandbox("agentcore-gdattack-", variant === "no bubblewrap" ? { searchPath: [gitOnly] } : {});
        try {
          const marker = path.join(sb.base, "PWNED");
          const cmd = `touch ${marker}; cat`;
          attack.arm(sb, cmd, marker);
          const { envs, texts } = await everyMode(sb);
          expect(fs.existsSync(marker)).toBe(false);
          for (const [i, env] of envs.entries()) expect({ i, error: env.error }).toEqual({ i, error: null });
          const [status, worktree, staged, ref, stat] = envs.map((e) => (e.result as { output: string }).output);
          expect(status).toContain(" M f.txt\n");
          expect(status).toContain("M  g.txt\n");
          expect(worktree).toContain("diff --git a/f.txt b/f.txt");
          expect(worktree).toContain("+changed\n");
          expect(staged).toContain("+staged\n");
          expect(ref).toContain("+changed\n");
          expect(stat).toContain("2 files changed");
          expect(texts.join("")).not.toContain("PWNED");
          // control: the same repository makes plain git run the program
          if (attack.control !== null) {
            for (const argv of attack.control)
              Bun.spawnSync(["git", ...argv], { cwd: sb.root, env: { PATH: process.env.PATH!, HOME: sb.base } });
            expect(fs.existsSync(marker)).toBe(true);
          }
        } finally {
          sb.cleanup();
        }
      });
    }
  });
}

const SECRET_NAME = "secret.txt"; // test/support/workspace.ts puts it in `outside`, next to the root
const SECRET = "OUTSIDE-THE-ROOT";

function expectNoLeak(texts: string[]): void {
  for (const t of texts) {
    expect(t).not.toContain(SECRET_NAME);
    expect(t).not.toContain(SECRET);
    expect(t).not.toContain("TOPSECRET");
  }
}

/** A repository next to the root (in `other/`) with a committed secret. */
function otherRepo(sb: Sandbox): string {
  const other = path.join(sb.base, "other");
  fs.mkdirSync(other);
  fs.writeFileSync(path.join(other, "topsecret-name.txt"), "TOPSECRET content\n");
  gitIn(other, sb.base, "init", "-q");
  gitIn(other, sb.base, "add", ".");
  gitIn(other, sb.base, "commit", "-qm", "secret");
  return other;
}

describe("git_diff: nothing outside the root through the repository's indirections", () => {
  let sb: Sandbox & { git: (...a: string[]) => string };
  beforeAll(() => {
    sb = repoSandbox("agentcore-gdworktree-");
  });
  afterAll(() => sb.cleanup());

  test("core.worktree naming a sibling folder is refused; neither the secret's name nor its content shows", async () => {
    for (const value of [sb.outside, "../../outside"]) {
      sb.git("config", "core.worktree", value);
      const { envs, texts } = await everyMode(sb);
      expectNoLeak(texts);
      for (const env of envs) {
        expect(code(env)).toBe("GIT_FAILED");
        expect(env.error?.details).toMatchObject({ refused: true, reason: "worktree_elsewhere" });
        expect(env.error?.message).toContain("core.worktree");
        expect(env.error?.message).toContain("git config --unset core.worktree");
      }
    }
    sb.git("config", "--unset", "core.worktree");
  });

  test("core.worktree in config.worktree (extensions.worktreeConfig) is refused too", async () => {
    sb.git("config", "core.repositoryformatversion", "1");
    sb.git("config", "extensions.worktreeConfig", "true");
    sb.git("config", "--worktree", "core.worktree", sb.outside);
    try {
      const { envs, texts } = await everyMode(sb);
      expectNoLeak(texts);
      for (const env of envs) expect(env.error?.details).toMatchObject({ reason: "worktree_elsewhere" });
    } finally {
      fs.rmSync(path.join(sb.root, ".git", "config.worktree"));
      sb.git("config", "--unset", "extensions.worktreeConfig");
      sb.git("config", "core.repositoryformatversion", "0");
    }
  });

  test("core.worktree naming the root itself works; one in an included file is not followed", async () => {
    sb.git("config", "core.worktree", sb.root);
    expect((await sb.call("git_diff", {})).result).toMatchObject({ output: expect.stringContaining("+changed\n") });
    sb.git("config", "--unset", "core.worktree");
    fs.writeFileSync(path.join(sb.base, "wt.cfg"), `[core]\n\tworktree = ${sb.outside}\n`);
    sb.git("config", "include.path", path.join(sb.base, "wt.cfg"));
    try {
      const { envs, texts } = await everyMode(sb);
      expectNoLeak(texts);
      expect((envs[0]!.result as { output: string }).output).toContain(" M f.txt\n");
    } finally {
      sb.git("config", "--unset", "include.path");
    }
  });
});

describe("git_diff: a git directory elsewhere is refused", () => {
  test("a .git file pointing to another repository", async () => {
    const sb = sandbox({ git_diff: true }, "agentcore-gdfile-");
    try {
      const other = otherRepo(sb);
      fs.writeFileSync(path.join(sb.root, "mine.txt"), "mine\n");
      for (const target of [path.join(other, ".git"), "../other/.git"]) {
        fs.writeFileSync(path.join(sb.root, ".git"), `gitdir: ${target}\n`);
        const { envs, texts } = await everyMode(sb);
        expectNoLeak(texts);
        expect(texts.join("")).not.toContain("topsecret");
        for (const env of envs) {
          expect(code(env)).toBe("GIT_FAILED");
          expect(env.error?.details).toMatchObject({ refused: true, reason: "gitdir_outside" });
          expect(env.error?.message).toContain("use the main working tree");
        }
      }
    } finally {
      sb.cleanup();
    }
  });

  test("a .git symlink pointing to another repository", async () => {
    const sb = sandbox({ git_diff: true }, "agentcore-gdlink-");
    try {
      const other = otherRepo(sb);
      fs.symlinkSync(path.join(other, ".git"), path.join(sb.root, ".git"));
      const { envs, texts } = await everyMode(sb);
      expectNoLeak(texts);
      expect(texts.join("")).not.toContain("topsecret");
      for (const env of envs) expect(env.error?.details).toMatchObject({ refused: true, reason: "gitdir_outside" });
    } finally {
      sb.cleanup();
    }
  });

  test("a linked worktree (git worktree add) as the root; its main repository as the root works", async () => {
    const sb = sandbox({ git_diff: true }, "agentcore-gdwt-");
    try {
      const other = otherRepo(sb);
      gitIn(other, sb.base, "worktree", "add", "-q", path.join(sb.root, "wt"));
      const tools = await import("../../../src/tools/workspace/index.ts");
      const { createRuntime } = await import("../../../src/runtime/index.ts");
      const { createLogger } = await import("../../../src/core/logger.ts");
      const rt = createRuntime({
        root: path.join(sb.root, "wt"),
        tools: tools.workspaceTools({ git_diff: true }, path.join(sb.root, "wt")),
        logger: createLogger({ level: "error", sink: () => {} }),
      });
      const env = await rt.dispatchCall({ id: "w", tool: "git_diff", arguments: { mode: "status" }, shape: "agentcore" } as never);
      expect(code(env)).toBe("GIT_FAILED");
      expect(env.error?.details).toMatchObject({ refused: true, reason: "gitdir_outside" });
      const main = createRuntime({
        root: other,
        tools: tools.workspaceTools({ git_diff: true }, other),
        logger: createLogger({ level: "error", sink: () => {} }),
      });
      const ok = await main.dispatchCall({ id: "m", tool: "git_diff", arguments: { mode: "status" }, shape: "agentcore" } as never);
      expect(ok.error).toBeNull();
    } finally {
      sb.cleanup();
    }
  });

  test("objects, HEAD or refs from outside (alternates, symlinks out of .git) are refused", async () => {
    const sb = repoSandbox("agentcore-gdalt-");
    try {
      const other = otherRepo(sb);
      const alternates = path.join(sb.root, ".git", "objects", "info", "alternates");
      fs.writeFileSync(alternates, `${path.join(other, ".git", "objects")}\n`);
      let { envs, texts } = await everyMode(sb);
      expectNoLeak(texts);
      for (const env of envs) expect(env.error?.details).toMatchObject({ refused: true, reason: "alternates_outside" });
      fs.rmSync(alternates);
      // a FIFO (reading it would block agentcore itself) is refused, not read
      expect(Bun.spawnSync(["mkfifo", alternates]).exitCode).toBe(0);
      ({ envs, texts } = await everyMode(sb));
      for (const env of envs) expect(env.error?.details).toMatchObject({ refused: true, reason: "alternates_outside" });
      fs.rmSync(alternates);
      const objects = path.join(sb.root, ".git", "objects");
      fs.renameSync(objects, path.join(sb.outside, "objects"));
      fs.symlinkSync(path.join(sb.outside, "objects"), objects);
      ({ envs, texts } = await everyMode(sb));
      expectNoLeak(texts);
      for (const env of envs) expect(env.error?.details).toMatchObject({ refused: true, reason: "gitdir_entry_outside" });
      fs.rmSync(objects);
      fs.renameSync(path.join(sb.outside, "objects"), objects);
      expect((await sb.call("git_diff", {})).error).toBeNull();
      // HEAD and refs leading into the other repository
      for (const name of ["HEAD", "refs", "packed-refs"]) {
        const p = path.join(sb.root, ".git", name);
        const keep = `${p}.keep`;
        if (fs.existsSync(p)) fs.renameSync(p, keep);
        if (name === "packed-refs") fs.writeFileSync(path.join(other, ".git", "packed-refs"), "");
        fs.symlinkSync(path.join(other, ".git", name), p);
        try {
          ({ envs, texts } = await everyMode(sb));
          expectNoLeak(texts);
          for (const env of envs)
            expect({ name, details: env.error?.details }).toMatchObject({
              name,
              details: { refused: true, reason: "gitdir_entry_outside" },
            });
        } finally {
          fs.rmSync(p);
          if (fs.existsSync(keep)) fs.renameSync(keep, p);
        }
      }
    } finally {
      sb.cleanup();
    }
  });

  test.skipIf(process.getuid?.() !== 0)(
    "a repository owned by another user is refused, as git itself would (needs root to chown)",
    async () => {
      const sb = repoSandbox("agentcore-gdowner-");
      try {
        fs.chownSync(path.join(sb.root, ".git"), 4242, 4242);
        const env = await sb.call("git_diff", { mode: "status" });
        expect(env.error?.details).toMatchObject({ refused: true, reason: "dubious_ownership" });
        expect(env.error?.message).toContain("run agentcore as its owner");
      } finally {
        sb.cleanup();
      }
    },
  );
});

describe("git_diff through the compiled binary", () => {
  let base: string;
  beforeAll(() => {
    base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "agentcore-gdbin-")));
  });
  afterAll(() => fs.rmSync(base, { recursive: true, force: true }));

  function agentcore(cwd: string, call: unknown, extraEnv: Record<string, string> = {}) {
    const r = Bun.spawnSync([binaryPath(), "--root", ".", "--tools", "git_diff", "execute", JSON.stringify(call)], {
      cwd,
      env: { PATH: process.env.PATH!, HOME: base, NO_COLOR: "1", ...extraEnv },
    });
    return { status: r.exitCode, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
  }

  test("the issue's repro: a filter named x=y does not run; the diff comes back", () => {
    const repo = path.join(base, "repo");
    fs.mkdirSync(repo);
    fs.writeFileSync(path.join(repo, "f.txt"), "hello\n");
    gitIn(repo, base, "init", "-q");
    gitIn(repo, base, "add", ".");
    gitIn(repo, base, "commit", "-qm", "x");
    gitIn(repo, base, "config", "filter.x=y.clean", "sh -c 'touch PWNED; cat'");
    fs.writeFileSync(path.join(repo, ".gitattributes"), "f.txt filter=x=y\n");
    fs.appendFileSync(path.join(repo, "f.txt"), "world\n");
    // Hostile GIT_* in agentcore's own environment must not reach git either.
    const other = path.join(base, "other");
    fs.mkdirSync(other);
    fs.writeFileSync(path.join(other, "secret.txt"), "OUTSIDE-THE-ROOT\n");
    const hostileEnv = {
      GIT_DIR: path.join(other, ".git"),
      GIT_WORK_TREE: other,
      GIT_CONFIG_PARAMETERS: "'core.fsmonitor'='touch PWNED-ENV; false'",
      GIT_CONFIG_COUNT: "1",
      GIT_CONFIG_KEY_0: "diff.external",
      GIT_CONFIG_VALUE_0: "touch PWNED-ENV; true",
      GIT_EXTERNAL_DIFF: "touch PWNED-ENV; true",
      GIT_PAGER: "touch PWNED-ENV; cat",
    };
    // with bubblewrap when it works here, and with a PATH that holds git alone (no bubblewrap)
    for (const [mode, PATH] of [
      ["status", process.env.PATH!],
      ["worktree", process.env.PATH!],
      ["status", gitOnly],
      ["worktree", gitOnly],
    ] as const) {
      const r = agentcore(repo, { id: "1", tool: "git_diff", arguments: { mode } }, { ...hostileEnv, PATH });
      expect(r.status).toBe(0);
      const env = JSON.parse(r.stdout);
      expect(env.success).toBe(true);
      expect(env.result.output).toContain(mode === "status" ? " M f.txt" : "+world\n");
      expect(r.stdout).not.toContain("secret");
    }
    expect(fs.existsSync(path.join(repo, "PWNED"))).toBe(false);
    expect(fs.existsSync(path.join(repo, "PWNED-ENV"))).toBe(false);
    // control: plain git runs the filter
    Bun.spawnSync(["git", "diff"], { cwd: repo, env: { PATH: process.env.PATH!, HOME: base } });
    expect(fs.existsSync(path.join(repo, "PWNED"))).toBe(true);
  });

  test("core.worktree naming a sibling folder: refused, with the fix named, nothing of the sibling shows", () => {
    const repo = path.join(base, "repo2");
    fs.mkdirSync(repo);
    fs.writeFileSync(path.join(repo, "f.txt"), "hello\n");
    gitIn(repo, base, "init", "-q");
    gitIn(repo, base, "add", ".");
    gitIn(repo, base, "commit", "-qm", "x");
    const sibling = path.join(base, "sibling");
    fs.mkdirSync(sibling);
    fs.writeFileSync(path.join(sibling, "secret.txt"), "OUTSIDE-THE-ROOT\n");
    gitIn(repo, base, "config", "core.worktree", "../../sibling");
    for (const mode of ["status", "worktree", "staged"]) {
      const r = agentcore(repo, { id: "1", tool: "git_diff", arguments: { mode } });
      const env = JSON.parse(r.stdout);
      expect(env.error.code).toBe("GIT_FAILED");
      expect(env.error.details.reason).toBe("worktree_elsewhere");
      expect(r.stdout + r.stderr).not.toContain("secret.txt");
      expect(r.stdout + r.stderr).not.toContain("OUTSIDE-THE-ROOT");
    }
  });
});

const bwrap = detectBwrap(pathDirs());
describe("git_diff under bubblewrap", () => {
  test("bwrap arguments: nothing writable; what lies under the private /tmp (repository, root, private git directory, git) is bound back read-only", () => {
    const args = gitBwrapArgs(
      { top: "/tmp/base/repo", gitdir: "/tmp/base/repo/.git" },
      "/tmp/agentcore-gitdir-x",
      "/tmp/base/repo/sub",
      "/usr/bin/git",
      ["status"],
    ).join(" ");
    expect(args).toContain("--ro-bind / / ");
    expect(args).toContain("--tmpfs /tmp ");
    expect(args).toContain("--ro-bind /tmp/base/repo /tmp/base/repo ");
    expect(args).not.toContain("--ro-bind /tmp/base/repo/.git"); // inside the repository's bind already
    expect(args).toContain("--ro-bind /tmp/agentcore-gitdir-x /tmp/agentcore-gitdir-x ");
    expect(args).toContain("--unshare-all");
    expect(args).toContain("--chdir /tmp/base/repo/sub -- /usr/bin/git status");
    expect(args).not.toMatch(/(^| )--bind /);
    // a repository above /tmp (its root inside /tmp): the root itself is bound back
    const high = gitBwrapArgs({ top: "/", gitdir: "/.git" }, "/tmp/agentcore-gitdir-y", "/tmp/r", "/tmp/tools/git", []).join(" ");
    expect(high).toContain("--ro-bind /tmp/r /tmp/r ");
    expect(high).toContain("--ro-bind /tmp/tools /tmp/tools ");
  });

  test.skipIf(bwrap === null)(
    `git runs inside bwrap when it works here${bwrap === null ? " (SKIPPED: bubblewrap is missing or not working on this machine)" : ""}`,
    async () => {
      const wrapDir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "agentcore-gdbwrap-")));
      const log = path.join(wrapDir, "log");
      try {
        // a bwrap that records its arguments, then runs the real one
        fs.writeFileSync(path.join(wrapDir, "bwrap"), `#!/bin/sh\nprintf '%s\\n' "$*" >> '${log}'\nexec '${bwrap}' "$@"\n`, {
          mode: 0o755,
        });
        const sb = repoSandbox("agentcore-gdiso-", { searchPath: [wrapDir, ...pathDirs()] });
        try {
          sb.git("config", "filter.x=y.clean", `touch ${path.join(sb.base, "PWNED")}; cat`);
          attrs(sb, "*.txt filter=x=y\n");
          const env = await sb.call("git_diff", {});
          expect(env.error).toBeNull();
          expect((env.result as { output: string }).output).toContain("+changed\n");
          const lines = fs
            .readFileSync(log, "utf8")
            .split("\n")
            .filter((l) => l.includes(" diff --no-ext-diff"));
          expect(lines.length).toBe(1);
          expect(lines[0]).toContain("--unshare-all");
          expect(lines[0]).toContain(`--ro-bind ${sb.root} ${sb.root}`);
          expect(lines[0]).not.toMatch(/--bind /);
          expect(fs.existsSync(path.join(sb.base, "PWNED"))).toBe(false);
        } finally {
          sb.cleanup();
        }
      } finally {
        fs.rmSync(wrapDir, { recursive: true, force: true });
      }
    },
  );
});
