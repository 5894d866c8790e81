// The session CLI through `bun src/cli/main.ts` child processes with scripted models.
import { describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { tmpPerTest } from "../support/tmp.ts";

const MAIN = path.resolve(import.meta.dir, "../../src/cli/main.ts");
const tmp = tmpPerTest("agentcore-session-cli-");

function cli(cwd: string, ...args: string[]) {
  const p = Bun.spawnSync([process.execPath, MAIN, ...args], { cwd, stdout: "pipe", stderr: "pipe" });
  return { code: p.exitCode, stdout: p.stdout.toString(), stderr: p.stderr.toString() };
}

function script(dir: string, name: string, ...turns: unknown[]): string {
  const f = path.join(dir, name);
  fs.writeFileSync(f, turns.map((t) => JSON.stringify(t)).join("\n") + "\n");
  return f;
}

describe("agentcore agent --session / sessions", () => {
  test("record, continue after a restart, show, tree, fork, rollback, retry on a new branch", async () => {
    const dir = tmp();
    const first = script(
      dir,
      "first.jsonl",
      { content: null, tool_calls: [{ id: "c1", name: "echo", arguments: '{"message":"hi"}' }] },
      { content: "said hi" },
    );
    const more = script(dir, "more.jsonl", { content: "continued" });
    const again = script(dir, "again.jsonl", { content: "said hi again" });

    let r = cli(dir, "agent", "--session", "demo", "--script", first, "say hi");
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const sessionsDir = path.join(dir, ".agentcore", "sessions");
    expect(fs.statSync(sessionsDir).mode & 0o777).toBe(0o700);

    r = cli(dir, "agent", "--session", "demo", "--script", more, "--continue");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("continued");

    r = cli(dir, "sessions", "show", "demo", "--json");
    expect(r.code).toBe(0);
    const shown = JSON.parse(r.stdout);
    expect(shown.messages.map((m: { role: string }) => m.role)).toEqual(["user", "assistant", "tool", "assistant", "assistant"]);
    expect(shown.session.runs.map((x: { intent: string }) => x.intent)).toEqual(["task", "continue"]);
    const runId = shown.session.runs[0].run_id;

    r = cli(dir, "sessions", "show", "demo");
    expect(r.stdout).toContain('[tool] {"message":"hi"}');
    expect(cli(dir, "sessions", "list").stdout).toContain("demo  records 8  runs 2  branches main");

    const tree = JSON.parse(cli(dir, "sessions", "tree", "demo", "--json").stdout);
    expect(tree.records.map((x: { type: string }) => x.type)).toEqual([
      "run_started",
      "message_appended",
      "messages_appended",
      "message_appended",
      "run_finished",
      "run_continued",
      "message_appended",
      "run_finished",
    ]);
    const finished = tree.records[4].record_id;

    const fork = JSON.parse(cli(dir, "sessions", "fork", "demo", "--name", "exp", "--json").stdout);
    expect(fork.branch).toMatchObject({ branch_id: "exp", intent: "fork" });
    const rb = JSON.parse(cli(dir, "sessions", "rollback", "demo", "--to", finished, "--name", "back", "--json").stdout);
    expect(rb.messages).toBe(4);

    r = cli(dir, "sessions", "retry", "demo", "--run", runId, "--name", "retry1");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("branch retry1\ntask say hi\n");
    r = cli(dir, "agent", "--session", "demo", "--branch", "retry1", "--script", again, "say hi");
    expect(r.code).toBe(0);
    const retried = JSON.parse(cli(dir, "sessions", "show", "demo", "--branch", "retry1", "--json").stdout);
    expect(retried.messages).toEqual([
      { role: "user", content: "say hi" },
      { role: "assistant", content: "said hi again" },
    ]);
    // main is untouched
    expect(JSON.parse(cli(dir, "sessions", "show", "demo", "--json").stdout).messages.length).toBe(5);
  }, 60_000);

  test("errors exit 2 with clear messages", () => {
    const dir = tmp();
    const s = script(dir, "s.jsonl", { content: "x" });
    let r = cli(dir, "sessions", "show", "nope");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("no session 'nope'");
    r = cli(dir, "agent", "--session", "demo", "--script", s, "--continue", "task");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--continue takes no task");
    r = cli(dir, "agent", "--session", "demo", "--script", s, "--continue");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("no run to continue");
    r = cli(dir, "agent", "--session", "demo", "--branch", "ghost", "--script", s, "t");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("no branch 'ghost'");
    r = cli(dir, "sessions", "rollback", "demo");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--to RECORD");
    expect(cli(dir, "sessions", "frobnicate", "x").code).toBe(2);
    // a corrupt journal is an error, not a missing session
    expect(cli(dir, "agent", "--session", "demo", "--script", s, "t").code).toBe(0);
    const sessionsDir = path.join(dir, ".agentcore", "sessions");
    const file = path.join(sessionsDir, fs.readdirSync(sessionsDir).find((n) => n.endsWith(".jsonl"))!);
    fs.appendFileSync(file, "{not json}\n");
    r = cli(dir, "sessions", "show", "demo");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("invalid JSON at line 4");
    r = cli(dir, "agent", "--session", "demo", "--script", s, "t");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(file);
    expect(cli(dir, "--help").stdout).toContain("  sessions  read, branch and recover durable sessions");
    expect(cli(dir, "sessions", "--help").stdout).toContain('agentcore agent --session ID --branch BRANCH "TASK"');
  }, 60_000);
});

describe("options written before a self-parsing command", () => {
  test("agentcore --root DIR sessions list works like agentcore sessions --root DIR list", () => {
    const dir = tmp();
    const work = path.join(dir, "work");
    fs.mkdirSync(work);
    const s = script(dir, "s.jsonl", { content: "done" });
    expect(cli(work, "agent", "--session", "demo", "--script", s, "t").code).toBe(0);
    // from another directory: the sessions live under work/.agentcore
    const before = cli(dir, "--root", work, "sessions", "list");
    expect(before.stderr).toBe("");
    expect(before.code).toBe(0);
    expect(before.stdout).toContain("demo  records");
    expect(cli(dir, "sessions", "--root", work, "list").stdout).toBe(before.stdout);
    expect(cli(dir, `--root=${work}`, "--json", "sessions", "list").stdout).toContain('"demo"');
    // an option the command does not take is named by its own parser
    const bad = cli(dir, "--max-depth", "5", "sessions", "list");
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--max-depth");
    // no hoisting past "--" or for a value that happens to be a command name
    expect(cli(dir, "--config", "sessions", "tools").stderr).toContain("sessions");
  }, 60_000);

  test("hoistCommand moves only self-parsing commands, skipping option values", async () => {
    const { hoistCommand } = await import("../../src/cli/main.ts");
    expect(hoistCommand(["--root", "x", "sessions", "list"])).toEqual(["sessions", "--root", "x", "list"]);
    expect(hoistCommand(["--json", "skills", "list"])).toEqual(["skills", "--json", "list"]);
    expect(hoistCommand(["--history", "h.jsonl", "history", "--json"])).toEqual(["history", "--history", "h.jsonl", "--json"]);
    expect(hoistCommand(["--config", "serve", "tools"])).toEqual(["--config", "serve", "tools"]);
    expect(hoistCommand(["--root", "x", "tools"])).toEqual(["--root", "x", "tools"]);
    expect(hoistCommand(["--", "sessions"])).toEqual(["--", "sessions"]);
    expect(hoistCommand(["sessions", "list"])).toEqual(["sessions", "list"]);
  });
});
