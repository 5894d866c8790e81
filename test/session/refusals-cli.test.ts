// A refused command changes nothing (issue 30): every refusal of every
// state-changing CLI command (`agent --session` with a task, --continue or
// --resume, and each `sessions` subcommand that writes, `store migrate`)
// exits non-zero and leaves the store as it was: the JSONL folder byte for
// byte, and (with a PostgreSQL server) every record of a PostgreSQL store
// given with --store. The commands run from source as real child processes; a
// branch in use is held by a real `agent` process waiting on its model. A run
// a crash left open is recovered only by a command that is accepted: a
// refused `--resume` writes nothing, an accepted one closes it and goes on.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REPO_ROOT } from "../support/paths.ts";
import { freshDatabase } from "../support/postgres.ts";
import { folderSnapshot, storeSnapshot } from "../support/snapshot.ts";
import { JsonlSessionStorage, type JournalStorage } from "../../src/session/index.ts";
import { PostgresSessionStorage } from "../../src/session/postgres/storage.ts";
import { crashedRun, suspendedRun } from "../support/journals.ts";
import { SESSIONS_SUBCOMMANDS } from "../../src/cli/args.ts";

const MAIN = join(REPO_ROOT, "src/cli/main.ts");
const dir = mkdtempSync(join(tmpdir(), "agentcore-refusals-cli-"));
const sessions = join(dir, ".agentcore", "sessions");
const storage = new JsonlSessionStorage(sessions);
const ENV = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir };
let busy: ReturnType<typeof Bun.spawn> | null = null;
/** A database of this file's own (null without a PostgreSQL server: that walk is skipped). */
const pgDb = await freshDatabase();

function cli(...args: string[]) {
  const p = Bun.spawnSync([process.execPath, MAIN, ...args], { cwd: dir, stdout: "pipe", stderr: "pipe", stdin: "ignore", env: ENV });
  return { code: p.exitCode, stdout: p.stdout.toString(), stderr: p.stderr.toString() };
}

function file(name: string, text: string): string {
  const f = join(dir, name);
  writeFileSync(f, text);
  return f;
}

let ok = "";
let slow = "";
/** A store's sessions for the walk (`store`: the --store flags of every command; none for the JSONL folder); resolves to the agent holding `busy`. */
async function seed(s: JournalStorage, store: string[]): Promise<ReturnType<typeof Bun.spawn>> {
  expect(cli("agent", "--no-plan", "--session", "done", "--script", ok, "hi", ...store).code).toBe(0);
  await suspendedRun(s, "agentcore-cli", "waiting", "write_file", false);
  await suspendedRun(s, "agentcore-cli", "answered", "write_file", true);
  await crashedRun(s, "agentcore-cli", "crashed", "write_file");
  await crashedRun(s, "agentcore-cli", "crashed-approval", "write_file", true);
  await crashedRun(s, "agentcore-cli", "crashed-readonly", "echo");
  // a branch in use: an agent waiting on its model
  const p = Bun.spawn([process.execPath, MAIN, "agent", "--no-plan", "--session", "busy", "--script", slow, "slow", ...store], {
    cwd: dir,
    stdout: "ignore",
    stderr: "ignore",
    env: ENV,
  });
  while ((await s.records("busy")).length === 0 || (await s.branchOwner("busy", "main")) === null) await Bun.sleep(20);
  return p;
}

beforeAll(async () => {
  ok = file("ok.jsonl", '{"content":"ok"}\n');
  slow = file("slow.jsonl", '{"content":"late","delay_ms":600000}\n');
  busy = await seed(storage, []);
}, 60_000);
afterAll(() => {
  busy?.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

/** The refusals of each state-changing command. */
function cases(exported: string, store: string[]): Record<string, { what: string; args: string[] }[]> {
  const missing = join(dir, "missing.jsonl");
  return {
    agent: [
      { what: "--resume, a crashed run with nothing to resume", args: ["agent", "--session", "crashed", "--resume", "--script", ok] },
      {
        what: "--resume, a crashed run whose approval waits",
        args: ["agent", "--session", "crashed-approval", "--resume", "--script", ok],
      },
      {
        what: "--resume, a resumable crashed run, a missing script",
        args: ["agent", "--session", "crashed-readonly", "--resume", "--script", missing],
      },
      {
        what: "--resume, a resumable crashed run, a bad preset",
        args: ["agent", "--session", "crashed-readonly", "--resume", "--preset", "nope"],
      },
      { what: "--resume, a finished run", args: ["agent", "--session", "done", "--resume", "--script", ok] },
      { what: "--resume, approvals that wait", args: ["agent", "--session", "waiting", "--resume", "--script", ok] },
      { what: "--resume, a branch in use", args: ["agent", "--session", "busy", "--resume", "--script", ok] },
      { what: "--resume, an unknown session", args: ["agent", "--session", "ghost", "--resume", "--script", ok] },
      { what: "--resume with --continue", args: ["agent", "--session", "done", "--resume", "--continue", "--script", ok] },
      { what: "a task on a branch in use", args: ["agent", "--no-plan", "--session", "busy", "--script", ok, "t"] },
      { what: "a task on a crashed run", args: ["agent", "--no-plan", "--session", "crashed", "--script", ok, "t"] },
      { what: "--continue on a crashed run", args: ["agent", "--no-plan", "--session", "crashed", "--continue", "--script", ok] },
      { what: "--continue on a suspended run", args: ["agent", "--no-plan", "--session", "waiting", "--continue", "--script", ok] },
      { what: "--continue on a new session", args: ["agent", "--no-plan", "--session", "fresh", "--continue", "--script", ok] },
      { what: "an unknown branch", args: ["agent", "--no-plan", "--session", "done", "--branch", "ghost", "--script", ok, "t"] },
      { what: "a missing script", args: ["agent", "--no-plan", "--session", "done", "--script", missing, "t"] },
      { what: "a new session, a missing script", args: ["agent", "--no-plan", "--session", "fresh", "--script", missing, "t"] },
      {
        what: "a new session, a missing output schema",
        args: ["agent", "--no-plan", "--session", "fresh", "--script", ok, "--output-schema", missing, "t"],
      },
      {
        what: "an output schema that does not compile",
        args: [
          "agent",
          "--no-plan",
          "--session",
          "done",
          "--script",
          ok,
          "--output-schema",
          file("bad-schema.json", '{"type":"nope"}'),
          "t",
        ],
      },
      { what: "a missing image", args: ["agent", "--no-plan", "--session", "done", "--script", ok, "--image", missing, "t"] },
      { what: "a missing skills folder", args: ["agent", "--no-plan", "--session", "done", "--script", ok, "--skills", missing, "t"] },
    ],
    chat: [
      { what: "a crashed run", args: ["chat", "--no-plan", "--session", "crashed", "--script", ok] },
      { what: "a branch in use", args: ["chat", "--no-plan", "--session", "busy", "--script", ok] },
      { what: "an unknown branch", args: ["chat", "--no-plan", "--session", "done", "--branch", "ghost", "--script", ok] },
    ],
    fork: [
      { what: "an unknown session", args: ["sessions", "fork", "ghost"] },
      { what: "an unknown record", args: ["sessions", "fork", "done", "--from", "ghost"] },
      { what: "a name taken", args: ["sessions", "fork", "done", "--name", "main"] },
      { what: "a crashed run at the head", args: ["sessions", "fork", "crashed"] },
    ],
    rollback: [
      { what: "no --to", args: ["sessions", "rollback", "done"] },
      { what: "an unknown record", args: ["sessions", "rollback", "done", "--to", "ghost"] },
    ],
    retry: [
      { what: "no --run", args: ["sessions", "retry", "done"] },
      { what: "an unknown run", args: ["sessions", "retry", "done", "--run", "ghost"] },
    ],
    recover: [
      { what: "an unknown session", args: ["sessions", "recover", "ghost"] },
      { what: "an unknown branch", args: ["sessions", "recover", "crashed", "--branch", "ghost"] },
      { what: "a run still going", args: ["sessions", "recover", "busy"] },
    ],
    approve: [
      { what: "a call that does not wait", args: ["sessions", "approve", "waiting", "ghost"] },
      { what: "an unknown session", args: ["sessions", "approve", "ghost", "w1"] },
      { what: "a crashed run's call", args: ["sessions", "approve", "crashed-approval", "c1"] },
    ],
    deny: [
      { what: "a call answered already", args: ["sessions", "deny", "answered", "w1"] },
      { what: "no call", args: ["sessions", "deny", "waiting"] },
    ],
    delete: [
      { what: "no --yes", args: ["sessions", "delete", "done"] },
      { what: "an unknown session", args: ["sessions", "delete", "ghost", "--yes"] },
      { what: "a run still going", args: ["sessions", "delete", "busy", "--yes"] },
    ],
    import: [
      { what: "a missing file", args: ["sessions", "import", missing] },
      { what: "not a journal", args: ["sessions", "import", file("bad.jsonl", '{"nope":1}\n')] },
      { what: "a session the store has", args: ["sessions", "import", exported] },
    ],
    "store migrate": [
      { what: "no store", args: ["store", "migrate"] },
      { what: "a JSONL folder", args: ["store", "migrate", "--store", sessions] },
      ...(store.length === 0
        ? []
        : [
            {
              what: "a database that does not exist",
              args: ["store", "migrate", "--store", `${store[1]!.replace(/\/[^/]*$/, "")}/t_no_such_db`],
            },
          ]),
    ],
  };
}

/** The sessions subcommands that only read (every other one must have refusal cases above). */
const READ_ONLY = ["list", "show", "tree", "approvals", "export"];

/** Send each refusal of {@link cases} (with the store's flags) and compare the store before and after. */
async function walk(snapshot: () => Promise<unknown>, store: string[]): Promise<void> {
  const exported = join(dir, `done-export-${store.length}.jsonl`);
  rmSync(exported, { force: true });
  expect(cli("sessions", "export", "done", "--out", exported, ...store).code).toBe(0);
  const table = cases(exported, store);
  // a sessions subcommand that writes and has no refusal case here (a new one) fails the walk
  const writing = Object.keys(SESSIONS_SUBCOMMANDS).filter((s) => !READ_ONLY.includes(s));
  expect(writing.filter((s) => !(s in table))).toEqual([]);
  const failures: string[] = [];
  for (const [command, list] of Object.entries(table)) {
    for (const c of list) {
      const before = await snapshot();
      const r = cli(...c.args, ...(command === "store migrate" ? [] : store));
      const label = `${command}, ${c.what}: exit ${r.code}: ${r.stderr.trim().slice(0, 300)}`;
      if (r.code !== 2) failures.push(`${label} (expected 2)`);
      if (!Bun.deepEquals(before, await snapshot())) failures.push(`${label}: the store changed`);
    }
  }
  expect(failures).toEqual([]);
}

describe("every refused CLI command leaves the journal folder as it was", () => {
  test("the walk: each refusal exits non-zero (2) and changes no byte of the store", async () => {
    await walk(async () => folderSnapshot(sessions), []);
  }, 300_000);

  test.skipIf(pgDb === null)(
    "the walk on a PostgreSQL store (--store URL): every record and branch of every session unchanged",
    async () => {
      const pg = await PostgresSessionStorage.open(pgDb!);
      const holder = await seed(pg, ["--store", pgDb!]);
      try {
        await walk(() => storeSnapshot(pg), ["--store", pgDb!]);
      } finally {
        holder.kill("SIGKILL");
        await holder.exited;
        await pg.close();
      }
    },
    300_000,
  );

  test("--resume on a crashed run: refused, it names the recovery and writes nothing; accepted, it recovers the run and goes on", async () => {
    const before = folderSnapshot(sessions);
    let r = cli("agent", "--session", "crashed", "--resume", "--script", ok);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("was left unfinished by a process that ended, and would close cancelled");
    expect(r.stderr).toContain("agentcore sessions recover crashed");
    expect(folderSnapshot(sessions)).toEqual(before);
    expect((await storage.checkout("crashed", "main"))!.session.runs[0]!.result).toBeNull();
    // the approval of a crashed run waits: listed with its answer, nothing recovered
    r = cli("agent", "--session", "crashed-approval", "--resume", "--script", ok);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("cannot resume yet: 1 approval(s) wait for an answer");
    expect(r.stderr).toContain("agentcore sessions approve crashed-approval c1");
    expect(r.stderr).toContain(
      "first, its run r-crashed-approval was left unfinished by a process that ended: close it with agentcore sessions recover crashed-approval",
    );
    expect((await storage.checkout("crashed-approval", "main"))!.session.runs[0]!.result).toBeNull();
    // accepted: the read-only call of the crashed run is left for the resume, which runs it and completes
    r = cli("agent", "--no-plan", "--session", "crashed-readonly", "--resume", "--script", ok);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("ok");
    const runs = (await storage.checkout("crashed-readonly", "main"))!.session.runs;
    expect(runs[0]!.result).toMatchObject({ status: "suspended", stop_reason: "awaiting_approval" });
    expect(runs[0]!.result!.error).toContain("recovered by 'agentcore agent --resume'");
    expect(runs.at(-1)!.result).toMatchObject({ status: "completed", output: "ok" });
    // the crashed run with nothing to resume: sessions recover closes it cancelled; a task then runs
    expect(cli("sessions", "recover", "crashed").code).toBe(0);
    expect((await storage.checkout("crashed", "main"))!.session.runs[0]!.result).toMatchObject({ status: "cancelled" });
    expect(cli("agent", "--no-plan", "--session", "crashed", "--script", ok, "again").code).toBe(0);
  }, 120_000);

  test("an agent SIGKILLed mid-run: --resume is refused with the journal unchanged; sessions recover closes the run", async () => {
    busy!.kill("SIGKILL");
    await busy!.exited;
    const before = folderSnapshot(sessions);
    const r = cli("agent", "--session", "busy", "--resume", "--script", ok);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("agentcore sessions recover busy");
    expect(folderSnapshot(sessions)).toEqual(before);
    expect(cli("sessions", "recover", "busy").code).toBe(0);
    const runs = (await storage.checkout("busy", "main"))!.session.runs;
    expect(runs[0]!.result).toMatchObject({ status: "cancelled", stop_reason: "external_abort" });
  }, 60_000);
});
