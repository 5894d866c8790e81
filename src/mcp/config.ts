/**
 * The `mcpServers` section of the config file: which MCP servers to connect
 * to, and how their tools become agentcore tools.
 *
 * The shape is the one other MCP clients use (`command`, `args`, `env` for a
 * local server over stdio; `url`, `headers` for a remote one over Streamable
 * HTTP), plus agentcore's own per-server options:
 *
 * ```jsonc
 * "mcpServers": {
 *   "fs": {
 *     "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "./data"],
 *     "env": { "LOG_LEVEL": "warn" },
 *     "prefix": "fs",                      // tool names become fs__<tool> (default: the server key; "" = none)
 *     "effect": "side_effecting",          // default effect of this server's tools
 *     "tools": { "read_text_file": { "effect": "read_only" } },
 *     "include": ["read_text_file", "list_directory"],  // or "exclude": [...]
 *     "timeout_ms": 30000,                 // per call
 *     "connect_timeout_ms": 10000,         // start-up + initialize
 *     "max_result_bytes": 1048576          // results above are truncated (flagged)
 *   },
 *   "remote": { "url": "https://example.com/mcp", "headers": { "Authorization": "Bearer ${MCP_TOKEN}" } }
 * }
 * ```
 *
 * `${NAME}` in `args`, `env` values, `url` and `headers` values is replaced
 * by the environment variable NAME when the file is loaded; an unset variable
 * is an error naming the key. This module has no dependency on the MCP SDK.
 *
 * @module
 */
import { AgentcoreError } from "../core/errors.ts";
import { resolve, dirname } from "node:path";
import type { ToolEffect } from "../tools/definition.ts";

/** Defaults of the per-server limits. */
export const MCP_DEFAULTS = Object.freeze({
  timeoutMs: 60_000,
  connectTimeoutMs: 15_000,
  maxResultBytes: 1 << 20,
});

/** The longest `timeout_ms` / `connect_timeout_ms`: a timer cannot wait longer (about 24.8 days). */
export const MCP_MAX_TIMEOUT_MS = 2_147_483_647;

/** One entry of `mcpServers`, checked. Exactly one of `command` and `url` is set. */
export interface McpServerConfig {
  /** stdio: the program to start (no shell). */
  command?: string;
  args?: string[];
  /** stdio: variables added to the minimal inherited environment. */
  env?: Record<string, string>;
  /** stdio: working directory (relative to the config file's folder). */
  cwd?: string;
  /** HTTP: the server's endpoint. */
  url?: string;
  headers?: Record<string, string>;
  /**
   * `stdio` (implied by `command`), `http` (Streamable HTTP, falling back to
   * SSE when the server answers the initialize POST with a 4xx; implied by
   * `url`) or `sse` (the deprecated HTTP+SSE transport only).
   */
  type?: "stdio" | "http" | "sse";
  /** Tool name prefix; default the server key; `""` keeps the server's names. */
  prefix?: string;
  /** Effect of this server's tools unless overridden in `tools`; default `side_effecting`. */
  effect?: ToolEffect;
  /** Per-tool overrides, keyed by the server's own tool name. */
  tools?: Record<string, { effect?: ToolEffect }>;
  /** Only these tools (server names). */
  include?: string[];
  /** All tools but these (server names). */
  exclude?: string[];
  timeout_ms?: number;
  connect_timeout_ms?: number;
  max_result_bytes?: number;
}

/** A problem in the `mcpServers` section; the message names the key. */
export class McpConfigError extends AgentcoreError {
  readonly code: string = "MCP_CONFIG_INVALID";
  override name = "McpConfigError";
}

const SERVER_KEYS = [
  "command",
  "args",
  "env",
  "cwd",
  "url",
  "headers",
  "type",
  "prefix",
  "effect",
  "tools",
  "include",
  "exclude",
  "timeout_ms",
  "connect_timeout_ms",
  "max_result_bytes",
] as const;
const EFFECTS = ["read_only", "side_effecting"] as const;
const TYPES = ["stdio", "http", "sse"] as const;
/** Server keys and prefixes become part of tool names. */
const NAME_RE = /^[A-Za-z0-9_-]{1,32}$/;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Replace `${NAME}` with the environment variable; unset → error naming `where`. */
function expand(value: string, where: string, env: Record<string, string | undefined>): string {
  return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_m, name: string) => {
    const v = env[name];
    if (v === undefined) throw new McpConfigError(`"${where}": environment variable ${name} is not set`);
    return v;
  });
}

function str(v: unknown, where: string, allowEmpty = false): string {
  if (typeof v !== "string" || (!allowEmpty && v.length === 0))
    throw new McpConfigError(`"${where}" must be a ${allowEmpty ? "" : "non-empty "}string`);
  return v;
}

function strList(v: unknown, where: string): string[] {
  if (!Array.isArray(v) || v.some((x) => typeof x !== "string")) throw new McpConfigError(`"${where}" must be an array of strings`);
  return v as string[];
}

function strMap(v: unknown, where: string): Record<string, string> {
  if (!isObject(v)) throw new McpConfigError(`"${where}" must be an object of strings`);
  const out: Record<string, string> = {};
  for (const [k, x] of Object.entries(v)) {
    if (typeof x !== "string") throw new McpConfigError(`"${where}.${k}" must be a string`);
    out[k] = x;
  }
  return out;
}

function posInt(v: unknown, where: string): number {
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 1) throw new McpConfigError(`"${where}" must be a positive integer`);
  return v;
}

/** A timeout in ms: a positive integer a timer can wait for (longer ones would fire at once). */
function timeoutMs(v: unknown, where: string): number {
  const n = posInt(v, where);
  if (n > MCP_MAX_TIMEOUT_MS) throw new McpConfigError(`"${where}" must be at most ${MCP_MAX_TIMEOUT_MS} (about 24.8 days)`);
  return n;
}

function effect(v: unknown, where: string): ToolEffect {
  if (!(EFFECTS as readonly unknown[]).includes(v)) throw new McpConfigError(`"${where}" must be one of ${EFFECTS.join(", ")}`);
  return v as ToolEffect;
}

/**
 * Check the `mcpServers` value of a config file at `configPath`. Throws
 * {@link McpConfigError} naming the offending key (`mcpServers.fs.args[2]`).
 * `env` is where `${NAME}` references are looked up (default `process.env`).
 */
export function parseMcpServers(
  configPath: string,
  value: unknown,
  env: Record<string, string | undefined> = globalThis.process?.env ?? {},
): Record<string, McpServerConfig> {
  if (!isObject(value)) throw new McpConfigError(`"mcpServers" must be an object`);
  const out: Record<string, McpServerConfig> = {};
  for (const [name, raw] of Object.entries(value)) {
    const at = `mcpServers.${name}`;
    if (!NAME_RE.test(name)) throw new McpConfigError(`"${at}": server names must be 1 to 32 letters, digits, '_' or '-'`);
    if (!isObject(raw)) throw new McpConfigError(`"${at}" must be an object`);
    const unknown = Object.keys(raw).find((k) => !(SERVER_KEYS as readonly string[]).includes(k));
    if (unknown !== undefined) throw new McpConfigError(`"${at}": unknown key "${unknown}" (known: ${SERVER_KEYS.join(", ")})`);
    const c: McpServerConfig = {};
    if (raw.command !== undefined) c.command = str(raw.command, `${at}.command`);
    if (raw.url !== undefined) {
      const u = expand(str(raw.url, `${at}.url`), `${at}.url`, env);
      let parsed: URL;
      try {
        parsed = new URL(u);
      } catch {
        throw new McpConfigError(`"${at}.url" is not a valid URL`);
      }
      if (parsed.protocol !== "http:" && parsed.protocol !== "https:")
        throw new McpConfigError(`"${at}.url" must be an http: or https: URL`);
      c.url = u;
    }
    if ((c.command === undefined) === (c.url === undefined)) {
      throw new McpConfigError(`"${at}" needs exactly one of "command" (stdio) or "url" (HTTP)`);
    }
    if (raw.type !== undefined) {
      if (!(TYPES as readonly unknown[]).includes(raw.type)) throw new McpConfigError(`"${at}.type" must be one of ${TYPES.join(", ")}`);
      c.type = raw.type as McpServerConfig["type"];
      if ((c.type === "stdio") !== (c.command !== undefined)) {
        throw new McpConfigError(`"${at}.type" is "${c.type}" but the server has ${c.command !== undefined ? '"command"' : '"url"'}`);
      }
    }
    const stdioOnly = ["args", "env", "cwd"] as const;
    const httpOnly = ["headers"] as const;
    for (const k of c.command !== undefined ? httpOnly : stdioOnly) {
      if (raw[k] !== undefined)
        throw new McpConfigError(`"${at}.${k}" applies to ${c.command !== undefined ? "HTTP (url)" : "stdio (command)"} servers only`);
    }
    if (raw.args !== undefined) c.args = strList(raw.args, `${at}.args`).map((a, i) => expand(a, `${at}.args[${i}]`, env));
    if (raw.env !== undefined) {
      c.env = Object.fromEntries(Object.entries(strMap(raw.env, `${at}.env`)).map(([k, v]) => [k, expand(v, `${at}.env.${k}`, env)]));
    }
    if (raw.cwd !== undefined) c.cwd = resolve(dirname(configPath), str(raw.cwd, `${at}.cwd`));
    if (raw.headers !== undefined) {
      c.headers = Object.fromEntries(
        Object.entries(strMap(raw.headers, `${at}.headers`)).map(([k, v]) => [k, expand(v, `${at}.headers.${k}`, env)]),
      );
    }
    if (raw.prefix !== undefined) {
      const p = str(raw.prefix, `${at}.prefix`, true);
      if (p !== "" && !NAME_RE.test(p)) throw new McpConfigError(`"${at}.prefix" must be "" or 1 to 32 letters, digits, '_' or '-'`);
      c.prefix = p;
    }
    if (raw.effect !== undefined) c.effect = effect(raw.effect, `${at}.effect`);
    if (raw.tools !== undefined) {
      if (!isObject(raw.tools)) throw new McpConfigError(`"${at}.tools" must be an object keyed by tool name`);
      c.tools = {};
      for (const [tool, o] of Object.entries(raw.tools)) {
        const tat = `${at}.tools.${tool}`;
        if (!isObject(o)) throw new McpConfigError(`"${tat}" must be an object`);
        const bad = Object.keys(o).find((k) => k !== "effect");
        if (bad !== undefined) throw new McpConfigError(`"${tat}": unknown key "${bad}" (known: effect)`);
        const v = o.effect === undefined ? {} : { effect: effect(o.effect, `${tat}.effect`) };
        Object.defineProperty(c.tools, tool, { value: v, enumerable: true, writable: true, configurable: true });
      }
    }
    if (raw.include !== undefined) c.include = strList(raw.include, `${at}.include`);
    if (raw.exclude !== undefined) c.exclude = strList(raw.exclude, `${at}.exclude`);
    if (c.include !== undefined && c.exclude !== undefined) throw new McpConfigError(`"${at}": use "include" or "exclude", not both`);
    if (raw.timeout_ms !== undefined) c.timeout_ms = timeoutMs(raw.timeout_ms, `${at}.timeout_ms`);
    if (raw.connect_timeout_ms !== undefined) c.connect_timeout_ms = timeoutMs(raw.connect_timeout_ms, `${at}.connect_timeout_ms`);
    if (raw.max_result_bytes !== undefined) {
      c.max_result_bytes = posInt(raw.max_result_bytes, `${at}.max_result_bytes`);
      if (c.max_result_bytes < 1024) throw new McpConfigError(`"${at}.max_result_bytes" must be at least 1024`);
    }
    // defineProperty: a key such as "__proto__" stays an ordinary key
    Object.defineProperty(out, name, { value: c, enumerable: true, writable: true, configurable: true });
  }
  return out;
}
