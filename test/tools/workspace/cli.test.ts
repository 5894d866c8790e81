/**
 * The workspace tools through the CLI: the compiled binary (the grep worker
 * and the descriptor paths must work there too) and `deno run`, the config
 * file's "tools" section and the --tools flag, strict config errors, and the
 * start-up warning without bubblewrap.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { binaryPath, REPO } from "../../support/binary.ts";
import { forkingScript, livePidsWith, waitGone } from "../../support/procs.ts";
import { tmp } from "../../support/tmp.ts";

let base: string;
let root: string;

function run(argv: string[], opts: { stdin?: string; env?: Record<string, string>; cwd?: string } = {}) {
  const r = Bun.spawnSync(argv, {
    cwd: opts.cwd ?? base,
    stdin: opts.stdin === undefined ? "ignore" : new TextEncoder().encode(opts.stdin),
    env: opts.env ?? { PATH: process.env.PATH!, HOME: base, DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1" },
  });
  return { status: r.exitCode, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

function config(obj: unknown, name = "cfg.jsonc"): string {
  const p = path.join(base, name);
  fs.writeFileSync(p, JSON.stringify(obj));
  return p;
}

const CALLS = [
  { id: "1", tool: "write_file", arguments: { path: "d/b.txt", content: "one\ntwo\n" } },
  { id: "2", tool: "list_dir", arguments: { path: "d" } },
  { id: "3", tool: "glob", arguments: { pattern: "**/*.txt" } },
  { id: "4", tool: "grep", arguments: { pattern: "TODO+|two" } }, // a quantifier: matched in the worker
  { id: "5", tool: "apply_patch", arguments: { edits: [{ path: "d/b.txt", old: "two", new: "TWO" }] } },
  { id: "6", tool: "exec", arguments: { argv: ["cat", "d/b.txt"] } },
  { id: "7", tool: "git_diff", arguments: { mode: "status" } },
  { id: "8", tool: "write_file", arguments: { path: "../escape.txt", content: "x" } },
  { id: "9", tool: "exec", arguments: { argv: ["sh", "-c", "touch pwned"] } },
]
  .map((c) => JSON.stringify(c))
  .join("\n");

function freshRoot() {
  fs.rmSync(root, { recursive: true, force: true });
  fs.mkdirSync(root);
  fs.writeFileSync(path.join(root, "a.txt"), "hello TODO\n");
  const g = (...a: string[]) => Bun.spawnSync(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", ...a], { cwd: root });
  g("init", "-q");
  g("add", ".");
  g("commit", "-qm", "x");
}

beforeAll(() => {
  base = tmp("agentcore-wscli-");
  root = path.join(base, "root");
});
afterAll(() => fs.rmSync(base, { recursive: true, force: true }));

const TOOLS = {
  list_dir: true,
  glob: true,
  grep: true,
  git_diff: true,
  write_file: true,
  apply_patch: true,
  exec: { allow: ["ls", "cat"] },
};

function expectOutcome(stdout: string) {
  const lines = stdout
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as { id: string; success: boolean; result: unknown; error: { code: string } | null });
  expect(lines.map((l) => l.success)).toEqual([true, true, true, true, true, true, true, false, false]);
  expect(lines[2]!.result).toEqual({ matches: ["a.txt", "d/b.txt"], truncated: false });
  expect((lines[3]!.result as { matches: unknown[] }).matches).toEqual([
    { path: "a.txt", line: 1, text: "hello TODO" },
    { path: "d/b.txt", line: 2, text: "two" },
  ]);
  expect((lines[5]!.result as { stdout: string }).stdout).toBe("one\nTWO\n");
  expect((lines[6]!.result as { output: string }).output).toBe("?? d/b.txt\n");
  expect(lines[7]!.error?.code).toBe("PATH_TRAVERSAL");
  expect(lines[8]!.error?.code).toBe("COMMAND_NOT_ALLOWED");
  expect(fs.existsSync(path.join(base, "escape.txt"))).toBe(false);
  expect(fs.existsSync(path.join(root, "pwned"))).toBe(false);
  return lines;
}

describe("workspace tools through the CLI", () => {
  test("compiled binary: every tool from the config's tools section", () => {
    freshRoot();
    const cfg = config({ root: "./root", tools: TOOLS });
    const r = run([binaryPath(), "--config", cfg, "run", "-"], { stdin: CALLS });
    expect(r.status).toBe(1);
    expectOutcome(r.stdout);
  }, 120_000);

  test("deno run (read, env, write and run permissions only): the same calls, the same results", () => {
    freshRoot();
    const cfg = config({ root: "./root", tools: TOOLS });
    const r = run(
      [
        path.join(REPO, "node_modules/.bin/deno"),
        "run",
        "--allow-read",
        "--allow-env",
        "--allow-write",
        "--allow-run",
        path.join(REPO, "src/cli/main.ts"),
        "--config",
        cfg,
        "run",
        "-",
      ],
      { stdin: CALLS },
    );
    expect(r.status).toBe(1);
    expectOutcome(r.stdout);
  }, 120_000);

  test("--tools selects tools; 'read' and 'workspace' groups; tools --json shows effects", () => {
    freshRoot();
    const list = (flag: string[]) => {
      const r = run([binaryPath(), "--root", root, ...flag, "tools", "--json"]);
      expect(r.status).toBe(0);
      return (JSON.parse(r.stdout) as { name: string; effect: string }[]).map((t) => `${t.name}:${t.effect}`);
    };
    expect(list([])).toEqual(["echo:read_only", "read_file:read_only"]);
    expect(list(["--tools", "read"])).toEqual([
      "echo:read_only",
      "read_file:read_only",
      "list_dir:read_only",
      "glob:read_only",
      "grep:read_only",
      "git_diff:read_only",
    ]);
    expect(list(["--tools", "workspace"]).slice(2)).toEqual([
      "list_dir:read_only",
      "glob:read_only",
      "grep:read_only",
      "git_diff:read_only",
      "write_file:side_effecting",
      "apply_patch:side_effecting",
    ]);
    expect(list(["--tools", "write_file,glob"]).slice(2)).toEqual(["glob:read_only", "write_file:side_effecting"]);
    const w = run([
      binaryPath(),
      "--root",
      root,
      "--tools",
      "write_file",
      "execute",
      '{"id":"w","tool":"write_file","arguments":{"path":"n.txt","content":"hi"}}',
    ]);
    expect(w.status).toBe(0);
    expect(fs.readFileSync(path.join(root, "n.txt"), "utf8")).toBe("hi");
  }, 120_000);

  test("bad --tools lists and bad tools sections exit 2 naming the problem", () => {
    const cases: [string[], string][] = [
      [["--tools", "nope"], 'unknown tool "nope"'],
      [["--tools", "exec"], 'needs a config file with a "tools.exec" section'],
      [["--tools", ","], "at least one tool"],
      [["--config", config({ tools: { grep: { max_results: 0 } } }, "c1.json")], '"tools.grep.max_results" must be a positive integer'],
      [["--config", config({ tools: { exec: { allow: ["ls"], shell: true } } }, "c2.json")], 'unknown key "tools.exec.shell"'],
      [["--config", config({ tools: { exec: true } }, "c3.json")], '"tools.exec" needs an object with an "allow" list'],
      [["--config", config({ tools: { exec: { allow: ["ls", 3] } } }, "c4.json")], '"tools.exec.allow[1]" must be a non-empty string'],
      [
        ["--config", config({ tools: { exec: { allow: ["ls"], isolation: "maybe" } } }, "c5.json")],
        '"tools.exec.isolation" must be one of auto, required, off',
      ],
      [["--config", config({ tools: { bash: true } }, "c6.json")], 'unknown key "tools.bash"'],
      [["--config", config({ tools: { exec: { allow: ["/bin/sh"] } } }, "c7.json")], "must be a bare program name"],
      [
        ["--config", config({ tools: { exec: { allow: ["ls"], env: ["LD_PRELOAD"] } } }, "c8.json")],
        'environment variable "LD_PRELOAD" can\'t be allowlisted',
      ],
    ];
    for (const [flags, message] of cases) {
      const r = run([binaryPath(), ...flags, "tools"]);
      expect(r.status).toBe(2);
      expect(r.stderr).toContain(message);
      expect(r.stdout).toBe("");
    }
  }, 120_000);

  test("the config file inside the root is out of the tools' reach", () => {
    freshRoot();
    const cfg = path.join(root, "agentcore.jsonc");
    fs.writeFileSync(cfg, JSON.stringify({ root: ".", tools: { write_file: true } }));
    const r = run([
      binaryPath(),
      "--config",
      "root/agentcore.jsonc",
      "execute",
      '{"id":"c","tool":"write_file","arguments":{"path":"agentcore.jsonc","content":"{}"}}',
    ]);
    expect(r.status).toBe(1);
    expect(JSON.parse(r.stdout).error.code).toBe("PATH_PROTECTED");
    expect(JSON.parse(fs.readFileSync(cfg, "utf8"))).toEqual({ root: ".", tools: { write_file: true } });
  }, 120_000);

  test("without bubblewrap: one start-up warning, and results say isolated:false", () => {
    freshRoot();
    const bin = path.join(base, "bin");
    fs.mkdirSync(bin, { recursive: true });
    if (!fs.existsSync(path.join(bin, "ls"))) fs.symlinkSync(Bun.which("ls")!, path.join(bin, "ls"));
    const cfg = config({ root: "./root", tools: { exec: { allow: ["ls"] } } }, "nobwrap.json");
    const r = run([binaryPath(), "--config", cfg, "execute", '{"id":"x","tool":"exec","arguments":{"argv":["ls"]}}'], {
      env: { PATH: bin, HOME: base },
    });
    expect(r.status).toBe(0);
    expect(r.stderr.match(/warning: bubblewrap/g)?.length).toBe(1);
    expect(JSON.parse(r.stdout).result).toMatchObject({ exit_code: 0, stdout: "a.txt\n", isolated: false });
    const req = config({ root: "./root", tools: { exec: { allow: ["ls"], isolation: "required" } } }, "required.json");
    const q = run([binaryPath(), "--config", req, "tools"], { env: { PATH: bin, HOME: base } });
    expect(q.status).toBe(2);
    expect(q.stderr).toContain('isolation is "required" but bubblewrap');
  }, 120_000);
});

describe("workspace tools from a Node 20 bundle of the library", () => {
  test("grep (worker_threads fallback, budget included), glob and write_file work under node", () => {
    freshRoot();
    fs.writeFileSync(path.join(root, "long.txt"), "a".repeat(5000) + "!\n");
    const bundle = path.join(base, "agentcore.mjs");
    // the main entry's runtime and the agentcore/workspace entry's tools, in one bundle
    const entry = path.join(base, "entry.ts");
    fs.writeFileSync(
      entry,
      `export { createRuntime } from ${JSON.stringify(path.join(REPO, "src/mod.ts"))};\nexport { workspaceTools } from ${JSON.stringify(path.join(REPO, "src/entries/workspace.ts"))};\n`,
    );
    const b = run([process.execPath, "build", entry, "--target", "node", "--format", "esm", "--outfile", bundle]);
    expect(b.status).toBe(0);
    const script = path.join(base, "ws.mjs");
    fs.writeFileSync(
      script,
      `import { createRuntime, workspaceTools } from ${JSON.stringify(bundle)};
const root = ${JSON.stringify(root)};
const rt = createRuntime({ root, tools: workspaceTools({ glob: true, grep: { timeout_ms: 1000 }, write_file: true }, root) });
const call = async (tool, args) => { const e = await rt.dispatchCall({ id: "n", tool, arguments: args, shape: "agentcore" }); return e.success ? e.result : e.error.code; };
console.log(JSON.stringify([
  await call("write_file", { path: "w/x.txt", content: "TODO from node\\n" }),
  await call("glob", { pattern: "**/*.txt" }),
  (await call("grep", { pattern: "TODO" })).matches,
  await call("grep", { pattern: "a*a*a*a*a*b", path: "long.txt" }),
]));
`,
    );
    const r = run(["node", script]);
    expect(r.stderr).toBe("");
    expect(JSON.parse(r.stdout)).toEqual([
      { path: "w/x.txt", bytes: 15, created: true },
      { matches: ["a.txt", "long.txt", "w/x.txt"], truncated: false },
      [
        { path: "a.txt", line: 1, text: "hello TODO" },
        { path: "w/x.txt", line: 1, text: "TODO from node" },
      ],
      "TIMEOUT",
    ]);
  }, 120_000);
});

describe("an agent run with the workspace tools", () => {
  test("a scripted model greps, patches and runs a command through the compiled binary", () => {
    freshRoot();
    const turn = (calls: { id: string; name: string; args: unknown }[]) =>
      JSON.stringify({ content: null, tool_calls: calls.map((c) => ({ id: c.id, name: c.name, arguments: JSON.stringify(c.args) })) });
    const script = path.join(base, "agent.jsonl");
    fs.writeFileSync(
      script,
      [
        turn([
          { id: "g1", name: "grep", args: { pattern: "TODO" } },
          { id: "g2", name: "glob", args: { pattern: "*.txt" } },
        ]),
        turn([{ id: "p1", name: "apply_patch", args: { edits: [{ path: "a.txt", old: "hello TODO", new: "hello DONE" }] } }]),
        turn([{ id: "x1", name: "exec", args: { argv: ["cat", "a.txt"] } }]),
        JSON.stringify({ content: "Fixed the TODO." }),
      ].join("\n") + "\n",
    );
    const cfg = config({ root: "./root", tools: { exec: { allow: ["cat"] } } }, "agent.json");
    const r = run([
      binaryPath(),
      "--config",
      cfg,
      "--tools",
      "workspace,exec",
      "agent",
      "--script",
      script,
      "--approve-all",
      "--events",
      "jsonl",
      "Fix the TODO",
    ]);
    expect(r.status).toBe(0);
    expect(fs.readFileSync(path.join(root, "a.txt"), "utf8")).toBe("hello DONE\n");
    const events = r.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { kind: string; tool_call?: { name: string }; result?: unknown });
    const done = events.filter((e) => e.kind === "tool_completed").map((e) => [e.tool_call!.name, JSON.stringify(e.result)]);
    expect(done.map(([name]) => name)).toEqual(["grep", "glob", "apply_patch", "exec"]);
    expect(done[3]![1]).toContain("hello DONE");
    expect(events.at(-1)!.kind).toBe("agent_finished");
  }, 120_000);
});

describe("agentcore ending while exec runs", () => {
  // The command has its own process group, so a signal aimed at agentcore
  // (kill, a terminal's Ctrl-C or hang-up) never reaches it: agentcore must
  // kill it on the way out. Isolation off: bubblewrap's --die-with-parent
  // would hide the problem.
  test("a command that handles the signal itself keeps running, even when its handler (registered first) aborts the call", () => {
    // As serve does: its listener comes first; aborting the call inside the
    // dispatch releases the child's clean-up and removes the host's listener,
    // which the dispatch still calls.
    const script = path.join(base, "own-handler.ts");
    fs.writeFileSync(
      script,
      `import { runProcess } from ${JSON.stringify(path.join(REPO, "src/tools/workspace/process.ts"))};
import { installProcessHost } from ${JSON.stringify(path.join(REPO, "src/host/process.ts"))};
installProcessHost(); // as the CLI and the daemon do: the running child arms its guard
const ac = new AbortController();
let handled = 0;
process.on("SIGTERM", () => { handled++; ac.abort(); });
const p = runProcess({ file: "/bin/sleep", args: ["30"], cwd: "/", env: {}, timeoutMs: 60000, maxOutputBytes: 100, signal: ac.signal }).catch(() => "aborted");
setTimeout(() => process.kill(process.pid, "SIGTERM"), 300);
console.log(await p, handled);
await new Promise((r) => setTimeout(r, 200));
console.log("still running");
`,
    );
    const r = run([process.execPath, script]);
    expect(r.stdout).toBe("aborted 1\nstill running\n");
    expect(r.status).toBe(0);
  }, 60_000);

  for (const [signal, status] of [
    ["SIGTERM", 143],
    ["SIGINT", 130],
    ["SIGHUP", 129],
  ] as const) {
    test(`${signal} to agentcore execute kills the running command and its grandchildren (exit ${status})`, async () => {
      freshRoot();
      const marker = `agentcore-sig-${signal}-${process.pid}-${Date.now()}`;
      const cfg = config(
        { root: "./root", tools: { exec: { allow: ["bun"], env: ["PATH"], isolation: "off", timeout_ms: 60_000 } } },
        `sig-${signal}.json`,
      );
      const call = JSON.stringify({ id: "s", tool: "exec", arguments: { argv: ["bun", "-e", forkingScript(marker)] } });
      const child = Bun.spawn([process.execPath, path.join(REPO, "src/cli/main.ts"), "--config", cfg, "execute", call], {
        cwd: base,
        stdin: "ignore",
        stdout: "pipe",
        stderr: "pipe",
        env: { PATH: `${path.join(REPO, "node_modules", ".bin")}:${process.env.PATH}`, HOME: base },
      });
      try {
        for (let i = 0; i < 600 && livePidsWith(marker).length === 0; i++) await Bun.sleep(50);
        expect(livePidsWith(marker).length).toBe(1);
        child.kill(signal);
        expect(await child.exited).toBe(status);
        expect(await waitGone(marker)).toEqual([]);
      } finally {
        child.kill("SIGKILL");
        for (const pid of livePidsWith(marker)) process.kill(pid, "SIGKILL");
      }
    }, 120_000);
  }
});
