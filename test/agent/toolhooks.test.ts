import { describe, expect, test } from "bun:test";
import { createRuntime, serializeEnvelope } from "../../src/runtime/index.ts";
import { isToolOutcome, toolOutcome, type ToolControl, type ToolDefinition } from "../../src/tools/index.ts";

const finish: ToolDefinition = {
  name: "finish",
  description: "",
  parameters: { type: "object" },
  handler: () => toolOutcome({ a: 1 }, { control: "complete" }),
};
const asyncFinish: ToolDefinition = {
  name: "afinish",
  description: "",
  parameters: { type: "object" },
  handler: async () => toolOutcome("text", { control: "reject" }),
};

describe("tool layer hooks for the agent", () => {
  test("dispatch unwraps toolOutcome: the envelope result is the plain data", async () => {
    const rt = createRuntime({ builtins: false, tools: [finish, asyncFinish] });
    const env = await rt.dispatch('{"id":"c1","tool":"finish","arguments":{}}');
    expect(serializeEnvelope({ ...env, duration_ms: 0 })).toBe(
      '{"id":"c1","success":true,"tool":"finish","result":{"a":1},"error":null,"duration_ms":0}',
    );
    expect((await rt.dispatch('{"id":"c2","tool":"afinish","arguments":{}}')).result).toBe("text");
  });

  test("dispatchCall reports the control through hooks, sync and async", async () => {
    const rt = createRuntime({ builtins: false, tools: [finish, asyncFinish] });
    const seen: ToolControl[] = [];
    const hooks = { onControl: (c: ToolControl) => void seen.push(c) };
    await rt.dispatchCall({ id: "1", tool: "finish", arguments: {}, shape: "agentcore" }, undefined, hooks);
    await rt.dispatchCall({ id: "2", tool: "afinish", arguments: {}, shape: "agentcore" }, undefined, hooks);
    expect(seen).toEqual(["complete", "reject"]);
  });

  test("ctx.progress is a no-op outside the agent and forwards to hooks inside", async () => {
    const t: ToolDefinition = {
      name: "p",
      description: "",
      parameters: { type: "object" },
      handler: (_a, ctx) => {
        ctx.progress("step", 1);
        return "ok";
      },
    };
    const rt = createRuntime({ builtins: false, tools: [t] });
    expect((await rt.dispatch('{"tool":"p","arguments":{}}')).result).toBe("ok");
    const got: unknown[] = [];
    await rt.dispatchCall({ id: null, tool: "p", arguments: {}, shape: "agentcore" }, undefined, {
      onProgress: (m, d) => void got.push([m, d]),
    });
    expect(got).toEqual([["step", 1]]);
  });

  test("toolOutcome validates its control", () => {
    expect(() => toolOutcome(1, { control: "finish" as never })).toThrow(TypeError);
    expect(isToolOutcome(toolOutcome(1))).toBe(true);
    expect(toolOutcome(1).control).toBe("continue");
    expect(isToolOutcome({ data: 1, control: "complete" })).toBe(false);
  });
});
