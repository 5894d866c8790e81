/**
 * A cluster run's events through PostgreSQL (docs/cluster.md).
 *
 * The owner appends every stream item of the run to
 * `agentcore.run_events(run_id, seq, item)` ({@link EventWriter}: the items
 * of one tick in one statement, in order) and sends
 * `NOTIFY agentcore_run_events, '<run_id>'`. The writer is also the only
 * writer of the run's row after its claim: a status change rides in the
 * statement of the items it goes with (the `idle` item and the row's `idle`,
 * say), so the row and the events commit together, in the order they
 * happened, and the notification (delivered at commit) never announces a
 * row that is not there yet. The statement is fenced: it writes nothing once
 * the run's `epoch` is not the writer's (another daemon took the run over),
 * and the writer then stops its run.
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

/** A status the run's row takes with the items written before it (the writer's only other write). */
export interface RowStatus {
  status: "queued" | "running" | "idle" | "suspended" | "failed";
  /** The run's last result (null: the row keeps the one it has). */
  result: unknown;
  error?: string | null;
}

/** The owner's side: numbered items of one run, and its row's status, flushed once per tick, in order. */
export class EventWriter {
  #seq: number;
  #buffer: { seq: number; item: string }[] = [];
  #status: RowStatus | null = null;
  #tail: Promise<void> = Promise.resolve();
  #scheduled = false;
  fenced = false;
  /** A status change given up after the retries (the store stayed away): the row does not have it. */
  statusLost = false;
  /** The last status change given up, with the items of its batch (what a retry of the job writes again). */
  lost: { status: RowStatus; items: string[] } | null = null;

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

  /**
   * Queue an item, and with it the status its row takes (committed in the
   * same statement, after the items queued before it); returns its seq.
   */
  push(item: RunStreamItem | { type: "cluster"; event: Record<string, unknown> }, status?: RowStatus): number {
    const seq = ++this.#seq;
    this.#buffer.push({ seq, item: jsonbSafe(item) });
    if (status !== undefined) this.#status = status;
    this.#schedule();
    return seq;
  }

  /** Queue a status change of the run's row with no item (committed after the items queued before it). */
  status(status: RowStatus): void {
    this.#status = status;
    this.#schedule();
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setTimeout(() => {
      this.#scheduled = false;
      void this.flush();
    }, 0);
  }

  /** Write what is queued (after the writes before it). Resolves once it is committed. */
  flush(): Promise<void> {
    const next = this.#tail.then(() => this.#write());
    this.#tail = next.catch(() => {});
    return this.#tail;
  }

  async #write(): Promise<void> {
    if ((this.#buffer.length === 0 && this.#status === null) || this.fenced) {
      this.#buffer = [];
      this.#status = null;
      return;
    }
    const batch = this.#buffer;
    const status = this.#status;
    this.#buffer = [];
    this.#status = null;
    const rows = `[${batch.map((b) => `{"seq":${b.seq},"item":${b.item}}`).join(",")}]`;
    const result = status === null || status.result === null || status.result === undefined ? null : jsonbSafe(status.result);
    for (let attempt = 0; ; attempt++) {
      try {
        // One statement, so one transaction: the items, then the row's status, then the notification at commit.
        const r = await this.pool.query(
          `WITH live AS (SELECT 1 FROM agentcore.runs WHERE run_id = $1 AND epoch = $3),
           ins AS (
             INSERT INTO agentcore.run_events (run_id, seq, item)
             SELECT $1, x.seq, x.item FROM jsonb_to_recordset($2::jsonb) AS x(seq bigint, item jsonb)
             WHERE EXISTS (SELECT 1 FROM live)
             ON CONFLICT DO NOTHING RETURNING 1),
           upd AS (
             UPDATE agentcore.runs SET status = $5, result = COALESCE($6::jsonb, result), error = $7, updated_at = now()
             WHERE run_id = $1 AND epoch = $3 AND $5::text IS NOT NULL RETURNING 1)
           SELECT (SELECT count(*) FROM ins)::int AS n, (SELECT count(*) FROM upd)::int AS u, pg_notify($4, $1)
           WHERE EXISTS (SELECT 1 FROM live)`,
          [this.runId, rows, this.epoch, EVENTS_CHANNEL, status?.status ?? null, result, status?.error ?? null],
        );
        if (r.rows.length === 0 && !this.fenced) {
          this.fenced = true;
          this.onFenced();
        }
        return;
      } catch (e) {
        // PostgreSQL restarting: a few tries, then the events (and status) of this batch are reported lost.
        if (attempt >= 4) {
          if (status !== null) {
            this.statusLost = true;
            this.lost = { status, items: batch.map((b) => b.item) };
          }
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
  /** A notification came since the last read began: read again before waiting (it is not lost while a query runs). */
  let notified = false;
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
      off = src.onEvents(runId, () => {
        notified = true;
        wake?.();
      });
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
          notified = false;
          try {
            // The row first: a status that rests was committed with (or after) the rows that led to it, which the read after it sees.
            const s = await src.pool.query("SELECT status FROM agentcore.runs WHERE run_id = $1", [runId]);
            status = (s.rows[0]?.status as string | undefined) ?? null;
            const r = await src.pool.query(
              "SELECT seq, item FROM agentcore.run_events WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT 500",
              [runId, last],
            );
            rows = r.rows;
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
          if (rows.length === 500 || notified) continue;
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
