/**
 * MCP servers for a command-line program or the daemon: their start-up can
 * be interrupted by a signal, and once attached, closing them is a held
 * process clean-up (`src/host/process.ts` runs it when a signal no command
 * handles ends the process). The MCP layer itself (`src/mcp/attach.ts`)
 * never touches the process.
 *
 * @module
 */
import { holdCleanup } from "../core/cleanup.ts";
import type { Runtime } from "../runtime/runtime.ts";
import { attachMcpServers, type McpToolset } from "../mcp/attach.ts";
import type { McpServerConfig } from "../mcp/config.ts";
import { exitProcess, onEndingSignals } from "./process.ts";

/**
 * {@link attachMcpServers}, where SIGINT, SIGTERM or SIGHUP during the
 * start-up stops the servers started so far (a server hanging at start-up
 * would otherwise outlive us) and exits with 128 + the signal number.
 * Resolves to the toolset; throws what {@link attachMcpServers} throws.
 */
export async function attachMcpServersInterruptibly(runtime: Runtime, servers: Record<string, McpServerConfig>): Promise<McpToolset> {
  const ac = new AbortController();
  let status: number | undefined;
  const stopListening = onEndingSignals((_signal, code) => {
    status ??= code;
    ac.abort();
  });
  let toolset: McpToolset;
  try {
    toolset = await attachMcpServers(runtime, servers, { signal: ac.signal });
  } catch (e) {
    if (status !== undefined) exitProcess(status); // the servers are stopped already
    throw e;
  } finally {
    stopListening();
  }
  if (status !== undefined) {
    // the signal came as the start-up finished
    await toolset.close();
    exitProcess(status);
  }
  return toolset;
}

/**
 * For command-line programs: {@link attachMcpServersInterruptibly}, then,
 * for the rest of the command, closing the servers is held as a process
 * clean-up: on SIGINT, SIGTERM or SIGHUP that no command handles, the
 * servers are stopped before agentcore exits with 128 + the signal number
 * (without this, a signal would end the program at once and leave servers
 * that ignore the end of their stdin running). A command that handles a
 * signal itself (the agent's SIGINT, `agentcore mcp`) keeps doing so, and
 * closes the servers on its way out. Resolves to the function that closes
 * them.
 */
export async function attachMcpServersForCommand(runtime: Runtime, servers: Record<string, McpServerConfig>): Promise<() => Promise<void>> {
  const toolset = await attachMcpServersInterruptibly(runtime, servers);
  const release = holdCleanup({ signal: () => toolset.close() });
  return () => toolset.close().finally(release);
}
