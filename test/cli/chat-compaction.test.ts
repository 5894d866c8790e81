/**
 * `agentcore chat --context-window N` through the compiled binary, driven
 * over piped stdin: the history is compacted on its own, as with `agent`
 * (before a request that would outgrow the window, and after a server's
 * context overflow), each compaction journaled as `compaction_applied`.
 * Without the flag nothing compacts unless /compact asks. And an answer the
 * model's output limit cut off (finish_reason length) is a failed run that
 * /continue can carry on.
 */
import { beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { binaryPath } from "../support/binary.ts";
import { tmpPerTest } from "../support/tmp.ts";

setDefaultTimeout(60_000);
let bin: string;
beforeAll(() => {
  bin = binaryPath();
}, 120_000);
const tmp = tmpPerTest("agentcore-chat-cw-");
const ENV = { PATH: process.env.PATH ?? "/usr/bin:/bin" };

function script(dir: string, turns: unknown[]): string {
  const f = join(dir, "script.jsonl");
  writeFileSync(f, turns.map((t) => JSON.stringify(t)).join("\n") + "\n");
  return f;
}
function chat(dir: string, args: string[], stdin: string) {
  const r = Bun.spawnSync([bin, "chat", "--no-plan", "--root", dir, "--session", "talk", ...args], {
    cwd: dir,
    stdin: new TextEncoder().encode(stdin),
    env: ENV,
  });
  return { code: r.exitCode, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}
function cli(dir: string, ...args: string[]) {
  const r = Bun.spawnSync([bin, ...args], { cwd: dir, env: ENV });
  return { code: r.exitCode, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}
function recordTypes(dir: string): string[] {
  const tree = JSON.parse(cli(dir, "sessions", "tree", "talk", "--root", dir, "--json").stdout) as { records: { type: string }[] };
  return tree.records.map((r) => r.type);
}

/** A first task whose echo leaves about 2,500 tokens of history, then a second task. */
const long = "lorem ipsum ".repeat(400);
const bigTurns = [
  { content: null, tool_calls: [{ id: "c1", name: "echo", arguments: JSON.stringify({ text: long }) }] },
  { content: "first done" },
  { content: "SUMMARY: echoed a long text" },
  { content: "second done" },
];

describe("chat --context-window", () => {
  test("the history is summarised before the request that would outgrow the window, and journaled", () => {
    const dir = tmp();
    const r = chat(dir, ["--context-window", "2048", "--script", script(dir, bigTurns)], "echo a long text\nsecond task\n");
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("first done");
    // The first run has one turn only: nothing to fold away yet.
    expect(r.stdout).toContain("[nothing to compact yet (the history outgrew --context-window): the last turn is always kept]");
    expect(r.stdout).toContain("[compacted (the history outgrew --context-window): 5 messages → 2]");
    expect(r.stdout).toContain("second done");
    expect(r.stdout).not.toContain("[run ");
    expect(recordTypes(dir)).toContain("compaction_applied");
    const shown = cli(dir, "sessions", "show", "talk", "--root", dir).stdout;
    expect(shown).toContain("SUMMARY: echoed a long text");
    expect(shown).not.toContain("lorem ipsum");
  });

  test("without the flag nothing compacts: the same script's summary line is the second answer", () => {
    const dir = tmp();
    const r = chat(dir, ["--script", script(dir, bigTurns)], "echo a long text\nsecond task\n");
    expect(r.code).toBe(0);
    expect(r.stdout).not.toContain("compact");
    expect(r.stdout).toContain("> second task\nSUMMARY: echoed a long text");
    expect(recordTypes(dir)).not.toContain("compaction_applied");
  });

  test("a context overflow from the server is compacted and the request retried once", () => {
    const dir = tmp();
    const turns = [
      { content: "first done" },
      { error: { kind: "context_overflow", message: "the prompt exceeds the context length" } },
      { content: "SUMMARY: said first done" },
      { content: "second done" },
    ];
    const r = chat(dir, ["--context-window", "100000", "--script", script(dir, turns)], "first task\nsecond task\n");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("[compacted (the server said the context is full): 3 messages → 2]");
    expect(r.stdout).toContain("second done");
    expect(recordTypes(dir)).toContain("compaction_applied");

    // Without the flag the overflow ends the run.
    const other = tmp();
    const plain = chat(other, ["--script", script(other, turns)], "first task\nsecond task\n");
    expect(plain.code).toBe(0);
    expect(plain.stdout).toContain("[run failed: context_overflow — the prompt exceeds the context length]");
    expect(recordTypes(other)).not.toContain("compaction_applied");
  });

  test("an answer cut off at the output limit is a failed run; /continue lets the model go on", () => {
    const dir = tmp();
    const turns = [{ content: "The first half", finish_reason: "length" }, { content: " and the rest." }];
    const r = chat(dir, ["--script", script(dir, turns)], "explain\n/continue\n");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(
      '[run failed: max_tokens — the model stopped at its output-token limit (finish_reason "length"), so its answer is cut off; /continue lets the model go on]',
    );
    expect(r.stdout).toContain("> /continue\n and the rest.");
  });

  test("bad values are usage errors, as for agent", () => {
    const dir = tmp();
    const s = script(dir, [{ content: "x" }]);
    for (const [value, message] of [
      ["100", "--context-window must be at least 1024 tokens, got 100"],
      ["lots", "--context-window"],
    ] as const) {
      const r = chat(dir, ["--context-window", value, "--script", s], "");
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(message);
    }
  });
});
