/**
 * Acceptance review of the 0.1 runtime: defects found in review, each pinned
 * by a test that failed before its fix.
 */
import { expect, test } from "bun:test";
import { createRuntime, serializeEnvelope } from "../../src/mod.ts";
import { createLogger } from "../../src/runtime/logger.ts";

const quiet = createLogger({ level: "error", sink: () => {} });

test.each([
  [{ maxBytes: 0 }, "limits.maxBytes"],
  [{ maxBytes: 268_435_457 }, "limits.maxBytes"],
  [{ maxDepth: 1.5 }, "limits.maxDepth"],
  [{ maxDepth: -1 }, "limits.maxDepth"],
  [{ allowProtoKey: "yes" }, "limits.allowProtoKey"],
])("createRuntime with limits %j throws a RangeError naming %s at creation", (limits, field) => {
  // Before: the runtime was created, and every dispatch answered INTERNAL_ERROR.
  expect(() => createRuntime({ limits: limits as never, logger: quiet })).toThrow(RangeError);
  expect(() => createRuntime({ limits: limits as never, logger: quiet })).toThrow(field);
});

test("valid limits still apply to every call", async () => {
  const rt = createRuntime({ limits: { maxBytes: 40, maxDepth: 2 }, logger: quiet });
  expect(serializeEnvelope(await rt.dispatch('{"tool":"echo","arguments":{}}'))).toContain('"success":true');
  expect(serializeEnvelope(await rt.dispatch('{"tool":"echo","arguments":{"a":[]}}'))).toContain('"JSON_DEPTH"');
  expect(serializeEnvelope(await rt.dispatch(`{"tool":"echo","arguments":{"s":"${"x".repeat(40)}"}}`))).toContain('"JSON_SIZE"');
});

test.each([["yes"], [1], [null]])("a tool whose strict is %j (not a boolean) is refused at registration", (strict) => {
  // Before: it was registered as not strict, so undeclared arguments reached the handler.
  const def = { name: "t", description: "", parameters: { type: "object" }, strict, handler: () => 1 };
  expect(() => createRuntime({ tools: [def as never], logger: quiet })).toThrow('tool "t": strict must be a boolean');
});

test("strict: true and false register, and strict still refuses undeclared members", async () => {
  const mk = (strict: boolean) => ({ name: "t", description: "", parameters: { type: "object", properties: { a: {} } }, strict, handler: () => 1 });
  const strictRt = createRuntime({ tools: [mk(true)], logger: quiet });
  const loose = createRuntime({ tools: [mk(false)], logger: quiet });
  expect(serializeEnvelope(await strictRt.dispatch('{"tool":"t","arguments":{"b":1}}'))).toContain('"INVALID_ARGUMENTS"');
  expect(serializeEnvelope(await loose.dispatch('{"tool":"t","arguments":{"b":1}}'))).toContain('"success":true');
});
