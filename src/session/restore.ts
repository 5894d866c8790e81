/**
 * Restore a session into an agent so `continueRun()` works after a restart.
 *
 * @module
 */
import type { AgentMessage } from "../providers/messages.ts";
import type { AgentRunResult } from "../providers/run.ts";
import { hasUnloadedImages } from "./blobs.ts";
import { recoverCommand } from "./recover.ts";
import {
  type AgentSession,
  type SessionCheckout,
  sessionMessages,
  SessionUnfinishedRunError,
  SessionValidationError,
  unfinishedRuns,
} from "./types.ts";

/**
 * What {@link restoreSession} needs of an agent (the agent layer's `Agent`
 * is one; the session layer sits below it and takes just this).
 */
export interface RestorableAgent {
  readonly agentId: string;
  readonly isActive: boolean;
  restore(messages: readonly AgentMessage[], lastResult: AgentRunResult | null): void;
}

/**
 * Load a checkout's (or session's) conversation and last result into `agent`.
 * A session with images needs their bytes loaded first
 * (`loadSessionImages(storage, session)`, which checks each blob's hash).
 * Throws while the agent is active, for another agent's session, and
 * ({@link SessionUnfinishedRunError}, naming the recovery) when a run of the
 * session never finished.
 */
export function restoreSession(agent: RestorableAgent, from: SessionCheckout | AgentSession): void {
  const session = "session" in from ? from.session : from;
  if (agent.isActive) throw new SessionValidationError("cannot restore a session into an active agent");
  if (session.agent_id !== null && session.agent_id !== agent.agentId) {
    throw new SessionValidationError(`session '${session.session_id}' belongs to agent '${session.agent_id}', not '${agent.agentId}'`);
  }
  const open = unfinishedRuns(session);
  if (open.length > 0) {
    const branch = "session" in from ? from.branch.branch_id : null;
    throw new SessionUnfinishedRunError(
      `session '${session.session_id}'${branch !== null && branch !== "main" ? ` branch '${branch}'` : ""} has unfinished run(s): ${open.join(", ")} (the process running it ended before the run finished); ` +
        `mark it interrupted with: ${recoverCommand(session.session_id, branch ?? "main")}`,
      session.session_id,
      open,
      branch,
    );
  }
  if (hasUnloadedImages(session))
    throw new SessionValidationError(
      `session '${session.session_id}' holds images whose bytes are not loaded: call loadSessionImages(storage, session) before restoreSession`,
    );
  agent.restore(sessionMessages(session), session.runs.at(-1)?.result ?? null);
}
