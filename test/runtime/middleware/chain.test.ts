import { describe, expect, test } from "bun:test";
import { createRuntime } from "../../../src/runtime/index.ts";
import type { ToolCallContext, ToolMiddleware } from "../../../src/runtime/middleware/types.ts";
import { isSchemaValidation, rejectOutcome, ruleBasedPolicy, schemaValidation } from "../../../src/runtime/middleware/index.ts";
import type { ToolDefinition } from "../../../src/tools/definition.ts";
import { quietLogger } from "../../support/agent.ts";

const sum: ToolDefinition<{ a: number; b: number }> = {
  name: "sum",
  description: "",
  parameters: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] },
  handler: ({ a, b }) => a + b,
};

const call = (args: unknown, id = "c1") => ({ id, tool: "sum", arguments: args as Record<string, unknown>, shape: "agentcore" as const });

function tracer(name: string, trace: string[]): ToolMiddleware {
  return async (ctx, next) => {
    trace.push(`${name}:before`);
    const out = await next(ctx);
    trace.push(`${name}:after`);
    return out;
  };
}

describe("middleware chain (issue 4 §1)", () => {
  test("first is outermost: before/after trace around the handler", async () => {
    const trace: string[] = [];
    const traced: ToolDefinition<{ a: number; b: number }> = { ...sum, handler: ({ a, b }) => (trace.push("handler"), a + b) };
    const rt = createRuntime({ builtins: false, tools: [traced as never], middleware: [tracer("first", trace), tracer("second", trace)] });
    const env = await rt.dispatchCall(call({ a: 1, b: 2 }));
    expect(env.result).toBe(3);
    expect(trace).toEqual(["first:before", "second:before", "handler", "second:after", "first:after"]);
  });

  test("a short-circuit skips the handler and later middleware", async () => {
    const trace: string[] = [];
    let ran = false;
    const stop: ToolMiddleware = async (ctx) => rejectOutcome(ctx, "no thanks");
    const rt = createRuntime({
      builtins: false,
      tools: [{ ...sum, handler: () => (ran = true) } as never],
      middleware: [tracer("outer", trace), stop, tracer("inner", trace)],
    });
    const env = await rt.dispatchCall(call({ a: 1, b: 2 }));
    expect(env.success).toBe(false);
    expect(env.error).toEqual({ code: "DENIED", message: "no thanks", details: {} });
    expect(ran).toBe(false);
    expect(trace).toEqual(["outer:before", "outer:after"]);
  });

  test("a middleware can transform the arguments", async () => {
    const double: ToolMiddleware = (ctx, next) =>
      next({ ...ctx, arguments: { a: (ctx.arguments.a as number) * 2, b: ctx.arguments.b } } as ToolCallContext);
    const rt = createRuntime({ builtins: false, tools: [sum as never], middleware: [double] });
    expect((await rt.dispatchCall(call({ a: 5, b: 1 }))).result).toBe(11);
  });

  test("the CLI path (dispatch of a JSON line) runs the chain too, and sees no run info", async () => {
    const seen: (ToolCallContext["run"] | "none")[] = [];
    const spy: ToolMiddleware = (ctx, next) => (seen.push(ctx.run ?? "none"), next(ctx));
    const rt = createRuntime({ builtins: false, tools: [sum as never], middleware: [spy] });
    const env = await rt.dispatch('{"id":"x","tool":"sum","arguments":{"a":1,"b":1}}');
    expect(env.result).toBe(2);
    expect(seen).toEqual(["none"]);
  });

  test("default placement: validation right before the first policy, else innermost", async () => {
    const seen: string[] = [];
    const spy =
      (name: string): ToolMiddleware =>
      (ctx, next) => (seen.push(name), next(ctx));
    const policy = ruleBasedPolicy({ rules: [{ id: "all", action: "allow" }] });
    const rt = createRuntime({ builtins: false, tools: [sum as never], middleware: [spy("outer"), policy, spy("inner")] });
    expect(rt.middlewareChain.map((m) => (isSchemaValidation(m) ? "validation" : m === policy ? "policy" : "spy"))).toEqual([
      "spy",
      "validation",
      "policy",
      "spy",
    ]);
    const env = await rt.dispatchCall(call({ a: "x", b: 1 }));
    expect(env.error?.code).toBe("INVALID_ARGUMENTS");
    expect(seen).toEqual(["outer"]); // an outer middleware (history) sees the refused call; the inner one does not

    const rt2 = createRuntime({ builtins: false, tools: [sum as never], middleware: [spy("only")] });
    expect(isSchemaValidation(rt2.middlewareChain[1])).toBe(true);
  });

  test("a decision set on a transformed context is visible to the outer middleware", async () => {
    let outerSaw: unknown;
    const outer: ToolMiddleware = async (ctx, next) => {
      const out = await next(ctx);
      outerSaw = ctx.decision;
      return out;
    };
    const copy: ToolMiddleware = (ctx, next) => next({ ...ctx });
    const policy = ruleBasedPolicy({ rules: [{ id: "all", action: "allow" }] });
    const rt = createRuntime({ builtins: false, tools: [sum as never], middleware: [outer, copy, policy] });
    expect((await rt.dispatchCall(call({ a: 1, b: 1 }))).result).toBe(2);
    expect(outerSaw).toEqual({ action: "allow", by: "rule:all" });
  });

  test("an explicitly placed validation keeps its place", async () => {
    const trace: string[] = [];
    const rt = createRuntime({ builtins: false, tools: [sum as never], middleware: [tracer("outer", trace), schemaValidation()] });
    expect(rt.middlewareChain.length).toBe(2);
    const env = await rt.dispatchCall(call({ a: "x", b: 1 }));
    expect(env.error?.code).toBe("INVALID_ARGUMENTS");
    expect(trace).toEqual(["outer:before", "outer:after"]);
  });

  test("a throwing middleware is a TOOL_ERROR envelope; a garbage outcome is INTERNAL_ERROR; the runtime stays usable", async () => {
    const boom: ToolMiddleware = () => {
      throw new Error("mw broke");
    };
    const rt = createRuntime({ builtins: false, tools: [sum as never], middleware: [boom] });
    const env = await rt.dispatchCall(call({ a: 1, b: 2 }));
    expect(env.error).toMatchObject({ code: "TOOL_ERROR", message: "mw broke" });
    const junk = (async () => ({ nope: 1 })) as unknown as ToolMiddleware;
    const rt2 = createRuntime({ builtins: false, tools: [sum as never], middleware: [junk], logger: quietLogger() });
    expect((await rt2.dispatchCall(call({ a: 1, b: 2 }))).error?.code).toBe("INTERNAL_ERROR");
  });

  test("without extra middleware a synchronous handler keeps the synchronous fast path (no Promise)", () => {
    const rt = createRuntime();
    const env = rt.dispatch('{"id":"c1","tool":"echo","arguments":{"x":1}}');
    expect(env instanceof Promise).toBe(false);
    const bad = rt.dispatchCall({ id: "c2", tool: "read_file", arguments: { path: 5 }, shape: "agentcore" });
    expect(bad instanceof Promise).toBe(false);
    expect((bad as { error: { code: string } }).error.code).toBe("INVALID_ARGUMENTS");
    expect(createRuntime({ middleware: [schemaValidation()] }).dispatch('{"tool":"echo","arguments":{}}') instanceof Promise).toBe(false);
  });

  test("a non-function middleware fails createRuntime", () => {
    expect(() => createRuntime({ middleware: [42 as never] })).toThrow("middleware[0] must be a function");
  });
});
