/**
 * Settings: the operator's JSONC configuration file (`--config FILE` or
 * `AGENTCORE_CONFIG`), read the same way by every front end (the CLI's
 * commands and `agentcore serve`).
 *
 * Comments and trailing commas are allowed. The file is checked against the
 * published JSON Schema (`CONFIG_SCHEMA` in config-schema.ts, `schema/agentcore.config.schema.json`):
 * unknown keys and wrong types are errors that name the file, line, column
 * and key, so a typo never silently falls back to a default.
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
import { AgentcoreError } from "../core/errors.ts";
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { findNodeAtLocation, parse, parseTree, printParseErrorCode, type ParseError, visit } from "jsonc-parser";
import { parsePolicyConfig, type PolicyConfig } from "../runtime/middleware/policy.ts";
import { checkSettings, SettingsValueError } from "../tools/settings-check.ts";
import { validate as validateTopLevel } from "./config.validator.generated.ts";
import { parseToolsConfig, selectTools, type WorkspaceToolsOptions } from "../tools/workspace/index.ts";
import { DEFAULT_MAX_BYTES, DEFAULT_MAX_DEPTH } from "../core/errors.ts";
import { parseMcpServers, type McpServerConfig } from "../mcp/config.ts";

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
  policy?: PolicyConfig & { approval_timeout_ms?: number; on_approval?: "wait" | "suspend" };
  /** Where sessions, history and approvals are kept: a folder (resolved from the config file's folder) or a `postgres://` URL. */
  store?: string;
  /** Workspace tools to enable (list_dir, glob, grep, git_diff, write_file, apply_patch, exec) and their settings. */
  tools?: WorkspaceToolsOptions;
  /** The skills folder (resolved from the config file's folder); it must exist when used. */
  skills_dir?: string;
  /** MCP servers whose tools are registered too (see src/mcp/config.ts and docs/mcp.md). */
  mcpServers?: Record<string, McpServerConfig>;
  /** Read the workspace's AGENTS.md files into a run's system prompt (default true; see docs/instructions.md). */
  project_instructions?: boolean;
}

/** A config problem; the CLI prints it and exits 2. */
export class ConfigError extends AgentcoreError {
  readonly code: string = "CONFIG_INVALID";
  override name = "ConfigError";
}

/** Line and column (1-based; a column counts characters, not bytes) of `offset` in `text`. */
function position(text: string, offset: number): { line: number; col: number; lineStart: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  const col = [...text.slice(lineStart, Math.min(offset, text.length))].length + 1;
  return { line, col, lineStart };
}

function lineColumn(text: string, offset: number): string {
  const p = position(text, offset);
  return `${p.line}:${p.col}`;
}

/** Longest stretch of a line shown around the column (in characters). */
const EXCERPT_WIDTH = 72;

/**
 * The line holding `offset`, and a caret under its column, for a message:
 *
 * ```
 *     3 |   "b": 2
 *       |   ^
 * ```
 *
 * A tab shows as four spaces (so the caret lines up on any terminal), other
 * control characters as `\xNN` (a config file can't send escape sequences
 * to the terminal), and a long line is cut around the column with `…`.
 */
export function excerpt(text: string, offset: number): string {
  const { line, col, lineStart } = position(text, offset);
  let end = text.indexOf("\n", lineStart);
  if (end === -1) end = text.length;
  let chars = [...text.slice(lineStart, end).replace(/\r$/, "")];
  let caret = col - 1; // index into chars
  let head = "";
  let tail = "";
  if (chars.length > EXCERPT_WIDTH) {
    const from = Math.max(0, Math.min(caret - EXCERPT_WIDTH / 2, chars.length - EXCERPT_WIDTH));
    if (from > 0) head = "…";
    if (from + EXCERPT_WIDTH < chars.length) tail = "…";
    chars = chars.slice(from, from + EXCERPT_WIDTH);
    caret -= from;
  }
  const shownChar = (c: string) =>
    c === "\t" ? "    " : /[\u0000-\u001f\u007f-\u009f]/.test(c) ? `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}` : c;
  const shown = chars.map(shownChar);
  const pad = head.length + shown.slice(0, caret).reduce((n, s) => n + s.length, 0);
  const gutter = String(line).padStart(5);
  return `${gutter} | ${head}${shown.join("")}${tail}\n${" ".repeat(gutter.length)} | ${" ".repeat(pad)}^`;
}

/** jsonc-parser's error codes in words (`CommaExpected` says little to someone editing a file). */
const SYNTAX_WORDS: Record<string, string> = {
  InvalidSymbol: "unexpected character",
  InvalidNumberFormat: "invalid number",
  PropertyNameExpected: "expected a property name in double quotes",
  ValueExpected: "expected a value (a string, number, object, array, true, false or null)",
  ColonExpected: "expected a colon after the property name",
  CloseBraceExpected: "expected a closing brace '}'",
  CloseBracketExpected: "expected a closing bracket ']'",
  EndOfFileExpected: "expected the end of the file after the top-level object",
  InvalidCommentToken: "invalid comment",
  UnexpectedEndOfComment: "unterminated comment: a /* without */",
  UnexpectedEndOfString: 'unterminated string: a " is missing',
  UnexpectedEndOfNumber: "unterminated number",
  InvalidUnicode: "invalid \\u escape (four hex digits expected)",
  InvalidEscapeCharacter: "invalid escape in a string (use \\\\ for a backslash)",
  InvalidCharacter: "invalid character in a string (a line break or control character must be escaped)",
};

/**
 * Where to point for `e`: jsonc-parser reports a bad character or escape
 * inside a string at the string's opening quote; the caret goes under the
 * character itself.
 */
function errorOffset(text: string, e: ParseError): number {
  const code = printParseErrorCode(e.error);
  if (text[e.offset] !== '"' || !["InvalidCharacter", "InvalidEscapeCharacter", "InvalidUnicode"].includes(code)) return e.offset;
  for (let i = e.offset + 1; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) break; // the closing quote
    if (code === "InvalidCharacter" && c < 0x20) return i;
    if (c === 0x5c) {
      const next = text[i + 1] ?? "";
      if (code === "InvalidEscapeCharacter" && !'"\\/bfnrtu'.includes(next)) return i;
      if (code === "InvalidUnicode" && next === "u" && !/^[0-9a-fA-F]{4}/.test(text.slice(i + 2, i + 6))) return i;
      i++;
    }
  }
  return e.offset;
}

/** The words for a syntax error at `offset`: a comma is expected before a brace in an object, a bracket in an array. */
function syntaxMessage(text: string, e: ParseError): string {
  const code = printParseErrorCode(e.error);
  let words = SYNTAX_WORDS[code];
  if (code === "CommaExpected") {
    const stack: ("object" | "array")[] = [];
    visit(
      text,
      {
        onObjectBegin: (o) => void (o < e.offset && stack.push("object")),
        onObjectEnd: (o) => void (o < e.offset && stack.pop()),
        onArrayBegin: (o) => void (o < e.offset && stack.push("array")),
        onArrayEnd: (o) => void (o < e.offset && stack.pop()),
      },
      { allowTrailingComma: true, disallowComments: false },
    );
    words = stack[stack.length - 1] === "array" ? "expected a comma or a closing bracket ']'" : "expected a comma or a closing brace '}'";
  }
  if (code === "InvalidSymbol") {
    // a bare word is the usual case: an unquoted name or string, True for true
    const word = /^[A-Za-z_$][\w$-]*/.exec(text.slice(e.offset))?.[0];
    const c = [...text.slice(e.offset)][0] ?? "";
    words =
      word !== undefined
        ? `unexpected word '${word.slice(0, 40)}' (a string or a property name needs double quotes; true, false and null are lower case)`
        : `unexpected character '${/[\u0000-\u001f\u007f-\u009f]/.test(c) ? `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}` : c}'${c === "'" ? " (strings need double quotes)" : ""}`;
  }
  words ??= `syntax error (${code})`;
  // at the very end of the file (only blanks and comments after the offset): say so first
  const rest = text.slice(e.offset).replace(/\/\/[^\n]*|\/\*[\s\S]*?\*\/|\s+/g, "");
  return rest === "" && code !== "EndOfFileExpected" ? `unexpected end of file: ${words}` : words;
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

/** The offset a problem at `path` points at: the key itself for a key problem, else its value (or its container). */
function offsetOf(text: string, path: readonly (string | number)[], atKey: boolean): number | null {
  const root = parseTree(text, [], { allowTrailingComma: true, disallowComments: false });
  if (root === undefined) return null;
  const node = findNodeAtLocation(root, [...path]);
  if (node === undefined) return null;
  if (atKey && node.parent?.type === "property") return node.parent.children?.[0]?.offset ?? node.offset;
  return node.offset;
}

/** `FILE:LINE:COL: message` and the excerpt, or `FILE: message` when the place can't be found. */
function placed(path: string, text: string, where: readonly (string | number)[], atKey: boolean, message: string): ConfigError {
  const at = offsetOf(text, where, atKey);
  return new ConfigError(at === null ? `${path}: ${message}` : `${path}:${lineColumn(text, at)}: ${message}\n${excerpt(text, at)}`);
}

/** A problem found in the file: where (a path into the value) and what. */
interface Placed {
  path: (string | number)[];
  atKey: boolean;
  message: string;
}

/** A section's own parser (its schema and the rules between keys that a schema can't say), its problem placed under the section's key. */
function section<T>(key: string, check: () => T, problems: Placed[]): T | undefined {
  try {
    return check();
  } catch (e) {
    if (e instanceof SettingsValueError) {
      problems.push({ path: [key, ...e.path], atKey: e.atKey, message: e.message });
      return undefined;
    }
    throw e;
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * Read and check a config file against the config schema (`CONFIG_SCHEMA` in
 * config-schema.ts: the top level here, each section by its own parser). Throws
 * {@link ConfigError} naming the file, the line and column, and the key.
 */
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
    const at = errorOffset(text, e);
    throw new ConfigError(`${path}:${lineColumn(text, at)}: ${syntaxMessage(text, e)}\n${excerpt(text, at)}`);
  }
  const dup = duplicateKey(text);
  if (dup !== null) throw new ConfigError(`${path}:${lineColumn(text, dup.offset)}: ${dup.message}\n${excerpt(text, dup.offset)}`);
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new ConfigError(`${path}: the top level must be an object`);
  }
  const raw = value as Record<string, unknown>;
  const problems: Placed[] = [];
  const top = checkSettings(validateTopLevel, value, "");
  if (top !== null) problems.push(top);
  const here = dirname(path);
  const out: FileConfig = {};
  // each section checks itself; with problems in several places, the first in the file is reported
  if (isObject(raw.policy)) out.policy = section("policy", () => parsePolicyConfig(raw.policy), problems);
  if (isObject(raw.tools)) out.tools = section("tools", () => parseToolsConfig(raw.tools), problems);
  if (isObject(raw.mcpServers)) out.mcpServers = section("mcpServers", () => parseMcpServers(path, raw.mcpServers), problems);
  if (problems.length > 0) {
    const offsets = problems.map((p) => offsetOf(text, p.path, p.atKey) ?? Number.MAX_SAFE_INTEGER);
    const first = offsets.indexOf(Math.min(...offsets));
    const p = problems[first]!;
    throw placed(path, text, p.path, p.atKey, p.message);
  }
  for (const key of ["max_input_bytes", "max_depth", "max_file_bytes", "default_timeout_ms"] as const) {
    if (raw[key] !== undefined) out[key] = raw[key] as number;
  }
  if (raw.project_instructions !== undefined) out.project_instructions = raw.project_instructions as boolean;
  for (const key of ["root", "history", "skills_dir"] as const) {
    if (raw[key] !== undefined) out[key] = resolve(here, raw[key] as string);
  }
  if (raw.store !== undefined) {
    const store = raw.store as string;
    out.store = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(store) ? store : resolve(here, store);
  }
  return out;
}

/**
 * What a front end's flags say, already parsed (the CLI turns `--max-depth 9`
 * into `maxDepth: 9` and reports a malformed value itself). Every field is
 * optional: what is absent comes from the config file, then the default.
 */
export interface SettingsOverrides {
  /** `--config FILE`; without it `AGENTCORE_CONFIG`, then no file. */
  config?: string;
  root?: string;
  maxInputBytes?: number;
  maxDepth?: number;
  history?: string;
  /** `--tools LIST`: exactly these workspace tools, with their configured settings. */
  tools?: string;
  skillsDir?: string;
  /** `--store`; without it `AGENTCORE_STORE`, then the config's `store`. */
  store?: string;
}

/** The settings a front end runs with: the config file's, with the flags over them, and the defaults. */
export interface HostSettings {
  /** The config file read, if any (kept out of the workspace tools' reach). */
  configPath?: string;
  root?: string;
  maxBytes: number;
  maxDepth: number;
  maxFileBytes?: number;
  defaultTimeoutMs?: number;
  policy?: FileConfig["policy"];
  history?: string;
  store?: string;
  tools?: WorkspaceToolsOptions;
  skillsDir?: string;
  mcpServers?: FileConfig["mcpServers"];
  /** false: no AGENTS.md in the system prompt (the config's `project_instructions`). */
  projectInstructions?: boolean;
}

/** A flag's value that the settings refuse (`--tools` naming no known tool): a usage problem of that flag. */
export class SettingsFlagError extends ConfigError {
  override name = "SettingsFlagError";
  constructor(
    message: string,
    readonly flag: string,
  ) {
    super(message);
  }
}

/**
 * The flags over the config file over the defaults, the one merge every
 * front end (the CLI's commands, `serve`) uses. Throws {@link ConfigError}
 * for a bad file and {@link SettingsFlagError} for a flag value the settings
 * refuse.
 */
export function resolveSettings(
  flags: SettingsOverrides,
  env: Record<string, string | undefined> = globalThis.process?.env ?? {},
): HostSettings {
  const configPath = flags.config ?? env.AGENTCORE_CONFIG;
  const file: FileConfig = configPath !== undefined && configPath !== "" ? loadConfig(configPath) : {};
  const s: HostSettings = {
    root: flags.root ?? file.root,
    maxBytes: flags.maxInputBytes ?? file.max_input_bytes ?? DEFAULT_MAX_BYTES,
    maxDepth: flags.maxDepth ?? file.max_depth ?? DEFAULT_MAX_DEPTH,
    maxFileBytes: file.max_file_bytes,
    defaultTimeoutMs: file.default_timeout_ms,
    policy: file.policy,
    history: flags.history ?? file.history,
    store: flags.store ?? (env.AGENTCORE_STORE || undefined) ?? file.store,
    tools: file.tools,
    skillsDir: flags.skillsDir ?? file.skills_dir,
    mcpServers: file.mcpServers !== undefined && Object.keys(file.mcpServers).length > 0 ? file.mcpServers : undefined,
  };
  if (file.project_instructions !== undefined) s.projectInstructions = file.project_instructions;
  if (configPath !== undefined && configPath !== "") s.configPath = configPath;
  if (flags.tools !== undefined) {
    try {
      s.tools = selectTools(flags.tools, file.tools);
    } catch (e) {
      throw new SettingsFlagError((e as Error).message, "--tools");
    }
  }
  return s;
}
