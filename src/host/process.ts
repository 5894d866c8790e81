/**
 * The process, owned in one place: ending signals and their exit statuses,
 * and the clean-ups the library layers hold (`src/core/cleanup.ts`: child
 * process groups, cgroups, session branch claims, MCP servers).
 *
 * The library layers never listen to the process's signals, never look at
 * its listeners and never exit; the CLI and the daemon call
 * {@link installProcessHost} once, and it
 *
 * - runs the held `exit` clean-ups when the process exits (however it
 *   exits: the end of `main`, or a command's own `process.exit`);
 * - while a `signal` clean-up is held (a child is running, MCP servers are
 *   attached), listens to SIGINT, SIGTERM and SIGHUP. When no command
 *   handles that signal itself (chat and agent abort the run on SIGINT,
 *   serve and mcp shut down on SIGTERM: any listener other than this one is
 *   a command's), it runs the clean-ups and exits with 128 + the signal
 *   number. With nothing held, it does not listen, and a signal keeps its
 *   default meaning.
 *
 * @module
 */
import { holdsSignalCleanup, runExitCleanups, runSignalCleanups, watchCleanups } from "../core/cleanup.ts";

/** The signals that end agentcore, with the exit status each one gives (128 + its number). */
export const ENDING_SIGNALS: readonly (readonly [NodeJS.Signals, number])[] = [
  ["SIGINT", 130],
  ["SIGTERM", 143],
  ["SIGHUP", 129],
];

/** The exit status for ending on `signal` (128 + its number); 1 for a signal not in {@link ENDING_SIGNALS}. */
export function signalExitStatus(signal: string): number {
  return ENDING_SIGNALS.find(([s]) => s === signal)?.[1] ?? 1;
}

/** Exit the process now with `status` (the held exit clean-ups run on the way). */
export function exitProcess(status: number): never {
  return process.exit(status);
}

let installed = false;
let armed = false;
let stopping = false;

const listeners = new Map<NodeJS.Signals, () => void>(
  ENDING_SIGNALS.map(([sig, status]) => [sig, () => onEndingSignal(sig, status)] as const),
);

/**
 * A signal that would end agentcore while a clean-up is held. Another
 * listener (even one removed during this same dispatch, which still calls
 * this one) means the command handles the signal: it decides, and its
 * abort releases what the run held.
 */
function onEndingSignal(sig: NodeJS.Signals, status: number): void {
  const ours = listeners.get(sig);
  if (process.listeners(sig).some((l) => l !== ours)) return;
  if (stopping) return; // the clean-ups are already running; exit follows
  stopping = true;
  void runSignalCleanups().finally(() => process.exit(status));
}

function arm(): void {
  const want = stopping || holdsSignalCleanup();
  if (want === armed) return;
  armed = want;
  for (const [sig, listener] of listeners) {
    if (want) process.on(sig, listener);
    else process.off(sig, listener);
  }
}

/**
 * Take charge of the process for the CLI or the daemon (idempotent). Returns
 * a function that gives it back (for tests): the listeners go, the held
 * clean-ups stay held.
 */
export function installProcessHost(): () => void {
  if (installed) return () => {};
  installed = true;
  process.on("exit", runExitCleanups);
  const unwatch = watchCleanups(arm);
  arm();
  return () => {
    unwatch();
    process.off("exit", runExitCleanups);
    stopping = false;
    holdsNothing();
    installed = false;
  };
}

function holdsNothing(): void {
  if (!armed) return;
  armed = false;
  for (const [sig, listener] of listeners) process.off(sig, listener);
}

/**
 * Listen to the ending signals for a while, unconditionally (a start-up that
 * a signal must interrupt): `onSignal` gets the signal and its exit status.
 * Returns the function that stops listening.
 */
export function onEndingSignals(onSignal: (signal: NodeJS.Signals, status: number) => void): () => void {
  const added = ENDING_SIGNALS.map(([sig, status]) => {
    const l = () => onSignal(sig, status);
    process.on(sig, l);
    return [sig, l] as const;
  });
  return () => {
    for (const [sig, l] of added) process.off(sig, l);
  };
}
