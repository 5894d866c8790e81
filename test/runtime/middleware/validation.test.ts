import { describe, expect, test } from "bun:test";
import { createAgent } from "../../../src/agent/index.ts";
import { createRuntime } from "../../../src/runtime/index.ts";
import type { ToolMiddleware } from "../../../src/runtime/middleware/types.ts";
import { invalidArgumentsPayload, ruleBasedPolicy } from "../../../src/runtime/middleware/index.ts";
import type { ToolDefinition } from "../../../src/tools/definition.ts";
import { call, text } from "../../support/agent.ts";
import { ScriptedModel } from "../../../src/providers/scripted.ts";

const SECRET = "sk-live-very-secret-value-123";

function transfer(onRun: () => void): ToolDefinition {
  return {
    name: "transfer",
    description: "",
    parameters: {
      type: "object",
      properties: { amount: { type: "number" }, currency: { type: "string" }, to: { type: "string" } },
      required: ["amount", "currency", "to"],
    },
    handler: () => (onRun(), "sent"),
  };
}

describe("schema validation middleware (issue 4 §2)", () => {
  test("a type error short-circuits the handler: path /amount, keyword type, the value is not echoed", async () => {
    let ran = 0;
    const rt = createRuntime({ builtins: false, tools: [transfer(() => ran++)] });
    const env = await rt.dispatchCall({
      id: "c1",
      tool: "transfer",
      arguments: { amount: SECRET, currency: "EUR", to: "bob" },
      shape: "agentcore",
    });
    expect(ran).toBe(0);
    expect(env.error?.code).toBe("INVALID_ARGUMENTS");
    expect(env.error?.details).toEqual({ errors: [{ path: "/amount", keyword: "type", message: "must be number" }], truncated: false });
    expect(JSON.stringify(env)).not.toContain(SECRET);
  });

  test("the agent gets the non-terminal §6 payload, keeps going, and never sees the value", async () => {
    let ran = 0;
    const model = new ScriptedModel([call("c1", "transfer", { amount: SECRET, currency: "EUR", to: "bob" }), text("ok")]);
    const agent = createAgent({ model, tools: [transfer(() => ran++)] });
    const res = await agent.run("go");
    expect(res.status).toBe("completed");
    expect(ran).toBe(0);
    const content = model.requests[1]!.messages.at(-1)!.content as string;
    expect(content).not.toContain(SECRET);
    expect(JSON.parse(content)).toEqual({
      status: "error",
      tool: "transfer",
      code: "invalid_tool_arguments",
      errors: [{ path: "/amount", keyword: "type", message: "value does not match the required type" }],
      truncated: false,
    });
  });

  test("each missing required property gets its own error with a distinct path", async () => {
    const rt = createRuntime({ builtins: false, tools: [transfer(() => {})] });
    const env = await rt.dispatchCall({ id: "c1", tool: "transfer", arguments: {}, shape: "agentcore" });
    const errors = env.error?.details.errors as { path: string; keyword: string }[];
    expect(errors.map((e) => [e.path, e.keyword])).toEqual([
      ["/amount", "required"],
      ["/currency", "required"],
      ["/to", "required"],
    ]);
    const payload = invalidArgumentsPayload("transfer", errors as never, false);
    expect((payload.errors as { message: string }[]).every((e) => e.message === "required property is missing")).toBe(true);
  });

  test("payload errors are sorted by path then keyword; unknown keywords get the generic wording", () => {
    const p = invalidArgumentsPayload(
      "t",
      [
        { path: "/b", keyword: "type", message: "x" },
        { path: "/a", keyword: "weird", message: "x" },
        { path: "/a", keyword: "minimum", message: "x" },
      ],
      true,
    );
    expect(p).toEqual({
      status: "error",
      tool: "t",
      code: "invalid_tool_arguments",
      errors: [
        { path: "/a", keyword: "minimum", message: "number is below the allowed minimum" },
        { path: "/a", keyword: "weird", message: "value does not match the tool schema" },
        { path: "/b", keyword: "type", message: "value does not match the required type" },
      ],
      truncated: true,
    });
  });

  test("an invalid schema fails createRuntime at startup, naming the tool", () => {
    const bad: ToolDefinition = {
      name: "broken_tool",
      description: "",
      parameters: { type: "object", properties: { a: { type: "no-such-type" } } },
      handler: () => 1,
    };
    expect(() => createRuntime({ builtins: false, tools: [bad], middleware: [] })).toThrow(/broken_tool/);
  });

  test("validation runs before the policy: invalid arguments consume neither limits nor approvals", async () => {
    let ran = 0;
    let asked = 0;
    const policy = ruleBasedPolicy({
      rules: [{ id: "once", action: "require_approval", tools: ["transfer"], maxCallsPerRun: 1 }],
      approver: async () => (asked++, { approved: true }),
    });
    const rt = createRuntime({ builtins: false, tools: [transfer(() => ran++)], middleware: [policy] });
    for (let i = 0; i < 3; i++) {
      const env = await rt.dispatchCall({ id: `c${i}`, tool: "transfer", arguments: { amount: "x" }, shape: "agentcore" });
      expect(env.error?.code).toBe("INVALID_ARGUMENTS");
    }
    expect(asked).toBe(0);
    const ok = await rt.dispatchCall({
      id: "ok",
      tool: "transfer",
      arguments: { amount: 1, currency: "EUR", to: "bob" },
      shape: "agentcore",
    });
    expect(ok.result).toBe("sent");
    expect([ran, asked]).toEqual([1, 1]);
  });

  test("the validation middleware validates the arguments a previous middleware transformed", async () => {
    const breakIt: ToolMiddleware = (ctx, next) => next({ ...ctx, arguments: { amount: "nope" } });
    const { schemaValidation } = await import("../../../src/runtime/middleware/index.ts");
    const rt = createRuntime({ builtins: false, tools: [transfer(() => {})], middleware: [breakIt, schemaValidation()] });
    const env = await rt.dispatchCall({
      id: "c",
      tool: "transfer",
      arguments: { amount: 1, currency: "EUR", to: "bob" },
      shape: "agentcore",
    });
    expect(env.error?.code).toBe("INVALID_ARGUMENTS");
  });
});
