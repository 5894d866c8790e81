/**
 * What the daemon's sub-apps share: the runtime, the run manager, the
 * approval queue, the deadlines and limits, and the tracking of calls in
 * flight (which shutdown aborts and waits for). {@link createApp} makes one.
 *
 * @module
 */
import { Hono } from "hono";
import type { Runtime } from "../../runtime/runtime.ts";
import type { ApprovalQueue } from "../approvals.ts";
import type { RunManager } from "../runs.ts";
import type { Deadlines } from "../middleware/deadline.ts";
import type { BodyEnv } from "../middleware/body-limit.ts";
import type { JournalStorage } from "../../session/journal.ts";
import type { Cluster } from "../cluster/cluster.ts";

/** The Hono environment of the daemon's sub-apps. */
export type DaemonEnv = BodyEnv;

/** An asynchronous call in flight (single, batch or MCP). */
export interface TrackedCall {
  ac: AbortController;
  done: Promise<unknown>;
}

/** The shared parts every sub-app is built from. */
export interface AppDeps {
  runtime: Runtime;
  runs: RunManager;
  approvals: ApprovalQueue;
  deadlines: Deadlines;
  maxBody: number;
  heartbeatMs: number;
  /** The session journals (JSONL files, or the daemon's store). */
  storage: () => JournalStorage;
  /** Cluster mode (a PostgreSQL store): the queue, the run table, events and commands through the store; null otherwise. */
  cluster: Cluster | null;
  /** Whether the daemon is shutting down. */
  stopping: () => boolean;
  /** Calls in flight. */
  calls: Set<TrackedCall>;
  /** Track an asynchronous call until it settles. */
  track(ac: AbortController, p: Promise<unknown>): void;
}

/** A new sub-app of the daemon. */
export function subApp(): Hono<DaemonEnv> {
  return new Hono<DaemonEnv>();
}
