/**
 * A closed pipe on stdout (`agentcore run … | head -c 5`), through the
 * compiled binary and a real shell pipeline: the command stops quietly (empty
 * stderr) with exit status 141 (128 + SIGPIPE, as a shell reports for
 * `git log | head`), and a session journal keeps what was written.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { binaryPath } from "../support/binary.ts";
import { tmp } from "../support/tmp.ts";

let work: string;
let bin: string;

beforeAll(() => {
  work = tmp("agentcore-epipe-");
  bin = binaryPath();
}, 120_000);

afterAll(() => {
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

interface Piped {
  status: number;
  stderr: string;
  head: string;
}

/**
 * `{ agentcore ARGS 2>ERR; echo $? >ST; } | head -c 5` in `cwd`: the first 5
 * bytes, agentcore's own status and its stderr. Each command below writes far
 * more than a pipe holds, so its write meets the closed pipe after head exits.
 */
function pipedToHead(cwd: string, args: string[]): Piped {
  const err = path.join(cwd, `stderr-${Math.random().toString(36).slice(2)}`);
  const st = `${err}.status`;
  const r = Bun.spawnSync(["sh", "-c", '{ "$0" "$@" 2>"$AC_ERR"; echo $? >"$AC_ST"; } | head -c 5', bin, ...args], {
    cwd,
    stdin: "ignore",
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", AC_ERR: err, AC_ST: st },
  });
  expect(r.exitCode).toBe(0); // head's
  return { status: Number(fs.readFileSync(st, "utf8").trim()), stderr: fs.readFileSync(err, "utf8"), head: r.stdout.toString() };
}

function cli(cwd: string, ...args: string[]) {
  const r = Bun.spawnSync([bin, ...args], { cwd, stdin: "ignore", env: { PATH: process.env.PATH ?? "/usr/bin:/bin" } });
  return { status: r.exitCode ?? -1, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

function dir(name: string): string {
  const d = path.join(work, name);
  fs.mkdirSync(d);
  return d;
}

describe("stdout closed early: quiet exit 141", () => {
  test("run FILE | head -c 5", () => {
    const d = dir("run");
    const line = JSON.stringify({ tool: "echo", arguments: { message: "x".repeat(200) } });
    fs.writeFileSync(path.join(d, "calls.jsonl"), `${line}\n`.repeat(5000)); // ~1.2 MB of envelopes
    const r = pipedToHead(d, ["run", "calls.jsonl"]);
    expect(r.head).toBe('{"id"');
    expect(r.stderr).toBe("");
    expect(r.status).toBe(141);
  }, 60_000);

  test("run - (calls on stdin) | head -c 5", () => {
    const d = dir("run-stdin");
    const line = JSON.stringify({ tool: "echo", arguments: { message: "x".repeat(200) } });
    fs.writeFileSync(path.join(d, "calls.jsonl"), `${line}\n`.repeat(5000));
    const s = Bun.spawnSync(["sh", "-c", '{ "$0" run - <calls.jsonl 2>err.txt; echo $? >st.txt; } | head -c 5', bin], {
      cwd: d,
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
    });
    expect(s.stdout.toString()).toBe('{"id"');
    expect(fs.readFileSync(path.join(d, "err.txt"), "utf8")).toBe("");
    expect(fs.readFileSync(path.join(d, "st.txt"), "utf8").trim()).toBe("141");
  }, 60_000);

  test("execute (one large envelope) | head -c 5", () => {
    const d = dir("execute");
    fs.writeFileSync(path.join(d, "big.txt"), "w".repeat(900_000));
    const r = pipedToHead(d, ["execute", '{"id":"c1","tool":"read_file","arguments":{"path":"big.txt"}}']);
    expect(r.head).toBe('{"id"');
    expect(r.stderr).toBe("");
    expect(r.status).toBe(141);
  }, 60_000);

  test("agent --events jsonl --session | head -c 5: the run is aborted and journaled, earlier runs kept", () => {
    const d = dir("agent");
    const answer = "first answer " + "a".repeat(200_000);
    fs.writeFileSync(path.join(d, "first.jsonl"), JSON.stringify({ content: answer }) + "\n");
    fs.writeFileSync(
      path.join(d, "big.jsonl"),
      [
        { content: null, tool_calls: [{ id: "c1", name: "echo", arguments: JSON.stringify({ message: "y".repeat(300_000) }) }] },
        { content: "z".repeat(300_000) },
      ]
        .map((t) => JSON.stringify(t))
        .join("\n") + "\n",
    );
    const first = cli(d, "agent", "--session", "S", "--script", "first.jsonl", "one");
    expect(first.stderr).toBe("");
    expect(first.status).toBe(0);

    const r = pipedToHead(d, ["agent", "--session", "S", "--events", "jsonl", "--script", "big.jsonl", "two"]);
    expect(r.head).toBe('{"age');
    expect(r.stderr).toBe("");
    expect(r.status).toBe(141);

    const shown = cli(d, "sessions", "show", "S", "--json");
    expect(shown.status).toBe(0);
    const s = JSON.parse(shown.stdout);
    expect(s.session.runs.map((x: { task: string; result: { status: string } | null }) => [x.task, x.result?.status ?? null])).toEqual([
      ["one", "completed"],
      ["two", "cancelled"],
    ]);
    expect(s.session.runs[1].result.error).toContain("EPIPE");
    expect(s.messages.slice(0, 2)).toEqual([
      { role: "user", content: "one" },
      { role: "assistant", content: answer },
    ]);
    // a self-parsing command (sessions) stops quietly too
    const piped = pipedToHead(d, ["sessions", "show", "S", "--json"]);
    expect(piped).toEqual({ status: 141, stderr: "", head: '{"ses' });
    // the session takes the next run (nothing left unfinished)
    fs.writeFileSync(path.join(d, "next.jsonl"), JSON.stringify({ content: "three done" }) + "\n");
    const next = cli(d, "agent", "--session", "S", "--script", "next.jsonl", "three");
    expect(next.stderr).toBe("");
    expect(next.status).toBe(0);
  }, 60_000);

  test("another output failure (a full disk: /dev/full) is still reported, exit 2", () => {
    if (!fs.existsSync("/dev/full")) return;
    const d = dir("full");
    const r = Bun.spawnSync(["sh", "-c", '"$0" execute \'{"tool":"echo","arguments":{"message":"hi"}}\' >/dev/full', bin], {
      cwd: d,
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
    });
    expect(r.exitCode).toBe(2);
    expect(r.stderr.toString()).toBe("agentcore: cannot write results: ENOSPC\n");
  }, 60_000);
});

test("--help and docs/cli.md document exit status 141", () => {
  for (const c of ["tools", "execute", "run", "agent"]) expect(cli(work, c, "--help").stdout).toContain("141  stdout's reader went away");
  // The other commands that write to stdout stop the same way, and say so.
  for (const c of [["history"], ["skills"], ["sessions", "list"], ["sessions", "show"], ["sessions", "tree"]]) {
    expect(cli(work, ...c, "--help").stdout).toContain("141  stdout's reader went away");
  }
  const doc = fs.readFileSync(path.join(import.meta.dir, "../../docs/cli.md"), "utf8");
  expect(doc).toContain("141 (128 +\nSIGPIPE");
});
