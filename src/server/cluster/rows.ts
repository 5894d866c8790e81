/**
 * A cluster run's row of `agentcore.runs`: how it is read, how the API shows
 * it, and the refusal of a command to a run that no daemon runs now.
 *
 * @module
 */
import type { Pool } from "pg";
import { HttpError } from "../errors.ts";
import type { RunRequest } from "../runs.ts";

/** A row of `agentcore.runs`. */
export interface RunRow {
  run_id: string;
  session_id: string;
  branch: string;
  request: RunRequest;
  status: string;
  owner: string | null;
  epoch: number;
  base_head: string | null;
  base_turns: number | null;
  error: string | null;
  created_at: Date;
  updated_at: Date;
  result: unknown;
}

/** A cluster run's row, as the API shows it. */
export interface ClusterRunView {
  run_id: string;
  status: string;
  session: { session_id: string; branch: string };
  owner: string | null;
  epoch: number;
  created_at: string;
  updated_at: string;
  result: unknown;
  error: string | null;
  detached: boolean;
}

/** The run's row, or null. */
export async function readRow(pool: Pool, runId: string): Promise<RunRow | null> {
  const r = await pool.query("SELECT * FROM agentcore.runs WHERE run_id = $1", [runId]);
  return (r.rows[0] as RunRow | undefined) ?? null;
}

/** The row as the API shows it. */
export function viewOf(row: RunRow): ClusterRunView {
  return {
    run_id: row.run_id,
    status: row.status,
    session: { session_id: row.session_id, branch: row.branch },
    owner: row.owner,
    epoch: row.epoch,
    created_at: new Date(row.created_at).toISOString(),
    updated_at: new Date(row.updated_at).toISOString(),
    result: row.result ?? null,
    error: row.error,
    detached: true,
  };
}

/** 409 for a command to a run that no daemon runs now: queued, or ended (a cluster run's agent is not kept after its task). */
export function notRunning(row: RunRow): HttpError {
  const sid = row.session_id.slice(0, 100);
  const message =
    row.owner === null || row.status === "queued"
      ? `run ${row.run_id} is ${row.status}: no daemon runs it now`
      : `run ${row.run_id} has ended${row.status === "running" ? "" : ` (${row.status})`}: a cluster run's agent is not kept after its task; to go on, start a new run on session '${sid}'${row.status === "suspended" ? ` or answer its approval and POST /v1/sessions/${sid}/resume` : ""}`;
  return new HttpError(409, "CONFLICT", message, { reason: "run_not_owned", status: row.status });
}
