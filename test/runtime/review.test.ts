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
