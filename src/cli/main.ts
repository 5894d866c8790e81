#!/usr/bin/env bun
/**
 * The `agentcore` command line: `tools`, `execute` and `run`.
 *
 * stdout carries results only (compact envelopes, or the tool list); logs,
 * progress and usage errors go to stderr.
 *
 * Exit status: 0 when every call succeeded; 1 when a call returned
 * `success:false`; 2 for usage errors, unreadable input files, output failures
 * and unrecoverable runtime failures.
 *
 * @module
 */
import { openSync, readSync, readFileSync, closeSync, fstatSync, statSync } from "node:fs";
import { parseArgs } from "node:util";
import { createRuntime, serializeEnvelope, type Runtime } from "../runtime/index.ts";
import type { Envelope } from "../runtime/envelope.ts";
import { DEFAULT_MAX_BYTES, DEFAULT_MAX_DEPTH, HARD_MAX_BYTES, HARD_MAX_DEPTH } from "../core/errors.ts";
import { VERSION } from "../version.ts";
import { concatBytes } from "../core/bytes.ts";
import { loadConfig, ConfigError, type FileConfig } from "./config.ts";
import type { ToolApprover } from "../middleware/index.ts";
import { APPROVE_ALL_WARNING, gateMiddleware } from "./gate.ts";
import type { ToolMiddleware as PolicyMiddleware } from "../runtime/middleware.ts";
import { LineFramer, isBlank, type Line } from "./lines.ts";
import { LineWriter, OutputClosedError, OutputError, outputFailure, PIPE_CLOSED_STATUS } from "./output.ts";
import { Progress } from "./progress.ts";
import type { AgentFlags } from "./agent.ts";
import type { ChatFlags } from "./chat.ts";
import { cmdHistory } from "./history.ts";
import { selectTools, workspaceTools, type WorkspaceToolsOptions } from "../tools/workspace/index.ts";
import type { AnyToolDefinition } from "../tools/definition.ts";
import { HistoryLog, historyMiddleware } from "../runtime/history.ts";
import type { ToolMiddleware } from "../runtime/middleware.ts";

const HELP = `agentcore ${VERSION} — a strict local runtime for LLM tool calls and agent runs

Usage:
  agentcore tools [--json]          list the registered tools
  agentcore execute '<json>'        dispatch one tool call and print its envelope
  agentcore execute -               read one tool call from stdin
  agentcore run FILE.jsonl          dispatch one call per line, in order
  agentcore run -                   read JSONL calls from stdin
  agentcore agent "TASK"            run an agent on TASK with the built-in tools (- reads TASK from stdin)
  agentcore agent --session ID "TASK"  record the run in a durable session (resuming its messages first);
                                    --continue instead of TASK continues the session's last run
  agentcore chat                    the interactive agent: a REPL with streamed answers, one line per tool
                                    call, the plan as a checklist, approvals at the prompt, /steer /abort
                                    /continue /compact /sessions /fork (/help inside); kept in a session
  agentcore sessions list|show|tree|fork|rollback|retry|recover …   read, branch and recover sessions
                                    (agentcore sessions --help); recover closes a run a crash left unfinished
  agentcore serve [--port N | --unix PATH] …   run the local API daemon on 127.0.0.1:8787 (agentcore serve --help)
  agentcore skills list [--json] [--dir DIR]   list the skills a task can activate with $name or skill:name
  agentcore history --file FILE     read an execution history log: [--tool T] [--since 10m|2h|1d|ISO-TIME]
                                    [--failed] [--json] (agentcore history --help)
  agentcore mcp                     serve the registered tools to an MCP client over stdio (stdout is
                                    JSON-RPC only; validation and policy apply; require_approval is denied)
  agentcore --help | --version

Tool-call shapes accepted:
  {"id":"c1","tool":"echo","arguments":{...}}                              agentcore
  {"id":"c1","type":"function","function":{"name":"echo","arguments":"{...}"}}   OpenAI chat
  {"type":"function_call","call_id":"c1","name":"echo","arguments":"{...}"}      OpenAI Responses
  {"type":"tool_use","id":"c1","name":"echo","input":{...}}                      Anthropic

Options (before or after the command; history, sessions, serve and skills take their own, see their --help):
  --root DIR             folder the file tools are confined to (default: the current directory)
  --max-input-bytes N    largest accepted call in bytes (default ${DEFAULT_MAX_BYTES}, at most ${HARD_MAX_BYTES})
  --max-depth N          deepest accepted nesting of arrays and objects (default ${DEFAULT_MAX_DEPTH}, at most ${HARD_MAX_DEPTH})
  --config FILE          JSONC settings file (root, max_input_bytes, max_depth, max_file_bytes,
                         default_timeout_ms, history, policy, tools, skills_dir, mcpServers); flags override it.
                         Also AGENTCORE_CONFIG. A "policy" section (default, rules) allows, denies (DENIED)
                         or asks on the terminal before each tool call. "mcpServers" (command/args/env or
                         url/headers, as other MCP clients) adds each server's tools as SERVER__TOOL to
                         tools, execute, run, agent, chat, mcp and serve; the servers stop when the command ends.
  --json                 tools: print the list as JSON
  --tools LIST           enable workspace tools (comma-separated): list_dir, glob, grep, git_diff,
                         write_file, apply_patch, exec; 'read' = the four read-only ones, 'workspace' =
                         all but exec. exec needs the config's "tools.exec" section (its allowlist).
                         Without --tools the config's "tools" section decides; default: none.
  --history FILE         execute, run, agent, chat, mcp: append every call to FILE, a JSONL audit log
                         (one fsynced line per call: time, tool, call id, effect, decision, ms, result,
                         SHA-256 of the arguments); read it with 'agentcore history --file FILE'
  -h, --help             show this help
  -V, --version          print the version

Agent options (agentcore agent; chat takes them too, except --events and --continue):
  --script FILE          play a scripted model (JSONL, one turn per line); no network
  --preset NAME          openai, lmstudio (http://localhost:1234/v1) or ollama (http://localhost:11434/v1)
  --model NAME           model name (else CHAT_MODEL)
  --model-url URL        OpenAI-compatible base URL (else the --preset's, else MODEL_URL)
  --events jsonl         print every event as one JSON line on stdout, ending with agent_finished
  --max-steps N          model turns per run (default 20)
  --max-run-tokens N     token budget of the run (default: none)
  --system TEXT          system prompt
  --session ID           record the run in session ID (a JSONL journal); its messages are restored first
  --branch B             the session branch to resume and record on (default main; see 'sessions fork')
  --sessions-dir DIR     journal directory (default: .agentcore/sessions under --root, created 0700)
  --continue             continue the session's last run (continueRun) instead of a new task
  --context-window N     agent, chat: the model's context window in tokens (at least 1024); turns on automatic
                         compaction: a quarter of it is kept free for the answer, and when the history
                         outgrows the rest, older turns are summarised by the model (also on an overflow)
  --approve-all          agent, chat: approve every tool call that would ask first, and say so on stderr
                         (without a config "policy", read-only tools run and side-effecting tools ask on
                         the terminal; with stdin not a terminal they are refused)
  --no-plan              agent, chat: do not offer the update_plan tool nor ask the model to plan first
  --skills DIR           agent, chat: skills folder (default: the config's skills_dir, else .agentcore/skills under
                         --root when it exists); its index goes to the model, $name or skill:name in the
                         task activates one (agentcore skills --help)

Output:
  One compact JSON envelope per call on stdout:
  {"id":…,"success":…,"tool":…,"result":…,"error":null|{"code","message","details"},"duration_ms":…}
  run: one line per non-blank input line, in input order; a malformed or over-long line gets its
  own error envelope (details.input_line says which) and processing continues. When stderr is a
  terminal and stdout is not, progress (calls done, rate) goes to stderr.

Exit status:
  0  every call succeeded (agent: the run completed)
  1  at least one call returned "success":false (agent: the run did not complete)
  2  usage error, unreadable input file, output failure or runtime failure
  141  stdout's reader went away (a closed pipe: agentcore run FILE | head); nothing is printed
  chat: 0 when it ends, 1 when the session journal could not be written, 2 for a setup error
  agent, chat: 143 / 129 after SIGTERM / SIGHUP (the run is aborted and journaled first); a second
  signal while stopping exits at once with 128 + its number (130 for a second Ctrl-C)

Environment:
  AGENTCORE_LOG_LEVEL    trace, debug, info, warn (default) or error; logs go to stderr
  AGENTCORE_CONFIG       settings file used when --config is not given
  CHAT_MODEL, MODEL_URL, MODEL_API_KEY, LLM_TIMEOUT (s), LLM_TEMPERATURE, LLM_INCLUDE_USAGE
                         the model for 'agent' and 'chat' when no --script is given

Examples:
  agentcore execute '{"id":"c1","tool":"echo","arguments":{"message":"hello"}}'
  echo '{"id":"c2","tool":"read_file","arguments":{"path":"README.md"}}' | agentcore execute -
  agentcore run examples/tool_calls.jsonl
  agentcore agent --script examples/agent_script.jsonl "Read examples/hello.txt"
  agentcore agent --preset ollama --model qwen3 "What is in README.md?"
  agentcore chat --preset ollama --model qwen3 --tools write_file
`;

/** A usage problem: printed with a hint, exit status 2. */
class UsageError extends Error {
  override name = "UsageError";
}

interface Settings {
  root?: string;
  maxBytes: number;
  maxDepth: number;
  maxFileBytes?: number;
  defaultTimeoutMs?: number;
  /** The config file's `policy` section: turns the policy middleware on. */
  policy?: FileConfig["policy"];
  /** The command reads its input from stdin (`-`): no TTY approver then (approval fails closed). */
  stdinIsInput?: boolean;
  /** --history FILE: the execution history log. */
  history?: string;
  /** The config's skills_dir (agent). */
  skillsDir?: string;
  /** Workspace tools to register (config "tools" section, or --tools). */
  tools?: WorkspaceToolsOptions;
  /** The config file in use (kept out of the workspace tools' reach). */
  configPath?: string;
  /** agent and chat: side-effecting tools ask first even without a config policy (see gate.ts). */
  defaultGate?: boolean;
  /** --approve-all: approve every call that would ask. */
  approveAll?: boolean;
  /** The command's own approver (the chat REPL's) instead of the TTY approver. */
  approver?: ToolApprover;
  /** The config's `mcpServers`: connected by {@link runtimeFor}. */
  mcpServers?: FileConfig["mcpServers"];
}

function env(name: string): string | undefined {
  const p = (globalThis as { process?: { env: Record<string, string | undefined> } }).process;
  return p?.env[name];
}

function positiveInt(flag: string, raw: string, max: number): number {
  if (!/^[0-9]+$/.test(raw)) throw new UsageError(`${flag} needs a positive integer, got '${raw}'`);
  const n = Number(raw);
  if (n < 1 || n > max) throw new UsageError(`${flag} must be between 1 and ${max}, got ${raw}`);
  return n;
}

/** `--context-window N` of agent and chat: an integer from 1024 (the derived budget's rule, src/context/window.ts). */
function contextWindowFlag(raw: string): number {
  const n = positiveInt("--context-window", raw, 100_000_000);
  if (n < 1024) throw new UsageError(`--context-window must be at least 1024 tokens, got ${n}`);
  return n;
}

function settingsFrom(values: Record<string, string | boolean | undefined>): Settings {
  const configPath = (values.config as string | undefined) ?? env("AGENTCORE_CONFIG");
  const file: FileConfig = configPath ? loadConfig(configPath) : {};
  const s: Settings = {
    root: file.root,
    maxBytes: file.max_input_bytes ?? DEFAULT_MAX_BYTES,
    maxDepth: file.max_depth ?? DEFAULT_MAX_DEPTH,
    maxFileBytes: file.max_file_bytes,
    defaultTimeoutMs: file.default_timeout_ms,
    policy: file.policy,
    history: file.history,
    tools: file.tools,
    configPath,
    skillsDir: file.skills_dir,
    mcpServers: file.mcpServers,
  };
  // the config file's values: a config error naming the file, like its other checks
  if (s.maxBytes > HARD_MAX_BYTES) throw new ConfigError(`${configPath}: "max_input_bytes" must be at most ${HARD_MAX_BYTES}`);
  if (s.maxDepth > HARD_MAX_DEPTH) throw new ConfigError(`${configPath}: "max_depth" must be at most ${HARD_MAX_DEPTH}`);
  if (typeof values.root === "string") s.root = values.root;
  if (typeof values["max-input-bytes"] === "string") {
    s.maxBytes = positiveInt("--max-input-bytes", values["max-input-bytes"], HARD_MAX_BYTES);
  }
  if (typeof values["max-depth"] === "string") s.maxDepth = positiveInt("--max-depth", values["max-depth"], HARD_MAX_DEPTH);
  if (typeof values.history === "string") s.history = values.history;
  if (typeof values.tools === "string") {
    try {
      s.tools = selectTools(values.tools, file.tools);
    } catch (e) {
      throw new UsageError((e as Error).message);
    }
  }
  return s;
}

/** The options `agent` and `chat` share: the model, the session, the plan, skills and the run limits. */
function modelFlags(values: Record<string, string | boolean | undefined>, settings: Settings): Omit<AgentFlags, "task" | "events" | "continue"> {
  const flags: Omit<AgentFlags, "task" | "events" | "continue"> = {
    script: values.script as string | undefined,
    preset: values.preset as string | undefined,
    model: values.model as string | undefined,
    modelUrl: values["model-url"] as string | undefined,
    system: values.system as string | undefined,
    session: values.session as string | undefined,
    branch: values.branch as string | undefined,
    sessionsDir: values["sessions-dir"] as string | undefined,
    plan: values["no-plan"] !== true,
    skills: (values.skills as string | undefined) ?? settings.skillsDir,
  };
  if (typeof values["max-steps"] === "string") flags.maxSteps = positiveInt("--max-steps", values["max-steps"], 1_000_000);
  if (typeof values["max-run-tokens"] === "string") {
    flags.maxRunTokens = positiveInt("--max-run-tokens", values["max-run-tokens"], Number.MAX_SAFE_INTEGER);
  }
  return flags;
}

function makeRuntime(s: Settings): Runtime {
  if (s.root !== undefined) {
    let isDir: boolean;
    try {
      isDir = statSync(s.root).isDirectory();
    } catch {
      throw new UsageError(`root ${s.root}: no such folder`);
    }
    if (!isDir) throw new UsageError(`root ${s.root}: not a folder`);
  }
  const middleware: ToolMiddleware[] = [];
  // The history goes first (outermost), so that it also records refused calls.
  if (s.history !== undefined) middleware.push(historyMiddleware(openHistory(s.history)));
  let tools: AnyToolDefinition[] = [];
  if (s.tools !== undefined) {
    try {
      // agentcore's own files stay out of the tools' reach when they lie inside the root
      const protect = [s.configPath, s.history].filter((p): p is string => p !== undefined);
      tools = workspaceTools(s.tools, s.root ?? process.cwd(), { protect });
    } catch (e) {
      throw new ConfigError(`tools: ${(e as Error).message}`);
    }
  }
  return createRuntime({
    root: s.root,
    tools,
    limits: { maxBytes: s.maxBytes, maxDepth: s.maxDepth },
    maxFileBytes: s.maxFileBytes,
    defaultTimeoutMs: s.defaultTimeoutMs,
    middleware: [...middleware, ...policyMiddleware(s)],
  });
}

/** Closers of the MCP servers connected by {@link runtimeFor}; run when main() returns. */
const mcpClosers: (() => Promise<void>)[] = [];

/**
 * {@link makeRuntime}, then, only when the config has `mcpServers`, connect
 * them and register their tools (the MCP code is loaded only then). A server
 * that cannot start, or a tool name collision, is a config error (exit 2).
 */
async function runtimeFor(s: Settings): Promise<Runtime> {
  const rt = makeRuntime(s);
  if (s.mcpServers === undefined || Object.keys(s.mcpServers).length === 0) return rt;
  const { attachMcpServersForCommand, McpStartupError } = await import("../mcp/attach.ts");
  try {
    // a signal, during the start-up or after it, stops the servers before exiting
    mcpClosers.push(await attachMcpServersForCommand(rt, s.mcpServers));
  } catch (e) {
    if (e instanceof McpStartupError) throw new ConfigError(e.message);
    throw e;
  }
  return rt;
}

function openHistory(path: string): HistoryLog {
  try {
    return HistoryLog.open(path);
  } catch (e) {
    throw new InputError((e as Error).message);
  }
}

/**
 * The policy middleware: the config's `policy` section, or for agent and chat
 * the default gate (side-effecting tools ask first); see gate.ts.
 * `require_approval` is answered on the terminal (stderr prompt, one line of
 * stdin), by the chat REPL, or by --approve-all; when stdin is the command's
 * input or not a TTY, approval is denied.
 */
function policyMiddleware(s: Settings): PolicyMiddleware[] {
  return gateMiddleware(s);
}

// ---------------------------------------------------------------- tools

function cmdTools(rt: Runtime, json: boolean, out: LineWriter): number {
  const tools = rt.registry.list();
  if (json) {
    const list = tools.map((t) => ({
      name: t.name,
      description: t.description,
      effect: t.effect ?? "side_effecting",
      strict: t.strict ?? false,
      parameters: t.parameters,
    }));
    out.line(JSON.stringify(list, null, 2));
    return 0;
  }
  const rows = tools.map((t) => [t.name, t.effect ?? "side_effecting", tableText(t.description)]);
  const w0 = Math.max(4, ...rows.map((r) => r[0]!.length));
  const w1 = Math.max(6, ...rows.map((r) => r[1]!.length));
  out.line(`${"NAME".padEnd(w0)}  ${"EFFECT".padEnd(w1)}  DESCRIPTION`);
  for (const r of rows) out.line(`${r[0]!.padEnd(w0)}  ${r[1]!.padEnd(w1)}  ${r[2]}`);
  return 0;
}

/**
 * A description as one table cell: runs of white space (newlines, tabs) become
 * one space and other control characters are shown as `\xNN`, so a
 * description from an MCP server can neither break the table nor send
 * escape sequences to the terminal.
 */
function tableText(text: string): string {
  return text
    .replace(/\s+/g, " ")
    .replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`)
    .trim();
}

// ---------------------------------------------------------------- input

const CHUNK = 1 << 20;

/** Read a whole input (a file or stdin) up to `limit` bytes; `null` past it. */
async function readAllBounded(source: string, limit: number): Promise<Uint8Array | null> {
  const parts: Uint8Array[] = [];
  let total = 0;
  for await (const chunk of chunks(source)) {
    total += chunk.length;
    if (total > limit) return null;
    parts.push(chunk.slice());
  }
  return concatBytes(parts);
}

/**
 * Byte chunks from a file path or `-` (stdin). A file is read synchronously in
 * 1 MiB blocks; stdin is read through the runtime's stream so that a terminal
 * or slow pipe never blocks other work.
 */
async function* chunks(source: string): AsyncGenerator<Uint8Array> {
  if (source === "-") {
    // Deno's stdin reads a directory as empty input; say what it is, as Bun's read error does
    let stdinIsDir = false;
    try {
      stdinIsDir = fstatSync(0).isDirectory();
    } catch {
      // no stat for stdin (closed, another platform): let the read decide
    }
    if (stdinIsDir) throw new InputError("cannot read stdin: EISDIR");
    const stdin = (globalThis as { process?: { stdin: AsyncIterable<Uint8Array | string> } }).process!.stdin;
    const it = stdin[Symbol.asyncIterator]();
    let done = false;
    try {
      for (;;) {
        let r: IteratorResult<Uint8Array | string>;
        try {
          r = await it.next();
        } catch (e) {
          done = true;
          // stdin redirected from a directory (EISDIR), a read error (EIO): the input cannot be read
          throw new InputError(`cannot read stdin: ${(e as NodeJS.ErrnoException).code ?? String(e)}`);
        }
        if (r.done) {
          done = true;
          return;
        }
        yield typeof r.value === "string" ? new TextEncoder().encode(r.value) : r.value;
      }
    } finally {
      // the caller stopped early (input over the limit): release stdin as for-await would
      if (!done) await it.return?.();
    }
  }
  let fd: number;
  try {
    fd = openSync(source, "r");
    if (fstatSync(fd).isDirectory()) {
      closeSync(fd);
      throw new InputError(`${source}: is a directory`);
    }
  } catch (e) {
    if (e instanceof InputError) throw e;
    throw new InputError(`cannot open ${source}: ${(e as NodeJS.ErrnoException).code ?? String(e)}`);
  }
  const buf = new Uint8Array(CHUNK);
  try {
    for (;;) {
      let n: number;
      try {
        n = readSync(fd, buf, 0, CHUNK, null);
      } catch (e) {
        throw new InputError(`cannot read ${source}: ${(e as NodeJS.ErrnoException).code ?? String(e)}`);
      }
      if (n === 0) return;
      yield buf.subarray(0, n);
    }
  } finally {
    closeSync(fd);
  }
}

/** The input file could not be opened or read: exit status 2. */
class InputError extends Error {
  override name = "InputError";
}

// ---------------------------------------------------------------- execute

async function cmdExecute(rt: Runtime, arg: string, out: LineWriter): Promise<number> {
  let input: string | Uint8Array;
  if (arg === "-") {
    // Read at most one chunk past the limit: the core then refuses the input
    // with JSON_SIZE and its offset, line and column, as for `execute '<json>'`.
    const max = rt.limits.maxBytes ?? DEFAULT_MAX_BYTES;
    const parts: Uint8Array[] = [];
    let total = 0;
    for await (const chunk of chunks("-")) {
      parts.push(chunk.slice());
      total += chunk.length;
      if (total > max + 2) break; // 2: room for a final CRLF
    }
    let bytes = concatBytes(parts);
    // The line break that ends the input (echo, a file saved with one) is not part of
    // the call, as in `run`: a call of exactly the limit is accepted with it.
    if (bytes.length > max && bytes.length <= max + 2 && bytes[bytes.length - 1] === 0x0a) {
      const end = bytes.length >= 2 && bytes[bytes.length - 2] === 0x0d ? bytes.length - 2 : bytes.length - 1;
      bytes = bytes.subarray(0, end);
    }
    input = bytes;
  } else {
    input = rawArgument(arg) ?? arg;
  }
  const env = await rt.dispatch(input);
  out.line(serializeEnvelope(env));
  return env.success ? 0 : 1;
}

/**
 * The bytes of a command-line argument as they were given. Runtimes decode
 * argv as UTF-8 and replace invalid bytes with U+FFFD, so the strict core would
 * never see them and `execute '<json>'` would accept what `execute -` refuses
 * (JSON_ENCODING). On Linux /proc/self/cmdline still holds the raw bytes: the
 * argument that decodes to `arg` (runs of U+FFFD compared as one, since
 * decoders split bad sequences differently) is returned. `null` when `arg`
 * has no U+FFFD or the bytes can't be read (another OS, no permission).
 */
function rawArgument(arg: string): Uint8Array | null {
  if (!arg.includes("\uFFFD")) return null;
  let cmdline: Uint8Array;
  try {
    cmdline = readFileSync("/proc/self/cmdline");
  } catch {
    return null;
  }
  const squash = (s: string) => s.replace(/\uFFFD+/g, "\uFFFD");
  const want = squash(arg);
  const decoder = new TextDecoder();
  let start = 0;
  for (let i = 0; i <= cmdline.length; i++) {
    if (i < cmdline.length && cmdline[i] !== 0) continue;
    const raw = cmdline.subarray(start, i);
    if (squash(decoder.decode(raw)) === want) return raw;
    start = i + 1;
  }
  return null;
}

// ---------------------------------------------------------------- run

/** The envelope for an input that was refused for its size before being read whole. */
function sizeEnvelope(max: number, details: Record<string, unknown>): Envelope {
  return {
    id: null,
    success: false,
    tool: null,
    result: null,
    error: {
      code: "JSON_SIZE",
      message: `input exceeds ${max} bytes`,
      details,
    },
    duration_ms: 0,
  };
}

async function cmdRun(rt: Runtime, source: string, out: LineWriter, progress: Progress | null): Promise<number> {
  const max = rt.limits.maxBytes ?? DEFAULT_MAX_BYTES;
  const framer = new LineFramer(max);
  let failed = 0;
  let pending: Line[] = [];
  const collect = (l: Line) => pending.push(l);

  const handle = async (lines: Line[]) => {
    for (const l of lines) {
      let env: Envelope | Promise<Envelope>;
      if (l.overlong) env = sizeEnvelope(max, { bytes: l.bytes });
      else if (isBlank(l.bytes)) continue;
      else env = rt.dispatch(l.bytes);
      if (env instanceof Promise) {
        out.flush();
        env = await env;
      }
      if (!env.success) {
        failed++;
        if (env.error) env.error.details.input_line = l.number;
      }
      out.line(serializeEnvelope(env));
      progress?.tick();
    }
  };

  for await (const chunk of chunks(source)) {
    framer.push(chunk, collect);
    const batch = pending;
    pending = [];
    await handle(batch);
    out.flush();
  }
  framer.end(collect);
  await handle(pending);
  out.flush();
  progress?.done();
  return failed > 0 ? 1 : 0;
}

// ---------------------------------------------------------------- main

/** Commands that parse their own options, so options written before them are moved after them. */
const SELF_PARSING = new Set(["history", "sessions", "serve", "skills"]);
/** Options of the main parser that take a value (the token after them is not a command). */
const VALUE_OPTIONS = new Set([
  "root", "config", "max-input-bytes", "max-depth", "history", "script", "preset", "model", "model-url", "events",
  "max-steps", "max-run-tokens", "system", "session", "branch", "sessions-dir", "tools", "skills", "context-window",
]);

/**
 * `agentcore --root DIR sessions list` means `agentcore sessions --root DIR list`:
 * move a self-parsing command written after options to the front, so its
 * own parser sees them (and names any it does not take).
 */
export function hoistCommand(argv: string[]): string[] {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--") return argv;
    if (a.startsWith("-")) {
      if (a.startsWith("--") && !a.includes("=") && VALUE_OPTIONS.has(a.slice(2))) i++;
      continue;
    }
    if (i > 0 && SELF_PARSING.has(a)) return [a, ...argv.slice(0, i), ...argv.slice(i + 1)];
    return argv;
  }
  return argv;
}

/** Run the CLI with `argv` (without the runtime and script). Resolves to the exit status. */
export async function main(argv: string[]): Promise<number> {
  const out = new LineWriter(1);
  argv = hoistCommand(argv);
  // `history` parses its own options (--file, --tool, --since, --failed, --json).
  if (argv[0] === "history") return cmdHistory(argv.slice(1), { out });
  // `sessions` parses its own options too (loaded on demand).
  if (argv[0] === "sessions") return (await import("./sessions.ts")).cmdSessions(argv.slice(1), { out });
  // `serve` too: it runs the daemon until SIGINT/SIGTERM (loaded on demand: Hono and the server).
  if (argv[0] === "serve") return (await import("./serve.ts")).cmdServe(argv.slice(1), { out });
  // `skills` as well (it loads the yaml parser).
  if (argv[0] === "skills") return (await import("./skills.ts")).cmdSkills(argv.slice(1), { out });
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        help: { type: "boolean", short: "h" },
        version: { type: "boolean", short: "V" },
        json: { type: "boolean" },
        root: { type: "string" },
        config: { type: "string" },
        "max-input-bytes": { type: "string" },
        "max-depth": { type: "string" },
        history: { type: "string" },
        script: { type: "string" },
        preset: { type: "string" },
        model: { type: "string" },
        "model-url": { type: "string" },
        events: { type: "string" },
        "max-steps": { type: "string" },
        "context-window": { type: "string" },
        "max-run-tokens": { type: "string" },
        system: { type: "string" },
        session: { type: "string" },
        branch: { type: "string" },
        "sessions-dir": { type: "string" },
        continue: { type: "boolean" },
        tools: { type: "string" },
        "approve-all": { type: "boolean" },
        "no-plan": { type: "boolean" },
        skills: { type: "string" },
      },
    });
  } catch (e) {
    return usage((e as Error).message);
  }
  const { values, positionals } = parsed;
  try {
    if (values.help) {
      out.line(HELP.trimEnd());
      out.flush();
      return 0;
    }
    if (values.version) {
      out.line(`agentcore ${VERSION}`);
      out.flush();
      return 0;
    }
    const [command, ...rest] = positionals;
    if (command === undefined) return usage("missing command");
    const agentOnly = ["events", "continue"] as const;
    const agentOrChat = ["script", "preset", "model", "model-url", "max-steps", "max-run-tokens", "system", "session", "branch", "sessions-dir", "approve-all", "no-plan", "skills", "context-window"] as const;
    if (command !== "agent") {
      const used = agentOnly.find((k) => values[k] !== undefined);
      if (used !== undefined) return usage(`--${used} applies to 'agent' only`);
    }
    if (command !== "agent" && command !== "chat") {
      const used = agentOrChat.find((k) => values[k] !== undefined);
      if (used !== undefined) return usage(`--${used} applies to 'agent' and 'chat' only`);
    }
    const settings = settingsFrom(values);
    settings.stdinIsInput = rest[0] === "-";
    if (command === "agent" || command === "chat") {
      // Side-effecting tools ask first unless the config's policy says otherwise.
      settings.defaultGate = true;
      if (values["approve-all"] === true) {
        settings.approveAll = true;
        process.stderr.write(`${APPROVE_ALL_WARNING}\n`);
      }
    }
    let status: number;
    switch (command) {
      case "tools":
        if (values.history !== undefined) return usage("--history applies to execute, run, agent, chat and mcp");
        if (rest.length > 0) return usage(`tools takes no arguments, got '${rest[0]}'`);
        status = cmdTools(await runtimeFor(settings), values.json === true, out);
        break;
      case "execute":
        if (rest.length !== 1) return usage("execute needs exactly one argument: a JSON tool call, or - for stdin");
        if (values.json) return usage("--json applies to 'tools' only");
        status = await cmdExecute(await runtimeFor(settings), rest[0]!, out);
        break;
      case "run": {
        if (rest.length !== 1) return usage("run needs exactly one argument: a JSONL file, or - for stdin");
        if (values.json) return usage("--json applies to 'tools' only");
        const proc = (globalThis as { process?: { stderr: { isTTY?: boolean }; stdout: { isTTY?: boolean } } }).process;
        // Progress for results going to a file or pipe: with stdout on the terminal too, the redrawn
        // line would end up in front of result lines (and the results show the progress anyway).
        const progress = proc?.stderr.isTTY && !proc.stdout.isTTY ? new Progress() : null;
        status = await cmdRun(await runtimeFor(settings), rest[0]!, out, progress);
        break;
      }
      case "agent": {
        if (values.continue === true) {
          if (rest.length !== 0) return usage("agent --continue takes no task: it continues the session's last run");
        } else if (rest.length !== 1) return usage('agent needs exactly one argument: the task in quotes, or - for stdin');
        let task = rest[0] ?? "";
        if (task === "-") {
          const bytes = await readAllBounded("-", 1 << 20);
          if (bytes === null) return usage("the task read from stdin exceeds 1 MiB");
          try {
            task = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
          } catch {
            // the model would get U+FFFD where the bytes were: refuse, as execute - does for a call
            throw new InputError("the task read from stdin is not valid UTF-8");
          }
        }
        const flags: AgentFlags = {
          ...modelFlags(values, settings),
          task,
          events: values.events as string | undefined,
          continue: values.continue === true,
        };
        if (typeof values["context-window"] === "string") flags.contextWindow = contextWindowFlag(values["context-window"]);
        // Loaded on demand: the agent pulls in the model providers (and the
        // openai SDK), which `execute` and `run` never need at start-up.
        const { cmdAgent } = await import("./agent.ts");
        status = await cmdAgent(await runtimeFor(settings), flags, out);
        break;
      }
      case "chat": {
        if (rest.length !== 0) return usage(`chat takes no arguments (type the task at its prompt), got '${rest[0]}'`);
        if (values.json) return usage("--json applies to 'tools' only");
        const chatFlags: ChatFlags = {
          ...modelFlags(values, settings),
          task: "",
          approvalTimeoutMs: settings.policy?.approval_timeout_ms,
        };
        if (typeof values["context-window"] === "string") chatFlags.contextWindow = contextWindowFlag(values["context-window"]);
        // Loaded on demand, like agent. The REPL answers approvals itself.
        const chat = await import("./chat.ts");
        const gate = chat.createReplApprover();
        settings.approver = gate.approver;
        status = await chat.cmdChat(await runtimeFor(settings), chatFlags, gate);
        break;
      }
      case "mcp": {
        if (rest.length > 0) return usage(`mcp takes no arguments, got '${rest[0]}'`);
        if (values.json) return usage("--json applies to 'tools' only");
        // stdin carries JSON-RPC: there is no terminal to ask, so require_approval is denied.
        settings.stdinIsInput = true;
        const { cmdMcp } = await import("./mcp.ts");
        status = await cmdMcp(await runtimeFor(settings));
        break;
      }
      default:
        return usage(`unknown command '${command}'`);
    }
    out.flush();
    return status;
  } catch (e) {
    if (e instanceof UsageError || (e instanceof Error && e.name === "AgentSetupError")) return usage((e as Error).message);
    // Not a usage problem (a session a crash left with an unfinished run): the message names the fix.
    if (e instanceof Error && e.name === "AgentSessionStateError") {
      process.stderr.write(`agentcore: ${e.message}\n`);
      return 2;
    }
    // stdout's reader went away (`agentcore run … | head`): stop quietly, as git does.
    if (e instanceof OutputClosedError) return PIPE_CLOSED_STATUS;
    if (e instanceof ConfigError || e instanceof InputError || e instanceof OutputError) {
      try {
        out.flush();
      } catch {
        // the output itself is what failed; the message below is all we can give
      }
      process.stderr.write(`agentcore: ${e.message}\n`);
      return 2;
    }
    process.stderr.write(`agentcore: internal error: ${(e as Error)?.stack ?? String(e)}\n`);
    return 2;
  } finally {
    // Stop the MCP servers (and wait for their processes) before exiting.
    await Promise.all(mcpClosers.splice(0).map((close) => close()));
  }
}

function usage(message: string): number {
  process.stderr.write(`agentcore: ${message}\nRun 'agentcore --help' for usage.\n`);
  return 2;
}

if (import.meta.main) {
  // An output failure out of a self-parsing command (sessions, skills …): quiet for a closed pipe.
  const status = await main(process.argv.slice(2)).catch((e: unknown) => {
    if (e instanceof OutputError) return outputFailure(e);
    throw e;
  });
  process.exitCode = status;
}
