/**
 * Start the daemon: the app from {@link createApp} on a listener from
 * {@link listen}, plus the graceful stop sequence.
 *
 * `stop()` (what SIGINT/SIGTERM call in `agentcore serve`):
 * 1. stops accepting connections, and answers any request still arriving on
 *    an open connection with 503;
 * 2. in `abort` mode aborts every active run at once; in `finish` mode lets
 *    them run for up to `graceMs`, then aborts what is left;
 * 3. waits for every agent to go idle and shut down: each run's session
 *    recorder is an awaited event sink whose appends are fsynced, so when
 *    this resolves every journal record (down to `run_finished`) is on disk;
 *    pending approvals are denied;
 * 4. closes the remaining connections.
 *
 * A client chooses with `X-Agentcore-On-Disconnect: continue` that its run
 * or call goes on when it leaves ({@link onDisconnect}).
 *
 * @example
 * ```ts
 * const d = await startDaemon({ app: { token: generateToken() }, listen: { hostname: "127.0.0.1", port: 0 } });
 * console.error(d.url);
 * await d.stop();
 * ```
 *
 * @module
 */
import { createApp, type AppOptions, type Daemon } from "./app.ts";
import { listen, type Listening, type ListenOptions } from "./listen.ts";
import { onDisconnect } from "./middleware/on-disconnect.ts";

/** What to do with runs still active at shutdown. */
export type ShutdownMode = "abort" | "finish";
export const SHUTDOWN_MODES: readonly ShutdownMode[] = ["abort", "finish"];

export interface StartOptions {
  /** App options; `port` is filled in from the listener. */
  app: Omit<AppOptions, "port">;
  listen: ListenOptions;
  /** Default `abort`. */
  onShutdown?: ShutdownMode;
  /** In `finish` mode, how long runs may go on before they are aborted. Default 30000. */
  graceMs?: number;
  /**
   * Runs after the app (and its runtime) exist, before listening: e.g. to
   * connect MCP servers and register their tools. Its result is called at
   * the end of `stop()` (close what it opened). A throw stops the start-up.
   */
  prepare?: (daemon: Daemon) => Promise<(() => Promise<void>) | void>;
  /** Called last in `stop()`, once everything else is closed (e.g. the store's connections). */
  close?: () => Promise<void>;
}

export interface RunningDaemon {
  readonly url: string;
  readonly daemon: Daemon;
  readonly listening: Listening;
  /** The stop sequence above. Idempotent; resolves when everything is flushed and closed. */
  stop(): Promise<void>;
}

/** Bun's most idle seconds for a connection. */
const MAX_IDLE_SECONDS = 255;

/**
 * The idle timeout of connections: Bun closes a connection (an SSE stream
 * too) that sends nothing for this long, so it must outlast the heartbeat
 * period, or a quiet run's stream would be cut and its run aborted. At least
 * 60 s (or what is asked), and 10 s more than the heartbeat period.
 */
export function idleTimeoutFor(heartbeatMs = 15_000, requestedSeconds = 60): number {
  return Math.min(MAX_IDLE_SECONDS, Math.max(requestedSeconds, Math.ceil(heartbeatMs / 1000) + 10));
}

/** Create the app and listen. */
export async function startDaemon(options: StartOptions): Promise<RunningDaemon> {
  let listening: Listening | null = null;
  const daemon = createApp({ ...options.app, port: () => listening?.port ?? null });
  let cleanup: (() => Promise<void>) | void = undefined;
  try {
    cleanup = await options.prepare?.(daemon);
    // cluster mode: work the store's run queue (docs/cluster.md)
    await daemon.cluster?.start();
    listening = await listen(onDisconnect(daemon.fetch), {
      ...options.listen,
      idleTimeoutSeconds: idleTimeoutFor(options.app.heartbeatMs, options.listen.idleTimeoutSeconds),
    });
  } catch (e) {
    await daemon.shutdown("abort", 0);
    await cleanup?.();
    throw e;
  }
  const l = listening;
  let stopped: Promise<void> | null = null;
  return {
    url: l.url,
    daemon,
    listening: l,
    stop() {
      stopped ??= (async () => {
        l.stopAccepting();
        await daemon.shutdown(options.onShutdown ?? "abort", options.graceMs ?? 30_000);
        await l.close();
        await cleanup?.();
        await options.close?.();
      })();
      return stopped;
    },
  };
}
