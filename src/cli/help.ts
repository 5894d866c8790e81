/**
 * The help texts: `agentcore --help` (the overview: one line per command) and
 * `agentcore CMD --help` for the commands `main.ts` parses itself (tools,
 * execute, run, agent, chat, mcp). Their options come from the tables in
 * args.ts; serve, sessions, skills and history keep their help next to their code.
 *
 * @module
 */
import { VERSION } from "../core/version.ts";
import { PIPE_HELP } from "./output.ts";
import {
  AGENT_OPTIONS,
  CHAT_OPTIONS,
  COMMANDS,
  COMMAND_NAMES,
  type CommandSpec,
  EXECUTE_OPTIONS,
  MCP_OPTIONS,
  RUN_OPTIONS,
  TOOLS_OPTIONS,
} from "./args.ts";

/** `agentcore --help`. */
export function overview(): string {
  const w = Math.max(...COMMAND_NAMES.map((c) => c.length)) + 2;
  return [
    `agentcore ${VERSION} — a strict local runtime for LLM tool calls and agent runs`,
    "",
    "Usage: agentcore COMMAND [options] [arguments]",
    "",
    "Commands:",
    ...COMMAND_NAMES.map((c) => `  ${c.padEnd(w)}${COMMANDS[c].summary}`),
    "",
    "Run 'agentcore COMMAND --help' for a command's options, examples and exit statuses.",
    "Options may come before the command: agentcore --root DIR sessions list.",
    "",
    "  -h, --help     show this overview",
    "  -V, --version  print the version",
    "",
    "Environment:",
    "  AGENTCORE_CONFIG       settings file used when --config is not given",
    "  AGENTCORE_LOG_LEVEL    trace, debug, info, warn (default) or error; logs go to stderr",
    "  CHAT_MODEL, MODEL_URL, MODEL_API_KEY, LLM_TIMEOUT, LLM_TEMPERATURE, LLM_INCLUDE_USAGE",
    "                         the model of agent, chat and serve runs (see agentcore agent --help)",
    "  OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_SERVICE_NAME, OTEL_…",
    "                         send the traces of agent, chat and serve over OTLP/HTTP",
    "                         (see docs/tracing.md)",
    "",
    "Examples:",
    `  agentcore execute '{"id":"c1","tool":"echo","arguments":{"message":"hello"}}'`,
    `  agentcore agent --preset ollama --model qwen3 "What is in README.md?"`,
    "  agentcore chat --preset ollama --model qwen3 --tools write_file",
    "",
  ].join("\n");
}

const CALL_SHAPES = `Tool-call shapes accepted:
  agentcore         {"id":"c1","tool":"echo","arguments":{...}}
  OpenAI chat       {"id":"c1","type":"function","function":{"name":"echo","arguments":"{...}"}}
  OpenAI Responses  {"type":"function_call","call_id":"c1","name":"echo","arguments":"{...}"}
  Anthropic         {"type":"tool_use","id":"c1","name":"echo","input":{...}}

Output: one compact JSON envelope per call on stdout:
  {"id":…,"success":…,"tool":…,"result":…,"error":null|{"code","message","details"},"duration_ms":…}`;

const MODEL_ENV = `Environment (the model, when no --script is given; flags win):
  CHAT_MODEL           model name (--model)
  MODEL_URL            OpenAI-compatible base URL (--model-url)
  MODEL_API_KEY        API key (needed for OpenAI itself; --preset lmstudio and ollama send none)
  LLM_TIMEOUT          request timeout in seconds (default 60)
  LLM_TEMPERATURE      sampling temperature, 0 to 2 (default 0.7)
  LLM_INCLUDE_USAGE    ask for token usage in the stream: true (default) or false`;

const SIGNALS =
  "143 / 129 after SIGTERM / SIGHUP (the run is aborted and journaled first); a second\n     signal while stopping exits at once with 128 + its number (130 for a second Ctrl-C)";
const PIPE = PIPE_HELP;

export const TOOLS_HELP: CommandSpec = {
  name: "tools",
  summary: COMMANDS.tools.summary,
  usage: ["tools [--json] [--tools LIST] [--config FILE]"],
  description:
    "Lists the registered tools: the built-in ones, the workspace tools --tools (or the config)\nturns on, and the tools of the config's mcpServers (as SERVER__TOOL).",
  options: TOOLS_OPTIONS,
  examples: ["agentcore tools", "agentcore tools --tools read --json"],
  exit: ["0  listed", "2  usage error, or a bad config file", PIPE],
};

export const EXECUTE_HELP: CommandSpec = {
  name: "execute",
  summary: COMMANDS.execute.summary,
  usage: ["execute [options] '<json>'", "execute [options] -            (the call from stdin)"],
  description:
    "Dispatches one tool call (validated by the strict JSON core, then by the tool's schema and\nthe config's policy) and prints its envelope.",
  options: EXECUTE_OPTIONS,
  examples: [
    `agentcore execute '{"id":"c1","tool":"echo","arguments":{"message":"hello"}}'`,
    `echo '{"id":"c2","tool":"read_file","arguments":{"path":"README.md"}}' | agentcore execute -`,
  ],
  exit: [
    "0  the call succeeded",
    '1  the call returned "success":false',
    "2  usage error, unreadable input, output failure or runtime failure",
    PIPE,
  ],
  notes: CALL_SHAPES,
};

export const RUN_HELP: CommandSpec = {
  name: "run",
  summary: COMMANDS.run.summary,
  usage: ["run [options] FILE.jsonl", "run [options] -              (the calls from stdin)"],
  description:
    "Dispatches one call per non-blank line, in order, and prints one envelope per line. A\nmalformed or over-long line gets its own error envelope (details.input_line says which) and\nthe run goes on. When stderr is a terminal and stdout is not, progress goes to stderr.",
  options: RUN_OPTIONS,
  examples: ["agentcore run examples/tool_calls.jsonl", "agentcore run --history audit.jsonl - < calls.jsonl"],
  exit: [
    "0  every call succeeded",
    '1  at least one call returned "success":false',
    "2  usage error, unreadable input file, output failure or runtime failure",
    PIPE,
  ],
  notes: CALL_SHAPES,
};

export const AGENT_HELP: CommandSpec = {
  name: "agent",
  summary: COMMANDS.agent.summary,
  usage: [
    `agent [options] "TASK"`,
    "agent [options] -                    (the task from stdin)",
    "agent --session ID --continue [options]",
    "agent --session ID --resume [options]  (after sessions approve|deny)",
  ],
  description:
    'Runs an agent on TASK with the registered tools. The answer streams to stdout (with\n--events jsonl, every event instead). When stderr is a terminal (and no --events), it shows\na spinner with the elapsed time while the model is silent or a tool runs, each tool call as\none line with its status and duration, and a last line with the stop reason, turns, tokens\nand time (NO_COLOR: no colour; TERM=dumb: no spinner). Side-effecting tools ask on the\nterminal first unless the config\'s "policy" says otherwise or --approve-all is given.',
  options: AGENT_OPTIONS,
  examples: [
    `agentcore agent --script examples/agent_script.jsonl "Read examples/hello.txt"`,
    `agentcore agent --preset ollama --model qwen3 --tools read "What is in README.md?"`,
    `agentcore agent --session demo --continue --preset ollama --model qwen3`,
    `agentcore agent --session demo --suspend-on-approval --preset ollama --model qwen3 "TASK"`,
  ],
  exit: [
    "0  the run completed",
    "1  the run did not complete (max steps, budget, refused tool call, model error)",
    "3  the run suspended: a tool call waits for approval (--suspend-on-approval); answer it, then --resume",
    "2  usage error, a bad config, script, skill, AGENTS.md, session or model setting;\n   or the session's store could not take the run's records (full, read-only, down)",
    PIPE,
    SIGNALS,
  ],
  notes: MODEL_ENV,
};

export const CHAT_HELP: CommandSpec = {
  name: "chat",
  summary: COMMANDS.chat.summary,
  usage: ["chat [options]"],
  description:
    "The interactive agent: a REPL with streamed answers, one line per tool call, the plan as a\nchecklist and approvals at the prompt; /steer /abort /continue /compact /sessions /fork\n(/help inside). On a terminal, a spinner while the model is silent and a summary line\nafter each run. The conversation is kept in a session (--session, else a new one).",
  options: CHAT_OPTIONS,
  examples: [
    "agentcore chat --preset ollama --model qwen3 --tools write_file",
    "agentcore chat --session notes --script examples/agent_script.jsonl",
  ],
  exit: [
    "0  the chat ended",
    "1  the session journal could not be written",
    "2  usage error or a setup error (config, script, skill, session, model setting)",
    SIGNALS,
  ],
  notes: MODEL_ENV,
};

export const MCP_HELP: CommandSpec = {
  name: "mcp",
  summary: COMMANDS.mcp.summary,
  usage: ["mcp [options]"],
  description:
    "Serves the registered tools to an MCP client over stdio: stdout carries JSON-RPC only.\nValidation and the config's policy apply; require_approval is denied (there is no terminal to ask).",
  options: MCP_OPTIONS,
  examples: ["agentcore mcp --tools read", "agentcore mcp --config agentcore.jsonc --history audit.jsonl"],
  exit: ["0  the client closed stdin", "2  usage error, or a bad config file"],
};

export const MAIN_HELP = {
  tools: TOOLS_HELP,
  execute: EXECUTE_HELP,
  run: RUN_HELP,
  agent: AGENT_HELP,
  chat: CHAT_HELP,
  mcp: MCP_HELP,
} as const;
