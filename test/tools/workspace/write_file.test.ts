/**
 * write_file on a real filesystem: atomic writes, and every escape from the
 * issue (symlink swapped in during the call, `..`, absolute paths, a hard
 * link to a file outside the root, `.git/hooks`) must fail and leave the
 * outside folder untouched.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { code, OUTSIDE, sandbox, snapshot, type Sandbox } from "../../support/workspace.ts";
import { workspaceTestHooks } from "../../../src/tools/workspace/dirfd.ts";
import { workspaceTools } from "../../../src/tools/workspace/index.ts";
import { createRuntime } from "../../../src/runtime/index.ts";
import { createLogger } from "../../../src/core/logger.ts";

// real child processes and files on a machine shared with other jobs: generous per-test limits
setDefaultTimeout(60_000);

let sb: Sandbox;
let before: Record<string, string>;

beforeEach(() => {
  sb = sandbox({ write_file: { max_bytes: 1000 } });
  fs.mkdirSync(path.join(sb.root, "sub"));
  fs.mkdirSync(path.join(sb.root, ".git", "hooks"), { recursive: true });
  before = snapshot(sb.outside);
});

afterEach(() => {
  workspaceTestHooks.beforeRename = null;
  workspaceTestHooks.forcePortable = false;
  // whatever happened, nothing outside the root changed
  expect(snapshot(sb.outside)).toEqual(before);
  sb.cleanup();
});

/** Temp files left in a folder (there must be none after any call). */
function leftovers(dir: string): string[] {
  return fs.readdirSync(dir).filter((n) => n.includes(".agentcore-tmp-"));
}

describe("write_file happy paths", () => {
  test("creates a file, then replaces it; reports bytes and created", async () => {
    let env = await sb.call("write_file", { path: "sub/a.txt", content: "héllo\n" });
    expect(env).toMatchObject({ success: true, tool: "write_file", error: null });
    expect(env.result).toEqual({ path: "sub/a.txt", bytes: 7, created: true });
    expect(fs.readFileSync(path.join(sb.root, "sub/a.txt"), "utf8")).toBe("héllo\n");
    env = await sb.call("write_file", { path: "sub/a.txt", content: "" });
    expect(env.result).toEqual({ path: "sub/a.txt", bytes: 0, created: false });
    expect(fs.readFileSync(path.join(sb.root, "sub/a.txt"), "utf8")).toBe("");
    expect(leftovers(path.join(sb.root, "sub"))).toEqual([]);
  });

  test("the rename replaces the inode (atomic), and keeps the permission bits", async () => {
    const p = path.join(sb.root, "x.sh");
    fs.writeFileSync(p, "old");
    fs.chmodSync(p, 0o750);
    const ino = fs.statSync(p).ino;
    const env = await sb.call("write_file", { path: "x.sh", content: "new" });
    expect(env.success).toBe(true);
    const st = fs.statSync(p);
    expect(st.ino).not.toBe(ino);
    expect(st.mode & 0o777).toBe(0o750);
    expect(fs.readFileSync(p, "utf8")).toBe("new");
  });

  test("creates missing parent folders inside the root; create_dirs:false refuses", async () => {
    let env = await sb.call("write_file", { path: "d1/d2/d3/f.txt", content: "deep" });
    expect(env.success).toBe(true);
    expect(fs.readFileSync(path.join(sb.root, "d1/d2/d3/f.txt"), "utf8")).toBe("deep");
    env = await sb.call("write_file", { path: "e1/f.txt", content: "x", create_dirs: false });
    expect(code(env)).toBe("NOT_FOUND");
    expect(fs.existsSync(path.join(sb.root, "e1"))).toBe(false);
  });

  test("size cap counts UTF-8 bytes", async () => {
    const env = await sb.call("write_file", { path: "big.txt", content: "é".repeat(501) });
    expect(code(env)).toBe("FILE_TOO_LARGE");
    expect(env.error?.details).toMatchObject({ size: 1002, limit: 1000 });
    expect(fs.existsSync(path.join(sb.root, "big.txt"))).toBe(false);
  });

  test("a write that fails after making folders removes them and its temp file", async () => {
    workspaceTestHooks.beforeRename = () => {
      throw new Error("simulated failure before the rename");
    };
    const env = await sb.call("write_file", { path: "m1/m2/x.txt", content: "x" });
    expect(code(env)).toBe("TOOL_ERROR");
    expect(fs.existsSync(path.join(sb.root, "m1"))).toBe(false);
  });
});

describe("write_file escapes (each must fail)", () => {
  test("'..' anywhere", async () => {
    for (const p of ["../outside/secret.txt", "sub/../../outside/secret.txt", "..", "sub/..", "a\\..\\b"]) {
      const env = await sb.call("write_file", { path: p, content: "pwned" });
      expect(env.success).toBe(false);
      expect(["PATH_TRAVERSAL"]).toContain(code(env)!);
    }
  });

  test("absolute paths", async () => {
    for (const p of [path.join(sb.outside, "secret.txt"), "/etc/agentcore-test", "C:\\x", "\\\\server\\share\\x"]) {
      const env = await sb.call("write_file", { path: p, content: "pwned" });
      expect(code(env)).toBe("PATH_ABSOLUTE");
    }
    expect(fs.existsSync("/etc/agentcore-test")).toBe(false);
  });

  test("a symlink as target or as a folder component", async () => {
    fs.symlinkSync(path.join(sb.outside, "secret.txt"), path.join(sb.root, "ln"));
    fs.symlinkSync(sb.outside, path.join(sb.root, "dirlink"));
    expect(code(await sb.call("write_file", { path: "ln", content: "pwned" }))).toBe("PATH_SYMLINK");
    expect(code(await sb.call("write_file", { path: "dirlink/secret.txt", content: "pwned" }))).toBe("PATH_SYMLINK");
    expect(code(await sb.call("write_file", { path: "dirlink/new.txt", content: "pwned" }))).toBe("PATH_SYMLINK");
    expect(fs.readlinkSync(path.join(sb.root, "ln"))).toBe(path.join(sb.outside, "secret.txt"));
  });

  test("a hard link to a file outside the root", async () => {
    fs.linkSync(path.join(sb.outside, "secret.txt"), path.join(sb.root, "hard.txt"));
    const env = await sb.call("write_file", { path: "hard.txt", content: "pwned" });
    expect(code(env)).toBe("PATH_HARDLINK");
    expect(env.error?.details).toMatchObject({ links: 2 });
    expect(fs.readFileSync(path.join(sb.root, "hard.txt"), "utf8")).toBe(OUTSIDE);
  });

  test("writing into .git/hooks, .git/config, .agentcore (any case)", async () => {
    for (const p of [
      ".git/hooks/pre-commit",
      ".git/config",
      ".GIT/hooks/post-checkout",
      "sub/.git/hooks/x",
      ".agentcore/config.json",
      ".git",
    ]) {
      const env = await sb.call("write_file", { path: p, content: "#!/bin/sh\ntouch /tmp/pwned\n" });
      expect(code(env)).toBe("PATH_PROTECTED");
    }
    expect(fs.readdirSync(path.join(sb.root, ".git", "hooks"))).toEqual([]);
    expect(fs.existsSync(path.join(sb.root, ".agentcore"))).toBe(false);
  });

  test("a symlinked target swapped in during the call", async () => {
    fs.writeFileSync(path.join(sb.root, "sub", "t.txt"), "orig");
    workspaceTestHooks.beforeRename = (abs) => {
      fs.unlinkSync(abs);
      fs.symlinkSync(path.join(sb.outside, "secret.txt"), abs);
    };
    const env = await sb.call("write_file", { path: "sub/t.txt", content: "pwned" });
    expect(code(env)).toBe("PATH_SYMLINK");
    expect(leftovers(path.join(sb.root, "sub"))).toEqual([]);
  });

  test("a parent folder swapped for a symlink during the call (Linux descriptor path)", async () => {
    fs.writeFileSync(path.join(sb.root, "sub", "t.txt"), "orig");
    workspaceTestHooks.beforeRename = () => {
      fs.renameSync(path.join(sb.root, "sub"), path.join(sb.root, "sub.moved"));
      fs.symlinkSync(sb.outside, path.join(sb.root, "sub"));
    };
    const env = await sb.call("write_file", { path: "sub/t.txt", content: "pwned" });
    expect(code(env)).toBe("PATH_SYMLINK");
    expect(fs.readFileSync(path.join(sb.root, "sub.moved", "t.txt"), "utf8")).toBe("orig");
    expect(leftovers(path.join(sb.root, "sub.moved"))).toEqual([]);
  });

  test("a parent folder swapped for a symlink during the call (portable fallback)", async () => {
    workspaceTestHooks.forcePortable = true;
    fs.writeFileSync(path.join(sb.root, "sub", "t.txt"), "orig");
    workspaceTestHooks.beforeRename = () => {
      fs.renameSync(path.join(sb.root, "sub"), path.join(sb.root, "sub.moved"));
      fs.symlinkSync(sb.outside, path.join(sb.root, "sub"));
    };
    const env = await sb.call("write_file", { path: "sub/t.txt", content: "pwned" });
    expect(code(env)).toBe("PATH_SYMLINK");
  });

  test("a hard link swapped in during the call", async () => {
    fs.writeFileSync(path.join(sb.root, "t.txt"), "orig");
    workspaceTestHooks.beforeRename = (abs) => {
      fs.unlinkSync(abs);
      fs.linkSync(path.join(sb.outside, "secret.txt"), abs);
    };
    const env = await sb.call("write_file", { path: "t.txt", content: "pwned" });
    expect(code(env)).toBe("PATH_HARDLINK");
  });

  test("targets that are not regular files", async () => {
    expect(code(await sb.call("write_file", { path: "sub", content: "x" }))).toBe("NOT_A_FILE");
    expect(code(await sb.call("write_file", { path: "sub/", content: "x" }))).toBe("PATH_INVALID");
    expect(code(await sb.call("write_file", { path: ".", content: "x" }))).toBe("PATH_INVALID");
    // a trailing "/." names a folder too: neither the existing file nor a new one is written
    fs.writeFileSync(path.join(sb.root, "kept.txt"), "old");
    expect(code(await sb.call("write_file", { path: "kept.txt/.", content: "x" }))).toBe("PATH_INVALID");
    expect(fs.readFileSync(path.join(sb.root, "kept.txt"), "utf8")).toBe("old");
    expect(code(await sb.call("write_file", { path: "fresh.txt/.", content: "x" }))).toBe("PATH_INVALID");
    expect(fs.existsSync(path.join(sb.root, "fresh.txt"))).toBe(false);
    fs.writeFileSync(path.join(sb.root, "f"), "x");
    expect(code(await sb.call("write_file", { path: "f/g", content: "x" }))).toBe("NOT_FOUND");
  });
});

describe("agentcore's own files inside the root", () => {
  test("the config file and history log are refused by write_file and apply_patch (PATH_PROTECTED)", async () => {
    fs.writeFileSync(path.join(sb.root, "agentcore.jsonc"), "{}");
    const rt = createRuntime({
      root: sb.root,
      builtins: false,
      logger: createLogger({ level: "error", sink: () => {} }),
      // given relative to the working directory and through a symlinked folder: both are canonicalised
      tools: workspaceTools({ write_file: true, apply_patch: true }, sb.root, {
        protect: [
          path.relative(process.cwd(), path.join(sb.root, "agentcore.jsonc")),
          path.join(sb.root, "logs", "history.jsonl"),
          path.join(sb.outside, "elsewhere.json"),
        ],
      }),
    });
    const call = (tool: string, args: Record<string, unknown>) => rt.dispatchCall({ id: "p", tool, arguments: args, shape: "agentcore" });
    expect(code(await call("write_file", { path: "agentcore.jsonc", content: '{"tools":{"exec":{"allow":["sh"]}}}' }))).toBe(
      "PATH_PROTECTED",
    );
    expect(code(await call("write_file", { path: "./agentcore.jsonc", content: "x" }))).toBe("PATH_PROTECTED");
    expect(code(await call("apply_patch", { edits: [{ path: "agentcore.jsonc", old: "{}", new: "{ }" }] }))).toBe("PATH_PROTECTED");
    expect(code(await call("write_file", { path: "logs/history.jsonl", content: "forged" }))).toBe("PATH_PROTECTED");
    expect(fs.readFileSync(path.join(sb.root, "agentcore.jsonc"), "utf8")).toBe("{}");
    // other files stay writable
    expect((await call("write_file", { path: "agentcore.jsonc.bak", content: "x" })).success).toBe(true);
  });
});

describe("write_file adversarial arguments", () => {
  test("schema violations are INVALID_ARGUMENTS and write nothing", async () => {
    const bad: Record<string, unknown>[] = [
      {},
      { path: "a" },
      { content: "a" },
      { path: 1, content: "a" },
      { path: "a", content: 1 },
      { path: "a", content: "a", create_dirs: "yes" },
      { path: "a", content: "a", extra: 1 },
      { path: "", content: "a" },
    ];
    for (const args of bad) expect(code(await sb.call("write_file", args))).toBe("INVALID_ARGUMENTS");
    expect(fs.readdirSync(sb.root).sort()).toEqual([".git", "sub"]);
  });

  test("NUL and lone surrogates in the path", async () => {
    expect(code(await sb.call("write_file", { path: "a\0b", content: "x" }))).toBe("PATH_INVALID");
    expect(code(await sb.call("write_file", { path: "a\uD800", content: "x" }))).toBe("PATH_INVALID");
  });
});

describe("write_file and apply_patch: long non-ASCII names", () => {
  let sb: Sandbox;
  beforeAll(() => {
    sb = sandbox({ write_file: true, apply_patch: true }, "agentcore-ws-");
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
