/**
 * Session journals in PostgreSQL: the tables of `./migrations.ts`, written
 * through `pg` (node-postgres), which is loaded only when a storage opens.
 *
 * A write transaction locks the session's row (`SELECT … FOR UPDATE`), so
 * the writers of one session, in any process on any machine, take turns;
 * it brings this instance's cached index of the session up to date by
 * reading only the records after the revision it holds, runs the tree
 * operation, inserts the records it wrote and moves `last_revision`, then
 * commits. Revisions are allocated inside that transaction: a head that
 * moved meanwhile is the same SessionConflictError as with JSONL. Records are
 * never updated in place (a trigger refuses it).
 *
 * Branch claims and live-run marks are leases: a row naming the holder (this
 * storage instance, `host:pid:uuid`), its pid and host, and an expiry that
 * the holder renews while it holds it. An expired lease is stale and taken
 * over; so is one whose holder ran on this host under a pid that is gone
 * (a SIGKILLed process on the same machine need not wait for the expiry).
 *
 * @module
 */
import { assertBlobName } from "../blobs.ts";
import { hostname } from "node:os";
import type { Pool, PoolClient } from "pg";
import {
  type BranchClaim,
  busyMessage,
  checkLines,
  envelopeProblem,
  type ImportRecordsOptions,
  JournalIndex,
  JournalStorage,
  normalizeId,
  recordLine,
} from "../journal.ts";
import { pidAlive } from "../lock.ts";
import {
  JOURNAL_SCHEMA_VERSION,
  SessionBranchBusyError,
  SessionConflictError,
  SessionNotFoundError,
  SessionRunActiveError,
  SessionSchemaVersionError,
  SessionSerializationError,
  SessionStorageError,
  SessionValidationError,
  type SessionRecord,
} from "../types.ts";
import { isConnectionError, redactUrl, storageError } from "./errors.ts";
import { PostgresHistory } from "./history.ts";
import { appliedVersions, checkKnown, LATEST_VERSION, migrate, MigrationError, type MigrationResult } from "./migrations.ts";

export { isPostgresUrl, redactUrl } from "./errors.ts";

/** Options of {@link PostgresSessionStorage.open}. */
export interface PostgresSessionStorageOptions {
  /** Apply missing migrations when opening (default true); false: refuse a database that lacks them. */
  migrate?: boolean;
  /** How long a lease (branch claim, run mark) lasts without renewal. Default 15 000 ms. */
  leaseMs?: number;
  /** Most connections in the pool. Default 10. */
  maxConnections?: number;
  /** Told of the migrations applied while opening. */
  onMigrate?: (result: MigrationResult) => void;
}

/** Rows per INSERT of records (9 parameters each; PostgreSQL takes at most 65,535 per statement). */
const INSERT_ROWS = 1000;
/** The pause before the one retry after a lost connection (a server restart takes about a second). */
const RETRY_DELAY_MS = 500;

interface Cached {
  index: JournalIndex;
  /** The session row's created_at when the index was read: another one means the session was deleted and made again. */
  generation: string | null;
}

interface LeaseRow {
  holder_id: string;
  holder: string | null;
  pid: number;
  host: string;
  since: Date | string;
  live: boolean;
}

/**
 * Durable sessions in a PostgreSQL database, shared by every process and
 * machine that opens the same database. Open with
 * {@link PostgresSessionStorage.open}; `close()` ends its connections.
 */
export class PostgresSessionStorage extends JournalStorage {
  /** The store's URL (with its password, if any: print {@link redactUrl} of it). */
  readonly url: string;
  /** This instance as a lease holder: `host:pid:uuid`. */
  readonly holderId: string;
  readonly leaseMs: number;
  readonly #pool: Pool;
  readonly #cache = new Map<string, Cached>();
  /** Per-session queues: the transactions of one session through this instance take turns. */
  readonly #tails = new Map<string, Promise<unknown>>();
  /** Leases this instance holds (renewed by the timer). */
  readonly #claims = new Set<string>();
  readonly #marks = new Set<string>();
  readonly #pending = new Set<Promise<unknown>>();
  /** Lines an import keeps verbatim (`session\0record` → line with its newline), while it runs. */
  readonly #verbatim = new Map<string, string>();
  /** Pool clients given an 'error' listener already. */
  readonly #listened = new WeakSet<PoolClient>();
  #timer: ReturnType<typeof setInterval> | null = null;
  #closed = false;

  private constructor(url: string, pool: Pool, leaseMs: number) {
    super();
    this.url = url;
    this.#pool = pool;
    this.leaseMs = leaseMs;
    this.holderId = `${hostname()}:${process.pid}:${crypto.randomUUID()}`;
  }

  /**
   * Connect to the store at `url` (loads `pg`), check it answers, and apply
   * missing migrations (unless `migrate: false`, which refuses a database
   * that lacks some). Throws SessionStorageError naming the URL (without its
   * password) and what to check.
   */
  static async open(url: string, options: PostgresSessionStorageOptions = {}): Promise<PostgresSessionStorage> {
    const leaseMs = options.leaseMs ?? 15_000;
    if (!Number.isFinite(leaseMs) || leaseMs < 100) throw new SessionValidationError(`leaseMs must be at least 100, got ${leaseMs}`);
    let pg: typeof import("pg");
    try {
      pg = (await import("pg")).default as unknown as typeof import("pg");
    } catch (e) {
      throw new SessionStorageError(
        `PostgreSQL store ${redactUrl(url)}: cannot load the PostgreSQL client (the pg package): ${(e as Error).message}; install it with npm install pg`,
      );
    }
    let pool: Pool;
    try {
      pool = new pg.Pool({
        connectionString: url,
        max: options.maxConnections ?? 10,
        connectionTimeoutMillis: 10_000,
        // Idle connections do not keep the process alive (a CLI command that forgets close() still exits).
        allowExitOnIdle: true,
      });
    } catch (e) {
      throw storageError(url, "cannot use the URL", e);
    }
    // An idle connection the server drops must not crash the process; the next query reconnects.
    pool.on("error", () => {});
    const storage = new PostgresSessionStorage(url, pool, leaseMs);
    try {
      const client = await storage.#connect("cannot connect");
      try {
        if (options.migrate === false) {
          const have = await appliedVersions(client);
          checkKnown(have);
          const missing = LATEST_VERSION - (have.length === 0 ? 0 : Math.max(...have));
          if (missing > 0 || have.length < LATEST_VERSION)
            throw new SessionStorageError(
              `PostgreSQL store ${redactUrl(url)}: its agentcore schema is at version ${have.length === 0 ? "none" : Math.max(...have)}, this build needs ${LATEST_VERSION}: run agentcore store migrate --store URL`,
            );
        } else {
          const result = await migrate(client);
          options.onMigrate?.(result);
        }
      } finally {
        client.release();
      }
    } catch (e) {
      await pool.end().catch(() => {});
      if (e instanceof MigrationError) throw new SessionStorageError(`PostgreSQL store ${redactUrl(url)}: ${e.message}`);
      throw storageError(url, "cannot open", e);
    }
    return storage;
  }

  /** A connection from the pool; one that cannot be made (the server restarting) is tried once more. */
  async #connect(what: string): Promise<PoolClient> {
    for (let attempt = 0; ; attempt++) {
      if (this.#closed) throw new SessionStorageError(`PostgreSQL store ${redactUrl(this.url)}: the storage is closed`);
      try {
        const client = await this.#pool.connect();
        // A connection the server cuts while checked out (a restart) emits 'error' besides failing its
        // query: without a listener that would crash the process. The query's own rejection reports it.
        if (!this.#listened.has(client)) {
          this.#listened.add(client);
          client.on("error", () => {});
        }
        return client;
      } catch (e) {
        if (attempt > 0 || !isConnectionError(e)) throw storageError(this.url, what, e);
        await new Promise((r) => setTimeout(r, RETRY_DELAY_MS));
      }
    }
  }

  /**
   * One statement on its own connection. `retry`: the statement reads, or
   * writes idempotently, so a lost connection is retried once on a new one.
   */
  async #query<R = Record<string, unknown>>(what: string, text: string, values: unknown[] = [], retry = false): Promise<R[]> {
    for (let attempt = 0; ; attempt++) {
      const client = await this.#connect(what);
      let broken: Error | undefined;
      try {
        return (await client.query(text, values)).rows as R[];
      } catch (e) {
        if (isConnectionError(e)) broken = e as Error;
        if (!retry || broken === undefined || attempt > 0) throw storageError(this.url, what, e);
      } finally {
        client.release(broken);
      }
      await new Promise((r) => setTimeout(r, RETRY_DELAY_MS));
    }
  }

  /** Run `op` after the session's earlier transactions through this instance. */
  #queued<T>(sessionId: string, op: () => Promise<T>): Promise<T> {
    const prev = this.#tails.get(sessionId) ?? Promise.resolve();
    const run = prev.then(op, op);
    const tail = run.catch(() => {});
    this.#tails.set(sessionId, tail);
    void tail.then(() => {
      if (this.#tails.get(sessionId) === tail) this.#tails.delete(sessionId);
    });
    return run;
  }

  protected async transact<T>(
    sessionId: string,
    fn: (index: JournalIndex, write: (record: SessionRecord) => void) => T,
    readOnly: boolean,
  ): Promise<T> {
    checkNoNul(sessionId, "session id");
    const what = `cannot ${readOnly ? "read" : "write"} session '${sessionId}'`;
    return await this.#queued(sessionId, async () => {
      for (let attempt = 0; ; attempt++) {
        const client = await this.#connect(what);
        let began = false;
        // Where a write was when it failed: before COMMIT was sent nothing is committed; after, it may be.
        let committing = false;
        let broken: Error | undefined;
        const written: SessionRecord[] = [];
        const lines: string[] = [];
        let result: T | undefined;
        try {
          if (readOnly) {
            const gen = await client.query("SELECT created_at::text AS generation FROM agentcore.sessions WHERE session_id = $1", [
              sessionId,
            ]);
            const cached = await this.#catchUp(client, sessionId, null, (gen.rows[0]?.generation as string | undefined) ?? null);
            return fn(cached.index, () => {
              throw new Error("read-only");
            });
          }
          await client.query("BEGIN");
          began = true;
          await client.query("INSERT INTO agentcore.sessions (session_id) VALUES ($1) ON CONFLICT (session_id) DO NOTHING", [sessionId]);
          const row = await client.query(
            "SELECT last_revision, created_at::text AS generation FROM agentcore.sessions WHERE session_id = $1 FOR UPDATE",
            [sessionId],
          );
          const last = Number(row.rows[0]!.last_revision);
          const cached = await this.#catchUp(client, sessionId, last, row.rows[0]!.generation as string);
          result = fn(cached.index, (record) => {
            checkText(record);
            // Serialised once (and checked: plain JSON, small enough); the index keeps its own copy, parsed from the line.
            const line = this.#verbatim.get(`${sessionId}\u0000${record.record_id}`) ?? recordLine(record);
            const owned = JSON.parse(line) as SessionRecord;
            cached.index.add(owned); // validates by applying
            written.push(owned);
            lines.push(line);
          });
          if (written.length === 0) {
            await client.query("ROLLBACK");
            return result;
          }
          // A group's records in one INSERT (one round trip; a big import in chunks), in the one transaction.
          for (let from = 0; from < written.length; from += INSERT_ROWS) {
            const values: unknown[] = [];
            const rows: string[] = [];
            for (let i = from; i < Math.min(written.length, from + INSERT_ROWS); i++) {
              const r = written[i]!;
              const line = lines[i]!;
              // jsonb holds no U+0000: such data stays in `line` only.
              const data = line.includes("\\u0000") ? null : JSON.stringify(r.data);
              const n = values.length;
              rows.push(`($${n + 1}, $${n + 2}, $${n + 3}, $${n + 4}, $${n + 5}, $${n + 6}, $${n + 7}, $${n + 8}, $${n + 9})`);
              values.push(sessionId, r.revision, r.record_id, r.parent_id, r.branch_id, r.type, line, data, r.time ?? null);
            }
            await client.query(
              `INSERT INTO agentcore.records (session_id, revision, record_id, parent_id, branch_id, type, line, data, time) VALUES ${rows.join(", ")}`,
              values,
            );
          }
          const agent = cached.index.agentId;
          await client.query("UPDATE agentcore.sessions SET last_revision = $2, agent_id = COALESCE(agent_id, $3) WHERE session_id = $1", [
            sessionId,
            cached.index.records.length,
            agent,
          ]);
          committing = true;
          await client.query("COMMIT");
          return result;
        } catch (e) {
          this.#cache.delete(sessionId);
          if (isConnectionError(e)) broken = e as Error;
          else if (began) await client.query("ROLLBACK").catch(() => {});
          if ((e as { code?: string }).code === "23505")
            throw new SessionConflictError(
              `session '${sessionId}' was written by another process at the same time; read it again and retry`,
            );
          if (broken === undefined || attempt > 0) throw storageError(this.url, what, e);
          // The connection went away (a server restart): retry once where that is safe.
          if (committing) {
            // COMMIT was sent and its answer lost: whether it landed decides.
            const landed = await this.#landed(sessionId, written[0]!);
            if (landed === true) return result as T;
            if (landed === null)
              throw new SessionStorageError(
                `PostgreSQL store ${redactUrl(this.url)}: ${what}: the connection was lost while committing and the server cannot be asked whether the commit landed (${(e as Error).message}); read the session again to see whether its last record is there`,
              );
          }
          await new Promise((r) => setTimeout(r, RETRY_DELAY_MS));
        } finally {
          client.release(broken);
        }
      }
    });
  }

  /** A whole session (see JournalStorage.importRecords); given `lines` go into the `line` column as they are. */
  override async importRecords(
    records: readonly SessionRecord[],
    options: ImportRecordsOptions = {},
  ): Promise<{ session_id: string; records: number }> {
    const lines = options.lines;
    if (lines === undefined) return await super.importRecords(records);
    checkLines(records, lines);
    const id = normalizeId(String(records[0]?.session_id ?? ""));
    const keys = records.map((r) => `${id}\u0000${r.record_id}`);
    keys.forEach((k, i) => this.#verbatim.set(k, `${lines[i]}\n`));
    try {
      return await super.importRecords(records);
    } finally {
      for (const k of keys) this.#verbatim.delete(k);
    }
  }

  /** The `line` column of the session's records, in revision order. */
  override async journalText(sessionId: string): Promise<string> {
    const id = normalizeId(sessionId);
    checkNoNul(id, "session id");
    const rows = await this.#query<{ line: string }>(
      `cannot read session '${id}'`,
      "SELECT line FROM agentcore.records WHERE session_id = $1 ORDER BY revision",
      [id],
      true,
    );
    return rows.map((r) => r.line).join("");
  }

  /** Whether a written record is in the store (true, false), or null when the server cannot be asked. */
  async #landed(sessionId: string, record: SessionRecord): Promise<boolean | null> {
    await new Promise((r) => setTimeout(r, RETRY_DELAY_MS));
    try {
      const rows = await this.#pool.query("SELECT 1 FROM agentcore.records WHERE session_id = $1 AND record_id = $2", [
        sessionId,
        record.record_id,
      ]);
      return rows.rows.length > 0;
    } catch {
      return null;
    }
  }

  /** Bring the cached index up to date: read only the records after its revision (up to `last` when given). */
  async #catchUp(client: PoolClient, sessionId: string, last: number | null, generation: string | null): Promise<Cached> {
    let cached = this.#cache.get(sessionId);
    if (cached === undefined || cached.generation !== generation || (last !== null && cached.index.records.length > last)) {
      cached = { index: new JournalIndex(sessionId), generation };
      this.#cache.set(sessionId, cached);
    }
    if (generation === null) return cached; // no such session (or deleted): nothing to read
    const have = cached.index.records.length;
    if (last !== null && have === last) return cached;
    const rows = await client.query(
      "SELECT revision, line FROM agentcore.records WHERE session_id = $1 AND revision > $2 ORDER BY revision",
      [sessionId, have],
    );
    const where = `PostgreSQL store ${redactUrl(this.url)}, session '${sessionId}'`;
    try {
      for (const row of rows.rows as { revision: string; line: string }[]) {
        const revision = Number(row.revision);
        let value: unknown;
        try {
          value = JSON.parse(row.line);
        } catch (e) {
          throw new SessionSerializationError(`${where}: revision ${revision} is not JSON: ${(e as Error).message}`);
        }
        const problem = envelopeProblem(value);
        if (problem !== null) {
          const v = (value as { journal_schema_version?: unknown } | null)?.journal_schema_version;
          if (value !== null && typeof value === "object" && v !== JOURNAL_SCHEMA_VERSION)
            throw new SessionSchemaVersionError(
              `${where}: revision ${revision}: unsupported journal_schema_version ${JSON.stringify(v)}; expected ${JOURNAL_SCHEMA_VERSION}`,
            );
          throw new SessionSerializationError(`${where}: invalid record at revision ${revision}: ${problem}`);
        }
        try {
          cached.index.add(value as SessionRecord);
        } catch (e) {
          if (e instanceof SessionValidationError) throw new SessionSerializationError(`${where}: revision ${revision}: ${e.message}`);
          throw e;
        }
      }
      if (last !== null && cached.index.records.length !== last)
        throw new SessionSerializationError(`${where}: holds ${cached.index.records.length} record(s), but its last revision is ${last}`);
    } catch (e) {
      this.#cache.delete(sessionId);
      throw e;
    }
    return cached;
  }

  async listSessions(): Promise<string[]> {
    const rows = await this.#query<{ session_id: string }>(
      "cannot list sessions",
      "SELECT session_id FROM agentcore.sessions WHERE last_revision > 0",
      [],
      true,
    );
    return rows.map((r) => r.session_id).sort();
  }

  override async exists(sessionId: string): Promise<boolean> {
    const id = normalizeId(sessionId);
    const rows = await this.#query(
      "cannot read the sessions",
      "SELECT 1 FROM agentcore.sessions WHERE session_id = $1 AND last_revision > 0",
      [id],
      true,
    );
    return rows.length > 0;
  }

  /**
   * Delete session `sessionId` for good (`agentcore sessions delete`): its
   * records, its row, its leases, in one transaction that holds the
   * session's row lock (a writer of the session waits, then finds it gone).
   * The records' append-only trigger lets exactly this through (migration
   * 5); nothing else can delete or change a record. Throws
   * SessionNotFoundError for no such session and SessionRunActiveError while
   * a live holder has a run mark or a branch claim of it (`force` skips
   * that check).
   */
  async deleteSession(sessionId: string, options: { force?: boolean } = {}): Promise<{ session_id: string; records: number }> {
    const id = normalizeId(sessionId);
    checkNoNul(id, "session id");
    return await this.#queued(id, async () => {
      const client = await this.#connect(`cannot delete session '${id}'`);
      let began = false;
      try {
        await client.query("BEGIN");
        began = true;
        const row = await client.query("SELECT last_revision FROM agentcore.sessions WHERE session_id = $1 FOR UPDATE", [id]);
        const records = row.rows.length === 0 ? 0 : Number(row.rows[0]!.last_revision);
        if (records === 0) throw new SessionNotFoundError(`no session '${id}' in ${redactUrl(this.url)}`);
        if (options.force !== true) {
          const marks = await client.query(
            "SELECT run_id, holder_id, NULL AS holder, pid, host, since, expires_at > now() AS live FROM agentcore.run_marks WHERE session_id = $1",
            [id],
          );
          for (const m of marks.rows as (LeaseRow & { run_id: string })[])
            if (this.#alive(m))
              throw new SessionRunActiveError(
                `session '${id}' has run ${m.run_id} still going in process ${m.pid}${m.host !== hostname() ? ` on ${m.host}` : ""}: stop that process first (on SIGINT, SIGTERM or SIGHUP it journals the run as finished), then delete; force it only if that process is not running agentcore`,
                m.run_id,
                m.pid,
              );
          const claims = await client.query(
            "SELECT branch_id, holder_id, holder, pid, host, since, expires_at > now() AS live FROM agentcore.branch_claims WHERE session_id = $1",
            [id],
          );
          for (const c of claims.rows as (LeaseRow & { branch_id: string })[])
            if (this.#alive(c))
              throw new SessionRunActiveError(
                `session '${id}' is in use: branch '${c.branch_id}' is held by process ${c.pid}${c.host !== hostname() ? ` on ${c.host}` : ""}${c.holder !== null ? ` (${c.holder})` : ""}: end that process (a chat: /quit) first, then delete; force it only if that process is not running agentcore`,
                "",
                c.pid,
              );
        }
        await client.query("SELECT set_config('agentcore.delete_session', $1, true)", [id]);
        await client.query("DELETE FROM agentcore.records WHERE session_id = $1", [id]);
        await client.query("DELETE FROM agentcore.run_marks WHERE session_id = $1", [id]);
        await client.query("DELETE FROM agentcore.branch_claims WHERE session_id = $1", [id]);
        await client.query("DELETE FROM agentcore.session_blobs WHERE session_id = $1", [id]);
        await client.query("DELETE FROM agentcore.sessions WHERE session_id = $1", [id]);
        await client.query("COMMIT");
        this.#cache.delete(id);
        return { session_id: id, records };
      } catch (e) {
        if (began) await client.query("ROLLBACK").catch(() => {});
        throw storageError(this.url, `cannot delete session '${id}'`, e);
      } finally {
        client.release();
      }
    });
  }

  // ---------------------------------------------------------------- leases

  /** Whether a lease row names a holder that still counts: not expired, and not a gone process of this host. */
  #alive(row: LeaseRow): boolean {
    if (!row.live) return false;
    if (row.holder_id === this.holderId) return true;
    if (row.host === hostname() && !pidAlive(row.pid)) return false;
    return true;
  }

  #interval(): string {
    return `${Math.round(this.leaseMs)} milliseconds`;
  }

  #renewLater(): void {
    if (this.#timer !== null || this.#closed) return;
    this.#timer = setInterval(() => void this.#renew(), Math.max(50, Math.floor(this.leaseMs / 3)));
    (this.#timer as { unref?: () => void }).unref?.();
  }

  async #renew(): Promise<void> {
    if (this.#claims.size === 0 && this.#marks.size === 0) {
      if (this.#timer !== null) clearInterval(this.#timer);
      this.#timer = null;
      return;
    }
    const op = (async () => {
      try {
        await this.#query(
          "cannot renew leases",
          "UPDATE agentcore.branch_claims SET expires_at = now() + $2::interval WHERE holder_id = $1",
          [this.holderId, this.#interval()],
          true,
        );
        await this.#query(
          "cannot renew leases",
          "UPDATE agentcore.run_marks SET expires_at = now() + $2::interval WHERE holder_id = $1",
          [this.holderId, this.#interval()],
          true,
        );
      } catch {
        /* the next tick tries again; a lease that expires meanwhile is lost */
      }
    })();
    this.#track(op);
    await op;
  }

  #track(p: Promise<unknown>): void {
    this.#pending.add(p);
    void p.finally(() => this.#pending.delete(p));
  }

  async #settle(): Promise<void> {
    while (this.#pending.size > 0) await Promise.allSettled([...this.#pending]);
  }

  /**
   * Take a branch for a run: a lease row, inserted or taken over from a
   * stale holder in one statement. Throws {@link SessionBranchBusyError}
   * while another live holder (any process, any machine) has it.
   */
  override async claimBranch(sessionId: string, branchId = "main", holder: string | null = null): Promise<BranchClaim> {
    const id = normalizeId(sessionId);
    checkNoNul(id, "session id");
    checkNoNul(branchId, "branch id");
    await this.#settle(); // a release of this instance still on its way
    const what = `cannot take branch '${branchId}' of session '${id}'`;
    for (let attempt = 0; ; attempt++) {
      const taken = await this.#query<{ holder_id: string }>(
        what,
        `INSERT INTO agentcore.branch_claims AS c (session_id, branch_id, holder_id, holder, pid, host, since, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, now(), now() + $7::interval)
         ON CONFLICT (session_id, branch_id) DO UPDATE SET holder_id = EXCLUDED.holder_id, holder = EXCLUDED.holder, pid = EXCLUDED.pid,
           host = EXCLUDED.host, since = EXCLUDED.since, expires_at = EXCLUDED.expires_at
         WHERE c.expires_at < now()
         RETURNING holder_id`,
        [id, branchId, this.holderId, holder, process.pid, hostname(), this.#interval()],
      );
      if (taken.length > 0) break;
      const rows = await this.#query<LeaseRow>(
        what,
        "SELECT holder_id, holder, pid, host, since, expires_at > now() AS live FROM agentcore.branch_claims WHERE session_id = $1 AND branch_id = $2",
        [id, branchId],
        true,
      );
      const row = rows[0];
      if (row === undefined) continue; // released meanwhile
      if (this.#alive(row)) {
        const since = new Date(row.since).toISOString();
        const who = row.host === hostname() ? row.holder : [row.holder, `on ${row.host}`].filter((x) => x !== null).join(" ");
        throw new SessionBranchBusyError(busyMessage(id, branchId, row.pid, who, since), id, branchId, row.pid, who, since);
      }
      if (attempt >= 20)
        throw new SessionStorageError(`PostgreSQL store ${redactUrl(this.url)}: ${what}: its stale claim cannot be taken over`);
      // A holder on this host whose process is gone: stale before its expiry.
      await this.#query(
        what,
        "DELETE FROM agentcore.branch_claims WHERE session_id = $1 AND branch_id = $2 AND holder_id = $3",
        [id, branchId, row.holder_id],
        true,
      );
    }
    const key = `${id}\u0000${branchId}`;
    this.#claims.add(key);
    this.#renewLater();
    let released = false;
    return {
      sessionId: id,
      branchId,
      release: () => {
        if (released) return;
        released = true;
        this.#claims.delete(key);
        this.#track(
          this.#query(
            "cannot release a branch",
            "DELETE FROM agentcore.branch_claims WHERE session_id = $1 AND branch_id = $2 AND holder_id = $3",
            [id, branchId, this.holderId],
            true,
          ).catch(() => {}),
        );
      },
    };
  }

  /** The pid of the live holder of the branch (in any process, on any host), or null. */
  override async branchOwner(sessionId: string, branchId = "main"): Promise<number | null> {
    await this.#settle();
    const rows = await this.#query<LeaseRow>(
      "cannot read branch claims",
      "SELECT holder_id, holder, pid, host, since, expires_at > now() AS live FROM agentcore.branch_claims WHERE session_id = $1 AND branch_id = $2",
      [normalizeId(sessionId), branchId],
      true,
    );
    const row = rows[0];
    return row !== undefined && this.#alive(row) ? row.pid : null;
  }

  protected override async breakBranchClaim(sessionId: string, branchId: string): Promise<void> {
    await this.#query(
      "cannot clear a branch claim",
      "DELETE FROM agentcore.branch_claims WHERE session_id = $1 AND branch_id = $2",
      [normalizeId(sessionId), branchId],
      true,
    );
    this.#claims.delete(`${normalizeId(sessionId)}\u0000${branchId}`);
  }

  /** An image blob, a row of `session_blobs` (a blob already there is kept: the same hash is the same bytes). */
  override async putBlob(sessionId: string, sha256: string, bytes: Uint8Array): Promise<void> {
    const id = normalizeId(sessionId);
    assertBlobName(id, sha256);
    await this.#query(
      `cannot write image blob ${sha256} of session '${id}'`,
      "INSERT INTO agentcore.session_blobs (session_id, sha256, data) VALUES ($1, $2, $3) ON CONFLICT (session_id, sha256) DO NOTHING",
      [id, sha256, Buffer.from(bytes)],
      true,
    );
  }

  override async getBlob(sessionId: string, sha256: string): Promise<Uint8Array | null> {
    const id = normalizeId(sessionId);
    assertBlobName(id, sha256);
    const rows = await this.#query<{ data: Uint8Array }>(
      `cannot read image blob ${sha256} of session '${id}'`,
      "SELECT data FROM agentcore.session_blobs WHERE session_id = $1 AND sha256 = $2",
      [id, sha256],
      true,
    );
    return rows.length === 0 ? null : new Uint8Array(rows[0]!.data);
  }

  override async markRunLive(sessionId: string, runId: string): Promise<void> {
    const id = normalizeId(sessionId);
    checkNoNul(runId, "run id");
    await this.#query(
      `cannot mark run ${runId} live`,
      `INSERT INTO agentcore.run_marks (session_id, run_id, holder_id, pid, host, since, expires_at)
       VALUES ($1, $2, $3, $4, $5, now(), now() + $6::interval)
       ON CONFLICT (session_id, run_id) DO UPDATE SET holder_id = EXCLUDED.holder_id, pid = EXCLUDED.pid, host = EXCLUDED.host,
         since = EXCLUDED.since, expires_at = EXCLUDED.expires_at`,
      [id, runId, this.holderId, process.pid, hostname(), this.#interval()],
      true,
    );
    this.#marks.add(`${id}\u0000${runId}`);
    this.#renewLater();
  }

  override async clearRunLive(sessionId: string, runId: string): Promise<void> {
    const id = normalizeId(sessionId);
    this.#marks.delete(`${id}\u0000${runId}`);
    await this.#query(
      `cannot clear the mark of run ${runId}`,
      "DELETE FROM agentcore.run_marks WHERE session_id = $1 AND run_id = $2",
      [id, runId],
      true,
    );
  }

  /** The pid of the live process running `runId` (any process, any host), or null. */
  override async runOwner(sessionId: string, runId: string): Promise<number | null> {
    const rows = await this.#query<LeaseRow>(
      "cannot read run marks",
      "SELECT holder_id, NULL AS holder, pid, host, since, expires_at > now() AS live FROM agentcore.run_marks WHERE session_id = $1 AND run_id = $2",
      [normalizeId(sessionId), runId],
      true,
    );
    const row = rows[0];
    return row !== undefined && this.#alive(row) ? row.pid : null;
  }

  /** The store's execution history (table agentcore.history), on this storage's connections. */
  history(): PostgresHistory {
    return new PostgresHistory(this.#pool, this.url);
  }

  /**
   * Give back this instance's leases and end its connections (idempotent).
   * A process that exits without it leaves its leases to expire.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    await this.#settle();
    await Promise.allSettled([...this.#tails.values()]);
    try {
      await this.#query("cannot release leases", "DELETE FROM agentcore.branch_claims WHERE holder_id = $1", [this.holderId]);
      await this.#query("cannot release leases", "DELETE FROM agentcore.run_marks WHERE holder_id = $1", [this.holderId]);
    } catch {
      /* they expire */
    }
    this.#closed = true;
    this.#claims.clear();
    this.#marks.clear();
    await this.#pool.end().catch(() => {});
  }
}

/** PostgreSQL's text holds no U+0000: refuse such an id up front with a clear error. */
function checkNoNul(value: string, what: string): void {
  if (value.includes("\u0000")) throw new SessionValidationError(`the PostgreSQL store cannot hold a ${what} containing U+0000`);
}

function checkText(record: SessionRecord): void {
  checkNoNul(record.session_id, "session id");
  checkNoNul(record.branch_id, "branch id");
}
