/**
 * Approvals in the journal: what a branch waits for, answering it later (any
 * process, any front end), and the answers a resume acts on.
 *
 * A call that needs an approval is journaled as `approval_requested` before
 * anyone is asked; its answer as `approval_decided`. A run told to suspend
 * (`suspendOnApproval`) ends `suspended` / `awaiting_approval` with the
 * request unanswered; {@link decideApproval} answers it, and a resume
 * (`Agent.resumeRun(resumeDecisions(session))`) runs the approved calls and
 * gives the denied ones the policy's rejection payload.
 *
 * @module
 */
import type { JournalStorage } from "./journal.ts";
import { recoverCommand } from "./recover.ts";
import {
  type AgentSession,
  pendingApprovals,
  type SessionApproval,
  type SessionRecord,
  SessionNotFoundError,
  SessionValidationError,
} from "./types.ts";

/** An answer that cannot be given: the call waits for none on this branch, or its run is still going. */
export class SessionApprovalError extends SessionValidationError {
  override readonly code: string = "SESSION_APPROVAL_REFUSED";
  override name = "SessionApprovalError";
  constructor(
    message: string,
    readonly sessionId: string,
    readonly branchId: string,
    readonly toolCallId: string,
    /** The call ids that do wait on the branch. */
    readonly pending: readonly string[],
    /** `not_pending` (unknown, already answered, another branch's) or `run_active` (its run has not ended: recover it first). */
    readonly problem: "not_pending" | "run_active",
  ) {
    super(message);
  }
}

/** What {@link decideApproval} takes. */
export interface ApprovalAnswer {
  branch?: string;
  approved: boolean;
  reason?: string | null;
  /** Who answered (`cli`, `http`, a user name, …); journaled. */
  decidedBy?: string;
}

/** The answer given to an approval, by call id, as `Agent.resumeRun` takes it. */
export function resumeDecisions(session: AgentSession): Map<string, { approved: boolean; reason: string | null; ruleId: string | null }> {
  const out = new Map<string, { approved: boolean; reason: string | null; ruleId: string | null }>();
  for (const a of session.approvals ?? [])
    if (a.decision !== null) out.set(a.tool_call_id, { approved: a.decision.approved, reason: a.decision.reason, ruleId: a.rule_id });
  return out;
}

/** The pending call ids as a message lists them ("c1, c2", or "none"). */
function listed(pending: readonly SessionApproval[]): string {
  return pending.length === 0 ? "none" : pending.map((a) => `${a.tool_call_id} (${a.tool})`).join(", ");
}

/**
 * Journal the answer to the approval call `toolCallId` waits for on a branch
 * (an `approval_decided` record, a conditional append on the branch head).
 * Throws {@link SessionApprovalError} when no approval of that call waits on
 * the branch (unknown, answered already, another branch's; the message lists
 * those that wait) or its run has not ended (a crashed one: recover it
 * first), SessionNotFoundError for an unknown session or branch.
 */
export async function decideApproval(
  storage: JournalStorage,
  sessionId: string,
  toolCallId: string,
  answer: ApprovalAnswer,
): Promise<{ record: SessionRecord; approval: SessionApproval }> {
  const branch = answer.branch ?? "main";
  if (typeof answer.approved !== "boolean") throw new TypeError("decideApproval: approved must be a boolean");
  const c = await storage.checkout(sessionId, branch);
  if (c === null) {
    const branches = await storage.listBranches(sessionId).catch(() => []);
    throw new SessionNotFoundError(
      branches.length === 0 ? `no session '${sessionId}'` : `session '${sessionId}' has no branch '${branch}'`,
    );
  }
  const pending = pendingApprovals(c.session);
  const approval = pending.find((a) => a.tool_call_id === toolCallId);
  const where = `session '${sessionId}'${branch !== "main" ? ` branch '${branch}'` : ""}`;
  if (approval === undefined) {
    const answered = (c.session.approvals ?? []).some((a) => a.tool_call_id === toolCallId);
    throw new SessionApprovalError(
      `${where}: no approval of call '${toolCallId}' waits${answered ? " (it was answered already)" : ""}; waiting: ${listed(pending)}`,
      sessionId,
      branch,
      toolCallId,
      pending.map((a) => a.tool_call_id),
      "not_pending",
    );
  }
  const run = c.session.runs.find((r) => r.run_id === approval.run_id);
  if (run !== undefined && run.result === null) {
    const owner = await storage.runOwner(sessionId, run.run_id).catch(() => null);
    throw new SessionApprovalError(
      owner !== null
        ? `${where}: run ${run.run_id} is still going in process ${owner} and asks for this approval there; answer it in that process`
        : `${where}: run ${run.run_id} never finished (its process ended while it waited); mark it suspended first with: ${recoverCommand(sessionId, branch)}`,
      sessionId,
      branch,
      toolCallId,
      pending.map((a) => a.tool_call_id),
      "run_active",
    );
  }
  const record = await storage.append(
    {
      session_id: c.session.session_id,
      agent_id: c.session.agent_id,
      branch_id: branch,
      sequence: 0,
      type: "approval_decided",
      data: {
        run_id: approval.run_id,
        tool_call_id: toolCallId,
        approved: answer.approved,
        reason: answer.reason ?? null,
        decided_by: answer.decidedBy ?? null,
      },
    },
    { expectedHeadId: c.head?.record_id ?? null, checkHead: true },
  );
  return { record, approval };
}
