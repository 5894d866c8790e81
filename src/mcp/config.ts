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
import { resolve, dirname } from "node:path";
import type { ToolEffect } from "../tools/definition.ts";
import { checkSettings, SettingsValueError, type SettingsSchema } from "../tools/settings-check.ts";
import { validate as validateServers } from "./config.validator.generated.ts";

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
export class McpConfigError extends SettingsValueError {
  readonly code: string = "MCP_CONFIG_INVALID";
  override name = "McpConfigError";
}

const EFFECTS = ["read_only", "side_effecting"] as const;
const NAME_PATTERN = "^[A-Za-z0-9_-]{1,32}$";
const NAME_WORDS = "server names must be 1 to 32 letters, digits, '_' or '-'";
const STRINGS = { type: "array", items: { type: "string" } } as const;
const STRING_MAP = { type: "object", additionalProperties: { type: "string" } } as const;
const TIMEOUT = { type: "integer", minimum: 1, maximum: MCP_MAX_TIMEOUT_MS, "x-unit": "milliseconds, about 24.8 days" } as const;
const EFFECT = { enum: EFFECTS } as const;

/** The JSON Schema (draft-07) of one `mcpServers` entry; the rules between keys are checked in code. */
const SERVER_SCHEMA: SettingsSchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    command: { description: "stdio: the program to start (no shell).", type: "string", minLength: 1 },
    args: { description: "stdio: its arguments; ${NAME} is replaced by the environment variable.", ...STRINGS },
    env: { description: "stdio: variables added to the minimal inherited environment.", ...STRING_MAP },
    cwd: { description: "stdio: working directory, relative to the config file's folder.", type: "string", minLength: 1 },
    url: { description: "HTTP: the server's endpoint (http: or https:).", type: "string", minLength: 1 },
    headers: { description: "HTTP: request headers; ${NAME} is replaced by the environment variable.", ...STRING_MAP },
    type: { description: "stdio (implied by command), http (implied by url) or sse.", enum: ["stdio", "http", "sse"] },
    prefix: {
      description: 'Tool names become <prefix>__<tool>; default the server key; "" keeps the server\'s names.',
      type: "string",
      pattern: "^([A-Za-z0-9_-]{1,32})?$",
      "x-message": "must be \"\" or 1 to 32 letters, digits, '_' or '-'",
    },
    effect: { description: "Effect of this server's tools unless overridden in tools.", ...EFFECT },
    tools: {
      description: "Per-tool overrides, keyed by the server's own tool name.",
      type: "object",
      additionalProperties: { type: "object", additionalProperties: false, properties: { effect: EFFECT } },
    },
    include: { description: "Only these tools (the server's names).", ...STRINGS },
    exclude: { description: "All tools but these (the server's names).", ...STRINGS },
    timeout_ms: { description: "Per call.", ...TIMEOUT },
    connect_timeout_ms: { description: "Start-up and initialize.", ...TIMEOUT },
    max_result_bytes: { description: "Larger results are truncated (and flagged).", type: "integer", minimum: 1024 },
  },
};

/** The JSON Schema (draft-07) of the `mcpServers` section; part of the config file's published schema. */
export const MCP_SERVERS_SCHEMA: SettingsSchema = {
  type: "object",
  propertyNames: { pattern: NAME_PATTERN, "x-message": NAME_WORDS },
  additionalProperties: SERVER_SCHEMA,
};

/** Replace `${NAME}` with the environment variable; unset → error naming `where`. */
function expand(value: string, where: string, env: Record<string, string | undefined>, path: (string | number)[]): string {
  return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_m, name: string) => {
    const v = env[name];
    if (v === undefined) throw new McpConfigError(`"${where}": environment variable ${name} is not set`, path);
    return v;
  });
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
  const problem = checkSettings(validateServers, value, "mcpServers");
  if (problem !== null) throw new McpConfigError(problem.message, problem.path, problem.atKey);
  const out: Record<string, McpServerConfig> = {};
  for (const [name, checked] of Object.entries(value as Record<string, Record<string, unknown>>)) {
    const at = `mcpServers.${name}`;
    const raw = structuredClone(checked);
    const fail = (message: string, key?: string): never => {
      throw new McpConfigError(message, key === undefined ? [name] : [name, key]);
    };
    const c: McpServerConfig = {};
    if (raw.command !== undefined) c.command = raw.command as string;
    if (raw.url !== undefined) {
      const u = expand(raw.url as string, `${at}.url`, env, [name, "url"]);
      let parsed: URL | null = null;
      try {
        parsed = new URL(u);
      } catch {
        fail(`"${at}.url" is not a valid URL`, "url");
      }
      if (parsed!.protocol !== "http:" && parsed!.protocol !== "https:") fail(`"${at}.url" must be an http: or https: URL`, "url");
      c.url = u;
    }
    if ((c.command === undefined) === (c.url === undefined)) fail(`"${at}" needs exactly one of "command" (stdio) or "url" (HTTP)`);
    if (raw.type !== undefined) {
      c.type = raw.type as McpServerConfig["type"];
      if ((c.type === "stdio") !== (c.command !== undefined))
        fail(`"${at}.type" is "${c.type}" but the server has ${c.command !== undefined ? '"command"' : '"url"'}`, "type");
    }
    for (const k of c.command !== undefined ? ["headers"] : ["args", "env", "cwd"]) {
      if (raw[k] !== undefined)
        fail(`"${at}.${k}" applies to ${c.command !== undefined ? "HTTP (url)" : "stdio (command)"} servers only`, k);
    }
    if (raw.args !== undefined) c.args = (raw.args as string[]).map((a, i) => expand(a, `${at}.args[${i}]`, env, [name, "args", i]));
    if (raw.env !== undefined)
      c.env = Object.fromEntries(
        Object.entries(raw.env as Record<string, string>).map(([k, v]) => [k, expand(v, `${at}.env.${k}`, env, [name, "env", k])]),
      );
    if (raw.cwd !== undefined) c.cwd = resolve(dirname(configPath), raw.cwd as string);
    if (raw.headers !== undefined)
      c.headers = Object.fromEntries(
        Object.entries(raw.headers as Record<string, string>).map(([k, v]) => [
          k,
          expand(v, `${at}.headers.${k}`, env, [name, "headers", k]),
        ]),
      );
    if (raw.prefix !== undefined) c.prefix = raw.prefix as string;
    if (raw.effect !== undefined) c.effect = raw.effect as ToolEffect;
    if (raw.tools !== undefined) {
      c.tools = {};
      for (const [tool, o] of Object.entries(raw.tools as Record<string, { effect?: ToolEffect }>)) {
        const v = o.effect === undefined ? {} : { effect: o.effect };
        Object.defineProperty(c.tools, tool, { value: v, enumerable: true, writable: true, configurable: true });
      }
    }
    if (raw.include !== undefined) c.include = raw.include as string[];
    if (raw.exclude !== undefined) c.exclude = raw.exclude as string[];
    if (c.include !== undefined && c.exclude !== undefined) fail(`"${at}": use "include" or "exclude", not both`, "exclude");
    for (const k of ["timeout_ms", "connect_timeout_ms", "max_result_bytes"] as const) if (raw[k] !== undefined) c[k] = raw[k] as number;
    // defineProperty: a key such as "__proto__" stays an ordinary key
    Object.defineProperty(out, name, { value: c, enumerable: true, writable: true, configurable: true });
  }
  return out;
}
