/**
 * Commands to cluster runs (`agentcore.run_commands`): steer, abort,
 * follow_up, continue and approval answers given to a daemon that does not
 * own the run are sent to the owner, which applies them and writes the
 * outcome; the asking daemon waits for it, bounded.
 *
 * @module
 */
import type { Pool } from "pg";
import { HttpError } from "../errors.ts";
import type { RunManager } from "../runs.ts";
import { COMMANDS_CHANNEL, OUTCOMES_CHANNEL } from "./config.ts";
import { notRunning, readRow } from "./rows.ts";

/** A command's kinds. */
export type CommandKind = "steer" | "abort" | "follow_up" | "continue" | "approval";

/** An answer as the route gives it: status and JSON body. */
export interface CommandOutcome {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

/** Applies a command to a run of this daemon (the routes' own code): the answer the route would give. */
export type CommandApplier = (kind: CommandKind, runId: string | null, body: Record<string, unknown>) => Promise<CommandOutcome>;

/** What {@link forwardCommand} needs of the cluster node. */
export interface CommandSender {
  pool: Pool;
  nodeId: string;
  pollMs: number;
  /** How long a forwarded command waits for its owner's answer. */
  timeoutMs: number;
  /** The wakers of forwarded commands waiting for their outcome, by command id (the outcome's NOTIFY calls them). */
  outcomeSubs: Map<string, () => void>;
}

/**
 * Send a command to the daemon that owns the run (or, for `approval`, the
 * one whose queue holds the approval) and wait for its answer: null when
 * there is no such run or it is this daemon's, 409 when no daemon runs it
 * now, 503 when the owner does not answer within the command timeout.
 */
export async function forwardCommand(
  node: CommandSender,
  kind: CommandKind,
  key: string,
  body: Record<string, unknown>,
): Promise<CommandOutcome | null> {
  const pool = node.pool;
  let target: string | null;
  let runId: string | null;
  if (kind === "approval") {
    const r = await pool.query("SELECT owner, run_id FROM agentcore.run_approvals WHERE approval_id = $1 AND status = 'pending'", [key]);
    if (r.rows.length === 0) return null;
    target = r.rows[0].owner as string;
    runId = r.rows[0].run_id as string;
  } else {
    const row = await readRow(pool, key);
    if (row === null) return null;
    runId = key;
    target = row.owner;
    // not running, or ours but not live here (the route found no such run): it has ended
    if (target === null || row.status !== "running" || target === node.nodeId) throw notRunning(row);
  }
  if (target === node.nodeId) return null; // ours after all (it is local, or it is gone)
  const ins = await pool.query("INSERT INTO agentcore.run_commands (run_id, target, kind, body) VALUES ($1, $2, $3, $4) RETURNING id", [
    runId,
    target,
    kind,
    JSON.stringify({ ...body, key }),
  ]);
  const id = String(ins.rows[0].id);
  await pool.query("SELECT pg_notify($1, $2)", [COMMANDS_CHANNEL, target]);
  const deadline = Date.now() + node.timeoutMs;
  for (;;) {
    const r = await pool.query("SELECT status, outcome FROM agentcore.run_commands WHERE id = $1", [id]);
    if (r.rows[0]?.status === "done") return r.rows[0].outcome as CommandOutcome;
    const left = deadline - Date.now();
    if (left <= 0) break;
    await new Promise<void>((res) => {
      const t = setTimeout(done, Math.min(left, node.pollMs));
      function done() {
        clearTimeout(t);
        res();
      }
      node.outcomeSubs.set(id, done);
    });
    node.outcomeSubs.delete(id);
  }
  const gaveUp = await pool.query("UPDATE agentcore.run_commands SET status = 'expired' WHERE id = $1 AND status = 'pending' RETURNING 1", [
    id,
  ]);
  if (gaveUp.rows.length === 0) {
    const r = await pool.query("SELECT status, outcome FROM agentcore.run_commands WHERE id = $1", [id]);
    if (r.rows[0]?.status === "done") return r.rows[0].outcome as CommandOutcome;
  }
  throw new HttpError(
    503,
    "OVERLOADED",
    `the daemon that runs ${kind === "approval" ? `the run of approval ${key}` : `run ${key}`} (${target}) did not answer within ${node.timeoutMs} ms: it may be down (its run is then taken over by another daemon); try again`,
    { limit: "cluster_command", owner: target },
    { "retry-after": "1" },
  );
}

/** Take the commands sent to daemon `nodeId`, apply each with `apply` and write its outcome (with a NOTIFY to the sender). */
export async function applyCommands(pool: Pool, nodeId: string, runs: RunManager, apply: CommandApplier): Promise<void> {
  const r = await pool.query(
    "UPDATE agentcore.run_commands SET status = 'taken' WHERE target = $1 AND status = 'pending' RETURNING id, run_id, kind, body",
    [nodeId],
  );
  for (const c of r.rows as { id: string; run_id: string | null; kind: CommandKind; body: Record<string, unknown> }[]) {
    let outcome: CommandOutcome;
    try {
      // a run that has ended here since the command was sent: the same answer as for any run that has ended
      if (c.kind !== "approval" && runs.find(c.run_id ?? "") === undefined) {
        const row = await readRow(pool, c.run_id ?? "");
        if (row !== null) throw notRunning(row);
      }
      outcome = await apply(c.kind, c.run_id, c.body);
    } catch (e) {
      const err = e instanceof HttpError ? e : new HttpError(500, "INTERNAL_ERROR", "internal error");
      outcome = { status: err.status, body: await err.toResponse().json() };
    }
    await pool.query("UPDATE agentcore.run_commands SET status = 'done', outcome = $2, answered_at = now() WHERE id = $1", [
      c.id,
      JSON.stringify(outcome),
    ]);
    await pool.query("SELECT pg_notify($1, $2)", [OUTCOMES_CHANNEL, String(c.id)]);
  }
}
