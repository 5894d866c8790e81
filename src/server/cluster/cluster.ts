/**
 * Cluster mode: several daemons on one PostgreSQL store working as one
 * (docs/cluster.md). One {@link Cluster} per daemon; `agentcore serve` makes
 * it when its store is `postgres://…` (nothing here is loaded otherwise).
 *
 * - **Queue.** `POST /v1/runs` on any daemon inserts a row in
 *   `agentcore.runs` (status `queued`) and sends a job to the pg-boss queue
 *   `agentcore-runs`. Every daemon works the queue with `localConcurrency` =
 *   its `--max-active-runs`. The worker that gets a job claims the run
 *   (`owner` = this daemon, `epoch` + 1), runs it through the RunManager
 *   (same agent, session journal and policy as a local run) and completes the
 *   job when the run's task has ended or suspended. The job's heartbeat
 *   (`heartbeatSeconds` 10) is what tells pg-boss the daemon lives.
 * - **Takeover.** A daemon that dies stops the heartbeat; pg-boss's monitor
 *   fails the job and it is retried on another daemon (or the same one, once
 *   restarted). If the branch moved since the run began (records of it are
 *   committed), the new owner closes the run under the crash rules
 *   (`recoverRuns` with `resumable`: a call that may have started is answered
 *   `interrupted`, never replayed; a read-only one runs again; a waiting
 *   approval stays waiting) and resumes it from its last committed record.
 *   The branch claim (a lease in the store) makes sure no two daemons run
 *   it at once; the epoch fences an old owner that is only cut off: its next
 *   event write finds the epoch moved and aborts its run, and its next journal
 *   append finds the head moved (SessionConflictError). A run's job is
 *   ./work.ts.
 * - **Events** go through `agentcore.run_events` (./events.ts).
 * - **Commands** (steer, abort, follow_up, continue, approval answers) given
 *   to a daemon that does not own the run become rows of
 *   `agentcore.run_commands` with a NOTIFY to the owner, which applies them
 *   and writes the outcome; the asking daemon waits for it, bounded
 *   (./commands.ts). Approvals waiting in a daemon are noted in
 *   `agentcore.run_approvals` (./approvals.ts).
 * - **Retention** (./prune.ts): a job on the queue `agentcore-prune`
 *   deletes the rows of runs finished longer ago than `AGENTCORE_RUN_RETENTION`.
 * - **Settings** are ./config.ts; a run's row and its view, ./rows.ts.
 * - **Token.** The daemons of a store share one token, kept in
 *   `agentcore.daemon_token` (the first daemon makes it).
 *
 * @module
 */
import { hostname } from "node:os";
import type { Client, Pool } from "pg";
import type { PgBoss } from "pg-boss";
import type { Logger } from "../../core/logger.ts";
import { storageError } from "../../session/postgres/errors.ts";
import type { ApprovalNotice, PendingApproval } from "../approvals.ts";
import { HttpError } from "../errors.ts";
import { newRunId, type RunManager, type RunRequest } from "../runs.ts";
import { liveApproval, noteApproval, remoteApprovals } from "./approvals.ts";
import { applyCommands, type CommandApplier, type CommandKind, type CommandOutcome, forwardCommand } from "./commands.ts";
import { BOSS_SCHEMA, type ClusterOptions, COMMANDS_CHANNEL, OUTCOMES_CHANNEL, pollMsOf, RUN_QUEUE, RUN_RETRY_LIMIT } from "./config.ts";
import { clusterEventStream, EVENTS_CHANNEL, type EventWriter, type RowStatus } from "./events.ts";
import { retentionOf, startPruneJob } from "./prune.ts";
import { type ClusterRunView, type RunRow, readRow, viewOf } from "./rows.ts";
import { executeRun } from "./work.ts";

export type { CommandApplier, CommandKind, CommandOutcome } from "./commands.ts";
export { BOSS_SCHEMA, type ClusterOptions, POLL_ENV, RUN_QUEUE, RUN_RETRY_LIMIT } from "./config.ts";
export type { ClusterRunView } from "./rows.ts";

/** One daemon's part in a cluster. */
export class Cluster {
  readonly nodeId: string;
  readonly pollMs: number;
  readonly pool: Pool;
  /** Runs finished longer ago than this are pruned (null: never); the job is queued every `everyMs`. */
  readonly retention: { retentionMs: number | null; everyMs: number };
  #stopPruning: () => void = () => {};
  readonly #opts: Required<Omit<ClusterOptions, "nodeId" | "pollMs" | "env">>;
  #boss: PgBoss | null = null;
  #listener: Client | null = null;
  #pg: typeof import("pg") | null = null;
  #runs: RunManager | null = null;
  #apply: CommandApplier | null = null;
  #logger: Logger | null = null;
  #toolEffect: (name: string) => "read_only" | "side_effecting" | undefined = () => undefined;
  readonly #eventSubs = new Map<string, Set<() => void>>();
  readonly #outcomeSubs = new Map<string, () => void>();
  /** Runs this daemon executes: their event writers. */
  readonly #writers = new Map<string, EventWriter>();
  /**
   * The ends of runs that ended here while the store did not take their row's
   * status (a database outage): the job's retry writes them again rather
   * than run the task once more.
   */
  readonly #lostEnds = new Map<string, { status: RowStatus; items: string[] }>();
  #commandTimer: ReturnType<typeof setInterval> | null = null;
  #draining = false;
  #stopped = false;

  private constructor(options: ClusterOptions, pool: Pool, pg: typeof import("pg")) {
    this.nodeId = options.nodeId ?? `${hostname()}:${process.pid}:${crypto.randomUUID().slice(0, 8)}`;
    this.pollMs = options.pollMs ?? pollMsOf(options.env ?? process.env);
    this.retention = retentionOf(options.env ?? process.env);
    this.pool = pool;
    this.#pg = pg;
    this.#opts = {
      url: options.url,
      storage: options.storage,
      maxActiveRuns: options.maxActiveRuns,
      commandTimeoutMs: options.commandTimeoutMs ?? 10_000,
      heartbeatSeconds: Math.max(10, options.heartbeatSeconds ?? 10),
      monitorSeconds: Math.max(1, options.monitorSeconds ?? 5),
    };
  }

  /**
   * Connect to the store (loads `pg`; the store's migrations must have run:
   * openStore does it). Throws SessionStorageError naming the store.
   */
  static async open(options: ClusterOptions): Promise<Cluster> {
    if (options.pollMs === undefined) pollMsOf(options.env ?? process.env); // a bad value is refused before anything connects
    retentionOf(options.env ?? process.env);
    const pg = (await import("pg")).default as unknown as typeof import("pg");
    const pool = new pg.Pool({ connectionString: options.url, max: 10, connectionTimeoutMillis: 10_000 });
    pool.on("error", () => {});
    try {
      await pool.query("SELECT 1 FROM agentcore.runs LIMIT 0");
    } catch (e) {
      await pool.end().catch(() => {});
      throw storageError(options.url, "cannot set up cluster mode", e);
    }
    return new Cluster(options, pool, pg);
  }

  /** The token the daemons of this store share: the stored one, or `candidate` stored as it (the first daemon). */
  async sharedToken(candidate: string): Promise<string> {
    await this.pool.query("INSERT INTO agentcore.daemon_token (id, token) VALUES (1, $1) ON CONFLICT (id) DO NOTHING", [candidate]);
    const r = await this.pool.query("SELECT token FROM agentcore.daemon_token WHERE id = 1");
    return r.rows[0].token as string;
  }

  /** Hand the cluster the daemon's parts (createApp does, before start). */
  attach(parts: {
    runs: RunManager;
    apply: CommandApplier;
    logger: Logger;
    toolEffect: (name: string) => "read_only" | "side_effecting" | undefined;
  }): void {
    this.#runs = parts.runs;
    this.#apply = parts.apply;
    this.#logger = parts.logger;
    this.#toolEffect = parts.toolEffect;
  }

  /** Start listening, polling and working the queue. Throws SessionStorageError naming the store. */
  async start(): Promise<void> {
    try {
      await this.#start();
    } catch (e) {
      throw storageError(this.#opts.url, "cannot start the run queue (pg-boss)", e);
    }
  }

  async #start(): Promise<void> {
    await this.#listen();
    this.#commandTimer = setInterval(() => void this.#takeCommands(), this.pollMs);
    (this.#commandTimer as { unref?: () => void }).unref?.();
    const { PgBoss } = await import("pg-boss");
    const boss = new PgBoss({
      connectionString: this.#opts.url,
      schema: BOSS_SCHEMA,
      max: 4,
      monitorIntervalSeconds: this.#opts.monitorSeconds,
      superviseIntervalSeconds: this.#opts.monitorSeconds,
      // a queued run wakes a worker at once (NOTIFY), instead of at its next poll
      useListenNotify: true,
    });
    boss.on("error", (e: unknown) => this.#logger?.warn("cluster queue error", { error: (e as Error)?.message ?? String(e) }));
    await boss.start();
    this.#boss = boss;
    if ((await boss.getQueue(RUN_QUEUE)) === null) {
      await boss
        .createQueue(RUN_QUEUE, {
          heartbeatSeconds: this.#opts.heartbeatSeconds,
          expireInSeconds: 86_400,
          retryLimit: RUN_RETRY_LIMIT,
          retryDelay: 1,
          notify: true,
        })
        .catch(() => {}); // another daemon made it meanwhile
    } else await boss.updateQueue(RUN_QUEUE, { notify: true }).catch(() => {}); // a queue made before notify was on
    await boss.work<{ run_id: string }>(
      RUN_QUEUE,
      { localConcurrency: this.#opts.maxActiveRuns, batchSize: 1, pollingIntervalSeconds: 1, notifyPollingIntervalSeconds: 5 },
      async (jobs) => {
        for (const job of jobs) await this.#execute(job.data.run_id, job.signal, job.retryCount >= RUN_RETRY_LIMIT);
      },
    );
    const { retentionMs, everyMs } = this.retention;
    if (retentionMs !== null) this.#stopPruning = await startPruneJob(boss, this.pool, { retentionMs, everyMs }, this.#logger);
  }

  /** Stop working the queue (runs in flight go on until the daemon's shutdown ends them). */
  async drain(): Promise<void> {
    if (this.#draining) return;
    this.#draining = true;
    this.#stopPruning();
    await this.#boss?.offWork(RUN_QUEUE, { wait: false }).catch(() => {});
  }

  /** Let everything go (after the daemon's runs have ended). */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    await this.drain();
    if (this.#commandTimer !== null) clearInterval(this.#commandTimer);
    await Promise.allSettled([...this.#writers.values()].map((w) => w.flush()));
    await this.#boss?.stop({ graceful: false, close: true, timeout: 2000 }).catch(() => {});
    await this.#listener?.end().catch(() => {});
    await this.pool.end().catch(() => {});
  }

  // ---------------------------------------------------------------- LISTEN

  async #listen(): Promise<void> {
    if (this.#stopped) return;
    const client = new this.#pg!.Client({ connectionString: this.#opts.url });
    client.on("error", () => {});
    client.on("end", () => {
      if (this.#listener === client) this.#listener = null;
    });
    client.on("notification", (n) => {
      const payload = n.payload ?? "";
      if (n.channel === EVENTS_CHANNEL) for (const fn of this.#eventSubs.get(payload) ?? []) fn();
      else if (n.channel === COMMANDS_CHANNEL && payload === this.nodeId) void this.#takeCommands();
      else if (n.channel === OUTCOMES_CHANNEL) this.#outcomeSubs.get(payload)?.();
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${EVENTS_CHANNEL}; LISTEN ${COMMANDS_CHANNEL}; LISTEN ${OUTCOMES_CHANNEL}`);
      this.#listener = client;
    } catch {
      await client.end().catch(() => {});
    }
  }

  /** Wake `fn` when the run's events are notified (the polling covers a lost notification). */
  onEvents(runId: string, fn: () => void): () => void {
    let set = this.#eventSubs.get(runId);
    if (set === undefined) this.#eventSubs.set(runId, (set = new Set()));
    set.add(fn);
    return () => {
      set!.delete(fn);
      if (set!.size === 0) this.#eventSubs.delete(runId);
    };
  }

  // ---------------------------------------------------------------- runs

  /**
   * Queue a run (`POST /v1/runs` in cluster mode): a session is required, and
   * made up (the run id) when the request has none. Returns the run's row.
   */
  async submit(req: RunRequest): Promise<ClusterRunView> {
    if (this.#draining)
      throw new HttpError(503, "OVERLOADED", "the daemon is shutting down", { limit: "shutdown" }, { "retry-after": "1" });
    const runId = newRunId();
    const request: RunRequest = { ...req, session: req.session ?? `session-${runId.slice(4)}`, branch: req.branch ?? "main" };
    await this.pool.query("INSERT INTO agentcore.runs (run_id, session_id, branch, request, status) VALUES ($1, $2, $3, $4, 'queued')", [
      runId,
      request.session,
      request.branch,
      JSON.stringify(request),
    ]);
    await this.#boss!.send(RUN_QUEUE, { run_id: runId });
    return (await this.view(runId))!;
  }

  /** A cluster run as the table has it, or null. */
  async view(runId: string): Promise<ClusterRunView | null> {
    const row = await readRow(this.pool, runId);
    return row === null ? null : viewOf(row);
  }

  /** The newest cluster runs (at most 256). */
  async list(): Promise<ClusterRunView[]> {
    const r = await this.pool.query("SELECT * FROM agentcore.runs ORDER BY created_at DESC LIMIT 256");
    return (r.rows as RunRow[]).map((row) => viewOf(row));
  }

  /** The SSE stream of a cluster run (404 when there is no such run). */
  async events(runId: string, after: number, heartbeatMs: number, signal?: AbortSignal): Promise<ReadableStream<Uint8Array> | null> {
    if ((await readRow(this.pool, runId)) === null) return null;
    return clusterEventStream(this, runId, { after, heartbeatMs, signal });
  }

  /** The job handler (./work.ts): claim the run, run it (or take it over), resolve when its task ended or suspended. */
  #execute(runId: string, jobSignal: AbortSignal, lastTry: boolean): Promise<void> {
    return executeRun(
      {
        pool: this.pool,
        nodeId: this.nodeId,
        storage: this.#opts.storage,
        runs: this.#runs!,
        logger: this.#logger,
        toolEffect: this.#toolEffect,
        writers: this.#writers,
        lostEnds: this.#lostEnds,
        noteApproval: (id, n) => this.#noteApproval(id, n),
      },
      runId,
      jobSignal,
      lastTry,
    );
  }

  // ---------------------------------------------------------------- commands

  /**
   * Send a command to the daemon that owns the run (or, for `approval`, the
   * one whose queue holds the approval) and wait for its answer: 404 for no
   * such run, 409 when no daemon runs it now, 503 when the owner does not
   * answer within the command timeout.
   */
  forward(kind: CommandKind, key: string, body: Record<string, unknown>): Promise<CommandOutcome | null> {
    const node = {
      pool: this.pool,
      nodeId: this.nodeId,
      pollMs: this.pollMs,
      timeoutMs: this.#opts.commandTimeoutMs,
      outcomeSubs: this.#outcomeSubs,
    };
    return forwardCommand(node, kind, key, body);
  }

  #taking = false;
  /** Apply the commands sent to this daemon. */
  async #takeCommands(): Promise<void> {
    if (this.#taking || this.#stopped) return;
    this.#taking = true;
    try {
      if (this.#listener === null) await this.#listen();
      await applyCommands(this.pool, this.nodeId, this.#runs!, this.#apply!);
    } catch (e) {
      this.#logger?.debug("cluster: cannot read commands now", { error: (e as Error)?.message });
    } finally {
      this.#taking = false;
    }
  }

  // ---------------------------------------------------------------- approvals

  /** Keep the table of approvals waiting in this daemon up to date (GET /v1/approvals on the others lists them). */
  #noteApproval(runId: string, n: ApprovalNotice): Promise<void> {
    return noteApproval(this.pool, this.nodeId, this.#logger, runId, n);
  }

  /** The approval waiting in a daemon of the store (this one included) for a call of a session branch's live cluster run, or null. */
  liveApproval(sessionId: string, branch: string, toolCallId: string): Promise<{ approval_id: string; owner: string } | null> {
    return liveApproval(this.pool, sessionId, branch, toolCallId);
  }

  /** The approvals waiting in other daemons of the store (their owners alive by their runs' rows). */
  remoteApprovals(): Promise<(PendingApproval & { cluster_run_id: string; owner: string })[]> {
    return remoteApprovals(this.pool, this.nodeId);
  }
}
