/**
 * `agentcore mcp`: serve the runtime's registered tools (built-ins, workspace
 * tools and the tools of configured MCP servers) to an MCP client over stdio.
 *
 * stdout carries only JSON-RPC; logs go to stderr. Every call goes through
 * the runtime's middleware (schema validation, the config's policy, history).
 * There is no terminal to ask, so a `require_approval` rule is denied (the
 * caller sets that up when building the runtime).
 *
 * The command returns when the client closes our stdin, or on SIGINT/SIGTERM;
 * the caller then closes the MCP servers it connected.
 *
 * @module
 */
import type { Readable, Writable } from "node:stream";
import { StdioServerTransport } from "@modelcontextprotocol/server/stdio";
import type { Runtime } from "../runtime/runtime.ts";
import { createMcpServer } from "../mcp/server.ts";

/** Serve `rt` over stdio until the client disconnects. Resolves to the exit status (0). */
export async function cmdMcp(rt: Runtime, io: { stdin?: Readable; stdout?: Writable } = {}): Promise<number> {
  const server = createMcpServer(rt);
  const closed = new Promise<void>((resolve) => {
    server.onclose = () => resolve();
  });
  server.onerror = (e) => rt.logger.debug("mcp server: transport error", { error: e.message });
  const stop = () => void server.close();
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  try {
    await server.connect(new StdioServerTransport(io.stdin ?? process.stdin, io.stdout ?? process.stdout));
    rt.logger.info("mcp: serving tools over stdio", { tools: rt.registry.list().length });
    await closed;
  } finally {
    process.off("SIGINT", stop);
    process.off("SIGTERM", stop);
  }
  return 0;
}
