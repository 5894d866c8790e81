/**
 * Real `agentcore serve` processes for the daemon benchmarks (cluster.ts,
 * cluster-flood.ts): the compiled binary, a PostgreSQL server with fresh
 * databases, daemons on loopback on a JSONL or a PostgreSQL store, and the
 * requests they are sent.
 *
 * @module
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { startCluster } from "../../test/support/pg-cluster.ts";

const REPO = path.resolve(import.meta.dirname, "../..");

export interface Daemon {
  proc: ReturnType<typeof Bun.spawn>;
  url: string;
  token: string;
}

/** `given` (a path), else the binary built into `work` (bun build --compile). */
export function benchBinary(work: string, given?: string): string {
  if (given !== undefined) return path.resolve(given);
  const out = path.join(work, "agentcore");
  console.log("building the binary (bun build --compile) …");
  // the Bun that runs this script (a bun on PATH is not needed)
  const r = spawnSync(process.execPath, ["build", "--compile", "--minify", path.join(REPO, "src/cli/main.ts"), "--outfile", out], {
    stdio: ["ignore", "ignore", "inherit"],
  });
  if (r.status !== 0) throw new Error("bun build --compile failed");
  return out;
}

/** The PostgreSQL server: `given`, else AGENTCORE_TEST_PG, else a private cluster with fsync off (like the tests'). */
export function benchPgServer(given?: string): string {
  const server = given ?? (process.env.AGENTCORE_TEST_PG || undefined);
  if (server !== undefined) return server;
  const c = startCluster({ fsync: false });
  if (c === null) throw new Error("PostgreSQL's server is not installed: give --pg URL");
  return c.url;
}

/** A new database `bench_<random>` on `server`; its URL. */
export async function freshBenchDatabase(server: string): Promise<string> {
  const { default: pg } = await import("pg");
  const admin = new pg.Client({ connectionString: server });
  await admin.connect();
  const name = `bench_${crypto.randomUUID().replace(/-/g, "").slice(0, 12)}`;
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const u = new URL(server);
  u.pathname = `/${name}`;
  return u.toString();
}

/** A config in `work` whose exec may run sh without isolation. */
export function benchConfig(work: string): string {
  const cfg = path.join(work, "config.json");
  fs.writeFileSync(cfg, JSON.stringify({ tools: { exec: { allow: ["sh"], env: ["PATH"], isolation: "off", timeout_ms: 600_000 } } }));
  return cfg;
}

/** `bin serve` in `work/name` on a free loopback port: on `store` (a postgres:// URL), or on JSONL journals when null. */
export async function startBenchDaemon(
  bin: string,
  work: string,
  cfg: string,
  name: string,
  store: string | null,
  env: Record<string, string> = {},
): Promise<Daemon> {
  const dir = path.join(work, name);
  fs.mkdirSync(dir, { recursive: true });
  const args = [bin, "serve", "--config", cfg, "--port", "0", "--state-dir", path.join(dir, "state")];
  if (store !== null) args.push("--store", store);
  else args.push("--sessions-dir", path.join(dir, "sessions"));
  const proc = Bun.spawn(args, { cwd: dir, stdout: "ignore", stderr: "pipe", stdin: "ignore", env: { ...process.env, ...env } });
  const reader = (proc.stderr as ReadableStream<Uint8Array>).getReader();
  let printed = "";
  while (!/token file (\S+)\n/.test(printed)) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`serve ${name} ended: ${printed}`);
    printed += new TextDecoder().decode(value);
  }
  // keep reading, so that the pipe never fills
  void (async () => {
    for (;;) if ((await reader.read().catch(() => ({ done: true }))).done) return;
  })();
  return {
    proc,
    url: /listening on (\S+)\n/.exec(printed)![1]!,
    token: fs.readFileSync(/token file (\S+)\n/.exec(printed)![1]!, "utf8").trim(),
  };
}

/** A JSON request to a daemon (`Accept: application/json`). */
export async function callDaemon(d: Daemon, method: string, route: string, body?: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(`${d.url}${route}`, {
    method,
    headers: { authorization: `Bearer ${d.token}`, "content-type": "application/json", accept: "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text === "" ? null : JSON.parse(text) };
}

/** SIGTERM the daemons and wait for them to end. */
export async function stopDaemons(ds: Daemon[]): Promise<void> {
  for (const d of ds) d.proc.kill("SIGTERM");
  await Promise.all(ds.map((d) => d.proc.exited));
}
