import { describe, expect, test } from "bun:test";
import { EventEmitter } from "node:events";
import {
  createTtyApprover,
  REDACTED,
  redactArguments,
  type ApproverInput,
  type ToolApprovalRequest,
} from "../../../src/runtime/middleware/index.ts";
import { REPO_ROOT } from "../../support/paths.ts";

const BUN = process.execPath;
const CHILD = `${REPO_ROOT}/test/runtime/middleware/fixtures/approve_child.ts`;

describe("redactArguments (issue 4 §4)", () => {
  test("keys like token / key / secret / password are redacted at any depth, case-insensitively", () => {
    const args = {
      to: "bob",
      API_TOKEN: "t1",
      nested: { apiKey: "k1", list: [{ Password: "p1", keep: 1 }, { client_secret: { deep: "s1" } }] },
      monkey: "also a key-like name",
    };
    const out = redactArguments(args);
    expect(out).toEqual({
      to: "bob",
      API_TOKEN: REDACTED,
      nested: { apiKey: REDACTED, list: [{ Password: REDACTED, keep: 1 }, { client_secret: REDACTED }] },
      monkey: REDACTED,
    });
    expect(JSON.stringify(out)).not.toMatch(/t1|k1|p1|s1/);
  });

  test("is pure, and clips long strings, wide and deep structures", () => {
    const args = { text: "x".repeat(500), many: Array.from({ length: 30 }, (_, i) => i), deep: { a: { b: { c: { d: 1 } } } } };
    const copy = structuredClone(args);
    const out = redactArguments(args, { maxStringLength: 10, maxItems: 5, maxDepth: 3 }) as Record<string, unknown>;
    expect(args).toEqual(copy);
    expect(out.text).toBe("xxxxxxxxxx… (500 chars)");
    expect(out.many).toEqual([0, 1, 2, 3, 4, "… 25 more"]);
    expect(out.deep).toEqual({ a: { b: "{…}" } });
  });
});

/** A fake terminal input: lines are pushed by the test. */
class FakeInput extends EventEmitter implements ApproverInput {
  isTTY = true;
  resume() {}
  pause() {}
  type(s: string) {
    this.emit("data", s);
  }
}

const request = (over: Partial<ToolApprovalRequest> = {}): ToolApprovalRequest => ({
  tool: "wire",
  effect: "side_effecting",
  arguments: { to: "bob", secret_key: "SHHH" },
  toolCallId: "c1",
  reason: null,
  ruleId: "ask",
  ...over,
});

describe("TTY approver, in process", () => {
  function setup(timeoutMs = 60_000) {
    const input = new FakeInput();
    let written = "";
    const output = { write: (s: string) => (written += s) };
    const approver = createTtyApprover({ input, output, timeoutMs });
    return { input, approver, out: () => written };
  }

  test("prompt shows tool, effect and redacted arguments; y approves, n denies", async () => {
    const { input, approver, out } = setup();
    const p = approver(request(), new AbortController().signal);
    await Promise.resolve();
    input.type("y\n");
    expect(await p).toEqual({ approved: true, decidedBy: "terminal" });
    expect(out()).toContain('tool "wire" (side_effecting)');
    expect(out()).toContain("[y]es / [n]o / [a]lways for this tool in this run");
    expect(out()).toContain(`"secret_key":"${REDACTED}"`);
    expect(out()).not.toContain("SHHH");
    const q = approver(request(), new AbortController().signal);
    await Promise.resolve();
    input.type("n\n");
    expect((await q).approved).toBe(false);
  });

  test("a(lways) approves this tool for the rest of the run only", async () => {
    const { input, approver, out } = setup();
    const run = { agentId: "a", runId: "r1", turn: 1 };
    const p = approver(request({ run }), new AbortController().signal);
    await Promise.resolve();
    input.type("a\n");
    expect((await p).approved).toBe(true);
    const prompts = out().split("needs approval").length - 1;
    expect((await approver(request({ run }), new AbortController().signal)).approved).toBe(true);
    expect(out().split("needs approval").length - 1).toBe(prompts); // not asked again
    // Another run is asked again.
    const q = approver(request({ run: { ...run, runId: "r2" } }), new AbortController().signal);
    await Promise.resolve();
    input.type("n\n");
    expect((await q).approved).toBe(false);
  });

  test("no answer within the (configured, tiny) timeout → denied", async () => {
    const { approver, out } = setup(5);
    const d = await approver(request(), new AbortController().signal);
    expect(d.approved).toBe(false);
    expect(d.reason).toContain("no answer within 5 ms");
    expect(out()).toContain("timed out: denied");
  });

  test("an abort interrupts the question → denied", async () => {
    const { approver } = setup();
    const ac = new AbortController();
    const p = approver(request(), ac.signal);
    ac.abort();
    expect(await p).toEqual({ approved: false, reason: "approval interrupted" });
  });

  test("stdin that is not a TTY → denied without asking (fail closed)", async () => {
    const input = new FakeInput();
    input.isTTY = false;
    let written = "";
    const approver = createTtyApprover({ input, output: { write: (s: string) => (written += s) } });
    const d = await approver(request(), new AbortController().signal);
    expect(d.approved).toBe(false);
    expect(written).toBe("");
  });
});

/** Run the child under a real pseudo-terminal (`script`), feeding `answers` to it. */
async function underPty(
  answers: string | null,
  timeoutMs: number,
  calls: number,
): Promise<{ results: Record<string, unknown>[]; text: string }> {
  const cmd = `'${BUN}' '${CHILD}' ${timeoutMs} ${calls}`;
  const proc = Bun.spawn(["script", "-qfec", cmd, "/dev/null"], { stdin: "pipe", stdout: "pipe", stderr: "pipe" });
  if (answers !== null) {
    proc.stdin.write(answers);
    await proc.stdin.flush();
  }
  const text = await new Response(proc.stdout).text();
  await proc.exited;
  proc.stdin.end();
  const results = text
    .split(/\r?\n/)
    .filter((l) => l.includes("RESULT "))
    .map((l) => JSON.parse(l.slice(l.indexOf("RESULT ") + 7)));
  return { results, text };
}

const hasScript = Bun.spawnSync(["sh", "-c", "command -v script"]).exitCode === 0;

describe.skipIf(!hasScript)("TTY approver through a real pseudo-terminal", () => {
  test("y → the call runs; the prompt redacts the token", async () => {
    const { results, text } = await underPty("y\n", 60_000, 1);
    expect(results.map((r) => r.result)).toEqual(["sent"]);
    expect(text).toContain(`"api_token":"${REDACTED}"`);
    expect(text).not.toContain("tok-SECRET-123");
  });

  test("n → DENIED", async () => {
    const { results } = await underPty("n\n", 60_000, 1);
    expect(results.map((r) => (r.error as { code: string } | null)?.code)).toEqual(["DENIED"]);
  });

  test("a → both calls run with a single prompt", async () => {
    const { results, text } = await underPty("a\n", 60_000, 2);
    expect(results.map((r) => r.result)).toEqual(["sent", "sent"]);
    expect(text.split("needs approval").length - 1).toBe(1);
  });

  test("no answer → denied after the configured timeout", async () => {
    const { results } = await underPty(null, 50, 1);
    expect(results.map((r) => (r.error as { message: string } | null)?.message)).toEqual(["no answer within 50 ms"]);
  });
});

describe("TTY approver with piped stdin", () => {
  test("piped stdin is not a terminal: denied (fail closed), even with a 'y' waiting", async () => {
    const proc = Bun.spawn([BUN, CHILD, "60000", "1"], { stdin: "pipe", stdout: "pipe", stderr: "pipe" });
    proc.stdin.write("y\n");
    proc.stdin.end();
    const text = await new Response(proc.stdout).text();
    await proc.exited;
    const env = JSON.parse(text.slice(text.indexOf("RESULT ") + 7));
    expect(env.error).toEqual({
      code: "DENIED",
      message: "approval needs an interactive terminal (stdin is not a TTY)",
      details: { rule_id: "ask" },
    });
  });
});
