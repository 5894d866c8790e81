/**
 * One function from settings to a runtime, for every front end: the root
 * checked, the execution history, the workspace tools (with agentcore's own
 * files kept out of their reach), the limits, and the MCP servers the config
 * names. The policy differs by front end (the CLI's gate asks on the
 * terminal, the daemon parks approvals for HTTP clients), so it comes in as
 * middleware.
 *
 * @module
 */
import { statSync } from "node:fs";
import { createRuntime, type Runtime, type RuntimeOptions } from "../runtime/runtime.ts";
import { HistoryLog, historyMiddleware, type HistorySink } from "../runtime/history.ts";
import type { ToolMiddleware } from "../runtime/middleware/types.ts";
import type { AnyToolDefinition } from "../tools/definition.ts";
import { workspaceTools } from "../tools/workspace/index.ts";
import { ConfigError, type HostSettings } from "./settings.ts";
import { isPostgresStore } from "./store-spec.ts";
import type { OpenedStore } from "./store.ts";

/** The root is missing or not a folder, the history can't be opened: the settings can't be used as they are. */
export class SettingsUseError extends ConfigError {
  override name = "SettingsUseError";
}

/**
 * The runtime's options for `settings` (no policy): throws
 * {@link SettingsUseError} for a root that is not a folder or a history log
 * that can't be opened, and {@link ConfigError} for workspace tools that
 * can't be created (exec's program not found, bwrap required but absent).
 */
export function runtimeOptionsFrom(settings: HostSettings): RuntimeOptions {
  const root = settings.root;
  if (root !== undefined) {
    let isDir: boolean;
    try {
      isDir = statSync(root).isDirectory();
    } catch {
      throw new SettingsUseError(`root ${root}: no such folder`);
    }
    if (!isDir) throw new SettingsUseError(`root ${root}: not a folder`);
  }
  const middleware: ToolMiddleware[] = [];
  // The history goes first (outermost), so that it also records refused calls.
  if (settings.history !== undefined) {
    let log: HistoryLog;
    try {
      log = HistoryLog.open(settings.history);
    } catch (e) {
      throw new SettingsUseError((e as Error).message);
    }
    middleware.push(historyMiddleware(log));
  }
  let tools: AnyToolDefinition[] = [];
  if (settings.tools !== undefined) {
    try {
      // agentcore's own files stay out of the tools' reach when they lie inside the root
      const protect = [settings.configPath, settings.history].filter((p): p is string => p !== undefined);
      tools = workspaceTools(settings.tools, root ?? process.cwd(), { protect });
    } catch (e) {
      throw new ConfigError(`tools: ${(e as Error).message}`);
    }
  }
  return {
    root,
    tools,
    limits: { maxBytes: settings.maxBytes, maxDepth: settings.maxDepth },
    maxFileBytes: settings.maxFileBytes,
    defaultTimeoutMs: settings.defaultTimeoutMs,
    middleware,
  };
}

/** A runtime for `settings`, with `policy` (the front end's policy middleware) inside the history. */
export function runtimeFrom(settings: HostSettings, policy: readonly ToolMiddleware[] = []): Runtime {
  const options = runtimeOptionsFrom(settings);
  return createRuntime({ ...options, middleware: [...(options.middleware ?? []), ...policy] });
}

/**
 * The history table of the PostgreSQL store `spec` as a history sink. The
 * store is opened at the first record, so a command that dispatches nothing
 * never connects; `close` ends its connections.
 */
export function storeHistorySink(spec: string): { sink: HistorySink; close: () => Promise<void> } {
  let opened: Promise<OpenedStore> | null = null;
  const where = spec.replace(/(\/\/[^:/@]*):[^@]*@/, "$1:***@");
  return {
    sink: {
      path: where,
      append: async (record) => {
        // the store's code is loaded with it (the JSONL store and node:crypto stay out of a plain start)
        opened ??= import("./store.ts").then((m) => m.openStore(spec));
        await (await opened).history!.append(record);
      },
    },
    close: async () => {
      const s = opened === null ? null : await opened.catch(() => null);
      await s?.close();
    },
  };
}

/**
 * {@link runtimeFrom}, then, only when the settings name MCP servers, connect
 * them and register their tools (the MCP code is loaded only then; a signal
 * during the start-up stops them, see src/host/mcp.ts). Resolves to the
 * runtime and the function that closes the servers. A server that can't
 * start, or a tool name collision, is a {@link ConfigError}.
 */
export async function runtimeWithMcp(
  settings: HostSettings,
  policy: readonly ToolMiddleware[] = [],
): Promise<{ runtime: Runtime; close: () => Promise<void> }> {
  // No history file, and a PostgreSQL store: the calls' history goes to the store's table (outermost, as a file's would).
  const storeHistory =
    settings.history === undefined && settings.store !== undefined && isPostgresStore(settings.store)
      ? storeHistorySink(settings.store)
      : null;
  const runtime = runtimeFrom(settings, storeHistory !== null ? [historyMiddleware(storeHistory.sink), ...policy] : policy);
  const closeHistory = storeHistory?.close ?? (async () => {});
  if (settings.mcpServers === undefined) return { runtime, close: closeHistory };
  const [{ attachMcpServersForCommand }, { McpStartupError }] = await Promise.all([import("./mcp.ts"), import("../mcp/attach.ts")]);
  try {
    const closeMcp = await attachMcpServersForCommand(runtime, settings.mcpServers);
    return {
      runtime,
      close: async () => {
        await closeMcp();
        await closeHistory();
      },
    };
  } catch (e) {
    await closeHistory();
    if (e instanceof McpStartupError) throw new ConfigError(e.message);
    throw e;
  }
}
