/** Shared helpers of the MCP tests: real peer servers, free ports, process checks. */
import { connect, createServer } from "node:net";
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";

export const REPO = resolve(import.meta.dir, "../..");
export const FIXTURE = join(REPO, "test", "mcp", "fixtures", "server.mjs");
export const EVERYTHING = join(REPO, "node_modules/@modelcontextprotocol/server-everything/dist/index.js");
export const FILESYSTEM = join(REPO, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
/** Node runs the npm peers and the fixture (they are Node programs). */
export const NODE = Bun.which("node") ?? "node";

/** A port that was free a moment ago, on loopback. */
export function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once("error", rej);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => res(port));
    });
  });
}

/** Whether something accepts TCP connections on 127.0.0.1:port. */
export function tcpOpen(port: number): Promise<boolean> {
  return new Promise((res) => {
    const sock = connect(port, "127.0.0.1");
    sock.once("connect", () => {
      sock.destroy();
      res(true);
    });
    sock.once("error", () => res(false));
  });
}

/**
 * Whether a process with this pid is running (signal 0 probe). A zombie (dead,
 * not yet reaped — an orphan's zombie waits for PID 1, which in a container
 * may never reap it) counts as gone: it runs no code and holds no resources.
 */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (e) {
    return (e as NodeJS.ErrnoException).code !== "ESRCH";
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return true; // no /proc: trust the probe
  }
}

/** Poll `check` every 20 ms, at most `tries` times; throws with `what` when it never holds. */
export async function until(check: () => boolean | Promise<boolean>, what: string, tries = 500): Promise<void> {
  for (let i = 0; i < tries; i++) {
    if (await check()) return;
    await Bun.sleep(20);
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Lines of a fixture log (empty when the file does not exist yet). */
export function logLines(path: string): string[] {
  return existsSync(path) ? readFileSync(path, "utf8").trim().split("\n").filter(Boolean) : [];
}

/** A server-everything child in an HTTP mode on a free loopback port; resolves once it answers. */
export async function startEverythingHttp(
  mode: "streamableHttp" | "sse",
  fixedPort?: number,
): Promise<{ port: number; proc: ReturnType<typeof Bun.spawn>; stop(): Promise<void> }> {
  const port = fixedPort ?? (await freePort());
  const proc = Bun.spawn([NODE, EVERYTHING, mode], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", PORT: String(port) },
    stdout: "ignore",
    stderr: "ignore",
    stdin: "ignore",
  });
  await until(() => tcpOpen(port), `server-everything ${mode} on port ${port}`);
  return {
    port,
    proc,
    stop: async () => {
      proc.kill("SIGTERM");
      await proc.exited;
    },
  };
}
