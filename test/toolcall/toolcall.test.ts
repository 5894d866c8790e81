import { describe, expect, test } from "bun:test";
import { normalizeToolCall, parseToolCall } from "../../src/core/toolcall.ts";

describe("parseToolCall: the four shapes", () => {
  test("agentcore shape", () => {
    const r = parseToolCall('{"id":"c1","tool":"echo","arguments":{"x":[1,2]}}');
    expect(r).toEqual({ ok: true, call: { id: "c1", tool: "echo", arguments: { x: [1, 2] }, shape: "agentcore" } });
  });

  test("agentcore shape without id", () => {
    const r = parseToolCall('{"tool":"echo","arguments":{}}');
    expect(r).toEqual({ ok: true, call: { id: null, tool: "echo", arguments: {}, shape: "agentcore" } });
  });

  test("OpenAI chat tool_calls[] item, arguments parsed strictly", () => {
    const r = parseToolCall('{"id":"call_9","type":"function","function":{"name":"read_file","arguments":"{\\"path\\":\\"a.txt\\"}"}}');
    expect(r).toEqual({ ok: true, call: { id: "call_9", tool: "read_file", arguments: { path: "a.txt" }, shape: "openai_chat" } });
  });

  test("OpenAI chat streaming item keeps its index member", () => {
    const r = parseToolCall('{"index":0,"id":"c","type":"function","function":{"name":"echo","arguments":"{}"}}');
    expect(r.ok).toBe(true);
  });

  test("OpenAI Responses function_call uses call_id", () => {
    const r = parseToolCall(
      '{"type":"function_call","id":"fc_1","call_id":"call_2","name":"echo","arguments":"{\\"a\\":true}","status":"completed"}',
    );
    expect(r).toEqual({ ok: true, call: { id: "call_2", tool: "echo", arguments: { a: true }, shape: "openai_responses" } });
  });

  test("Anthropic tool_use block", () => {
    const r = parseToolCall('{"type":"tool_use","id":"toolu_1","name":"echo","input":{"q":"x"}}');
    expect(r).toEqual({ ok: true, call: { id: "toolu_1", tool: "echo", arguments: { q: "x" }, shape: "anthropic" } });
  });

  test("bytes input is accepted like text", () => {
    const r = parseToolCall(new TextEncoder().encode('{"id":"é","tool":"echo","arguments":{"s":"ü"}}'));
    expect(r).toEqual({ ok: true, call: { id: "é", tool: "echo", arguments: { s: "ü" }, shape: "agentcore" } });
  });
});

describe("parseToolCall: bad calls become structured errors", () => {
  test("malformed outer JSON carries offset, line and column", () => {
    const r = parseToolCall('{"id":"c1",\n "tool":"echo", "arguments":{');
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error.code).toBe("JSON_PARSE");
    expect(r.error.message).toBe("unexpected end of data");
    expect(r.error.details).toEqual({ offset: 41, line: 2, column: 30 }); // the end of data: 41 bytes, 29 of them on line 2
    expect(r.id).toBeNull();
  });

  test("duplicate key inside string arguments: position refers to the inner text", () => {
    const inner = '{"a":1,\n"\\u0061":2}'; // a real LF, then the six characters \u0061
    const r = parseToolCall(JSON.stringify({ id: "c", type: "function", function: { name: "echo", arguments: inner } }));
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error.code).toBe("JSON_DUPLICATE_KEY");
    // inner text is {"a":1,<LF>"\u0061":2}: the second key starts at byte 8, line 2, column 1
    expect(r.error.details).toEqual({ offset: 8, line: 2, column: 1, location: "/function/arguments" });
    expect(r.error.message).toContain('duplicate key "a"');
    expect(r.id).toBe("c");
    expect(r.tool).toBe("echo");
  });

  test("invalid JSON inside Responses arguments", () => {
    const r = parseToolCall('{"type":"function_call","call_id":"k","name":"echo","arguments":"{\\"a\\":}"}');
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error.code).toBe("JSON_PARSE");
    expect(r.error.details).toMatchObject({ offset: 5, line: 1, column: 6, location: "/arguments" });
  });

  const invalid: [string, string, string][] = [
    ["[1,2]", "a tool call must be a JSON object, got an array", ""],
    ['{"id":"x","arguments":{}}', "unrecognised tool-call shape", ""],
    ['{"tool":"echo"}', 'missing "arguments"', "/arguments"],
    ['{"tool":"echo","arguments":[]}', '"arguments" must be an object, got an array', "/arguments"],
    ['{"tool":"echo","arguments":"{}"}', '"arguments" must be an object, got a string', "/arguments"],
    ['{"tool":"","arguments":{}}', '"tool" must not be empty', "/tool"],
    ['{"tool":7,"arguments":{}}', '"tool" must be a string, got a number', "/tool"],
    ['{"id":5,"tool":"echo","arguments":{}}', '"id" must be a string, got a number', "/id"],
    ['{"tool":"echo","arguments":{},"argument":{}}', 'unexpected member "argument"', "/argument"],
    ['{"type":"function","function":{"name":"echo","arguments":"{}"}}', 'missing "id"', "/id"],
    ['{"id":"c","type":"function","function":{"name":"echo","arguments":""}}', "empty string", "/function/arguments"],
    ['{"id":"c","type":"function","function":{"name":"echo","arguments":"  "}}', "empty string", "/function/arguments"],
    [
      '{"id":"c","type":"function","function":{"name":"echo","arguments":"[1]"}}',
      "must encode a JSON object, got an array",
      "/function/arguments",
    ],
    [
      '{"id":"c","type":"function","function":{"name":"echo","arguments":"3"}}',
      "must encode a JSON object, got a number",
      "/function/arguments",
    ],
    ['{"id":"c","type":"function","function":"echo"}', '"function" must be an object, got a string', "/function"],
    ['{"id":"c","type":"function","function":{"name":"echo","arguments":"{}","extra":1}}', 'unexpected member "extra"', "/function/extra"],
    ['{"type":"tool_use","id":"t","name":"echo","input":null}', '"input" must be an object, got null', "/input"],
    ['{"type":"function_call","name":"echo","arguments":"{}"}', 'missing "call_id"', "/call_id"],
  ];
  for (const [input, message, location] of invalid) {
    test(`INVALID_CALL: ${input}`, () => {
      const r = parseToolCall(input);
      expect(r.ok).toBe(false);
      if (r.ok) return;
      expect(r.error.code).toBe("INVALID_CALL");
      expect(r.error.message).toContain(message);
      expect(r.error.details.location).toBe(location);
    });
  }

  test("inherited names are not members: a bare object with toString is not a call", () => {
    const r = normalizeToolCall(Object.create({ tool: "echo", arguments: {} }));
    expect(r.ok).toBe(false);
  });

  test("limits apply to the inner arguments text too", () => {
    const deep = "[".repeat(10) + "]".repeat(10);
    const call = JSON.stringify({ id: "c", type: "function", function: { name: "echo", arguments: `{"d":${deep}}` } });
    const r = parseToolCall(call, { maxDepth: 8 });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error.code).toBe("JSON_DEPTH");
    expect(r.error.details.location).toBe("/function/arguments");
  });
});

// Arguments, depth over the whole call text, members outside the call shape:
// each test below failed before the fix it pins.
function chat(args: string) {
  return parseToolCall(JSON.stringify({ id: "c1", type: "function", function: { name: "echo", arguments: args } }));
}

describe("string arguments that are not JSON whitespace", () => {
  // Before: String#trim() treated U+00A0, U+2028, U+3000… as blank, so such
  // arguments were reported as "an empty string" (INVALID_CALL), which they are not.
  test.each([
    ["\u00a0", 0xc2],
    ["\u2028", 0xe2],
    ["\u3000{}", 0xe3],
    ["\u00a0{}\u00a0", 0xc2],
  ])("%j is a JSON_PARSE error at offset 0 of the inner text, naming the byte", (args, byte) => {
    const r = chat(args);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error.code).toBe("JSON_PARSE");
    expect(r.error.message).toContain(`unexpected byte 0x${byte.toString(16)}`);
    expect(r.error.details).toEqual({ offset: 0, line: 1, column: 1, location: "/function/arguments" });
    expect(r.id).toBe("c1");
    expect(r.tool).toBe("echo");
  });

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

describe("depth is counted over the whole call text (as docs/cli.md's --max-depth row says)", () => {
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
