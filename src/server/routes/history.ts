/**
 * `GET /v1/history`: the execution history (the config's `history` log, or
 * the PostgreSQL store's history table), read only, newest last:
 * `{enabled, records}`. Query: `tool`, `failed`
 * (`true`/`false`), `since` (ISO 8601), `limit` (the last N; default 1000, at
 * most 10000). A daemon without a history log answers `{"enabled": false,
 * "records": []}`.
 *
 * @module
 */
import { existsSync } from "node:fs";
import { HttpError, jsonResponse } from "../errors.ts";
import { readHistory, type HistoryFilter, type HistoryRecord } from "../../runtime/history.ts";
import { deadline } from "../middleware/deadline.ts";
import { subApp, type AppDeps } from "./deps.ts";

/** A history that can be queried (the PostgreSQL store's: `PostgresHistory`). */
export interface HistoryReader {
  read(filter: HistoryFilter): Promise<HistoryRecord[]>;
}

/** The history sub-app; `source` is the daemon's history log file, or the store's history (undefined: none). */
export function historyRoutes(deps: AppDeps, source: string | HistoryReader | undefined) {
  return subApp().get("/history", deadline(deps.deadlines), async (c) => {
    if (source === undefined) return jsonResponse({ enabled: false, records: [] });
    const filter: HistoryFilter = {};
    const tool = c.req.query("tool");
    if (tool !== undefined && tool !== "") filter.tool = tool;
    const failed = c.req.query("failed");
    if (failed !== undefined) {
      if (failed !== "true" && failed !== "false")
        throw new HttpError(400, "INVALID_REQUEST", "the query parameter failed must be true or false", { query: "failed" });
      filter.failed = failed === "true";
    }
    const since = c.req.query("since");
    if (since !== undefined) {
      const d = new Date(since);
      if (Number.isNaN(d.getTime()))
        throw new HttpError(400, "INVALID_REQUEST", "the query parameter since must be an ISO 8601 time, like 2026-12-01T09:00:00Z", {
          query: "since",
        });
      filter.since = d;
    }
    const rawLimit = c.req.query("limit") ?? "1000";
    if (!/^\d{1,5}$/.test(rawLimit) || Number(rawLimit) < 1 || Number(rawLimit) > 10_000)
      throw new HttpError(400, "INVALID_REQUEST", "the query parameter limit must be an integer from 1 to 10000", { query: "limit" });
    const records = typeof source === "string" ? (existsSync(source) ? readHistory(source, filter) : []) : await source.read(filter);
    return jsonResponse({ enabled: true, records: records.slice(-Number(rawLimit)) });
  });
}
