/**
 * The session side of the `agent` command (and of `chat`, which shares it):
 * the store the flags name, the branch claim taken before anything runs, the
 * recovery a `--resume` makes of a run a crash left open, and the errors
 * that end the command with exit status 2 (setup, usage, a session's state).
 *
 * @module
 */
import * as path from "node:path";
import { AgentcoreError } from "../core/errors.ts";
import type { Runtime } from "../runtime/index.ts";
import { openStore, type OpenedStore } from "../host/store.ts";
import { type BranchClaim, type JournalRepair, type JournalStorage, repairMessage } from "../session/journal.ts";
import { shellWord } from "../session/manage.ts";
import {
  SessionBranchBusyError,
  SessionError,
  SessionStorageError,
  type SessionUnfinishedRunError,
  unfinishedRuns,
} from "../session/types.ts";

/**
 * A setup problem the flags cannot fix by their syntax (a bad script or
 * skill, a model setting, an unknown branch): exit status 2, the message
 * alone, without the usage hint.
 */
export class AgentSetupError extends AgentcoreError {
  readonly code: string = "SETUP_FAILED";
  override name = "AgentSetupError";
}

/** A usage problem of agent or chat (flags that do not go together, an empty value): exit status 2 with the usage hint. */
export class AgentUsageError extends AgentSetupError {
  override readonly code: string = "USAGE";
  override name = "AgentUsageError";
}

/**
 * The session cannot take a run in its current state (a run a crash left
 * unfinished): exit status 2, and the message names the fix; not a usage
 * error, so no usage hint.
 */
export class AgentSessionStateError extends AgentcoreError {
  readonly code: string = "SESSION_UNAVAILABLE";
  override name = "AgentSessionStateError";
}

/**
 * The error for a session whose branch has an unfinished run: in use, when
 * the run's process is alive (another agentcore on the same session), else
 * the crash message naming `sessions recover`.
 */
export async function unfinishedRunError(storage: JournalStorage, e: SessionUnfinishedRunError): Promise<AgentSessionStateError> {
  for (const runId of e.runIds) {
    const pid = await storage.runOwner(e.sessionId, runId).catch(() => null);
    if (pid !== null)
      return new AgentSessionStateError(
        `session '${e.sessionId}' is in use: run ${runId} is still going in process ${pid}; wait for it to finish, or stop that process (it then journals the run as finished)`,
      );
  }
  return new AgentSessionStateError(e.message);
}

/**
 * `--branch B` names no branch of the session: the branches it has and how to
 * make B, or (a session with no records yet) that a new session starts on main.
 */
export async function missingBranchMessage(storage: JournalStorage, sessionId: string, branch: string): Promise<string> {
  const branches = (await storage.listBranches(sessionId).catch(() => [])).map((b) => b.branch_id);
  if (branches.length === 0)
    return `session '${sessionId}' has no branch '${branch}': it has no records yet, and a new session starts on main (leave --branch out)`;
  return `session '${sessionId}' has no branch '${branch}' (branches ${branches.join(", ")}); to make it: agentcore sessions fork ${shellWord(sessionId)} --name ${shellWord(branch)}`;
}

/**
 * Take the session branch before anything runs (no model request, no tool):
 * a branch another live process holds, or a journal that cannot be written
 * (a read-only folder, Deno without --allow-write), is an
 * {@link AgentSessionStateError} here, so the command exits 2 having done
 * nothing. Release the claim on every way out.
 */
export async function claimSessionBranch(storage: JournalStorage, sessionId: string, branch: string, holder: string): Promise<BranchClaim> {
  try {
    return await storage.claimBranch(sessionId, branch, holder);
  } catch (e) {
    if (e instanceof SessionBranchBusyError) throw new AgentSessionStateError(e.message);
    if (e instanceof SessionStorageError) {
      const hint = "Deno" in globalThis ? "" : "; make that folder writable, or pass --sessions-dir DIR";
      throw new AgentSessionStateError(`cannot journal session '${sessionId}': ${e.message}${hint}`);
    }
    if (e instanceof SessionError) throw new AgentSetupError(e.message);
    throw e;
  }
}

/** Reports a torn journal line cut off before a write, on stderr (`prefix`: the command). */
export function reportRepair(prefix: string): (r: JournalRepair) => void {
  return (r) => process.stderr.write(`${prefix}: ${repairMessage(r)}\n`);
}

/**
 * `--resume` on a branch whose run a crash left unfinished (its process gone:
 * the branch claim would have failed otherwise): close it under the crash
 * rules first, with this runtime's tool effects (a read-only call runs
 * again, a side-effecting one that may have started is answered
 * interrupted). A run still alive elsewhere is an {@link AgentSessionStateError}.
 */
export async function recoverForResume(storage: JournalStorage, runtime: Runtime, sessionId: string, branch: string): Promise<void> {
  const c = await storage.checkout(sessionId, branch);
  if (c === null || unfinishedRuns(c.session).length === 0) return;
  try {
    await storage.recoverRuns(sessionId, {
      branch,
      reason: "recovered by 'agentcore agent --resume'",
      toolEffect: (name) => runtime.registry.get(name)?.effect,
    });
  } catch (e) {
    if (e instanceof SessionError) throw new AgentSessionStateError(e.message);
    throw e;
  }
}

/**
 * The session store of the flags, opened through the host's openStore:
 * --sessions-dir, else the settings' store, else .agentcore/sessions under
 * the root. A store that cannot be opened is a setup error (exit 2).
 */
export async function openSessionStore(
  runtime: Runtime,
  flags: { sessionsDir?: string; store?: string },
  onRepair: (r: JournalRepair) => void,
): Promise<OpenedStore> {
  try {
    return await openStore(flags.sessionsDir !== undefined ? undefined : flags.store, {
      root: runtime.root ?? undefined,
      sessionsDir: flags.sessionsDir ?? path.join(runtime.root ?? ".", ".agentcore", "sessions"),
      onRepair,
    });
  } catch (e) {
    if (e instanceof SessionError) throw new AgentSetupError(e.message);
    throw e;
  }
}
