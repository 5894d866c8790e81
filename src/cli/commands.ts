/**
 * The commands that dispatch tool calls or run agents (`tools`, `execute`,
 * `run`, `agent`, `chat`, `mcp`), once main.ts has parsed and checked their
 * command line: settings from the config and flags, the host's runtime, and
 * the command itself.
 *
 * main.ts loads this module with import() only for these commands, so that
 * `--version`, `--help` and usage errors never evaluate the runtime (ajv, the
 * WASM core), the config loader or the workspace tools.
 *
 * @module
 */
import { openSync, readSync, readFileSync, closeSync, fstatSync } from "node:fs";
import { serializeEnvelope, type Runtime } from "../runtime/index.ts";
import type { Envelope } from "../core/envelope.ts";
import { AgentcoreError, DEFAULT_MAX_BYTES, HARD_MAX_BYTES, HARD_MAX_DEPTH } from "../core/errors.ts";
import { concatBytes } from "../core/bytes.ts";
import { resolveSettings, SettingsFlagError, type HostSettings, type SettingsOverrides } from "../host/settings.ts";
import { runtimeWithMcp } from "../host/runtime.ts";
import type { ToolApprover } from "../runtime/middleware/index.ts";
import { APPROVE_ALL_WARNING, gateMiddleware } from "./gate.ts";
import { LineFramer, isBlank, type Line } from "../core/lines.ts";
import type { LineWriter } from "./output.ts";
import { Progress } from "./progress.ts";
import type { AgentFlags } from "./agent.ts";
import type { ChatFlags } from "./chat.ts";
import { intOption, UsageError, shown } from "./args.ts";
import type { CommandName } from "./args.ts";

/** The commands main.ts parses and this module runs (the others parse their own options). */
export type CallCommand = Exclude<CommandName, "history" | "sessions" | "serve" | "skills" | "store" | "version">;

/** The host's settings, and what the command line adds: who answers approvals. */
interface Settings extends HostSettings {
  /** The command reads its input from stdin (`-`): no TTY approver then (approval fails closed). */
  stdinIsInput?: boolean;
  /** agent and chat: side-effecting tools ask first even without a config policy (see gate.ts). */
  defaultGate?: boolean;
  /** --approve-all: approve every call that would ask. */
  approveAll?: boolean;
  /** The command's own approver (the chat REPL's) instead of the TTY approver. */
  approver?: ToolApprover;
}

/** A flag's value as an integer from 1 to `max` (a usage error names the command in main's catch). */
function positiveInt(flag: string, raw: string, max: number): number {
  return intOption("", flag, raw, 1, max);
}

/** `--context-window N` of agent and chat: an integer from 1024 (the derived budget's rule, src/context/window.ts). */
function contextWindowFlag(raw: string): number {
  const n = positiveInt("--context-window", raw, 100_000_000);
  if (n < 1024) throw new UsageError(`--context-window must be at least 1024 tokens, got ${n}`);
  return n;
}

/** The flags over the config file (the merge is the host's: src/host/settings.ts). */
function settingsFrom(values: Record<string, string | boolean | undefined>): Settings {
  const flags: SettingsOverrides = {};
  if (typeof values.config === "string") flags.config = values.config;
  if (typeof values.root === "string") flags.root = values.root;
  if (typeof values["max-input-bytes"] === "string")
    flags.maxInputBytes = positiveInt("--max-input-bytes", values["max-input-bytes"], HARD_MAX_BYTES);
  if (typeof values["max-depth"] === "string") flags.maxDepth = positiveInt("--max-depth", values["max-depth"], HARD_MAX_DEPTH);
  if (typeof values.history === "string") flags.history = values.history;
  if (typeof values.tools === "string") flags.tools = values.tools;
  if (typeof values.store === "string") flags.store = values.store;
  try {
    return resolveSettings(flags);
  } catch (e) {
    if (e instanceof SettingsFlagError) throw new UsageError(e.message);
    throw e;
  }
}

/** The options `agent` and `chat` share: the model, the session, the plan, skills and the run limits. */
function modelFlags(
  values: Record<string, string | boolean | undefined>,
  settings: Settings,
): Omit<AgentFlags, "task" | "events" | "continue"> {
  if (typeof values.store === "string" && typeof values["sessions-dir"] === "string")
    throw new UsageError(
      "--store and --sessions-dir both say where the sessions are: give one (--sessions-dir DIR is the same as --store DIR; a postgres:// store needs --store)",
    );
  const flags: Omit<AgentFlags, "task" | "events" | "continue"> = {
    script: values.script as string | undefined,
    preset: values.preset as string | undefined,
    model: values.model as string | undefined,
    modelUrl: values["model-url"] as string | undefined,
    system: values.system as string | undefined,
    session: values.session as string | undefined,
    branch: values.branch as string | undefined,
    sessionsDir: values["sessions-dir"] as string | undefined,
    store: settings.store,
    storeFlag: values.store as string | undefined,
    plan: values["no-plan"] !== true,
    projectInstructions: values["no-project-instructions"] !== true && settings.projectInstructions !== false,
    skills: (values.skills as string | undefined) ?? settings.skillsDir,
  };
  if (typeof values["max-steps"] === "string") flags.maxSteps = positiveInt("--max-steps", values["max-steps"], 1_000_000);
  if (typeof values["max-run-tokens"] === "string") {
    flags.maxRunTokens = positiveInt("--max-run-tokens", values["max-run-tokens"], Number.MAX_SAFE_INTEGER);
  }
  return flags;
}

/** Closers of the MCP servers connected by {@link runtimeFor}; run when main() returns. */
const mcpClosers: (() => Promise<void>)[] = [];

/**
 * The host's runtime for the settings, with the command's policy gate (see
 * gate.ts: the config's policy, or for agent and chat side-effecting tools
 * ask first; `require_approval` is answered on the terminal, by the chat
 * REPL, or by --approve-all; with stdin as the command's input, denied), and
 * the config's MCP servers, stopped when main() returns.
 */
async function runtimeFor(s: Settings): Promise<Runtime> {
  const { runtime, close } = await runtimeWithMcp(s, gateMiddleware(s));
  mcpClosers.push(close);
  return runtime;
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
export class InputError extends AgentcoreError {
  readonly code: string = "INPUT_UNREADABLE";
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

// ---------------------------------------------------------------- the command

/** Stop the MCP servers {@link runtimeFor} connected (and wait for their processes); main.ts calls it when the command ends. */
export async function closeMcpServers(): Promise<void> {
  await Promise.all(mcpClosers.splice(0).map((close) => close()));
}

/**
 * Run `name` with its parsed options and positionals (already checked by main.ts).
 * Resolves to the exit status; errors are rendered by main.ts (src/cli/exit.ts).
 */
export async function runCallCommand(
  name: CallCommand,
  values: Record<string, string | boolean | undefined>,
  rest: string[],
  out: LineWriter,
): Promise<number> {
  const settings = settingsFrom(values);
  settings.stdinIsInput = rest[0] === "-";
  if (name === "agent" || name === "chat") {
    // Side-effecting tools ask first unless the config's policy says otherwise.
    settings.defaultGate = true;
    if (values["approve-all"] === true) {
      settings.approveAll = true;
      process.stderr.write(`${APPROVE_ALL_WARNING}\n`);
    }
  }
  let status: number;
  switch (name) {
    case "tools":
      status = cmdTools(await runtimeFor(settings), values.json === true, out);
      break;
    case "execute":
      status = await cmdExecute(await runtimeFor(settings), rest[0]!, out);
      break;
    case "run": {
      const proc = (globalThis as { process?: { stderr: { isTTY?: boolean }; stdout: { isTTY?: boolean } } }).process;
      // Progress for results going to a file or pipe: with stdout on the terminal too, the redrawn
      // line would end up in front of result lines (and the results show the progress anyway).
      const progress = proc?.stderr.isTTY && !proc.stdout.isTTY ? new Progress() : null;
      status = await cmdRun(await runtimeFor(settings), rest[0]!, out, progress);
      break;
    }
    case "agent": {
      let task = rest[0] ?? "";
      if (task === "-") {
        const bytes = await readAllBounded("-", 1 << 20);
        if (bytes === null) throw new InputError("the task read from stdin exceeds 1 MiB");
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
        resume: values.resume === true,
        suspendOnApproval: values["suspend-on-approval"] === true,
        suspendByConfig: settings.policy?.on_approval === "suspend",
      };
      if (typeof values["context-window"] === "string") flags.contextWindow = contextWindowFlag(values["context-window"]);
      if (typeof values["output-schema"] === "string") flags.outputSchema = values["output-schema"];
      if (Array.isArray(values.image) && values.image.length > 0) flags.images = values.image as string[];
      if (values["show-thinking"] === true) flags.showThinking = true;
      // Loaded on demand: the agent pulls in the model providers (and the
      // openai SDK), which `execute` and `run` never need at start-up.
      const { cmdAgent } = await import("./agent.ts");
      status = await cmdAgent(await runtimeFor(settings), flags, out);
      break;
    }
    case "chat": {
      const chatFlags: ChatFlags = {
        ...modelFlags(values, settings),
        task: "",
        approvalTimeoutMs: settings.policy?.approval_timeout_ms,
      };
      if (typeof values["context-window"] === "string") chatFlags.contextWindow = contextWindowFlag(values["context-window"]);
      if (values["show-thinking"] === true) chatFlags.showThinking = true;
      // Loaded on demand, like agent. The REPL answers approvals itself.
      const chat = await import("./chat.ts");
      const gate = chat.createReplApprover();
      settings.approver = gate.approver;
      status = await chat.cmdChat(await runtimeFor(settings), chatFlags, gate);
      break;
    }
    case "mcp": {
      // stdin carries JSON-RPC: there is no terminal to ask, so require_approval is denied.
      settings.stdinIsInput = true;
      const { cmdMcp } = await import("./mcp.ts");
      status = await cmdMcp(await runtimeFor(settings));
      break;
    }
  }
  out.flush();
  return status;
}
