// `agentcore agent --context-window N`: automatic compaction of a session's
// history when it outgrows the window (child processes, a scripted model).
import { afterEach, describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

const MAIN = path.resolve(import.meta.dir, "../../src/cli/main.ts");
const ENV = { PATH: process.env.PATH ?? "/usr/bin:/bin" };
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});
function tmp(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), "agentcore-cw-"));
  dirs.push(d);
  return d;
}
function script(dir: string, name: string, ...turns: unknown[]): string {
  const f = path.join(dir, name);
  fs.writeFileSync(f, turns.map((t) => JSON.stringify(t)).join("\n") + "\n");
  return f;
}
function cli(cwd: string, ...args: string[]) {
  const p = Bun.spawnSync([process.execPath, MAIN, ...args], { cwd, stdout: "pipe", stderr: "pipe", env: ENV });
  return { code: p.exitCode, stdout: p.stdout.toString(), stderr: p.stderr.toString() };
}
type Ev = {
  kind: string;
  result?: { status: string; output?: string; messages_before?: number; messages_after?: number; summary?: { content: string } | null };
};
const events = (stdout: string): Ev[] =>
  stdout
    .trimEnd()
    .split("\n")
    .map((l) => JSON.parse(l) as Ev);

/** A session whose first run left about 2,500 tokens of history (a long echo). */
function bigSession(dir: string): void {
  const long = "lorem ipsum ".repeat(400);
  const first = script(
    dir,
    "first.jsonl",
    { content: null, tool_calls: [{ id: "c1", name: "echo", arguments: JSON.stringify({ text: long }) }] },
    { content: "first done" },
  );
  expect(cli(dir, "agent", "--no-plan", "--session", "demo", "--script", first, "first task").code).toBe(0);
}

describe("agent --context-window", () => {
  test("the history of earlier runs is summarised by the model before the next request, and journaled", () => {
    const dir = tmp();
    bigSession(dir);
    const second = script(dir, "second.jsonl", { content: "SUMMARY: echoed a long text" }, { content: "second done" });
    const r = cli(
      dir,
      "agent",
      "--no-plan",
      "--session",
      "demo",
      "--context-window",
      "2048",
      "--events",
      "jsonl",
      "--script",
      second,
      "second task",
    );
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const ev = events(r.stdout);
    const done = ev.find((e) => e.kind === "compaction_completed")!;
    expect(done.result).toMatchObject({
      status: "completed",
      messages_before: 5,
      messages_after: 2,
      summary: { content: "SUMMARY: echoed a long text" },
    });
    expect(ev.at(-1)!.result).toMatchObject({ status: "completed", output: "second done" });
    const tree = JSON.parse(cli(dir, "sessions", "tree", "demo", "--json").stdout) as { records: { type: string }[] };
    expect(tree.records.map((x) => x.type)).toContain("compaction_applied");
    const shown = cli(dir, "sessions", "show", "demo").stdout;
    expect(shown).toContain("[system] Summary of the earlier conversation, written when it was compacted: SUMMARY: echoed a long text");
    expect(shown).not.toContain("lorem ipsum");
  }, 60_000);

  test("without the flag nothing is compacted (the same script's first line is the answer)", () => {
    const dir = tmp();
    bigSession(dir);
    const second = script(dir, "second.jsonl", { content: "SUMMARY: echoed a long text" }, { content: "second done" });
    const r = cli(dir, "agent", "--no-plan", "--session", "demo", "--events", "jsonl", "--script", second, "second task");
    expect(r.code).toBe(0);
    const ev = events(r.stdout);
    expect(ev.some((e) => e.kind.startsWith("compaction"))).toBe(false);
    expect(ev.at(-1)!.result!.output).toBe("SUMMARY: echoed a long text");
  }, 60_000);

  test("bad values and the wrong command are usage errors", () => {
    const dir = tmp();
    const s = script(dir, "s.jsonl", { content: "x" });
    for (const [args, msg] of [
      [["agent", "--context-window", "100", "--script", s, "t"], "--context-window must be at least 1024 tokens, got 100"],
      [["agent", "--context-window", "lots", "--script", s, "t"], "--context-window"],
      [["execute", "--context-window", "4096", "{}"], "--context-window applies to 'agent' and 'chat' only"],
    ] as const) {
      const r = cli(dir, ...args);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(msg);
    }
  });
});
