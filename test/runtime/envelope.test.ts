import { describe, expect, test } from "bun:test";
import { failureEnvelope, serializeEnvelope, successEnvelope } from "../../src/runtime/envelope_io.ts";
import { ERROR_CODES, type Envelope } from "../../src/core/envelope.ts";

describe("serializeEnvelope", () => {
  test("fixed key order regardless of object key order", () => {
    const env = { duration_ms: 1.5, error: null, result: { b: 1, a: 2 }, tool: "echo", success: true, id: "x" } as Envelope;
    expect(serializeEnvelope(env)).toBe('{"id":"x","success":true,"tool":"echo","result":{"b":1,"a":2},"error":null,"duration_ms":1.5}');
  });

  test("output equals JSON.stringify of a well-ordered envelope", () => {
    const env = failureEnvelope("i", null, "JSON_PARSE", 'bad "x"\n', { offset: 3 }, performance.now());
    expect(serializeEnvelope(env)).toBe(JSON.stringify(env));
    const ok = successEnvelope(null, "t", ["\u2028", "é", 1e21], performance.now());
    expect(serializeEnvelope(ok)).toBe(JSON.stringify(ok));
  });

  test("BigInt result → TOOL_ERROR envelope, no throw", () => {
    const env: Envelope = { id: "b", success: true, tool: "t", result: { n: 10n }, error: null, duration_ms: 0.5 };
    expect(serializeEnvelope(env)).toBe(
      '{"id":"b","success":false,"tool":"t","result":null,"error":{"code":"TOOL_ERROR","message":"tool result is not JSON-serialisable (BigInt, cycle or throwing toJSON)","details":{"cause":"TypeError"}},"duration_ms":0.5}',
    );
  });

  test("cyclic result and throwing toJSON → TOOL_ERROR", () => {
    const cyc: Record<string, unknown> = {};
    cyc.self = cyc;
    const bad = {
      toJSON() {
        throw new Error("nope");
      },
    };
    for (const result of [cyc, bad]) {
      const out = JSON.parse(serializeEnvelope({ id: null, success: true, tool: "t", result, error: null, duration_ms: 0 }));
      expect(out.success).toBe(false);
      expect(out.error.code).toBe("TOOL_ERROR");
    }
  });

  test("function/symbol/undefined results serialise as null", () => {
    for (const result of [() => 1, Symbol("s"), undefined]) {
      expect(serializeEnvelope({ id: null, success: true, tool: "t", result, error: null, duration_ms: 0 })).toBe(
        '{"id":null,"success":true,"tool":"t","result":null,"error":null,"duration_ms":0}',
      );
    }
  });

  test("unserialisable error details do not throw", () => {
    const s = serializeEnvelope({
      id: null,
      success: false,
      tool: "t",
      result: null,
      error: { code: "DENIED", message: "m", details: { n: 1n } },
      duration_ms: 0,
    });
    expect(JSON.parse(s).error).toEqual({ code: "DENIED", message: "m", details: { unserializable: true } });
  });

  test("duration_ms is rounded to 3 decimals", () => {
    const env = successEnvelope("x", "t", 1, performance.now() - 1.23456789);
    expect(env.duration_ms * 1000).toBe(Math.round(env.duration_ms * 1000));
  });

  test("ERROR_CODES is complete and UPPER_SNAKE", () => {
    expect(new Set(ERROR_CODES).size).toBe(ERROR_CODES.length);
    for (const c of ERROR_CODES) expect(c).toMatch(/^[A-Z][A-Z0-9_]*$/);
  });
});
