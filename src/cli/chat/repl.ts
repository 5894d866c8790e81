/**
 * The chat's input loop: read a line, classify it (an approval answer, a
 * task, a command) and dispatch it; Ctrl-C, Ctrl-D, a terminal that goes
 * away, SIGTERM and SIGHUP end or interrupt the chat.
 *
 * @module
 */
import * as readline from "node:readline";
import { renderPlan } from "../../agent/plan.ts";
import { parseChatInput, runCommand, sendText, findCommand } from "./commands.ts";
import { PROMPT, type ChatIO, type ChatState } from "./state.ts";

/** Handle one typed line. On a terminal a run is started and not awaited; with piped input it is. */
export async function handleLine(state: ChatState, line: string): Promise<void> {
  if (state.exiting) return;
  state.interruptArmed = false;
  const input = parseChatInput(line, state.commands);
  // A waiting approval takes the line, except the commands that end the run (/abort, /exit): they deny it.
  const overrides = input.kind === "command" && findCommand(input.name, state.commands)?.overridesApproval === true;
  if (!overrides && state.gate.answer(line)) return;
  switch (input.kind) {
    case "blank":
      return;
    case "invalid":
      state.screen.line(`[${input.message}]`);
      return;
    case "text":
      return sendText(state, input.text);
    case "command":
      return runCommand(state, input.name, input.arg);
  }
}

/** Ctrl-C: abort the running run; at the prompt, the first one warns and a second one quits. */
export function interrupt(state: ChatState): void {
  if (state.exiting) return;
  if (state.busy !== null) {
    state.screen.line(state.agent.abort("interrupted by the user (Ctrl-C)") ? "^C aborting the run…" : "^C the run is already stopping");
    return;
  }
  if (state.interruptArmed) {
    state.screen.line("^C");
    void state.exit();
    return;
  }
  state.interruptArmed = true;
  state.screen.line("^C (press Ctrl-C again, Ctrl-D or type /exit to quit)");
  state.showPrompt();
}

/**
 * The process's signals while the chat runs: SIGINT is Ctrl-C; SIGTERM, or
 * SIGHUP when the terminal goes away, ends the chat like /exit (the run is
 * aborted and journaled as finished, so the session can be resumed) with
 * status 143 / 129, and a second one exits at once. Returns the function
 * that removes the listeners.
 */
function listenForSignals(state: ChatState): () => void {
  const proc = process;
  const onInterrupt = () => interrupt(state);
  const onEndSignal = (name: string, status: number) => {
    if (state.endedBy !== null) proc.exit(status);
    state.endedBy = { name, status };
    state.screen.line(`[${name}: stopping]`);
    void state.exit(`the chat is closing (${name})`);
  };
  const onTerm = () => onEndSignal("SIGTERM", 143);
  const onHup = () => onEndSignal("SIGHUP", 129);
  proc.on("SIGINT", onInterrupt);
  proc.on("SIGTERM", onTerm);
  proc.on("SIGHUP", onHup);
  return () => {
    proc.off("SIGINT", onInterrupt);
    proc.off("SIGTERM", onTerm);
    proc.off("SIGHUP", onHup);
  };
}

/**
 * Run the REPL on `state` until /exit, Ctrl-D, Ctrl-C twice at the prompt,
 * SIGTERM or SIGHUP; then shut the agent down. Resolves to the exit status.
 */
export async function runRepl(state: ChatState, io: ChatIO): Promise<number> {
  const { screen, gate } = state;
  const rl = readline.createInterface({
    input: io.input,
    output: io.output,
    terminal: state.interactive,
    prompt: PROMPT,
    historySize: 200,
  });
  state.line = rl;
  // A key typed while the spinner is drawn: erase it first, so readline echoes on a clean line.
  if (state.interactive) io.input.prependListener("keypress", () => state.events.spinner.clear());

  let chain: Promise<void> = Promise.resolve();
  rl.on("line", (line: string) => {
    screen.moved(true); // the Enter that ended the line moved the cursor
    // Without a terminal nothing echoes the input: show it, so the transcript reads like a session.
    if (!state.interactive) chain = chain.then(() => screen.line(`${PROMPT}${line}`));
    chain = chain
      .then(() => handleLine(state, line))
      .catch((e) => {
        screen.line(`[error: ${(e as Error).message}]`);
      })
      .then(() => {
        if (state.busy === null && !gate.waiting) state.showPrompt();
      });
  });
  // The terminal went away (EIO from reading it or restoring its mode, as when
  // its window closes): the input is over, end like Ctrl-D. Unhandled, the
  // error left the process spinning without a terminal.
  rl.on("error", (e: unknown) => {
    if (!state.inputClosed && !state.exiting) {
      const why = (e as NodeJS.ErrnoException)?.code ?? (e as Error)?.message ?? String(e);
      io.error.write(`agentcore chat: the terminal is gone (${why}); stopping\n`);
    }
    state.inputClosed = true;
    gate.close();
    void state.exit();
  });
  rl.on("close", () => {
    state.inputClosed = true;
    if (state.exiting) return;
    // Ctrl-D or the end of piped input: no more answers can come; a run in flight may finish.
    gate.close();
    void chain.then(async () => {
      if (state.busy !== null) await state.busy;
      await state.exit();
    });
  });
  rl.on("SIGINT", () => interrupt(state));
  const stopListening = listenForSignals(state);

  const resumed = state.resumedMessages !== null ? `, resumed with ${state.resumedMessages} messages` : "";
  screen.line(`agentcore chat — session ${state.sessionId} (branch ${state.branch}${resumed}). /help lists the commands; Ctrl-D quits.`);
  if (state.planner?.plan) for (const l of renderPlan(state.planner.plan)) screen.line(l);
  state.showPrompt();

  try {
    await state.finished;
  } finally {
    state.events.spinner.stop();
    stopListening();
    await state.agent.shutdown();
  }
  const again = `--session ${state.sessionId}${state.branch !== "main" ? ` --branch ${state.branch}` : ""}`;
  screen.line(`[session ${state.sessionId}, branch ${state.branch}: resume with ${again}]`);
  return state.status();
}
