/**
 * exec with real child processes (isolation off here; isolation.test.ts runs
 * the bubblewrap checks): allowlist bypasses, environment scrubbing, argument
 * injection, process-group kills, output caps, and bad arguments.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { code, sandbox, type Sandbox } from "../../support/workspace.ts";
import { forkingScript, livePidsWith, SEARCH_PATH, waitGone } from "../../support/procs.ts";
import { createExecTool } from "../../../src/tools/workspace/exec.ts";
import { createRuntime } from "../../../src/runtime/index.ts";
import { createLogger } from "../../../src/core/logger.ts";
import { workspaceTools } from "../../../src/tools/workspace/index.ts";

// real child processes and files on a machine shared with other jobs: generous per-test limits
setDefaultTimeout(60_000);

let sb: Sandbox;
const warnings: string[] = [];

beforeAll(() => {
  sb = sandbox(
    {
      exec: {
        allow: ["ls", "cat", "git", "find", "yes", "bun"],
        env: ["PATH", "HOME", "LANG"],
        timeout_ms: 20_000,
        max_output_bytes: 1000,
        isolation: "off",
      },
    },
    "agentcore-exec-",
    { searchPath: SEARCH_PATH, warn: (m) => warnings.push(m) },
  );
  fs.mkdirSync(path.join(sb.root, "sub"));
  fs.writeFileSync(path.join(sb.root, "sub", "f.txt"), "content of f\n");
  fs.symlinkSync(sb.outside, path.join(sb.root, "outlink"));
});

afterAll(() => sb.cleanup());

/** A committer identity in the test repository's own config (set by the test, not through exec). */
function identity(): void {
  Bun.spawnSync(["git", "config", "user.email", "t@example.com"], { cwd: sb.root });
  Bun.spawnSync(["git", "config", "user.name", "t"], { cwd: sb.root });
}

type R = {
  exit_code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  truncated: boolean;
  stdout_bytes: number;
  stderr_bytes: number;
  timed_out: boolean;
  isolated: boolean;
};
async function run(args: Record<string, unknown>, signal?: AbortSignal): Promise<R> {
  const env = await sb.call("exec", args, signal);
  expect(env.error).toBeNull();
  return env.result as R;
}

describe("exec basics", () => {
  test("argv array, cwd inside the root, exit code, stdin; results say isolated:false", async () => {
    let r = await run({ argv: ["ls", "-1"], cwd: "sub" });
    expect(r).toMatchObject({
      exit_code: 0,
      signal: null,
      stdout: "f.txt\n",
      stderr: "",
      truncated: false,
      timed_out: false,
      isolated: false,
    });
    r = await run({ argv: ["cat", "does-not-exist"] });
    expect(r.exit_code).toBe(1);
    expect(r.stderr).toContain("does-not-exist");
    r = await run({ argv: ["cat"], stdin: "from stdin" });
    expect(r.stdout).toBe("from stdin");
    // arguments are never interpreted by a shell
    r = await run({ argv: ["ls", "; touch pwned", "$(touch pwned)"] });
    expect(r.exit_code).not.toBe(0);
    expect(fs.existsSync(path.join(sb.root, "pwned"))).toBe(false);
  });

  test("allowlisting a program that runs other programs warns at creation", () => {
    expect(warnings.some((w) => w.includes("bun") && w.includes("can run any program"))).toBe(true);
  });

  test("cwd follows the rooted rules", async () => {
    expect(code(await sb.call("exec", { argv: ["ls"], cwd: ".." }))).toBe("PATH_TRAVERSAL");
    expect(code(await sb.call("exec", { argv: ["ls"], cwd: sb.outside }))).toBe("PATH_ABSOLUTE");
    expect(code(await sb.call("exec", { argv: ["ls"], cwd: "outlink" }))).toBe("PATH_SYMLINK");
    expect(code(await sb.call("exec", { argv: ["ls"], cwd: "sub/f.txt" }))).toBe("NOT_FOUND");
  });

  test("adversarial arguments are INVALID_ARGUMENTS", async () => {
    const bad: Record<string, unknown>[] = [
      {},
      { argv: [] },
      { argv: "ls -la" },
      { argv: [1] },
      { argv: ["ls"], env: { "A-B": "x" } },
      { argv: ["ls"], env: { PATH: 1 } },
      { argv: ["ls"], timeout_ms: 0 },
      { argv: ["ls"], shell: true },
    ];
    for (const args of bad) expect(code(await sb.call("exec", args))).toBe("INVALID_ARGUMENTS");
    expect(code(await sb.call("exec", { argv: ["ls", "a\0b"] }))).toBe("INVALID_ARGUMENTS");
  });
});

describe("exec allowlist bypasses (each must fail)", () => {
  test("path tricks: argv[0] must be a bare allowlisted name", async () => {
    for (const argv0 of [
      "./ls",
      "/bin/ls",
      "/bin/sh",
      "../ls",
      "ls/../sh",
      "sub/../ls",
      "/usr/bin/env",
      "ls\\",
      "",
      ".",
      "..",
      "LS",
      " ls",
      "ls ",
    ]) {
      const env = await sb.call("exec", { argv: [argv0, "-la"] });
      expect(code(env)).toBe("COMMAND_NOT_ALLOWED");
    }
    const env = await sb.call("exec", { argv: ["/bin/sh", "-c", "touch pwned"] });
    expect(env.error?.message).toBe("argv[0] must be a bare program name from the allowlist, not a path");
    expect(fs.existsSync(path.join(sb.root, "pwned"))).toBe(false);
  });

  test("sh -c (and other shells) are not on the allowlist", async () => {
    for (const shell of ["sh", "bash", "dash", "env", "xargs"]) {
      const env = await sb.call("exec", { argv: [shell, "-c", "touch pwned"] });
      expect(code(env)).toBe("COMMAND_NOT_ALLOWED");
      expect(env.error?.details).toMatchObject({ argv_index: 0, program: shell });
    }
    expect(fs.existsSync(path.join(sb.root, "pwned"))).toBe(false);
  });

  test("LD_PRELOAD (and other code-loading variables) can't be set per call", async () => {
    for (const name of ["LD_PRELOAD", "LD_LIBRARY_PATH", "DYLD_INSERT_LIBRARIES", "BASH_ENV", "GIT_SSH_COMMAND", "NODE_OPTIONS"]) {
      const env = await sb.call("exec", { argv: ["ls"], env: { [name]: "/tmp/evil.so" } });
      expect(code(env)).toBe("COMMAND_NOT_ALLOWED");
      expect(env.error?.details).toEqual({ env: name });
    }
    const env = await sb.call("exec", { argv: ["ls"], env: { SOMETHING_ELSE: "x" } });
    expect(code(env)).toBe("COMMAND_NOT_ALLOWED");
    expect(env.error?.message).toContain("not on the allowlist");
    // allowlisted, but they decide which programs and config files run: the operator's values stay
    for (const name of ["PATH", "HOME"]) {
      const e = await sb.call("exec", { argv: ["ls"], env: { [name]: sb.root } });
      expect(code(e)).toBe("COMMAND_NOT_ALLOWED");
      expect(e.error?.message).toContain("keeps the operator's value");
    }
    expect((await run({ argv: ["cat", "/proc/self/environ"], env: { LANG: "C" } })).stdout).toContain("LANG=C\0");
  });

  test("LD_PRELOAD can't be allowlisted, and agentcore's own environment is scrubbed", async () => {
    expect(() =>
      createExecTool({ root: sb.root, allow: ["cat"], env: ["PATH", "LD_PRELOAD"], searchPath: SEARCH_PATH, isolation: "off" }),
    ).toThrow(/LD_PRELOAD/);
    const tool = createExecTool({
      root: sb.root,
      allow: ["cat"],
      env: ["PATH", "LANG"],
      searchPath: SEARCH_PATH,
      isolation: "off",
      sourceEnv: { PATH: "/usr/bin::.:bin:/bin:", LANG: "C", LD_PRELOAD: "/nonexistent/evil.so", SECRET_TOKEN: "hunter2", HOME: "/root" },
    });
    const rt = createRuntime({
      root: sb.root,
      builtins: false,
      tools: [tool as never],
      logger: createLogger({ level: "error", sink: () => {} }),
    });
    const env = await rt.dispatchCall({ id: "e", tool: "exec", arguments: { argv: ["cat", "/proc/self/environ"] }, shape: "agentcore" });
    const seen = (env.result as R).stdout
      .split("\0")
      .filter((s) => s !== "")
      .map((s) => s.split("=")[0])
      .sort();
    expect(seen).toEqual(["LANG", "PATH"]);
    // relative and empty PATH entries (which resolve against the working folder) are dropped
    expect((env.result as R).stdout.split("\0")).toContain("PATH=/usr/bin:/bin");
  });

  test("argument injection into git: --upload-pack=, -c, --exec-path, --output, --ext-diff, -O, abbreviations", async () => {
    const marker = path.join(sb.base, "INJECTED");
    const cases: string[][] = [
      ["git", "ls-remote", `--upload-pack=touch ${marker}`, "."],
      ["git", "log", `--upload-pack=touch ${marker}`],
      ["git", "log", `--upload-pa=touch ${marker}`],
      ["git", "log", "--receive-pack", `touch ${marker}`],
      ["git", "-c", `core.pager=touch ${marker}`, "log"],
      ["git", `--exec-path=${sb.base}`, "status"],
      ["git", "--git-dir=/", "status"],
      ["git", "-C", "/", "status"],
      ["git", "log", `--output=${marker}`],
      ["git", "diff", "--ext-diff"],
      ["git", "diff", "--textconv"],
      ["git", "grep", "-O", `touch ${marker}`, "x"],
      ["git", "grep", `-Otouch ${marker}`, "x"],
      ["git", "grep", `-iOtouch ${marker}`, "x"],
      ["git", "init", `--template=${sb.base}`],
      ["git", "config", "core.pager", `touch ${marker}`],
      ["git", "submodule", "foreach", `touch ${marker}`],
      ["git", "difftool", "-x", `touch ${marker}`],
      ["git", "merge", "-s", "evil", "HEAD"],
      ["git", "apply", "--unsafe-paths", "--directory=/", "x.patch"],
      ["find", ".", "-exec", "touch", marker, ";"],
      ["find", ".", "-fprint", marker],
      ["find", "--", ".", "-exec", "touch", marker, ";"],
    ];
    for (const argv of cases) {
      const env = await sb.call("exec", { argv });
      expect(code(env)).toBe("COMMAND_NOT_ALLOWED");
    }
    expect(fs.existsSync(marker)).toBe(false);
  });

  test("git in a folder written to look like a bare repository (its config naming a filter) refuses it; nothing runs", async () => {
    // All of these are files write_file can make: no .git anywhere.
    const marker = path.join(sb.base, "FAKE-BARE-FILTER-RAN");
    const evil = path.join(sb.root, "evil");
    fs.mkdirSync(path.join(evil, "objects"), { recursive: true });
    fs.mkdirSync(path.join(evil, "refs"));
    fs.writeFileSync(path.join(evil, "HEAD"), "ref: refs/heads/main\n");
    fs.writeFileSync(
      path.join(evil, "config"),
      `[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ..\n[filter "x"]\n\tclean = touch ${marker}; cat\n`,
    );
    fs.writeFileSync(path.join(sb.root, ".gitattributes"), "*.txt filter=x\n");
    try {
      const r = await run({ argv: ["git", "add", "../sub/f.txt"], cwd: "evil" });
      expect(r.exit_code).toBe(128);
      expect(r.stderr).toContain("bare repository");
      expect(fs.existsSync(marker)).toBe(false);
    } finally {
      fs.rmSync(evil, { recursive: true, force: true });
      fs.rmSync(path.join(sb.root, ".gitattributes"));
    }
  });

  test("after '--' an option-like argument is an operand; safe git commands run", async () => {
    const init = await run({ argv: ["git", "init", "-q"] });
    expect(init.exit_code).toBe(0);
    const r = await run({ argv: ["git", "log", "--oneline", "--", "--upload-pack=x"] });
    expect(r.exit_code).not.toBe(0); // no commits yet: git itself reports it
    expect(r.stderr).toContain("does not have any commits");
    expect((await run({ argv: ["git", "status", "--porcelain"] })).stdout).toContain("?? sub/");
    expect((await run({ argv: ["find", "sub", "-name", "*.txt"] })).stdout).toBe("sub/f.txt\n");
    fs.rmSync(path.join(sb.root, ".git"), { recursive: true });
  });

  test("repository hooks never run through exec's git", async () => {
    await run({ argv: ["git", "init", "-q"] });
    const marker = path.join(sb.base, "HOOK-RAN");
    fs.writeFileSync(path.join(sb.root, ".git", "hooks", "pre-commit"), `#!/bin/sh\ntouch ${marker}\n`, { mode: 0o755 });
    identity();
    await run({ argv: ["git", "add", "sub"] });
    const r = await run({ argv: ["git", "-P", "commit", "-q", "-m", "x"] });
    expect(r).toMatchObject({ exit_code: 0, stderr: "" });
    expect(fs.existsSync(marker)).toBe(false);
    // control: plain git runs the same hook
    const plain = Bun.spawnSync(["git", "commit", "-q", "--allow-empty", "-m", "y"], {
      cwd: sb.root,
      env: { PATH: process.env.PATH!, HOME: sb.base },
    });
    expect(plain.exitCode).toBe(0);
    expect(fs.existsSync(marker)).toBe(true);
    fs.rmSync(path.join(sb.root, ".git"), { recursive: true });
  });
});

describe("exec processes", () => {
  test("a timeout kills the whole process group, grandchildren too", async () => {
    const marker = `agentcore-grandchild-${process.pid}-${Date.now()}`;
    const r = await run({ argv: ["bun", "-e", forkingScript(marker)], timeout_ms: 1500 });
    expect(r.stdout).toBe("started\n");
    expect(r.timed_out).toBe(true);
    expect(r.signal).toBe("SIGKILL");
    expect(await waitGone(marker)).toEqual([]);
  });

  test("background jobs do not outlive a command that exits", async () => {
    const marker = `agentcore-background-${process.pid}-${Date.now()}`;
    const script = forkingScript(marker).replace("setInterval(() => {}, 1000);", "setTimeout(() => process.exit(0), 300);");
    const r = await run({ argv: ["bun", "-e", script] });
    expect(r.stdout).toBe("started\n");
    expect(r.timed_out).toBe(false);
    expect(r.exit_code).toBe(0);
    expect(await waitGone(marker)).toEqual([]);
  });

  test("cancellation kills the process group", async () => {
    const marker = `agentcore-cancel-${process.pid}-${Date.now()}`;
    const ac = new AbortController();
    const pending = sb.call("exec", { argv: ["bun", "-e", forkingScript(marker)] }, ac.signal);
    for (let i = 0; i < 400 && livePidsWith(marker).length === 0; i++) await Bun.sleep(50);
    expect(livePidsWith(marker).length).toBe(1);
    ac.abort();
    expect(code(await pending)).toBe("CANCELLED");
    expect(await waitGone(marker)).toEqual([]);
  });

  test("an output flood is capped with a truncation marker (stdout and stderr)", async () => {
    let r = await run({ argv: ["yes", "flood"], timeout_ms: 1000 });
    expect(r.timed_out).toBe(true);
    expect(r.truncated).toBe(true);
    expect(r.stdout_bytes).toBeGreaterThan(1000);
    expect(r.stdout).toStartWith("flood\nflood\n");
    expect(r.stdout).toEndWith(`[… ${r.stdout_bytes - 1000} bytes truncated]`);
    expect(r.stdout.length).toBeLessThan(1100);
    r = await run({ argv: ["bun", "-e", "process.stderr.write('é'.repeat(600000)); process.stdout.write('ok')"] });
    expect(r).toMatchObject({ exit_code: 0, stdout: "ok", truncated: true, stderr_bytes: 1_200_000, timed_out: false });
    expect(r.stderr).toBe("é".repeat(500) + "\n[… 1199000 bytes truncated]");
  });

  test("a per-call timeout can't exceed the configured one", async () => {
    const tool = createExecTool({
      root: sb.root,
      allow: ["bun"],
      searchPath: SEARCH_PATH,
      isolation: "off",
      timeoutMs: 1000,
      warn: () => {},
    });
    const rt = createRuntime({
      root: sb.root,
      builtins: false,
      tools: [tool as never],
      logger: createLogger({ level: "error", sink: () => {} }),
    });
    // asks for 10 minutes; the configured second applies (otherwise this test would hit its own timeout)
    const env = await rt.dispatchCall({
      id: "t",
      tool: "exec",
      arguments: { argv: ["bun", "-e", "setInterval(() => {}, 1000)"], timeout_ms: 600_000 },
      shape: "agentcore",
    });
    expect(env.result).toMatchObject({ timed_out: true, signal: "SIGKILL", exit_code: null });
  });
});

describe("exec creation", () => {
  test("programs must be bare names found on PATH; required isolation without bwrap fails", () => {
    const base = { root: sb.root, searchPath: SEARCH_PATH, isolation: "off" as const };
    expect(() => createExecTool({ ...base, allow: ["/bin/ls"] })).toThrow(/bare program name/);
    expect(() => createExecTool({ ...base, allow: ["no-such-program-xyz"] })).toThrow(/not found on PATH/);
    expect(() => createExecTool({ ...base, allow: [] })).toThrow(/empty/);
    const noBwrap = [path.dirname(SEARCH_PATH[0]!) + "/.bin"];
    expect(() => createExecTool({ root: sb.root, allow: ["bun"], searchPath: noBwrap, isolation: "required", warn: () => {} })).toThrow(
      /bubblewrap/,
    );
    const seen: string[] = [];
    createExecTool({ root: sb.root, allow: ["bun"], searchPath: noBwrap, isolation: "auto", warn: (m) => seen.push(m) });
    expect(seen.some((m) => m.includes("without isolation"))).toBe(true);
  });
});

describe("exec programs inside the root", () => {
  test("a program found inside the root (rewritable by write_file) and a PATH entry there are warned about at creation", async () => {
    const bin = path.join(sb.root, "tools");
    fs.mkdirSync(bin, { recursive: true });
    fs.copyFileSync("/bin/echo", path.join(bin, "lint"));
    fs.chmodSync(path.join(bin, "lint"), 0o755);
    try {
      const seen: string[] = [];
      const tool = createExecTool({
        root: sb.root,
        allow: ["lint", "ls"],
        env: ["PATH"],
        searchPath: [bin, ...SEARCH_PATH],
        sourceEnv: { PATH: `${bin}:/usr/bin:/bin` },
        isolation: "off",
        warn: (m) => seen.push(m),
      });
      expect(seen.filter((m) => m.includes("inside the root"))).toEqual([
        `exec allows lint (${path.join(bin, "lint")}), found inside the root: write_file, apply_patch and commands can rewrite it, so the allowlist does not restrict what runs`,
        `the PATH that commands get holds ${bin}, inside the root: programs a command looks up there can be rewritten by write_file and apply_patch`,
      ]);
      // the danger it warns about: the file tools can rewrite the program, which keeps its mode bits
      const rt = createRuntime({
        root: sb.root,
        builtins: false,
        tools: [tool as never, ...workspaceTools({ write_file: true }, sb.root)],
        logger: createLogger({ level: "error", sink: () => {} }),
      });
      const w = await rt.dispatchCall({
        id: "w",
        tool: "write_file",
        arguments: { path: "tools/lint", content: "#!/bin/sh\necho rewritten\n" },
        shape: "agentcore",
      });
      expect(w.success).toBe(true);
      const r = await rt.dispatchCall({ id: "x", tool: "exec", arguments: { argv: ["lint"] }, shape: "agentcore" });
      expect((r.result as R).stdout).toBe("rewritten\n");
      // programs outside the root and an outside PATH: no such warning
      const quiet: string[] = [];
      createExecTool({
        root: sb.root,
        allow: ["ls"],
        env: ["PATH"],
        searchPath: SEARCH_PATH,
        sourceEnv: { PATH: "/usr/bin:/bin" },
        isolation: "off",
        warn: (m) => quiet.push(m),
      });
      expect(quiet.filter((m) => m.includes("inside the root"))).toEqual([]);
    } finally {
      fs.rmSync(bin, { recursive: true, force: true });
    }
  });
});

describe("exec option rules (unit)", () => {
  test("tar: -I and -F refused also inside bundled short options and old-style first arguments", async () => {
    const { checkArguments } = await import("../../../src/tools/workspace/rules.ts");
    for (const args of [
      ["-I", "sh"],
      ["-xvIsh", "-f", "a.tar"],
      ["xIf", "sh", "a.tar"],
      ["--use-compress-program=sh", "-xf", "a.tar"],
      ["-cf", "a.tar", "--checkpoint-action=exec=sh", "x"],
      ["-xF", "x"],
    ]) {
      expect(() => checkArguments("tar", args)).toThrow(/not allowed/);
    }
    for (const args of [
      ["-xvf", "a.tar"],
      ["-czf", "out.tgz", "src"],
      ["tf", "a.tar"],
      ["--totals", "-cf", "a.tar", "x"],
    ]) {
      expect(() => checkArguments("tar", args)).not.toThrow();
    }
  });

  test("GNU abbreviations of denied long options; fd, sort, zip, rg", async () => {
    const { checkArguments } = await import("../../../src/tools/workspace/rules.ts");
    const refused: [string, string[]][] = [
      ["tar", ["-xf", "a.tar", "--to-com=sh"]],
      ["tar", ["--use=sh", "-xf", "a.tar"]],
      ["fd", ["-x", "rm"]],
      ["fd", ["-Hx", "rm"]],
      ["fd", ["--exec-batch", "rm"]],
      ["fd", ["--exec=rm"]],
      ["sort", ["--compress-prog=sh", "f"]],
      ["zip", ["-TT", "sh", "a.zip", "f"]],
      ["rg", ["--pre", "sh", "x"]],
      ["find", ["-fprintf", "/tmp/x", "%p"]],
    ];
    for (const [program, args] of refused) expect(() => checkArguments(program, args)).toThrow(/not allowed/);
    for (const [program, args] of [
      ["fd", ["-H", "name"]],
      ["sort", ["-r", "f"]],
      ["rg", ["--hidden", "x"]],
      ["find", [".", "-name", "*.ts"]],
      ["ls", ["--exec"]],
    ] as [string, string[]][]) {
      expect(() => checkArguments(program, args)).not.toThrow();
    }
  });
});

describe("exec git editor", () => {
  test("git commit without -m never starts an editor (the repository's core.editor included)", async () => {
    await run({ argv: ["git", "init", "-q"] });
    const marker = path.join(sb.base, "EDITOR-RAN");
    identity();
    Bun.spawnSync(["git", "config", "core.editor", `touch ${marker}; true`], { cwd: sb.root });
    await run({ argv: ["git", "add", "sub"] });
    const r = await run({ argv: ["git", "commit"] });
    expect(r.exit_code).not.toBe(0);
    expect(r.stderr).toContain("editor");
    expect(fs.existsSync(marker)).toBe(false);
    fs.rmSync(path.join(sb.root, ".git"), { recursive: true });
  });
});
