/**
 * The history middleware end to end through createRuntime's middleware chain:
 * placed first, it records allowed, denied, invalid and failing calls, with
 * the policy's decision.
 */
import { afterEach, beforeEach, expect, test } from "bun:test";
import { join } from "node:path";
import { createRuntime } from "../../src/runtime/runtime.ts";
import { argumentsDigest, HistoryLog, historyMiddleware, readHistory } from "../../src/runtime/history.ts";
import { ruleBasedPolicy } from "../../src/runtime/middleware/index.ts";
import { tempDir } from "../support/history.ts";

let dir: string;
let cleanup: () => void;
let file: string;
beforeEach(() => {
  ({ dir, cleanup } = tempDir());
  file = join(dir, "history.jsonl");
});
afterEach(() => cleanup());

test("every call that reaches the chain is recorded with its decision and result", async () => {
  const log = HistoryLog.open(file);
  const rt = createRuntime({
    root: dir,
    middleware: [historyMiddleware(log), ruleBasedPolicy({ rules: [{ id: "echo-ok", action: "allow", tools: ["echo", "boom"] }] })],
    tools: [
      {
        name: "boom",
        description: "always fails",
        parameters: { type: "object", properties: {} },
        effect: "side_effecting",
        handler: () => {
          throw new Error("kaput");
        },
      },
    ],
  });
  const envs = [
    await rt.dispatch('{"id":"c1","tool":"echo","arguments":{"b":2,"a":1}}'),
    await rt.dispatch('{"id":"c2","tool":"read_file","arguments":{"path":"x.txt"}}'),
    await rt.dispatch('{"id":"c3","tool":"read_file","arguments":{"wrong":1}}'),
    await rt.dispatch('{"id":"c4","tool":"boom","arguments":{}}'),
    await rt.dispatch('{"id":"c5","tool":"no_such_tool","arguments":{}}'),
    await rt.dispatch("not json"),
  ];
  log.close();
  expect(envs.map((e) => e.error?.code ?? "ok")).toEqual(["ok", "DENIED", "INVALID_ARGUMENTS", "TOOL_ERROR", "UNKNOWN_TOOL", "JSON_PARSE"]);

  const recs = readHistory(file);
  // Calls refused before a tool is found (parse errors, unknown tools) never reach the chain.
  expect(recs.map((r) => [r.call_id, r.tool, r.success, r.code, r.decision])).toEqual([
    ["c1", "echo", true, null, { action: "allow", by: "rule:echo-ok" }],
    ["c2", "read_file", false, "DENIED", { action: "deny", by: "default" }],
    ["c3", "read_file", false, "INVALID_ARGUMENTS", null], // validation runs before the policy
    ["c4", "boom", false, "TOOL_ERROR", { action: "allow", by: "rule:echo-ok" }],
  ]);
  expect(recs[0]!.args_sha256).toBe(argumentsDigest({ a: 1, b: 2 }));
  expect(recs[0]!.effect).toBe("read_only");
  expect(recs[3]!.effect).toBe("side_effecting");
  // Measured inside the caller's interval (the history write is outside it): never above the envelope's.
  recs.forEach((r, i) => expect(r.duration_ms).toBeLessThanOrEqual(envs[i]!.duration_ms + 0.002));
});
