// One contract for the execution history, run against every implementation:
// the JSONL log (HistoryLog + readHistory) and the PostgreSQL store's history
// table (PostgresSessionStorage.history()). The same records appended, the
// same queries (tool, failed or not, since, together) give the same records
// in the order they were appended; a query matching nothing gives none; an
// invalid `since` is refused the same way.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as path from "node:path";
import { HistoryLog, type HistoryFilter, type HistoryRecord, readHistory } from "../../src/runtime/history.ts";
import { PostgresSessionStorage } from "../../src/session/postgres/storage.ts";
import { createDatabase, dropDatabase, skipMessage } from "../support/postgres.ts";
import { tmp } from "../support/tmp.ts";

interface HistoryUnderTest {
  append(r: HistoryRecord): Promise<void>;
  read(f?: HistoryFilter): Promise<HistoryRecord[]>;
  close(): Promise<void>;
}

const T0 = Date.parse("2026-12-01T10:00:00.000Z");
const at = (minutes: number) => new Date(T0 + minutes * 60_000).toISOString();
const record = (i: number, tool: string, success: boolean, minutes: number): HistoryRecord => ({
  v: 1,
  time: at(minutes),
  tool,
  call_id: `c${i}`,
  effect: tool === "write_file" ? "side_effecting" : "read_only",
  decision: success ? { action: "allow", by: "rule:reads" } : { action: "deny", by: "default" },
  duration_ms: 1.5 + i,
  success,
  code: success ? null : "DENIED",
  args_sha256: "0".repeat(63) + String(i % 10),
  run_id: `run-${i % 2}`,
  agent_id: "a1",
  turn: i,
});
const RECORDS = [
  record(1, "read_file", true, 0),
  record(2, "write_file", false, 1),
  record(3, "read_file", false, 2),
  record(4, "grep", true, 3),
  record(5, "write_file", true, 4),
  record(6, "read_file", true, 5),
];
const ids = (rs: HistoryRecord[]) => rs.map((r) => r.call_id);

function historyContract(name: string, open: () => Promise<HistoryUnderTest | null>) {
  describe(`history contract: ${name}`, () => {
    let h: HistoryUnderTest | null = null;
    beforeAll(async () => {
      h = await open();
      if (h === null) console.warn(`skipping the ${name} history contract: ${skipMessage}`);
    });
    afterAll(async () => h?.close());

    test("the records come back whole, in the order they were appended", async () => {
      if (h === null) return;
      for (const r of RECORDS) await h.append(r);
      expect(await h.read()).toEqual(RECORDS);
    });

    test("each filter, and the filters together", async () => {
      if (h === null) return;
      expect(ids(await h.read({ tool: "read_file" }))).toEqual(["c1", "c3", "c6"]);
      expect(ids(await h.read({ failed: true }))).toEqual(["c2", "c3"]);
      expect(ids(await h.read({ failed: false }))).toEqual(["c1", "c4", "c5", "c6"]);
      expect(ids(await h.read({ since: new Date(at(3)) }))).toEqual(["c4", "c5", "c6"]);
      expect(ids(await h.read({ tool: "write_file", failed: false, since: new Date(at(1)) }))).toEqual(["c5"]);
      expect(await h.read({ tool: "exec" })).toEqual([]);
      expect(await h.read({ since: new Date(at(60)) })).toEqual([]);
    });

    test("an invalid since is refused", async () => {
      if (h === null) return;
      await expect(h.read({ since: new Date("not a date") })).rejects.toThrow("filter.since is an invalid Date");
    });
  });
}

historyContract("JSONL log", async () => {
  const file = path.join(tmp("agentcore-history-contract-"), "history.jsonl");
  const log = HistoryLog.open(file);
  return {
    append: async (r) => log.append(r),
    read: async (f) => readHistory(file, f),
    close: async () => log.close(),
  };
});

historyContract("PostgreSQL store", async () => {
  const db = await createDatabase();
  if (db === null) return null;
  const storage = await PostgresSessionStorage.open(db);
  const history = storage.history();
  return {
    append: (r) => history.append(r),
    read: (f) => history.read(f),
    close: async () => {
      await storage.close();
      await dropDatabase(db);
    },
  };
});
