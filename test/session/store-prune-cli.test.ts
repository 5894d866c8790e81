// `agentcore store prune` through the compiled binary against a real
// PostgreSQL server (test/support/postgres.ts): the rows of cluster runs that
// finished before --older-than (default 30d) go with their events, commands
// and approvals; --dry-run prints the same counts and changes nothing;
// queued, running and suspended runs and every session record stay; the
// refusals (a JSONL folder, a bad duration, a misspelt subcommand, prune's
// flags given to migrate) exit 2 and say why. Today's main has no `store
// prune`: every case fails.
import { afterAll, describe, expect, test } from "bun:test";
import pg from "pg";
import { binaryPath } from "../support/binary.ts";
import { createDatabase, dropDatabase, pgUrl, skipMessage } from "../support/postgres.ts";
import { tmp } from "../support/tmp.ts";

const server = await pgUrl();
if (server === null) console.log(`skip: agentcore store prune against PostgreSQL: ${skipMessage}`);
const databases: string[] = [];
afterAll(async () => {
  for (const d of databases) await dropDatabase(d).catch(() => {});
});

function agentcore(args: string[], env: Record<string, string> = {}) {
  const p = Bun.spawnSync([binaryPath(), ...args], {
    cwd: tmp("agentcore-store-prune-"),
    stdout: "pipe",
    stderr: "pipe",
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
  });
  return { code: p.exitCode, stdout: p.stdout.toString(), stderr: p.stderr.toString() };
}

/** A migrated database with runs of every status and age (days since their last change), and a session record. */
async function seeded(): Promise<{ db: string; c: pg.Client }> {
  const db = (await createDatabase())!;
  databases.push(db);
  expect(agentcore(["store", "migrate", "--store", db]).code).toBe(0);
  const c = new pg.Client({ connectionString: db });
  c.on("error", () => {});
  await c.connect();
  const runs: [string, string, number][] = [
    ["old_idle", "idle", 40],
    ["old_failed", "failed", 31],
    ["mid_idle", "idle", 10],
    ["new_idle", "idle", 0],
    ["old_running", "running", 40],
    ["old_suspended", "suspended", 40],
    ["old_queued", "queued", 40],
  ];
  for (const [id, status, days] of runs) {
    await c.query(
      `INSERT INTO agentcore.runs (run_id, session_id, branch, request, status, created_at, updated_at)
       VALUES ($1, $2, 'main', '{}', $3, now() - make_interval(days => $4), now() - make_interval(days => $4))`,
      [id, `s-${id}`, status, days],
    );
    for (let seq = 1; seq <= 3; seq++)
      await c.query("INSERT INTO agentcore.run_events (run_id, seq, item) VALUES ($1, $2, '{}')", [id, seq]);
    await c.query("INSERT INTO agentcore.run_commands (run_id, target, kind, body) VALUES ($1, 'n', 'steer', '{}')", [id]);
    await c.query("INSERT INTO agentcore.run_approvals (approval_id, run_id, owner, approval) VALUES ($1, $2, 'n', '{}')", [`a-${id}`, id]);
  }
  // the old run's session, with a record: it stays
  await c.query("INSERT INTO agentcore.sessions (session_id, created_at) VALUES ('s-old_idle', now() - interval '40 days')");
  await c.query(
    `INSERT INTO agentcore.records (session_id, revision, record_id, branch_id, type, line, time)
     VALUES ('s-old_idle', 1, 'rec-1', 'main', 'session', '{}', now() - interval '40 days')`,
  );
  return { db, c };
}

async function tables(c: pg.Client): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const t of ["runs", "run_events", "run_commands", "run_approvals", "sessions", "records"])
    out[t] = Number((await c.query(`SELECT count(*)::int AS n FROM agentcore.${t}`)).rows[0].n);
  return out;
}

const runIds = async (c: pg.Client) => (await c.query("SELECT run_id FROM agentcore.runs ORDER BY run_id")).rows.map((r) => r.run_id);

describe.skipIf(server === null)("agentcore store prune (the binary, a real server)", () => {
  test("--dry-run prints the counts the prune then removes, and changes nothing; queued, running, suspended and fresh runs stay", async () => {
    const { db, c } = await seeded();
    const before = await tables(c);
    const dry = agentcore(["store", "prune", "--store", db, "--dry-run", "--json"]);
    expect(dry.stderr).toBe("");
    expect(dry.code).toBe(0);
    const expected = { runs: 2, run_events: 6, run_commands: 2, run_approvals: 2 };
    expect(JSON.parse(dry.stdout)).toEqual({ store: new URL(db).toString(), older_than: "30d", dry_run: true, removed: expected });
    expect(await tables(c)).toEqual(before);

    const real = agentcore(["store", "prune"], { AGENTCORE_STORE: db });
    expect(real.stderr).toBe("");
    expect(real.code).toBe(0);
    expect(real.stdout.trim()).toBe(
      `${new URL(db).toString()}: removed 2 runs, 6 run events, 2 run commands, 2 run approvals (runs finished more than 30d ago)`,
    );
    const after = await tables(c);
    expect(after).toEqual({
      ...before,
      runs: before.runs! - 2,
      run_events: before.run_events! - 6,
      run_commands: before.run_commands! - 2,
      run_approvals: before.run_approvals! - 2,
    });
    expect(await runIds(c)).toEqual(["mid_idle", "new_idle", "old_queued", "old_running", "old_suspended"]);

    // a shorter age takes the ten-day-old run too, never the live ones; again: nothing left to take
    const week = agentcore(["store", "prune", "--store", db, "--older-than", "7d", "--json"]);
    expect(week.code).toBe(0);
    expect(JSON.parse(week.stdout).removed).toEqual({ runs: 1, run_events: 3, run_commands: 1, run_approvals: 1 });
    expect(await runIds(c)).toEqual(["new_idle", "old_queued", "old_running", "old_suspended"]);
    const again = agentcore(["store", "prune", "--store", db, "--older-than", "7d", "--json"]);
    expect(JSON.parse(again.stdout).removed).toEqual({ runs: 0, run_events: 0, run_commands: 0, run_approvals: 0 });
    expect(before.sessions).toBe(1);
    expect(before.records).toBe(1);
    expect((await tables(c)).sessions).toBe(1);
    expect((await tables(c)).records).toBe(1);
    await c.end();
  }, 120_000);

  test("refusals exit 2 and say why: a JSONL folder, a bad --older-than, a misspelt subcommand, prune's flags on migrate", () => {
    const folder = agentcore(["store", "prune", "--store", "./sessions"]);
    expect(folder.code).toBe(2);
    expect(folder.stdout).toBe("");
    expect(folder.stderr).toContain("is not a PostgreSQL store");
    expect(folder.stderr).toContain("a JSONL folder has no cluster runs to prune");
    for (const bad of ["30", "30x", "-1d", "0d", "1.5d", ""]) {
      const r = agentcore(["store", "prune", "--store", "postgres://nobody@127.0.0.1:1/none", "--older-than", bad]);
      expect({ bad, code: r.code }).toEqual({ bad, code: 2 });
      expect(r.stderr).toContain(`--older-than must be a number and a unit s, m, h or d`);
    }
    const typo = agentcore(["store", "prun"]);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain("did you mean 'prune'?");
    const misplaced = agentcore(["store", "migrate", "--dry-run", "--store", "postgres://nobody@127.0.0.1:1/none"]);
    expect(misplaced.code).toBe(2);
    expect(misplaced.stderr).toContain("--dry-run belongs to store prune");
    const help = agentcore(["store", "--help"]);
    expect(help.code).toBe(0);
    for (const flag of ["store prune", "--older-than AGE", "--dry-run"]) expect(help.stdout).toContain(flag);
    const own = agentcore(["store", "prune", "--help"]);
    expect(own.code).toBe(0);
    expect(own.stdout).toStartWith("Usage: agentcore store prune [--store URL] [--older-than AGE] [--dry-run] [--json]");
    expect(own.stdout).toContain("sessions are never pruned");
  });
});
