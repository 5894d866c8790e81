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
import type { AgentRunResult } from "../providers/run.ts";
import { previewRecovery, recoverCommand, type RecoverOptions } from "./recover.ts";
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

/** Why a branch cannot be resumed ({@link resumeRefusal}). */
export interface ResumeRefusal {
  /** `no_previous_run`, `not_suspended` (the last run did not end awaiting_approval), or `approvals_pending`. */
  reason: "no_previous_run" | "not_suspended" | "approvals_pending";
  /** The last run's result as a resume would find it (after the recovery of unfinished runs); null without runs. */
  last: AgentRunResult | null;
  /** The approvals that wait for an answer. */
  pending: SessionApproval[];
  /** The unfinished runs a resume would have closed first (by the crash rules), with the result each would get. */
  recovering: { run_id: string; result: AgentRunResult }[];
}

/**
 * Whether a resume of `session` (a branch's projection) is refused, judged
 * on the branch as the crash rules would leave it once its unfinished runs
 * were recovered (`toolEffect`: the resuming process's tools, as for
 * `recoverRuns`), without writing anything: a front end asks this first and
 * recovers only a resume it accepts, so a refused resume leaves the journal
 * as it was. Null when the resume can go on: the last run ends (or would
 * end, once recovered) `awaiting_approval` and no approval waits.
 */
export function resumeRefusal(session: AgentSession, toolEffect?: RecoverOptions["toolEffect"]): ResumeRefusal | null {
  const recovering = previewRecovery(session, toolEffect === undefined ? {} : { toolEffect });
  const closed = new Map(recovering.map((r) => [r.run_id, r.result]));
  const run = session.runs.at(-1);
  const last = run === undefined ? null : (run.result ?? closed.get(run.run_id) ?? null);
  const pending = pendingApprovals(session);
  const reason =
    last === null
      ? "no_previous_run"
      : last.stop_reason !== "awaiting_approval"
        ? "not_suspended"
        : pending.length > 0
          ? "approvals_pending"
          : null;
  return reason === null ? null : { reason, last, pending, recovering };
}

/**
 * The first of `runIds` (unfinished runs of a branch) whose process is
 * alive: its run mark, else the branch's claim, names a live pid (what
 * `recoverRuns` checks before it writes). Null when each was left by a
 * process that ended: a crash, which a recovery may close.
 */
export async function liveRunOwner(
  storage: JournalStorage,
  sessionId: string,
  branch: string,
  runIds: readonly string[],
): Promise<{ run_id: string; pid: number } | null> {
  for (const runId of runIds) {
    const pid = (await storage.runOwner(sessionId, runId).catch(() => null)) ?? (await storage.branchOwner(sessionId, branch));
    if (pid !== null) return { run_id: runId, pid };
  }
  return null;
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
