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
 * Start-up: this module reads argv first and imports only the command line's
 * tables (args.ts, help.ts) and the output writer. Each command's module is
 * loaded with import() once the command is known (commands.ts for tools,
 * execute, run, agent, chat and mcp), so `--version`, `--help` and usage
 * errors never evaluate the runtime, ajv, the WASM core or the config loader.
 * No top-level await, so the binary can be built with `--bytecode`.
 *
 * @module
 */
import { AgentcoreError } from "../core/errors.ts";
import { VERSION } from "../core/version.ts";
import { installProcessHost } from "../host/process.ts";
import type { Telemetry } from "../host/telemetry.ts";
import { setRemedyWording } from "../session/remedy.ts";
import { CLI_REMEDY_WORDING } from "./remedy.ts";
import { LineWriter, OutputError, outputFailure } from "./output.ts";
import { exitFor } from "./exit.ts";
import {
  COMMANDS,
  COMMAND_NAMES,
  expectArguments,
  nearest,
  parseCommandLine,
  renderHelp,
  shown,
  UsageError,
  usageText,
  valueOptions,
} from "./args.ts";
import { MAIN_HELP, overview } from "./help.ts";
import type { CallCommand } from "./commands.ts";

// ---------------------------------------------------------------- main

/** Commands that parse their own options, so options written before them are moved after them. */
const SELF_PARSING = new Set(["history", "sessions", "serve", "skills", "store", "version"]);
/** Options that take a value in some command (the token after them is not a command). */
const VALUE_OPTIONS = valueOptions();

/**
 * `agentcore --root DIR sessions list` means `agentcore sessions --root DIR list`:
 * a self-parsing command written after options is moved to the front, so its
 * own parser sees them (and names any it does not take). {@link main} does
 * this for every command (through {@link splitCommand}); this is its form as
 * an argv rewrite.
 */
export function hoistCommand(argv: string[]): string[] {
  const { command, args } = splitCommand(argv);
  return command !== undefined && SELF_PARSING.has(command) && argv[0] !== command ? [command, ...args] : argv;
}

/**
 * The command word of `argv` (the first argument that is neither an option
 * nor an option's value) and the other arguments in order; options may come
 * before the command. No command: `command` is undefined.
 */
function splitCommand(argv: string[]): { command: string | undefined; args: string[] } {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--") break;
    if (a.startsWith("-") && a !== "-") {
      if (a.startsWith("--") && !a.includes("=") && VALUE_OPTIONS.has(a.slice(2))) i++;
      continue;
    }
    return { command: a, args: [...argv.slice(0, i), ...argv.slice(i + 1)] };
  }
  return { command: undefined, args: argv };
}

/** No command given: the overview, the version, or a usage error saying what is missing. */
function noCommand(argv: string[], out: LineWriter): number {
  const first = argv[0];
  if (first === "-h" || first === "--help") {
    out.line(overview().trimEnd());
    out.flush();
    return 0;
  }
  if (first === "-V" || first === "--version") {
    out.line(`agentcore ${VERSION}`);
    out.flush();
    return 0;
  }
  const opt = argv.find((a) => a.startsWith("-") && a !== "-" && a !== "--");
  if (opt !== undefined) {
    const name = opt.replace(/^--?/, "").split("=")[0]!;
    const known = ["help", "version", ...new Set(COMMAND_NAMES.flatMap((c) => Object.keys(COMMANDS[c].options ?? {})))];
    if (!known.includes(name) && !(opt.length === 2 && "hV".includes(opt[1]!))) {
      const guess = nearest(name, known);
      return usage(`unknown option ${opt}${guess !== undefined ? `; did you mean --${guess}?` : ""}`);
    }
  }
  return usage(`missing command: one of ${COMMAND_NAMES.join(", ")}`);
}

/** The arguments of each command main.ts parses: [min, max, what they are] (agent --continue and --resume take none). */
const ARGUMENTS: Readonly<Record<CallCommand, readonly [number, number, string]>> = {
  tools: [0, 0, ""],
  execute: [1, 1, "exactly one argument: a JSON tool call, or - for stdin"],
  run: [1, 1, "exactly one argument: a JSONL file, or - for stdin"],
  agent: [1, 1, "exactly one argument: the task in quotes, or - for stdin"],
  chat: [0, 0, "type the task at its prompt"],
  mcp: [0, 0, ""],
};

/** The commands that run agents, whose spans go out over OTLP/HTTP when an OTEL_EXPORTER_OTLP_ endpoint is set. */
const TRACED_COMMANDS = new Set(["agent", "chat", "serve"]);

/** Run the CLI with `argv` (without the runtime and script). Resolves to the exit status. */
export async function main(argv: string[]): Promise<number> {
  // Tracing (docs/tracing.md): the SDK is loaded only when an endpoint is set; the spans are flushed before the end.
  let telemetry: Telemetry | null = null;
  const command = splitCommand(argv).command;
  if (command !== undefined && TRACED_COMMANDS.has(command) && !argv.includes("--help") && !argv.includes("-h")) {
    try {
      telemetry = await (await import("../host/telemetry.ts")).startTelemetry(process.env);
    } catch (e) {
      if (!(e instanceof AgentcoreError) || e.code !== "TELEMETRY_CONFIG") throw e;
      process.stderr.write(`agentcore: ${e.message} (see docs/tracing.md)\n`);
      return 2;
    }
  }
  try {
    return await runCommand(argv);
  } finally {
    await telemetry?.shutdown();
  }
}

async function runCommand(argv: string[]): Promise<number> {
  // The process (signals, exit, the clean-ups the library layers hold) is the host's.
  installProcessHost();
  // Session errors name their remedies as `agentcore sessions …` commands.
  setRemedyWording(CLI_REMEDY_WORDING);
  const out = new LineWriter(1);
  // `agentcore --version` / `agentcore --help CMD`: the global flags first
  if (argv[0] === "-V" || argv[0] === "--version") return noCommand(argv, out);
  const split = splitCommand(argv);
  if (split.command === undefined) return noCommand(argv, out);
  const command = split.command;
  if (!(COMMAND_NAMES as string[]).includes(command)) {
    const guess = nearest(command, COMMAND_NAMES);
    return usage(
      `unknown command '${shown(command)}'${guess !== undefined ? `; did you mean '${guess}'?` : ` (commands: ${COMMAND_NAMES.join(", ")})`}`,
    );
  }
  const args = split.args;
  // `history` parses its own options (--file, --tool, --since, --failed, --json).
  if (command === "history") return (await import("./history.ts")).cmdHistory(args, { out });
  // `sessions` parses its own options too (loaded on demand).
  if (command === "sessions") return (await import("./sessions.ts")).cmdSessions(args, { out });
  // `serve` too: it runs the daemon until SIGINT/SIGTERM (loaded on demand: Hono and the server).
  if (command === "serve") return (await import("./serve.ts")).cmdServe(args, { out });
  // `skills` as well (it loads the yaml parser).
  if (command === "skills") return (await import("./skills.ts")).cmdSkills(args, { out });
  // `store` too (it loads the PostgreSQL client only for a postgres:// store).
  if (command === "store") return (await import("./store.ts")).cmdStore(args, { out });
  // `version` prints the build information (src/core/build-info.ts).
  if (command === "version") return (await import("./version.ts")).cmdVersion(args, { out });
  const name = command as CallCommand;
  let values: Record<string, string | boolean | undefined>;
  let rest: string[];
  let commands: typeof import("./commands.ts") | undefined;
  try {
    const parsed = parseCommandLine(name, COMMANDS[name].options, args);
    values = parsed.values as Record<string, string | boolean | undefined>;
    rest = parsed.positionals;
  } catch (e) {
    if (e instanceof UsageError) return usage(e.message, e.command);
    throw e;
  }
  try {
    const [min, max, what] = ARGUMENTS[name];
    if (values.help) {
      // a command that takes no arguments refuses one under --help too: `mcp bogus --help` is a mistake
      if (max === 0) expectArguments(name, rest, 0, 0, what);
      out.line(renderHelp(MAIN_HELP[name]).trimEnd());
      out.flush();
      return 0;
    }
    // the arguments first: a missing task is named before the config is read
    if (name === "agent" && values.continue === true) {
      if (rest.length > 0)
        throw new UsageError(`agent --continue takes no task: it continues the session's last run (got '${shown(rest[0]!)}')`);
    } else if (name === "agent" && values.resume === true) {
      if (rest.length > 0)
        throw new UsageError(`agent --resume takes no task: it goes on with the session's suspended run (got '${shown(rest[0]!)}')`);
    } else expectArguments(name, rest, min, max, what);
    // Loaded on demand: the settings, the runtime and the command (see the module's doc).
    commands = await import("./commands.ts");
    return await commands.runCallCommand(name, values, rest, out);
  } catch (e) {
    // By the error's code (src/cli/exit.ts): a usage problem gets the hint to this command's help; a bad
    // script, skill, session, model setting, config or input says what to fix (the results so far are
    // flushed first); a closed pipe stops quietly, as git does; anything else is an internal error.
    return exitFor(e, { command: name, beforeMessage: () => out.flush() });
  } finally {
    // Stop the MCP servers (and wait for their processes) before exiting.
    await commands?.closeMcpServers();
  }
}

/** Print a usage error with the hint to the command's own help (the overview without a command); exit status 2. */
function usage(message: string, command = ""): number {
  process.stderr.write(usageText(message, command));
  return 2;
}

if (import.meta.main) {
  // An output failure out of a self-parsing command (sessions, skills …): quiet for a closed pipe.
  // Not a top-level await: an entry with one cannot be compiled with --bytecode.
  main(process.argv.slice(2)).then(
    (status) => {
      process.exitCode = status;
    },
    (e: unknown) => {
      if (e instanceof OutputError) {
        process.exitCode = outputFailure(e);
        return;
      }
      throw e;
    },
  );
}
