/**
 * The MCP server: exposes a {@link Runtime}'s registered tools to MCP clients.
 *
 * `tools/list` is read from `runtime.registry` at each request (so tools
 * registered later, e.g. from configured MCP servers, are listed too), and
 * every `tools/call` is re-serialised and goes through `runtime.dispatch`, so
 * the strict parser's limits (size, depth, forbidden keys), schema
 * validation, policy, approval, history and timeouts apply exactly as for a
 * call from the CLI. (One exception: a `__proto__` key at the top level of
 * `arguments` is dropped by the SDK's request parsing before this code sees
 * it, so it is lost rather than refused; one deeper down is refused.)
 *
 * Envelope → `CallToolResult`:
 * - success: one text block holding the JSON of `result`, plus
 *   `structuredContent` when `result` is a plain object;
 * - failure (unknown tool, invalid arguments, DENIED, TIMEOUT, …):
 *   `isError: true` with the whole compact envelope as one text block, and
 *   the envelope's `error` object as `structuredContent`.
 *
 * The MCP request's cancellation (`notifications/cancelled`, or the HTTP
 * client going away) aborts the dispatched call's signal.
 *
 * @example Serving over stdio (what `agentcore mcp` does)
 * ```ts
 * import { StdioServerTransport } from "@modelcontextprotocol/server/stdio";
 * const server = createMcpServer(createRuntime());
 * await server.connect(new StdioServerTransport());
 * ```
 *
 * @example Mounting over Streamable HTTP (Hono on Bun or Deno)
 * ```ts
 * import { createMcpHandler } from "@modelcontextprotocol/server";
 * // One fresh server per serving unit; all of them share the same runtime.
 * const mcp = createMcpHandler(() => createMcpServer(runtime), { responseMode: "json" });
 * app.all("/mcp", (c) => mcp.fetch(c.req.raw)); // put auth + Host/Origin checks in front
 * // on shutdown: await mcp.close();
 * ```
 * `createMcpHandler` serves the 2026-07-28 revision and, by default, the
 * 2025-era Streamable HTTP protocol statelessly (a fresh server per request),
 * which the v2 `Client` and older clients both speak.
 *
 * @module
 */
import { Server, type CallToolResult, type Tool } from "@modelcontextprotocol/server";
import type { Runtime } from "../runtime/runtime.ts";
import type { Envelope } from "../core/envelope.ts";
import { failureEnvelope, serializeEnvelope } from "../runtime/envelope_io.ts";
import { VERSION } from "../core/version.ts";

/** Options of {@link createMcpServer}. */
export interface McpServerOptions {
  /** The server name announced to clients. Default `"agentcore"`. */
  name?: string;
  /** The version announced to clients. Default agentcore's version. */
  version?: string;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The MCP tool list entry for one registered tool. */
function toolEntry(t: { name: string; description: string; parameters: Record<string, unknown>; effect: string }): Tool {
  // MCP requires an object schema at the root; ours always describe an
  // arguments object, but a schema may omit `type`.
  const inputSchema = (t.parameters.type === undefined ? { type: "object", ...t.parameters } : t.parameters) as Tool["inputSchema"];
  return {
    name: t.name,
    description: t.description,
    inputSchema,
    annotations: { readOnlyHint: t.effect === "read_only", destructiveHint: t.effect !== "read_only" },
  };
}

/** Map one envelope to an MCP `CallToolResult` (see the module doc). */
export function envelopeToCallToolResult(env: Envelope): CallToolResult {
  if (env.success) {
    const text = env.result === undefined ? "null" : JSON.stringify(env.result);
    const out: CallToolResult = { content: [{ type: "text", text }] };
    if (isPlainObject(env.result)) out.structuredContent = env.result;
    return out;
  }
  return {
    isError: true,
    content: [{ type: "text", text: serializeEnvelope(env) }],
    structuredContent: { error: env.error },
  };
}

/**
 * Create a low-level MCP SDK `Server` (not yet connected to a transport)
 * whose `tools/list` lists `runtime.registry` and whose `tools/call` runs
 * `runtime.dispatch` (strict limits, validation and policy middleware included).
 * Never throws for a call: every failure is an `isError` result. Each call
 * returns a new server object; connect it to one transport.
 */
export function createMcpServer(runtime: Runtime, opts: McpServerOptions = {}): Server {
  const server = new Server({ name: opts.name ?? "agentcore", version: opts.version ?? VERSION }, { capabilities: { tools: {} } });
  server.setRequestHandler("tools/list", () => ({
    tools: runtime.registry.list().map(toolEntry),
  }));
  server.setRequestHandler("tools/call", async (request, ctx) => {
    const params = request.params;
    const id = `mcp-${String(ctx.mcpReq.id)}`;
    const args = isPlainObject(params.arguments) ? params.arguments : {};
    // Re-serialised and dispatched as bytes, so that the strict parser's
    // limits (input size, depth, forbidden keys) apply as to any other call.
    let input: string;
    try {
      input = JSON.stringify({ id, tool: params.name, arguments: args });
    } catch (e) {
      const env = failureEnvelope(
        id,
        params.name,
        "INVALID_CALL",
        `arguments cannot be serialised: ${e instanceof Error ? e.message : String(e)}`,
        {},
        performance.now(),
      );
      return envelopeToCallToolResult(env);
    }
    const env = await runtime.dispatch(input, ctx.mcpReq.signal);
    return server.projectCallToolResult(envelopeToCallToolResult(env), undefined);
  });
  return server;
}
