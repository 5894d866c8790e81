import { describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { createRuntime, type Runtime, type RuntimeOptions } from "../../src/runtime/runtime.ts";
import { serializeEnvelope } from "../../src/runtime/envelope_io.ts";
import { createLogger } from "../../src/core/logger.ts";
import type { Envelope, ErrorCode } from "../../src/core/envelope.ts";
import { ToolError, type ToolContext, type ToolDefinition } from "../../src/tools/definition.ts";
import type { ToolCall } from "../../src/core/toolcall.ts";
import { tmp } from "../support/tmp.ts";

const quiet = () => createLogger({ level: "error", sink: () => {} });

function rt(opts: RuntimeOptions = {}): Runtime {
  return createRuntime({ logger: quiet(), ...opts });
}

function call(tool: string, args: Record<string, unknown>, id: string | null = "c1"): ToolCall {
  return { id, tool, arguments: args, shape: "agentcore" };
}

/** Serialised line with duration_ms pinned, for exact comparisons. */
function line(env: Envelope): string {
  expect(typeof env.duration_ms).toBe("number");
  expect(env.duration_ms).toBeGreaterThanOrEqual(0);
  expect(Math.round(env.duration_ms * 1000) / 1000).toBe(env.duration_ms);
  return serializeEnvelope({ ...env, duration_ms: 0 });
}

function sync(out: Envelope | Promise<Envelope>): Envelope {
  expect(out).not.toBeInstanceOf(Promise);
  return out as Envelope;
}

function tool(name: string, handler: ToolDefinition["handler"], extra: Partial<ToolDefinition> = {}): ToolDefinition {
  return { name, description: name, parameters: { type: "object" }, handler, ...extra };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("dispatchCall: envelope shapes", () => {
  test("echo success, synchronous", () => {
    const env = sync(rt().dispatchCall(call("echo", { message: "hello", n: [1, { x: null }] })));
    expect(line(env)).toBe(
      '{"id":"c1","success":true,"tool":"echo","result":{"message":"hello","n":[1,{"x":null}]},"error":null,"duration_ms":0}',
    );
  });

  test("echo returns the very arguments object", () => {
    const args = { a: 1 };
    expect(sync(rt().dispatchCall(call("echo", args))).result).toBe(args);
  });

  test("null id", () => {
    expect(line(sync(rt().dispatchCall(call("echo", {}, null))))).toBe(
      '{"id":null,"success":true,"tool":"echo","result":{},"error":null,"duration_ms":0}',
    );
  });

  test("unknown tool", () => {
    const r = rt();
    expect(line(sync(r.dispatchCall(call("nope", {}))))).toBe(
      '{"id":"c1","success":false,"tool":"nope","result":null,"error":{"code":"UNKNOWN_TOOL","message":"no tool named \\"nope\\"","details":{}},"duration_ms":0}',
    );
    for (const n of ["toString", "__proto__", "constructor"]) expect(sync(r.dispatchCall(call(n, {}))).error?.code).toBe("UNKNOWN_TOOL");
  });

  test("builtins: false leaves an empty registry", () => {
    const r = rt({ builtins: false });
    expect(r.registry.size).toBe(0);
    expect(sync(r.dispatchCall(call("echo", {}))).error?.code).toBe("UNKNOWN_TOOL");
  });

  test("INVALID_ARGUMENTS lists pointer errors", () => {
    const r = rt({
      tools: [tool("typed", () => 1, { parameters: { type: "object", properties: { n: { type: "integer" } }, required: ["n", "m"] } })],
    });
    expect(line(sync(r.dispatchCall(call("typed", { n: "x" }))))).toBe(
      '{"id":"c1","success":false,"tool":"typed","result":null,"error":{"code":"INVALID_ARGUMENTS","message":"arguments do not match the tool\'s parameters (2 errors)","details":{"errors":[{"path":"/m","keyword":"required","message":"missing required property \\"m\\""},{"path":"/n","keyword":"type","message":"must be integer"}],"truncated":false}},"duration_ms":0}',
    );
  });

  test("INVALID_ARGUMENTS never echoes a secret value", () => {
    const secret = "ghp_TOPSECRETTOKEN1234567890";
    const r = rt({
      tools: [
        tool("s", () => 1, {
          parameters: {
            type: "object",
            properties: {
              mode: { enum: ["a", "b"] },
              k: { const: 1 },
              p: { type: "string", pattern: "^x$" },
              len: { type: "string", maxLength: 2 },
              t: { type: "number" },
            },
            additionalProperties: { type: "integer" },
          },
        }),
      ],
    });
    const env = sync(r.dispatchCall(call("s", { mode: secret, k: secret, p: secret, len: secret, t: secret, other: secret })));
    expect(env.error?.code).toBe("INVALID_ARGUMENTS");
    expect((env.error!.details.errors as unknown[]).length).toBe(6);
    expect(serializeEnvelope(env)).not.toContain("TOPSECRET");
  });

  test("bounded errors with truncated flag in the envelope", () => {
    const props: Record<string, unknown> = {};
    const args: Record<string, unknown> = {};
    for (let i = 0; i < 12; i++) {
      props[`p${i}`] = { type: "boolean" };
      args[`p${i}`] = i;
    }
    const r = rt({ tools: [tool("many", () => 1, { parameters: { type: "object", properties: props } })] });
    const env = sync(r.dispatchCall(call("many", args)));
    expect(env.error?.message).toBe("arguments do not match the tool's parameters (8+ errors)");
    expect((env.error!.details.errors as unknown[]).length).toBe(8);
    expect(env.error!.details.truncated).toBe(true);
  });

  test("strict tool rejects undeclared members", () => {
    const r = rt({ tools: [tool("st", () => 1, { strict: true, parameters: { type: "object", properties: { a: {} } } })] });
    expect(sync(r.dispatchCall(call("st", { a: 1 }))).success).toBe(true);
    expect(sync(r.dispatchCall(call("st", { a: 1, b: 2 }))).error?.details).toEqual({
      errors: [{ path: "/b", keyword: "strict", message: "property not declared in the tool's parameters" }],
      truncated: false,
    });
  });

  test("handler throwing an Error → TOOL_ERROR with its message", () => {
    const r = rt({
      tools: [
        tool("boom", () => {
          throw new Error("disk on fire");
        }),
      ],
    });
    expect(line(sync(r.dispatchCall(call("boom", {}))))).toBe(
      '{"id":"c1","success":false,"tool":"boom","result":null,"error":{"code":"TOOL_ERROR","message":"disk on fire","details":{}},"duration_ms":0}',
    );
  });

  test("handler throwing a non-Error", () => {
    const r = rt({
      tools: [
        tool("str", () => {
          throw "plain";
        }),
        tool("obj", () => {
          throw { x: 1 };
        }),
      ],
    });
    expect(sync(r.dispatchCall(call("str", {}))).error).toEqual({ code: "TOOL_ERROR", message: "plain", details: {} });
    expect(sync(r.dispatchCall(call("obj", {}))).error?.code).toBe("TOOL_ERROR");
  });

  test("ToolError code, message and details pass through (sync and async)", () => {
    const r = rt({
      tools: [
        tool("deny", () => {
          throw new ToolError("DENIED", "not allowed here", { rule: "r1" });
        }),
        tool("deny_async", async () => {
          throw new ToolError("NOT_FOUND", "gone", { n: 1 });
        }),
      ],
    });
    expect(line(sync(r.dispatchCall(call("deny", {}))))).toBe(
      '{"id":"c1","success":false,"tool":"deny","result":null,"error":{"code":"DENIED","message":"not allowed here","details":{"rule":"r1"}},"duration_ms":0}',
    );
    return Promise.resolve(r.dispatchCall(call("deny_async", {}))).then((env) => {
      expect(env.error).toEqual({ code: "NOT_FOUND", message: "gone", details: { n: 1 } });
    });
  });

  test("ToolError with an undocumented code becomes TOOL_ERROR; long messages are capped", () => {
    const r = rt({
      tools: [
        tool("weird", () => {
          throw new ToolError("MADE_UP" as never, "odd");
        }),
        tool("long", () => {
          throw new Error("x".repeat(5000));
        }),
      ],
    });
    expect(sync(r.dispatchCall(call("weird", {}))).error).toEqual({ code: "TOOL_ERROR", message: "odd", details: {} });
    expect(sync(r.dispatchCall(call("long", {}))).error!.message.length).toBe(2001);
  });

  test("undefined result becomes null", () => {
    const r = rt({ tools: [tool("void", () => undefined)] });
    expect(line(sync(r.dispatchCall(call("void", {}))))).toBe(
      '{"id":"c1","success":true,"tool":"void","result":null,"error":null,"duration_ms":0}',
    );
  });

  test("handler gets callId, tool and logger; no signal allocated unless read", () => {
    let seen: ToolContext | undefined;
    const r = rt({
      tools: [
        tool("ctx", (_a, ctx) => {
          seen = ctx;
          return ctx.callId;
        }),
      ],
    });
    expect(sync(r.dispatchCall(call("ctx", {}, "abc"))).result).toBe("abc");
    expect(seen!.tool).toBe("ctx");
    expect(seen!.logger).toBe(r.logger);
    expect((seen as unknown as { signalCreated: boolean }).signalCreated).toBe(false);
    expect(seen!.signal.aborted).toBe(false);
  });
});

describe("async handlers, timeouts and cancellation", () => {
  test("async success resolves an envelope", async () => {
    const r = rt({
      tools: [
        tool("later", async (a) => {
          await sleep(5);
          return { got: a };
        }),
      ],
    });
    const out = r.dispatchCall(call("later", { x: 1 }));
    expect(out).toBeInstanceOf(Promise);
    expect(line(await out)).toBe('{"id":"c1","success":true,"tool":"later","result":{"got":{"x":1}},"error":null,"duration_ms":0}');
    expect((await out).duration_ms).toBeGreaterThanOrEqual(4);
  });

  test("TIMEOUT: the handler's signal fires with a TimeoutError", async () => {
    let signal: AbortSignal | undefined;
    const r = rt({
      tools: [
        tool(
          "slow",
          (_a, ctx) =>
            new Promise((_resolve, reject) => {
              signal = ctx.signal;
              ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason));
            }),
          { timeoutMs: 30 },
        ),
      ],
    });
    const env = await r.dispatchCall(call("slow", {}));
    expect(line(env)).toBe(
      '{"id":"c1","success":false,"tool":"slow","result":null,"error":{"code":"TIMEOUT","message":"tool did not finish within 30 ms","details":{"timeout_ms":30}},"duration_ms":0}',
    );
    expect(env.duration_ms).toBeGreaterThanOrEqual(25);
    expect(signal!.aborted).toBe(true);
    expect((signal!.reason as DOMException).name).toBe("TimeoutError");
  });

  test("defaultTimeoutMs applies when the tool has none; signal read late starts aborted", async () => {
    let late: AbortSignal | undefined;
    const r = rt({
      defaultTimeoutMs: 20,
      tools: [
        tool("hang", (_a, ctx) =>
          sleep(60).then(() => {
            late = ctx.signal;
            return "late";
          }),
        ),
      ],
    });
    expect((await r.dispatchCall(call("hang", {}))).error?.code).toBe("TIMEOUT");
    await sleep(70);
    expect(late!.aborted).toBe(true);
  });

  test("a handler rejecting after its timeout crashes nothing; runtime stays usable", async () => {
    const rejections: unknown[] = [];
    const onUnhandled = (e: unknown) => rejections.push(e);
    process.on("unhandledRejection", onUnhandled);
    try {
      const r = rt({
        tools: [
          tool(
            "bad",
            () =>
              sleep(40).then(() => {
                throw new Error("late failure");
              }),
            { timeoutMs: 10 },
          ),
        ],
      });
      expect((await r.dispatchCall(call("bad", {}))).error?.code).toBe("TIMEOUT");
      await sleep(80);
      expect(rejections).toEqual([]);
      expect(sync(r.dispatchCall(call("echo", { ok: true }))).success).toBe(true);
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
  });

  test("async rejection → TOOL_ERROR", async () => {
    const r = rt({
      tools: [
        tool("rej", async () => {
          throw new TypeError("bad type");
        }),
      ],
    });
    expect((await r.dispatchCall(call("rej", {}))).error).toEqual({ code: "TOOL_ERROR", message: "bad type", details: {} });
  });

  test("CANCELLED via the caller's signal; the handler sees the caller's reason", async () => {
    let signal: AbortSignal | undefined;
    const r = rt({
      tools: [
        tool(
          "wait",
          (_a, ctx) =>
            new Promise((resolve) => {
              signal = ctx.signal;
              ctx.signal.addEventListener("abort", () => resolve("stopped"));
            }),
        ),
      ],
    });
    const ac = new AbortController();
    const out = r.dispatchCall(call("wait", {}), ac.signal);
    setTimeout(() => ac.abort("user pressed ctrl-c"), 10);
    const env = await out;
    expect(line(env)).toBe(
      '{"id":"c1","success":false,"tool":"wait","result":null,"error":{"code":"CANCELLED","message":"call cancelled by the caller","details":{}},"duration_ms":0}',
    );
    expect(signal!.aborted).toBe(true);
    expect(signal!.reason).toBe("user pressed ctrl-c");
  });

  test("already-aborted signal: CANCELLED, handler never runs", () => {
    let ran = false;
    const r = rt({
      tools: [
        tool("never", () => {
          ran = true;
        }),
      ],
    });
    const ac = new AbortController();
    ac.abort();
    expect(sync(r.dispatchCall(call("never", {}), ac.signal)).error?.code).toBe("CANCELLED");
    expect(ran).toBe(false);
  });

  test("sync handler with an external signal still returns synchronously", () => {
    const ac = new AbortController();
    expect(sync(rt().dispatchCall(call("echo", { a: 1 }), ac.signal)).success).toBe(true);
  });

  test("completion before cancel: caller's later abort changes nothing and leaks no listener", async () => {
    const r = rt({ tools: [tool("quick", async () => "done")] });
    const ac = new AbortController();
    const env = await r.dispatchCall(call("quick", {}), ac.signal);
    ac.abort();
    expect(env.success).toBe(true);
    expect(env.result).toBe("done");
  });

  test("many concurrent calls settle independently", async () => {
    const r = rt({
      tools: [
        tool(
          "d",
          async (a) => {
            await sleep(Number(a.ms));
            return a.ms;
          },
          { timeoutMs: 50 },
        ),
      ],
    });
    const outs = await Promise.all([5, 100, 1, 80, 3].map((ms, i) => r.dispatchCall(call("d", { ms }, `c${i}`))));
    expect(outs.map((e) => e.error?.code ?? e.result)).toEqual([5, "TIMEOUT", 1, "TIMEOUT", 3]);
    expect(outs.map((e) => e.id)).toEqual(["c0", "c1", "c2", "c3", "c4"]);
  });
});

describe("dispatch(string) through parseToolCall", () => {
  test("AgentCore shape, exact line (seed example)", () => {
    const env = sync(rt().dispatch('{"id":"call_001","tool":"echo","arguments":{"message":"hello"}}'));
    expect(line(env)).toBe('{"id":"call_001","success":true,"tool":"echo","result":{"message":"hello"},"error":null,"duration_ms":0}');
  });

  test("Uint8Array input", () => {
    const env = sync(rt().dispatch(new TextEncoder().encode('{"id":"b","tool":"echo","arguments":{"é":"✓"}}')));
    expect(env.result).toEqual({ é: "✓" });
  });

  test("malformed input: JSON_PARSE with null id/tool (seed example)", () => {
    const env = sync(rt().dispatch('{"id":"call_001","tool":"echo","arguments":{"message":"hello"}'));
    expect(env).toMatchObject({ id: null, success: false, tool: null, result: null });
    expect(env.error?.code).toBe("JSON_PARSE");
    expect(env.error?.message).toBe("unexpected end of data");
  });

  test("each JSON error code reaches the envelope", () => {
    const r = rt({ limits: { maxBytes: 200, maxDepth: 4 } });
    const cases: [string, ErrorCode][] = [
      ['{"id":"x","tool":"echo","arguments":{"a":1,"a":2}}', "JSON_DUPLICATE_KEY"],
      ['{"id":"x","tool":"echo","arguments":{"a":[[[[1]]]]}}', "JSON_DEPTH"],
      ['{"id":"x","tool":"echo","arguments":{"a":"' + "x".repeat(300) + '"}}', "JSON_SIZE"],
      ['{"id":"x","tool":"echo"}', "INVALID_CALL"],
      ["[]", "INVALID_CALL"],
    ];
    for (const [input, code] of cases) {
      const env = sync(r.dispatch(input));
      expect(env.success).toBe(false);
      expect(env.error?.code).toBe(code);
    }
  });

  test("OpenAI chat, Responses and Anthropic shapes dispatch", () => {
    const r = rt();
    const chat = sync(r.dispatch('{"id":"call_1","type":"function","function":{"name":"echo","arguments":"{\\"q\\":1}"}}'));
    expect(line(chat)).toBe('{"id":"call_1","success":true,"tool":"echo","result":{"q":1},"error":null,"duration_ms":0}');
    const resp = sync(r.dispatch('{"type":"function_call","call_id":"fc_1","name":"echo","arguments":"{}"}'));
    expect(resp).toMatchObject({ id: "fc_1", success: true, tool: "echo", result: {} });
    const anth = sync(r.dispatch('{"type":"tool_use","id":"toolu_1","name":"echo","input":{"z":true}}'));
    expect(anth).toMatchObject({ id: "toolu_1", success: true, tool: "echo", result: { z: true } });
  });

  test("unknown tool via string keeps the call's id", () => {
    const env = sync(rt().dispatch('{"id":"k","tool":"rm_rf","arguments":{}}'));
    expect(env).toMatchObject({ id: "k", tool: "rm_rf", error: { code: "UNKNOWN_TOOL" } });
  });

  test("secret in arguments never echoed by dispatch(string) errors", () => {
    const r = rt();
    const env = sync(r.dispatch('{"id":"s","tool":"read_file","arguments":{"path":"x","max_bytes":"sk-SECRETVALUE"}}'));
    expect(env.error?.code).toBe("INVALID_ARGUMENTS");
    expect(serializeEnvelope(env)).not.toContain("SECRETVALUE");
  });

  test("read_file through the runtime uses the runtime's root and limit", () => {
    const dir = tmp("agentcore-rt-");
    try {
      fs.writeFileSync(path.join(dir, "hi.txt"), "hi there");
      const r = rt({ root: dir, maxFileBytes: 4 });
      expect(r.root).toBe(fs.realpathSync(dir));
      expect(sync(r.dispatch('{"id":"f","tool":"read_file","arguments":{"path":"hi.txt"}}')).error?.code).toBe("FILE_TOO_LARGE");
      const r2 = rt({ root: dir });
      expect(sync(r2.dispatch('{"id":"f","tool":"read_file","arguments":{"path":"hi.txt"}}')).result).toEqual({
        path: "hi.txt",
        bytes: 8,
        content: "hi there",
      });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test("a failing call never ends the runtime: mixed batch", async () => {
    const r = rt({
      tools: [
        tool("boom", () => {
          throw new Error("x");
        }),
      ],
    });
    const inputs = [
      "{",
      '{"id":"1","tool":"boom","arguments":{}}',
      '{"id":"2","tool":"echo","arguments":{"ok":1}}',
      "",
      '{"id":"3","tool":"nope","arguments":{}}',
    ];
    const codes: (string | null)[] = [];
    for (const s of inputs) codes.push((await r.dispatch(s)).error?.code ?? null);
    expect(codes[1]).toBe("TOOL_ERROR");
    expect(codes[2]).toBeNull();
    expect(codes[4]).toBe("UNKNOWN_TOOL");
    expect(codes[0]).not.toBeNull();
    expect(codes[3]).not.toBeNull();
  });
});

describe("createRuntime options", () => {
  test("root must be a directory; options are range-checked", () => {
    expect(() => createRuntime({ root: "/definitely/not/here" })).toThrow();
    expect(() => createRuntime({ root: "/etc/hostname" })).toThrow(/not a directory/);
    expect(() => createRuntime({ defaultTimeoutMs: 0 })).toThrow(RangeError);
    expect(() => createRuntime({ maxFileBytes: -1 })).toThrow(RangeError);
  });

  test("duplicate of a builtin is a registration error at creation", () => {
    expect(() => rt({ tools: [tool("echo", () => 1)] })).toThrow(/duplicate tool name "echo"/);
  });

  test("defaults", () => {
    const r = rt();
    expect(r.root).toBe(fs.realpathSync(process.cwd()));
    expect(r.defaultTimeoutMs).toBe(30000);
    expect(r.maxFileBytes).toBe(1024 * 1024);
    expect(r.registry.list().map((t) => [t.name, t.effect])).toEqual([
      ["echo", "read_only"],
      ["read_file", "read_only"],
    ]);
  });
});

describe("runtime logging", () => {
  test("debug level logs one line per finished call to the logger, never to the envelope", async () => {
    const lines: string[] = [];
    const r = createRuntime({
      logger: createLogger({ level: "debug", sink: (l) => lines.push(l) }),
      tools: [tool("later", async () => 1)],
    });
    sync(r.dispatch('{"id":"a","tool":"echo","arguments":{}}'));
    sync(r.dispatch("{"));
    await r.dispatchCall(call("later", {}, "b"));
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/^agentcore debug call finished id=a tool=echo success=true code=null duration_ms=[0-9.]+$/);
    expect(lines[1]).toMatch(/^agentcore debug call finished id=null tool=null success=false code=JSON_PARSE /);
    expect(lines[2]).toMatch(/^agentcore debug call finished id=b tool=later success=true /);
  });

  test("at warn level nothing is logged for ordinary calls", () => {
    const lines: string[] = [];
    const r = createRuntime({ logger: createLogger({ level: "warn", sink: (l) => lines.push(l) }) });
    sync(r.dispatch('{"id":"a","tool":"echo","arguments":{}}'));
    sync(r.dispatch('{"id":"a","tool":"nope","arguments":{}}'));
    expect(lines).toEqual([]);
  });
});
