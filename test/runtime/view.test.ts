/**
 * runtimeView (src/runtime/view.ts): a runtime narrowed to some tools, with
 * middleware after its own chain; the runtime itself is unchanged.
 */
import { expect, test } from "bun:test";
import { createRuntime } from "../../src/runtime/runtime.ts";
import { runtimeView } from "../../src/runtime/view.ts";
import { ruleBasedPolicy } from "../../src/runtime/middleware/policy.ts";
import type { ToolMiddleware } from "../../src/runtime/middleware/types.ts";

const write = {
  name: "write",
  description: "a side-effecting tool",
  parameters: { type: "object", properties: { n: { type: "integer" } }, required: ["n"], additionalProperties: false },
  effect: "side_effecting" as const,
  handler: (a: { n: number }) => ({ wrote: a.n }),
};

test("a view lists, finds and dispatches only its tools; others are UNKNOWN_TOOL; the runtime keeps all", async () => {
  const rt = createRuntime({ root: ".", tools: [write] });
  const view = runtimeView(rt, { tools: ["echo", "write", "not_registered"] });
  expect(view.registry.list().map((t) => t.name)).toEqual(["echo", "write"]);
  expect(view.registry.size).toBe(2);
  expect(view.registry.has("read_file")).toBe(false);
  expect(view.registry.get("read_file")).toBeUndefined();
  expect(rt.registry.list().map((t) => t.name)).toEqual(["echo", "read_file", "write"]);
  const refused = await view.dispatch('{"id":"1","tool":"read_file","arguments":{"path":"package.json"}}');
  expect(refused).toMatchObject({ success: false, error: { code: "UNKNOWN_TOOL" } });
  expect(await rt.dispatch('{"id":"1","tool":"read_file","arguments":{"path":"package.json"}}')).toMatchObject({ success: true });
  expect(await view.dispatchCall({ id: "2", tool: "write", arguments: { n: 3 }, shape: "openai_chat" })).toMatchObject({
    success: true,
    result: { wrote: 3 },
  });
  // a bad call text and bad arguments are answered as the runtime answers them
  expect(await view.dispatch("{not json")).toMatchObject({ success: false, error: { code: "JSON_PARSE" } });
  expect(await view.dispatchCall({ id: "3", tool: "write", arguments: { n: "x" }, shape: "openai_chat" })).toMatchObject({
    success: false,
    error: { code: "INVALID_ARGUMENTS" },
  });
  expect(() => view.registry.register(write)).toThrow(/cannot register/);
});

test("the view's middleware runs after the runtime's policy: a deny there is never reached by it", async () => {
  const seen: string[] = [];
  const deny = ruleBasedPolicy({ rules: [{ id: "no-write", action: "deny", tools: ["write"] }], defaultAction: "allow" });
  const rt = createRuntime({ root: ".", tools: [write], middleware: [deny] });
  const inner: ToolMiddleware = (ctx, next) => {
    seen.push(ctx.tool);
    return next(ctx);
  };
  const view = runtimeView(rt, { middleware: [inner] });
  expect(await view.dispatchCall({ id: "1", tool: "write", arguments: { n: 1 }, shape: "openai_chat" })).toMatchObject({
    success: false,
    error: { code: "DENIED", details: { rule_id: "no-write" } },
  });
  expect(await view.dispatchCall({ id: "2", tool: "echo", arguments: { a: 1 }, shape: "openai_chat" })).toMatchObject({ success: true });
  expect(seen).toEqual(["echo"]);
  // the runtime's own chain is unchanged
  expect(rt.middlewareChain.length).toBe(view.middlewareChain.length - 1);
});
