/**
 * Server-sent events for runs.
 *
 * Each item is one SSE message: `id:` (numbered per run from 1, the same in
 * every stream of that run), `event:` (the agent event's `kind`, or
 * `approval_requested` / `approval_resolved`), and `data:` (the item as one
 * line of JSON). A stream opened with `replayAfter` first sends the run's
 * kept items after that id (a reconnecting client's `Last-Event-ID`). A comment line (`: heartbeat`)
 * goes out every `heartbeatMs` so that idle connections stay open through
 * proxies and the server's idle timeout. When the run is idle again the
 * stream sends `event: done` with the run's status and last result, and ends.
 *
 * A client that goes away (the stream is cancelled, or the request's signal
 * fires) calls `onDisconnect`; for a non-detached run that aborts it. A
 * client that reads too slowly (more than `maxQueued` messages behind) is
 * treated the same way: we never buffer without bound.
 *
 * @module
 */
import type { AgentRunResult } from "../agent/index.ts";
import type { RunStreamItem, ServerRun } from "./runs.ts";

export const SSE_HEADERS: Record<string, string> = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-store",
  "x-accel-buffering": "no",
};

/** Options of {@link runEventStream}. */
export interface RunStreamOptions {
  heartbeatMs: number;
  /** Most messages queued for a slow client before the stream is closed. Default 10000. */
  maxQueued?: number;
  /** The request's signal (fires when the client disconnects, on runtimes that report it). */
  signal?: AbortSignal;
  /** Called once when the client leaves before `done`. */
  onDisconnect?: () => void;
  /** End at once with `done` if the run is not running (for attaching to a run). */
  endIfIdle?: boolean;
  /** Replay the run's kept items with an id above this first. */
  replayAfter?: number;
}

const enc = new TextEncoder();

/** One SSE message. `data` is JSON on a single line (JSON.stringify never emits raw newlines). */
export function sseMessage(event: string, data: unknown, id?: number): Uint8Array {
  return enc.encode(`${id !== undefined ? `id: ${id}\n` : ""}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}

function itemMessage(item: RunStreamItem, id: number): Uint8Array | null {
  switch (item.type) {
    case "agent":
      return sseMessage(item.event.kind, item.event, id);
    case "approval":
      // `approval.run_id` is the agent run that asked, like `run_id` in agent events.
      return sseMessage(item.notice.kind, item.notice, id);
    case "idle":
      return null;
  }
}

/**
 * A `ReadableStream` of the run's events. Subscribes at once (call it before
 * starting the operation, so no event is missed).
 */
export function runEventStream(run: ServerRun, options: RunStreamOptions): ReadableStream<Uint8Array> {
  const maxQueued = options.maxQueued ?? 10_000;
  let finished = false;
  let heartbeat: ReturnType<typeof setInterval> | undefined;
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const cleanup = () => {
    finished = true;
    run.listeners.delete(listener);
    if (heartbeat !== undefined) clearInterval(heartbeat);
    options.signal?.removeEventListener("abort", onAbort);
  };
  const leave = () => {
    if (finished) return;
    cleanup();
    options.onDisconnect?.();
  };
  const end = (status: string, result: AgentRunResult | null) => {
    if (finished) return;
    cleanup();
    try {
      controller.enqueue(sseMessage("done", { run_id: run.id, status, result }));
      controller.close();
    } catch {
      // the client is already gone
    }
  };
  const send = (bytes: Uint8Array) => {
    if (finished) return;
    if ((controller.desiredSize ?? 0) < -maxQueued) {
      try {
        controller.error(new Error("client too slow"));
      } catch {
        /* already closed */
      }
      leave();
      return;
    }
    try {
      controller.enqueue(bytes);
    } catch {
      leave();
    }
  };
  const listener = (item: RunStreamItem, id: number) => {
    if (item.type === "idle") return end(item.status, item.result);
    const m = itemMessage(item, id);
    if (m !== null) send(m);
  };
  const onAbort = () => leave();
  return new ReadableStream<Uint8Array>({
    start(c) {
      controller = c;
      run.listeners.add(listener);
      options.signal?.addEventListener("abort", onAbort, { once: true });
      if (options.signal?.aborted) return leave();
      c.enqueue(enc.encode(`: run ${run.id}\n\n`));
      if (options.replayAfter !== undefined) {
        for (const { id, item } of run.backlog) if (id > options.replayAfter) listener(item, id);
      }
      heartbeat = setInterval(() => send(enc.encode(`: heartbeat\n\n`)), options.heartbeatMs);
      if (options.endIfIdle === true && run.status !== "running") end(run.status, run.agent.lastResult);
    },
    cancel() {
      leave();
    },
  });
}
