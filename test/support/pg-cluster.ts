/**
 * A private PostgreSQL cluster: initdb in a temp folder and a postgres
 * server on 127.0.0.1 at a random port, as the current user (as `postgres`
 * when running as root, since initdb refuses root), trust authentication.
 * Stopped and removed when the process exits. Used by test/support/postgres.ts
 * (the shared test server when AGENTCORE_TEST_PG is not set), by tests that
 * must restart their server (never AGENTCORE_TEST_PG's, which other tests
 * use), and by scripts/bench/store.ts. No bun:test import: scripts load it.
 */
import { spawn, spawnSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";

/** A running private cluster. */
export interface PrivateCluster {
  /** `postgres://USER@127.0.0.1:PORT/postgres`. */
  url: string;
  /** The server's log file. */
  log: string;
  /**
   * `pg_ctl restart -m fast`: connections are cut, the server comes back on
   * the same port; returns once it accepts connections. With `downMs`, it is
   * stopped (`-m fast`), left down that long, then started again.
   */
  restart(downMs?: number): void;
  /** `pg_ctl stop -m immediate`: the server goes away at once, as in a crash (start it again with {@link start}). */
  halt(): void;
  /** Start a server stopped by {@link halt} on the same port; returns once it accepts connections. */
  start(): void;
  /** Stop the server and remove its folder (also done at exit). */
  stop(): void;
}

/** Options of {@link startCluster}. */
export interface ClusterOptions {
  /** fsync and synchronous commit on (a durable server; default off: the tests' throwaway setting). */
  fsync?: boolean;
}

/** The bin folder of the newest PostgreSQL server installed (Debian's layout), or null. */
export function pgBin(): string | null {
  const base = "/usr/lib/postgresql";
  if (!existsSync(base)) return null;
  const versions = readdirSync(base)
    .filter((v) => existsSync(join(base, v, "bin", "initdb")))
    .sort((a, b) => Number(b) - Number(a));
  return versions.length === 0 ? null : join(base, versions[0]!, "bin");
}

/** Start a private cluster; null when PostgreSQL's server is not installed. Throws when it is but cannot start. */
export function startCluster(options: ClusterOptions = {}): PrivateCluster | null {
  const bin = pgBin();
  if (bin === null) return null;
  const root = process.getuid?.() === 0;
  const user = root ? "postgres" : userInfo().username;
  const as = (cmd: string[]) => (root ? ["runuser", "-u", "postgres", "--", ...cmd] : cmd);
  const run = (cmd: string[]) => {
    const [exe, ...args] = as(cmd);
    return spawnSync(exe!, args, { encoding: "utf8" });
  };
  const dir = mkdtempSync(join(tmpdir(), "agentcore-pg-"));
  if (root) chownSync(dir, Number(spawnSync("id", ["-u", "postgres"], { encoding: "utf8" }).stdout.trim()), 0);
  const data = join(dir, "data");
  const log = join(dir, "server.log");
  const init = run([join(bin, "initdb"), "-D", data, "-U", user, "-A", "trust", "-E", "UTF8", "--no-locale"]);
  if (init.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`initdb failed for a private PostgreSQL cluster: ${init.stderr}`);
  }
  // A watchdog stops the server and removes its folder once this process is
  // gone, however it ends (an exit handler does not run after SIGKILL, or when
  // a test runner is killed at its timeout): no server outlives its tests.
  const q = (x: string) => `'${x.replace(/'/g, "'\\''")}'`;
  const stopCmd = [...as([join(bin, "pg_ctl"), "stop", "-D", data, "-m", "immediate", "-s"])].map(q).join(" ");
  const watchdog = spawn(
    "sh",
    ["-c", `while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done; ${stopCmd} >/dev/null 2>&1; rm -rf ${q(dir)}`],
    { detached: true, stdio: "ignore" },
  );
  watchdog.unref();
  let stopped = false;
  const stop = () => {
    if (stopped) return;
    stopped = true;
    run([join(bin, "pg_ctl"), "stop", "-D", data, "-m", "immediate", "-s"]);
    rmSync(dir, { recursive: true, force: true });
    try {
      watchdog.kill("SIGKILL");
    } catch {
      // gone already
    }
  };
  process.on("exit", stop);
  const durability = options.fsync === true ? "" : " -c fsync=off -c synchronous_commit=off -c full_page_writes=off";
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = 20000 + Math.floor(Math.random() * 40000);
    const opts = `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir} -c max_connections=200${durability}`;
    const r = run([join(bin, "pg_ctl"), "start", "-D", data, "-l", log, "-w", "-t", "60", "-s", "-o", opts]);
    if (r.status === 0)
      return {
        url: `postgres://${user}@127.0.0.1:${port}/postgres`,
        log,
        stop,
        halt: () => {
          const rr = run([join(bin, "pg_ctl"), "stop", "-D", data, "-m", "immediate", "-w", "-s"]);
          if (rr.status !== 0) throw new Error(`pg_ctl stop -m immediate failed: ${rr.stderr} (see ${log})`);
        },
        start: () => {
          const rr = run([join(bin, "pg_ctl"), "start", "-D", data, "-l", log, "-w", "-t", "60", "-s", "-o", opts]);
          if (rr.status !== 0) throw new Error(`pg_ctl start failed: ${rr.stderr} (see ${log})`);
        },
        restart: (downMs = 0) => {
          const pgCtl = join(bin, "pg_ctl");
          const steps =
            downMs > 0
              ? [
                  [pgCtl, "stop", "-D", data, "-m", "fast", "-w", "-s"],
                  null,
                  [pgCtl, "start", "-D", data, "-l", log, "-w", "-t", "60", "-s", "-o", opts],
                ]
              : [[pgCtl, "restart", "-D", data, "-l", log, "-m", "fast", "-w", "-t", "60", "-s", "-o", opts]];
          for (const step of steps) {
            if (step === null) {
              spawnSync("sleep", [String(downMs / 1000)]);
              continue;
            }
            const rr = run(step);
            if (rr.status !== 0) throw new Error(`${step.slice(0, 2).join(" ")} failed: ${rr.stderr} (see ${log})`);
          }
        },
      };
  }
  throw new Error(`a private PostgreSQL cluster did not start (see ${log})`);
}
