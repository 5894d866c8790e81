/**
 * git_diff as an attacker sees it, through the compiled binary: the helpers
 * agentcore runs itself (git_diff's git, and bubblewrap for exec and git_diff)
 * are never taken from a PATH entry inside the root, where the repository (or
 * write_file) can put a program of its own; symlinks deep inside .git and a
 * crafted index never show what lies outside the root.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { binaryPath } from "../../support/binary.ts";

let base: string;
let root: string;

beforeAll(() => {
  base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "agentcore-gitdiff-cli-")));
  root = path.join(base, "root");
  fs.mkdirSync(root);
});
afterAll(() => fs.rmSync(base, { recursive: true, force: true }));

function run(argv: string[], extraEnv: Record<string, string> = {}) {
  const r = Bun.spawnSync(argv, { cwd: base, stdin: "ignore", env: { PATH: process.env.PATH!, HOME: base, NO_COLOR: "1", ...extraEnv } });
  return { status: r.exitCode, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

function git(cwd: string, ...args: string[]) {
  const r = Bun.spawnSync(["git", "-c", "user.email=a@b", "-c", "user.name=a", ...args], {
    cwd,
    env: { PATH: process.env.PATH!, HOME: base },
  });
  if (r.exitCode !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr.toString()}`);
}

/** An executable script at `root/bin/NAME` that leaves `marker`, prints `said` and hands over to the real program. */
function plant(name: string, marker: string, said: string, real: string) {
  fs.mkdirSync(path.join(root, "bin"), { recursive: true });
  const p = path.join(root, "bin", name);
  fs.writeFileSync(p, `#!/bin/sh\ntouch '${marker}'\nprintf '${said}'\nexec '${real}' "$@"\n`);
  fs.chmodSync(p, 0o755);
}

const which = (name: string) => Bun.which(name);

describe("helpers on a PATH entry inside the root never run", () => {
  test("git_diff does not run the repository's own bin/git (PATH holds root/bin first)", () => {
    git(root, "init", "-q");
    fs.writeFileSync(path.join(root, "f.txt"), "a\n");
    git(root, "add", "f.txt");
    git(root, "commit", "-qm", "one");
    fs.writeFileSync(path.join(root, "f.txt"), "a\nb\n");
    const marker = path.join(base, "REPO-GIT-RAN");
    plant("git", marker, "REPO-GIT-SAID\\n", which("git")!);
    const r = run(
      [binaryPath(), "--root", root, "--tools", "git_diff", "execute", JSON.stringify({ id: "1", tool: "git_diff", arguments: {} })],
      {
        PATH: `${path.join(root, "bin")}:${process.env.PATH!}`,
      },
    );
    expect(r.stdout).not.toContain("REPO-GIT-SAID");
    expect(fs.existsSync(marker)).toBe(false);
    const out = JSON.parse(r.stdout);
    expect(out.success).toBe(true);
    expect(out.result.output).toContain("+b");
    fs.rmSync(path.join(root, "bin"), { recursive: true, force: true });
  }, 120_000);

  test.skipIf(which("bwrap") === null)(
    "exec and git_diff do not run a bwrap found inside the root",
    () => {
      const marker = path.join(base, "REPO-BWRAP-RAN");
      plant("bwrap", marker, "", which("bwrap")!);
      const cfg = path.join(base, "cfg.json");
      fs.writeFileSync(cfg, JSON.stringify({ tools: { exec: { allow: ["ls"] } } }));
      for (const tool of ["exec", "git_diff"]) {
        const args = tool === "exec" ? { argv: ["ls"] } : {};
        const r = run(
          [binaryPath(), "--root", root, "--tools", tool, "--config", cfg, "execute", JSON.stringify({ id: "1", tool, arguments: args })],
          {
            PATH: `${path.join(root, "bin")}:${process.env.PATH!}`,
          },
        );
        expect(JSON.parse(r.stdout).success).toBe(true);
        expect(fs.existsSync(marker)).toBe(false);
      }
      fs.rmSync(path.join(root, "bin"), { recursive: true, force: true });
    },
    120_000,
  );
});

describe("git_diff: symlinks deep inside .git", () => {
  /** git_diff without bubblewrap (its private /tmp would hide a secret under the temp folder anyway): git alone on the search path. */
  async function gitDiff(rootDir: string, args: Record<string, unknown>) {
    const only = path.join(base, "git-only");
    fs.mkdirSync(only, { recursive: true });
    if (!fs.existsSync(path.join(only, "git"))) fs.symlinkSync(which("git")!, path.join(only, "git"));
    const { createGitDiffTool } = await import("../../../src/tools/workspace/git_diff.ts");
    const tool = createGitDiffTool({ root: rootDir, searchPath: [only] });
    try {
      return { ok: true as const, value: await tool.handler(args as never, { signal: new AbortController().signal } as never) };
    } catch (e) {
      return { ok: false as const, error: e as { code?: string; message: string; details?: Record<string, unknown> } };
    }
  }

  test("a pack linked from another repository (with a ref naming its commit) is refused; its content never shows", async () => {
    const secret = path.join(base, "secret");
    fs.mkdirSync(secret);
    git(secret, "init", "-q");
    fs.writeFileSync(path.join(secret, "s.txt"), "TOPSECRET\n");
    git(secret, "add", ".");
    git(secret, "commit", "-qm", "s");
    git(secret, "gc", "-q");
    const commit = Bun.spawnSync(["git", "rev-parse", "HEAD"], { cwd: secret }).stdout.toString().trim();

    const hostile = path.join(base, "hostile");
    fs.mkdirSync(hostile);
    git(hostile, "init", "-q");
    fs.writeFileSync(path.join(hostile, "s.txt"), "a\n");
    git(hostile, "add", ".");
    git(hostile, "commit", "-qm", "i");
    const packs = path.join(secret, ".git", "objects", "pack");
    for (const f of fs.readdirSync(packs)) fs.symlinkSync(path.join(packs, f), path.join(hostile, ".git", "objects", "pack", f));
    fs.writeFileSync(path.join(hostile, ".git", "refs", "heads", "x"), `${commit}\n`);

    const r = await gitDiff(hostile, { mode: "ref", ref: "x" });
    expect(JSON.stringify(r)).not.toContain("TOPSECRET");
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.error.code).toBe("GIT_FAILED");
      expect(r.error.details?.reason).toBe("gitdir_entry_outside");
      expect(r.error.message).toContain("objects/pack/pack-");
    }

    // a ref that is a symlink to another repository's ref: refused too
    for (const f of fs.readdirSync(path.join(hostile, ".git", "objects", "pack")))
      fs.rmSync(path.join(hostile, ".git", "objects", "pack", f));
    fs.rmSync(path.join(hostile, ".git", "refs", "heads", "x"));
    fs.symlinkSync(path.join(secret, ".git", "packed-refs"), path.join(hostile, ".git", "refs", "heads", "y"));
    const y = await gitDiff(hostile, { mode: "status" });
    expect(y.ok).toBe(false);
    if (!y.ok) expect(y.error.message).toContain("refs/heads/y");

    // a link out behind a link to a folder inside the repository: objects/pack, or objects itself, linked to a folder of the work tree
    fs.rmSync(path.join(hostile, ".git", "refs", "heads", "y"));
    const stash = path.join(hostile, "stash");
    fs.mkdirSync(stash);
    const real = path.join(hostile, ".git", "objects", "pack");
    for (const f of fs.readdirSync(real)) fs.renameSync(path.join(real, f), path.join(stash, f));
    for (const f of fs.readdirSync(packs)) fs.symlinkSync(path.join(packs, f), path.join(stash, f));
    fs.rmdirSync(real);
    fs.symlinkSync("../../stash", real);
    fs.writeFileSync(path.join(hostile, ".git", "refs", "heads", "x"), `${commit}\n`);
    for (const attempt of ["pack linked", "objects linked"]) {
      if (attempt === "objects linked") {
        fs.rmSync(real);
        fs.mkdirSync(real);
        fs.renameSync(path.join(hostile, ".git", "objects"), path.join(hostile, "objs"));
        fs.symlinkSync("../objs", path.join(hostile, ".git", "objects"));
        fs.rmSync(path.join(hostile, "objs", "pack"), { recursive: true });
        fs.symlinkSync("../stash", path.join(hostile, "objs", "pack"));
      }
      const z = await gitDiff(hostile, { mode: "ref", ref: "x" });
      expect([attempt, JSON.stringify(z).includes("TOPSECRET")]).toEqual([attempt, false]);
      expect([attempt, z.ok]).toEqual([attempt, false]);
      if (!z.ok) {
        expect(z.error.details?.reason).toBe("gitdir_entry_outside");
        expect(String(z.error.details?.path)).toContain(path.join(hostile, "stash", "pack-"));
      }
    }
    fs.rmSync(path.join(hostile, ".git", "objects"));
    fs.renameSync(path.join(hostile, "objs"), path.join(hostile, ".git", "objects"));
    fs.rmSync(path.join(hostile, ".git", "objects", "pack"));
    fs.mkdirSync(path.join(hostile, ".git", "objects", "pack"));
    for (const f of fs.readdirSync(stash))
      if (!fs.lstatSync(path.join(stash, f)).isSymbolicLink())
        fs.renameSync(path.join(stash, f), path.join(hostile, ".git", "objects", "pack", f));
    fs.rmSync(stash, { recursive: true });
    fs.rmSync(path.join(hostile, ".git", "refs", "heads", "x"));

    // symlinks that stay inside the repository are fine
    const head = fs.readFileSync(
      path.join(hostile, ".git", "refs", "heads", fs.readdirSync(path.join(hostile, ".git", "refs", "heads"))[0]!),
      "utf8",
    );
    fs.writeFileSync(path.join(hostile, ".git", "refs", "heads", "real"), head);
    fs.symlinkSync("real", path.join(hostile, ".git", "refs", "heads", "alias"));
    const ok = await gitDiff(hostile, { mode: "ref", ref: "alias" });
    expect(ok.ok).toBe(true);
  }, 120_000);
});

describe("git_diff: a crafted index", () => {
  test("an index entry ../../…/etc/passwd (checksum fixed up) is refused through the binary; the outside file never shows", () => {
    const repo = path.join(base, "idx", "repo");
    fs.mkdirSync(repo, { recursive: true });
    git(repo, "init", "-q");
    // /etc/passwd from the repository (visible inside bubblewrap too): a name of the same length, added, then rewritten in the index
    const evil = path.relative(repo, "/etc/passwd");
    const fake = evil.replaceAll("../", "aa/");
    fs.mkdirSync(path.join(repo, path.dirname(fake)), { recursive: true });
    fs.writeFileSync(path.join(repo, fake), "fake\n");
    git(repo, "add", ".");
    git(repo, "commit", "-qm", "i");
    const idx = path.join(repo, ".git", "index");
    const bytes = fs.readFileSync(idx);
    const body = Buffer.from(
      bytes
        .subarray(0, bytes.length - 20)
        .toString("latin1")
        .replace(fake, evil),
      "latin1",
    );
    const sum = new Bun.CryptoHasher("sha1").update(body).digest();
    fs.writeFileSync(idx, Buffer.concat([body, sum]));
    // the attack is real: plain git shows the outside file's content
    const plain = Bun.spawnSync(["git", "diff"], { cwd: repo, env: { PATH: process.env.PATH!, HOME: base } }).stdout.toString();
    expect(plain).toContain("+root:");
    for (const args of [{}, { mode: "status" }, { mode: "ref", ref: "HEAD" }]) {
      const r = run([
        binaryPath(),
        "--root",
        repo,
        "--tools",
        "git_diff",
        "execute",
        JSON.stringify({ id: "1", tool: "git_diff", arguments: args }),
      ]);
      expect(r.stdout).not.toContain("root:");
      expect(r.stdout).not.toContain(`AM ${evil}`);
      const out = JSON.parse(r.stdout);
      expect(out.success).toBe(false);
      expect(out.error.code).toBe("GIT_FAILED");
      expect(out.error.details.reason).toBe("index_path_invalid");
      expect(out.error.message).toContain(evil);
    }
  }, 120_000);
});
