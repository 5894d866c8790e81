/**
 * The operator's JSONC configuration file (`--config FILE` or `AGENTCORE_CONFIG`).
 *
 * Comments and trailing commas are allowed. Unknown keys and wrong types are
 * errors that name the key, so a typo never silently falls back to a default.
 *
 * ```jsonc
 * {
 *   // file tools are rooted here; relative paths are resolved from this file's folder
 *   "root": "./workspace",
 *   "max_input_bytes": 1048576,
 *   "max_depth": 64,
 *   "max_file_bytes": 1048576,
 *   "default_timeout_ms": 30000,
 *   // optional: append every call to this JSONL audit log (read it with `agentcore history`)
 *   "history": "./agentcore-history.jsonl",
 *   // optional: skills folder for agent (default: .agentcore/skills under the root, when it exists)
 *   "skills_dir": "./skills",
 *   // optional: without it every call runs (no policy middleware)
 *   "policy": {
 *     "default": "deny",                 // allow | deny | require_approval (default deny)
 *     "default_reason": "not allowed",   // optional
 *     "approval_timeout_ms": 60000,      // the TTY approver denies after this long
 *     "rules": [                         // ordered, first match wins
 *       { "id": "reads", "action": "allow", "effects": ["read_only"], "max_calls_per_run": 100 },
 *       { "id": "ask", "action": "require_approval", "tools": ["deploy"], "reason": "deploys are reviewed" }
 *     ]
 *   },
 *   // optional: workspace tools (all off by default; see docs/workspace-tools.md)
 *   "tools": { "list_dir": true, "write_file": { "max_bytes": 1048576 },
 *              "exec": { "allow": ["git", "ls"], "timeout_ms": 30000, "isolation": "auto" } },
 *   // optional: MCP servers whose tools are added as <server>__<tool> (see docs/mcp.md)
 *   "mcpServers": { "fs": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."] } }
 * }
 * ```
 *
 * @module
 */
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { parse, printParseErrorCode, type ParseError, visit } from "jsonc-parser";
import type { PolicyConfig } from "../middleware/policy.ts";
import { parseToolsConfig, ToolsConfigError, type WorkspaceToolsOptions } from "../tools/workspace/index.ts";
import { McpConfigError, parseMcpServers, type McpServerConfig } from "../mcp/config.ts";

/** Settings read from the config file. Every field is optional. */
export interface FileConfig {
  root?: string;
  max_input_bytes?: number;
  max_depth?: number;
  max_file_bytes?: number;
  default_timeout_ms?: number;
  /** The execution history log (JSONL); relative paths are resolved from the config file's folder. */
  history?: string;
  /** Tool policy; its presence turns the policy middleware on. */
  policy?: PolicyConfig & { approval_timeout_ms?: number };
  /** Workspace tools to enable (list_dir, glob, grep, git_diff, write_file, apply_patch, exec) and their settings. */
  tools?: WorkspaceToolsOptions;
  /** The skills folder (resolved from the config file's folder); it must exist when used. */
  skills_dir?: string;
  /** MCP servers whose tools are registered too (see src/mcp/config.ts and docs/mcp.md). */
  mcpServers?: Record<string, McpServerConfig>;
}

/** A config problem; the CLI prints it and exits 2. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

const INTEGER_KEYS = ["max_input_bytes", "max_depth", "max_file_bytes", "default_timeout_ms"] as const;

function lineColumn(text: string, offset: number): string {
  let line = 1;
  let col = 1;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      col = 1;
    } else col++;
  }
  return `${line}:${col}`;
}

/** Offset of the first byte that does not start or continue a valid UTF-8 sequence. */
function firstBadUtf8(bytes: Uint8Array): number {
  const dec = new TextDecoder("utf-8", { fatal: true });
  let lo = 0;
  let hi = bytes.length;
  // the longest valid prefix, by bisection (a cut inside a sequence is invalid too)
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    try {
      dec.decode(bytes.subarray(0, mid));
      lo = mid;
    } catch {
      hi = mid - 1;
    }
  }
  return lo;
}

/**
 * The first member name that repeats in its object, or `__proto__` anywhere:
 * the config is as strict as tool-call arguments (a repeated key would
 * otherwise silently take the last value, and `__proto__` would set a prototype).
 */
function duplicateKey(text: string): { offset: number; message: string } | null {
  const stack: Set<string>[] = [];
  let found: { offset: number; message: string } | null = null;
  visit(
    text,
    {
      onObjectBegin: () => void stack.push(new Set()),
      onObjectEnd: () => void stack.pop(),
      onObjectProperty: (name, offset) => {
        if (found !== null) return;
        const seen = stack[stack.length - 1]!;
        if (name === "__proto__") found = { offset, message: `the key "__proto__" is not allowed` };
        else if (seen.has(name)) found = { offset, message: `duplicate key ${JSON.stringify(name)}` };
        seen.add(name);
      },
    },
    { allowTrailingComma: true, disallowComments: false },
  );
  return found;
}

/** Read and check a config file. Throws {@link ConfigError} with the file, position and key. */
export function loadConfig(path: string): FileConfig {
  let bytes: Uint8Array;
  try {
    bytes = readFileSync(path);
  } catch (e) {
    throw new ConfigError(`cannot read config file ${path}: ${(e as NodeJS.ErrnoException).code ?? String(e)}`);
  }
  let text: string;
  try {
    // fatal: bad bytes are an error, not U+FFFD; ignoreBOM false: a leading BOM (as some editors write) is dropped
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new ConfigError(`${path}: not valid UTF-8 (at byte ${firstBadUtf8(bytes)})`);
  }
  const errors: ParseError[] = [];
  const value: unknown = parse(text, errors, { allowTrailingComma: true, disallowComments: false });
  if (errors.length > 0) {
    const e = errors[0]!;
    throw new ConfigError(`${path}:${lineColumn(text, e.offset)}: ${printParseErrorCode(e.error)}`);
  }
  const dup = duplicateKey(text);
  if (dup !== null) throw new ConfigError(`${path}:${lineColumn(text, dup.offset)}: ${dup.message}`);
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new ConfigError(`${path}: the top level must be an object`);
  }
  const raw = value as Record<string, unknown>;
  const out: FileConfig = {};
  for (const key of Object.keys(raw)) {
    const v = raw[key];
    if (key === "root") {
      if (typeof v !== "string" || v.length === 0) throw new ConfigError(`${path}: "root" must be a non-empty string`);
      out.root = resolve(dirname(path), v);
    } else if (key === "policy") {
      out.policy = parsePolicy(path, v);
    } else if (key === "tools") {
      try {
        out.tools = parseToolsConfig(v);
      } catch (e) {
        if (e instanceof ToolsConfigError) throw new ConfigError(`${path}: ${e.message}`);
        throw e;
      }
    } else if (key === "history") {
      if (typeof v !== "string" || v.length === 0) throw new ConfigError(`${path}: "history" must be a non-empty string`);
      out.history = resolve(dirname(path), v);
    } else if (key === "mcpServers") {
      try {
        out.mcpServers = parseMcpServers(path, v);
      } catch (e) {
        if (e instanceof McpConfigError) throw new ConfigError(`${path}: ${e.message}`);
        throw e;
      }
    } else if (key === "skills_dir") {
      if (typeof v !== "string" || v.length === 0) throw new ConfigError(`${path}: "skills_dir" must be a non-empty string`);
      out.skills_dir = resolve(dirname(path), v);
    } else if ((INTEGER_KEYS as readonly string[]).includes(key)) {
      if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 1) {
        throw new ConfigError(`${path}: "${key}" must be a positive integer`);
      }
      out[key as (typeof INTEGER_KEYS)[number]] = v;
    } else {
      throw new ConfigError(`${path}: unknown key "${key}" (known: root, ${INTEGER_KEYS.join(", ")}, history, policy, tools, skills_dir, mcpServers)`);
    }
  }
  return out;
}

const POLICY_ACTIONS = ["allow", "deny", "require_approval"] as const;
const RULE_KEYS = ["id", "action", "tools", "effects", "max_calls_per_run", "reason"];

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function stringList(path: string, where: string, v: unknown, allowed?: readonly string[]): string[] {
  if (!Array.isArray(v) || v.some((x) => typeof x !== "string" || x.length === 0)) {
    throw new ConfigError(`${path}: "${where}" must be an array of non-empty strings`);
  }
  if (allowed !== undefined) {
    const bad = v.find((x) => !allowed.includes(x as string));
    if (bad !== undefined) throw new ConfigError(`${path}: "${where}": unknown value ${JSON.stringify(bad)} (known: ${allowed.join(", ")})`);
  }
  return v as string[];
}

/** Check the `policy` section: rules without predicates (those exist only in code). */
function parsePolicy(path: string, v: unknown): NonNullable<FileConfig["policy"]> {
  if (!isObject(v)) throw new ConfigError(`${path}: "policy" must be an object`);
  const out: NonNullable<FileConfig["policy"]> = {};
  for (const key of Object.keys(v)) {
    const x = v[key];
    if (key === "default") {
      if (!(POLICY_ACTIONS as readonly unknown[]).includes(x)) throw new ConfigError(`${path}: "policy.default" must be one of ${POLICY_ACTIONS.join(", ")}`);
      out.default = x as PolicyConfig["default"];
    } else if (key === "default_reason") {
      if (typeof x !== "string" || x.length === 0) throw new ConfigError(`${path}: "policy.default_reason" must be a non-empty string`);
      out.default_reason = x;
    } else if (key === "approval_timeout_ms") {
      if (typeof x !== "number" || !Number.isSafeInteger(x) || x < 1) throw new ConfigError(`${path}: "policy.approval_timeout_ms" must be a positive integer`);
      out.approval_timeout_ms = x;
    } else if (key === "rules") {
      if (!Array.isArray(x)) throw new ConfigError(`${path}: "policy.rules" must be an array`);
      const ids = new Set<string>();
      out.rules = x.map((r, i) => {
        const at = `policy.rules[${i}]`;
        if (!isObject(r)) throw new ConfigError(`${path}: "${at}" must be an object`);
        const unknown = Object.keys(r).find((k) => !RULE_KEYS.includes(k));
        if (unknown !== undefined) throw new ConfigError(`${path}: "${at}": unknown key "${unknown}" (known: ${RULE_KEYS.join(", ")})`);
        if (typeof r.id !== "string" || r.id.length === 0) throw new ConfigError(`${path}: "${at}.id" must be a non-empty string`);
        if (ids.has(r.id)) throw new ConfigError(`${path}: "${at}.id": duplicate rule id "${r.id}"`);
        ids.add(r.id);
        if (!(POLICY_ACTIONS as readonly unknown[]).includes(r.action)) throw new ConfigError(`${path}: "${at}.action" must be one of ${POLICY_ACTIONS.join(", ")}`);
        const rule: NonNullable<PolicyConfig["rules"]>[number] = { id: r.id, action: r.action as (typeof POLICY_ACTIONS)[number] };
        if (r.tools !== undefined) rule.tools = stringList(path, `${at}.tools`, r.tools);
        if (r.effects !== undefined) rule.effects = stringList(path, `${at}.effects`, r.effects, ["read_only", "side_effecting"]) as ("read_only" | "side_effecting")[];
        if (r.max_calls_per_run !== undefined) {
          const m = r.max_calls_per_run;
          if (typeof m !== "number" || !Number.isSafeInteger(m) || m < 1) throw new ConfigError(`${path}: "${at}.max_calls_per_run" must be a positive integer`);
          if (r.action === "deny") throw new ConfigError(`${path}: "${at}.max_calls_per_run" is not allowed on a deny rule`);
          rule.max_calls_per_run = m;
        }
        if (r.reason !== undefined) {
          if (typeof r.reason !== "string" || r.reason.length === 0) throw new ConfigError(`${path}: "${at}.reason" must be a non-empty string`);
          rule.reason = r.reason;
        }
        return rule;
      });
    } else {
      throw new ConfigError(`${path}: unknown key "policy.${key}" (known: default, default_reason, approval_timeout_ms, rules)`);
    }
  }
  return out;
}
