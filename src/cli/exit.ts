/**
 * How the CLI ends when a command throws: one table from an error's stable
 * `code` (see {@link AgentcoreError} and docs/errors.md) to what is printed
 * and the exit status. The table is keyed by code, never by class name, so a
 * subclass keeps its family's ending unless it has a code of its own.
 *
 * - `usage`: the message and the hint naming the command's `--help`; exit 2.
 * - `message`: a setup, config, input or output problem whose message names
 *   the fix: `agentcore: message`; exit 2.
 * - `pipe_closed`: stdout's reader went away: nothing is printed, exit
 *   {@link PIPE_CLOSED_STATUS} (as a program killed by SIGPIPE).
 * - anything else (another code, or not an agentcore error) is an internal
 *   error: `agentcore: internal error: <stack>`; exit 2.
 *
 * @module
 */
import { AgentcoreError } from "../core/errors.ts";
import { usageText } from "./args.ts";
import { PIPE_CLOSED_STATUS } from "./output.ts";

/** How the CLI ends for an error: see the module documentation. */
export type ExitKind = "usage" | "message" | "pipe_closed" | "internal";

/** Exit status of a usage, setup, config, input or output error, and of an internal error. */
export const ERROR_STATUS = 2;

/** The codes the CLI ends on without calling it an internal error, and how. */
export const EXIT_BY_CODE: ReadonlyMap<string, Exclude<ExitKind, "internal">> = new Map<string, Exclude<ExitKind, "internal">>([
  // a flag, an argument or a combination the command does not take (UsageError, AgentUsageError, …)
  ["USAGE", "usage"],
  // the flags are fine, but what they name is not: a script, skill, model setting, branch (AgentSetupError)
  ["SETUP_FAILED", "message"],
  // the session cannot take a run now: a run a crash left unfinished, or one still going (AgentSessionStateError)
  ["SESSION_UNAVAILABLE", "message"],
  ["CONFIG_INVALID", "message"],
  ["INPUT_UNREADABLE", "message"],
  ["OUTPUT_FAILED", "message"],
  // serve: the state directory or token file, the address, the history log
  ["TOKEN_SETUP_FAILED", "message"],
  ["LISTEN_FAILED", "message"],
  ["HISTORY_LOG_FAILED", "message"],
  // agent, chat, serve: an OTEL_* variable the OTLP/HTTP export cannot use (src/host/telemetry.ts)
  ["TELEMETRY_CONFIG", "message"],
  ["OUTPUT_CLOSED", "pipe_closed"],
]);

/** How the CLI ends for the thrown value `e`: by its code, `internal` for anything the table does not name. */
export function exitKind(e: unknown): ExitKind {
  return e instanceof AgentcoreError ? (EXIT_BY_CODE.get(e.code) ?? "internal") : "internal";
}

/** What {@link exitFor} needs besides the error. */
export interface ExitOptions {
  /** The command that ran (`agent`, `sessions show`): a usage error without a command of its own names this one's help. */
  command: string;
  /** Called before a message is printed (the CLI flushes the results written so far); a throw in it is ignored. */
  beforeMessage?: () => void;
  /** Where the text goes. Default: stderr. */
  write?: (text: string) => void;
}

/** Print what the ending of `e` prints, and give its exit status. */
export function exitFor(e: unknown, options: ExitOptions): number {
  const write = options.write ?? ((t: string) => void process.stderr.write(t));
  const kind = exitKind(e);
  const err = e as AgentcoreError;
  switch (kind) {
    case "usage": {
      const own = (err as { command?: unknown }).command;
      write(usageText(err.message, typeof own === "string" && own !== "" ? own : options.command));
      return ERROR_STATUS;
    }
    case "message":
      try {
        options.beforeMessage?.();
      } catch {
        // the output itself may be what failed; the message below is all we can give
      }
      write(`agentcore: ${err.message}\n`);
      return ERROR_STATUS;
    case "pipe_closed":
      return PIPE_CLOSED_STATUS;
    case "internal": {
      let text: string;
      try {
        text = (e as Error)?.stack ?? String(e);
      } catch {
        text = "an unreadable error value";
      }
      write(`agentcore: internal error: ${text}\n`);
      return ERROR_STATUS;
    }
  }
}
