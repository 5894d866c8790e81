/**
 * Use an MCP server's tools from a script: connect, dispatch, close.
 * The server here is the reference "everything" server from npm (a dev
 * dependency), started over stdio; no network is used.
 *
 *   bun examples/mcp_client.ts
 *   deno run --allow-read --allow-env --allow-run --allow-sys examples/mcp_client.ts
 */
import { createRuntime, serializeEnvelope } from "../src/mod.ts";
import { attachMcpServers } from "../src/entries/mcp.ts";

const runtime = createRuntime();
const mcp = await attachMcpServers(runtime, {
  everything: {
    command: "node",
    args: ["node_modules/@modelcontextprotocol/server-everything/dist/index.js", "stdio"],
    include: ["echo", "get-sum", "get-tiny-image"],
    tools: { "get-sum": { effect: "read_only" } },
    timeout_ms: 10_000,
  },
});
try {
  console.log("MCP tools:", mcp.tools.join(", "));
  const calls = [
    { id: "1", tool: "everything__get-sum", arguments: { a: 20, b: 22 } },
    { id: "2", tool: "everything__echo", arguments: { message: "hello over MCP" } },
    { id: "3", tool: "everything__get-sum", arguments: { a: "twenty" } }, // refused by schema validation
  ];
  for (const c of calls) console.log(serializeEnvelope(await runtime.dispatch(JSON.stringify(c))));
} finally {
  await mcp.close(); // stops the server process
}
