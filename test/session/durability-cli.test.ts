// Session durability through the compiled binary (and a real daemon on
// loopback): a torn first record, agents started at once on one branch, a
// journal that cannot be written (Deno without --allow-write, a read-only
// folder), record times.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { binaryPath, REPO } from "../support/binary.ts";
import { JsonlSessionStorage } from "../../src/session/index.ts";
import { startTestDaemon, type TestDaemon } from "../support/daemon.ts";
import { tmpPerTest } from "../support/tmp.ts";

const DENO = path.join(REPO, "node_modules/.bin/deno");
const tmp = tmpPerTest("agentcore-durable-cli-");

let bin: string;
beforeAll(() => {
  bin = binaryPath();
});

function cli(cwd: string, ...args: string[]) {
  const p = Bun.spawnSync([bin, ...args], { cwd, stdout: "pipe", stderr: "pipe", env: { ...process.env, NO_COLOR: "1" } });
  return { code: p.exitCode, stdout: p.stdout.toString(), stderr: p.stderr.toString() };
}

function script(dir: string, name: string, ...turns: unknown[]): string {
  const f = path.join(dir, name);
  fs.writeFileSync(f, turns.map((t) => JSON.stringify(t)).join("\n") + "\n");
  return f;
}

const sessionsDir = (dir: string) => path.join(dir, ".agentcore", "sessions");
const journal = (dir: string, id: string) => new JsonlSessionStorage(sessionsDir(dir)).fileFor(id);
const claimFiles = (dir: string) =>
  fs.existsSync(sessionsDir(dir)) ? fs.readdirSync(sessionsDir(dir)).filter((n) => n.includes(".branch-")) : [];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Wait (bounded) until `check` holds. */
async function until(check: () => boolean, what: string, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** A scripted turn that writes `file` (a trace that the tool ran), then a turn that waits ten minutes. */
const writeThenWait = (dir: string, name: string, file: string) =>
  script(
    dir,
    name,
    { content: null, tool_calls: [{ id: "w", name: "write_file", arguments: JSON.stringify({ path: file, content: "ran\n" }) }] },
    { content: "never reached", delay_ms: 600_000 },
  );

describe("a torn first record (item 5)", () => {
  /** A session `id` whose journal holds only the first `keep` bytes of a real first record. */
  function tornSession(dir: string, id: string, keep: (line: string) => number): { file: string; bytes: number } {
    const ok = script(dir, `seed-${id}.jsonl`, { content: "seed" });
    expect(cli(dir, "agent", "--no-plan", "--session", id, "--script", ok, "seed").code).toBe(0);
    const file = journal(dir, id);
    const first = fs.readFileSync(file, "utf8").split("\n")[0]!;
    const bytes = keep(first);
    fs.writeFileSync(file, first.slice(0, bytes));
    return { file, bytes };
  }

  for (const [kind, keep] of [
    ["torn after its session id", (l: string) => l.indexOf(',"time"')],
    ["torn before its session id", () => 30],
  ] as const) {
    test(`${kind}: sessions list shows it, show prints it empty and reports the torn line, agent --session works and records`, () => {
      const dir = tmp();
      const { file, bytes } = tornSession(dir, "torn", keep);
      const named = kind === "torn after its session id";

      let r = cli(dir, "sessions", "list");
      expect(r.code).toBe(0);
      if (named) {
        expect(r.stdout).toMatch(/(^| )torn {2}records 0 {2}runs 0/m);
        expect(r.stderr).toContain(`line 1 of session 'torn' (${file}) was torn: ${bytes} bytes`);
      } else {
        // its id is not in the fragment: the file is named instead, never left out silently
        expect(r.stderr).toContain(`${file}: its first record is torn (${bytes} bytes, a write cut short) before its session id`);
      }

      r = cli(dir, "sessions", "show", "torn");
      expect(r.code).toBe(0);
      expect(r.stdout).toContain("runs (0):\nmessages (0):\n");
      expect(r.stderr).toBe(
        `agentcore sessions: line 1 of session 'torn' (${file}) was torn: ${bytes} bytes of a write cut short (a crash or a full disk), not a whole record; it is ignored (the session holds no record yet), and the next write to the session cuts it off\n`,
      );
      expect(JSON.parse(cli(dir, "sessions", "show", "torn", "--json").stdout).session.runs).toEqual([]);
      expect(fs.statSync(file).size).toBe(bytes); // reading changed nothing

      const ok = script(dir, "ok.jsonl", { content: "working again" });
      r = cli(dir, "agent", "--no-plan", "--session", "torn", "--script", ok, "next task");
      expect(r.code).toBe(0);
      expect(r.stdout).toBe("working again\n");
      expect(r.stderr).toContain(
        `agentcore: line 1 of session 'torn' (${file}) was torn: ${bytes} bytes of a write cut short (a crash or a full disk), not a whole record; it was cut off (the session holds no record yet)`,
      );
      const shown = JSON.parse(cli(dir, "sessions", "show", "torn", "--json").stdout);
      expect(shown.messages).toEqual([
        { role: "user", content: "next task" },
        { role: "assistant", content: "working again" },
      ]);
      expect(fs.readFileSync(file, "utf8").split("\n")[0]).toStartWith('{"agent_id":"agentcore-cli"');
      r = cli(dir, "sessions", "list");
      expect(r.stderr).toBe("");
      expect(r.stdout).toMatch(/(^| )torn {2}records 3 {2}runs 1/m);
    }, 60_000);
  }

  test("sessions recover on a journal whose only line is torn: nothing to recover (exit 0), the line is cut off and reported", () => {
    const dir = tmp();
    const ok = script(dir, "ok.jsonl", { content: "seed" });
    expect(cli(dir, "agent", "--no-plan", "--session", "t", "--script", ok, "seed").code).toBe(0);
    const file = journal(dir, "t");
    fs.writeFileSync(file, fs.readFileSync(file, "utf8").slice(0, 50));
    const r = cli(dir, "sessions", "recover", "t");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("no unfinished run, nothing to recover");
    expect(r.stderr).toContain(`line 1 of session 't' (${file}) was torn: 50 bytes`);
    expect(r.stderr).toContain("it was cut off");
    expect(fs.statSync(file).size).toBe(0);
  });

  test("a torn first line followed by whole records is not a torn tail: exit 2 naming the file, line 1 and the way out; nothing is dropped", () => {
    const dir = tmp();
    const ok = script(dir, "ok.jsonl", { content: "kept" });
    expect(cli(dir, "agent", "--no-plan", "--session", "glued", "--script", ok, "first").code).toBe(0);
    const file = journal(dir, "glued");
    const broken = `{"agent_id":"agentcore-cli","bra${fs.readFileSync(file, "utf8")}`;
    fs.writeFileSync(file, broken);
    for (const args of [
      ["sessions", "show", "glued"],
      ["sessions", "recover", "glued"],
      ["agent", "--no-plan", "--session", "glued", "--script", ok, "more"],
    ]) {
      const r = cli(dir, ...args);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe("");
      expect(r.stderr).toContain(`Session journal ${file}: invalid JSON at line 1`);
      expect(r.stderr).toContain("keep a copy of the file, then mend or delete line 1 by hand");
    }
    const r = cli(dir, "sessions", "list");
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(`${file}: line 1 is not a journal record`);
    expect(fs.readFileSync(file, "utf8")).toBe(broken);
    expect(claimFiles(dir)).toEqual([]);
  }, 60_000);
});

describe("agents started at once on one branch (item 6)", () => {
  test("4 agents at the same moment: one runs; the other 3 exit 2 before any model request or tool, naming the busy branch; the branch is free after SIGTERM", async () => {
    const dir = tmp();
    // Each script is a FIFO: an agent that gets as far as loading its model
    // blocks there until every agent is either blocked so or gone; then all
    // go on at once. So every agent has read the session before any runs.
    const fifos = [0, 1, 2, 3].map((i) => {
      const f = path.join(dir, `s${i}.fifo`);
      expect(Bun.spawnSync(["mkfifo", f]).exitCode).toBe(0);
      return f;
    });
    const procs = fifos.map((f) =>
      Bun.spawn(
        [
          bin,
          "agent",
          "--no-plan",
          "--session",
          "race",
          "--events",
          "jsonl",
          "--script",
          f,
          "--tools",
          "write_file",
          "--approve-all",
          "race",
        ],
        { cwd: dir, stdout: "pipe", stderr: "pipe" },
      ),
    );
    const outputs = procs.map((p) => Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()]));
    const exited = new Map<number, number>();
    procs.forEach((p, i) => void p.exited.then((code) => exited.set(i, code)));
    try {
      const writers = new Map<number, number>();
      await until(() => {
        for (const [i, f] of fifos.entries()) {
          if (exited.has(i) || writers.has(i)) continue;
          try {
            writers.set(i, fs.openSync(f, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK)); // succeeds once its agent opened it
          } catch {
            /* not yet */
          }
        }
        return fifos.every((_, i) => exited.has(i) || writers.has(i));
      }, "every agent to load its script or stop");
      for (const [i, fd] of writers) {
        fs.writeSync(fd, fs.readFileSync(writeThenWait(dir, `s${i}.jsonl`, `trace-${i}.txt`)));
        fs.closeSync(fd);
      }
      // bounded: without an up-front refusal every agent runs its tool and then waits ten minutes
      await until(() => exited.size === 3, "three agents to be refused");
      const winner = [0, 1, 2, 3].find((i) => !exited.has(i))!;
      await until(() => fs.existsSync(path.join(dir, `trace-${winner}.txt`)), "the winner's tool");
      for (const [i, code] of exited) {
        expect(code).toBe(2);
        const [stdout, stderr] = await outputs[i]!;
        expect(stdout).toBe(""); // not even agent_started
        expect(stderr).toContain(
          `agentcore: session 'race' branch 'main' is in use by process ${procs[winner]!.pid} (agentcore agent, since `,
        );
        expect(stderr).toContain("wait for it to finish, or stop that process");
      }
      // only the winner's tool ran
      expect(fs.readdirSync(dir).filter((n) => n.startsWith("trace-"))).toEqual([`trace-${winner}.txt`]);
      expect(claimFiles(dir).length).toBe(1);
      procs[winner]!.kill("SIGTERM");
      expect(await procs[winner]!.exited).toBe(143);
      expect(claimFiles(dir)).toEqual([]);
      const runs = JSON.parse(cli(dir, "sessions", "show", "race", "--json").stdout).session.runs;
      expect(runs.map((r: { result: { status: string } }) => r.result.status)).toEqual(["cancelled"]);
      const r = cli(dir, "agent", "--no-plan", "--session", "race", "--script", script(dir, "ok.jsonl", { content: "next" }), "next");
      expect(r.code).toBe(0);
    } finally {
      for (const p of procs) p.kill("SIGKILL");
    }
  }, 120_000);

  test("the branch is given back on every way out: a setup error, a failed run; a SIGKILLed holder's claim is stale and does not block", async () => {
    const dir = tmp();
    // a setup error after the claim (--continue with no run): exit 2, claim gone
    let r = cli(dir, "agent", "--no-plan", "--session", "s", "--script", script(dir, "a.jsonl", { content: "x" }), "--continue");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("no run to continue");
    expect(claimFiles(dir)).toEqual([]);
    // a run that fails (the script runs out): exit 1, claim gone
    r = cli(
      dir,
      "agent",
      "--no-plan",
      "--session",
      "s",
      "--script",
      script(dir, "b.jsonl", { content: null, tool_calls: [{ id: "e", name: "echo", arguments: "{}" }] }),
      "t",
    );
    expect(r.code).toBe(1);
    expect(claimFiles(dir)).toEqual([]);
    // another branch is not blocked by a holder of main
    const holder = Bun.spawn(
      [
        bin,
        "agent",
        "--no-plan",
        "--session",
        "k",
        "--script",
        writeThenWait(dir, "w.jsonl", "trace-k.txt"),
        "--tools",
        "write_file",
        "--approve-all",
        "hold",
      ],
      { cwd: dir, stdout: "ignore", stderr: "ignore" },
    );
    try {
      await until(() => fs.existsSync(path.join(dir, "trace-k.txt")), "the holder's tool");
      expect(cli(dir, "sessions", "fork", "k", "--name", "side").code).not.toBe(0); // its head is inside an unfinished run
      holder.kill("SIGKILL");
      await holder.exited;
      expect(claimFiles(dir).length).toBe(1); // left behind, its pid dead
      r = cli(dir, "agent", "--no-plan", "--session", "k", "--script", script(dir, "c.jsonl", { content: "x" }), "t");
      expect(r.code).toBe(2);
      expect(r.stderr).toContain("has unfinished run(s)"); // the crash, not "in use"
      expect(r.stderr).toContain("agentcore sessions recover k");
      expect(claimFiles(dir)).toEqual([]); // the stale claim was taken over, then given back
      expect(cli(dir, "sessions", "recover", "k").code).toBe(0);
      r = cli(dir, "agent", "--no-plan", "--session", "k", "--script", script(dir, "d.jsonl", { content: "again" }), "t");
      expect(r.code).toBe(0);
    } finally {
      holder.kill("SIGKILL");
    }
  }, 120_000);
});

describe("the daemon refuses a busy branch up front (item 6)", () => {
  let d: TestDaemon;
  beforeAll(async () => {
    d = await startTestDaemon();
  });
  afterAll(() => d.stop());

  test("a chat of another process holds the branch (nothing unfinished in the journal): POST /v1/runs is 409 session_busy, nothing written; free once it ends", async () => {
    const dir = tmp();
    const sessions = path.join(d.dir, "sessions");
    const chat = Bun.spawn(
      [bin, "chat", "--no-plan", "--session", "shared", "--sessions-dir", sessions, "--script", script(dir, "c.jsonl", { content: "hi" })],
      { cwd: dir, stdin: "pipe", stdout: "pipe", stderr: "pipe" },
    );
    try {
      const reader = chat.stdout.getReader();
      let seen = "";
      while (!seen.includes("agentcore chat — session shared")) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`chat ended early: ${seen}`);
        seen += new TextDecoder().decode(value);
      }
      let res = await d.req("/v1/runs", {
        method: "POST",
        headers: { accept: "application/json" },
        json: { task: "t", session: "shared", script: [{ content: "from the daemon" }] },
      });
      expect(res.status).toBe(409);
      const err = (await res.json()).error;
      expect(err.code).toBe("CONFLICT");
      expect(err.details).toEqual({ reason: "session_busy", pid: chat.pid });
      expect(err.message).toContain(`session 'shared' branch 'main' is in use by process ${chat.pid} (agentcore chat`);
      expect(fs.existsSync(new JsonlSessionStorage(sessions).fileFor("shared"))).toBe(false);
      // a CLI agent on it is refused the same way
      const r = cli(
        dir,
        "agent",
        "--no-plan",
        "--session",
        "shared",
        "--sessions-dir",
        sessions,
        "--script",
        script(dir, "a.jsonl", { content: "x" }),
        "t",
      );
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`session 'shared' branch 'main' is in use by process ${chat.pid} (agentcore chat, since `);
      chat.stdin.end();
      expect(await chat.exited).toBe(0);
      res = await d.req("/v1/runs", {
        method: "POST",
        headers: { accept: "application/json" },
        json: { task: "t", session: "shared", script: [{ content: "from the daemon" }] },
      });
      expect(res.status).toBe(201);
      expect((await res.json()).result).toMatchObject({ status: "completed", output: "from the daemon" });
      expect((await new JsonlSessionStorage(sessions).records("shared")).map((r) => r.type)).toEqual([
        "run_started",
        "message_appended",
        "run_finished",
      ]);
    } finally {
      chat.kill("SIGKILL");
    }
  }, 60_000);

  test("a daemon run holds the branch while it runs: a CLI agent on it exits 2 up front; two runs of the daemon at once: one is 409", async () => {
    const dir = tmp();
    const sessions = path.join(d.dir, "sessions");
    const slow = await d.req("/v1/runs", {
      method: "POST",
      json: { task: "slow", session: "dbusy", detached: true, script: [{ content: "late", delay_ms: 60_000 }] },
    });
    expect([200, 201, 202]).toContain(slow.status);
    const runId = slow.headers.get("x-run-id")!;
    try {
      await until(() => fs.existsSync(new JsonlSessionStorage(sessions).branchClaimFile("dbusy", "main")), "the daemon's claim");
      const r = cli(
        dir,
        "agent",
        "--no-plan",
        "--session",
        "dbusy",
        "--sessions-dir",
        sessions,
        "--script",
        script(dir, "x.jsonl", { content: "x" }),
        "t",
      );
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`session 'dbusy' branch 'main' is in use by process ${process.pid} (agentcore serve, run ${runId}`);
      const second = await d.req("/v1/runs", {
        method: "POST",
        headers: { accept: "application/json" },
        json: { task: "t", session: "dbusy", script: [{ content: "x" }] },
      });
      expect(second.status).toBe(409);
      expect((await second.json()).error.details.reason).toBe("session_busy");
    } finally {
      await d.req(`/v1/runs/${runId}/abort`, { method: "POST", json: { reason: "test over" } });
    }
    await until(() => !fs.existsSync(new JsonlSessionStorage(sessions).branchClaimFile("dbusy", "main")), "the claim to go");
  }, 60_000);
});

describe("a journal that cannot be written is refused before the run (item 7)", () => {
  const deno = (cwd: string, ...args: string[]) => {
    const p = Bun.spawnSync([DENO, "run", "--allow-read", "--allow-env", path.join(REPO, "src/cli/main.ts"), ...args], {
      cwd,
      stdout: "pipe",
      stderr: "pipe",
      env: { ...process.env, DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1" },
    });
    return { code: p.exitCode, stdout: p.stdout.toString(), stderr: p.stderr.toString() };
  };

  test("Deno without --allow-write: exit 2 before the model or any tool, naming --allow-write (a new session, and an existing one)", () => {
    const dir = tmp();
    const s = script(
      dir,
      "s.jsonl",
      { content: null, tool_calls: [{ id: "e", name: "echo", arguments: '{"message":"ran"}' }] },
      { content: "done" },
    );
    let r = deno(dir, "agent", "--no-plan", "--session", "d", "--events", "jsonl", "--script", s, "t");
    expect(r.code).toBe(2);
    expect(r.stdout).toBe(""); // no event at all: the run never started
    expect(r.stderr).toContain("agentcore: cannot journal session 'd'");
    expect(r.stderr).toContain("--allow-write");
    expect(r.stderr).not.toContain("sink failed");
    expect(cli(dir, "agent", "--no-plan", "--session", "d", "--script", s, "t").code).toBe(0);
    const before = fs.readFileSync(journal(dir, "d"));
    r = deno(dir, "agent", "--no-plan", "--session", "d", "--events", "jsonl", "--script", s, "t");
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("--allow-write");
    expect(fs.readFileSync(journal(dir, "d")).equals(before)).toBe(true);
  }, 120_000);

  test("a sessions folder that cannot exist (under a regular file): exit 2 before any tool runs, naming the folder", () => {
    const dir = tmp();
    fs.writeFileSync(path.join(dir, "notes"), "a file\n");
    const bad = path.join(dir, "notes", "sessions");
    const r = cli(
      dir,
      "agent",
      "--no-plan",
      "--session",
      "s",
      "--sessions-dir",
      bad,
      "--script",
      writeThenWait(dir, "w.jsonl", "trace.txt"),
      "--tools",
      "write_file",
      "--approve-all",
      "t",
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`agentcore: cannot journal session 's': cannot create ${bad}`);
    expect(r.stderr).toContain("--sessions-dir DIR");
    expect(fs.existsSync(path.join(dir, "trace.txt"))).toBe(false);
  }, 60_000);

  test("a read-only journal and folder for a user who is not root: exit 2 before any tool runs", () => {
    const dir = tmp();
    fs.chmodSync(dir, 0o777);
    // the binary where that user can run it
    const own = path.join(dir, "bin");
    fs.mkdirSync(own, { mode: 0o755 });
    fs.copyFileSync(bin, path.join(own, "agentcore"));
    fs.chmodSync(path.join(own, "agentcore"), 0o755);
    expect(cli(dir, "agent", "--no-plan", "--session", "ro", "--script", script(dir, "a.jsonl", { content: "x" }), "seed").code).toBe(0);
    for (const d of [path.join(dir, ".agentcore"), sessionsDir(dir)]) fs.chmodSync(d, 0o555);
    fs.chmodSync(journal(dir, "ro"), 0o444);
    const s = writeThenWait(dir, "w.jsonl", "trace.txt");
    fs.chmodSync(s, 0o644);
    const asNobody = (id: string) => {
      const p = Bun.spawnSync(
        [
          "setpriv",
          "--reuid=65534",
          "--regid=65534",
          "--clear-groups",
          path.join(own, "agentcore"),
          "agent",
          "--no-plan",
          "--session",
          id,
          "--script",
          s,
          "--tools",
          "write_file",
          "--approve-all",
          "t",
        ],
        { cwd: dir, stdout: "pipe", stderr: "pipe", env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir, NO_COLOR: "1" } },
      );
      return { code: p.exitCode, stderr: p.stderr.toString() };
    };
    let r = asNobody("ro"); // the journal exists, read-only
    expect(r.stderr).toContain(`cannot journal session 'ro': cannot write the session journal ${journal(dir, "ro")}`);
    expect(r.code).toBe(2);
    r = asNobody("fresh"); // a new session in a read-only folder
    expect(r.stderr).toContain("cannot journal session 'fresh'");
    expect(r.code).toBe(2);
    expect(fs.existsSync(path.join(dir, "trace.txt"))).toBe(false);
    for (const d of [path.join(dir, ".agentcore"), sessionsDir(dir)]) fs.chmodSync(d, 0o755);
  }, 60_000);
});

describe("record times (item 8)", () => {
  test("every record agent writes carries its time; sessions tree --json shows it", () => {
    const dir = tmp();
    const before = Date.now();
    const s = script(
      dir,
      "s.jsonl",
      { content: null, tool_calls: [{ id: "e", name: "echo", arguments: '{"message":"hi"}' }] },
      { content: "done" },
    );
    expect(cli(dir, "agent", "--no-plan", "--session", "timed", "--script", s, "t").code).toBe(0);
    const lines = fs
      .readFileSync(journal(dir, "timed"), "utf8")
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines.length).toBe(5);
    for (const l of lines) {
      expect(l.time).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      expect(Date.parse(l.time)).toBeGreaterThanOrEqual(before - 1000);
      expect(Date.parse(l.time)).toBeLessThanOrEqual(Date.now() + 1000);
    }
    const tree = JSON.parse(cli(dir, "sessions", "tree", "timed", "--json").stdout);
    expect(tree.records.map((r: { time?: string }) => r.time)).toEqual(lines.map((l) => l.time));
  }, 60_000);
});
