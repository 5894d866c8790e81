/**
 * Session refusals of agent and chat in the user's terms, through the compiled
 * binary: `sessions delete --force` while an agent's run of that session is
 * going (the agent ends, exit 2, saying the session was deleted, and writes no
 * journal back), and --branch naming a branch the session does not have.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { createHash } from "node:crypto";
import { binaryPath } from "../support/binary.ts";
import { tmp } from "../support/tmp.ts";

let work: string;
let bin: string;

beforeAll(() => {
  work = tmp("agentcore-deleted-session-");
  bin = binaryPath();
}, 120_000);

afterAll(() => {
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

test("a session deleted (--force) during a live agent run: the agent says so, exit 2, nothing recreated", async () => {
  fs.writeFileSync(path.join(work, "slow.jsonl"), '{"content": "late answer", "delay_ms": 5000}\n');
  const env = { ...process.env, AGENTCORE_CONFIG: "" };
  const agent = Bun.spawn([bin, "agent", "--session", "gone", "--script", "slow.jsonl", "a task"], {
    cwd: work,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env,
  });
  const journal = path.join(work, ".agentcore", "sessions", createHash("sha256").update("gone").digest("hex") + ".jsonl");
  // bounded wait for the run_started record
  for (let i = 0; i < 200 && !(fs.existsSync(journal) && fs.readFileSync(journal, "utf8").includes("run_started")); i++)
    await Bun.sleep(50);
  expect(fs.readFileSync(journal, "utf8")).toContain("run_started");
  const del = Bun.spawnSync([bin, "sessions", "delete", "gone", "--yes", "--force"], { cwd: work, env });
  expect(del.exitCode).toBe(0);
  const [status, stderr] = await Promise.all([agent.exited, new Response(agent.stderr).text()]);
  expect(status).toBe(2);
  expect(stderr).toContain(
    "agentcore: session 'gone' was deleted while this run was going (agentcore sessions delete --force), so the rest of the run was not journaled\n",
  );
  // the last line is the sentence, not the journal's validation error
  expect(stderr.trimEnd().split("\n").at(-1)).toStartWith("agentcore: session 'gone' was deleted");
  expect(fs.existsSync(journal)).toBe(false);
}, 60_000);

test("agent and chat --branch B on a session without B: the branches it has and the fork that makes B", () => {
  const d = path.join(work, "branches");
  fs.mkdirSync(d);
  fs.writeFileSync(path.join(d, "s.jsonl"), '{"content": "ok"}\n');
  const env = { ...process.env, AGENTCORE_CONFIG: "" };
  const cli = (args: string[], stdin = "") => {
    const r = Bun.spawnSync([bin, ...args], { cwd: d, stdin: new TextEncoder().encode(stdin), env, timeout: 30_000 });
    return { status: r.exitCode, stderr: r.stderr.toString() };
  };
  expect(cli(["agent", "--session", "b1", "--script", "s.jsonl", "hi"]).status).toBe(0);
  const want = "agentcore: session 'b1' has no branch 'exp' (branches main); to make it: agentcore sessions fork b1 --name exp\n";
  expect(cli(["agent", "--session", "b1", "--branch", "exp", "--script", "s.jsonl", "hi"])).toEqual({ status: 2, stderr: want });
  expect(cli(["chat", "--session", "b1", "--branch", "exp", "--script", "s.jsonl"], "/exit\n")).toEqual({ status: 2, stderr: want });
  // the command it names works, and then so does the run
  expect(Bun.spawnSync([bin, "sessions", "fork", "b1", "--name", "exp"], { cwd: d, env }).exitCode).toBe(0);
  expect(cli(["agent", "--session", "b1", "--branch", "exp", "--script", "s.jsonl", "hi"]).status).toBe(0);
  // a session with no records: a new session starts on main
  const fresh = cli(["agent", "--session", "b2", "--branch", "exp", "--script", "s.jsonl", "hi"]);
  expect(fresh.status).toBe(2);
  expect(fresh.stderr).toBe(
    "agentcore: session 'b2' has no branch 'exp': it has no records yet, and a new session starts on main (leave --branch out)\n",
  );
}, 60_000);
