/**
 * The execution history in PostgreSQL: table `agentcore.history` (migration
 * 3), one row per tool call, append-only (a trigger refuses UPDATE, DELETE
 * and TRUNCATE). `line` holds the record exactly as the JSONL log
 * (`src/runtime/history.ts`) would write it; the columns beside it (time,
 * tool, success, run, agent) are what `agentcore history` filters on.
 *
 * @module
 */
import type { Queryable } from "./migrations.ts";
import type { HistoryFilter, HistoryRecord } from "../../runtime/history.ts";
import { SessionStorageError } from "../types.ts";
import { isConnectionError, redactUrl, storageError } from "./errors.ts";

/** The history of a PostgreSQL store; made by `PostgresSessionStorage.history()`. */
export class PostgresHistory {
  readonly #pool: Queryable;
  readonly #url: string;

  /** `pool`: the storage's `pg` Pool (anything with `query`; the declared type keeps `pg`'s types out of the package's declarations). */
  constructor(pool: Queryable, url: string) {
    this.#pool = pool;
    this.#url = url;
  }

  /** Where the history is, for messages: the store's URL without its password. */
  get path(): string {
    return redactUrl(this.#url);
  }

  /** Append one record; resolves once it is committed. */
  async append(record: HistoryRecord): Promise<void> {
    const line = JSON.stringify(record);
    if (line.includes("\\u0000")) throw new SessionStorageError("a history record cannot hold U+0000 in PostgreSQL");
    try {
      await this.#pool.query(
        `INSERT INTO agentcore.history (time, tool, call_id, effect, success, code, duration_ms, run_id, agent_id, line)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
        [
          record.time,
          record.tool,
          record.call_id,
          record.effect,
          record.success,
          record.code,
          record.duration_ms,
          record.run_id ?? null,
          record.agent_id ?? null,
          line,
        ],
      );
    } catch (e) {
      throw storageError(this.#url, "cannot append to the history", e);
    }
  }

  /** The records matching `filter`, oldest first (in the order they were appended). */
  async read(filter: HistoryFilter & { runId?: string } = {}): Promise<HistoryRecord[]> {
    const where: string[] = [];
    const values: unknown[] = [];
    if (filter.tool !== undefined) {
      values.push(filter.tool);
      where.push(`tool = $${values.length}`);
    }
    if (filter.since !== undefined) {
      if (Number.isNaN(filter.since.getTime())) throw new RangeError("filter.since is an invalid Date");
      values.push(filter.since.toISOString());
      where.push(`time >= $${values.length}`);
    }
    if (filter.failed !== undefined) {
      values.push(!filter.failed);
      where.push(`success = $${values.length}`);
    }
    if (filter.runId !== undefined) {
      values.push(filter.runId);
      where.push(`run_id = $${values.length}`);
    }
    // A read: a lost connection (a server restart) is retried once, on a new one.
    for (let attempt = 0; ; attempt++) {
      try {
        const r = await this.#pool.query(
          `SELECT line FROM agentcore.history${where.length > 0 ? ` WHERE ${where.join(" AND ")}` : ""} ORDER BY id`,
          values,
        );
        return (r.rows as { line: string }[]).map((row) => JSON.parse(row.line) as HistoryRecord);
      } catch (e) {
        if (attempt > 0 || !isConnectionError(e)) throw storageError(this.#url, "cannot read the history", e);
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  }
}
