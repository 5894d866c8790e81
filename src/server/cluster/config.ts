/**
 * Cluster mode's settings: the names of its queue, schema and notification
 * channels, the retry limit of a run's job, the poll period and the options
 * a {@link Cluster} is opened with.
 *
 * @module
 */
import type { JournalStorage } from "../../session/journal.ts";

/** The pg-boss queue of runs. */
export const RUN_QUEUE = "agentcore-runs";
/** The schema pg-boss keeps its tables in. */
export const BOSS_SCHEMA = "agentcore_queue";
export const COMMANDS_CHANNEL = "agentcore_run_commands";
export const OUTCOMES_CHANNEL = "agentcore_run_command_outcomes";
/** How often a run's job is retried (a daemon that died, a refusal a retry may change) before the run is failed. */
export const RUN_RETRY_LIMIT = 100;

/** The environment variable that sets a daemon's poll period of event streams and commands (ms; the fallback when a notification is lost). */
export const POLL_ENV = "AGENTCORE_CLUSTER_POLL_MS";

/** The poll period `env` sets (10 ms to 1 hour; default 1000); a RangeError naming the variable for anything else. */
export function pollMsOf(env: Readonly<Record<string, string | undefined>>): number {
  const raw = env[POLL_ENV]?.trim();
  if (raw === undefined || raw === "") return 1000;
  const n = /^\d{1,7}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(n >= 10 && n <= 3_600_000))
    throw new RangeError(`${POLL_ENV} must be a whole number of milliseconds from 10 to 3600000, got '${raw.slice(0, 40)}'`);
  return n;
}

export interface ClusterOptions {
  /** The store's URL. */
  url: string;
  /** The daemon's session storage on that store. */
  storage: JournalStorage;
  /** Runs this daemon works at once (pg-boss localConcurrency). */
  maxActiveRuns: number;
  /** This daemon's name in the run table (default host:pid:random). */
  nodeId?: string;
  /**
   * Poll period of event streams and commands when a notification is lost
   * (default: `AGENTCORE_CLUSTER_POLL_MS` of `env`, else 1000 ms).
   */
  pollMs?: number;
  /** Where `AGENTCORE_CLUSTER_POLL_MS` is read (default process.env). */
  env?: Readonly<Record<string, string | undefined>>;
  /** How long a forwarded command waits for its owner's answer (default 10 000 ms). */
  commandTimeoutMs?: number;
  /** pg-boss: the heartbeat of a job (seconds, at least 10; default 10). */
  heartbeatSeconds?: number;
  /** pg-boss: how often its monitor looks for jobs whose heartbeat stopped (seconds; default 5). */
  monitorSeconds?: number;
}
