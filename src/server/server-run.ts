/**
 * One run of the daemon ({@link ServerRun}): its agent, its session, its
 * results, and its stream: the items its listeners receive, numbered, with
 * a backlog for `Last-Event-ID` replays. {@link RunView} is how
 * `GET /v1/runs/{id}` shows it.
 *
 * @module
 */
import type { Agent, AgentEvent, AgentRunResult } from "../agent/index.ts";
import type { PolicyPreset } from "../host/policy-presets.ts";
import type { BranchClaim, JournalStorage } from "../session/journal.ts";
import type { SessionRecorder } from "../session/recorder.ts";
import type { ApprovalNotice } from "./approvals.ts";

/** What a run's listeners receive: agent events, approval notices, and the end of an operation. */
export type RunStreamItem =
  | { type: "agent"; event: AgentEvent }
  | { type: "approval"; notice: ApprovalNotice }
  | { type: "idle"; status: RunView["status"]; result: AgentRunResult | null };

/** A run as `GET /v1/runs/{id}` shows it. */
export interface RunView {
  run_id: string;
  /** `running` while a task, continue, follow-up or compaction is active; `idle` between; `closed` once its agent is shut down. */
  status: "running" | "idle" | "closed";
  agent_id: string;
  agent_status: string;
  detached: boolean;
  session: { session_id: string; branch: string } | null;
  created_at: string;
  /** The latest finished agent run's result. */
  result: AgentRunResult | null;
  /** Every finished agent run on this agent, oldest first. */
  results: { agent_run_id: string; result: AgentRunResult }[];
  can_continue: boolean;
  continue_rejection_reason: string | null;
  pending_approvals: number;
  /** The tools the run may use (null: all of the daemon's). */
  tools: string[] | null;
  /** The run's policy preset. */
  policy: PolicyPreset;
}

/** Items kept per run for replays to a client that reattaches. */
export const BACKLOG = 2000;

/** One live (or finished) run. */
export class ServerRun {
  readonly createdAt = new Date();
  readonly results: { agent_run_id: string; result: AgentRunResult }[] = [];
  /** Stream listeners; `id` numbers the run's events and approval notices from 1 (0 for `idle`). */
  readonly listeners = new Set<(item: RunStreamItem, id: number) => void>();
  /** The last {@link BACKLOG} numbered items, for `Last-Event-ID` replays. */
  readonly backlog: { id: number; item: RunStreamItem }[] = [];
  /** The id of the last numbered item. */
  lastId = 0;
  /** Event run ids of the agent (to route approvals). */
  readonly agentRunIds = new Set<string>();
  closed = false;
  lastActivity = Date.now();
  /** Whether the run was created with compaction settings (so `compact` works). */
  compaction = false;
  /** The tools the run may use (null: all), and its policy preset. */
  tools: string[] | null = null;
  policy: PolicyPreset = "daemon";
  /** Operations in flight (task, continue, compaction): the session lease is held while > 0. */
  busy = 0;
  /** The session branch, taken (across processes) while an operation is in flight. */
  claim: BranchClaim | null = null;

  constructor(
    readonly id: string,
    readonly agent: Agent,
    readonly detached: boolean,
    readonly session: { session_id: string; branch: string; storage: JournalStorage; recorder: SessionRecorder } | null,
  ) {}

  emit(item: RunStreamItem): void {
    let id = 0;
    if (item.type !== "idle") {
      id = ++this.lastId;
      this.backlog.push({ id, item });
      if (this.backlog.length > BACKLOG) this.backlog.shift();
    }
    for (const l of [...this.listeners]) {
      try {
        l(item, id);
      } catch {
        // a broken stream never affects the run
      }
    }
  }

  get status(): RunView["status"] {
    if (this.closed) return "closed";
    return this.busy > 0 || this.agent.isActive ? "running" : "idle";
  }
}
