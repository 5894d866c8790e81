/**
 * The execution history: HistoryLog (append, fsync, 0600, torn tails),
 * historyMiddleware (record fields, digest, decisions, failures), readHistory
 * (strict reading, corrupt lines, filters).
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { appendFileSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { canonicalJson } from "../../src/core/canonical.ts";
import { argumentsDigest, HistoryError, HistoryLog, historyMiddleware, readHistory } from "../../src/runtime/history.ts";
import { createLogger } from "../../src/core/logger.ts";
import { ToolError } from "../../src/tools/definition.ts";
import { ctxFor, ECHO, fail, ok, record, tempDir, WRITE } from "../support/history.ts";

let dir: string;
let cleanup: () => void;
let file: string;
beforeEach(() => {
  ({ dir, cleanup } = tempDir());
  file = join(dir, "history.jsonl");
});
afterEach(() => cleanup());

const lines = (path: string) => readFileSync(path, "utf8").split("\n");

describe("canonical arguments and digest", () => {
  test("keys are sorted at every level, no whitespace", () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: "x" } })).toBe('{"a":{"c":"x","d":[3,{"y":2,"z":1}]},"b":1}');
  });

  test("keys sort as strings, integer-like keys included", () => {
    expect(canonicalJson({ "10": 1, "2": 2, "1": 3, b: 4 })).toBe('{"1":3,"10":1,"2":2,"b":4}');
  });

  test("same arguments in a different key order give the same digest", () => {
    const a = argumentsDigest({ path: "a.txt", options: { mode: "r", limit: 10 } });
    const b = argumentsDigest({ options: { limit: 10, mode: "r" }, path: "a.txt" });
    expect(a).toBe(b);
    expect(a).toMatch(/^[0-9a-f]{64}$/);
    expect(a).not.toBe(argumentsDigest({ path: "b.txt", options: { mode: "r", limit: 10 } }));
  });

  test("the digest is the SHA-256 of the canonical JSON", () => {
    const args = { message: "héllo", n: 1 };
    const expected = createHash("sha256").update('{"message":"héllo","n":1}', "utf8").digest("hex");
    expect(argumentsDigest(args)).toBe(expected);
  });
});

describe("historyMiddleware", () => {
  test("records every field of a successful call, without arguments by default", async () => {
    const log = HistoryLog.open(file);
    const mw = historyMiddleware(log);
    const ctx = ctxFor(
      ECHO,
      { message: "secret-value", a: 1 },
      { id: "call-7", decision: { action: "allow", by: "rule:reads", reason: "r" } },
    );
    const before = Date.now();
    const outcome = await mw(ctx, async (c) => ok(c, { echoed: true }));
    log.close();
    expect(outcome.envelope.success).toBe(true);
    const text = readFileSync(file, "utf8");
    expect(text).not.toContain("secret-value");
    expect(text.endsWith("\n")).toBe(true);
    const [rec] = readHistory(file);
    expect(Object.keys(rec!)).toEqual([
      "v",
      "time",
      "tool",
      "call_id",
      "effect",
      "decision",
      "duration_ms",
      "success",
      "code",
      "args_sha256",
    ]);
    expect(rec!.v).toBe(1);
    expect(rec!.time).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(Date.parse(rec!.time)).toBeGreaterThanOrEqual(before - 1);
    expect(rec!.tool).toBe("echo");
    expect(rec!.call_id).toBe("call-7");
    expect(rec!.effect).toBe("read_only");
    expect(rec!.decision).toEqual({ action: "allow", by: "rule:reads" });
    expect(typeof rec!.duration_ms).toBe("number");
    expect(rec!.duration_ms).toBeGreaterThanOrEqual(0);
    expect(rec!.success).toBe(true);
    expect(rec!.code).toBeNull();
    expect(rec!.args_sha256).toBe(argumentsDigest({ a: 1, message: "secret-value" }));
    expect("arguments" in rec!).toBe(false);
  });

  test("includeArguments records the canonical arguments as the call received them", async () => {
    const log = HistoryLog.open(file);
    const mw = historyMiddleware(log, { includeArguments: true });
    const args = { b: [1, 2], a: "x" };
    await mw(ctxFor(ECHO, args), async (c) => {
      c.arguments.a = "mutated by an inner layer";
      return ok(c);
    });
    log.close();
    const [rec] = readHistory(file);
    expect(rec!.arguments).toEqual({ a: "x", b: [1, 2] });
    expect(readFileSync(file, "utf8")).toContain('"arguments":{"a":"x","b":[1,2]}');
    expect(rec!.args_sha256).toBe(argumentsDigest({ a: "x", b: [1, 2] }));
  });

  test("a denial short-circuited by an inner middleware is recorded with its decision and code", async () => {
    const log = HistoryLog.open(file);
    const mw = historyMiddleware(log);
    // A stand-in for the policy middleware: it decides on the context it was given and refuses.
    const outcome = await mw(ctxFor(WRITE, { path: "x" }, { id: null }), async (c) => {
      c.decision = { action: "deny", by: "default" };
      return { ...fail(c, "DENIED"), control: "reject" };
    });
    expect(outcome.control).toBe("reject");
    log.close();
    const [rec] = readHistory(file);
    expect(rec!.call_id).toBeNull();
    expect(rec!.effect).toBe("side_effecting");
    expect(rec!.decision).toEqual({ action: "deny", by: "default" });
    expect(rec!.success).toBe(false);
    expect(rec!.code).toBe("DENIED");
  });

  test("an approver's answer is kept; no policy means decision null", async () => {
    const log = HistoryLog.open(file);
    const mw = historyMiddleware(log);
    await mw(ctxFor(WRITE, {}), async (c) => {
      c.decision = { action: "require_approval", by: "approver", approved: true };
      return ok(c);
    });
    await mw(ctxFor(ECHO, {}), async (c) => ok(c));
    log.close();
    const [a, b] = readHistory(file);
    expect(a!.decision).toEqual({ action: "require_approval", by: "approver", approved: true });
    expect(b!.decision).toBeNull();
  });

  test("run information from the agent loop is recorded", async () => {
    const log = HistoryLog.open(file);
    await historyMiddleware(log)(ctxFor(ECHO, {}, { run: { agentId: "ag1", runId: "run9", turn: 3 } }), async (c) => ok(c));
    log.close();
    const [rec] = readHistory(file);
    expect(rec!.run_id).toBe("run9");
    expect(rec!.agent_id).toBe("ag1");
    expect(rec!.turn).toBe(3);
  });

  test("a throwing next is recorded as a failure and rethrown", async () => {
    const log = HistoryLog.open(file);
    const mw = historyMiddleware(log);
    await expect(
      mw(ctxFor(ECHO, {}), async () => {
        throw new Error("boom");
      }),
    ).rejects.toThrow("boom");
    await expect(
      mw(ctxFor(ECHO, {}), async () => {
        throw new ToolError("NOT_FOUND", "gone");
      }),
    ).rejects.toThrow("gone");
    log.close();
    const recs = readHistory(file);
    expect(recs.map((r) => [r.success, r.code])).toEqual([
      [false, "TOOL_ERROR"],
      [false, "NOT_FOUND"],
    ]);
  });

  test("a failed append does not fail the call: it is logged and the outcome returned", async () => {
    const log = HistoryLog.open(file);
    log.close(); // every append now fails
    const logged: string[] = [];
    const logger = createLogger({ level: "error", sink: (l) => logged.push(l) });
    const mw = historyMiddleware(log, { logger });
    const outcome = await mw(ctxFor(ECHO, { token: "hunter2" }, { id: "c-lost" }), async (c) => ok(c, 42));
    expect(outcome.envelope.success).toBe(true);
    expect(outcome.envelope.result).toBe(42);
    expect(logged.length).toBe(1);
    expect(logged[0]).toContain("history");
    expect(logged[0]).toContain("c-lost");
    expect(logged[0]).not.toContain("hunter2");
  });
});

describe("HistoryLog", () => {
  test("creates the file with mode 0600", () => {
    HistoryLog.open(file).close();
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  test("an existing file keeps its content; appends go to the end", () => {
    writeFileSync(file, JSON.stringify(record({ call_id: "old" })) + "\n");
    const log = HistoryLog.open(file);
    log.append(record({ call_id: "new" }));
    log.close();
    expect(readHistory(file).map((r) => r.call_id)).toEqual(["old", "new"]);
  });

  test("each append is on disk, in order, when append returns", () => {
    const log = HistoryLog.open(file);
    for (let i = 0; i < 20; i++) {
      log.append(record({ call_id: `n${i}` }));
      // read through a separate descriptor while the log is still open
      const seen = readHistory(file);
      expect(seen.length).toBe(i + 1);
      expect(seen[i]!.call_id).toBe(`n${i}`);
    }
    log.close();
    expect(lines(file).length).toBe(21); // 20 lines + the empty string after the last newline
  });

  test("two logs on the same file never interleave within a line", () => {
    const a = HistoryLog.open(file);
    const b = HistoryLog.open(file);
    for (let i = 0; i < 50; i++) {
      a.append(record({ call_id: `a${i}`, arguments: { pad: "a".repeat(1000) } }));
      b.append(record({ call_id: `b${i}`, arguments: { pad: "b".repeat(1000) } }));
    }
    a.close();
    b.close();
    const recs = readHistory(file);
    expect(recs.length).toBe(100);
    expect(recs.filter((r) => r.call_id!.startsWith("a")).map((r) => r.call_id)).toEqual(Array.from({ length: 50 }, (_, i) => `a${i}`));
  });

  test("append after close throws HistoryError", () => {
    const log = HistoryLog.open(file);
    log.close();
    log.close(); // idempotent
    expect(log.isOpen).toBe(false);
    expect(() => log.append(record())).toThrow(HistoryError);
  });

  test("grouped appends: records handed in together are all on disk, in order, when each resolves", async () => {
    const log = HistoryLog.open(file);
    const first = Array.from({ length: 20 }, (_, i) => log.appendGrouped(record({ call_id: `g${i}` })));
    await first[0];
    expect(readHistory(file).map((r) => r.call_id)).toEqual(Array.from({ length: 20 }, (_, i) => `g${i}`));
    await Promise.all(first);
    // handed in while nothing is pending, after a synchronous append: still in order
    log.append(record({ call_id: "sync" }));
    await Promise.all([log.appendGrouped(record({ call_id: "h0" })), log.appendGrouped(record({ call_id: "h1" }))]);
    log.close();
    expect(
      readHistory(file)
        .map((r) => r.call_id)
        .slice(19),
    ).toEqual(["g19", "sync", "h0", "h1"]);
  });

  test("a grouped append isolates a torn tail too, and after close it rejects with HistoryError", async () => {
    writeFileSync(file, JSON.stringify(record({ call_id: "old" })) + '\n{"v":1,"tool":"ec');
    const log = HistoryLog.open(file);
    await Promise.all([log.appendGrouped(record({ call_id: "a" })), log.appendGrouped(record({ call_id: "b" }))]);
    expect(readHistory(file).map((r) => r.call_id)).toEqual(["old", "a", "b"]);
    log.close();
    expect(log.appendGrouped(record())).rejects.toBeInstanceOf(HistoryError);
  });

  test("calls through the middleware that finish together are recorded together, each before its outcome", async () => {
    const log = HistoryLog.open(file);
    const mw = historyMiddleware(log);
    const outcomes = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        mw(ctxFor(ECHO, { i }, { id: `p${i}` }), async (c) => {
          const o = ok(c, i);
          return o;
        }),
      ),
    );
    expect(outcomes.map((o) => o.envelope.result)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    log.close();
    expect(
      readHistory(file)
        .map((r) => r.call_id)
        .sort(),
    ).toEqual(Array.from({ length: 8 }, (_, i) => `p${i}`));
  });

  test("opening in a missing folder is a HistoryError naming the file", () => {
    const bad = join(dir, "nope", "h.jsonl");
    expect(() => HistoryLog.open(bad)).toThrow(bad);
  });
});

describe("torn tails", () => {
  const torn = '{"v":1,"time":"2026-11-30T08:00:00.000Z","tool":"ec';

  test("a final line without its newline is ignored on read", () => {
    writeFileSync(file, JSON.stringify(record({ call_id: "a" })) + "\n" + torn);
    expect(readHistory(file).map((r) => r.call_id)).toEqual(["a"]);
  });

  test("a final complete-looking line without its newline is ignored too", () => {
    writeFileSync(file, JSON.stringify(record({ call_id: "a" })) + "\n" + JSON.stringify(record({ call_id: "b" })));
    expect(readHistory(file).map((r) => r.call_id)).toEqual(["a"]);
  });

  test("the next append isolates the torn tail on its own line, and readers skip it", () => {
    writeFileSync(file, JSON.stringify(record({ call_id: "a" })) + "\n" + torn);
    const log = HistoryLog.open(file);
    log.append(record({ call_id: "b" }));
    log.append(record({ call_id: "c" }));
    log.close();
    const text = lines(file);
    expect(text[1]).toBe(torn);
    expect(readHistory(file).map((r) => r.call_id)).toEqual(["a", "b", "c"]);
  });

  test("a tail torn inside a multi-byte character is isolated and skipped", () => {
    const full = Buffer.from(JSON.stringify(record({ call_id: "é-ü" })));
    const cut = full.subarray(0, full.indexOf(Buffer.from("é")) + 1); // half of 'é'
    writeFileSync(file, cut);
    const log = HistoryLog.open(file);
    log.append(record({ call_id: "after" }));
    log.close();
    expect(readHistory(file).map((r) => r.call_id)).toEqual(["after"]);
  });

  test("a file holding only a torn line reads as empty", () => {
    writeFileSync(file, torn);
    expect(readHistory(file)).toEqual([]);
  });
});

describe("corrupt lines", () => {
  test("a corrupt complete line in the middle names the file and line", () => {
    writeFileSync(file, [JSON.stringify(record()), JSON.stringify(record()), '{"v":1,,}', JSON.stringify(record())].join("\n") + "\n");
    let err: unknown;
    try {
      readHistory(file);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(HistoryError);
    expect((err as HistoryError).line).toBe(3);
    expect((err as HistoryError).message).toContain(`${file}:3`);
  });

  test("a corrupt last line that has its newline is an error too", () => {
    writeFileSync(file, JSON.stringify(record()) + "\nnot json\n");
    expect(() => readHistory(file)).toThrow(`${file}:2`);
  });

  test("duplicate keys are rejected by the strict reader", () => {
    const line = JSON.stringify(record()).replace('"tool":"echo"', '"tool":"echo","tool":"other"');
    writeFileSync(file, line + "\n");
    expect(() => readHistory(file)).toThrow(`${file}:1`);
  });

  test("valid JSON that is not a record is an error naming the line", () => {
    writeFileSync(file, JSON.stringify(record()) + "\n" + JSON.stringify({ ...record(), v: 2 }) + "\n");
    expect(() => readHistory(file)).toThrow(`${file}:2: not a history record: unsupported version 2`);
    writeFileSync(file, JSON.stringify({ ...record(), args_sha256: "xyz" }) + "\n");
    expect(() => readHistory(file)).toThrow("args_sha256");
  });

  test("blank lines are skipped", () => {
    writeFileSync(file, JSON.stringify(record({ call_id: "a" })) + "\n\n" + JSON.stringify(record({ call_id: "b" })) + "\n");
    expect(readHistory(file).map((r) => r.call_id)).toEqual(["a", "b"]);
  });

  test("a missing file is a HistoryError", () => {
    expect(() => readHistory(join(dir, "absent.jsonl"))).toThrow(HistoryError);
  });

  test("lines longer than the read buffer are read whole", () => {
    const big = record({ call_id: "big", arguments: { pad: "p".repeat(300_000) } });
    writeFileSync(file, JSON.stringify(record({ call_id: "a" })) + "\n" + JSON.stringify(big) + "\n");
    appendFileSync(file, JSON.stringify(record({ call_id: "z" })) + "\n");
    const recs = readHistory(file);
    expect(recs.map((r) => r.call_id)).toEqual(["a", "big", "z"]);
    expect((recs[1]!.arguments as { pad: string }).pad.length).toBe(300_000);
  });
});

describe("filters", () => {
  beforeEach(() => {
    const recs = [
      record({ call_id: "1", tool: "echo", time: "2026-11-30T08:00:00.000Z" }),
      record({ call_id: "2", tool: "read_file", time: "2026-11-30T08:05:00.000Z", success: false, code: "NOT_FOUND" }),
      record({ call_id: "3", tool: "echo", time: "2026-11-30T08:10:00.000Z", success: false, code: "DENIED" }),
      record({ call_id: "4", tool: "read_file", time: "2026-11-30T08:15:00.000Z" }),
    ];
    writeFileSync(file, recs.map((r) => JSON.stringify(r)).join("\n") + "\n");
  });
  const ids = (f: Parameters<typeof readHistory>[1]) => readHistory(file, f).map((r) => r.call_id);

  test("by tool", () => expect(ids({ tool: "echo" })).toEqual(["1", "3"]));
  test("since (inclusive)", () => expect(ids({ since: new Date("2026-11-30T08:05:00.000Z") })).toEqual(["2", "3", "4"]));
  test("failed", () => expect(ids({ failed: true })).toEqual(["2", "3"]));
  test("succeeded", () => expect(ids({ failed: false })).toEqual(["1", "4"]));
  test("combined", () => expect(ids({ tool: "read_file", failed: true, since: new Date("2026-11-30T08:01:00Z") })).toEqual(["2"]));
  test("none", () => expect(ids({})).toEqual(["1", "2", "3", "4"]));
});

describe("torn tails from another writer", () => {
  test("a fragment torn by one process followed by another process's record reads as that record", () => {
    const frag = JSON.stringify(record({ call_id: "torn", arguments: { v: 1, inner: { v: 2 } } })).slice(0, 150);
    const after = record({ call_id: "after", arguments: { v: 3 } });
    writeFileSync(file, JSON.stringify(record({ call_id: "a" })) + "\n" + frag + JSON.stringify(after) + "\n");
    expect(readHistory(file).map((r) => r.call_id)).toEqual(["a", "after"]);
  });

  test("at every cut point of the torn record", () => {
    const full = JSON.stringify(record({ call_id: "torn", arguments: { v: 1, s: 'a"b\u00e9\n', inner: { v: [2] } } }));
    const after = JSON.stringify(record({ call_id: "after" }));
    for (let cut = 1; cut < full.length; cut++) {
      writeFileSync(file, full.slice(0, cut) + after + "\n" + full.slice(0, cut) + "\n" + after + "\n");
      expect(readHistory(file).map((r) => r.call_id)).toEqual(["after", "after"]);
    }
  });

  test("garbage before a record is still corruption", () => {
    writeFileSync(file, "garbage" + JSON.stringify(record()) + "\n");
    expect(() => readHistory(file)).toThrow(`${file}:1`);
    writeFileSync(file, '{"v":1}' + JSON.stringify(record()) + "\n");
    expect(() => readHistory(file)).toThrow(`${file}:1`);
  });
});
