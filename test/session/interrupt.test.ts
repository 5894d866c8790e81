// Sessions survive interruption: SIGTERM/SIGHUP/SIGINT during `agentcore agent
// --session` journal the run as finished; a SIGKILLed run (or a torn journal)
// is closed by `agentcore sessions recover`. All through the compiled binary
// as real child processes, with scripted models.
import { afterEach, beforeAll, describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { JsonlSessionStorage, type SessionRecord } from "../../src/session/index.ts";
import { binaryPath } from "../support/binary.ts";

const HOLDER = path.join(import.meta.dir, "fixtures", "appender.ts");
const ENV = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: os.tmpdir() };
let bin = "";
beforeAll(() => {
  bin = binaryPath();
}, 300_000);

const dirs: string[] = [];
const live: { kill(signal?: number | NodeJS.Signals): void }[] = [];
function tmp(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), "agentcore-interrupt-"));
  dirs.push(d);
  return d;
}
afterEach(() => {
  for (const p of live.splice(0)) p.kill("SIGKILL");
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function script(dir: string, name: string, ...turns: unknown[]): string {
  const f = path.join(dir, name);
  fs.writeFileSync(f, turns.map((t) => JSON.stringify(t)).join("\n") + "\n");
  return f;
}

function cli(cwd: string, ...args: string[]) {
  const p = Bun.spawnSync([bin, ...args], { cwd, stdout: "pipe", stderr: "pipe", env: ENV });
  return { code: p.exitCode, stdout: p.stdout.toString(), stderr: p.stderr.toString() };
}

/** A child whose stdout lines can be awaited. */
function spawnLines(cmd: string[], cwd: string) {
  const child = Bun.spawn(cmd, { cwd, stdin: "ignore", stdout: "pipe", stderr: "pipe", env: ENV });
  live.push(child);
  const lines: string[] = [];
  let partial = "";
  const reader = child.stdout.getReader();
  const decoder = new TextDecoder();
  let ended = false;
  /** Read until `count` lines match `match` (or stdout ends); true when they did. */
  const until = async (match: (l: string) => boolean, count = 1): Promise<boolean> => {
    for (;;) {
      if (lines.filter(match).length >= count) return true;
      if (ended) return false;
      const { value, done } = await reader.read();
      if (done) {
        ended = true;
        continue;
      }
      partial += decoder.decode(value, { stream: true });
      const parts = partial.split("\n");
      partial = parts.pop()!;
      lines.push(...parts);
    }
  };
  return { child, lines, until, rest: () => until(() => false) };
}

const kind = (k: string) => (l: string) => l.includes(`"kind":"${k}"`);
const sessionsDir = (dir: string) => path.join(dir, ".agentcore", "sessions");
const journalFile = (dir: string, id = "demo") => new JsonlSessionStorage(sessionsDir(dir)).fileFor(id);
const records = (dir: string, id = "demo") => new JsonlSessionStorage(sessionsDir(dir)).records(id);

/** A run that calls echo, then waits (abortably) for ten minutes on its second turn. */
function slowScript(dir: string): string {
  return script(
    dir,
    "slow.jsonl",
    { content: null, tool_calls: [{ id: "c1", name: "echo", arguments: '{"step":1}' }] },
    { content: "never shown", delay_ms: 600_000 },
  );
}

/** Start `agent --session demo` on the slow script; resolves once the second model turn is waiting. */
async function startSlowRun(dir: string, ...extra: string[]) {
  const run = spawnLines(
    [bin, "agent", "--events", "jsonl", "--no-plan", "--session", "demo", ...extra, "--script", slowScript(dir), "slow task"],
    dir,
  );
  expect(await run.until(kind("turn_started"), 2)).toBe(true);
  return run;
}

describe("agent --session: SIGTERM, SIGHUP and SIGINT finish the run in the journal", () => {
  for (const [signal, status] of [
    ["SIGTERM", 143],
    ["SIGHUP", 129],
    ["SIGINT", 1],
  ] as const) {
    test(`${signal}: exit ${status}, run_finished journaled (cancelled), the session takes the next task`, async () => {
      const dir = tmp();
      const run = await startSlowRun(dir);
      run.child.kill(signal);
      await run.rest();
      expect(await run.child.exited).toBe(status);
      const fin = JSON.parse(run.lines.findLast(kind("agent_finished"))!) as {
        result: { status: string; stop_reason: string; error: string };
      };
      expect(fin.result).toMatchObject({ status: "cancelled", stop_reason: "external_abort" });
      expect(fin.result.error).toContain(signal === "SIGINT" ? "Ctrl-C" : signal);

      const journal = await records(dir);
      expect(journal.map((r) => r.type)).toEqual(["run_started", "message_appended", "messages_appended", "run_finished"]);
      expect((journal.at(-1)!.data.result as { status: string }).status).toBe("cancelled");
      // the run's live-run mark went with it
      expect(fs.readdirSync(sessionsDir(dir)).filter((n) => n.includes(".run-"))).toEqual([]);

      const next = cli(
        dir,
        "agent",
        "--no-plan",
        "--session",
        "demo",
        "--script",
        script(dir, "next.jsonl", { content: "next done" }),
        "next task",
      );
      expect(next.stderr).toBe("");
      expect(next.code).toBe(0);
      expect(next.stdout).toBe("next done\n");
      // nothing to recover after a clean stop
      expect(cli(dir, "sessions", "recover", "demo").stdout).toContain("no unfinished run");
    }, 120_000);
  }

  test("SIGTERM while the run's exec tool runs a command: the command is killed, the run journaled, exit 143", async () => {
    const dir = tmp();
    const marker = `617.${process.pid % 1000}${Math.floor(Math.random() * 1000)}`;
    const cfg = path.join(dir, "cfg.json");
    fs.writeFileSync(cfg, JSON.stringify({ tools: { exec: { allow: ["sleep"], env: ["PATH"], isolation: "off", timeout_ms: 600_000 } } }));
    const s = script(
      dir,
      "exec.jsonl",
      { content: null, tool_calls: [{ id: "x1", name: "exec", arguments: JSON.stringify({ argv: ["sleep", marker] }) }] },
      { content: "never" },
    );
    const run = spawnLines(
      [bin, "agent", "--config", cfg, "--approve-all", "--events", "jsonl", "--no-plan", "--session", "demo", "--script", s, "sleep"],
      dir,
    );
    const sleeping = () =>
      Bun.spawnSync(["pgrep", "-f", `sleep ${marker}`])
        .stdout.toString()
        .trim();
    try {
      expect(await run.until(kind("tool_started"))).toBe(true);
      for (let i = 0; i < 400 && sleeping() === ""; i++) await Bun.sleep(25);
      expect(sleeping()).not.toBe("");
      run.child.kill("SIGTERM");
      await run.rest();
      expect(await run.child.exited).toBe(143);
      const journal = await records(dir);
      // --approve-all's answer is journaled with its request, before the call ran
      expect(journal.map((r) => r.type)).toEqual([
        "run_started",
        "message_appended",
        "approval_requested",
        "approval_decided",
        "messages_appended",
        "run_finished",
      ]);
      expect(journal[3]!.data).toMatchObject({ tool_call_id: "x1", approved: true, decided_by: "approve_all" });
      const answer = (journal[4]!.data.messages as { content: string }[])[0]!.content;
      expect(JSON.parse(answer)).toMatchObject({ status: "cancelled", tool: "exec" });
      for (let i = 0; i < 400 && sleeping() !== ""; i++) await Bun.sleep(25);
      expect(sleeping()).toBe("");
    } finally {
      const left = sleeping();
      if (left !== "") for (const pid of left.split("\n")) process.kill(Number(pid), "SIGKILL");
    }
  }, 120_000);

  for (const [signal, status] of [
    ["SIGTERM", 143],
    ["SIGHUP", 129],
  ] as const) {
    test(`chat: ${signal} during a run journals it with a reason naming the signal (exit ${status})`, async () => {
      const dir = tmp();
      const s = script(dir, "chat.jsonl", { content: "never shown", delay_ms: 600_000 });
      const child = Bun.spawn([bin, "chat", "--no-plan", "--session", "demo", "--script", s], {
        cwd: dir,
        stdin: "pipe",
        stdout: "pipe",
        stderr: "pipe",
        env: ENV,
      });
      live.push(child);
      child.stdin.write("something slow\n");
      child.stdin.flush();
      for (let i = 0; i < 400 && (await records(dir)).length === 0; i++) await Bun.sleep(25);
      expect((await records(dir)).map((r) => r.type)).toEqual(["run_started"]);
      child.kill(signal);
      expect(await child.exited).toBe(status);
      const last = (await records(dir)).at(-1)!;
      expect(last.type).toBe("run_finished");
      expect(last.data.result).toMatchObject({
        status: "cancelled",
        stop_reason: "external_abort",
        error: `the chat is closing (${signal})`,
      });
    }, 120_000);
  }

  for (const [first, second, status] of [
    ["SIGTERM", "SIGTERM", 143],
    ["SIGHUP", "SIGTERM", 143],
    ["SIGINT", "SIGINT", 130],
  ] as const) {
    test(`a second signal while the first is still being handled exits at once: ${first} then ${second}, exit ${status}`, async () => {
      const dir = tmp();
      const run = await startSlowRun(dir);
      // Another process holds the journal lock: the run's run_finished record must wait for it.
      const holder = spawnLines([process.execPath, HOLDER, "hold", sessionsDir(dir), "demo"], dir);
      expect(await holder.until((l) => l === "locked")).toBe(true);
      run.child.kill(first);
      // agent_finished reaches stdout just before the recorder starts waiting for the lock
      expect(await run.until(kind("agent_finished"))).toBe(true);
      run.child.kill(second);
      await run.rest();
      // Without the second-signal exit the recorder would time out on the lock and exit 2.
      expect(await run.child.exited).toBe(status);
      // the immediate exit gives the session branch back too
      expect(fs.readdirSync(sessionsDir(dir)).filter((n) => n.includes(".branch-"))).toEqual([]);
      holder.child.kill("SIGKILL");
      await holder.child.exited;
      // The run was cut off before its run_finished: a case for recover.
      expect((await records(dir)).at(-1)!.type).toBe("messages_appended");
      const r = cli(dir, "sessions", "recover", "demo");
      expect(r.code).toBe(0);
      expect((await records(dir)).at(-1)!.type).toBe("run_finished");
    }, 120_000);
  }
});

describe("sessions recover: a run left unfinished by a crash", () => {
  test("SIGKILL mid-run: agent refuses naming the fix; recover closes the run; new tasks work; a second recover is a no-op", async () => {
    const dir = tmp();
    const run = await startSlowRun(dir);
    run.child.kill("SIGKILL");
    await run.child.exited;
    const before = await records(dir);
    expect(before.map((r) => r.type)).toEqual(["run_started", "message_appended", "messages_appended"]);
    const runId = before[0]!.data.run_id as string;

    const next = script(dir, "next.jsonl", { content: "after recovery" });
    let r = cli(dir, "agent", "--no-plan", "--session", "demo", "--script", next, "again");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`has unfinished run(s): ${runId}`);
    expect(r.stderr).toContain("agentcore sessions recover demo");
    expect(r.stderr).not.toContain("--help");
    r = cli(dir, "agent", "--no-plan", "--session", "demo", "--script", next, "--continue");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("agentcore sessions recover demo");
    r = cli(dir, "chat", "--no-plan", "--session", "demo", "--script", next);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("agentcore sessions recover demo");
    expect(r.stderr).not.toContain("--help");
    // fork at the head names it too
    r = cli(dir, "sessions", "fork", "demo");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("agentcore sessions recover demo");
    expect((await records(dir)).length).toBe(3);

    r = cli(dir, "sessions", "recover", "demo", "--json");
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out).toMatchObject({ session_id: "demo", branch_id: "main", recovered: [{ run_id: runId, cancelled_tool_calls: [] }] });
    expect(out.recovered[0].result).toMatchObject({ status: "cancelled", stop_reason: "external_abort", turns: 1, output: null });
    expect(out.recovered[0].result.error).toContain("run interrupted");
    const after = await records(dir);
    expect(after.length).toBe(4);
    expect(after[3]).toMatchObject({
      type: "run_finished",
      parent_id: before[2]!.record_id,
      branch_id: "main",
      agent_id: before[0]!.agent_id,
      revision: 4,
    });
    expect(after[3]!.sequence).toBeGreaterThan(before[2]!.sequence);
    expect(out.head_id).toBe(after[3]!.record_id);

    // the same session takes a new task, and --continue is refused only for the reason an aborted run has
    r = cli(dir, "agent", "--no-plan", "--session", "demo", "--script", next, "--continue");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("unsupported_stop_reason");
    r = cli(dir, "agent", "--no-plan", "--session", "demo", "--script", next, "again");
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("after recovery\n");

    const bytes = fs.readFileSync(journalFile(dir));
    r = cli(dir, "sessions", "recover", "demo");
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("session demo branch main: no unfinished run, nothing to recover\n");
    expect(fs.readFileSync(journalFile(dir)).equals(bytes)).toBe(true);
  }, 120_000);

  test("a torn journal: tool calls left unanswered get cancelled answers, the torn tail is repaired", async () => {
    const dir = tmp();
    const first = script(
      dir,
      "first.jsonl",
      {
        content: null,
        tool_calls: [
          { id: "a", name: "echo", arguments: '{"n":1}' },
          { id: "b", name: "echo", arguments: '{"n":2}' },
        ],
        usage: { input_tokens: 7, output_tokens: 3 },
      },
      { content: "both echoed" },
    );
    expect(cli(dir, "agent", "--no-plan", "--session", "demo", "--script", first, "echo twice").code).toBe(0);
    const file = journalFile(dir);
    // Keep run_started and the assistant message asking for two calls, then half of the next line.
    const lines = fs.readFileSync(file, "utf8").split("\n");
    fs.writeFileSync(file, `${lines[0]}\n${lines[1]}\n${lines[2]!.slice(0, 40)}`);

    let r = cli(dir, "sessions", "recover", "demo");
    // the repair is reported: which line, how long, that it was cut off
    expect(r.stderr).toBe(
      `agentcore sessions: line 3 of session 'demo' (${file}) was torn: 40 bytes of a write cut short (a crash or a full disk), not a whole record; it was cut off (the 2 record(s) before it are kept)\n`,
    );
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("2 unanswered tool call(s) answered as cancelled");
    const text = fs.readFileSync(file, "utf8");
    expect(text.endsWith("\n")).toBe(true);
    const after = text
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l) as SessionRecord);
    expect(after.map((x) => x.type)).toEqual(["run_started", "message_appended", "messages_appended", "run_finished"]);
    const answers = after[2]!.data.messages as { role: string; tool_call_id: string; content: string }[];
    expect(answers.map((m) => [m.role, m.tool_call_id])).toEqual([
      ["tool", "a"],
      ["tool", "b"],
    ]);
    expect(JSON.parse(answers[0]!.content)).toMatchObject({ status: "cancelled", tool: "echo" });
    expect((after[3]!.data.result as { usage: { input_tokens: number; request_count: number } }).usage).toMatchObject({
      input_tokens: 7,
      output_tokens: 3,
      request_count: 1,
      reported_request_count: 1,
    });

    // The restored conversation is whole: the next run's model sees every call answered.
    r = cli(dir, "agent", "--no-plan", "--session", "demo", "--script", script(dir, "n.jsonl", { content: "fine" }), "go on");
    expect(r.code).toBe(0);
    const shown = JSON.parse(cli(dir, "sessions", "show", "demo", "--json").stdout);
    expect(shown.messages.map((m: { role: string }) => m.role)).toEqual(["user", "assistant", "tool", "tool", "user", "assistant"]);
  }, 120_000);

  test("a branch: the error and the recovery name it; main is untouched", async () => {
    const dir = tmp();
    expect(cli(dir, "agent", "--no-plan", "--session", "demo", "--script", script(dir, "a.jsonl", { content: "one" }), "one").code).toBe(0);
    expect(cli(dir, "sessions", "fork", "demo", "--name", "side").code).toBe(0);
    const run = await startSlowRun(dir, "--branch", "side");
    run.child.kill("SIGKILL");
    await run.child.exited;
    const next = script(dir, "b.jsonl", { content: "two" });
    let r = cli(dir, "agent", "--no-plan", "--session", "demo", "--branch", "side", "--script", next, "two");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("agentcore sessions recover demo --branch side");
    // main has nothing to recover
    r = cli(dir, "sessions", "recover", "demo");
    expect(r.stdout).toContain("branch main: no unfinished run");
    r = cli(dir, "sessions", "recover", "demo", "--branch", "side");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("closed as cancelled (external_abort)");
    expect(r.stdout).toContain("--branch side");
    r = cli(dir, "agent", "--no-plan", "--session", "demo", "--branch", "side", "--script", next, "two");
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("two\n");
  }, 120_000);

  test("a run still going in another process is refused (nothing written); --force overrides a mark whose pid is not agentcore", async () => {
    const dir = tmp();
    const run = await startSlowRun(dir);
    const file = journalFile(dir);
    const bytes = fs.readFileSync(file);
    let r = cli(dir, "sessions", "recover", "demo");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`is still going in process ${run.child.pid}`);
    expect(fs.readFileSync(file).equals(bytes)).toBe(true);
    // a second agent on the session is told it is in use (not to recover it)
    r = cli(dir, "agent", "--no-plan", "--session", "demo", "--script", script(dir, "x.jsonl", { content: "x" }), "meanwhile");
    expect(r.code).toBe(2);
    // refused up front by the branch's claim: the holder, and to wait or stop it (--force only for a pid that is not agentcore)
    expect(r.stderr).toContain(`session 'demo' branch 'main' is in use by process ${run.child.pid} (agentcore agent, since `);
    expect(r.stderr).toContain("wait for it to finish, or stop that process");
    expect(r.stderr).toContain(
      `if process ${run.child.pid} is not agentcore, clear the mark with: agentcore sessions recover demo --force`,
    );
    expect(fs.readFileSync(file).equals(bytes)).toBe(true);
    // stopped properly, the run journals itself
    run.child.kill("SIGTERM");
    await run.rest();
    expect(await run.child.exited).toBe(143);
    expect(cli(dir, "sessions", "recover", "demo").stdout).toContain("no unfinished run");

    // A crash whose mark names a pid that is alive but not agentcore (a reused pid): refused, then --force.
    const again = await startSlowRun(dir);
    again.child.kill("SIGKILL");
    await again.child.exited;
    const marks = fs.readdirSync(sessionsDir(dir)).filter((n) => n.includes(".run-"));
    expect(marks).toHaveLength(1);
    const mark = path.join(sessionsDir(dir), marks[0]!);
    const other = Bun.spawn(["sleep", "600"], { stdout: "ignore", stderr: "ignore" });
    live.push(other);
    fs.writeFileSync(mark, fs.readFileSync(mark, "utf8").replace(/^\d+/, String(other.pid)));
    r = cli(dir, "sessions", "recover", "demo");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`is still going in process ${other.pid}`);
    r = cli(dir, "sessions", "recover", "demo", "--force");
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("closed as cancelled (external_abort)");
    expect(fs.existsSync(mark)).toBe(false);
  }, 120_000);

  test("unknown session or branch, bad arguments: exit 2, clear message, nothing created", () => {
    const dir = tmp();
    let r = cli(dir, "sessions", "recover", "nope");
    expect(r.code).toBe(2);
    expect(r.stderr).toBe("agentcore sessions: no session 'nope'\n");
    expect(fs.existsSync(sessionsDir(dir))).toBe(false);
    expect(cli(dir, "agent", "--no-plan", "--session", "demo", "--script", script(dir, "a.jsonl", { content: "one" }), "one").code).toBe(0);
    r = cli(dir, "sessions", "recover", "demo", "--branch", "ghost");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("session 'demo' has no branch 'ghost'");
    // a corrupt complete line is an error naming the line; nothing is written
    const file = journalFile(dir);
    fs.appendFileSync(file, "{not json}\n");
    const corrupt = fs.readFileSync(file);
    r = cli(dir, "sessions", "recover", "demo");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("invalid JSON at line 4");
    expect(fs.readFileSync(file).equals(corrupt)).toBe(true);
    r = cli(dir, "sessions", "recover");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("recover needs the session id");
    r = cli(dir, "sessions", "show", "demo", "--force");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--force applies to 'sessions recover' and 'sessions delete' only, not to 'sessions show'");
    r = cli(dir, "sessions", "recover", "demo", "--to", "x");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--to applies to 'sessions rollback' only, not to 'sessions recover'");
    r = cli(dir, "sessions", "--help");
    expect(r.stdout).toContain("agentcore sessions recover ID [--branch B]");
    expect(r.stdout).toContain("agentcore sessions recover demo\n");
    r = cli(dir, "--help");
    expect(r.stdout).toContain("  sessions  read, branch and recover durable sessions");
    expect(cli(dir, "agent", "--help").stdout).toContain("143 / 129 after SIGTERM / SIGHUP");
  }, 60_000);

  test("another process holds the journal lock: recover times out and writes nothing", async () => {
    const dir = tmp();
    const run = await startSlowRun(dir);
    run.child.kill("SIGKILL");
    await run.child.exited;
    const file = journalFile(dir);
    const bytes = fs.readFileSync(file);
    const holder = spawnLines([process.execPath, HOLDER, "hold", sessionsDir(dir), "demo"], dir);
    expect(await holder.until((l) => l === "locked")).toBe(true);
    const r = cli(dir, "sessions", "recover", "demo");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("timed out acquiring Session journal lock");
    expect(fs.readFileSync(file).equals(bytes)).toBe(true);
    holder.child.kill("SIGKILL");
    await holder.child.exited;
    // the holder is gone (its lock is stale now): recover works
    expect(cli(dir, "sessions", "recover", "demo").code).toBe(0);
    expect((await records(dir)).at(-1)!.type).toBe("run_finished");
  }, 120_000);
});
