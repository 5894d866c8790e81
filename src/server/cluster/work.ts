/**
 * A run's job on this daemon: claim the run's row, run it through the
 * RunManager (or take it over from a dead owner: close it under the crash
 * rules and resume it from its last committed record), and write its end to
 * the row with its events (./events.ts). A refusal a retry may change, or a
 * store that went away, throws: pg-boss retries the job.
 *
 * @module
 */
import type { Pool } from "pg";
import type { AgentRunResult } from "../../agent/index.ts";
import type { Logger } from "../../core/logger.ts";
import type { JournalStorage } from "../../session/journal.ts";
import { pendingApprovals, sessionMessages } from "../../session/types.ts";
import type { ApprovalNotice } from "../approvals.ts";
import { HttpError } from "../errors.ts";
import type { RunManager, ServerRun } from "../runs.ts";
import { RUN_RETRY_LIMIT } from "./config.ts";
import { EventWriter, type RowStatus } from "./events.ts";
import type { RunRow } from "./rows.ts";

/** What a run's job needs of the cluster node. */
export interface RunWorkerNode {
  pool: Pool;
  nodeId: string;
  storage: JournalStorage;
  runs: RunManager;
  logger: Logger | null;
  toolEffect: (name: string) => "read_only" | "side_effecting" | undefined;
  /** Runs this daemon executes: their event writers. */
  writers: Map<string, EventWriter>;
  /**
   * The ends of runs that ended here while the store did not take their row's
   * status (a database outage): the job's retry writes them again rather
   * than run the task once more.
   */
  lostEnds: Map<string, { status: RowStatus; items: string[] }>;
  /** Note an approval the run asks for, or its answer, in the store's table of approvals. */
  noteApproval(runId: string, n: ApprovalNotice): Promise<void>;
}

/**
 * The row's status at the end of a run's task: `suspended` while it awaits an
 * approval, `failed` (with the error) when its store stopped it (a result
 * `failed` / `store_failed`, docs/durability.md), else `idle`.
 */
function endStatus(result: AgentRunResult | null | undefined): RowStatus {
  if (result?.stop_reason === "awaiting_approval") return { status: "suspended", result };
  if (result?.stop_reason === "store_failed") return { status: "failed", result, error: result.error ?? null };
  return { status: "idle", result: result ?? null };
}

/**
 * The job handler: claim the run, run it (or take it over), resolve when
 * its task ended or suspended. After the claim, the run's {@link EventWriter}
 * is the only writer of its row (each status change in order, with the
 * items it goes with), and once the task has ended the run leaves this
 * daemon's live table: its record is the store's.
 */
export async function executeRun(node: RunWorkerNode, runId: string, jobSignal: AbortSignal, lastTry: boolean): Promise<void> {
  const claimed = await node.pool.query(
    `UPDATE agentcore.runs SET owner = $2, epoch = epoch + 1, status = 'running', updated_at = now()
       WHERE run_id = $1 AND status IN ('queued', 'running') RETURNING *`,
    [runId, node.nodeId],
  );
  const row = claimed.rows[0] as RunRow | undefined;
  if (row === undefined) return; // finished, or gone: nothing to do
  const last = await node.pool.query("SELECT COALESCE(max(seq), 0)::bigint AS n FROM agentcore.run_events WHERE run_id = $1", [runId]);
  const here: { run: ServerRun | null } = { run: null };
  const writer = new EventWriter(
    node.pool,
    runId,
    row.epoch,
    Number(last.rows[0].n),
    () => {
      node.logger?.warn("cluster: run taken over by another daemon; stopping it here", { run_id: runId });
      here.run?.agent.abort("run taken over by another daemon (its epoch moved on)");
    },
    (e) => node.logger?.warn("cluster: run events lost", { run_id: runId, error: (e as Error)?.message }),
  );
  node.writers.set(runId, writer);
  const lostEnd = node.lostEnds.get(runId);
  try {
    if (lostEnd !== undefined) {
      // the run ended here, its end not taken by the store: that end, not the task again
      for (const item of lostEnd.items) writer.push(JSON.parse(item), lostEnd.status);
      if (lostEnd.items.length === 0) writer.status(lostEnd.status);
      await writer.flush();
    } else await work(node, row, writer, here, jobSignal, lastTry);
  } catch (e) {
    // the store went away, or the branch is held elsewhere: the job is retried
    node.logger?.warn("cluster: a run could not be taken", { run_id: runId, error: (e as Error)?.message });
    await writer.flush();
    if (here.run === null && lastTry) {
      const error = `not taken after ${RUN_RETRY_LIMIT} tries: ${(e as Error)?.message ?? String(e)}`;
      writer.status({ status: "failed", result: null, error });
      await writer.flush();
    } else if (here.run === null) throw e;
  } finally {
    node.writers.delete(runId);
  }
  // the store stayed away when the run ended: the job is retried, and its next claim writes the end kept here (or,
  // on another daemon, finds the result in the journal)
  if (writer.statusLost) {
    const end = writer.lost ?? lostEnd;
    if (end !== undefined && end.status.status !== "queued" && end.status.status !== "running") node.lostEnds.set(runId, end);
    throw new Error(`run ${runId} ended, but the store did not take its status; retrying`);
  }
  node.lostEnds.delete(runId);
}

/** A claimed run, run here (`here.run` while it is) or taken over; the end of its task is the end of its stay here. */
async function work(
  node: RunWorkerNode,
  row: RunRow,
  writer: EventWriter,
  here: { run: ServerRun | null },
  jobSignal: AbortSignal,
  lastTry: boolean,
): Promise<void> {
  const runs = node.runs;
  const storage = node.storage;
  const { run_id: runId, request: req, branch } = row;
  /** The end of the run here: its idle item and the row's status, committed together. */
  const rest = async (result: AgentRunResult | null, status?: "suspended") => {
    writer.push({ type: "idle", status: "idle", result }, status === undefined ? endStatus(result) : { status, result });
    await writer.flush();
  };
  // What the branch holds now: the start of the run, or what a dead owner committed of it.
  const checkout = await storage.checkout(row.session_id, branch);
  const head = checkout?.head ?? null;
  const turns = checkout === null ? 0 : sessionMessages(checkout.session).filter((m) => m.role === "assistant").length;
  let takeover = false;
  if (row.base_turns === null) {
    await node.pool.query("UPDATE agentcore.runs SET base_head = $3, base_turns = $4 WHERE run_id = $1 AND epoch = $2", [
      runId,
      row.epoch,
      head ?? "",
      turns,
    ]);
  } else takeover = (row.base_head ?? "") !== (head ?? "");
  let request = req;
  let op: Parameters<RunManager["begin"]>[1] = { kind: "task", task: req.task };
  if (takeover) {
    writer.push({ type: "cluster", event: { kind: "run_taken_over", run_id: runId, owner: node.nodeId, epoch: row.epoch } });
    await storage.recoverRuns(row.session_id, {
      branch,
      reason: `taken over by daemon ${node.nodeId}`,
      toolEffect: node.toolEffect,
      resumable: true,
    });
    const after = (await storage.checkout(row.session_id, branch))!;
    const lastRun = after.session.runs.at(-1);
    // a waiting approval: the run stays suspended until it is answered and resumed
    if (pendingApprovals(after.session).length > 0) return rest(lastRun?.result ?? null, "suspended");
    // the dead owner finished the task but not its bookkeeping (a run its store stopped reads failed)
    if (lastRun?.result !== null && lastRun?.result !== undefined && lastRun.result.stop_reason !== "awaiting_approval")
      return rest(lastRun.result);
    // a scripted model goes on after the turns the journal holds
    const done = sessionMessages(after.session).filter((m) => m.role === "assistant").length - (row.base_turns ?? 0);
    if (Array.isArray(req.script)) request = { ...req, script: req.script.slice(Math.max(0, done)) };
    op = { kind: "resume" };
  }
  let r: ServerRun;
  try {
    r = here.run = await runs.create(request, runId);
  } catch (e) {
    return failed(writer, e, lastTry);
  }
  let ended = false;
  const listener = (item: Parameters<ServerRun["emit"]>[0]) => {
    if (ended) return;
    if (item.type !== "idle") {
      writer.push(item);
      if (item.type === "approval") void node.noteApproval(runId, item.notice);
      return;
    }
    // The task has ended (or suspended, or the daemon stopped it): the row takes its status with
    // the idle item, and the run leaves the live table now (GET /v1/runs/{id} reads the row).
    ended = true;
    r.listeners.delete(listener);
    writer.push(item, endStatus(item.result));
    void runs.discard(r);
  };
  r.listeners.add(listener);
  let begun;
  try {
    begun = await runs.begin(r, op);
  } catch (e) {
    r.listeners.delete(listener);
    await runs.discard(r);
    here.run = null;
    return failed(writer, e, lastTry);
  }
  const onJobAbort = () => r.agent.abort("the queue gave this run's job up (its heartbeat was lost)");
  jobSignal.addEventListener("abort", onJobAbort, { once: true });
  try {
    await begun.done.catch(() => null);
  } finally {
    jobSignal.removeEventListener("abort", onJobAbort);
  }
  if (!ended) listener({ type: "idle", status: r.status, result: r.agent.lastResult });
  await writer.flush();
}

async function failed(writer: EventWriter, e: unknown, lastTry: boolean): Promise<void> {
  const message = e instanceof HttpError ? e.message : ((e as Error)?.message ?? String(e));
  // a refusal a retry may change (this daemon full or stopping, the branch held elsewhere): queued again, the job retried
  if (!lastTry && e instanceof HttpError && (e.status === 503 || (e.status === 409 && e.details.reason === "session_busy"))) {
    writer.status({ status: "queued", result: null });
    await writer.flush();
    throw e;
  }
  writer.push({ type: "idle", status: "idle", result: null }, { status: "failed", result: null, error: message });
  await writer.flush();
}
