/**
 * A cluster run's events through PostgreSQL (docs/cluster.md).
 *
 * The owner appends every stream item of the run to
 * `agentcore.run_events(run_id, seq, item)` ({@link EventWriter}: the items
 * of one tick in one statement, in order) and sends
 * `NOTIFY agentcore_run_events, '<run_id>'`. The insert is fenced: it writes
 * nothing once the run's `epoch` is not the writer's (another daemon took
 * the run over), and the writer then stops its run.
 *
 * Any daemon serves `GET /v1/runs/{id}/events` from the table
 * ({@link clusterEventStream}): the rows after `Last-Event-ID` (the `seq`),
 * framed as today's streams are, then the new ones as they come, woken by the
 * notification, or by a poll every `pollMs` when it is lost (the bound on
 * the delay). An `idle` row is `event: done`, and ends the stream when it is
 * the run's last row and the run is not running.
 *
 * @module
 */
import type { Pool } from "pg";
import type { RunStreamItem } from "../runs.ts";
import { sseMessage } from "../sse.ts";

/** The channel the owners notify on (payload: the run id). */
export const EVENTS_CHANNEL = "agentcore_run_events";

/** jsonb holds no U+0000: such a character in an event becomes U+FFFD in the table. */
function jsonbSafe(value: unknown): string {
  return JSON.stringify(value).replace(/\\u0000/g, "\\ufffd");
}

/** The owner's side: numbered items of one run, flushed once per tick. */
export class EventWriter {
  #seq: number;
  #buffer: { seq: number; item: string }[] = [];
  #tail: Promise<void> = Promise.resolve();
  #scheduled = false;
  fenced = false;

  constructor(
    private readonly pool: Pool,
    readonly runId: string,
    readonly epoch: number,
    /** The last seq already in the table (a run taken over goes on after it). */
    lastSeq: number,
    /** Called once when the epoch moved on (the run was taken over elsewhere). */
    private readonly onFenced: () => void,
    private readonly onError: (e: unknown) => void,
  ) {
    this.#seq = lastSeq;
  }

  /** The seq the last item got. */
  get lastSeq(): number {
    return this.#seq;
  }

  /** Queue an item; returns its seq. */
  push(item: RunStreamItem | { type: "cluster"; event: Record<string, unknown> }): number {
    const seq = ++this.#seq;
    this.#buffer.push({ seq, item: jsonbSafe(item) });
    if (!this.#scheduled) {
      this.#scheduled = true;
      setTimeout(() => {
        this.#scheduled = false;
        void this.flush();
      }, 0);
    }
    return seq;
  }

  /** Write what is queued (after the writes before it). Resolves once it is committed. */
  flush(): Promise<void> {
    const next = this.#tail.then(() => this.#write());
    this.#tail = next.catch(() => {});
    return this.#tail;
  }

  async #write(): Promise<void> {
    if (this.#buffer.length === 0 || this.fenced) {
      this.#buffer = [];
      return;
    }
    const batch = this.#buffer;
    this.#buffer = [];
    const rows = `[${batch.map((b) => `{"seq":${b.seq},"item":${b.item}}`).join(",")}]`;
    for (let attempt = 0; ; attempt++) {
      try {
        const r = await this.pool.query(
          `WITH ins AS (
             INSERT INTO agentcore.run_events (run_id, seq, item)
             SELECT $1, x.seq, x.item FROM jsonb_to_recordset($2::jsonb) AS x(seq bigint, item jsonb)
             WHERE EXISTS (SELECT 1 FROM agentcore.runs WHERE run_id = $1 AND epoch = $3)
             ON CONFLICT DO NOTHING RETURNING 1)
           SELECT count(*)::int AS n, pg_notify($4, $1) FROM ins`,
          [this.runId, rows, this.epoch, EVENTS_CHANNEL],
        );
        if (Number(r.rows[0]?.n ?? 0) === 0) {
          const still = await this.pool.query("SELECT 1 FROM agentcore.runs WHERE run_id = $1 AND epoch = $2", [this.runId, this.epoch]);
          if (still.rows.length === 0 && !this.fenced) {
            this.fenced = true;
            this.onFenced();
          }
        }
        return;
      } catch (e) {
        // PostgreSQL restarting: a few tries, then the events of this batch are reported lost.
        if (attempt >= 4) {
          this.onError(e);
          return;
        }
        await new Promise((r) => setTimeout(r, 250 * (attempt + 1)));
      }
    }
  }
}

/** What {@link clusterEventStream} needs of the cluster node. */
export interface EventSource {
  pool: Pool;
  pollMs: number;
  /** Wake `fn` when the run's events are notified; returns the unsubscribe. */
  onEvents(runId: string, fn: () => void): () => void;
}

/**
 * The SSE stream of a cluster run, read from the table (see the module
 * notes). `after`: replay the rows after this seq (0: from the start).
 */
export function clusterEventStream(
  src: EventSource,
  runId: string,
  options: { after: number; heartbeatMs: number; signal?: AbortSignal },
): ReadableStream<Uint8Array> {
  const enc = new TextEncoder();
  let closed = false;
  let last = options.after;
  let wake: (() => void) | null = null;
  let off: () => void = () => {};
  let heartbeat: ReturnType<typeof setInterval> | undefined;
  const stop = () => {
    closed = true;
    off();
    if (heartbeat !== undefined) clearInterval(heartbeat);
    wake?.();
  };
  return new ReadableStream<Uint8Array>({
    start(c) {
      options.signal?.addEventListener("abort", stop, { once: true });
      off = src.onEvents(runId, () => wake?.());
      c.enqueue(enc.encode(`: run ${runId}\n\n`));
      heartbeat = setInterval(() => {
        if (!closed) {
          try {
            c.enqueue(enc.encode(": heartbeat\n\n"));
          } catch {
            stop();
          }
        }
      }, options.heartbeatMs);
      void (async () => {
        let failures = 0;
        while (!closed) {
          let rows: { seq: string; item: RunStreamItem | { type: "cluster"; event: { kind: string } } }[];
          let status: string | null;
          try {
            const r = await src.pool.query(
              "SELECT seq, item FROM agentcore.run_events WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT 500",
              [runId, last],
            );
            rows = r.rows;
            const s = await src.pool.query("SELECT status FROM agentcore.runs WHERE run_id = $1", [runId]);
            status = (s.rows[0]?.status as string | undefined) ?? null;
            failures = 0;
          } catch {
            // the store is away (a restart): try again after the poll period, a minute at most
            if (++failures > Math.max(3, Math.ceil(60_000 / src.pollMs))) break;
            rows = [];
            status = "running";
          }
          for (let i = 0; i < rows.length && !closed; i++) {
            const { seq, item } = rows[i]!;
            last = Number(seq);
            let m: Uint8Array | null = null;
            if (item.type === "agent") m = sseMessage(item.event.kind, item.event, last);
            else if (item.type === "approval") m = sseMessage(item.notice.kind, item.notice, last);
            else if (item.type === "cluster") m = sseMessage(item.event.kind, item.event, last);
            else if (item.type === "idle") {
              // the end of an operation: the stream's end when nothing follows and the run rests
              if (i === rows.length - 1 && rows.length < 500 && status !== "running" && status !== "queued") {
                try {
                  c.enqueue(sseMessage("done", { run_id: runId, status: item.status, result: item.result }));
                  c.close();
                } catch {
                  /* gone */
                }
                stop();
                return;
              }
            }
            if (m !== null) {
              try {
                c.enqueue(m);
              } catch {
                stop();
              }
            }
          }
          if (closed) break;
          if (rows.length === 500) continue;
          if (status !== null && status !== "running" && status !== "queued" && rows.length === 0) {
            // a run that rests with no idle row after `last` (failed before it ran): done now
            try {
              const r = await src.pool.query("SELECT status, result, error FROM agentcore.runs WHERE run_id = $1", [runId]);
              c.enqueue(sseMessage("done", { run_id: runId, status: r.rows[0]?.status ?? status, result: r.rows[0]?.result ?? null }));
              c.close();
            } catch {
              /* gone */
            }
            stop();
            return;
          }
          await new Promise<void>((res) => {
            const t = setTimeout(() => {
              wake = null;
              res();
            }, src.pollMs);
            wake = () => {
              clearTimeout(t);
              wake = null;
              res();
            };
          });
        }
        try {
          c.close();
        } catch {
          /* closed */
        }
      })();
    },
    cancel() {
      stop();
    },
  });
}
