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
 */
import { afterAll } from "bun:test";
import { spawnSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";

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

function pgBin(): string | null {
  const base = "/usr/lib/postgresql";
  if (!existsSync(base)) return null;
  const versions = readdirSync(base)
    .filter((v) => existsSync(join(base, v, "bin", "initdb")))
    .sort((a, b) => Number(b) - Number(a));
  return versions.length === 0 ? null : join(base, versions[0]!, "bin");
}

function startPrivateCluster(): string | null {
  const bin = pgBin();
  if (bin === null) {
    skipMessage = "PostgreSQL's server is not installed (no /usr/lib/postgresql/*/bin/initdb) and AGENTCORE_TEST_PG is not set";
    return null;
  }
  const root = process.getuid?.() === 0;
  const user = root ? "postgres" : userInfo().username;
  const as = (cmd: string[]) => (root ? ["runuser", "-u", "postgres", "--", ...cmd] : cmd);
  const run = (cmd: string[]) => {
    const [exe, ...args] = as(cmd);
    return spawnSync(exe!, args, { encoding: "utf8" });
  };
  const dir = mkdtempSync(join(tmpdir(), "agentcore-test-pg-"));
  if (root) chownSync(dir, Number(spawnSync("id", ["-u", "postgres"], { encoding: "utf8" }).stdout.trim()), 0);
  const data = join(dir, "data");
  const init = run([join(bin, "initdb"), "-D", data, "-U", user, "-A", "trust", "-E", "UTF8", "--no-locale"]);
  if (init.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`initdb failed for the test cluster: ${init.stderr}`);
  }
  process.on("exit", () => {
    run([join(bin, "pg_ctl"), "stop", "-D", data, "-m", "immediate", "-s"]);
    rmSync(dir, { recursive: true, force: true });
  });
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = 20000 + Math.floor(Math.random() * 40000);
    const opts = `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir} -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200`;
    const r = run([join(bin, "pg_ctl"), "start", "-D", data, "-l", join(dir, "server.log"), "-w", "-t", "60", "-s", "-o", opts]);
    if (r.status === 0) return `postgres://${user}@127.0.0.1:${port}/postgres`;
  }
  throw new Error(`the private PostgreSQL test cluster did not start (see ${join(dir, "server.log")})`);
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
