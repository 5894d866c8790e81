/**
 * One run spec, three front ends, one agent: the same scripted task given to
 * `agentcore agent`, to `agentcore chat` (piped stdin) and to `POST /v1/runs`
 * of a real `agentcore serve` process journals the same session, record by
 * record, once ids and times are set aside. All three build their agent
 * through `buildAgent` (src/host/agent.ts).
 */
import { afterEach, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { binaryPath } from "../support/binary.ts";
import { tmp } from "../support/tmp.ts";
import { JsonlSessionStorage } from "../../src/session/jsonl.ts";

const procs: ReturnType<typeof Bun.spawn>[] = [];
afterEach(() => {
  for (const p of procs.splice(0)) if (p.exitCode === null) p.kill("SIGKILL");
});

/** The scripted task: one tool call, then the answer. */
const TURNS = [
  { content: "Let me echo that.", tool_calls: [{ id: "c1", name: "echo", arguments: '{"message":"hello"}' }] },
  { content: "It said hello." },
];
const TASK = "echo hello and tell me what it said";
const SYSTEM = "You are terse.";
const SESSION = "same";
/** The model's context window: chat always has compaction (for /compact), so all three get the same budget. */
const WINDOW = 100_000;

function env(dir: string): Record<string, string> {
  return { PATH: process.env.PATH ?? "", HOME: dir };
}

function journal(dir: string): Record<string, unknown>[] {
  const file = new JsonlSessionStorage(join(dir, ".agentcore", "sessions")).fileFor(SESSION);
  return readFileSync(file, "utf8")
    .trimEnd()
    .split("\n")
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

const ID_KEYS = new Set([
  "record_id",
  "parent_record_id",
  "run_id",
  "agent_id",
  "created_at",
  "started_at",
  "finished_at",
  "timestamp",
  "ts",
  "time",
  "at",
  "duration_ms",
  "elapsed_ms",
  "pid",
  "revision",
]);

/** A record with its ids and times replaced by their kind, so equal runs compare equal. */
function normal(value: unknown, key = ""): unknown {
  if (ID_KEYS.has(key) || /(_id|_at|_ms)$/.test(key)) return value === null ? null : typeof value;
  if (Array.isArray(value)) return value.map((v) => normal(v));
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([k, v]) => [k, normal(v, k)]),
    );
  }
  return value;
}

async function viaAgent(): Promise<Record<string, unknown>[]> {
  const dir = tmp("agentcore-same-agent-");
  const script = join(dir, "task.jsonl");
  writeFileSync(script, TURNS.map((t) => JSON.stringify(t)).join("\n") + "\n");
  const p = Bun.spawnSync(
    [
      binaryPath(),
      "agent",
      "--no-plan",
      "--context-window",
      String(WINDOW),
      "--system",
      SYSTEM,
      "--session",
      SESSION,
      "--script",
      script,
      TASK,
    ],
    { cwd: dir, env: env(dir), stdout: "pipe", stderr: "pipe" },
  );
  expect(p.stderr.toString()).toBe("");
  expect(p.exitCode).toBe(0);
  return journal(dir);
}

async function viaChat(): Promise<Record<string, unknown>[]> {
  const dir = tmp("agentcore-same-chat-");
  const script = join(dir, "task.jsonl");
  writeFileSync(script, TURNS.map((t) => JSON.stringify(t)).join("\n") + "\n");
  const p = Bun.spawn(
    [binaryPath(), "chat", "--no-plan", "--context-window", String(WINDOW), "--system", SYSTEM, "--session", SESSION, "--script", script],
    { cwd: dir, env: env(dir), stdin: "pipe", stdout: "pipe", stderr: "pipe" },
  );
  procs.push(p);
  p.stdin.write(`${TASK}\n`);
  await p.stdin.end();
  const code = await p.exited;
  expect(await new Response(p.stderr).text()).toBe("");
  expect(code).toBe(0);
  return journal(dir);
}

async function viaDaemon(): Promise<Record<string, unknown>[]> {
  const dir = tmp("agentcore-same-serve-");
  const p = Bun.spawn([binaryPath(), "serve", "--port", "0", "--state-dir", join(dir, "state"), "--root", dir], {
    cwd: dir,
    env: env(dir),
    stdout: "pipe",
    stderr: "pipe",
  });
  procs.push(p);
  // Read stderr until the URL and token lines are there.
  const reader = p.stderr.getReader();
  let text = "";
  while (!/token (file .+)\n/.test(text)) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`serve ended before listening: ${text}`);
    text += new TextDecoder().decode(value);
  }
  const url = /serve: listening on (\S+)\n/.exec(text)![1]!;
  const token = readFileSync(/token file (.+)\n/.exec(text)![1]!, "utf8").trim();
  const res = await fetch(`${url}/v1/runs`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ task: TASK, system: SYSTEM, session: SESSION, script: TURNS, compaction: { context_window: WINDOW } }),
  });
  expect(res.status).toBe(201);
  const stream = await res.text(); // the stream ends with the run
  expect(stream).toContain("event: agent_finished");
  p.kill("SIGTERM");
  expect(await p.exited).toBe(0);
  return journal(dir);
}

describe("one run spec, three front ends", () => {
  test("agent, chat over piped stdin and POST /v1/runs of a real daemon journal the same records (ids and times aside)", async () => {
    const agent = await viaAgent();
    const chat = await viaChat();
    const daemon = await viaDaemon();
    // The run is really there: started, the task, the tool call and its result, the answer, finished.
    expect(agent.map((r) => r.type)).toContain("run_finished");
    expect(JSON.stringify(agent)).toContain("It said hello.");
    const a = agent.map((r) => normal(r));
    expect(chat.map((r) => normal(r))).toEqual(a);
    expect(daemon.map((r) => normal(r))).toEqual(a);
  }, 120_000);
});
