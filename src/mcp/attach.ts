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
import type { Runtime } from "../runtime/runtime.ts";
import type { Logger } from "../core/logger.ts";
import { ToolRegistrationError, ToolRegistry } from "../tools/registry.ts";
import type { AnyToolDefinition } from "../tools/definition.ts";
import type { McpServerConfig } from "./config.ts";
import { boundedText, McpToolHandler, type SkippedMcpTool } from "./client.ts";

/** A configured MCP server could not be used; the message names it. */
export class McpStartupError extends Error {
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
    const lists = await Promise.race([interrupted, Promise.all(
      handlers.map(async (h) => {
        try {
          return await h.toolDefinitions();
        } catch (e) {
          const message = boundedText(e instanceof Error ? e.message : String(e));
          const named = `mcp server "${h.server}"`;
          throw new McpStartupError(message.startsWith(named) ? message : `${named}: listing its tools failed: ${message}`);
        }
      }),
    )]);
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

const STOP_SIGNALS = [["SIGINT", 130], ["SIGTERM", 143], ["SIGHUP", 129]] as const;

/**
 * Whether a listener other than `ours` handles `sig` for the command. A
 * function listening to all of SIGINT, SIGTERM and SIGHUP is a clean-up
 * helper like this one (the workspace tools' child-process guard, which
 * itself stands aside when another listener exists), not a command's
 * handler: counting it would leave both standing aside and the signal
 * ignored. Commands handle one or two of them (agent and chat SIGINT, mcp
 * SIGINT and SIGTERM).
 */
function commandHandles(sig: NodeJS.Signals, ours: (...a: unknown[]) => void): boolean {
  const proc = globalThis.process;
  const everywhere = (l: (...a: unknown[]) => void) =>
    STOP_SIGNALS.every(([s]) => (proc.listeners(s) as unknown[]).includes(l));
  return (proc.listeners(sig) as ((...a: unknown[]) => void)[]).some((l) => l !== ours && !everywhere(l));
}

/**
 * For command-line programs: {@link attachMcpServers}, where SIGINT, SIGTERM
 * or SIGHUP during the start-up stops the servers started so far (a server
 * hanging at start-up would otherwise outlive us) and exits with 128 + the
 * signal number; then {@link stopOnSignals} for the rest of the command.
 * Resolves to the function that closes the servers.
 */
export async function attachMcpServersForCommand(
  runtime: Runtime,
  servers: Record<string, McpServerConfig>,
): Promise<() => Promise<void>> {
  const proc = globalThis.process;
  const ac = new AbortController();
  let status: number | undefined;
  const listeners = STOP_SIGNALS.map(([sig, code]) => {
    const listener = () => {
      status ??= code;
      ac.abort();
    };
    proc.on(sig, listener);
    return [sig, listener] as const;
  });
  let toolset: McpToolset;
  try {
    toolset = await attachMcpServers(runtime, servers, { signal: ac.signal });
  } catch (e) {
    if (status !== undefined) proc.exit(status); // the servers are stopped already
    throw e;
  } finally {
    for (const [sig, listener] of listeners) proc.off(sig, listener);
  }
  if (status !== undefined) {
    // the signal came as the start-up finished
    await toolset.close();
    proc.exit(status);
  }
  const unhook = stopOnSignals(toolset);
  return () => toolset.close().finally(unhook);
}

/**
 * For command-line programs: on SIGINT, SIGTERM or SIGHUP, when no other
 * listener handles that signal, close `toolset` (stopping its servers) and
 * exit with 128 + the signal number. Without this, a signal would end the
 * program at once and leave servers that ignore the end of their stdin
 * running. A command that handles a signal itself (the agent's SIGINT,
 * `agentcore mcp`) keeps doing so, and closes the toolset on its way out.
 * Returns a function that removes the listeners.
 */
export function stopOnSignals(toolset: McpToolset): () => void {
  const proc = globalThis.process;
  const listeners = STOP_SIGNALS.map(([sig, status]) => {
    const listener = () => {
      if (commandHandles(sig, listener)) return; // the command decides (and closes the toolset on its way out)
      void toolset.close().finally(() => proc.exit(status));
    };
    proc.on(sig, listener);
    return [sig, listener] as const;
  });
  return () => {
    for (const [sig, listener] of listeners) proc.off(sig, listener);
  };
}
