/**
 * Through the compiled binary: `agent --events jsonl` carries the streamed
 * tool-argument deltas (from a script and over real HTTP from the OpenAI
 * adapter), a session journal never holds them, and `agent --output-schema
 * FILE` asks for JSON, prints the value on stdout, repairs once and ends
 * `output_invalid` after that; a bad schema file is a clear error naming it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { binaryPath, REPO } from "../support/binary.ts";
import { chunk, startOpenAIServer, textReply, toolChunk, type ScriptedOpenAIServer } from "../support/openai-server.ts";

let bin: string;
let work: string;
let server: ScriptedOpenAIServer;
beforeAll(async () => {
  bin = binaryPath();
  work = mkdtempSync(join(tmpdir(), "agentcore-stream-output-"));
  writeFileSync(join(work, "note.txt"), "hello\n");
  server = await startOpenAIServer();
}, 120_000);
afterAll(async () => {
  await server.close();
  rmSync(work, { recursive: true, force: true });
});

const CLEAN_ENV = { PATH: process.env.PATH ?? "/usr/bin:/bin" };

function file(name: string, text: string): string {
  const path = join(work, name);
  writeFileSync(path, text);
  return path;
}

function script(name: string, lines: unknown[]): string {
  return file(name, lines.map((l) => JSON.stringify(l)).join("\n") + "\n");
}

async function run(args: string[], env: Record<string, string> = {}) {
  const p = Bun.spawn([bin, ...args], { cwd: work, stdin: "ignore", stdout: "pipe", stderr: "pipe", env: { ...CLEAN_ENV, ...env } });
  const [stdout, stderr, status] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { status, stdout, stderr };
}

type Ev = { kind: string; [k: string]: unknown };
const events = (stdout: string): Ev[] =>
  stdout
    .trimEnd()
    .split("\n")
    .map((l) => JSON.parse(l) as Ev);

const SCHEMA = {
  type: "object",
  properties: { word: { type: "string" }, count: { type: "integer" } },
  required: ["word", "count"],
  additionalProperties: false,
};

describe("agent --events jsonl: tool_call_arguments_delta", () => {
  test("a script with arguments_chunk_size: the deltas, in order, before tool_started; the bad call's verdict; none in the session journal", async () => {
    const path = script("args.jsonl", [
      {
        content: null,
        tool_calls: [
          { id: "c1", name: "read_file", arguments: '{"path":"note.txt"}' },
          { id: "c2", name: "read_file", arguments: '{"path":"x" "y"}' },
        ],
        arguments_chunk_size: 5,
      },
      { content: "read it" },
    ]);
    const sessions = join(work, "sessions-a");
    const r = await run(["agent", "--no-plan", "--events", "jsonl", "--session", "s1", "--sessions-dir", sessions, "--script", path, "go"]);
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    const ev = events(r.stdout);
    const deltas = ev.filter((e) => e.kind === "tool_call_arguments_delta");
    expect(deltas.filter((d) => d.tool_call_id === "c1").map((d) => d.delta)).toEqual(['{"pat', 'h":"n', "ote.t", 'xt"}']);
    expect(deltas.every((d) => d.tool === "read_file" && d.turn === 1)).toBe(true);
    const c2 = deltas.filter((d) => d.tool_call_id === "c2");
    expect(c2.map((d) => d.delta).join("")).toBe('{"path":"x" "y"}');
    // '{"pat' 'h":"x' '" "y"' '}': the space after "x" is allowed, the quote at byte 12 is not.
    const firstBad = c2.find((d) => d.error !== undefined)!;
    expect(firstBad.delta).toBe('" "y"');
    expect((firstBad.error as { offset: number }).offset).toBe(12);
    const lastDelta = ev.findLastIndex((e) => e.kind === "tool_call_arguments_delta");
    expect(lastDelta).toBeLessThan(ev.findIndex((e) => e.kind === "tool_started"));
    // The model still gets the precise error for c2.
    const c2Done = ev.find((e) => e.kind === "tool_completed" && (e.tool_call as { id: string }).id === "c2") as Ev & {
      result: { messages: { content: string }[] };
    };
    expect(c2Done.result.messages[0]!.content).toContain("at offset 12");
    // The journal has the run, and no delta of any kind.
    const files = readdirSync(sessions, { recursive: true })
      .map(String)
      .filter((f) => f.endsWith(".jsonl"));
    expect(files.length).toBeGreaterThan(0);
    const journal = files.map((f) => readFileSync(join(sessions, f), "utf8")).join("");
    expect(journal).toContain('"type":"run_finished"');
    expect(journal).not.toContain("tool_call_arguments_delta");
    expect(journal).not.toContain('ote.t"');
  });

  test("over real HTTP (--model-url): the adapter's deltas reach --events jsonl, and concatenate to the call's arguments", async () => {
    server.push(
      {
        kind: "stream",
        chunks: [
          chunk({ role: "assistant", content: null }),
          toolChunk(0, { id: "call_w", name: "read_file", args: '{"pa' }),
          toolChunk(0, { args: 'th": "no' }),
          toolChunk(0, { args: 'te.txt"}' }),
          chunk({}, "tool_calls"),
        ],
      },
      textReply("done"),
    );
    const r = await run(["agent", "--no-plan", "--events", "jsonl", "--model-url", server.baseURL, "--model", "m", "go"]);
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    const ev = events(r.stdout);
    const deltas = ev.filter((e) => e.kind === "tool_call_arguments_delta");
    expect(deltas.map((d) => [d.tool_call_id, d.tool, d.index, d.delta])).toEqual([
      ["call_w", "read_file", 0, '{"pa'],
      ["call_w", "read_file", 0, 'th": "no'],
      ["call_w", "read_file", 0, 'te.txt"}'],
    ]);
    const started = ev.find((e) => e.kind === "tool_started") as Ev & { tool_call: { arguments: string } };
    expect(deltas.map((d) => d.delta).join("")).toBe(started.tool_call.arguments);
  });
});

describe("agent --output-schema FILE", () => {
  const schemaFile = () => file("schema.json", JSON.stringify(SCHEMA, null, 2));

  test("a valid answer: stdout is the value as one JSON line (the streamed text is not printed)", async () => {
    const path = script("valid.jsonl", [{ content: '{"word": "hello", "count": 1}', chunk_size: 3 }]);
    const r = await run(["agent", "--no-plan", "--output-schema", schemaFile(), "--script", path, "go"]);
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    expect(r.stdout).toBe('{"word":"hello","count":1}\n');
  });

  test("a repaired answer: one repair turn, then the value; --events jsonl shows output_repair_requested and output_value", async () => {
    const lines = [{ content: '{"word": "hello", "count": "one"}' }, { content: '{"word": "hello", "count": 1}' }];
    const plain = await run(["agent", "--no-plan", "--output-schema", schemaFile(), "--script", script("repair.jsonl", lines), "go"]);
    expect(plain.status).toBe(0);
    expect(plain.stdout).toBe('{"word":"hello","count":1}\n');
    const r = await run([
      "agent",
      "--no-plan",
      "--events",
      "jsonl",
      "--output-schema",
      schemaFile(),
      "--script",
      script("repair2.jsonl", lines),
      "go",
    ]);
    expect(r.status).toBe(0);
    const ev = events(r.stdout);
    const repair = ev.find((e) => e.kind === "output_repair_requested") as Ev & { errors: { path: string }[]; message: string };
    expect(repair.errors.map((e) => e.path)).toEqual(["/count"]);
    expect(repair.message).toContain("/count");
    const result = (ev.at(-1) as Ev & { result: Record<string, unknown> }).result;
    expect(result).toMatchObject({
      status: "completed",
      stop_reason: "text_response",
      turns: 2,
      output_value: { word: "hello", count: 1 },
    });
  });

  test("an answer that stays invalid: exit 1, stop reason output_invalid on stderr naming the pointer, nothing on stdout", async () => {
    const path = script("invalid.jsonl", [{ content: "not json" }, { content: '{"word": "x"}' }]);
    const r = await run(["agent", "--no-plan", "--output-schema", schemaFile(), "--script", path, "go"]);
    expect(r.status).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain(
      "agentcore: run failed (output_invalid): the final answer does not match the output schema after one repair turn:",
    );
    expect(r.stderr).toContain("/count");
  });

  test("through the OpenAI adapter: the request carries response_format, and a 400 refusal falls back to instructions", async () => {
    server.push(
      {
        kind: "error",
        status: 400,
        body: { error: { message: "response_format json_schema is not supported", type: "invalid_request_error" } },
      },
      textReply('{"word": "w", "count": 2}'),
    );
    const before = server.requests.length;
    const r = await run(["agent", "--no-plan", "--output-schema", schemaFile(), "--model-url", server.baseURL, "--model", "m", "go"]);
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    expect(r.stdout).toBe('{"word":"w","count":2}\n');
    const [asked, fallback] = server.requests.slice(before);
    expect(asked!.body.response_format).toEqual({ type: "json_schema", json_schema: { name: "output", schema: SCHEMA, strict: true } });
    expect("response_format" in fallback!.body).toBe(false);
    expect(JSON.stringify(fallback!.body.messages[0])).toContain("JSON Schema");
  });

  test("a bad schema file is a clear error (exit 2) naming the file and what is wrong", async () => {
    const path = script("unused.jsonl", [{ content: "{}" }]);
    const cases: [string, RegExp][] = [
      [join(work, "missing.json"), /^agentcore: --output-schema .*missing\.json: cannot read the file \(ENOENT\)\n$/],
      [
        file("broken.json", '{\n  "type": "object",\n  "properties": {,}\n}'),
        /^agentcore: --output-schema .*broken\.json: not valid JSON: .* at line 3, column 18\n$/,
      ],
      [file("array.json", "[]"), /^agentcore: --output-schema .*array\.json: a JSON Schema must be a JSON object, got an array\n$/],
      [
        file("badtype.json", '{"type": "strnig"}'),
        /^agentcore: --output-schema .*badtype\.json: not a usable JSON Schema: schema is invalid: /,
      ],
    ];
    const dir = join(work, "a-dir.json");
    mkdirSync(dir, { recursive: true });
    cases.push([dir, /^agentcore: --output-schema .*a-dir\.json: not a file\n$/]);
    for (const [schema, expected] of cases) {
      const r = await run(["agent", "--no-plan", "--output-schema", schema, "--script", path, "go"]);
      expect(r.stdout).toBe("");
      expect(r.stderr).toMatch(expected);
      expect(r.status).toBe(2);
    }
  });

  test("--help names --output-schema", async () => {
    const r = await run(["agent", "--help"]);
    expect(r.stdout).toContain("--output-schema FILE");
  });
});

describe("docs/agent.md's examples", () => {
  const docs = () => readFileSync(join(REPO, "docs/agent.md"), "utf8");
  /** The first ```sh block after `marker`: its command lines and its `# ` comment lines. */
  function block(marker: string): { commands: string[]; comments: string[] } {
    const text = docs();
    const at = text.indexOf(marker);
    expect(at).toBeGreaterThanOrEqual(0);
    const body = /```sh\n([\s\S]*?)```/.exec(text.slice(at))![1]!;
    const lines = body.trimEnd().split("\n");
    return { commands: lines.filter((l) => !l.startsWith("#")), comments: lines.filter((l) => l.startsWith("# ")).map((l) => l.slice(2)) };
  }
  const sh = (command: string, cwd: string) =>
    Bun.spawnSync(["sh", "-c", command.replaceAll("./dist/agentcore", bin)], { cwd, env: CLEAN_ENV });

  test("the --output-schema example prints the value it shows", () => {
    const { commands, comments } = block("## Structured output: `--output-schema`");
    expect(commands).toHaveLength(1);
    const r = sh(commands[0]!, REPO);
    expect(r.stderr.toString()).toBe("");
    expect(r.exitCode).toBe(0);
    expect(r.stdout.toString()).toBe(`${comments[0]}\n`);
  });

  test("the tool-arguments example prints the deltas it shows", () => {
    const { commands, comments } = block("### Tool arguments as they stream");
    const cwd = mkdtempSync(join(work, "docs-args-"));
    mkdirSync(join(cwd, "examples"));
    writeFileSync(join(cwd, "examples", "hello.txt"), "Hello\n");
    const r = sh(commands.join("\n"), cwd);
    expect(r.exitCode).toBe(0);
    const lines = r.stdout.toString().trimEnd().split("\n");
    expect(lines).toHaveLength(3);
    const first = JSON.parse(lines[0]!);
    const shown = JSON.parse(comments[0]!.replaceAll('"…"', '"x"'));
    expect({ ...first, agent_id: "x", run_id: "x" }).toEqual(shown);
    expect(lines.map((l) => JSON.parse(l).delta)).toEqual(['{"path": "', "examples/h", 'ello.txt"}']);
    expect(comments[1]).toContain('"delta":"examples/h"');
  });

  test("the event table lists exactly AGENT_EVENT_KINDS", async () => {
    const { AGENT_EVENT_KINDS } = await import("../../src/agent/index.ts");
    const rows = [...docs().matchAll(/^\| `([a-z_]+)` \| [^|]*\| (yes|no)/gm)].map((m) => m[1]);
    expect([...rows].sort()).toEqual([...AGENT_EVENT_KINDS].sort());
  });
});
