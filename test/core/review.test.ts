/**
 * Acceptance review of the 0.1 core: defects found in review, each pinned by a
 * test that failed before its fix.
 */
import { describe, expect, test } from "bun:test";
import { parseToolCall } from "../../src/mod.ts";

function chat(args: string) {
  return parseToolCall(JSON.stringify({ id: "c1", type: "function", function: { name: "echo", arguments: args } }));
}

describe("string arguments that are not JSON whitespace", () => {
  // Before: String#trim() treated U+00A0, U+2028, U+3000… as blank, so such
  // arguments were reported as "an empty string" (INVALID_CALL), which they are not.
  test.each([["\u00a0", 0xc2], ["\u2028", 0xe2], ["\u3000{}", 0xe3], ["\u00a0{}\u00a0", 0xc2]])(
    "%j is a JSON_PARSE error at offset 0 of the inner text, naming the byte",
    (args, byte) => {
      const r = chat(args);
      expect(r.ok).toBe(false);
      if (r.ok) return;
      expect(r.error.code).toBe("JSON_PARSE");
      expect(r.error.message).toContain(`unexpected byte 0x${byte.toString(16)}`);
      expect(r.error.details).toEqual({ offset: 0, line: 1, column: 1, location: "/function/arguments" });
      expect(r.id).toBe("c1");
      expect(r.tool).toBe("echo");
    },
  );

  test("empty and JSON-whitespace-only arguments are still INVALID_CALL 'empty string'", () => {
    for (const args of ["", " ", " \t\r\n "]) {
      const r = chat(args);
      expect(r.ok).toBe(false);
      if (r.ok) continue;
      expect(r.error.code).toBe("INVALID_CALL");
      expect(r.error.message).toBe('"arguments" is an empty string; expected a JSON object');
      expect(r.error.details).toEqual({ location: "/function/arguments" });
    }
  });

  test("the Responses shape behaves the same", () => {
    const r = parseToolCall(JSON.stringify({ type: "function_call", call_id: "c2", name: "echo", arguments: "\u00a0" }));
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error.code).toBe("JSON_PARSE");
  });
});

describe("depth is counted over the whole call text (as the README's --max-depth row says)", () => {
  const deep = (n: number) => '{"a":'.repeat(n - 1) + "{}" + "}".repeat(n - 1);

  test("object arguments nest one level less than the limit: the call object is level 1", () => {
    expect(parseToolCall(`{"tool":"echo","arguments":${deep(63)}}`).ok).toBe(true);
    const r = parseToolCall(`{"tool":"echo","arguments":${deep(64)}}`);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error.code).toBe("JSON_DEPTH");
    expect(parseToolCall(`{"type":"tool_use","id":"t","name":"echo","input":${deep(64)}}`).ok).toBe(false);
  });

  test("a string arguments is checked as its own text: 64 levels pass, 65 do not", () => {
    const chatCall = (args: string) => JSON.stringify({ id: "c", type: "function", function: { name: "echo", arguments: args } });
    expect(parseToolCall(chatCall(deep(64))).ok).toBe(true);
    const r = parseToolCall(chatCall(deep(65)));
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error.details.location).toBe("/function/arguments");
  });
});

describe("a member outside the call shape", () => {
  // Before: the message quoted the name raw and whole (a 100 KB name made a
  // 100 KB message, control characters went out unescaped), and the location
  // was not a JSON Pointer when the name held '/' or '~'.
  test("the message is short and escaped; the location is an RFC 6901 pointer", () => {
    const long = "K".repeat(100_000);
    const r = parseToolCall(JSON.stringify({ tool: "echo", arguments: {}, [long]: 1 }));
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error.code).toBe("INVALID_CALL");
    expect(r.error.message).toBe(`unexpected member "${"K".repeat(40)}..." in agentcore tool call`);

    const ctl = parseToolCall(JSON.stringify({ tool: "echo", arguments: {}, "\u001b[2J\n": 1 }));
    if (!ctl.ok) expect(ctl.error.message).toBe('unexpected member "\\u001b[2J\\u000a" in agentcore tool call');

    const slash = parseToolCall(JSON.stringify({ id: "c", type: "function", function: { name: "echo", arguments: "{}", "a/b~c": 1 } }));
    expect(slash.ok).toBe(false);
    if (!slash.ok) {
      expect(slash.error.message).toBe('unexpected member "a/b~c" in openai_chat tool call');
      expect(slash.error.details).toEqual({ location: "/function/a~1b~0c" });
    }
  });
});
