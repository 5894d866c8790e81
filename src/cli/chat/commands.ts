/**
 * The chat REPL's input lines: slash commands and plain text.
 *
 * A line starting with `/` is a command; `//text` sends `/text` as plain
 * text. Pure parsing, no side effects.
 *
 * @module
 */

export type ChatCommandName = "steer" | "abort" | "continue" | "compact" | "sessions" | "fork" | "plan" | "help" | "exit";

/** What a typed line means. */
export type ChatInput =
  | { kind: "blank" }
  | { kind: "text"; text: string }
  | { kind: "command"; name: ChatCommandName; arg: string }
  | { kind: "invalid"; message: string };

interface CommandSpec {
  name: ChatCommandName;
  /** `required`, `optional` or `none`. */
  arg: "required" | "optional" | "none";
  usage: string;
  help: string;
}

export const CHAT_COMMANDS: readonly CommandSpec[] = [
  { name: "steer", arg: "required", usage: "/steer TEXT", help: "steer the running run: TEXT reaches the model before its next request" },
  { name: "abort", arg: "none", usage: "/abort", help: "abort the running run (also Ctrl-C)" },
  { name: "continue", arg: "none", usage: "/continue", help: "continue the last run without a new message" },
  { name: "compact", arg: "none", usage: "/compact", help: "summarise older turns to free context" },
  { name: "sessions", arg: "none", usage: "/sessions", help: "list the sessions in the journal directory (* marks this one)" },
  { name: "fork", arg: "optional", usage: "/fork [NAME]", help: "fork this session at its current head into branch NAME and switch to it" },
  { name: "plan", arg: "none", usage: "/plan", help: "show the current plan" },
  { name: "help", arg: "none", usage: "/help", help: "show this help" },
  { name: "exit", arg: "none", usage: "/exit", help: "quit (also Ctrl-D, or Ctrl-C twice, at the prompt)" },
];

const ALIASES: Record<string, ChatCommandName> = { quit: "exit", q: "exit", "?": "help" };

/** The REPL's help text. */
export function chatHelp(): string {
  const w = Math.max(...CHAT_COMMANDS.map((c) => c.usage.length));
  return [
    "Type a task and press Enter. While a run is in flight, a plain line is queued as a follow-up",
    "(it runs after the current run, if that one completes); use /steer to change the running run.",
    "",
    ...CHAT_COMMANDS.map((c) => `  ${c.usage.padEnd(w)}  ${c.help}`),
    "",
    "  //TEXT      send TEXT starting with '/' as plain text",
    "Approvals: answer y, n (the default) or a (always, for this tool in this run).",
  ].join("\n");
}

/** Parse one typed line. */
export function parseChatInput(line: string): ChatInput {
  const text = line.trim();
  if (text === "") return { kind: "blank" };
  if (!text.startsWith("/")) return { kind: "text", text };
  if (text.startsWith("//")) return { kind: "text", text: text.slice(1) };
  const m = /^\/(\S+)\s*([\s\S]*)$/.exec(text);
  if (m === null) return { kind: "invalid", message: "a command name must follow '/'; /help lists the commands" };
  const word = m[1]!.toLowerCase();
  const arg = m[2]!.trim();
  const name = ALIASES[word] ?? (word as ChatCommandName);
  const spec = CHAT_COMMANDS.find((c) => c.name === name);
  if (spec === undefined) return { kind: "invalid", message: `unknown command /${m[1]}; /help lists the commands` };
  if (spec.arg === "required" && arg === "") return { kind: "invalid", message: `${spec.usage}: missing TEXT` };
  if (spec.arg === "none" && arg !== "") return { kind: "invalid", message: `${spec.usage} takes no argument` };
  if (name === "fork" && arg !== "" && /\s/.test(arg)) return { kind: "invalid", message: "/fork NAME: the branch name must be one word" };
  return { kind: "command", name, arg };
}
