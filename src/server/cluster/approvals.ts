/**
 * The approvals waiting in the daemons of a store (`agentcore.run_approvals`):
 * the owner of a run notes each one, so that the others can list it and
 * forward its answer to the owner.
 *
 * @module
 */
import type { Pool } from "pg";
import type { Logger } from "../../core/logger.ts";
import type { ApprovalNotice, PendingApproval } from "../approvals.ts";

/** Keep the table of approvals waiting in this daemon up to date (GET /v1/approvals on the others lists them). */
export async function noteApproval(pool: Pool, nodeId: string, logger: Logger | null, runId: string, n: ApprovalNotice): Promise<void> {
  try {
    if (n.kind === "approval_requested")
      await pool.query(
        "INSERT INTO agentcore.run_approvals (approval_id, run_id, owner, approval) VALUES ($1, $2, $3, $4) ON CONFLICT (approval_id) DO NOTHING",
        [n.approval.approval_id, runId, nodeId, JSON.stringify(n.approval)],
      );
    else await pool.query("UPDATE agentcore.run_approvals SET status = 'answered' WHERE approval_id = $1", [n.approval.approval_id]);
  } catch (e) {
    logger?.warn("cluster: cannot note an approval", { approval_id: n.approval.approval_id, error: (e as Error)?.message });
  }
}

/** The approval waiting in a daemon of the store (this one included) for a call of a session branch's live cluster run, or null. */
export async function liveApproval(
  pool: Pool,
  sessionId: string,
  branch: string,
  toolCallId: string,
): Promise<{ approval_id: string; owner: string } | null> {
  const r = await pool.query(
    `SELECT a.approval_id, a.owner FROM agentcore.run_approvals a JOIN agentcore.runs r ON r.run_id = a.run_id
       WHERE a.status = 'pending' AND r.session_id = $1 AND r.branch = $2 AND a.approval->>'tool_call_id' = $3 AND r.owner = a.owner
       ORDER BY a.created_at DESC LIMIT 1`,
    [sessionId, branch, toolCallId],
  );
  return (r.rows[0] as { approval_id: string; owner: string } | undefined) ?? null;
}

/** The approvals waiting in daemons of the store other than `nodeId` (their owners alive by their runs' rows). */
export async function remoteApprovals(
  pool: Pool,
  nodeId: string,
): Promise<(PendingApproval & { cluster_run_id: string; owner: string })[]> {
  const r = await pool.query(
    `SELECT a.approval, a.run_id, a.owner FROM agentcore.run_approvals a JOIN agentcore.runs r ON r.run_id = a.run_id
       WHERE a.status = 'pending' AND a.owner <> $1 AND r.owner = a.owner AND r.status = 'running' ORDER BY a.created_at`,
    [nodeId],
  );
  return r.rows.map((row) => ({
    ...(row.approval as PendingApproval),
    cluster_run_id: row.run_id as string,
    owner: row.owner as string,
  }));
}
