/**
 * Dispatch tool calls from a Deno script with the agentcore library.
 *
 *   deno run --allow-read --allow-env examples/deno_dispatch.ts
 */
import { createRuntime, parseStrict, serializeEnvelope, type ToolDefinition } from "../src/mod.ts";

// A custom tool next to the built-ins: its arguments are checked against the schema first.
const add: ToolDefinition<{ a: number; b: number }> = {
  name: "add",
  description: "Add two numbers",
  effect: "read_only",
  parameters: {
    type: "object",
    properties: { a: { type: "number" }, b: { type: "number" } },
    required: ["a", "b"],
    additionalProperties: false,
  },
  handler: ({ a, b }) => ({ sum: a + b }),
};

const runtime = createRuntime({ tools: [add as ToolDefinition] });

for (const call of [
  '{"id":"d1","tool":"add","arguments":{"a":2,"b":40}}',
  '{"id":"d2","type":"function","function":{"name":"echo","arguments":"{\\"via\\":\\"deno\\"}"}}',
  '{"id":"d3","tool":"add","arguments":{"a":1}}',
]) {
  console.log(serializeEnvelope(await runtime.dispatch(call)));
}

// The strict parser on its own: duplicate keys are refused, with a position.
console.log(JSON.stringify(parseStrict('{"a":1,"\\u0061":2}')));
