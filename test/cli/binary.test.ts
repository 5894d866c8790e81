/**
 * End to end through the compiled single binary: it is built here with
 * `bun build --compile`, copied to a folder with no node_modules, and run as a
 * real child process from there.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, rmSync, writeFileSync, readFileSync } from "node:fs";
import { binaryPath } from "../support/binary.ts";
import { join, resolve } from "node:path";
import { tmp } from "../support/tmp.ts";

const repo = resolve(import.meta.dir, "../..");
let work: string;
let bin: string;

beforeAll(() => {
  work = tmp("agentcore-bin-");
  bin = binaryPath();
  mkdirSync(join(work, "root", "docs"), { recursive: true });
  writeFileSync(join(work, "root", "docs", "note.txt"), "héllo\n");
}, 120_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

interface Out {
  status: number;
  stdout: string;
  stderr: string;
}

function run(args: string[], opts: { stdin?: string; cwd?: string; env?: Record<string, string> } = {}): Out {
  const r = Bun.spawnSync([bin, ...args], {
    cwd: opts.cwd ?? work,
    stdin: opts.stdin === undefined ? "ignore" : new TextEncoder().encode(opts.stdin),
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...opts.env },
  });
  return { status: r.exitCode ?? -1, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

/** Parse output lines, checking that each is compact and that duration_ms is a non-negative number. */
function envelopes(stdout: string): Record<string, unknown>[] {
  const lines = stdout.split("\n");
  expect(lines.pop()).toBe("");
  return lines.map((l) => {
    const v = JSON.parse(l) as Record<string, unknown>;
    expect(JSON.stringify(v)).toBe(l);
    expect(Object.keys(v)).toEqual(["id", "success", "tool", "result", "error", "duration_ms"]);
    expect(typeof v.duration_ms).toBe("number");
    expect(v.duration_ms as number).toBeGreaterThanOrEqual(0);
    delete v.duration_ms;
    return v;
  });
}

describe("compiled binary", () => {
  test("--version and --help", () => {
    const pkg = JSON.parse(readFileSync(join(repo, "package.json"), "utf8")) as { version: string };
    const v = run(["--version"]);
    expect(v).toEqual({ status: 0, stdout: `agentcore ${pkg.version}\n`, stderr: "" });
    const h = run(["--help"]);
    expect(h.status).toBe(0);
    for (const word of ["tools", "execute", "run", "agentcore COMMAND --help", "AGENTCORE_LOG_LEVEL"]) {
      expect(h.stdout).toContain(word);
    }
    // the flags are in each command's own help
    const e = run(["execute", "--help"]);
    expect(e.status).toBe(0);
    for (const word of ["--root", "--max-input-bytes", "--max-depth", "Exit status"]) expect(e.stdout).toContain(word);
  });

  test("usage errors exit 2 with a hint on stderr and nothing on stdout", () => {
    for (const args of [
      [],
      ["frobnicate"],
      ["execute"],
      ["execute", "a", "b"],
      ["run"],
      ["tools", "x"],
      ["--bogus", "tools"],
      ["execute", "--max-depth", "0", "{}"],
      ["execute", "--max-input-bytes", "12x", "{}"],
    ]) {
      const r = run(args);
      expect(r.status).toBe(2);
      expect(r.stdout).toBe("");
      // the hint names the command's own help (the overview when there is no command)
      expect(r.stderr).toMatch(/\nRun 'agentcore( [a-z]+)? --help' for usage\.\n$/);
    }
  });

  test("tools: table and JSON", () => {
    const t = run(["tools"]);
    expect(t.status).toBe(0);
    const lines = t.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^NAME\s+EFFECT\s+DESCRIPTION$/);
    expect(lines.slice(1).map((l) => l.split(/\s+/).slice(0, 2))).toEqual([
      ["echo", "read_only"],
      ["read_file", "read_only"],
    ]);
    const j = run(["tools", "--json"]);
    expect(j.status).toBe(0);
    const list = JSON.parse(j.stdout) as { name: string; effect: string; parameters: { type: string } }[];
    expect(list.map((x) => [x.name, x.effect, x.parameters.type])).toEqual([
      ["echo", "read_only", "object"],
      ["read_file", "read_only", "object"],
    ]);
  });

  test("execute: exact success envelope, exit 0", () => {
    const r = run(["execute", '{"id":"call_001","tool":"echo","arguments":{"message":"hello"}}']);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(
      /^\{"id":"call_001","success":true,"tool":"echo","result":\{"message":"hello"\},"error":null,"duration_ms":\d+(\.\d+)?\}\n$/,
    );
  });

  test("execute: malformed call gives a whole envelope, exit 1", () => {
    const r = run(["execute", '{"id":"call_001","tool":"echo","arguments":{"message":"hello"}']);
    expect(r.status).toBe(1);
    expect(envelopes(r.stdout)).toEqual([
      {
        id: null,
        success: false,
        tool: null,
        result: null,
        error: { code: "JSON_PARSE", message: "unexpected end of data", details: { offset: 62, line: 1, column: 63 } },
      },
    ]);
  });

  test("execute -: reads the call from stdin", () => {
    const r = run(["execute", "-"], { stdin: '{"type":"tool_use","id":"t1","name":"echo","input":{"k":[true,null]}}\n' });
    expect(r.status).toBe(0);
    expect(envelopes(r.stdout)).toEqual([{ id: "t1", success: true, tool: "echo", result: { k: [true, null] }, error: null }]);
  });

  test("execute -: input over the limit is refused without reading it whole", () => {
    const r = run(["execute", "--max-input-bytes", "64", "-"], { stdin: `{"tool":"echo","arguments":{"s":"${"x".repeat(500)}"}}` });
    expect(r.status).toBe(1);
    const [e] = envelopes(r.stdout);
    expect((e!.error as { code: string }).code).toBe("JSON_SIZE");
  });

  test("execute: read_file confined to --root, from any working directory", () => {
    const ok = run(["execute", "--root", join(work, "root"), '{"id":"r1","tool":"read_file","arguments":{"path":"docs/note.txt"}}'], {
      cwd: "/",
    });
    expect(ok.status).toBe(0);
    expect(envelopes(ok.stdout)[0]!.result).toEqual({ path: "docs/note.txt", bytes: 7, content: "héllo\n" });
    const bad = run(["execute", "--root", join(work, "root"), '{"id":"r2","tool":"read_file","arguments":{"path":"../bin/agentcore"}}']);
    expect(bad.status).toBe(1);
    expect((envelopes(bad.stdout)[0]!.error as { code: string }).code).toBe("PATH_TRAVERSAL");
  });

  test("execute: a missing --root folder is a usage error", () => {
    const r = run(["execute", "--root", join(work, "nope"), '{"tool":"echo","arguments":{}}']);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("no such folder");
  });

  test("run: the example file, in order, good and bad lines mixed, exit 1", () => {
    const r = run(["run", join(repo, "examples/tool_calls.jsonl"), "--root", repo]);
    expect(r.status).toBe(1);
    const out = envelopes(r.stdout);
    expect(out.map((e) => [e.id, e.success, (e.error as { code: string } | null)?.code ?? null])).toEqual([
      ["call_001", true, null],
      ["call_002", true, null],
      ["call_003", true, null],
      ["call_004", true, null],
      ["call_005", true, null],
      [null, false, "JSON_DUPLICATE_KEY"],
      ["call_007", false, "PATH_TRAVERSAL"],
      ["call_008", false, "UNKNOWN_TOOL"],
      [null, false, "JSON_PARSE"],
    ]);
    // input_line counts the blank line that was skipped
    expect(out.map((e) => (e.error as { details: { input_line?: number } } | null)?.details.input_line ?? null)).toEqual([
      null,
      null,
      null,
      null,
      null,
      7,
      8,
      9,
      10,
    ]);
  });

  test("run -: stdin, blank lines skipped, CRLF accepted, all good → exit 0", () => {
    const input = '{"tool":"echo","arguments":{"n":1}}\r\n\n   \n{"tool":"echo","arguments":{"n":2}}';
    const r = run(["run", "-"], { stdin: input });
    expect(r.status).toBe(0);
    expect(envelopes(r.stdout).map((e) => e.result)).toEqual([{ n: 1 }, { n: 2 }]);
  });

  test("run: an over-long line gets its own JSON_SIZE envelope and the next lines still run", () => {
    const long = `{"tool":"echo","arguments":{"s":"${"y".repeat(5000)}"}}`;
    const input = `{"id":"a","tool":"echo","arguments":{}}\n${long}\n{"id":"b","tool":"echo","arguments":{}}\n`;
    const r = run(["run", "--max-input-bytes", "1000", "-"], { stdin: input });
    expect(r.status).toBe(1);
    const out = envelopes(r.stdout);
    expect(out.map((e) => e.id)).toEqual(["a", null, "b"]);
    expect(out[1]!.error).toEqual({
      code: "JSON_SIZE",
      message: "input exceeds 1000 bytes",
      details: { bytes: long.length, input_line: 2 },
    });
  });

  test("run: an unreadable input file exits 2 with nothing on stdout", () => {
    const r = run(["run", join(work, "missing.jsonl")]);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("ENOENT");
    const d = run(["run", work]);
    expect(d.status).toBe(2);
    expect(d.stderr).toContain("is a directory");
  });

  test("run: an output failure exits 2", () => {
    // /dev/full (Linux) fails every write with ENOSPC; macOS has no such device.
    if (!existsSync("/dev/full")) return;
    const r = Bun.spawnSync(["sh", "-c", `'${bin}' execute '{"tool":"echo","arguments":{}}' > /dev/full`]);
    expect(r.exitCode).toBe(2);
    expect(r.stderr.toString()).toContain("cannot write results");
  });

  test("run: progress on stderr only when it is a terminal", () => {
    const calls = join(work, "many.jsonl");
    writeFileSync(calls, '{"tool":"echo","arguments":{}}\n'.repeat(2000));
    const piped = run(["run", calls]);
    expect(piped.status).toBe(0);
    expect(piped.stderr).toBe("");
    expect(piped.stdout.split("\n")).toHaveLength(2001);
    if (process.platform !== "linux") return; // util-linux `script` gives the pseudo-terminal below
    // `script` runs the binary on a real pseudo-terminal; stdout goes to a file.
    const out = join(work, "many.out");
    const r = Bun.spawnSync(["script", "-qec", `'${bin}' run '${calls}' > '${out}'`, "/dev/null"], { stdin: "ignore" });
    expect(r.exitCode).toBe(0);
    const screen = r.stdout.toString();
    expect(screen).toMatch(/agentcore: 2,000 calls, [0-9,]+\/s/);
    expect(readFileSync(out, "utf8").split("\n")).toHaveLength(2001);
  });

  test("logs go to stderr, results only to stdout", () => {
    const r = run(["execute", '{"tool":"echo","arguments":{"x":1}}'], { env: { AGENTCORE_LOG_LEVEL: "trace" } });
    expect(r.status).toBe(0);
    expect(envelopes(r.stdout)).toHaveLength(1);
    expect(r.stderr.length).toBeGreaterThan(0);
  });

  test("config file: root and limits from JSONC; bad config exits 2 naming the key", () => {
    const cfg = join(work, "agentcore.jsonc");
    writeFileSync(cfg, '{\n  // comments are fine\n  "root": "root",\n  "max_depth": 3,\n}\n');
    const ok = run(["execute", "--config", cfg, '{"tool":"read_file","arguments":{"path":"docs/note.txt"}}'], { cwd: "/" });
    expect(ok.status).toBe(0);
    const deep = run(["execute", "--config", cfg, '{"tool":"echo","arguments":{"a":[[1]]}}']);
    expect((envelopes(deep.stdout)[0]!.error as { code: string }).code).toBe("JSON_DEPTH");
    // a "history" key: relative to the config file, written by execute, read back by `history`
    writeFileSync(cfg, '{"root": "root", "history": "audit/calls.jsonl"}');
    mkdirSync(join(work, "audit"), { recursive: true });
    const logged = run(["execute", "--config", cfg, '{"id":"h1","tool":"echo","arguments":{"x":1}}'], { cwd: "/" });
    expect(logged.status).toBe(0);
    const hist = run(["history", "--config", cfg, "--json"], { cwd: "/" });
    expect(hist.status).toBe(0);
    expect(JSON.parse(hist.stdout.trim())).toMatchObject({ tool: "echo", call_id: "h1", success: true, code: null });
    writeFileSync(cfg, '{"max_dept": 3}');
    const bad = run(["tools", "--config", cfg]);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('unknown key "max_dept"');
  });
});
