/**
 * The PostgreSQL store's schema: a versioned, append-only list of SQL steps
 * in schema `agentcore`, with the versions applied kept in
 * `agentcore.schema_migrations(version, name, applied_at)`.
 *
 * {@link migrate} applies the steps a database lacks, each in a transaction
 * of its own, under `pg_advisory_xact_lock` (two daemons starting at once
 * apply each step once), and refuses a database that has a version this
 * build does not know (a newer agentcore migrated it): nothing is changed
 * then. A step, once released, is never edited: a change is a new step.
 *
 * Tables (docs/postgres.md describes them):
 * - `sessions(session_id, agent_id, last_revision, created_at)`: one row per
 *   session; its row lock orders the writers of the session.
 * - `records(session_id, revision, record_id, parent_id, branch_id, type,
 *   line, data, time)`: the journal. `line` is the record exactly as a JSONL
 *   journal holds it (lossless export); `data` the record's data as jsonb for
 *   queries (null when it cannot be jsonb: a string holding U+0000). A
 *   trigger refuses UPDATE and DELETE: records are never changed in place.
 *   Since step 5 the one exception is a whole session's deletion (`sessions
 *   delete`): a transaction that holds the session's row lock and sets
 *   `agentcore.delete_session` to its id locally; record ids are unique per
 *   session (a copy imported under another id keeps them).
 * - `branch_claims` and `run_marks`: leases (a holder, its pid and host, an
 *   expiry renewed by the holder); an expired lease is stale.
 * - `history`: the execution history, one row per tool call.
 * - `session_blobs(session_id, sha256, data, created_at)` (step 6): the
 *   bytes of a session's images, which its records name by sha256; written
 *   before the record that names them, deleted with the session.
 * - cluster mode (docs/cluster.md): `runs` (one row per queued run: its
 *   request, status, owning daemon and epoch), `run_events` (every stream
 *   item of a run, numbered), `run_commands` (steer, abort … sent to the
 *   owner, with their outcome), `run_approvals` (approvals waiting in a
 *   daemon) and `daemon_token` (the token the daemons of the store share).
 *
 * @module
 */
import { AgentcoreError } from "../../core/errors.ts";

/** One step of the schema. */
export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

/** The schema every table lives in. */
export const SCHEMA = "agentcore";

/** Every step, oldest first. Append only: never edit or reorder a released step. */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "journal: sessions and records (append-only)",
    sql: `
CREATE TABLE agentcore.sessions (
  session_id    text PRIMARY KEY,
  agent_id      text,
  last_revision bigint NOT NULL DEFAULT 0,
  created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE agentcore.records (
  session_id text NOT NULL REFERENCES agentcore.sessions (session_id),
  revision   bigint NOT NULL,
  record_id  text NOT NULL UNIQUE,
  parent_id  text,
  branch_id  text NOT NULL,
  type       text NOT NULL,
  line       text NOT NULL,
  data       jsonb,
  time       timestamptz,
  PRIMARY KEY (session_id, revision)
);
CREATE INDEX records_by_branch ON agentcore.records (session_id, branch_id, revision);
CREATE INDEX records_by_type ON agentcore.records (type, time);
CREATE FUNCTION agentcore.append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'agentcore.% is append-only: % refused', TG_TABLE_NAME, TG_OP
    USING ERRCODE = 'restrict_violation', HINT = 'records are never changed in place: append a new record instead';
END
$$;
CREATE TRIGGER records_append_only BEFORE UPDATE OR DELETE ON agentcore.records
  FOR EACH ROW EXECUTE FUNCTION agentcore.append_only();
CREATE TRIGGER records_no_truncate BEFORE TRUNCATE ON agentcore.records
  FOR EACH STATEMENT EXECUTE FUNCTION agentcore.append_only();
`,
  },
  {
    version: 2,
    name: "leases: branch claims and run marks",
    sql: `
CREATE TABLE agentcore.branch_claims (
  session_id text NOT NULL,
  branch_id  text NOT NULL,
  holder_id  text NOT NULL,
  holder     text,
  pid        integer NOT NULL,
  host       text NOT NULL,
  since      timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (session_id, branch_id)
);
CREATE INDEX branch_claims_by_holder ON agentcore.branch_claims (holder_id);
CREATE TABLE agentcore.run_marks (
  session_id text NOT NULL,
  run_id     text NOT NULL,
  holder_id  text NOT NULL,
  pid        integer NOT NULL,
  host       text NOT NULL,
  since      timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (session_id, run_id)
);
CREATE INDEX run_marks_by_holder ON agentcore.run_marks (holder_id);
`,
  },
  {
    version: 3,
    name: "history: the execution history (append-only)",
    sql: `
CREATE TABLE agentcore.history (
  id          bigserial PRIMARY KEY,
  time        timestamptz NOT NULL,
  tool        text NOT NULL,
  call_id     text,
  effect      text NOT NULL,
  success     boolean NOT NULL,
  code        text,
  duration_ms double precision NOT NULL,
  run_id      text,
  agent_id    text,
  line        text NOT NULL
);
CREATE INDEX history_by_time ON agentcore.history (time);
CREATE INDEX history_by_tool ON agentcore.history (tool, time);
CREATE INDEX history_by_run ON agentcore.history (run_id);
CREATE TRIGGER history_append_only BEFORE UPDATE OR DELETE ON agentcore.history
  FOR EACH ROW EXECUTE FUNCTION agentcore.append_only();
CREATE TRIGGER history_no_truncate BEFORE TRUNCATE ON agentcore.history
  FOR EACH STATEMENT EXECUTE FUNCTION agentcore.append_only();
`,
  },
  {
    version: 4,
    name: "cluster: runs, their events and commands, pending approvals, the shared daemon token",
    sql: `
CREATE TABLE agentcore.runs (
  run_id     text PRIMARY KEY,
  session_id text NOT NULL,
  branch     text NOT NULL,
  request    jsonb NOT NULL,
  status     text NOT NULL,
  owner      text,
  epoch      integer NOT NULL DEFAULT 0,
  base_head  text,
  base_turns integer,
  error      text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  result     jsonb
);
CREATE INDEX runs_by_created ON agentcore.runs (created_at);
CREATE TABLE agentcore.run_events (
  run_id     text NOT NULL,
  seq        bigint NOT NULL,
  item       jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (run_id, seq)
);
CREATE TABLE agentcore.run_commands (
  id          bigserial PRIMARY KEY,
  run_id      text,
  target      text NOT NULL,
  kind        text NOT NULL,
  body        jsonb NOT NULL,
  status      text NOT NULL DEFAULT 'pending',
  outcome     jsonb,
  created_at  timestamptz NOT NULL DEFAULT now(),
  answered_at timestamptz
);
CREATE INDEX run_commands_pending ON agentcore.run_commands (target, status);
CREATE TABLE agentcore.run_approvals (
  approval_id text PRIMARY KEY,
  run_id      text NOT NULL,
  owner       text NOT NULL,
  approval    jsonb NOT NULL,
  status      text NOT NULL DEFAULT 'pending',
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX run_approvals_pending ON agentcore.run_approvals (status);
CREATE TABLE agentcore.daemon_token (
  id         integer PRIMARY KEY CHECK (id = 1),
  token      text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
`,
  },
  {
    version: 5,
    name: "sessions delete: whole sessions under their row lock; record ids unique per session",
    sql: `
CREATE FUNCTION agentcore.records_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- The one exception: agentcore sessions delete removes a whole session, in a transaction that
  -- holds the session's row lock and names it in the transaction-local setting agentcore.delete_session.
  IF TG_OP = 'DELETE' AND OLD.session_id = current_setting('agentcore.delete_session', true) THEN
    RETURN OLD;
  END IF;
  RAISE EXCEPTION 'agentcore.% is append-only: % refused', TG_TABLE_NAME, TG_OP
    USING ERRCODE = 'restrict_violation',
      HINT = 'records are never changed in place: append a new record instead (a whole session goes with agentcore sessions delete)';
END
$$;
DROP TRIGGER records_append_only ON agentcore.records;
CREATE TRIGGER records_append_only BEFORE UPDATE OR DELETE ON agentcore.records
  FOR EACH ROW EXECUTE FUNCTION agentcore.records_guard();
ALTER TABLE agentcore.records DROP CONSTRAINT records_record_id_key;
ALTER TABLE agentcore.records ADD CONSTRAINT records_session_record_id UNIQUE (session_id, record_id);
`,
  },
  {
    version: 6,
    name: "session_blobs: the bytes of a session's images, content-addressed by sha256",
    sql: `
CREATE TABLE agentcore.session_blobs (
  session_id text NOT NULL,
  sha256     text NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
  data       bytea NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (session_id, sha256)
);
`,
  },
];

/** The newest version this build knows. */
export const LATEST_VERSION = MIGRATIONS[MIGRATIONS.length - 1]!.version;

/** What {@link migrate} needs of a connection: a `pg` Client or PoolClient. */
export interface Queryable {
  query(text: string, values?: unknown[]): Promise<{ rows: Record<string, unknown>[] }>;
}

/** A database whose schema this build cannot use (newer than it knows), or a step that failed. */
export class MigrationError extends AgentcoreError {
  readonly code: string = "SESSION_MIGRATION_FAILED";
  override name = "MigrationError";
}

/** The migrations applied by one {@link migrate} call, and the version the database is at. */
export interface MigrationResult {
  applied: Migration[];
  version: number;
}

/** Key of the advisory lock the migrations run under (any constant bigint; "agentcor" in ASCII). */
const LOCK_KEY = "7022907468366303090";

const BOOTSTRAP = `
CREATE SCHEMA IF NOT EXISTS agentcore;
CREATE TABLE IF NOT EXISTS agentcore.schema_migrations (
  version    integer PRIMARY KEY,
  name       text NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now()
);`;

/** The versions recorded in the database (none when it was never migrated). */
export async function appliedVersions(client: Queryable): Promise<number[]> {
  const t = await client.query("SELECT to_regclass('agentcore.schema_migrations') IS NOT NULL AS present");
  if (t.rows[0]?.present !== true) return [];
  const r = await client.query("SELECT version FROM agentcore.schema_migrations ORDER BY version");
  return r.rows.map((row) => Number(row.version));
}

/** Throws {@link MigrationError} when the database has versions this build does not know. */
export function checkKnown(versions: readonly number[], steps: readonly Migration[] = MIGRATIONS): void {
  const known = new Set(steps.map((m) => m.version));
  const unknown = versions.filter((v) => !known.has(v));
  if (unknown.length > 0) {
    const latest = steps[steps.length - 1]?.version ?? 0;
    throw new MigrationError(
      `the database's agentcore schema has version(s) ${unknown.join(", ")}, newer than this build knows (it knows 1 to ${latest}): ` +
        "a newer agentcore migrated it; use that version (or newer) with this store",
    );
  }
}

/**
 * Apply the steps the database lacks, oldest first, each in one transaction
 * under the advisory lock; returns what was applied. Throws
 * {@link MigrationError} (nothing changed) when the database is newer than
 * this build, or naming the step that failed (the steps before it stay).
 */
export async function migrate(client: Queryable, steps: readonly Migration[] = MIGRATIONS): Promise<MigrationResult> {
  const applied: Migration[] = [];
  for (;;) {
    await client.query("BEGIN");
    try {
      await client.query(`SELECT pg_advisory_xact_lock(${LOCK_KEY})`);
      await client.query(BOOTSTRAP);
      const have = await appliedVersions(client);
      checkKnown(have, steps);
      const next = steps.find((m) => !have.includes(m.version));
      if (next === undefined) {
        await client.query("COMMIT");
        return { applied, version: have.length === 0 ? 0 : Math.max(...have) };
      }
      try {
        await client.query(next.sql);
      } catch (e) {
        throw new MigrationError(`migration ${next.version} (${next.name}) failed: ${(e as Error).message}`);
      }
      await client.query("INSERT INTO agentcore.schema_migrations (version, name) VALUES ($1, $2)", [next.version, next.name]);
      await client.query("COMMIT");
      applied.push(next);
    } catch (e) {
      await client.query("ROLLBACK").catch(() => {});
      throw e;
    }
  }
}
