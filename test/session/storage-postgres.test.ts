// The storage contract (test/support/storage-contract.ts) for PostgresSessionStorage
// against a real PostgreSQL server (test/support/postgres.ts: AGENTCORE_TEST_PG,
// or a private cluster; required under CI=true), a fresh database per test;
// "another instance" is a second storage with its own pool, as another daemon
// has. Then what only a shared database has: two daemons appending to one
// branch at once, leases that expire and are taken over, a lease left by a
// SIGKILLed process, records that cannot be changed in place, and the
// migrations.
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { LATEST_VERSION, MIGRATIONS, migrate, MigrationError, type Migration } from "../../src/session/postgres/migrations.ts";
import { PostgresSessionStorage, redactUrl } from "../../src/session/postgres/storage.ts";
import { MemorySessionStorage } from "../../src/session/journal.ts";
import {
  SessionBranchBusyError,
  SessionConflictError,
  SessionNotFoundError,
  SessionRunActiveError,
  SessionSerializationError,
  SessionStorageError,
  SessionValidationError,
} from "../../src/session/index.ts";
import { createDatabase, dropDatabase, pgUrl, skipMessage } from "../support/postgres.ts";
import { tmp } from "../support/tmp.ts";
import { draft, storageContract, twoRuns } from "../support/storage-contract.ts";

const server = await pgUrl();
if (server === null) console.log(`skip: the PostgreSQL store tests: ${skipMessage}`);

const databases: string[] = [];
afterAll(async () => {
  for (const db of databases) await dropDatabase(db).catch(() => {});
});
async function database(): Promise<string> {
  const db = (await createDatabase())!;
  databases.push(db);
  return db;
}

const open: PostgresSessionStorage[] = [];
async function storage(url: string, options: Parameters<typeof PostgresSessionStorage.open>[1] = {}): Promise<PostgresSessionStorage> {
  const s = await PostgresSessionStorage.open(url, options);
  open.push(s);
  return s;
}
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

async function sql<T = Record<string, unknown>>(url: string, text: string, values: unknown[] = []): Promise<T[]> {
  const { default: pg } = await import("pg");
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(text, values)).rows as T[];
  } finally {
    await c.end();
  }
}

if (server !== null) {
  storageContract("postgres", {
    open: async () => {
      const db = await database();
      const first = await PostgresSessionStorage.open(db);
      return { storage: first, another: () => PostgresSessionStorage.open(db) };
    },
    close: (s) => (s as PostgresSessionStorage).close(),
  });
}

describe.skipIf(server === null)("postgres: several daemons on one database", () => {
  test("two storages on separate pools append to the same branch at once with checkHead: exactly one wins, the other gets SessionConflictError", async () => {
    const db = await database();
    const a = await storage(db);
    const b = await storage(db);
    let head = (await a.append(draft("run_started", { run_id: "r1", task: "t" }, 1))).record_id;
    for (let round = 0; round < 25; round++) {
      const msg = (who: string) =>
        draft("message_appended", { run_id: "r1", message: { role: "assistant", content: `${who} ${round}` } }, round + 2);
      const outcomes = await Promise.allSettled([
        a.append(msg("a"), { expectedHeadId: head, checkHead: true }),
        b.append(msg("b"), { expectedHeadId: head, checkHead: true }),
      ]);
      const won = outcomes.filter((o) => o.status === "fulfilled");
      const lost = outcomes.filter((o) => o.status === "rejected");
      expect({ round, won: won.length }).toEqual({ round, won: 1 });
      expect((lost[0] as PromiseRejectedResult).reason).toBeInstanceOf(SessionConflictError);
      head = (won[0] as PromiseFulfilledResult<{ record_id: string }>).value.record_id;
    }
    const records = await (await storage(db)).records("s1");
    expect(records.map((r) => r.revision)).toEqual(Array.from({ length: 26 }, (_, i) => i + 1));
    for (let i = 1; i < records.length; i++) expect(records[i]!.parent_id).toBe(records[i - 1]!.record_id);
  });

  test("without checkHead, concurrent appends from two pools get contiguous revisions (the session row orders them)", async () => {
    const db = await database();
    const a = await storage(db);
    const b = await storage(db);
    await a.append(draft("run_started", { run_id: "r1", task: "t" }, 1));
    const each = 40;
    const write = (s: PostgresSessionStorage, who: string) =>
      Promise.all(
        Array.from({ length: each }, (_, i) =>
          s.append(draft("message_appended", { run_id: "r1", message: { role: "assistant", content: `${who}${i}` } }, 2)),
        ),
      );
    await Promise.all([write(a, "a"), write(b, "b")]);
    const records = await (await storage(db)).records("s1");
    expect(records.map((r) => r.revision)).toEqual(Array.from({ length: 1 + 2 * each }, (_, i) => i + 1));
    const rows = await sql<{ last_revision: string }>(db, "SELECT last_revision FROM agentcore.sessions WHERE session_id = 's1'");
    expect(Number(rows[0]!.last_revision)).toBe(1 + 2 * each);
  });

  test("two processes (two daemons) append against the same head at once: one wins, the other gets SessionConflictError", async () => {
    const db = await database();
    const s = await storage(db);
    const head = (await s.append(draft("run_started", { run_id: "r1", task: "t" }, 1))).record_id;
    const dir = tmp("agentcore-pg-race-");
    const go = path.join(dir, "go");
    const script = path.join(dir, "race.ts");
    fs.writeFileSync(
      script,
      `import { existsSync } from "node:fs";
import { PostgresSessionStorage } from ${JSON.stringify(path.resolve(import.meta.dir, "../../src/session/postgres/storage.ts"))};
const [url, head, who, go] = process.argv.slice(2);
const s = await PostgresSessionStorage.open(url);
await s.head("s1"); // connected and cached: the race is the append alone
console.log("ready");
while (!existsSync(go)) await Bun.sleep(2);
try {
  await s.append({ session_id: "s1", agent_id: "agent-a", branch_id: "main", sequence: 2, type: "message_appended", data: { run_id: "r1", message: { role: "assistant", content: who } } }, { expectedHeadId: head, checkHead: true });
  console.log("won");
} catch (e) {
  console.log(e.name);
}
await s.close();
`,
    );
    const kids = ["a", "b"].map((who) => Bun.spawn([process.execPath, script, db, head, who, go], { stdout: "pipe", stderr: "inherit" }));
    const readers = kids.map((k) => k.stdout.getReader());
    for (const r of readers) expect(new TextDecoder().decode((await r.read()).value)).toContain("ready");
    fs.writeFileSync(go, "");
    const said: string[] = [];
    for (const [i, r] of readers.entries()) {
      let text = "";
      for (;;) {
        const chunk = await r.read();
        if (chunk.done) break;
        text += new TextDecoder().decode(chunk.value);
      }
      await kids[i]!.exited;
      said.push(text.trim());
    }
    expect(said.sort()).toEqual(["SessionConflictError", "won"]);
    expect((await (await storage(db)).records("s1")).map((r) => r.revision)).toEqual([1, 2]);
  });

  test("a lease is renewed while held; an expired one (its holder stopped renewing) is taken over; owner answers across instances", async () => {
    const db = await database();
    const a = await storage(db, { leaseMs: 600 });
    const b = await storage(db, { leaseMs: 600 });
    const claim = await a.claimBranch("s", "main", "daemon a");
    await a.markRunLive("s", "run-1");
    await Bun.sleep(1500); // well past one lease: a renews it
    expect(await b.claimBranch("s", "main").catch((e) => e)).toBeInstanceOf(SessionBranchBusyError);
    expect(await b.branchOwner("s", "main")).toBe(process.pid);
    expect(await b.runOwner("s", "run-1")).toBe(process.pid);
    claim.release();
    // a holder on another machine that stopped renewing: live until its expiry, then stale
    await sql(
      db,
      "UPDATE agentcore.branch_claims SET holder_id = 'elsewhere:1:x', host = 'elsewhere', pid = 1, expires_at = now() + interval '400 milliseconds' WHERE session_id = 's'",
    );
    await sql(
      db,
      "INSERT INTO agentcore.branch_claims (session_id, branch_id, holder_id, holder, pid, host, expires_at) VALUES ('s', 'main', 'elsewhere:1:x', 'agentcore serve', 1, 'elsewhere', now() + interval '400 milliseconds') ON CONFLICT DO NOTHING",
    );
    await sql(
      db,
      "UPDATE agentcore.run_marks SET holder_id = 'elsewhere:1:x', host = 'elsewhere', pid = 1, expires_at = now() + interval '400 milliseconds'",
    );
    const busy = await b.claimBranch("s", "main").catch((e) => e);
    expect(busy).toBeInstanceOf(SessionBranchBusyError);
    expect(busy.message).toContain("in use by process 1 (agentcore serve on elsewhere");
    expect(await b.runOwner("s", "run-1")).toBe(1);
    let taken = null;
    for (let i = 0; i < 200 && taken === null; i++) {
      taken = await b.claimBranch("s", "main", "daemon b").catch(() => null);
      if (taken === null) await Bun.sleep(20);
    }
    expect(taken).not.toBeNull();
    let owner = await b.runOwner("s", "run-1");
    for (let i = 0; i < 200 && owner !== null; i++) {
      await Bun.sleep(20);
      owner = await b.runOwner("s", "run-1");
    }
    expect(owner).toBeNull();
    const rows = await sql<{ holder_id: string }>(db, "SELECT holder_id FROM agentcore.branch_claims");
    expect(rows).toEqual([{ holder_id: b.holderId }]);
    taken!.release();
  });

  test("a SIGKILLed process leaves its leases: stale at once on the same host (its pid is gone), so nothing blocks forever", async () => {
    const db = await database();
    const dir = tmp("agentcore-pg-kill-");
    const script = path.join(dir, "hold.ts");
    fs.writeFileSync(
      script,
      `import { PostgresSessionStorage } from ${JSON.stringify(path.resolve(import.meta.dir, "../../src/session/postgres/storage.ts"))};
const s = await PostgresSessionStorage.open(process.argv[2], { leaseMs: 3_600_000 });
await s.claimBranch("s", "main", "child");
await s.markRunLive("s", "run-1");
console.log("held");
setInterval(() => {}, 1000);
`,
    );
    const child = Bun.spawn([process.execPath, script, db], { stdout: "pipe", stderr: "inherit" });
    const reader = child.stdout.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toContain("held");
    const b = await storage(db);
    expect(await b.branchOwner("s", "main")).toBe(child.pid);
    expect(await b.claimBranch("s", "main").catch((e) => e)).toBeInstanceOf(SessionBranchBusyError);
    child.kill("SIGKILL");
    await child.exited;
    // the lease has an hour to run, but its holder is gone
    expect(await b.branchOwner("s", "main")).toBeNull();
    expect(await b.runOwner("s", "run-1")).toBeNull();
    (await b.claimBranch("s", "main", "after")).release();
  });
});

describe.skipIf(server === null)("postgres: records are never changed in place", () => {
  test("UPDATE, DELETE and TRUNCATE of records are refused by the database; the journal's lines are exactly the JSONL lines", async () => {
    const db = await database();
    const s = await storage(db);
    await twoRuns(s);
    for (const stmt of [
      "UPDATE agentcore.records SET line = 'x' WHERE revision = 1",
      "DELETE FROM agentcore.records WHERE revision = 6",
      "TRUNCATE agentcore.records",
    ]) {
      const err = await sql(db, stmt).catch((e) => e);
      expect({ stmt, message: String(err?.message) }).toEqual({
        stmt,
        message: expect.stringContaining("agentcore.records is append-only"),
      });
    }
    const rows = await sql<{ line: string; data: unknown; type: string }>(
      db,
      "SELECT line, data, type FROM agentcore.records ORDER BY revision",
    );
    const records = await s.records("s1");
    const { serializeRecord } = await import("../../src/session/journal.ts");
    expect(rows.map((r) => r.line)).toEqual(records.map((r) => serializeRecord(r)));
    expect(rows.map((r) => r.data)).toEqual(records.map((r) => r.data));
    // no UPDATE of records anywhere in the storage's SQL
    const source = fs.readFileSync(path.resolve(import.meta.dir, "../../src/session/postgres/storage.ts"), "utf8");
    expect(source).not.toMatch(/UPDATE\s+agentcore\.records/i);
  });

  test("deleteSession: the one exception of the trigger, whole sessions only; a raw DELETE, another session's, or an UPDATE under the setting are still refused", async () => {
    const db = await database();
    const s = await storage(db);
    await twoRuns(s);
    await s.append(draft("run_started", { run_id: "k", task: "keep" }, 1, "main", "keep"));
    // the setting names another session: refused; an UPDATE is refused even for the named session
    for (const stmt of [
      "BEGIN; SELECT set_config('agentcore.delete_session', 'keep', true); DELETE FROM agentcore.records WHERE session_id = 's1'; COMMIT",
      "BEGIN; SELECT set_config('agentcore.delete_session', 's1', true); UPDATE agentcore.records SET line = 'x' WHERE session_id = 's1'; COMMIT",
      "DELETE FROM agentcore.records WHERE session_id = 's1'",
    ]) {
      const err = await sql(db, stmt).catch((e) => e);
      expect({ stmt, message: String(err?.message) }).toEqual({
        stmt,
        message: expect.stringContaining("agentcore.records is append-only"),
      });
    }
    expect((await s.records("s1")).length).toBe(6);
    // a live claim (another instance's) blocks it; force does not wait for it
    const other = await storage(db);
    const claim = await other.claimBranch("s1", "main", "agentcore chat");
    const busy = await s.deleteSession("s1").catch((e) => e);
    expect(busy).toBeInstanceOf(SessionRunActiveError);
    expect(String(busy.message)).toContain("branch 'main' is held by process");
    claim.release();
    // the release is sent in the background: once it has landed (branchOwner settles
    // this instance's releases first) another instance no longer sees the claim
    expect(await other.branchOwner("s1", "main")).toBeNull();
    expect(await s.deleteSession("s1")).toEqual({ session_id: "s1", records: 6 });
    expect(await s.exists("s1")).toBe(false);
    expect(await other.records("s1")).toEqual([]);
    expect(await s.listSessions()).toEqual(["keep"]);
    expect(s.deleteSession("s1")).rejects.toBeInstanceOf(SessionNotFoundError);
    // the id can be used again, and an instance that had it cached reads the new session
    expect((await other.append(draft("run_started", { run_id: "n", task: "new" }, 1))).revision).toBe(1);
    expect((await s.records("s1")).map((r) => r.data.task)).toEqual(["new"]);
    expect((await sql(db, "SELECT 1 FROM agentcore.run_marks WHERE session_id = 's1'")).length).toBe(0);
  });

  test("a session deleted and made again under the same id by another instance is read afresh, not from the old cache", async () => {
    const db = await database();
    const a = await storage(db);
    const b = await storage(db);
    await twoRuns(a);
    const old = await a.records("s1"); // cached in a
    await b.deleteSession("s1");
    const other = new MemorySessionStorage();
    await twoRuns(other);
    const fresh = await other.records("s1"); // as many records, other ids
    await b.importRecords(fresh);
    expect((await a.records("s1")).map((r) => r.record_id)).toEqual(fresh.map((r) => r.record_id));
    expect(fresh.map((r) => r.record_id)).not.toEqual(old.map((r) => r.record_id));
    // and a writes on top of the new session
    expect((await a.append(draft("run_started", { run_id: "r3", task: "t" }, 1))).parent_id).toBe(fresh.at(-1)!.record_id);
  });

  test("data a jsonb column cannot hold (U+0000 in a string) round-trips through the line; a NUL in a session id is refused clearly", async () => {
    const db = await database();
    const s = await storage(db);
    await s.append(draft("run_started", { run_id: "r1", task: "nul \u0000 here" }, 1));
    const fresh = await storage(db);
    expect((await fresh.records("s1"))[0]!.data.task).toBe("nul \u0000 here");
    expect(await sql(db, "SELECT data FROM agentcore.records")).toEqual([{ data: null }]);
    const err = await s.append(draft("run_started", { run_id: "r1", task: "t" }, 1, "main", "bad\u0000id")).catch((e) => e);
    expect(err).toBeInstanceOf(SessionValidationError);
    expect(err.message).toContain("U+0000");
  });

  test("a record inserted behind the storage's back that breaks the journal is a clear error naming the session and revision", async () => {
    const db = await database();
    const s = await storage(db);
    await twoRuns(s);
    await sql(db, "UPDATE agentcore.sessions SET last_revision = 7 WHERE session_id = 's1'");
    await sql(
      db,
      `INSERT INTO agentcore.records (session_id, revision, record_id, branch_id, type, line) VALUES ('s1', 7, 'zz', 'main', 'run_started', '{"not":"a record"}')`,
    );
    const err = await (await storage(db)).records("s1").catch((e) => e);
    expect(err).toBeInstanceOf(SessionSerializationError);
    expect(err.message).toContain("session 's1'");
    expect(err.message).toContain("revision 7");
  });
});

describe.skipIf(server === null)("postgres: the execution history", () => {
  const rec = (tool: string, time: string, success: boolean, run?: string) => ({
    v: 1 as const,
    time,
    tool,
    call_id: `c-${tool}-${time}`,
    effect: "read_only" as const,
    decision: { action: "allow" as const, by: "rule:0" },
    duration_ms: 1.5,
    success,
    code: success ? null : "TOOL_ERROR",
    args_sha256: "a".repeat(64),
    ...(run !== undefined ? { run_id: run, agent_id: "agent-a", turn: 1 } : {}),
  });

  test("append and read back in order, exactly as the JSONL log holds them, with the filters of agentcore history; append-only", async () => {
    const db = await database();
    const s = await storage(db);
    const h = s.history();
    const { openStore } = await import("../../src/host/store.ts");
    const opened = await openStore(db);
    expect(opened.kind).toBe("postgres");
    expect(opened.history).not.toBeNull();
    await opened.close();
    const records = [
      rec("echo", "2026-11-30T08:00:00.000Z", true, "run-1"),
      rec("read_file", "2026-11-30T09:00:00.000Z", false, "run-1"),
      rec("echo", "2026-11-30T10:00:00.000Z", false),
    ];
    for (const r of records) await h.append(r);
    expect(await h.read()).toEqual(records);
    expect(await h.read({ tool: "echo" })).toEqual([records[0], records[2]]);
    expect(await h.read({ failed: true })).toEqual([records[1], records[2]]);
    expect(await h.read({ failed: false })).toEqual([records[0]]);
    expect(await h.read({ since: new Date("2026-11-30T09:00:00.000Z") })).toEqual([records[1], records[2]]);
    expect(await h.read({ runId: "run-1", failed: true })).toEqual([records[1]]);
    const lines = await sql<{ line: string }>(db, "SELECT line FROM agentcore.history ORDER BY id");
    expect(lines.map((l) => l.line)).toEqual(records.map((r) => JSON.stringify(r)));
    expect(String((await sql(db, "DELETE FROM agentcore.history").catch((e) => e)).message)).toContain("agentcore.history is append-only");
    expect(h.path).toBe(redactUrl(db));
  });
});

describe.skipIf(server === null)("postgres: the history middleware writes to the store", () => {
  test("every call through a runtime with historyMiddleware(storage.history()) is a committed row when dispatch returns", async () => {
    const db = await database();
    const s = await storage(db);
    const { createRuntime } = await import("../../src/runtime/runtime.ts");
    const { historyMiddleware } = await import("../../src/runtime/history.ts");
    const rt = createRuntime({ middleware: [historyMiddleware(s.history())] });
    const ok = await rt.dispatch('{"id":"c1","tool":"echo","arguments":{"message":"hi"}}');
    const bad = await rt.dispatch('{"id":"c2","tool":"read_file","arguments":{"wrong":1}}');
    expect([ok.success, bad.success]).toEqual([true, false]);
    // no wait: the rows are there once dispatch resolved
    const rows = await sql<{ tool: string; call_id: string; success: boolean; code: string | null }>(
      db,
      "SELECT tool, call_id, success, code FROM agentcore.history ORDER BY id",
    );
    expect(rows).toEqual([
      { tool: "echo", call_id: "c1", success: true, code: null },
      { tool: "read_file", call_id: "c2", success: false, code: bad.error!.code },
    ]);
    expect((await s.history().read({ failed: true })).map((r) => r.call_id)).toEqual(["c2"]);
  });
});

describe.skipIf(server === null)("postgres: under Deno", () => {
  test("a Deno process appends through PostgresSessionStorage (pg from node_modules) and this one reads it back", async () => {
    const db = await database();
    const dir = tmp("agentcore-pg-deno-");
    const script = path.join(dir, "deno.ts");
    fs.writeFileSync(
      script,
      `import { PostgresSessionStorage } from ${JSON.stringify(path.resolve(import.meta.dir, "../../src/session/postgres/storage.ts"))};
const s = await PostgresSessionStorage.open(Deno.args[0]);
const r = await s.append({ session_id: "from-deno", agent_id: "agent-a", branch_id: "main", sequence: 1, type: "run_started", data: { run_id: "r1", task: "hi" } });
console.log(r.revision);
await s.close();
`,
    );
    const deno = path.resolve(import.meta.dir, "../../node_modules/.bin/deno");
    const p = Bun.spawnSync([deno, "run", "-A", "--quiet", `--config=${path.resolve(import.meta.dir, "../../deno.json")}`, script, db], {
      cwd: path.resolve(import.meta.dir, "../.."),
      stdout: "pipe",
      stderr: "pipe",
    });
    expect({ code: p.exitCode, out: p.stdout.toString().trim(), err: p.stderr.toString() }).toEqual({ code: 0, out: "1", err: "" });
    expect((await (await storage(db)).records("from-deno")).map((r) => r.data.task)).toEqual(["hi"]);
  });
});

describe.skipIf(server === null)("postgres: migrations", () => {
  test("a fresh database gets every step once, in order; a second run applies nothing; the tables are there", async () => {
    const db = await database();
    const applied: number[][] = [];
    await storage(db, { onMigrate: (r) => applied.push(r.applied.map((m) => m.version)) });
    await storage(db, { onMigrate: (r) => applied.push(r.applied.map((m) => m.version)) });
    expect(applied).toEqual([MIGRATIONS.map((m) => m.version), []]);
    const rows = await sql<{ version: number; name: string }>(db, "SELECT version, name FROM agentcore.schema_migrations ORDER BY version");
    expect(rows.map((r) => [r.version, r.name])).toEqual(MIGRATIONS.map((m) => [m.version, m.name]));
    const tables = await sql<{ table_name: string }>(
      db,
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'agentcore' ORDER BY table_name",
    );
    expect(tables.map((t) => t.table_name)).toEqual([
      "branch_claims",
      "daemon_token",
      "history",
      "records",
      "run_approvals",
      "run_commands",
      "run_events",
      "run_marks",
      "runs",
      "schema_migrations",
      "session_blobs",
      "sessions",
    ]);
  });

  test("four clients migrating one fresh database at once: each step applied exactly once (the advisory lock)", async () => {
    const db = await database();
    const { default: pg } = await import("pg");
    const clients = Array.from({ length: 4 }, () => new pg.Client({ connectionString: db }));
    await Promise.all(clients.map((c) => c.connect()));
    try {
      const results = await Promise.all(clients.map((c) => migrate(c)));
      const all = results.flatMap((r) => r.applied.map((m) => m.version)).sort();
      expect(all).toEqual(MIGRATIONS.map((m) => m.version));
      for (const r of results) expect(r.version).toBe(LATEST_VERSION);
    } finally {
      await Promise.all(clients.map((c) => c.end()));
    }
  });

  test("a database newer than this build is refused, naming the versions, and left as it is", async () => {
    const db = await database();
    await storage(db);
    await sql(db, "INSERT INTO agentcore.schema_migrations (version, name) VALUES (99, 'from the future')");
    const err = await PostgresSessionStorage.open(db).catch((e) => e);
    expect(err).toBeInstanceOf(SessionStorageError);
    expect(err.message).toContain("version(s) 99, newer than this build knows");
    expect(err.message).toContain(`1 to ${LATEST_VERSION}`);
    const { default: pg } = await import("pg");
    const c = new pg.Client({ connectionString: db });
    await c.connect();
    try {
      expect(await migrate(c).catch((e) => e)).toBeInstanceOf(MigrationError);
    } finally {
      await c.end();
    }
    expect((await sql(db, "SELECT version FROM agentcore.schema_migrations")).length).toBe(LATEST_VERSION + 1);
  });

  test("a step that fails is rolled back whole and named; the steps before it stay", async () => {
    const db = await database();
    const steps: Migration[] = [
      ...MIGRATIONS,
      { version: LATEST_VERSION + 1, name: "broken", sql: "CREATE TABLE agentcore.extra (a int); SELECT no_such_function();" },
    ];
    const { default: pg } = await import("pg");
    const c = new pg.Client({ connectionString: db });
    await c.connect();
    try {
      const err = await migrate(c, steps).catch((e) => e);
      expect(err).toBeInstanceOf(MigrationError);
      expect(err.message).toContain(`migration ${LATEST_VERSION + 1} (broken) failed`);
    } finally {
      await c.end();
    }
    expect((await sql(db, "SELECT version FROM agentcore.schema_migrations")).length).toBe(LATEST_VERSION);
    expect(await sql(db, "SELECT to_regclass('agentcore.extra') AS t")).toEqual([{ t: null }]);
  });

  test("migrate: false refuses a database that lacks the tables, saying to run agentcore store migrate", async () => {
    const db = await database();
    const err = await PostgresSessionStorage.open(db, { migrate: false }).catch((e) => e);
    expect(err).toBeInstanceOf(SessionStorageError);
    expect(err.message).toContain("agentcore store migrate");
  });
});

describe("postgres: connection errors", () => {
  test("an unreachable server is a SessionStorageError naming the URL without its password and what to check", async () => {
    // a port nothing listens on: a listener opened and closed again
    const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    const port = probe.port;
    probe.stop(true);
    const err = await PostgresSessionStorage.open(`postgres://agent:s3cret@127.0.0.1:${port}/db`).catch((e) => e);
    expect(err).toBeInstanceOf(SessionStorageError);
    expect(err.message).toContain(`postgres://agent:***@127.0.0.1:${port}/db`);
    expect(err.message).not.toContain("s3cret");
    expect(err.message).toContain("check that the PostgreSQL server is running");
    expect(redactUrl("postgresql://u:p@h/d")).toBe("postgresql://u:***@h/d");
  });

  test.skipIf(server === null)("a database that does not exist says to check the name or create it", async () => {
    const u = new URL(server!);
    u.pathname = "/no_such_db_here";
    const err = await PostgresSessionStorage.open(u.toString()).catch((e) => e);
    expect(err).toBeInstanceOf(SessionStorageError);
    expect(err.message).toContain("no_such_db_here");
    expect(err.message).toContain("check the database name");
  });
});
