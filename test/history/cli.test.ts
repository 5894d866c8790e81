/**
 * `agentcore history`: the command function (table, --json, filters, exit
 * statuses) and the `--since` parser.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { closeSync, openSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cmdHistory, parseSince } from "../../src/cli/history.ts";
import { readHistory } from "../../src/runtime/history.ts";
import { LineWriter } from "../../src/cli/output.ts";
import { record, tempDir } from "../support/history.ts";

let dir: string;
let cleanup: () => void;
let file: string;
beforeEach(() => {
  ({ dir, cleanup } = tempDir());
  file = join(dir, "history.jsonl");
  const recs = [
    record({ call_id: "c1", tool: "echo", time: "2026-11-30T08:00:00.000Z", decision: { action: "allow", by: "rule:0" } }),
    record({ call_id: "c2", tool: "read_file", time: "2026-11-30T08:30:00.000Z", success: false, code: "NOT_FOUND", duration_ms: 3.25 }),
    record({
      call_id: "c3",
      tool: "write_file",
      effect: "side_effecting",
      time: "2026-11-30T09:00:00.000Z",
      success: false,
      code: "DENIED",
      decision: { action: "deny", by: "default" },
    }),
  ];
  writeFileSync(file, recs.map((r) => JSON.stringify(r)).join("\n") + "\n");
});
afterEach(() => cleanup());

const NOW = new Date("2026-11-30T09:10:00.000Z");

function run(argv: string[], env: Record<string, string> = {}) {
  const outPath = join(dir, `out-${Math.random()}`);
  const fd = openSync(outPath, "w");
  let stderr = "";
  let status: number;
  try {
    status = cmdHistory(argv, { out: new LineWriter(fd), err: (t) => (stderr += t), env: (n) => env[n], now: () => NOW }) as number;
  } finally {
    closeSync(fd);
  }
  return { status, stdout: readFileSync(outPath, "utf8"), stderr };
}

describe("agentcore history (command function)", () => {
  test("a table with time, tool, call id, decision, ms and result", () => {
    const r = run(["--file", file]);
    expect(r.status).toBe(0);
    const rows = r.stdout.trimEnd().split("\n");
    expect(rows[0]).toMatch(/^TIME\s+TOOL\s+CALL ID\s+DECISION\s+MS\s+RESULT$/);
    expect(rows.length).toBe(4);
    expect(rows[1]).toMatch(/^2026-11-30T08:00:00\.000Z\s+echo\s+c1\s+allow by rule:0\s+1\.3\s+ok$/);
    expect(rows[2]).toMatch(/read_file\s+c2\s+-\s+3\.3\s+NOT_FOUND$/);
    expect(rows[3]).toMatch(/write_file\s+c3\s+deny by default\s+1\.3\s+DENIED$/);
  });

  test("--json prints the stored records as JSONL", () => {
    const r = run(["--file", file, "--json"]);
    expect(r.status).toBe(0);
    expect(r.stdout).toBe(readFileSync(file, "utf8"));
  });

  test("--tool, --failed and --since filter", () => {
    const ids = (argv: string[]) =>
      run(["--file", file, "--json", ...argv])
        .stdout.trimEnd()
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l).call_id);
    expect(ids(["--tool", "echo"])).toEqual(["c1"]);
    expect(ids(["--failed"])).toEqual(["c2", "c3"]);
    expect(ids(["--since", "2026-11-30T08:30:00Z"])).toEqual(["c2", "c3"]);
    expect(ids(["--since", "15m"])).toEqual(["c3"]);
    expect(ids(["--since", "1h", "--failed", "--tool", "read_file"])).toEqual(["c2"]);
    expect(ids(["--tool", "nothing"])).toEqual([]);
  });

  test("--history is accepted as the file too", () => {
    expect(run(["--history", file, "--json"]).stdout.split("\n").length).toBe(4);
  });

  test("a control character in a call id does not reach the terminal raw", () => {
    writeFileSync(file, JSON.stringify(record({ call_id: "a\u001b[31mred\nx" })) + "\n");
    const r = run(["--file", file]);
    expect(r.stdout).not.toContain("\u001b");
    expect(r.stdout).toContain("a\\u001b[31mred\\u000ax");
  });

  test("bad --since is a usage error, exit 2", () => {
    for (const bad of ["yesterday", "10", "10w", "2026-13-45", "-5m"]) {
      const r = run(["--file", file, "--since", bad]);
      expect(r.status).toBe(2);
      expect(r.stderr).toContain("--since");
      expect(r.stdout).toBe("");
    }
  });

  test("a missing file: exit 2 with a clear message", () => {
    const missing = join(dir, "absent.jsonl");
    const r = run(["--file", missing]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`cannot open history file ${missing}: ENOENT`);
  });

  test("no file given: usage error, exit 2", () => {
    const r = run([]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("--file FILE");
  });

  test("a corrupt line: exit 2 naming the file and line", () => {
    writeFileSync(file, readFileSync(file, "utf8").replace('"c2"', '"c2",,'));
    const r = run(["--file", file]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`${file}:2`);
  });

  test("unknown options and extra arguments are usage errors", () => {
    expect(run(["--file", file, "--bogus"]).status).toBe(2);
    expect(run(["--file", file, "extra"]).status).toBe(2);
  });

  test("--help prints the usage", () => {
    const r = run(["--help"]);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain("Usage: agentcore history");
  });
});

describe("parseSince", () => {
  test("ages count back from now", () => {
    expect(parseSince("30s", NOW).toISOString()).toBe("2026-11-30T09:09:30.000Z");
    expect(parseSince("10m", NOW).toISOString()).toBe("2026-11-30T09:00:00.000Z");
    expect(parseSince("2h", NOW).toISOString()).toBe("2026-11-30T07:10:00.000Z");
    expect(parseSince("1d", NOW).toISOString()).toBe("2026-11-29T09:10:00.000Z");
  });
  test("ISO 8601 times and dates", () => {
    expect(parseSince("2026-11-30T08:00:00Z").toISOString()).toBe("2026-11-30T08:00:00.000Z");
    expect(parseSince("2026-11-30T08:00:00.250+01:00").toISOString()).toBe("2026-11-30T07:00:00.250Z");
    expect(parseSince("2026-11-30").toISOString()).toBe("2026-11-30T00:00:00.000Z");
  });
});

describe("agentcore history (through src/cli/main.ts)", () => {
  const MAIN = join(import.meta.dir, "../../src/cli/main.ts");
  async function cli(args: string[], env: Record<string, string> = {}) {
    const p = Bun.spawn([process.execPath, MAIN, ...args], {
      cwd: dir,
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...env },
    });
    const [stdout, stderr, status] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    return { status, stdout, stderr };
  }

  test("table and --json, exit 0", async () => {
    const t = await cli(["history", "--file", file, "--failed"]);
    expect(t.status).toBe(0);
    expect(
      t.stdout
        .trimEnd()
        .split("\n")
        .map((l) => l.split(/\s+/)[2]),
    ).toEqual(["CALL", "c2", "c3"]);
    const j = await cli(["history", "--file", file, "--json", "--tool", "echo"]);
    expect(j.status).toBe(0);
    expect(JSON.parse(j.stdout).call_id).toBe("c1");
  });

  test("bad --since: exit 2", async () => {
    const r = await cli(["history", "--file", file, "--since", "soon"]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("--since");
  });

  test("missing file: exit 2 with a clear message", async () => {
    const r = await cli(["history", "--file", "absent.jsonl"]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("cannot open history file absent.jsonl: ENOENT");
    expect(r.stdout).toBe("");
  });

  test("no file: usage error, exit 2", async () => {
    const r = await cli(["history"]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("history needs a log file");
  });

  test("--help mentions the history command", async () => {
    const r = await cli(["--help"]);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain("  history   read an execution history log");
    expect((await cli(["run", "--help"])).stdout).toContain("read it with 'agentcore history')");
  });
});

describe("--history FILE on execute, run and agent (through src/cli/main.ts)", () => {
  const MAIN = join(import.meta.dir, "../../src/cli/main.ts");
  async function cli(args: string[], stdin?: string) {
    const p = Bun.spawn([process.execPath, MAIN, ...args], {
      cwd: dir,
      stdin: stdin === undefined ? "ignore" : new Blob([stdin]),
      stdout: "pipe",
      stderr: "pipe",
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
    });
    const [stdout, stderr, status] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    return { status, stdout, stderr };
  }
  let log: string;
  beforeEach(() => {
    log = join(dir, "calls.jsonl");
    writeFileSync(join(dir, "note.txt"), "hello\n");
  });

  test("execute appends one record per call; the file is created 0600", async () => {
    const a = await cli(["execute", "--history", log, '{"id":"e1","tool":"echo","arguments":{"message":"secret-msg-xyz"}}']);
    expect(a.status).toBe(0);
    const b = await cli(["execute", "--history", log, '{"id":"e2","tool":"read_file","arguments":{"path":"missing.txt"}}']);
    expect(b.status).toBe(1);
    const recs = readHistory(log);
    expect(recs.map((r) => [r.call_id, r.tool, r.success, r.code, r.decision])).toEqual([
      ["e1", "echo", true, null, null],
      ["e2", "read_file", false, "NOT_FOUND", null],
    ]);
    expect(statSync(log).mode & 0o777).toBe(0o600);
    expect(readFileSync(log, "utf8")).not.toContain("secret-msg-xyz");
  });

  test("run records every dispatched line; history reads them back", async () => {
    const calls = [
      '{"id":"r1","tool":"echo","arguments":{"x":1}}',
      '{"id":"r2","tool":"read_file","arguments":{"path":"note.txt"}}',
      '{"id":"r3","tool":"read_file","arguments":{"bad":true}}',
    ].join("\n");
    const r = await cli(["run", "--history", log, "-"], calls + "\n");
    expect(r.status).toBe(1);
    const h = await cli(["history", "--file", log, "--json", "--failed"]);
    expect(h.status).toBe(0);
    expect(
      h.stdout
        .trimEnd()
        .split("\n")
        .map((l) => JSON.parse(l).call_id),
    ).toEqual(["r3"]);
    const all = await cli(["--history", log, "history", "--json"]); // the flag before the command works too
    expect(all.stdout.trimEnd().split("\n").length).toBe(3);
  });

  test("agent records its tool calls with run information", async () => {
    const script = join(dir, "script.jsonl");
    writeFileSync(
      script,
      [
        JSON.stringify({ content: null, tool_calls: [{ id: "call_1", name: "read_file", arguments: '{"path":"note.txt"}' }] }),
        JSON.stringify({ content: "done" }),
      ].join("\n") + "\n",
    );
    const r = await cli(["agent", "--script", script, "--history", log, "read note.txt"]);
    expect(r.status).toBe(0);
    const [rec, ...more] = readHistory(log);
    expect(more).toEqual([]);
    expect(rec!.call_id).toBe("call_1");
    expect(rec!.success).toBe(true);
    expect(typeof rec!.run_id).toBe("string");
    expect(typeof rec!.agent_id).toBe("string");
    expect(rec!.turn).toBe(1);
  });

  test("with a config policy, denials are recorded with the rule or default that decided", async () => {
    const config = join(dir, "config.jsonc");
    writeFileSync(config, JSON.stringify({ policy: { default: "deny", rules: [{ id: "echo-only", action: "allow", tools: ["echo"] }] } }));
    const calls = ['{"id":"p1","tool":"echo","arguments":{}}', '{"id":"p2","tool":"read_file","arguments":{"path":"note.txt"}}'].join("\n");
    const r = await cli(["run", "--config", config, "--history", log, "-"], calls + "\n");
    expect(r.status).toBe(1);
    expect(readHistory(log).map((x) => [x.call_id, x.decision, x.code])).toEqual([
      ["p1", { action: "allow", by: "rule:echo-only" }, null],
      ["p2", { action: "deny", by: "default" }, "DENIED"],
    ]);
    const t = await cli(["history", "--file", log, "--failed"]);
    expect(t.stdout).toMatch(/p2\s+deny by default\s+\S+\s+DENIED/);
  });

  test("--history with tools is a usage error; an unopenable file exits 2", async () => {
    expect((await cli(["tools", "--history", log])).status).toBe(2);
    const bad = await cli(["execute", "--history", join(dir, "no", "such", "dir.jsonl"), '{"id":"x","tool":"echo","arguments":{}}']);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain("cannot open history file");
    expect(bad.stdout).toBe("");
  });
});

describe("the compiled binary", () => {
  test("execute --history, then history --json", async () => {
    const { binaryPath } = await import("../support/binary.ts");
    const bin = binaryPath();
    const log = join(dir, "bin-history.jsonl");
    const run = async (args: string[]) => {
      const p = Bun.spawn([bin, ...args], {
        cwd: dir,
        stdin: "ignore",
        stdout: "pipe",
        stderr: "pipe",
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
      });
      const [stdout, stderr, status] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
      return { status, stdout, stderr };
    };
    expect((await run(["execute", "--history", log, '{"id":"b1","tool":"echo","arguments":{"k":"v"}}'])).status).toBe(0);
    const h = await run(["history", "--file", log, "--json"]);
    expect(h.status).toBe(0);
    const rec = JSON.parse(h.stdout);
    expect([rec.call_id, rec.tool, rec.success]).toEqual(["b1", "echo", true]);
    const t = await run(["history", "--file", log, "--since", "1h"]);
    expect(t.status).toBe(0);
    expect(t.stdout).toContain("b1");
  }, 120_000);
});
