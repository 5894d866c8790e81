/**
 * Connect the configured MCP servers and register their tools into a runtime.
 *
 * Start-up rules (all checked before the runtime is used):
 * - every server is connected in parallel, each within its
 *   `connect_timeout_ms`; one failure closes all of them and throws an
 *   {@link McpStartupError} naming the server;
 * - a tool whose final name is already registered (a built-in, or a tool of
 *   another server) is a start-up error naming both, with the fix (`prefix`
 *   or `exclude`);
 * - a tool whose name cannot be an agentcore name, or whose `inputSchema` our
 *   registry (ajv) rejects, is skipped with a warning, and reported in
 *   `skipped`: one odd tool does not take the whole server down.
 *
 * @example
 * ```ts
 * const rt = createRuntime();
 * const mcp = await attachMcpServers(rt, { everything: { command: "npx", args: ["-y", "@modelcontextprotocol/server-everything"] } });
 * try {
 *   await rt.dispatch('{"id":"1","tool":"everything__echo","arguments":{"message":"hi"}}');
 * } finally {
 *   await mcp.close();   // stops the servers; no process is left behind
 * }
 * ```
 *
 * @module
 */
import { AgentcoreError } from "../core/errors.ts";
import type { Runtime } from "../runtime/runtime.ts";
import type { Logger } from "../core/logger.ts";
import { ToolRegistrationError, ToolRegistry } from "../tools/registry.ts";
import type { AnyToolDefinition } from "../tools/definition.ts";
import type { McpServerConfig } from "./config.ts";
import { boundedText, McpToolHandler, type SkippedMcpTool } from "./client.ts";

/** A configured MCP server could not be used; the message names it. */
export class McpStartupError extends AgentcoreError {
  readonly code: string = "MCP_STARTUP_FAILED";
  override name = "McpStartupError";
}

/** The connected servers of one runtime. */
export interface McpToolset {
  /** One handler per server, in config order. */
  readonly handlers: readonly McpToolHandler[];
  /** Registered tool names, in order. */
  readonly tools: readonly string[];
  /** Tools offered by a server but not registered, with the reason. */
  readonly skipped: readonly SkippedMcpTool[];
  /** Close every server (idempotent). Resolves when all stdio servers have exited. */
  close(): Promise<void>;
}

/**
 * Connect every server in `servers`, register their tools into
 * `runtime.registry`, and return the handles. Throws {@link McpStartupError};
 * on a throw no server is left running.
 */
export async function attachMcpServers(
  runtime: Runtime,
  servers: Record<string, McpServerConfig>,
  options: { logger?: Logger; signal?: AbortSignal } = {},
): Promise<McpToolset> {
  const logger = options.logger ?? runtime.logger;
  const handlers = Object.entries(servers).map(([name, config]) => new McpToolHandler(name, config, { logger }));
  const closeAll = async () => {
    await Promise.all(handlers.map((h) => h.close()));
  };
  const registered: string[] = [];
  const skipped: SkippedMcpTool[] = [];
  // `signal` interrupts the start-up: the servers are stopped, nothing is registered
  const signal = options.signal;
  let onAbort: (() => void) | undefined;
  const interrupted = new Promise<never>((_, reject) => {
    onAbort = () => reject(new McpStartupError("the start-up of the MCP servers was interrupted"));
    if (signal?.aborted) onAbort();
    else signal?.addEventListener("abort", onAbort, { once: true });
  });
  interrupted.catch(() => {});
  try {
    const lists = await Promise.race([
      interrupted,
      Promise.all(
        handlers.map(async (h) => {
          try {
            return await h.toolDefinitions();
          } catch (e) {
            const message = boundedText(e instanceof Error ? e.message : String(e));
            const named = `mcp server "${h.server}"`;
            throw new McpStartupError(message.startsWith(named) ? message : `${named}: listing its tools failed: ${message}`);
          }
        }),
      ),
    ]);
    // Pass 1, on a scratch registry: schemas that ajv rejects are skipped,
    // and names are checked against the runtime's tools and each other.
    // Nothing is registered into the runtime unless every check passes.
    const scratch = new ToolRegistry();
    const origin = new Map<string, string>();
    for (const t of runtime.registry.list()) origin.set(t.name, `the already registered tool "${t.name}"`);
    const accepted: AnyToolDefinition[] = [];
    lists.forEach((list, i) => {
      const h = handlers[i]!;
      skipped.push(...list.skipped);
      for (const def of list.tools) {
        const prior = origin.get(def.name);
        if (prior !== undefined) {
          throw new McpStartupError(
            `mcp server "${h.server}": its tool "${def.name}" collides with ${prior}; ` +
              `set "prefix" (mcpServers.${h.server}.prefix) or "exclude" to avoid it`,
          );
        }
        try {
          scratch.register(def);
        } catch (e) {
          if (!(e instanceof ToolRegistrationError)) throw e;
          const reason = e.message;
          skipped.push({ server: h.server, tool: def.name, reason });
          logger.warn("mcp: tool skipped", { server: h.server, tool: def.name, reason });
          continue;
        }
        origin.set(def.name, `the tool "${def.name}" of mcp server "${h.server}"`);
        accepted.push(def);
      }
    });
    // Pass 2: register for real.
    for (const def of accepted) {
      runtime.registry.register(def);
      registered.push(def.name);
    }
  } catch (e) {
    await closeAll();
    throw signal?.aborted ? new McpStartupError("the start-up of the MCP servers was interrupted") : e;
  } finally {
    if (onAbort !== undefined) signal?.removeEventListener("abort", onAbort);
  }
  let closing: Promise<void> | undefined;
  return {
    handlers,
    tools: registered,
    skipped,
    close: () => (closing ??= closeAll()),
  };
}
