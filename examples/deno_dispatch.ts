/**
 * Use agentcore from Deno: validate streamed arguments, then dispatch the call.
 *
 *   deno run --allow-read --allow-env examples/deno_dispatch.ts
 *   deno task example
 */
import { createRuntime, JsonStreamValidator, parseToolCall, serializeEnvelope } from "../src/mod.ts";

// Arguments arrive from a model in small deltas; each is checked as it comes.
const deltas = ['{"pa', 'th":"exa', "mples/hel", 'lo.txt"}'];
const stream = new JsonStreamValidator();
for (const d of deltas) {
  const status = stream.push(d);
  if (status.state === "error") throw new Error(status.error.message);
}
console.log("streamed arguments:", stream.finish().state);
stream.dispose();

// The complete call, in the OpenAI chat shape, is normalised and dispatched.
const call = parseToolCall(
  JSON.stringify({
    id: "call_deno",
    type: "function",
    function: { name: "read_file", arguments: deltas.join("") },
  }),
);
if (!call.ok) throw new Error(call.error.message);

const runtime = createRuntime(); // file tools are rooted at the current directory
console.log(serializeEnvelope(await runtime.dispatchCall(call.call)));

// A call that tries to leave the root is refused with a structured error.
console.log(serializeEnvelope(await runtime.dispatch('{"id":"x","tool":"read_file","arguments":{"path":"../secret"}}')));
