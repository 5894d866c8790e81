/**
 * Clean-ups owed to the world outside the process: a child's process group
 * still running, a cgroup not yet removed, a session branch claimed, an MCP
 * server started.
 *
 * Library layers only register and release them here. They never listen to
 * the process's signals, never inspect its listeners and never exit: that is
 * the host's (`src/host/process.ts`, installed by the CLI and the daemon),
 * which runs the `exit` clean-ups as the process exits and, while any
 * `signal` clean-up is held, turns an ending signal that no command handles
 * into "run the clean-ups, then exit with 128 + the signal number".
 *
 * An application that embeds agentcore without that host keeps its process
 * to itself: nothing here touches it. It can run what is held with
 * {@link runExitCleanups} and {@link runSignalCleanups} from its own
 * handlers.
 *
 * @module
 */

/** One registration: what to do when the process ends while it is held. */
export interface ProcessCleanup {
  /** Synchronous (the process is exiting): kill, remove, release. */
  exit?: () => void;
  /**
   * Run, and awaited, before the process exits on a signal no command
   * handles. Holding one means such a signal ends the process through the
   * host (clean-ups first, then exit 128 + n) instead of at once.
   */
  signal?: () => void | Promise<void>;
}

const held = new Set<ProcessCleanup>();
const watchers = new Set<() => void>();

function changed(): void {
  for (const w of [...watchers]) w();
}

/**
 * Hold `cleanup` until the returned release is called (idempotent). The
 * object's identity is the registration: the same object held twice is held
 * once.
 */
export function holdCleanup(cleanup: ProcessCleanup): () => void {
  if (!held.has(cleanup)) {
    held.add(cleanup);
    changed();
  }
  return () => {
    if (held.delete(cleanup)) changed();
  };
}

/** The clean-ups held now, in the order they were registered. */
export function heldCleanups(): readonly ProcessCleanup[] {
  return [...held];
}

/** Whether any held clean-up has a `signal` part. */
export function holdsSignalCleanup(): boolean {
  for (const c of held) if (c.signal !== undefined) return true;
  return false;
}

/** Call `watcher` whenever a clean-up is held or released; returns the unsubscribe. */
export function watchCleanups(watcher: () => void): () => void {
  watchers.add(watcher);
  return () => {
    watchers.delete(watcher);
  };
}

/** Run every held `exit` clean-up (each one's failure is swallowed: the process is ending). */
export function runExitCleanups(): void {
  for (const c of [...held]) {
    try {
      c.exit?.();
    } catch {
      // best effort: the others still run
    }
  }
}

/**
 * Run every held `signal` clean-up; resolves when all have settled. (The
 * `exit` ones are left to the process's exit, which follows.)
 */
export async function runSignalCleanups(): Promise<void> {
  await Promise.allSettled([...held].map(async (c) => c.signal?.()));
}
