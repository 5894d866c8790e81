/**
 * Command-line arguments: one option table per command, and a strict parser
 * that refuses what a command does not take (naming the nearest flag it does
 * take). The specs, usage errors, suggestions and help rendering are in
 * `argparse.ts`, re-exported here.
 *
 * Adding a flag to a command is one line in its table here (type, value
 * placeholder, help text with its default); the parser, `--help` and the
 * "applies to …" and "did you mean" messages follow from it. The tables are
 * plain data, so `main.ts` can know every command's flags without loading the
 * commands (serve pulls in the HTTP server, sessions the journal code).
 *
 * @module
 */

import { DEFAULT_MAX_BYTES, DEFAULT_MAX_DEPTH, HARD_MAX_BYTES, HARD_MAX_DEPTH } from "../core/errors.ts";
import { type CommandSpec, nearest, type OptionTable, type OptionValues, quotedList, shown, UsageError } from "./argparse.ts";

export * from "./argparse.ts";

// ---------------------------------------------------------------- parsing

/**
 * Parse `argv` against `table` for `command`. Long options as `--name VALUE`
 * or `--name=VALUE`, short ones as `-h`; `--` ends the options; `-` alone is
 * an argument (stdin). A string option takes the next argument as its value
 * unless that is an option itself (`--model --json`); give such a value as
 * `--model=--json`. Throws {@link UsageError} naming the command.
 */
export function parseCommandLine<T extends OptionTable>(
  command: string,
  table: T,
  argv: readonly string[],
): { values: OptionValues<T>; positionals: string[] } {
  const values: Record<string, string | boolean | string[]> = {};
  const positionals: string[] = [];
  const shorts = new Map<string, string>();
  for (const [name, spec] of Object.entries(table)) if (spec.short !== undefined) shorts.set(spec.short, name);
  const set = (name: string, value: string | boolean) => {
    const spec = table[name]!;
    // given twice: the last one wins, as with node:util parseArgs before (an alias can be overridden)
    if (spec.multiple) ((values[name] ??= []) as string[]).push(value as string);
    else values[name] = value;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--") {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (a === "-" || !a.startsWith("-")) {
      positionals.push(a);
      continue;
    }
    let name: string;
    let inline: string | undefined;
    if (a.startsWith("--")) {
      const eq = a.indexOf("=");
      name = eq === -1 ? a.slice(2) : a.slice(2, eq);
      inline = eq === -1 ? undefined : a.slice(eq + 1);
    } else {
      const long = a.length === 2 ? shorts.get(a[1]!) : undefined;
      if (long === undefined) throw new UsageError(unknownOption(command, table, a), command);
      name = long;
    }
    const spec = Object.hasOwn(table, name) ? table[name] : undefined;
    if (spec === undefined) throw new UsageError(unknownOption(command, table, `--${name}`), command);
    if (spec.type === "boolean") {
      if (inline !== undefined) throw new UsageError(`option --${name} takes no value, got '${shown(inline)}'`, command);
      set(name, true);
      continue;
    }
    let value = inline;
    if (value === undefined) {
      const next = argv[i + 1];
      if (next === undefined || (next !== "-" && next.startsWith("-") && looksLikeOption(next, shorts))) {
        // a value that starts with a dash goes after '=': --system=-terse
        // (not when the next argument is one of the command's options: then the value is simply missing)
        const known = next !== undefined && (Object.hasOwn(table, next.replace(/^--?/, "").split("=")[0]!) || shorts.has(next.slice(1)));
        const dash = next !== undefined && !known ? `; a value starting with '-' is written --${name}=${shown(next)}` : "";
        throw new UsageError(`option --${name} needs a value${spec.arg !== undefined ? ` (--${name} ${spec.arg})` : ""}${dash}`, command);
      }
      value = next;
      i++;
    }
    set(name, value);
  }
  return { values: values as OptionValues<T>, positionals };
}

/** `--x`, or a one-letter flag: not a value (`-5` or `-be terse` are values). */
function looksLikeOption(arg: string, shorts: Map<string, string>): boolean {
  return arg.startsWith("--") || (arg.length === 2 && (shorts.has(arg[1]!) || /[a-zA-Z]/.test(arg[1]!)));
}

/** The message for an option `command` does not take: where it applies, or the nearest one it takes. */
function unknownOption(command: string, table: OptionTable, arg: string): string {
  const name = arg.startsWith("--") ? arg.slice(2) : "";
  const label = command === "" ? "agentcore" : `'${command}'`;
  if (name !== "") {
    // within sessions, its subcommands are told apart; elsewhere 'sessions' stands for them all
    const inSessions = command.startsWith("sessions ");
    const places = COMMAND_NAMES.flatMap((c) =>
      c === "sessions" && inSessions ? Object.keys(SESSIONS_SUBCOMMANDS).map((s) => `sessions ${s}`) : [c],
    );
    const elsewhere = places.filter((c) => c !== command && Object.hasOwn(optionsOf(c), name));
    if (elsewhere.length > 0 && elsewhere.length <= 6) return `${arg} applies to ${quotedList(elsewhere)} only, not to ${label}`;
    if (elsewhere.length > 6) return `${arg} is not an option of ${label}`;
  }
  const guess = nearest(name !== "" ? name : arg.replace(/^-+/, ""), Object.keys(table));
  return `unknown option ${shown(arg)}${guess !== undefined ? `; did you mean --${guess}?` : ""}`;
}

/**
 * The first argument of `argv` that is neither an option nor the value of one
 * of `table`'s options (a subcommand, a command word), and the others in order.
 */
export function firstWord(argv: readonly string[], table: OptionTable): { word: string | undefined; rest: string[] } {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--") break;
    if (a.startsWith("-") && a !== "-") {
      // an option of another command written before the word (`--max-depth 5 sessions list`):
      // its value is not the word either; the command's parser then refuses the option
      const name = a.slice(2);
      if (
        a.startsWith("--") &&
        !a.includes("=") &&
        (Object.hasOwn(table, name) ? table[name]!.type === "string" : valueOptions().has(name))
      )
        i++;
      continue;
    }
    return { word: a, rest: [...argv.slice(0, i), ...argv.slice(i + 1)] };
  }
  return { word: undefined, rest: [...argv] };
}

// ---------------------------------------------------------------- the tables

const HELP_OPTION = { help: { type: "boolean", short: "h", help: "show this help" } } as const satisfies OptionTable;

/** Where the tools work and how strict the input is: every command that makes a runtime. */
const RUNTIME_OPTIONS = {
  root: {
    type: "string",
    arg: "DIR",
    help: "folder the file tools are confined to (default: the config's root, else\nthe current directory)",
  },
  config: {
    type: "string",
    arg: "FILE",
    help: "JSONC settings file (default: AGENTCORE_CONFIG); flags override it: root, limits,\nhistory, policy, tools, skills_dir, project_instructions, mcpServers (their tools join\nas SERVER__TOOL)",
  },
  "max-input-bytes": {
    type: "string",
    arg: "N",
    help: `largest accepted call in bytes (default ${DEFAULT_MAX_BYTES}, at most ${HARD_MAX_BYTES})`,
  },
  "max-depth": {
    type: "string",
    arg: "N",
    help: `deepest accepted nesting of arrays and objects (default ${DEFAULT_MAX_DEPTH}, at most ${HARD_MAX_DEPTH})`,
  },
  tools: {
    type: "string",
    arg: "LIST",
    help: "enable workspace tools, comma-separated: list_dir, glob, grep, git_diff, write_file,\napply_patch, exec; 'read' = the four read-only ones, 'workspace' = all but exec\n(default: the config's \"tools\" section, else none; exec needs its allowlist in\nthe config's \"tools.exec\")",
  },
} as const satisfies OptionTable;

const HISTORY_OPTION = {
  history: { type: "string", arg: "FILE", help: "append every call to FILE, a JSONL audit log (read it with 'agentcore history')" },
} as const satisfies OptionTable;

/** The model, the session, the plan and the run limits: agent and chat. */
/**
 * `--store`, the one definition every command that touches sessions or
 * history shares (agent, chat, sessions …, history): a folder of JSONL
 * journals or a postgres:// URL; without it AGENTCORE_STORE, then the
 * config's `store`.
 */
export const STORE_OPTION = {
  store: {
    type: "string",
    arg: "STORE",
    help: "where sessions (and history) live: a folder of JSONL journals, or a postgres:// URL\n(default: AGENTCORE_STORE, else the config's store, else .agentcore/sessions under the root);\nnot together with --sessions-dir",
  },
} as const satisfies OptionTable;

const MODEL_OPTIONS = {
  script: { type: "string", arg: "FILE", section: "Model", help: "play a scripted model (JSONL, one turn per line); no network" },
  preset: {
    type: "string",
    arg: "NAME",
    section: "Model",
    help: "openai, lmstudio (http://localhost:1234/v1) or ollama (http://localhost:11434/v1)",
  },
  model: { type: "string", arg: "NAME", section: "Model", help: "model name (default: CHAT_MODEL)" },
  "model-url": {
    type: "string",
    arg: "URL",
    section: "Model",
    help: "OpenAI-compatible base URL (default: the --preset's, else MODEL_URL, else OpenAI)",
  },
  system: { type: "string", arg: "TEXT", section: "Model", help: "system prompt" },
  "max-steps": { type: "string", arg: "N", section: "Run", help: "model turns per run (default 20)" },
  "max-run-tokens": { type: "string", arg: "N", section: "Run", help: "token budget of the run (default: none)" },
  "approve-all": {
    type: "boolean",
    section: "Run",
    help: "approve every tool call that would ask first, and say so on stderr (default: read-only\ntools run, side-effecting ones ask on the terminal, refused when stdin is not one)",
  },
  "no-plan": { type: "boolean", section: "Run", help: "do not offer the update_plan tool nor ask the model to plan first" },
  "no-project-instructions": {
    type: "boolean",
    section: "Run",
    help: "leave AGENTS.md (the root's, and those down to the current folder) out of the system\nprompt (default: read; the config's project_instructions: false does the same)",
  },
  skills: {
    type: "string",
    arg: "DIR",
    section: "Run",
    help: "skills folder (default: the config's skills_dir, else .agentcore/skills under the root\nwhen it exists); $name or skill:name in the task activates one",
  },
  session: {
    type: "string",
    arg: "ID",
    section: "Session",
    help: "record the run in session ID (in the store: a JSONL journal by default); its messages are\nrestored first",
  },
  branch: { type: "string", arg: "B", section: "Session", help: "the session branch to resume and record on (default main)" },
  "sessions-dir": {
    type: "string",
    arg: "DIR",
    section: "Session",
    help: "journal directory (default: .agentcore/sessions under the root, created 0700);\nthe same as --store DIR",
  },
  store: { ...STORE_OPTION.store, section: "Session" },
} as const satisfies OptionTable;

export const TOOLS_OPTIONS = {
  ...HELP_OPTION,
  json: { type: "boolean", help: "print the list as JSON (name, description, effect, strict, parameters)" },
  root: RUNTIME_OPTIONS.root,
  config: RUNTIME_OPTIONS.config,
  tools: RUNTIME_OPTIONS.tools,
} as const satisfies OptionTable;

export const EXECUTE_OPTIONS = { ...HELP_OPTION, ...RUNTIME_OPTIONS, ...HISTORY_OPTION } as const satisfies OptionTable;
export const RUN_OPTIONS = EXECUTE_OPTIONS;
export const MCP_OPTIONS = EXECUTE_OPTIONS;

export const AGENT_OPTIONS = {
  ...HELP_OPTION,
  ...RUNTIME_OPTIONS,
  ...HISTORY_OPTION,
  ...MODEL_OPTIONS,
  events: {
    type: "string",
    arg: "jsonl",
    section: "Run",
    help: "print every event as one JSON line on stdout, ending with agent_finished",
  },
  "show-thinking": {
    type: "boolean",
    section: "Run",
    help: "show the model's thinking as it streams, on stderr (dimmed on a terminal)",
  },
  "context-window": {
    type: "string",
    arg: "N",
    section: "Run",
    help: "the model's context window in tokens (at least 1024; default: no automatic compaction):\na quarter is kept free, and when the history outgrows the rest (or the server reports an\noverflow) the model summarises every turn but the latest",
  },
  image: {
    type: "string",
    arg: "FILE",
    multiple: true,
    section: "Run",
    help: "an image for the task (repeatable; PNG, JPEG, GIF or WebP by its bytes, at most 10 MiB):\nthe model gets it with the task, a session journals it by its sha256 (the bytes in a blob)",
  },
  "output-schema": {
    type: "string",
    arg: "FILE",
    section: "Run",
    help: "a JSON Schema file the final answer must match: the model is asked for JSON, a mismatch gets\none repair turn (then stop reason output_invalid), and stdout carries the value as one JSON line",
  },
  continue: { type: "boolean", section: "Session", help: "continue the session's last run instead of a new task (no TASK)" },
  resume: {
    type: "boolean",
    section: "Session",
    help: "go on with the session's suspended run (awaiting_approval) once its approvals are answered:\napproved calls run, denied ones get the rejection (no TASK)",
  },
  "suspend-on-approval": {
    type: "boolean",
    section: "Session",
    help: 'a call that needs approval journals its request and ends the run (exit 3) instead of asking;\nanswer with agentcore sessions approve|deny, then --resume (config: policy.on_approval "suspend")',
  },
} as const satisfies OptionTable;

export const CHAT_OPTIONS = {
  ...HELP_OPTION,
  ...RUNTIME_OPTIONS,
  ...HISTORY_OPTION,
  ...MODEL_OPTIONS,
  "show-thinking": {
    type: "boolean",
    section: "Run",
    help: "show the model's thinking as it streams, above each answer (thinking: …)",
  },
  "context-window": AGENT_OPTIONS["context-window"],
} as const satisfies OptionTable;

export const HISTORY_OPTIONS = {
  ...HELP_OPTION,
  file: { type: "string", arg: "FILE", help: 'the history log (default: --history FILE, else the config\'s "history")' },
  history: { type: "string", arg: "FILE", help: "the same as --file" },
  config: { type: "string", arg: "FILE", help: 'JSONC settings file whose "history" names the log (default: AGENTCORE_CONFIG)' },
  tool: { type: "string", arg: "T", help: "only calls of tool T" },
  since: {
    type: "string",
    arg: "WHEN",
    help: "only calls at or after WHEN: an ISO 8601 time (2026-11-30T08:00:00Z)\nor an age: 30s, 10m, 2h, 1d",
  },
  failed: { type: "boolean", help: "only failed calls" },
  json: { type: "boolean", help: "print the matching records as JSONL, as stored" },
  store: {
    ...STORE_OPTION.store,
    help: "read the history of this store when it is a postgres:// URL (its agentcore.history table;\ndefault: AGENTCORE_STORE, else the config's store); --file names a JSONL log instead",
  },
} as const satisfies OptionTable;

export const SKILLS_OPTIONS = {
  ...HELP_OPTION,
  dir: { type: "string", arg: "DIR", help: "skills folder (default: the config's skills_dir, else .agentcore/skills under the root)" },
  root: {
    type: "string",
    arg: "DIR",
    help: "the root the default folder is under (default: the config's root, else the current directory)",
  },
  config: { type: "string", arg: "FILE", help: "JSONC settings file (its skills_dir and root; default: AGENTCORE_CONFIG)" },
  json: { type: "boolean", help: 'print {"root", "skills": [{"name", "description", "path", "template", "sample"}]}' },
} as const satisfies OptionTable;

export const STORE_OPTIONS = {
  ...HELP_OPTION,
  store: {
    type: "string",
    arg: "URL",
    help: "the store: a postgres:// (postgresql://) URL (default: AGENTCORE_STORE)",
  },
  json: { type: "boolean", help: 'print {"store", "applied": [{"version", "name"}], "version"}' },
} as const satisfies OptionTable;

export const VERSION_OPTIONS = {
  ...HELP_OPTION,
  json: {
    type: "boolean",
    help: 'print {"version", "commit", "build_date", "target", "bun_version", "wasm_sha256", "built"}',
  },
} as const satisfies OptionTable;

/** Options every `sessions` subcommand takes. */
const SESSIONS_COMMON = {
  ...HELP_OPTION,
  "sessions-dir": {
    type: "string",
    arg: "DIR",
    help: "journal directory (default: .agentcore/sessions under --root or the current directory)",
  },
  root: { type: "string", arg: "DIR", help: "the root the default directory is under" },
  ...STORE_OPTION,
  config: { type: "string", arg: "FILE", help: "JSONC settings file (its store and root; default: AGENTCORE_CONFIG)" },
  json: { type: "boolean", help: "print JSON instead of text" },
} as const satisfies OptionTable;

/** The new branch's name, for fork, rollback and retry. */
const NEW_BRANCH_NAME = { type: "string", arg: "B", help: "the new branch's name (default: a generated one)" } as const;
/** fork's and rollback's branch options: the new name and the branch the RECORD is looked up on. */
const NEW_BRANCH_AT_RECORD = {
  name: NEW_BRANCH_NAME,
  branch: { type: "string", arg: "B", help: "the branch to start from (default: the one holding RECORD, main when it does)" },
} as const;

/** Each `sessions` subcommand's options: one table per subcommand. */
export const SESSIONS_SUBCOMMANDS = {
  list: { ...SESSIONS_COMMON },
  show: { ...SESSIONS_COMMON, branch: { type: "string", arg: "B", help: "the branch to show (default main)" } },
  tree: { ...SESSIONS_COMMON },
  fork: {
    ...SESSIONS_COMMON,
    from: { type: "string", arg: "RECORD", help: "the record to branch at: r7, a record id or its first characters (default: the head)" },
    ...NEW_BRANCH_AT_RECORD,
  },
  rollback: {
    ...SESSIONS_COMMON,
    to: { type: "string", arg: "RECORD", help: "the record to roll back to (required): r7, a record id or its first characters" },
    ...NEW_BRANCH_AT_RECORD,
  },
  retry: {
    ...SESSIONS_COMMON,
    run: { type: "string", arg: "RUN", help: "the run to retry (required): its id or first characters; the branch starts just before it" },
    name: NEW_BRANCH_NAME,
    branch: { type: "string", arg: "B", help: "the branch to start from (default: the one the run was on, main when it was)" },
  },
  recover: {
    ...SESSIONS_COMMON,
    branch: { type: "string", arg: "B", help: "the branch whose unfinished runs are closed (default main)" },
    force: { type: "boolean", help: "recover a run whose process is still alive (when that pid is not agentcore)" },
  },
  delete: {
    ...SESSIONS_COMMON,
    yes: { type: "boolean", help: "confirm: without it nothing is deleted" },
    force: { type: "boolean", help: "delete even while a run is still going (when that pid is not agentcore)" },
  },
  approvals: {
    ...SESSIONS_COMMON,
    branch: { type: "string", arg: "B", help: "the branch whose approvals to list (default main)" },
  },
  approve: {
    ...SESSIONS_COMMON,
    branch: { type: "string", arg: "B", help: "the branch the call waits on (default main)" },
    reason: { type: "string", arg: "TEXT", help: "why (journaled with the answer)" },
  },
  deny: {
    ...SESSIONS_COMMON,
    branch: { type: "string", arg: "B", help: "the branch the call waits on (default main)" },
    reason: { type: "string", arg: "TEXT", help: "why (journaled, and what the model is told)" },
  },
  export: {
    ...SESSIONS_COMMON,
    out: { type: "string", arg: "FILE", help: "write the journal to FILE (created 0600; refused if it exists) instead of stdout" },
  },
  import: {
    ...SESSIONS_COMMON,
    as: { type: "string", arg: "ID", help: "store the session under ID instead of the id its records carry" },
  },
} as const satisfies Record<string, OptionTable>;

/** The parsed values of any `sessions` subcommand (each takes a subset of these). */
type SessionsTable = (typeof SESSIONS_SUBCOMMANDS)[keyof typeof SESSIONS_SUBCOMMANDS];
type KeysOfUnion<T> = T extends unknown ? keyof T : never;
type SessionsSpec<K extends PropertyKey> = SessionsTable extends infer U ? (U extends Readonly<Record<K, infer S>> ? S : never) : never;
export type SessionsValues = {
  [K in KeysOfUnion<SessionsTable>]?: SessionsSpec<K> extends { readonly type: "boolean" } ? boolean : string;
};

export const SERVE_OPTIONS = {
  ...HELP_OPTION,
  host: {
    type: "string",
    arg: "HOST",
    section: "Listening",
    help: "bind address (default 127.0.0.1); anything but loopback prints a warning",
  },
  port: {
    type: "string",
    arg: "N",
    section: "Listening",
    help: "TCP port (default 8787; 0 picks a free one, the printed URL tells which)",
  },
  unix: { type: "string", arg: "PATH", section: "Listening", help: "listen on a Unix socket (mode 0600) instead of TCP" },
  "allow-origin": {
    type: "string",
    arg: "ORIGIN",
    multiple: true,
    section: "Listening",
    help: "accept this browser Origin (repeatable; default: none)",
  },
  "allow-host": {
    type: "string",
    arg: "NAME[:PORT]",
    multiple: true,
    section: "Listening",
    help: "accept this Host header besides loopback names (repeatable; without a port:\nwith the daemon's port)",
  },
  "state-dir": {
    type: "string",
    arg: "DIR",
    section: "Files",
    help: "where the token files go (default $XDG_STATE_HOME/agentcore or\n~/.local/state/agentcore, created 0700)",
  },
  root: { type: "string", arg: "DIR", section: "Files", help: "folder the file tools are confined to (default: the current directory)" },
  "sessions-dir": { type: "string", arg: "DIR", section: "Files", help: "session journals (default .agentcore/sessions under the root)" },
  store: {
    type: "string",
    arg: "URL|DIR",
    section: "Files",
    help: "the session store (default: AGENTCORE_STORE, then the config's store): a\npostgres:// URL runs this daemon in cluster mode with the others on that\nstore (docs/cluster.md); a folder holds JSONL journals like --sessions-dir",
  },
  config: {
    type: "string",
    arg: "FILE",
    section: "Files",
    help: 'JSONC settings (root, limits, history, policy, tools, mcpServers; default: AGENTCORE_CONFIG);\n"require_approval" rules wait for POST /v1/approvals/{id}; "mcpServers" are connected at start',
  },
  skills: {
    type: "string",
    arg: "DIR",
    section: "Files",
    help: "skills runs can activate with $name (default: the config's skills_dir, else\n.agentcore/skills under the root when it exists)",
  },
  tools: {
    type: "string",
    arg: "LIST",
    section: "Files",
    help: "enable workspace tools (as for agentcore agent: read, workspace, list_dir,\nglob, grep, git_diff, write_file, apply_patch, exec)",
  },
  // 1048576: DEFAULT_MAX_BODY_BYTES of src/server/body.ts (not imported: it loads the JSON core)
  "max-body-bytes": { type: "string", arg: "N", section: "Limits", help: "largest request body (default 1048576)" },
  "max-concurrent": {
    type: "string",
    arg: "N",
    section: "Limits",
    help: "requests handled at once before 503 (default 256; health, the approval\nroutes and abort have their own reserve and still get through)",
  },
  "max-active-runs": {
    type: "string",
    arg: "N",
    section: "Limits",
    help: "agent runs active at once before 503 (default 16); in cluster mode also the\nqueued runs this daemon takes at once",
  },
  "request-timeout-ms": { type: "string", arg: "N", section: "Limits", help: "deadline of a request (not of run streams; default 30000)" },
  "approval-timeout-ms": {
    type: "string",
    arg: "N",
    section: "Limits",
    help: "pending approvals are denied after this (default: the config's\npolicy.approval_timeout_ms, else 300000)",
  },
  "heartbeat-ms": { type: "string", arg: "N", section: "Limits", help: "SSE heartbeat period (default 15000, at most 240000)" },
  "max-input-bytes": {
    type: "string",
    arg: "N",
    section: "Limits",
    help: `largest accepted call in bytes (default ${DEFAULT_MAX_BYTES}, at most ${HARD_MAX_BYTES})`,
  },
  "max-depth": {
    type: "string",
    arg: "N",
    section: "Limits",
    help: `deepest accepted nesting in a call (default ${DEFAULT_MAX_DEPTH}, at most ${HARD_MAX_DEPTH})`,
  },
  "access-log": {
    type: "boolean",
    section: "Logs",
    help: "one line per request on stderr when its answer starts: method, path (without\nthe query string), status, duration in ms; never a header, the token or a body.\nAlso on with AGENTCORE_LOG_LEVEL=info, debug or trace",
  },
  "on-shutdown": {
    type: "string",
    arg: "abort|finish",
    section: "Shutdown",
    help: "abort active runs at once (default), or let them finish",
  },
  "shutdown-grace-ms": {
    type: "string",
    arg: "N",
    section: "Shutdown",
    help: "with finish: abort what is still running after this (default 30000);\na second signal aborts them at once",
  },
} as const satisfies OptionTable;

/** The commands, in the overview's order, with their one-line summary and their options. */
export const COMMANDS = {
  tools: { summary: "list the registered tools", options: TOOLS_OPTIONS },
  execute: { summary: "dispatch one tool call and print its envelope", options: EXECUTE_OPTIONS },
  run: { summary: "dispatch one call per JSONL line, in order", options: RUN_OPTIONS },
  agent: { summary: "run an agent on a task with the built-in tools", options: AGENT_OPTIONS },
  chat: { summary: "the interactive agent: a REPL with streamed answers and approvals", options: CHAT_OPTIONS },
  sessions: { summary: "read, branch and recover durable sessions, or delete one", options: null },
  serve: { summary: "run the local API daemon (HTTP, JSON and SSE on 127.0.0.1:8787)", options: SERVE_OPTIONS },
  skills: { summary: "list the skills a task can activate with $name", options: SKILLS_OPTIONS },
  history: { summary: "read an execution history log", options: HISTORY_OPTIONS },
  store: { summary: "a PostgreSQL store: apply its migrations, prune old cluster runs", options: STORE_OPTIONS },
  mcp: { summary: "serve the registered tools to an MCP client over stdio", options: MCP_OPTIONS },
  version: { summary: "print the version and build information (commit, target, WASM core hash)", options: VERSION_OPTIONS },
} as const;

export type CommandName = keyof typeof COMMANDS;
export const COMMAND_NAMES = Object.keys(COMMANDS) as CommandName[];

/** The options of a command (`sessions` and `sessions show` included); empty for an unknown one. */
export function optionsOf(command: string): OptionTable {
  if (command.startsWith("sessions")) {
    const sub = command.slice("sessions ".length);
    if (Object.hasOwn(SESSIONS_SUBCOMMANDS, sub)) return SESSIONS_SUBCOMMANDS[sub as keyof typeof SESSIONS_SUBCOMMANDS];
    return Object.assign({}, ...Object.values(SESSIONS_SUBCOMMANDS)) as OptionTable;
  }
  return Object.hasOwn(COMMANDS, command) ? (COMMANDS[command as CommandName].options ?? {}) : {};
}

/** Long options that take a value in some command (so the word after them is not a command). */
export function valueOptions(): Set<string> {
  const out = new Set<string>();
  for (const c of COMMAND_NAMES) for (const [name, o] of Object.entries(optionsOf(c))) if (o.type === "string") out.add(name);
  return out;
}
