/**
 * The chat REPL's input lines and slash commands.
 *
 * A line starting with `/` is a command; `//text` sends `/text` as plain
 * text. Every command is one entry of {@link CHAT_COMMANDS}: its syntax, its
 * line in /help (made from the table) and a function of the
 * {@link ChatState}. {@link sendText} is what a plain line does.
 *
 * @module
 */
import { renderPlan } from "../../agent/plan.ts";
import { SessionError } from "../../session/types.ts";
import type { ChatCommand, ChatState } from "./state.ts";

export type { ChatCommand } from "./state.ts";

/** What a typed line means. */
export type ChatInput =
  | { kind: "blank" }
  | { kind: "text"; text: string }
  | { kind: "command"; name: string; arg: string }
  | { kind: "invalid"; message: string };

/** Why a line typed during a run was not queued as a follow-up. */
const NOT_QUEUED: Record<string, string> = {
  agent_idle: "no task is running (a compaction, or the run just ended)",
  queue_full: "the follow-up queue is full",
  run_closing: "the run is stopping",
};

/** A plain line: the next task at the prompt, a follow-up of the running run otherwise. */
export function sendText(state: ChatState, text: string): Promise<void> | void {
  if (state.busy === null) return state.startRun(() => state.agent.run(text));
  const h = state.agent.followUp(text);
  if (h.receipt.status === "accepted") {
    state.screen.line(`[queued as a follow-up (${h.receipt.queue_size} waiting); /steer changes the running run instead]`);
    h.wait().catch((e: Error) => state.screen.line(`[follow-up dropped: ${e.message}]`));
  } else state.screen.line(`[not queued: ${NOT_QUEUED[h.receipt.status] ?? h.receipt.status}; type it again at the prompt]`);
}

function steer(state: ChatState, text: string): void {
  const r = state.agent.steer(text);
  if (r.status === "accepted") state.screen.line(`[steering queued (${r.queue_size}): it reaches the model before its next request]`);
  else if (r.status === "agent_idle") state.screen.line("[nothing is running: type the message as a new task]");
  else state.screen.line(`[steering not accepted: ${r.status}]`);
}

function abort(state: ChatState): void {
  if (state.busy === null) state.screen.line("[nothing is running]");
  else if (state.agent.abort("aborted by the user (/abort)")) state.screen.line("[aborting…]");
  else state.screen.line("[the run is already stopping]");
}

function continueRun(state: ChatState): Promise<void> | void {
  if (!state.agent.canContinue) state.screen.line(`[cannot continue: ${state.agent.continueRejectionReason}]`);
  else return state.startRun(() => state.agent.continueRun());
}

/** Every session in the journal directory, this one marked `*` with its current branch. */
async function listSessions(state: ChatState): Promise<void> {
  const { storage, sessionId, branch } = state;
  const ids = await storage.listSessions();
  if (!ids.includes(sessionId)) ids.push(sessionId);
  for (const id of ids.sort()) {
    const branches = id === sessionId && (await storage.head(id)) === null && branch === "main" ? [] : await storage.listBranches(id);
    const runs = (await storage.load(id))?.runs.length ?? 0;
    const mark = id === sessionId ? "*" : " ";
    const names = branches.map((b) => (id === sessionId && b.branch_id === branch ? `${b.branch_id} (current)` : b.branch_id));
    state.screen.line(`${mark} ${id}  runs ${runs}  branches ${names.length > 0 ? names.join(", ") : "(none yet)"}`);
  }
}

/** Branch the session at its head (named `name`, or a generated name) and record there from now on. */
async function fork(state: ChatState, name: string): Promise<void> {
  const { storage, sessionId } = state;
  try {
    const c = await storage.fork(sessionId, { sourceBranch: state.branch, ...(name !== "" ? { branchId: name } : {}) });
    const from = state.branch;
    const claim = await storage.claimBranch(sessionId, c.branch.branch_id, "agentcore chat");
    state.switchBranch(c.branch.branch_id, claim);
    state.screen.line(`[forked ${from} at ${c.branch.base_record_id ?? "the start"}: now on branch ${state.branch}]`);
  } catch (e) {
    if (!(e instanceof SessionError)) throw e;
    const empty = (await storage.head(sessionId, state.branch)) === null;
    state.screen.line(`[cannot fork: ${empty ? "nothing is recorded in this session yet" : e.message}]`);
  }
}

function showPlan(state: ChatState): void {
  const plan = state.planner?.plan ?? null;
  if (state.planner === null) state.screen.line("[planning is off (--no-plan)]");
  else if (plan === null) state.screen.line("[no plan yet]");
  else for (const l of renderPlan(plan)) state.screen.line(l);
}

/** The commands, in the order /help lists them. */
export const CHAT_COMMANDS: readonly ChatCommand[] = [
  {
    name: "steer",
    arg: "required",
    usage: "/steer TEXT",
    help: "steer the running run: TEXT reaches the model before its next request",
    run: steer,
  },
  { name: "abort", arg: "none", usage: "/abort", help: "abort the running run (also Ctrl-C)", overridesApproval: true, run: abort },
  {
    name: "continue",
    arg: "none",
    usage: "/continue",
    help: "continue the last run without a new message",
    promptOnly: true,
    run: continueRun,
  },
  {
    name: "compact",
    arg: "none",
    usage: "/compact",
    help: "summarise older turns to free context",
    promptOnly: true,
    run: (state) => state.startRun(() => state.agent.compact()),
  },
  {
    name: "sessions",
    arg: "none",
    usage: "/sessions",
    help: "list the sessions in the journal directory (* marks this one)",
    run: listSessions,
  },
  {
    name: "fork",
    arg: "optional",
    usage: "/fork [NAME]",
    help: "fork this session at its current head into branch NAME and switch to it",
    check: (arg) => (/\s/.test(arg) ? "/fork NAME: the branch name must be one word" : null),
    promptOnly: true,
    run: fork,
  },
  { name: "plan", arg: "none", usage: "/plan", help: "show the current plan", run: showPlan },
  {
    name: "help",
    aliases: ["?"],
    arg: "none",
    usage: "/help",
    help: "show this help",
    run: (state) => state.screen.line(chatHelp(state.commands)),
  },
  {
    name: "exit",
    aliases: ["quit", "q"],
    arg: "none",
    usage: "/exit",
    help: "quit (also Ctrl-D, or Ctrl-C twice, at the prompt)",
    overridesApproval: true,
    run: (state) => state.exit(),
  },
];

/** The REPL's help text: one line per command of `commands`. */
export function chatHelp(commands: readonly ChatCommand[] = CHAT_COMMANDS): string {
  const w = Math.max(...commands.map((c) => c.usage.length));
  return [
    "Type a task and press Enter. While a run is in flight, a plain line is queued as a follow-up",
    "(it runs after the current run, if that one completes); use /steer to change the running run.",
    "",
    ...commands.map((c) => `  ${c.usage.padEnd(w)}  ${c.help}`),
    "",
    "  //TEXT      send TEXT starting with '/' as plain text",
    "Approvals: answer y, n (the default) or a (always, for this tool in this run).",
  ].join("\n");
}

/** The command `word` names (its name or an alias, any case), if any. */
export function findCommand(word: string, commands: readonly ChatCommand[] = CHAT_COMMANDS): ChatCommand | undefined {
  const w = word.toLowerCase();
  return commands.find((c) => c.name === w) ?? commands.find((c) => c.aliases?.includes(w));
}

/** Parse one typed line. Pure: nothing runs. */
export function parseChatInput(line: string, commands: readonly ChatCommand[] = CHAT_COMMANDS): ChatInput {
  const text = line.trim();
  if (text === "") return { kind: "blank" };
  if (!text.startsWith("/")) return { kind: "text", text };
  if (text.startsWith("//")) return { kind: "text", text: text.slice(1) };
  const m = /^\/(\S+)\s*([\s\S]*)$/.exec(text);
  if (m === null) return { kind: "invalid", message: "a command name must follow '/'; /help lists the commands" };
  const arg = m[2]!.trim();
  const spec = findCommand(m[1]!, commands);
  if (spec === undefined) return { kind: "invalid", message: `unknown command /${m[1]}; /help lists the commands` };
  if (spec.arg === "required" && arg === "") return { kind: "invalid", message: `${spec.usage}: missing TEXT` };
  if (spec.arg === "none" && arg !== "") return { kind: "invalid", message: `${spec.usage} takes no argument` };
  const problem = arg !== "" ? (spec.check?.(arg) ?? null) : null;
  if (problem !== null) return { kind: "invalid", message: problem };
  return { kind: "command", name: spec.name, arg };
}

/** Run the command named `name` with `arg` (a line {@link parseChatInput} accepted). */
export function runCommand(state: ChatState, name: string, arg: string): void | Promise<void> {
  const command = findCommand(name, state.commands);
  if (command === undefined) {
    state.screen.line(`[unknown command /${name}; /help lists the commands]`);
    return;
  }
  if (command.promptOnly === true && state.busy !== null) {
    state.screen.line(`[a run is in flight; /${command.name} works at the prompt]`);
    return;
  }
  return command.run(state, arg);
}
