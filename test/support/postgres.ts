/**
 * A real PostgreSQL server for the tests of the PostgreSQL store.
 *
 * - `pgUrl()`: the server's URL. `AGENTCORE_TEST_PG` when set (`.ci/run`
 *   starts a throwaway cluster and sets it). Unset under `CI=true`: a loud
 *   error, so tests that need PostgreSQL fail in CI without it. Unset
 *   locally: a private cluster is started once per test process (initdb in a
 *   temp folder, as the current user, or as `postgres` when running as root,
 *   since initdb refuses root), stopped and removed when the process exits;
 *   without PostgreSQL's server installed it is null and the caller skips,
 *   saying why (`skipMessage`).
 * - `freshDatabase()`: a new database `t_<random>` on that server, so every
 *   test file is isolated; dropped after the file's tests (afterAll).
 * - `restartableCluster()`: a private cluster of the calling test's own
 *   (./pg-cluster.ts), which it may restart.
 */
import { afterAll } from "bun:test";
import { type ClusterOptions, type PrivateCluster, startCluster } from "./pg-cluster.ts";

/** Why PostgreSQL tests are skipped here (when `pgUrl()` is null). */
export let skipMessage = "";

let cached: Promise<string | null> | null = null;

/** The URL of the test server (see the module notes), or null when there is none locally. */
export function pgUrl(): Promise<string | null> {
  cached ??= resolveUrl();
  return cached;
}

async function resolveUrl(): Promise<string | null> {
  const env = process.env.AGENTCORE_TEST_PG;
  if (env !== undefined && env !== "") return env;
  if (process.env.CI === "true")
    throw new Error(
      "AGENTCORE_TEST_PG is not set under CI=true: the PostgreSQL store tests need a server (.ci/run starts one; set AGENTCORE_TEST_PG=postgres://USER@HOST:PORT/postgres)",
    );
  return startPrivateCluster();
}

function startPrivateCluster(): string | null {
  const cluster = startCluster();
  if (cluster === null) {
    skipMessage = "PostgreSQL's server is not installed (no /usr/lib/postgresql/*/bin/initdb) and AGENTCORE_TEST_PG is not set";
    return null;
  }
  return cluster.url;
}

/**
 * A private cluster of the calling test's own, which it may restart
 * (`cluster.restart()`): never the shared server of {@link pgUrl}, which
 * other tests use. Started even under CI (the package is installed there);
 * null locally when PostgreSQL's server is not installed (skip, saying
 * `skipMessage`), an error under CI=true. `fsync: true` for a server that
 * keeps its commits through `halt()` (a crash).
 */
export function restartableCluster(options: ClusterOptions = {}): PrivateCluster | null {
  const cluster = startCluster(options);
  if (cluster === null) {
    if (process.env.CI === "true")
      throw new Error("PostgreSQL's server is not installed: the restart tests need initdb and pg_ctl under CI");
    skipMessage = "PostgreSQL's server is not installed (no /usr/lib/postgresql/*/bin/initdb)";
  } else afterAll(() => cluster.stop());
  return cluster;
}

/** A URL with its database replaced. */
export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

/** Create a new, empty database `t_<random>` on the test server; its URL (null when there is no server). */
export async function createDatabase(): Promise<string | null> {
  const url = await pgUrl();
  if (url === null) return null;
  const name = `t_${crypto.randomUUID().replace(/-/g, "").slice(0, 16)}`;
  await adminQuery(url, `CREATE DATABASE ${name}`);
  return withDatabase(url, name);
}

/** Drop a database made by {@link createDatabase} (its connections too). */
export async function dropDatabase(dbUrl: string): Promise<void> {
  const url = await pgUrl();
  const name = new URL(dbUrl).pathname.slice(1);
  if (url === null || !/^t_[0-9a-f]{16}$/.test(name)) return;
  await adminQuery(url, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
}

async function adminQuery(url: string, sql: string): Promise<void> {
  const { default: pg } = await import("pg");
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    await admin.query(sql);
  } finally {
    await admin.end();
  }
}

/**
 * A new, empty database for the calling test file (call it at the file's top
 * level): its URL, dropped after the file's tests; null when there is no
 * server (skip, saying `skipMessage`).
 */
export async function freshDatabase(): Promise<string | null> {
  const db = await createDatabase();
  if (db !== null) afterAll(() => dropDatabase(db));
  return db;
}
