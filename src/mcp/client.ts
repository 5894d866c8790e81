/**
 * The MCP client: one {@link McpToolHandler} per configured MCP server. It
 * connects (stdio, or Streamable HTTP falling back to SSE), lists the
 * server's tools and turns them into agentcore tool definitions whose
 * handlers call the server.
 *
 * Guarantees:
 * - `connect()` either succeeds within `connect_timeout_ms` or throws an
 *   {@link McpConnectError} naming the server, and leaves no process behind;
 * - a call's `AbortSignal` (the runtime's timeout or the caller's cancel)
 *   becomes an MCP `notifications/cancelled`; the SDK request also has its own
 *   timeout (`timeout_ms`);
 * - a call in flight when the server exits, drops the connection or breaks the
 *   protocol fails with `UNAVAILABLE` and is never replayed; the next call
 *   reconnects, waiting a bounded backoff (100 ms doubling up to 5 s) after
 *   consecutive failed attempts;
 * - results are mapped by {@link mapCallToolResult} and capped at
 *   `max_result_bytes`; `isError: true` becomes `TOOL_ERROR`;
 * - `close()` resolves once the connection is closed and, for stdio, the
 *   server process has exited.
 *
 * @example
 * ```ts
 * const fs = new McpToolHandler("fs", { command: "npx", args: ["-y", "@modelcontextprotocol/server-filesystem", "/tmp/x"] });
 * await fs.connect();
 * const { tools } = await fs.toolDefinitions();   // fs__read_file, fs__list_directory, …
 * for (const t of tools) runtime.registry.register(t);
 * // …
 * await fs.close();
 * ```
 *
 * @module
 */
import { AgentcoreError } from "../core/errors.ts";
import {
  Client,
  SdkError,
  SdkErrorCode,
  SdkHttpError,
  ProtocolError,
  SSEClientTransport,
  StreamableHTTPClientTransport,
  type CallToolResult,
  type Tool,
  type Transport,
} from "@modelcontextprotocol/client";
import { ToolError, TOOL_NAME_PATTERN, type AnyToolDefinition, type ToolEffect } from "../tools/definition.ts";
import type { Logger } from "../core/logger.ts";
import { createLogger } from "../core/logger.ts";
import { VERSION } from "../core/version.ts";
import { tracingFetch } from "../runtime/tracing.ts";
import { MCP_DEFAULTS, MCP_MAX_TIMEOUT_MS, type McpServerConfig } from "./config.ts";
import { capResult, mapCallToolResult, type McpCallResult } from "./result.ts";
import { describeExit, McpNotConnectedError, McpProtocolError, StdioTransport } from "./stdio.ts";

/** How many of a server's last stderr lines our messages quote, and in at most how many characters. */
const QUOTED_STDERR_LINES = 10;
const QUOTED_STDERR_CHARS = 1000;

/** "last stderr lines: a | b", or "it wrote nothing to stderr": a stdio server's last words, bounded and escaped. */
export function stderrReport(t: StdioTransport): string {
  const lines = t.stderrLines(QUOTED_STDERR_LINES);
  if (lines.length === 0) return "it wrote nothing to stderr";
  let text = lines.join(" | ");
  if (text.length > QUOTED_STDERR_CHARS) text = `…${text.slice(-QUOTED_STDERR_CHARS)}`;
  return `last stderr lines: ${text}`;
}

/** The server could not be started or did not complete the MCP handshake in time. */
export class McpConnectError extends AgentcoreError {
  readonly code: string = "MCP_CONNECT_FAILED";
  override name = "McpConnectError";
  readonly server: string;
  constructor(server: string, message: string) {
    super(message);
    this.server = server;
  }
}

/** A tool the server listed but agentcore did not take, with the reason. */
export interface SkippedMcpTool {
  server: string;
  tool: string;
  reason: string;
}

export interface McpToolHandlerOptions {
  /** Where warnings (skipped tools, reconnects, protocol violations) go. Default: a stderr logger. */
  logger?: Logger;
}

/** How the handler is connected right now. */
export type McpTransportKind = "stdio" | "streamable_http" | "sse";

const MAX_DESCRIPTION = 2048;
/** More tools than this from one server are skipped (a model cannot use thousands anyway). */
export const MAX_TOOLS_PER_SERVER = 512;
const BACKOFF_BASE_MS = 100;
const BACKOFF_MAX_MS = 5000;

/** Longest error text taken from a server (an HTTP error body, a JSON-RPC error message) into our messages. */
const MAX_ERROR_TEXT = 1000;

/** `text` cut to {@link MAX_ERROR_TEXT} characters, saying how much was left out. */
export function boundedText(text: string): string {
  return text.length <= MAX_ERROR_TEXT ? text : `${text.slice(0, MAX_ERROR_TEXT)}…[${text.length - MAX_ERROR_TEXT} more characters]`;
}

/** An error's message, bounded: much of it can come from the (untrusted) server. */
function errorText(e: unknown): string {
  if (e instanceof SdkHttpError && !e.message.includes(String(e.status))) return `${boundedText(e.message)} (HTTP ${e.status})`;
  return boundedText(e instanceof Error ? e.message : String(e));
}

function sleep(ms: number): Promise<void> {
  return ms <= 0 ? Promise.resolve() : new Promise((r) => setTimeout(r, ms));
}

/** Reject with `onTimeout()` after `ms` unless `p` settles first (the timer is always cleared). */
function withTimeout<T>(p: Promise<T>, ms: number, onTimeout: () => Error): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const t = new Promise<never>((_, rej) => {
    timer = setTimeout(() => rej(onTimeout()), ms);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

/** Whether a Streamable HTTP connect failed with a 4xx status (then we try SSE). */
function isHttp4xx(e: unknown): boolean {
  if (e instanceof SdkHttpError) return e.status >= 400 && e.status < 500;
  const status = (e as { status?: unknown; code?: unknown } | null)?.status ?? (e as { code?: unknown } | null)?.code;
  if (typeof status === "number") return status >= 400 && status < 500;
  return /\bHTTP 4\d\d\b|\(4\d\d\)|status(?: code)?:? 4\d\d/i.test(errorText(e));
}

/** One MCP server as a source of agentcore tools. See the module documentation. */
export class McpToolHandler {
  /** The server's key in `mcpServers`. */
  readonly server: string;
  readonly config: Readonly<McpServerConfig>;
  readonly timeoutMs: number;
  readonly connectTimeoutMs: number;
  readonly maxResultBytes: number;
  readonly #logger: Logger;

  #client: Client | undefined;
  #transport: Transport | undefined;
  #kind: McpTransportKind | undefined;
  #connecting: Promise<Client> | undefined;
  /** The transport of the connection attempt in progress (close() ends it rather than wait for connect_timeout_ms). */
  #pending: Transport | undefined;
  #failures = 0;
  #closed = false;
  /** Why the last connection ended, when we know (a protocol violation, the process exiting). */
  #lastLoss: string | undefined;
  #connections = 0;

  constructor(server: string, config: McpServerConfig, options: McpToolHandlerOptions = {}) {
    if ((config.command === undefined) === (config.url === undefined)) {
      throw new TypeError(`mcp server "${server}": needs exactly one of command or url`);
    }
    this.server = server;
    this.config = Object.freeze({ ...config });
    // A timer cannot wait longer than MCP_MAX_TIMEOUT_MS (a longer one fires at once).
    this.timeoutMs = Math.min(config.timeout_ms ?? MCP_DEFAULTS.timeoutMs, MCP_MAX_TIMEOUT_MS);
    this.connectTimeoutMs = Math.min(config.connect_timeout_ms ?? MCP_DEFAULTS.connectTimeoutMs, MCP_MAX_TIMEOUT_MS);
    this.maxResultBytes = Math.max(1024, config.max_result_bytes ?? MCP_DEFAULTS.maxResultBytes);
    this.#logger = options.logger ?? createLogger();
  }

  /** The transport in use (`undefined` while disconnected). */
  get transportKind(): McpTransportKind | undefined {
    return this.#client === undefined ? undefined : this.#kind;
  }

  /** The stdio server's pid while connected (for diagnostics and tests). */
  get pid(): number | undefined {
    return this.#transport instanceof StdioTransport ? this.#transport.pid : undefined;
  }

  /** How many connections were made so far (1 after `connect()`, +1 per reconnect). */
  get connections(): number {
    return this.#connections;
  }

  /** Connect now (start-up). Throws {@link McpConnectError}. */
  async connect(): Promise<void> {
    await this.#ensure();
  }

  /** The server's tools (all pages). */
  async listTools(): Promise<Tool[]> {
    const client = await this.#ensure();
    const transport = this.#transport;
    const r = await withTimeout(
      client.listTools(undefined, { timeout: this.timeoutMs }),
      Math.min(this.timeoutMs + 100, MCP_MAX_TIMEOUT_MS),
      () => new McpConnectError(this.server, `mcp server "${this.server}": tools/list timed out after ${this.timeoutMs} ms`),
    ).catch(async (e) => {
      // A server that exits while listing its tools: say how it ended and what it said.
      if (transport instanceof StdioTransport && !(e instanceof McpConnectError)) {
        await transport.close().catch(() => {});
        if (transport.exit?.unprompted === true)
          throw new McpConnectError(
            this.server,
            `mcp server "${this.server}" exited with ${describeExit(transport.exit)} while listing its tools; ${stderrReport(transport)}`,
          );
      }
      throw e;
    });
    return r.tools;
  }

  /**
   * The server's tools as agentcore tool definitions: filtered by
   * `include`/`exclude`, named `prefix__tool` (prefix defaults to the server
   * key; `""` keeps the server's names), with the configured effects and
   * `timeout_ms`. Tools whose name cannot be an agentcore tool name are
   * returned in `skipped` (and logged). Schemas are checked later, when the
   * registry compiles them.
   */
  async toolDefinitions(): Promise<{ tools: AnyToolDefinition[]; skipped: SkippedMcpTool[] }> {
    const listed = await this.listTools();
    const c = this.config;
    const prefix = c.prefix ?? this.server;
    const names = new Set(listed.map((t) => t.name));
    for (const n of [...(c.include ?? []), ...(c.exclude ?? []), ...Object.keys(c.tools ?? {})]) {
      if (!names.has(n)) this.#logger.warn("mcp: a configured tool is not offered by the server", { server: this.server, tool: n });
    }
    const tools: AnyToolDefinition[] = [];
    const skipped: SkippedMcpTool[] = [];
    for (const t of listed) {
      if (c.include !== undefined && !c.include.includes(t.name)) continue;
      if (c.exclude !== undefined && c.exclude.includes(t.name)) continue;
      if (tools.length >= MAX_TOOLS_PER_SERVER) {
        const reason = `the server offers more than ${MAX_TOOLS_PER_SERVER} tools; use "include" to choose`;
        skipped.push({ server: this.server, tool: t.name, reason });
        continue;
      }
      const name = prefix === "" ? t.name : `${prefix}__${t.name}`;
      if (!TOOL_NAME_PATTERN.test(name)) {
        const reason = `the name "${name}" is not a valid agentcore tool name (^[A-Za-z0-9_-]{1,64}$)`;
        skipped.push({ server: this.server, tool: t.name, reason });
        this.#logger.warn("mcp: tool skipped", { server: this.server, tool: t.name, reason });
        continue;
      }
      const override = c.tools !== undefined && Object.hasOwn(c.tools, t.name) ? c.tools[t.name] : undefined;
      const effect: ToolEffect = override?.effect ?? c.effect ?? "side_effecting";
      const description = (t.description ?? t.title ?? "").slice(0, MAX_DESCRIPTION);
      const remote = t.name;
      tools.push({
        name,
        description,
        parameters: structuredClone(t.inputSchema) as Record<string, unknown>,
        effect,
        timeoutMs: this.timeoutMs,
        handler: (args: Record<string, unknown>, ctx) => this.callTool(remote, args, ctx.signal, (m, d) => ctx.progress(m, d)),
      } as AnyToolDefinition);
    }
    return { tools, skipped };
  }

  /**
   * Call the server's tool `tool` (its own name, without prefix). Resolves to
   * the mapped, capped result; throws a {@link ToolError} (`UNAVAILABLE`,
   * `TIMEOUT`, `CANCELLED`, `TOOL_ERROR`) otherwise. `onProgress` receives
   * the server's `notifications/progress` for this call (as tool progress:
   * the server's message, else "progress/total", and `{progress, total}`).
   */
  async callTool(
    tool: string,
    args: Record<string, unknown>,
    signal?: AbortSignal,
    onProgress?: (message: string, data: { progress: number; total?: number }) => void,
  ): Promise<McpCallResult> {
    if (signal?.aborted) throw new ToolError("CANCELLED", "the call was cancelled before it was sent");
    let client: Client;
    try {
      client = await this.#ensure(signal);
    } catch (e) {
      if (e instanceof ToolError) throw e;
      // McpConnectError messages already name the server and say what failed
      const message = e instanceof McpConnectError ? e.message : `mcp server "${this.server}" is not available: ${errorText(e)}`;
      throw new ToolError("UNAVAILABLE", message, { server: this.server, tool });
    }
    let r: CallToolResult;
    try {
      const onprogress =
        onProgress === undefined
          ? undefined
          : (p: { progress: number; total?: number; message?: string }) => {
              const data = p.total === undefined ? { progress: p.progress } : { progress: p.progress, total: p.total };
              const message =
                typeof p.message === "string" && p.message !== ""
                  ? p.message.slice(0, 500)
                  : `${p.progress}${p.total === undefined ? "" : `/${p.total}`}`;
              onProgress(message, data);
            };
      const call = (c: Client) =>
        c.callTool({ name: tool, arguments: args }, { signal, timeout: this.timeoutMs, onprogress }) as Promise<CallToolResult>;
      try {
        r = await call(client);
      } catch (e) {
        if (!(e instanceof McpNotConnectedError) || this.#closed) throw e;
        // The server died before the request was written (its exit not yet
        // noticed): nothing reached it, so this is not a replay. Connect afresh
        // and send it once.
        this.#drop(client, this.#processLoss(this.#transport));
        try {
          client = await this.#ensure(signal);
        } catch (e2) {
          if (e2 instanceof ToolError) throw e2;
          throw new ToolError(
            "UNAVAILABLE",
            e2 instanceof McpConnectError ? e2.message : `mcp server "${this.server}" is not available: ${errorText(e2)}`,
            { server: this.server, tool },
          );
        }
        r = await call(client);
      }
    } catch (e) {
      if (e instanceof ToolError) throw e;
      throw this.#callError(e, tool, signal, client);
    }
    const mapped = capResult(mapCallToolResult(r), this.maxResultBytes);
    if (r.isError === true) {
      const first = mapped.content.find((b) => b.type === "text" && "text" in b) as { text: string } | undefined;
      const why = first?.text.slice(0, 500) ?? "(no text)";
      throw new ToolError("TOOL_ERROR", `mcp server "${this.server}", tool "${tool}" reported an error: ${why}`, {
        server: this.server,
        tool,
        result: capResult(mapped, Math.min(this.maxResultBytes, 16384)),
      });
    }
    return mapped;
  }

  #callError(e: unknown, tool: string, signal: AbortSignal | undefined, client: Client): ToolError {
    const details = { server: this.server, tool };
    if (signal?.aborted) {
      const timedOut = (signal.reason as { name?: string } | undefined)?.name === "TimeoutError";
      return timedOut
        ? new ToolError("TIMEOUT", `mcp server "${this.server}", tool "${tool}": timed out (cancellation sent)`, details)
        : new ToolError("CANCELLED", `mcp server "${this.server}", tool "${tool}": cancelled (cancellation sent)`, details);
    }
    if (this.#closed) {
      // close() ended the connection under this call (the command is shutting down)
      return new ToolError(
        "CANCELLED",
        `mcp server "${this.server}", tool "${tool}": cancelled because the connection was closed (shutting down)`,
        details,
      );
    }
    if (e instanceof SdkError && e.code === SdkErrorCode.RequestTimeout) {
      return new ToolError(
        "TIMEOUT",
        `mcp server "${this.server}", tool "${tool}": no answer within ${this.timeoutMs} ms (cancellation sent)`,
        { ...details, timeout_ms: this.timeoutMs },
      );
    }
    if (
      e instanceof SdkError &&
      (e.code === SdkErrorCode.ConnectionClosed || e.code === SdkErrorCode.NotConnected || e.code === SdkErrorCode.SendFailed)
    ) {
      const why = this.#lastLoss ?? "the connection closed";
      return new ToolError(
        "UNAVAILABLE",
        `mcp server "${this.server}" was lost during the call (${why}); the call was not retried`,
        details,
      );
    }
    if (e instanceof ProtocolError) {
      return new ToolError("TOOL_ERROR", `mcp server "${this.server}", tool "${tool}": ${errorText(e)}`, {
        ...details,
        mcp_error_code: e.code,
      });
    }
    if (e instanceof SdkError && e.code === SdkErrorCode.InvalidResult) {
      return new ToolError("TOOL_ERROR", `mcp server "${this.server}", tool "${tool}": ${errorText(e)}`, details);
    }
    if (e instanceof McpNotConnectedError) {
      this.#drop(client, this.#processLoss(this.#transport));
      return new ToolError("UNAVAILABLE", `mcp server "${this.server}" is not running (it exited); the next call reconnects`, details);
    }
    if (this.#kind !== "stdio" && this.#client === client) {
      // Over HTTP nothing tells us a connection ended: a refused or failed
      // request, or an unknown session after the server restarted, is the
      // signal. Drop this client so that the next call connects afresh.
      this.#drop(client, `the request failed: ${errorText(e)}`);
    }
    if (this.#client === undefined) {
      const why = this.#lastLoss ?? errorText(e);
      return new ToolError(
        "UNAVAILABLE",
        `mcp server "${this.server}" was lost during the call (${why}); the call was not retried`,
        details,
      );
    }
    return new ToolError("TOOL_ERROR", `mcp server "${this.server}", tool "${tool}": ${errorText(e)}`, details);
  }

  /** Forget `client` (if still current) and close it in the background. */
  #drop(client: Client, reason: string): void {
    if (this.#client !== client) return;
    this.#client = undefined;
    this.#transport = undefined;
    this.#lastLoss = reason;
    this.#logger.warn("mcp: connection lost; the next call reconnects", { server: this.server, reason });
    void client.close().catch(() => {});
  }

  /** The connected client, connecting (or reconnecting after a backoff) first when needed. */
  #ensure(signal?: AbortSignal): Promise<Client> {
    if (this.#closed) return Promise.reject(new McpConnectError(this.server, `mcp server "${this.server}" is closed`));
    if (this.#client !== undefined) return Promise.resolve(this.#client);
    if (this.#connecting === undefined) {
      const delay = this.#failures === 0 ? 0 : Math.min(BACKOFF_BASE_MS * 2 ** (this.#failures - 1), BACKOFF_MAX_MS);
      const attempt = (async () => {
        await sleep(delay);
        if (this.#closed) throw new McpConnectError(this.server, `mcp server "${this.server}" is closed`);
        return this.#open();
      })();
      this.#connecting = attempt.then(
        (client) => {
          this.#connecting = undefined;
          this.#failures = 0;
          return client;
        },
        (e) => {
          this.#connecting = undefined;
          this.#failures++;
          throw e;
        },
      );
    }
    const p = this.#connecting;
    if (signal === undefined) return p;
    return new Promise<Client>((res, rej) => {
      const onAbort = () => rej(new ToolError("CANCELLED", `the call was cancelled while connecting to mcp server "${this.server}"`));
      signal.addEventListener("abort", onAbort, { once: true });
      p.then(res, rej).finally(() => signal.removeEventListener("abort", onAbort));
    });
  }

  /** One connection attempt, bounded by `connect_timeout_ms`. */
  async #open(): Promise<Client> {
    const c = this.config;
    const ms = this.connectTimeoutMs;
    const attempt = async (kind: McpTransportKind): Promise<Client> => {
      if (this.#closed) throw new McpConnectError(this.server, `mcp server "${this.server}" is closed`);
      const transport = this.#makeTransport(kind);
      this.#pending = transport;
      const client = new Client({ name: "agentcore", version: VERSION }, { capabilities: {} });
      client.onerror = (e) => {
        if (e instanceof McpProtocolError) {
          this.#lastLoss = `protocol violation: ${e.message}`;
          this.#logger.warn("mcp: protocol violation, closing the connection", { server: this.server, error: e.message });
        } else {
          this.#logger.debug("mcp: transport error", { server: this.server, error: e.message });
        }
      };
      client.onclose = () => {
        if (this.#client === client) {
          this.#client = undefined;
          this.#transport = undefined;
          this.#lastLoss ??= transport instanceof StdioTransport ? this.#processLoss(transport) : "the connection closed";
          if (!this.#closed)
            this.#logger.warn("mcp: connection lost; the next call reconnects", { server: this.server, reason: this.#lastLoss });
        }
      };
      try {
        await withTimeout(
          client.connect(transport, { timeout: ms }),
          ms,
          () =>
            new McpConnectError(this.server, `mcp server "${this.server}": no answer to initialize within ${ms} ms (connect_timeout_ms)`),
        );
      } catch (e) {
        await client.close().catch(() => {});
        await transport.close().catch(() => {});
        if (this.#closed) throw new McpConnectError(this.server, `mcp server "${this.server}" was closed while connecting`);
        throw e;
      } finally {
        if (this.#pending === transport) this.#pending = undefined;
      }
      this.#lastLoss = undefined;
      this.#client = client;
      this.#transport = transport;
      this.#kind = kind;
      this.#connections++;
      if (this.#closed) {
        // close() ran while we were connecting
        this.#client = undefined;
        await client.close().catch(() => {});
        throw new McpConnectError(this.server, `mcp server "${this.server}" is closed`);
      }
      return client;
    };
    try {
      if (c.command !== undefined) return await attempt("stdio");
      if (c.type === "sse") return await attempt("sse");
      try {
        return await attempt("streamable_http");
      } catch (e) {
        if (!isHttp4xx(e)) throw e;
        this.#logger.info("mcp: Streamable HTTP refused with a 4xx; trying the SSE transport", {
          server: this.server,
          error: errorText(e),
        });
        try {
          return await attempt("sse");
        } catch (e2) {
          throw new Error(`Streamable HTTP: ${errorText(e)}; SSE fallback: ${errorText(e2)}`);
        }
      }
    } catch (e) {
      const t = this.#lastStdio;
      // A server that exited on its own before answering (a missing API key, a bad argument…): how it ended and its last words.
      if (t?.exit?.unprompted === true && !this.#closed) {
        throw new McpConnectError(
          this.server,
          `mcp server "${this.server}" exited with ${describeExit(t.exit)} before it answered initialize; ${stderrReport(t)}`,
        );
      }
      const lines = t?.stderrLines(QUOTED_STDERR_LINES) ?? [];
      const stderr = lines.length > 0 ? ` (${stderrReport(t!)})` : "";
      if (e instanceof McpConnectError) throw new McpConnectError(this.server, `${e.message}${stderr}`);
      throw new McpConnectError(this.server, `mcp server "${this.server}": cannot connect: ${errorText(e)}${stderr}`);
    }
  }

  /** The last stdio transport tried, kept for its stderr tail in error messages. */
  #lastStdio: StdioTransport | undefined;

  /** Why a stdio connection ended, for messages: how the process ended (when it has) and its last stderr lines. */
  #processLoss(t: Transport | undefined): string {
    if (!(t instanceof StdioTransport) || t.exit === undefined) return "the server process exited";
    return `the server process exited with ${describeExit(t.exit)}; ${stderrReport(t)}`;
  }

  #makeTransport(kind: McpTransportKind): Transport {
    const c = this.config;
    if (kind === "stdio") {
      const t = new StdioTransport({ command: c.command!, args: c.args, env: c.env, cwd: c.cwd });
      this.#lastStdio = t;
      return t;
    }
    const url = new URL(c.url!);
    const requestInit: RequestInit = c.headers === undefined ? {} : { headers: { ...c.headers } };
    // Each request carries the active span's context (traceparent) when an OpenTelemetry SDK is registered.
    const traced = tracingFetch();
    if (kind === "sse") {
      return new SSEClientTransport(url, {
        requestInit,
        fetch: traced,
        eventSourceInit:
          c.headers === undefined
            ? undefined
            : ({
                fetch: (input: string | URL | Request, init?: RequestInit) =>
                  fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string> | undefined), ...c.headers } }),
              } as EventSourceInit),
      });
    }
    return new StreamableHTTPClientTransport(url, { requestInit, fetch: traced });
  }

  /** Close the connection (and stop the stdio server). Idempotent; later calls fail with `UNAVAILABLE`. */
  async close(): Promise<void> {
    this.#closed = true;
    const connecting = this.#connecting;
    if (connecting !== undefined) {
      // end a connection attempt now (a server hanging at start-up would
      // otherwise hold close() for up to connect_timeout_ms)
      await this.#pending?.close().catch(() => {});
      await connecting.catch(() => {});
    }
    const client = this.#client;
    const transport = this.#transport;
    this.#client = undefined;
    this.#transport = undefined;
    if (client !== undefined) await client.close().catch(() => {});
    if (transport !== undefined) await transport.close().catch(() => {});
  }
}
