/**
 * The runtime's guards: createRuntime refuses bad limits and a non-boolean
 * strict at creation; dispatch and normalizeToolCall survive hostile call
 * objects built in code and hostile values returned by a handler. Each test
 * failed before the fix it pins.
 */
import { describe, expect, test } from "bun:test";
import { createRuntime, normalizeToolCall, serializeEnvelope, type Envelope, type ToolCall } from "../../src/mod.ts";
import { createLogger } from "../../src/core/logger.ts";

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
  const mk = (strict: boolean) => ({
    name: "t",
    description: "",
    parameters: { type: "object", properties: { a: {} } },
    strict,
    handler: () => 1,
  });
  const strictRt = createRuntime({ tools: [mk(true)], logger: quiet });
  const loose = createRuntime({ tools: [mk(false)], logger: quiet });
  expect(serializeEnvelope(await strictRt.dispatch('{"tool":"t","arguments":{"b":1}}'))).toContain('"INVALID_ARGUMENTS"');
  expect(serializeEnvelope(await loose.dispatch('{"tool":"t","arguments":{"b":1}}'))).toContain('"success":true');
});

describe("hostile call objects built in code", () => {
  // Before: normalizeToolCall rethrew what a getter or a revoked Proxy threw, and
  // dispatchCall's own error path read call.id again and threw the same error.
  const revoked = () => {
    const r = Proxy.revocable({}, {});
    r.revoke();
    return r.proxy;
  };
  const cases: [string, () => unknown][] = [
    [
      "a throwing getter for tool",
      () => ({
        get tool() {
          throw new Error("boom");
        },
        arguments: {},
      }),
    ],
    [
      "a throwing getter for arguments",
      () => ({
        tool: "echo",
        get arguments() {
          throw new Error("boom");
        },
      }),
    ],
    ["a revoked Proxy", revoked],
  ];

  test.each(cases)("normalizeToolCall with %s returns INVALID_CALL", (_name, make) => {
    const r = normalizeToolCall(make());
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.error.code).toBe("INVALID_CALL");
      expect(r.error.message).toStartWith("the tool call could not be read");
      expect(r.error.details).toEqual({ location: "" });
    }
  });

  test("normalizeToolCall still throws for bad limits (a programming error), as parseStrict does", () => {
    expect(() =>
      normalizeToolCall(
        {
          tool: "echo",
          get arguments() {
            throw new Error("boom");
          },
        },
        { maxDepth: -1 },
      ),
    ).toThrow(RangeError);
  });

  test.each([
    [
      "a throwing id getter",
      () => ({
        get id() {
          throw new Error("boom");
        },
        tool: "echo",
        arguments: {},
        shape: "agentcore",
      }),
    ],
    ["a revoked Proxy", revoked],
    [
      "a throwing id getter whose error's message getter throws too",
      () => ({
        get id() {
          const e = new Error();
          Object.defineProperty(e, "message", {
            get() {
              throw new Error("again");
            },
          });
          throw e;
        },
        tool: "echo",
        arguments: {},
        shape: "agentcore",
      }),
    ],
  ])("dispatchCall with %s answers an envelope instead of throwing", async (_name, make) => {
    const rt = createRuntime({ logger: quiet });
    let env: Envelope | undefined;
    expect(() => {
      env = rt.dispatchCall(make() as ToolCall) as Envelope;
    }).not.toThrow();
    env = await env!;
    expect(env.success).toBe(false);
    expect(env.error?.code).toBe("INTERNAL_ERROR");
    expect(serializeEnvelope(env)).toStartWith('{"id":null,"success":false');
  });
});

describe("hostile values from a tool's handler", () => {
  // Before: a value whose `then` getter throws, a revoked Proxy returned or
  // thrown, ended as INTERNAL_ERROR with tool null (the runtime's fault, not the tool's).
  const revoked = () => {
    const r = Proxy.revocable({}, {});
    r.revoke();
    return r.proxy;
  };
  const trapping = () =>
    new Proxy(
      {},
      {
        get() {
          throw new Error("trap");
        },
      },
    );
  const handlers: [string, () => unknown][] = [
    [
      "returns a value whose then getter throws",
      () => ({
        get then() {
          throw new Error("then");
        },
      }),
    ],
    ["returns a revoked Proxy", revoked],
    ["returns a Proxy whose get trap throws", trapping],
    [
      "throws a revoked Proxy",
      () => {
        throw revoked();
      },
    ],
    ["resolves to a revoked Proxy", async () => revoked()],
    [
      "rejects with a revoked Proxy",
      async () => {
        throw revoked();
      },
    ],
  ];
  for (const withMiddleware of [false, true]) {
    test.each(handlers)(`a handler that %s is TOOL_ERROR for that tool (middleware: ${withMiddleware})`, async (_name, handler) => {
      const rt = createRuntime({
        tools: [{ name: "bad", description: "", parameters: { type: "object" }, handler }],
        logger: quiet,
        // any middleware beyond validation takes the chain path of dispatch
        middleware: withMiddleware ? [(ctx, next) => next(ctx)] : [],
      });
      const env = await rt.dispatch('{"id":"c1","tool":"bad","arguments":{}}');
      expect(env.id).toBe("c1");
      expect(env.tool).toBe("bad");
      expect(env.success).toBe(false);
      expect(env.error?.code).toBe("TOOL_ERROR");
    });
  }
});
