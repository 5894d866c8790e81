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
 *   append finds the head moved (SessionConflictError).
 * - **Events** go through `agentcore.run_events` (./events.ts).
 * - **Commands** (steer, abort, follow_up, continue, approval answers) given
 *   to a daemon that does not own the run become rows of
 *   `agentcore.run_commands` with a NOTIFY to the owner, which applies them
 *   and writes the outcome; the asking daemon waits for it, bounded.
 * - **Retention** (./prune.ts): a job on the queue `agentcore-prune`
 *   deletes the rows of runs finished longer ago than `AGENTCORE_RUN_RETENTION`.
 * - **Token.** The daemons of a store share one token, kept in
 *   `agentcore.daemon_token` (the first daemon makes it).
 *
 * @module
 */
import { hostname } from "node:os";
import type { Client, Pool } from "pg";
import type { PgBoss } from "pg-boss";
import type { AgentRunResult } from "../../agent/index.ts";
import type { Logger } from "../../core/logger.ts";
import type { JournalStorage } from "../../session/journal.ts";
import { pendingApprovals, sessionMessages } from "../../session/types.ts";
import type { ApprovalNotice, PendingApproval } from "../approvals.ts";
import { HttpError } from "../errors.ts";
import { newRunId, type RunManager, type RunRequest, type ServerRun } from "../runs.ts";
import { storageError } from "../../session/postgres/errors.ts";
import { clusterEventStream, EventWriter, EVENTS_CHANNEL, type RowStatus } from "./events.ts";
import { retentionOf, startPruneJob } from "./prune.ts";

/** The pg-boss queue of runs. */
export const RUN_QUEUE = "agentcore-runs";
/** The schema pg-boss keeps its tables in. */
export const BOSS_SCHEMA = "agentcore_queue";
const COMMANDS_CHANNEL = "agentcore_run_commands";
const OUTCOMES_CHANNEL = "agentcore_run_command_outcomes";
/** How often a run's job is retried (a daemon that died, a refusal a retry may change) before the run is failed. */
export const RUN_RETRY_LIMIT = 100;

/** The environment variable that sets a daemon's poll period of event streams and commands (ms; the fallback when a notification is lost). */
export const POLL_ENV = "AGENTCORE_CLUSTER_POLL_MS";

/** The poll period `env` sets (10 ms to 1 hour; default 1000); a RangeError naming the variable for anything else. */
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

function pollMsOf(env: Readonly<Record<string, string | undefined>>): number {
  const raw = env[POLL_ENV]?.trim();
  if (raw === undefined || raw === "") return 1000;
  const n = /^\d{1,7}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(n >= 10 && n <= 3_600_000))
    throw new RangeError(`${POLL_ENV} must be a whole number of milliseconds from 10 to 3600000, got '${raw.slice(0, 40)}'`);
  return n;
}

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

interface RunRow {
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

  async #row(runId: string): Promise<RunRow | null> {
    const r = await this.pool.query("SELECT * FROM agentcore.runs WHERE run_id = $1", [runId]);
    return (r.rows[0] as RunRow | undefined) ?? null;
  }

  #viewOf(row: RunRow): ClusterRunView {
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

  /** A cluster run as the table has it, or null. */
  async view(runId: string): Promise<ClusterRunView | null> {
    const row = await this.#row(runId);
    return row === null ? null : this.#viewOf(row);
  }

  /** The newest cluster runs (at most 256). */
  async list(): Promise<ClusterRunView[]> {
    const r = await this.pool.query("SELECT * FROM agentcore.runs ORDER BY created_at DESC LIMIT 256");
    return (r.rows as RunRow[]).map((row) => this.#viewOf(row));
  }

  /** The SSE stream of a cluster run (404 when there is no such run). */
  async events(runId: string, after: number, heartbeatMs: number, signal?: AbortSignal): Promise<ReadableStream<Uint8Array> | null> {
    if ((await this.#row(runId)) === null) return null;
    return clusterEventStream(this, runId, { after, heartbeatMs, signal });
  }

  /**
   * The job handler: claim the run, run it (or take it over), resolve when
   * its task ended or suspended. After the claim, the run's {@link EventWriter}
   * is the only writer of its row (each status change in order, with the
   * items it goes with), and once the task has ended the run leaves this
   * daemon's live table: its record is the store's.
   */
  async #execute(runId: string, jobSignal: AbortSignal, lastTry: boolean): Promise<void> {
    const claimed = await this.pool.query(
      `UPDATE agentcore.runs SET owner = $2, epoch = epoch + 1, status = 'running', updated_at = now()
       WHERE run_id = $1 AND status IN ('queued', 'running') RETURNING *`,
      [runId, this.nodeId],
    );
    const row = claimed.rows[0] as RunRow | undefined;
    if (row === undefined) return; // finished, or gone: nothing to do
    const last = await this.pool.query("SELECT COALESCE(max(seq), 0)::bigint AS n FROM agentcore.run_events WHERE run_id = $1", [runId]);
    const here: { run: ServerRun | null } = { run: null };
    const writer = new EventWriter(
      this.pool,
      runId,
      row.epoch,
      Number(last.rows[0].n),
      () => {
        this.#logger?.warn("cluster: run taken over by another daemon; stopping it here", { run_id: runId });
        here.run?.agent.abort("run taken over by another daemon (its epoch moved on)");
      },
      (e) => this.#logger?.warn("cluster: run events lost", { run_id: runId, error: (e as Error)?.message }),
    );
    this.#writers.set(runId, writer);
    const lostEnd = this.#lostEnds.get(runId);
    try {
      if (lostEnd !== undefined) {
        // the run ended here, its end not taken by the store: that end, not the task again
        for (const item of lostEnd.items) writer.push(JSON.parse(item), lostEnd.status);
        if (lostEnd.items.length === 0) writer.status(lostEnd.status);
        await writer.flush();
      } else await this.#work(row, writer, here, jobSignal, lastTry);
    } catch (e) {
      // the store went away, or the branch is held elsewhere: the job is retried
      this.#logger?.warn("cluster: a run could not be taken", { run_id: runId, error: (e as Error)?.message });
      await writer.flush();
      if (here.run === null && lastTry) {
        const error = `not taken after ${RUN_RETRY_LIMIT} tries: ${(e as Error)?.message ?? String(e)}`;
        writer.status({ status: "failed", result: null, error });
        await writer.flush();
      } else if (here.run === null) throw e;
    } finally {
      this.#writers.delete(runId);
    }
    // the store stayed away when the run ended: the job is retried, and its next claim writes the end kept here (or,
    // on another daemon, finds the result in the journal)
    if (writer.statusLost) {
      const end = writer.lost ?? lostEnd;
      if (end !== undefined && end.status.status !== "queued" && end.status.status !== "running") this.#lostEnds.set(runId, end);
      throw new Error(`run ${runId} ended, but the store did not take its status; retrying`);
    }
    this.#lostEnds.delete(runId);
  }

  /** A claimed run, run here (`here.run` while it is) or taken over; the end of its task is the end of its stay here. */
  async #work(row: RunRow, writer: EventWriter, here: { run: ServerRun | null }, jobSignal: AbortSignal, lastTry: boolean): Promise<void> {
    const runs = this.#runs!;
    const storage = this.#opts.storage;
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
      await this.pool.query("UPDATE agentcore.runs SET base_head = $3, base_turns = $4 WHERE run_id = $1 AND epoch = $2", [
        runId,
        row.epoch,
        head ?? "",
        turns,
      ]);
    } else takeover = (row.base_head ?? "") !== (head ?? "");
    let request = req;
    let op: Parameters<RunManager["begin"]>[1] = { kind: "task", task: req.task };
    if (takeover) {
      writer.push({ type: "cluster", event: { kind: "run_taken_over", run_id: runId, owner: this.nodeId, epoch: row.epoch } });
      await storage.recoverRuns(row.session_id, {
        branch,
        reason: `taken over by daemon ${this.nodeId}`,
        toolEffect: this.#toolEffect,
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
      return this.#failed(writer, e, lastTry);
    }
    let ended = false;
    const listener = (item: Parameters<ServerRun["emit"]>[0]) => {
      if (ended) return;
      if (item.type !== "idle") {
        writer.push(item);
        if (item.type === "approval") void this.#noteApproval(runId, item.notice);
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
      return this.#failed(writer, e, lastTry);
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

  async #failed(writer: EventWriter, e: unknown, lastTry: boolean): Promise<void> {
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

  // ---------------------------------------------------------------- commands

  /**
   * Send a command to the daemon that owns the run (or, for `approval`, the
   * one whose queue holds the approval) and wait for its answer: 404 for no
   * such run, 409 when no daemon runs it now, 503 when the owner does not
   * answer within the command timeout.
   */
  async forward(kind: CommandKind, key: string, body: Record<string, unknown>): Promise<CommandOutcome | null> {
    let target: string | null;
    let runId: string | null;
    if (kind === "approval") {
      const r = await this.pool.query("SELECT owner, run_id FROM agentcore.run_approvals WHERE approval_id = $1 AND status = 'pending'", [
        key,
      ]);
      if (r.rows.length === 0) return null;
      target = r.rows[0].owner as string;
      runId = r.rows[0].run_id as string;
    } else {
      const row = await this.#row(key);
      if (row === null) return null;
      runId = key;
      target = row.owner;
      // not running, or ours but not live here (the route found no such run): it has ended
      if (target === null || row.status !== "running" || target === this.nodeId) throw this.#notRunning(row);
    }
    if (target === this.nodeId) return null; // ours after all (it is local, or it is gone)
    const ins = await this.pool.query(
      "INSERT INTO agentcore.run_commands (run_id, target, kind, body) VALUES ($1, $2, $3, $4) RETURNING id",
      [runId, target, kind, JSON.stringify({ ...body, key })],
    );
    const id = String(ins.rows[0].id);
    await this.pool.query("SELECT pg_notify($1, $2)", [COMMANDS_CHANNEL, target]);
    const deadline = Date.now() + this.#opts.commandTimeoutMs;
    for (;;) {
      const r = await this.pool.query("SELECT status, outcome FROM agentcore.run_commands WHERE id = $1", [id]);
      if (r.rows[0]?.status === "done") return r.rows[0].outcome as CommandOutcome;
      const left = deadline - Date.now();
      if (left <= 0) break;
      await new Promise<void>((res) => {
        const t = setTimeout(done, Math.min(left, this.pollMs));
        function done() {
          clearTimeout(t);
          res();
        }
        this.#outcomeSubs.set(id, done);
      });
      this.#outcomeSubs.delete(id);
    }
    const gaveUp = await this.pool.query(
      "UPDATE agentcore.run_commands SET status = 'expired' WHERE id = $1 AND status = 'pending' RETURNING 1",
      [id],
    );
    if (gaveUp.rows.length === 0) {
      const r = await this.pool.query("SELECT status, outcome FROM agentcore.run_commands WHERE id = $1", [id]);
      if (r.rows[0]?.status === "done") return r.rows[0].outcome as CommandOutcome;
    }
    throw new HttpError(
      503,
      "OVERLOADED",
      `the daemon that runs ${kind === "approval" ? `the run of approval ${key}` : `run ${key}`} (${target}) did not answer within ${this.#opts.commandTimeoutMs} ms: it may be down (its run is then taken over by another daemon); try again`,
      { limit: "cluster_command", owner: target },
      { "retry-after": "1" },
    );
  }

  /** 409 for a command to a run that no daemon runs now: queued, or ended (a cluster run's agent is not kept after its task). */
  #notRunning(row: RunRow): HttpError {
    const sid = row.session_id.slice(0, 100);
    const message =
      row.owner === null || row.status === "queued"
        ? `run ${row.run_id} is ${row.status}: no daemon runs it now`
        : `run ${row.run_id} has ended${row.status === "running" ? "" : ` (${row.status})`}: a cluster run's agent is not kept after its task; to go on, start a new run on session '${sid}'${row.status === "suspended" ? ` or answer its approval and POST /v1/sessions/${sid}/resume` : ""}`;
    return new HttpError(409, "CONFLICT", message, { reason: "run_not_owned", status: row.status });
  }

  #taking = false;
  /** Apply the commands sent to this daemon. */
  async #takeCommands(): Promise<void> {
    if (this.#taking || this.#stopped) return;
    this.#taking = true;
    try {
      if (this.#listener === null) await this.#listen();
      const r = await this.pool.query(
        "UPDATE agentcore.run_commands SET status = 'taken' WHERE target = $1 AND status = 'pending' RETURNING id, run_id, kind, body",
        [this.nodeId],
      );
      for (const c of r.rows as { id: string; run_id: string | null; kind: CommandKind; body: Record<string, unknown> }[]) {
        let outcome: CommandOutcome;
        try {
          // a run that has ended here since the command was sent: the same answer as for any run that has ended
          if (c.kind !== "approval" && this.#runs!.find(c.run_id ?? "") === undefined) {
            const row = await this.#row(c.run_id ?? "");
            if (row !== null) throw this.#notRunning(row);
          }
          outcome = await this.#apply!(c.kind, c.run_id, c.body);
        } catch (e) {
          const err = e instanceof HttpError ? e : new HttpError(500, "INTERNAL_ERROR", "internal error");
          outcome = { status: err.status, body: await err.toResponse().json() };
        }
        await this.pool.query("UPDATE agentcore.run_commands SET status = 'done', outcome = $2, answered_at = now() WHERE id = $1", [
          c.id,
          JSON.stringify(outcome),
        ]);
        await this.pool.query("SELECT pg_notify($1, $2)", [OUTCOMES_CHANNEL, String(c.id)]);
      }
    } catch (e) {
      this.#logger?.debug("cluster: cannot read commands now", { error: (e as Error)?.message });
    } finally {
      this.#taking = false;
    }
  }

  // ---------------------------------------------------------------- approvals

  /** Keep the table of approvals waiting in this daemon up to date (GET /v1/approvals on the others lists them). */
  async #noteApproval(runId: string, n: ApprovalNotice): Promise<void> {
    try {
      if (n.kind === "approval_requested")
        await this.pool.query(
          "INSERT INTO agentcore.run_approvals (approval_id, run_id, owner, approval) VALUES ($1, $2, $3, $4) ON CONFLICT (approval_id) DO NOTHING",
          [n.approval.approval_id, runId, this.nodeId, JSON.stringify(n.approval)],
        );
      else await this.pool.query("UPDATE agentcore.run_approvals SET status = 'answered' WHERE approval_id = $1", [n.approval.approval_id]);
    } catch (e) {
      this.#logger?.warn("cluster: cannot note an approval", { approval_id: n.approval.approval_id, error: (e as Error)?.message });
    }
  }

  /** The approval waiting in a daemon of the store (this one included) for a call of a session branch's live cluster run, or null. */
  async liveApproval(sessionId: string, branch: string, toolCallId: string): Promise<{ approval_id: string; owner: string } | null> {
    const r = await this.pool.query(
      `SELECT a.approval_id, a.owner FROM agentcore.run_approvals a JOIN agentcore.runs r ON r.run_id = a.run_id
       WHERE a.status = 'pending' AND r.session_id = $1 AND r.branch = $2 AND a.approval->>'tool_call_id' = $3 AND r.owner = a.owner
       ORDER BY a.created_at DESC LIMIT 1`,
      [sessionId, branch, toolCallId],
    );
    return (r.rows[0] as { approval_id: string; owner: string } | undefined) ?? null;
  }

  /** The approvals waiting in other daemons of the store (their owners alive by their runs' rows). */
  async remoteApprovals(): Promise<(PendingApproval & { cluster_run_id: string; owner: string })[]> {
    const r = await this.pool.query(
      `SELECT a.approval, a.run_id, a.owner FROM agentcore.run_approvals a JOIN agentcore.runs r ON r.run_id = a.run_id
       WHERE a.status = 'pending' AND a.owner <> $1 AND r.owner = a.owner AND r.status = 'running' ORDER BY a.created_at`,
      [this.nodeId],
    );
    return r.rows.map((row) => ({
      ...(row.approval as PendingApproval),
      cluster_run_id: row.run_id as string,
      owner: row.owner as string,
    }));
  }
}
