/**
 * Serve a `fetch` handler on Bun (`Bun.serve`) or Deno (`Deno.serve`), on a
 * TCP address or a Unix socket, with one small interface for both.
 *
 * - The hostname is always passed explicitly (both runtimes would bind
 *   0.0.0.0 otherwise); the default is 127.0.0.1.
 * - Port 0 picks a free port; {@link Listening.port} and `url` report it.
 * - A Unix socket is created under umask 0177 and then chmod'ed to 0600, so
 *   it is never reachable by other users. A stale socket file (nobody
 *   listening) is replaced; a live one or any other file is an error.
 * - Header fields over `maxHeaderBytes` (default 16 KiB) get 431
 *   ({@link headerLimit}). Under Bun the runtime's own limit (process-wide:
 *   `node:http`'s `maxHeaderSize`) is raised to
 *   {@link RUNTIME_MAX_HEADER_BYTES} first, never lowered, so that an
 *   oversized head is read whole and answered instead of reset mid-send.
 *
 * @module
 */
import { AgentcoreError } from "../core/errors.ts";
import * as fs from "node:fs";
import http from "node:http";
import * as net from "node:net";
import { DEFAULT_MAX_HEADER_BYTES, headerLimit, RUNTIME_MAX_HEADER_BYTES } from "./middleware/header-limit.ts";

/** Where to listen. */
export interface ListenOptions {
  hostname?: string;
  port?: number;
  /** Listen on this Unix socket path instead of TCP. */
  unix?: string;
  /** Seconds an idle connection stays open (Bun; SSE heartbeats keep streams busy). Default 60. */
  idleTimeoutSeconds?: number;
  /** Most bytes of a request's header fields; past it the answer is 431. Default 16 KiB, at most {@link RUNTIME_MAX_HEADER_BYTES}. */
  maxHeaderBytes?: number;
}

/** A listening server. */
export interface Listening {
  /** `http://host:port` (IPv6 in brackets), or `unix:PATH`. */
  readonly url: string;
  readonly port: number | null;
  readonly unix: string | null;
  readonly runtime: "bun" | "deno";
  /** Stop accepting connections; requests in flight may finish. */
  stopAccepting(): void;
  /** Close everything that is left (idempotent): answers being sent get a moment, then connections are cut. */
  close(): Promise<void>;
}

/** A listening problem (address in use, bad socket path…). */
export class ListenError extends AgentcoreError {
  readonly code: string = "LISTEN_FAILED";
  override name = "ListenError";
}

interface DenoServer {
  addr: { hostname?: string; port?: number; path?: string };
  finished: Promise<void>;
  shutdown(): Promise<void>;
}
interface DenoLike {
  serve(options: Record<string, unknown>, handler: (req: Request) => Response | Promise<Response>): DenoServer;
}

function probeSocket(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ path });
    s.once("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
  });
}

async function prepareSocketPath(path: string): Promise<void> {
  let st: fs.Stats;
  try {
    st = fs.lstatSync(path);
  } catch {
    return;
  }
  if (!st.isSocket()) throw new ListenError(`${path} exists and is not a socket; refusing to replace it`);
  if (await probeSocket(path)) throw new ListenError(`${path}: another server is listening on this socket`);
  fs.unlinkSync(path);
}

function formatUrl(hostname: string, port: number): string {
  const host = hostname.includes(":") && !hostname.startsWith("[") ? `[${hostname}]` : hostname;
  return `http://${host}:${port}`;
}

/** Raise Bun's process-wide header limit to `bytes` (never lower it). */
function raiseRuntimeHeaderLimit(bytes: number): void {
  const h = http as unknown as { maxHeaderSize: number };
  if (!(h.maxHeaderSize >= bytes)) h.maxHeaderSize = bytes;
}

/** Listen with the current runtime. */
export async function listen(handler: (req: Request) => Response | Promise<Response>, options: ListenOptions = {}): Promise<Listening> {
  const deno = (globalThis as { Deno?: DenoLike }).Deno;
  const bun = (globalThis as { Bun?: typeof Bun }).Bun;
  const maxHeaderBytes = options.maxHeaderBytes ?? DEFAULT_MAX_HEADER_BYTES;
  if (!Number.isSafeInteger(maxHeaderBytes) || maxHeaderBytes < 1 || maxHeaderBytes > RUNTIME_MAX_HEADER_BYTES)
    throw new ListenError(`maxHeaderBytes must be an integer from 1 to ${RUNTIME_MAX_HEADER_BYTES}, not ${maxHeaderBytes}`);
  const fetch = headerLimit(handler, maxHeaderBytes);
  const hostname = options.hostname ?? "127.0.0.1";
  const unix = options.unix ?? null;
  if (unix !== null) await prepareSocketPath(unix);
  const oldMask = unix !== null ? process.umask(0o177) : null;
  try {
    if (bun !== undefined && deno === undefined) {
      raiseRuntimeHeaderLimit(RUNTIME_MAX_HEADER_BYTES);
      let server: ReturnType<typeof Bun.serve>;
      try {
        server =
          unix !== null
            ? bun.serve({ unix, fetch, idleTimeout: options.idleTimeoutSeconds ?? 60 } as unknown as Parameters<typeof Bun.serve>[0])
            : bun.serve({ hostname, port: options.port ?? 8787, fetch, idleTimeout: options.idleTimeoutSeconds ?? 60 });
      } catch (e) {
        throw new ListenError(`cannot listen on ${unix ?? `${hostname}:${options.port ?? 8787}`}: ${(e as Error).message}`);
      }
      if (unix !== null) fs.chmodSync(unix, 0o600);
      const port = unix === null ? (server.port ?? null) : null;
      let closed: Promise<void> | null = null;
      // Resolves when every connection has closed: idle ones at once, the others once their answer is sent.
      let draining: Promise<void> | null = null;
      return {
        url: unix !== null ? `unix:${unix}` : formatUrl(hostname, port!),
        port,
        unix,
        runtime: "bun",
        stopAccepting() {
          draining ??= Promise.resolve(server.stop(false)).catch(() => {});
        },
        close() {
          closed ??= (async () => {
            // Answers still being written (e.g. a call cancelled by the shutdown) get up to 2 s to go out.
            draining ??= Promise.resolve(server.stop(false)).catch(() => {});
            let timer: ReturnType<typeof setTimeout> | undefined;
            await Promise.race([draining, new Promise((r) => (timer = setTimeout(r, 2000)))]);
            clearTimeout(timer);
            await server.stop(true);
            if (unix !== null) fs.rmSync(unix, { force: true });
          })();
          return closed;
        },
      };
    }
    if (deno !== undefined) {
      let ready!: (addr: DenoServer["addr"]) => void;
      const listening = new Promise<DenoServer["addr"]>((r) => (ready = r));
      let server: DenoServer;
      try {
        server = deno.serve(
          unix !== null ? { path: unix, transport: "unix", onListen: ready } : { hostname, port: options.port ?? 8787, onListen: ready },
          fetch,
        );
      } catch (e) {
        throw new ListenError(`cannot listen on ${unix ?? `${hostname}:${options.port ?? 8787}`}: ${(e as Error).message}`);
      }
      const addr = await listening;
      if (unix !== null) fs.chmodSync(unix, 0o600);
      const port = unix === null ? (addr.port ?? server.addr.port ?? null) : null;
      let closed: Promise<void> | null = null;
      let shuttingDown: Promise<void> | null = null;
      return {
        url: unix !== null ? `unix:${unix}` : formatUrl(hostname, port!),
        port,
        unix,
        runtime: "deno",
        stopAccepting() {
          // Deno stops listening on shutdown and lets requests in flight finish.
          shuttingDown ??= server.shutdown().catch(() => {});
        },
        close() {
          closed ??= (async () => {
            shuttingDown ??= server.shutdown().catch(() => {});
            let timer: ReturnType<typeof setTimeout> | undefined;
            await Promise.race([shuttingDown, new Promise((r) => (timer = setTimeout(r, 2000)))]);
            clearTimeout(timer);
            if (unix !== null) fs.rmSync(unix, { force: true });
          })();
          return closed;
        },
      };
    }
    throw new ListenError(
      "the daemon needs Bun or Deno (Bun.serve or Deno.serve; Node has neither): use the agentcore binary, or run the command with Bun (bunx --bun agentcore serve)",
    );
  } finally {
    if (oldMask !== null) process.umask(oldMask);
  }
}
