/**
 * `agentcore chat`: the interactive agent, a REPL over one agent and one
 * durable session.
 *
 * - Type a task; the assistant's text streams, each tool call shows as one
 *   line (`→ write_file path="a.txt" content="…" ✓ 3 ms`) with its progress
 *   below it, and the plan (update_plan) as a checklist each time it changes.
 * - Side-effecting tools ask first (the default gate, src/cli/gate.ts): the
 *   question appears in the REPL and the next typed line answers it (y, n —
 *   the default — or a for always in this run). When stdin is not a terminal
 *   such calls are refused.
 * - While a run is in flight, a plain line is queued as a follow-up (it runs
 *   after the current run, if that one completes); `/steer TEXT` steers the
 *   running run; `/abort` or Ctrl-C aborts it.
 * - At the prompt: `/continue`, `/compact`, `/sessions`, `/fork [NAME]`,
 *   `/plan`, `/help`, `/exit` (also Ctrl-D, or Ctrl-C twice). SIGTERM and
 *   SIGHUP end the chat like `/exit` (a running run is aborted and journaled),
 *   with status 143 / 129.
 * - The history is journaled in a session: a new id is printed at start;
 *   `--session ID` (and `--branch`) resumes one. `/fork` branches it at its
 *   current head and records on the new branch from then on.
 *
 * When stdin is not a terminal (a pipe, a file), lines are taken one at a
 * time: each waits for the previous one's run to finish. That makes a piped
 * chat a script of the session.
 *
 * The pieces, under `chat/`: `setup.ts` builds the {@link ChatState}
 * (`state.ts`: the session branch, the agent from the host layer, the run in
 * flight, the approval gate, the screen); `commands.ts` is the table of slash
 * commands, each a function of that state, and /help is made from it;
 * `repl.ts` is the input loop (read a line, classify it, dispatch it) and
 * the Ctrl-C / Ctrl-D / signal handling; `events.ts` draws agent events.
 *
 * @module
 */
import type { ModelAdapter } from "../providers/types.ts";
import type { Runtime } from "../runtime/index.ts";
import { ReplApprover } from "./chat/approver.ts";
import { runRepl } from "./chat/repl.ts";
import { openChat, type ChatFlags } from "./chat/setup.ts";
import type { ChatIO, ChatState } from "./chat/state.ts";

export { ReplApprover } from "./chat/approver.ts";
export { newChatSessionId, type ChatFlags } from "./chat/setup.ts";
export type { ChatIO } from "./chat/state.ts";

/** Library-level options of {@link cmdChat} (tests, embedding). */
export interface ChatOptions {
  /** Default: the process's stdin, stdout and stderr. */
  io?: ChatIO;
  /** Use this model instead of the one the flags describe. */
  model?: ModelAdapter;
}

/** The REPL's approver; main.ts gives its `approver` to the policy middleware before the runtime is made. */
export function createReplApprover(): ReplApprover {
  return new ReplApprover();
}

/**
 * Run the REPL until /exit, Ctrl-D, Ctrl-C twice at the prompt, SIGTERM or
 * SIGHUP. Resolves to the exit status: 0 (143 / 129 after SIGTERM / SIGHUP),
 * 1 when the session journal could not be written, 2 when the output broke.
 * Setup problems (a bad session, model or script) throw AgentSetupError.
 */
export async function cmdChat(runtime: Runtime, flags: ChatFlags, gate: ReplApprover, options: ChatOptions = {}): Promise<number> {
  const io = options.io ?? { input: process.stdin, output: process.stdout, error: process.stderr };
  // The state holds the session branch's claim from here to the end (a setup error releases it).
  const state: ChatState = await openChat(runtime, flags, gate, io, options.model !== undefined ? { model: options.model } : {});
  try {
    return await runRepl(state, io);
  } finally {
    state.claim.release();
    await state.closeStore();
  }
}
