/**
 * Retention of cluster runs (docs/cluster.md, "Retention"): the rows of
 * finished runs (`agentcore.runs` with status `idle` or `failed`) whose last
 * change is older than an age are deleted, with their `run_events`,
 * `run_commands` and `run_approvals`, in bounded batches. Runs that are
 * queued, running or suspended are never touched, nor is anything of the
 * sessions (their journal records are the durable history; a run's row is
 * only its queue entry and event stream).
 *
 * Two callers: the daemons' periodic job on the pg-boss queue
 * `agentcore-prune` (./cluster.ts), and `agentcore store prune`.
 *
 * @module
 */
import type { PgBoss } from "pg-boss";
import type { Logger } from "../../core/logger.ts";
import { storageError } from "../../session/postgres/errors.ts";

/** What this module needs of a connection: a `pg` Pool, Client or PoolClient. */
export interface PruneQueryable {
  query(text: string, values?: unknown[]): Promise<{ rows: Record<string, unknown>[] }>;
}

/** The environment variable of the retention age (a duration such as `30d`, or `off`). */
export const RETENTION_ENV = "AGENTCORE_RUN_RETENTION";
/** The environment variable of how often the prune job is queued (a duration such as `1h`). */
export const PRUNE_EVERY_ENV = "AGENTCORE_RUN_PRUNE_EVERY";
/** The pg-boss queue of the prune job. */
export const PRUNE_QUEUE = "agentcore-prune";
/** The default retention: 30 days. */
export const DEFAULT_RETENTION_MS = 30 * 86_400_000;
/** The default period of the prune job: one hour. */
export const DEFAULT_PRUNE_EVERY_MS = 3_600_000;
/** Runs deleted per transaction. */
export const PRUNE_BATCH = 500;

const UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const MAX_MS = 100 * 365 * 86_400_000;

/**
 * A duration: a whole number and a unit, `s`, `m`, `h` or `d` (`90m`, `30d`),
 * from 1 second to 100 years; null for anything else.
 */
export function parseDuration(text: string): number | null {
  const m = /^(\d{1,12})([smhd])$/.exec(text.trim());
  if (m === null) return null;
  const ms = Number(m[1]) * UNITS[m[2]!]!;
  return ms >= 1000 && ms <= MAX_MS ? ms : null;
}

/** A duration as it is written (the largest unit that divides it). */
export function formatDuration(ms: number): string {
  for (const u of ["d", "h", "m"] as const) if (ms % UNITS[u]! === 0) return `${ms / UNITS[u]!}${u}`;
  return `${Math.round(ms / 1000)}s`;
}

/** The retention settings of `env`: the age (null: `off`) and the job's period. A RangeError naming the variable for a bad value. */
export function retentionOf(env: Readonly<Record<string, string | undefined>>): { retentionMs: number | null; everyMs: number } {
  const read = (name: string, fallback: number, off: boolean): number | null => {
    const raw = env[name]?.trim();
    if (raw === undefined || raw === "") return fallback;
    if (off && raw === "off") return null;
    const ms = parseDuration(raw);
    if (ms === null)
      throw new RangeError(
        `${name} must be a duration such as 30d, 12h, 90m or 45s (1 second to 100 years)${off ? " or 'off'" : ""}, got '${raw.slice(0, 40)}'`,
      );
    return ms;
  };
  return {
    retentionMs: read(RETENTION_ENV, DEFAULT_RETENTION_MS, true),
    everyMs: read(PRUNE_EVERY_ENV, DEFAULT_PRUNE_EVERY_MS, false)!,
  };
}

/** The rows a prune removed (or, in a dry run, would remove), per table. */
export interface PruneCounts {
  runs: number;
  run_events: number;
  run_commands: number;
  run_approvals: number;
}

/** The runs a prune takes: finished, and unchanged since before the cutoff ($1). */
const FINISHED = "status IN ('idle', 'failed') AND updated_at < $1";

/**
 * Delete the rows of the runs that finished before `now - olderThanMs`, in
 * transactions of at most `batch` runs (each one statement), until none is
 * left; or, with `dryRun`, count them and change nothing.
 */
export async function pruneRuns(
  db: PruneQueryable,
  options: { olderThanMs: number; dryRun?: boolean; batch?: number },
): Promise<PruneCounts> {
  const cutoff = new Date(Date.now() - options.olderThanMs);
  const num = (v: unknown) => Number(v ?? 0);
  if (options.dryRun === true) {
    const r = await db.query(
      `WITH doomed AS (SELECT run_id FROM agentcore.runs WHERE ${FINISHED})
       SELECT (SELECT count(*) FROM doomed) AS runs,
              (SELECT count(*) FROM agentcore.run_events e WHERE e.run_id IN (SELECT run_id FROM doomed)) AS run_events,
              (SELECT count(*) FROM agentcore.run_commands c WHERE c.run_id IN (SELECT run_id FROM doomed)) AS run_commands,
              (SELECT count(*) FROM agentcore.run_approvals a WHERE a.run_id IN (SELECT run_id FROM doomed)) AS run_approvals`,
      [cutoff],
    );
    const row = r.rows[0]!;
    return {
      runs: num(row.runs),
      run_events: num(row.run_events),
      run_commands: num(row.run_commands),
      run_approvals: num(row.run_approvals),
    };
  }
  const batch = Math.max(1, options.batch ?? PRUNE_BATCH);
  const total: PruneCounts = { runs: 0, run_events: 0, run_commands: 0, run_approvals: 0 };
  // bounded: every pass deletes at least one run or ends the loop, and the runs that qualify are finite
  for (;;) {
    // One statement: the runs locked (SKIP LOCKED: two daemons' jobs share the work), then everything of them.
    const r = await db.query(
      `WITH doomed AS (
         SELECT run_id FROM agentcore.runs WHERE ${FINISHED} ORDER BY updated_at LIMIT $2 FOR UPDATE SKIP LOCKED
       ), ev AS (
         DELETE FROM agentcore.run_events e USING doomed d WHERE e.run_id = d.run_id RETURNING 1
       ), cm AS (
         DELETE FROM agentcore.run_commands c USING doomed d WHERE c.run_id = d.run_id RETURNING 1
       ), ap AS (
         DELETE FROM agentcore.run_approvals a USING doomed d WHERE a.run_id = d.run_id RETURNING 1
       ), rn AS (
         DELETE FROM agentcore.runs x USING doomed d WHERE x.run_id = d.run_id RETURNING 1
       )
       SELECT (SELECT count(*) FROM rn) AS runs, (SELECT count(*) FROM ev) AS run_events,
              (SELECT count(*) FROM cm) AS run_commands, (SELECT count(*) FROM ap) AS run_approvals`,
      [cutoff, batch],
    );
    const row = r.rows[0]!;
    const n = num(row.runs);
    total.runs += n;
    total.run_events += num(row.run_events);
    total.run_commands += num(row.run_commands);
    total.run_approvals += num(row.run_approvals);
    if (n < batch) return total;
  }
}

/**
 * Start a daemon's part of the prune job: it works the queue
 * `agentcore-prune` (one job at a time) and queues a job every `everyMs`.
 * The queue's `stately` policy and the send's singleton slot of `everyMs`
 * make one job per period for the whole store, however many daemons queue
 * it, and one daemon runs it. Returns what stops the timer.
 */
export async function startPruneJob(
  boss: PgBoss,
  db: PruneQueryable,
  settings: { retentionMs: number; everyMs: number },
  logger: Logger | null,
): Promise<() => void> {
  if ((await boss.getQueue(PRUNE_QUEUE)) === null)
    await boss.createQueue(PRUNE_QUEUE, { policy: "stately", retryLimit: 0 }).catch(() => {}); // another daemon made it meanwhile
  const slot = Math.max(1, Math.round(settings.everyMs / 1000));
  // a job waits at most a period (and at most 30 s) to be taken: an hourly job costs no poll a second
  const poll = Math.min(30, slot);
  await boss.work(PRUNE_QUEUE, { localConcurrency: 1, batchSize: 1, pollingIntervalSeconds: poll }, async () => {
    const removed = await pruneRuns(db, { olderThanMs: settings.retentionMs });
    if (removed.runs > 0) logger?.info("cluster: finished runs pruned", { older_than: formatDuration(settings.retentionMs), ...removed });
  });
  const queue = () =>
    void boss
      .send(PRUNE_QUEUE, {}, { singletonSeconds: slot })
      .catch((e: unknown) => logger?.warn("cluster: cannot queue the prune job", { error: (e as Error)?.message ?? String(e) }));
  queue();
  const timer = setInterval(queue, settings.everyMs);
  (timer as { unref?: () => void }).unref?.();
  return () => clearInterval(timer);
}

/**
 * {@link pruneRuns} on the store at `url` (its migrations must have run:
 * openStore does it), over a connection of its own. Throws
 * SessionStorageError naming the store (its password hidden).
 */
export async function pruneStore(url: string, options: { olderThanMs: number; dryRun?: boolean }): Promise<PruneCounts> {
  const pg = (await import("pg")).default as unknown as typeof import("pg");
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  client.on("error", () => {});
  try {
    await client.connect();
    return await pruneRuns(client, options);
  } catch (e) {
    throw storageError(url, options.dryRun === true ? "cannot count the runs to prune" : "cannot prune runs", e);
  } finally {
    await client.end().catch(() => {});
  }
}
