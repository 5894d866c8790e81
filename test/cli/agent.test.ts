/**
 * `agentcore agent` end to end through the compiled binary: a scripted model
 * from a JSONL file, and the real OpenAI adapter over real HTTP against the
 * scripted OpenAI-compatible server.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { binaryPath, REPO } from "../support/binary.ts";
import { screenLines } from "../support/pty.ts";
import { chunk, startOpenAIServer, textReply, toolChunk, usageChunk, type ScriptedOpenAIServer } from "../support/openai-server.ts";

let bin: string;
let work: string;
beforeAll(() => {
  bin = binaryPath();
  work = mkdtempSync(join(tmpdir(), "agentcore-agent-"));
  writeFileSync(join(work, "note.txt"), "the secret word is pelican\n");
}, 120_000);
afterAll(() => rmSync(work, { recursive: true, force: true }));

const CLEAN_ENV = { PATH: process.env.PATH ?? "/usr/bin:/bin" };

function script(name: string, lines: unknown[]): string {
  const path = join(work, name);
  writeFileSync(path, lines.map((l) => JSON.stringify(l)).join("\n") + "\n");
  return path;
}

async function run(args: string[], env: Record<string, string> = {}) {
  const p = Bun.spawn([bin, ...args], { cwd: work, stdin: "ignore", stdout: "pipe", stderr: "pipe", env: { ...CLEAN_ENV, ...env } });
  const [stdout, stderr, status] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { status, stdout, stderr };
}

/** Read the child's stdout until it contains `mark`, send `signal`, then read to the end. */
async function readUntilThenSignal(
  p: { stdout: ReadableStream<Uint8Array>; kill(signal: NodeJS.Signals): void },
  mark: string,
  signal: NodeJS.Signals,
): Promise<string> {
  const reader = p.stdout.getReader();
  const dec = new TextDecoder();
  let seen = "";
  let sent = false;
  for (;;) {
    if (!sent && seen.includes(mark)) {
      p.kill(signal);
      sent = true;
    }
    const { value, done } = await reader.read();
    if (done) break;
    seen += dec.decode(value, { stream: true });
  }
  if (!sent) p.kill(signal);
  return seen + dec.decode();
}

type Ev = { kind: string; sequence: number; run_id: string; [k: string]: unknown };
const events = (stdout: string): Ev[] =>
  stdout
    .trimEnd()
    .split("\n")
    .map((l) => JSON.parse(l) as Ev);

describe("agentcore agent --script", () => {
  const lines = [
    {
      content: null,
      tool_calls: [{ id: "c1", name: "read_file", arguments: '{"path":"note.txt"}' }],
      usage: { input_tokens: 50, output_tokens: 10 },
    },
    { content: "The word is pelican.", usage: { input_tokens: 80, output_tokens: 6 } },
  ];

  test("streams the answer to stdout and exits 0", async () => {
    const r = await run(["agent", "--script", script("ok.jsonl", lines), "What is the word?"]);
    expect(r.stderr).toBe("");
    expect(r.stdout).toBe("The word is pelican.\n");
    expect(r.status).toBe(0);
  });

  test("--events jsonl: every event on one line, in order, ending with agent_finished", async () => {
    const r = await run(["agent", "--events", "jsonl", "--script", script("ok2.jsonl", lines), "What is the word?"]);
    expect(r.status).toBe(0);
    const ev = events(r.stdout);
    expect(ev.map((e) => e.kind)).toEqual([
      "agent_started",
      "turn_started",
      "message_completed",
      "tool_started",
      "tool_completed",
      "turn_completed",
      "turn_started",
      "assistant_text_delta",
      "message_completed",
      "turn_completed",
      "agent_finished",
    ]);
    expect(ev.map((e) => e.sequence)).toEqual(ev.map((_, i) => i + 1));
    expect(new Set(ev.map((e) => e.run_id)).size).toBe(1);
    const tool = ev[4] as Ev & { result: { messages: { content: string }[] } };
    expect(JSON.parse(tool.result.messages[0]!.content)).toEqual({ path: "note.txt", bytes: 27, content: "the secret word is pelican\n" });
    const fin = ev.at(-1) as Ev & { result: Record<string, unknown> };
    expect(fin.result).toMatchObject({ status: "completed", stop_reason: "text_response", turns: 2, output: "The word is pelican." });
    expect(fin.result.usage).toMatchObject({ input_tokens: 130, output_tokens: 16, total_tokens: 146, request_count: 2, complete: true });
  });

  test("a bad tool call goes back to the model with the strict parser's message; the run goes on", async () => {
    const bad = [
      { content: null, tool_calls: [{ id: "c1", name: "echo", arguments: '{"a":1,"a":2}' }] },
      { content: "fixed", usage: { input_tokens: 1, output_tokens: 1 } },
    ];
    const r = await run(["agent", "--events", "jsonl", "--script", script("bad.jsonl", bad), "go"]);
    expect(r.status).toBe(0);
    const done = events(r.stdout).find((e) => e.kind === "tool_completed") as Ev & { result: { messages: { content: string }[] } };
    const payload = JSON.parse(done.result.messages[0]!.content) as Record<string, unknown>;
    expect(payload).toMatchObject({ status: "error", tool: "echo", code: "JSON_DUPLICATE_KEY" });
    expect(String(payload.error)).toContain('duplicate key "a"');
  });

  test("a failed run exits 1 and says why on stderr", async () => {
    const r = await run(["agent", "--script", script("err.jsonl", [{ error: { kind: "authentication", message: "bad key" } }]), "go"]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("run failed (runtime_error)");
  });

  test("an answer cut off at the output limit exits 1 with max_tokens and a note; the journal's run_finished says max_tokens", async () => {
    const cut = script("cut.jsonl", [{ content: "The first half of the ans", finish_reason: "length" }]);
    const r = await run(["agent", "--no-plan", "--script", cut, "explain"]);
    expect(r.status).toBe(1);
    expect(r.stdout).toBe("The first half of the ans\n");
    expect(r.stderr).toContain('agentcore: run failed (max_tokens): the model stopped at its output-token limit (finish_reason "length")');
    expect(r.stderr).toContain("raise the server's output-token limit for this model");

    const ev = await run(["agent", "--no-plan", "--events", "jsonl", "--session", "cut-session", "--script", cut, "explain"]);
    expect(ev.status).toBe(1);
    expect((events(ev.stdout).at(-1) as Ev & { result: Record<string, unknown> }).result).toMatchObject({
      status: "failed",
      stop_reason: "max_tokens",
      output: "The first half of the ans",
    });
    const tree = JSON.parse((await run(["sessions", "tree", "cut-session", "--json"])).stdout) as {
      records: { type: string; data: { result?: { stop_reason: string } } }[];
    };
    expect(tree.records.find((x) => x.type === "run_finished")!.data.result!.stop_reason).toBe("max_tokens");
    // A cut-off answer can be continued: the model goes on from the journal.
    const rest = script("rest.jsonl", [{ content: "wer." }]);
    const c = await run(["agent", "--no-plan", "--session", "cut-session", "--continue", "--script", rest]);
    expect(c.status).toBe(0);
    expect(c.stdout).toBe("wer.\n");
  });

  test("a tool call in a cut-off answer is not run; content_filter exits 1 with its own note", async () => {
    writeFileSync(join(work, "keep.txt"), "unchanged");
    const cutCall = script("cut-call.jsonl", [
      {
        content: null,
        tool_calls: [{ id: "w1", name: "write_file", arguments: '{"path":"keep.txt","content":"over' }],
        finish_reason: "length",
      },
    ]);
    const r = await run([
      "agent",
      "--no-plan",
      "--approve-all",
      "--tools",
      "write_file",
      "--events",
      "jsonl",
      "--script",
      cutCall,
      "write",
    ]);
    expect(r.status).toBe(1);
    const done = events(r.stdout).find((e) => e.kind === "tool_completed") as Ev & { result: { messages: { content: string }[] } };
    expect(JSON.parse(done.result.messages[0]!.content)).toMatchObject({ status: "not_run", tool: "write_file" });
    expect(readFileSync(join(work, "keep.txt"), "utf8")).toBe("unchanged");

    const filtered = await run([
      "agent",
      "--no-plan",
      "--script",
      script("filtered.jsonl", [{ content: null, finish_reason: "content_filter" }]),
      "something",
    ]);
    expect(filtered.status).toBe(1);
    expect(filtered.stderr).toContain("agentcore: run failed (content_filter): the provider's content filter stopped the model's answer");
    expect(filtered.stderr).toContain("rephrase the task");
  });

  test("--max-steps is the policy's step limit", async () => {
    const loop = Array.from({ length: 5 }, (_, i) => ({
      content: null,
      tool_calls: [{ id: `c${i}`, name: "echo", arguments: `{"i":${i}}` }],
    }));
    const r = await run(["agent", "--events", "jsonl", "--max-steps", "2", "--script", script("loop.jsonl", loop), "go"]);
    expect(r.status).toBe(1);
    expect((events(r.stdout).at(-1) as Ev & { result: { stop_reason: string; turns: number } }).result).toMatchObject({
      stop_reason: "max_steps",
      turns: 2,
    });
  });

  test("agent -: a task on stdin that is not UTF-8 is refused (exit 2), not sent with U+FFFD", async () => {
    const path = script("one.jsonl", [{ content: "never" }]);
    const bad = Bun.spawnSync([bin, "agent", "--script", path, "-"], {
      cwd: work,
      stdin: new Uint8Array([0x68, 0x69, 0xff, 0x0a]),
      env: CLEAN_ENV,
    });
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr.toString()).toBe("agentcore: the task read from stdin is not valid UTF-8\n");
    expect(bad.stdout.toString()).toBe("");
    const good = Bun.spawnSync([bin, "agent", "--script", path, "-"], {
      cwd: work,
      stdin: new TextEncoder().encode("héllo\n"),
      env: CLEAN_ENV,
    });
    expect(good.exitCode).toBe(0);
    expect(good.stdout.toString()).toContain("never");
  });

  test("Ctrl-C aborts the run cleanly: cancelled / external_abort", async () => {
    const slow = script("slow.jsonl", [{ content: "never", delay_ms: 60_000 }]);
    const p = Bun.spawn([bin, "agent", "--events", "jsonl", "--script", slow, "go"], {
      cwd: work,
      stdout: "pipe",
      stderr: "pipe",
      env: CLEAN_ENV,
    });
    const seen = await readUntilThenSignal(p, '"turn_started"', "SIGINT");
    expect(await p.exited).toBe(1);
    const fin = events(seen).at(-1) as Ev & { result: Record<string, unknown> };
    expect(fin.kind).toBe("agent_finished");
    expect(fin.result).toMatchObject({ status: "cancelled", stop_reason: "external_abort" });
  });

  test("on a terminal, each tool call is one line on stderr; on a pipe, none", async () => {
    const two = script("two.jsonl", [
      {
        content: null,
        tool_calls: [
          { id: "c1", name: "echo", arguments: '{"a":1,"a":2}' },
          { id: "c2", name: "read_file", arguments: '{"path":"note.txt"}' },
        ],
      },
      { content: "ok" },
    ]);
    const piped = await run(["agent", "--script", two, "go"]);
    expect(piped).toEqual({ status: 0, stdout: "ok\n", stderr: "" });
    if (process.platform !== "linux") return; // util-linux `script` provides the pseudo-terminal
    const out = join(work, "two.out");
    const r = Bun.spawnSync(["script", "-qec", `'${bin}' agent --script '${two}' go > '${out}'`, "/dev/null"], {
      cwd: work,
      stdin: "ignore",
      env: CLEAN_ENV,
    });
    expect(r.exitCode).toBe(0);
    // As chat draws them (durations vary), then the run's summary line.
    const screen = screenLines(r.stdout.toString()).map((l) => l.replace(/\d+ ms$/, "N ms").replace(/ \d+\.\d s\]$/, " T s]"));
    expect(screen).toEqual([
      '→ echo {"a":1,"a":2} ✗ JSON_DUPLICATE_KEY: duplicate key "a" at offset 7 (line 1, column 8) N ms',
      '→ read_file path="note.txt" ✓ N ms',
      "[completed: text_response · 2 turns · tokens not reported · T s]",
    ]);
  });

  test("escape sequences in a model's tool names and arguments never reach the terminal raw (tool lines, the closing note)", async () => {
    const name = "\u001b]0;pwned\u0007\u001b[31mred";
    const call = { id: "c1", name, arguments: '{"a":"\u001b[2J"}' };
    const path = script(
      "esc.jsonl",
      [0, 1, 2].map((i) => ({ content: null, tool_calls: [{ ...call, id: `c${i}` }] })),
    );
    const piped = await run(["agent", "--no-plan", "--script", path, "go"]);
    expect(piped.status).toBe(1);
    expect(piped.stderr).not.toContain("\u001b");
    expect(piped.stderr).toBe(
      "agentcore: run failed (repeated_tool_call): tool '\\x1b]0;pwned\\x07\\x1b[31mred' was called with the same arguments 3 consecutive times\n",
    );
    if (process.platform !== "linux") return; // util-linux `script` provides the pseudo-terminal
    const r = Bun.spawnSync(["script", "-qec", `'${bin}' agent --no-plan --script '${path}' go > /dev/null`, "/dev/null"], {
      cwd: work,
      stdin: "ignore",
      env: CLEAN_ENV,
    });
    const screen = r.stdout.toString();
    // No escape sequence but the summary line's dim (NO_COLOR would drop that too).
    expect(screen.replace(/\u001b\[(2|0)m/g, "")).not.toContain("\u001b");
    expect(screenLines(screen)[0]).toStartWith('→ \\x1b]0;pwned\\x07\\x1b[31mred {"a":" [2J"} ✗ UNKNOWN_TOOL: unknown tool');
  });

  test("stdout that cannot be written (/dev/full): exit 2 naming the failure, the run aborted and journaled; no crash", async () => {
    const path = script("full.jsonl", [
      { content: null, tool_calls: [{ id: "c1", name: "echo", arguments: '{"a":1}' }] },
      { content: null, tool_calls: [{ id: "c2", name: "echo", arguments: '{"a":2}' }] },
      { content: "never shown" },
    ]);
    for (const [i, mode] of [[], ["--events", "jsonl"]].entries()) {
      const full = openSync("/dev/full", "w");
      const session = `full-${i}`;
      const p = Bun.spawn([bin, "agent", ...mode, "--session", session, "--no-plan", "--script", path, "go"], {
        cwd: work,
        stdin: "ignore",
        stdout: full,
        stderr: "pipe",
        env: CLEAN_ENV,
      });
      const [stderr, status] = await Promise.all([new Response(p.stderr).text(), p.exited]);
      closeSync(full);
      expect(stderr).toBe("agentcore: cannot write results: ENOSPC\n");
      expect(status).toBe(2);
      const show = await run(["sessions", "show", session, "--json"]);
      expect(show.status).toBe(0);
      const runs = (JSON.parse(show.stdout) as { session: { runs: { result: Record<string, unknown> }[] } }).session.runs;
      expect(runs).toHaveLength(1);
      expect(runs[0]!.result).toMatchObject({
        status: "cancelled",
        stop_reason: "external_abort",
        error: "agentcore stopped the run: cannot write results: ENOSPC",
      });
    }
  });

  test("setup mistakes exit 2 with a clear message", async () => {
    const missing = await run(["agent", "--script", join(work, "nope.jsonl"), "go"]);
    expect(missing.status).toBe(2);
    expect(missing.stderr).toContain("nope.jsonl");
    const badLine = join(work, "badline.jsonl");
    writeFileSync(badLine, '{"content": "ok"}\n{"content": 5}\n');
    const bl = await run(["agent", "--script", badLine, "go"]);
    expect(bl.status).toBe(2);
    expect(bl.stderr).toContain("line 2");
    const noModel = await run(["agent", "--model-url", "http://127.0.0.1:9/v1", "go"]);
    // not a usage error (the flags are well formed): no pointer to --help
    expect(noModel).toEqual({
      status: 2,
      stdout: "",
      stderr: "agentcore: no model configured: pass --model NAME or set CHAT_MODEL (or play a script with --script FILE)\n",
    });
    for (const args of [
      ["agent", "--events", "xml", "--script", badLine, "go"],
      ["agent", "--preset", "bogus", "go"],
      ["run", "--script", badLine, "-"],
      ["agent"],
      ["agent", "--max-steps", "0", "go"],
    ]) {
      const r = await run(args);
      expect(r.status).toBe(2);
      expect(r.stdout).toBe("");
    }
  });
});

describe("agentcore agent over real HTTP (OpenAI adapter → scripted server)", () => {
  let server: ScriptedOpenAIServer;
  beforeAll(async () => {
    server = await startOpenAIServer();
  });
  afterAll(() => server.close());

  test("--model-url and --model drive the OpenAI-compatible adapter", async () => {
    server.push(
      {
        kind: "stream",
        chunks: [
          chunk({ role: "assistant", content: null }),
          toolChunk(0, { id: "call_a", name: "echo", args: '{"msg":' }),
          toolChunk(0, { args: '"h\\u00e9llo"}' }),
          chunk({}, "tool_calls"),
          usageChunk(30, 7),
        ],
      },
      textReply("echoed", [40, 2]),
    );
    const r = await run(["agent", "--events", "jsonl", "--model-url", server.baseURL, "--model", "test-model", "say hello"], {
      MODEL_API_KEY: "sk-test",
    });
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    const ev = events(r.stdout);
    const done = ev.find((e) => e.kind === "tool_completed") as Ev & { result: { messages: { content: string }[] } };
    expect(JSON.parse(done.result.messages[0]!.content)).toEqual({ msg: "héllo" });
    expect((ev.at(-1) as Ev & { result: Record<string, unknown> }).result).toMatchObject({ status: "completed", output: "echoed" });
    // the second request carried the tool result back to the model
    const second = server.requests.at(-1)!.body as { model: string; messages: { role: string }[]; tools: { function: { name: string } }[] };
    expect(second.model).toBe("test-model");
    // the system message is the planning note; update_plan is offered unless --no-plan
    expect(second.messages.map((m) => m.role)).toEqual(["system", "user", "assistant", "tool"]);
    expect(second.tools.map((t) => t.function.name)).toEqual(["echo", "read_file", "update_plan"]);
    expect(server.requests.at(-1)!.headers.authorization).toBe("Bearer sk-test");
  });

  test("each retry of a rate-limited or failing request is one line on stderr, then the answer", async () => {
    server.push(
      { kind: "error", status: 429, headers: { "retry-after": "0" }, body: { error: { message: "slow down", type: "rate_limit_error" } } },
      { kind: "error", status: 503, headers: { "retry-after-ms": "20" }, body: { error: { message: "overloaded", type: "server_error" } } },
      textReply("third time lucky"),
    );
    const before = server.requests.length;
    const r = await run(["agent", "--no-plan", "--model-url", server.baseURL, "--model", "m", "go"]);
    expect(r.stdout).toBe("third time lucky\n");
    expect(r.stderr).toBe(
      "agentcore: chat completion stream failed: 429 slow down; retry 1 of 3 in 0 ms\n" +
        "agentcore: chat completion stream failed: 503 overloaded; retry 2 of 3 in 20 ms\n",
    );
    expect(r.status).toBe(0);
    expect(server.requests.length - before).toBe(3);
  });

  test("finish_reason length and content_filter from the server end the run max_tokens / content_filter, exit 1", async () => {
    server.push(
      {
        kind: "stream",
        chunks: [chunk({ role: "assistant", content: "" }), chunk({ content: "Once upon a" }), chunk({}, "length"), usageChunk(20, 3)],
      },
      { kind: "stream", chunks: [chunk({ role: "assistant", content: "" }), chunk({}, "content_filter")] },
    );
    const r = await run(["agent", "--no-plan", "--events", "jsonl", "--model-url", server.baseURL, "--model", "m", "tell a story"]);
    expect(r.status).toBe(1);
    expect((events(r.stdout).at(-1) as Ev & { result: Record<string, unknown> }).result).toMatchObject({
      status: "failed",
      stop_reason: "max_tokens",
      output: "Once upon a",
      turns: 1,
    });
    const f = await run(["agent", "--no-plan", "--model-url", server.baseURL, "--model", "m", "something"]);
    expect(f.status).toBe(1);
    expect(f.stderr).toContain("agentcore: run failed (content_filter)");
  });

  test("Ctrl-C while the model stalls mid-answer: the text shown so far ends its line, then the reason on stderr", async () => {
    server.push({ kind: "stream", chunks: [chunk({ role: "assistant", content: "partial answ" })], end: "stall" });
    const p = Bun.spawn([bin, "agent", "--no-plan", "--model-url", server.baseURL, "--model", "m", "go"], {
      cwd: work,
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
      env: CLEAN_ENV,
    });
    const seen = await readUntilThenSignal(p, "partial answ", "SIGINT");
    expect(await p.exited).toBe(1);
    expect(seen).toBe("partial answ\n");
    expect(await new Response(p.stderr).text()).toBe("agentcore: run cancelled (external_abort): interrupted by the user (Ctrl-C)\n");
  });
});

test("the example agent script in the README runs", async () => {
  const r = Bun.spawnSync([bin, "agent", "--script", "examples/agent_script.jsonl", "Read examples/hello.txt"], {
    cwd: REPO,
    env: CLEAN_ENV,
  });
  expect(r.exitCode).toBe(0);
  expect(r.stdout.toString()).toBe("The file says: Hello from agentcore.\n");
});
