// The store setting in every command that touches sessions or history,
// through the compiled binary against a real PostgreSQL server
// (test/support/postgres.ts): agent and chat record in it, every sessions
// subcommand reads and branches it, sessions delete removes a session from
// it, history reads its table; `--store`, AGENTCORE_STORE and the config's
// `store`, flags first; `--store` with `--sessions-dir` is a usage error.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { PostgresSessionStorage } from "../../src/session/postgres/storage.ts";
import { binaryPath } from "../support/binary.ts";
import { createDatabase, dropDatabase, pgUrl, skipMessage } from "../support/postgres.ts";
import { tmpPerTest } from "../support/tmp.ts";

const server = await pgUrl();
if (server === null) console.log(`skip: the store in every command: ${skipMessage}`);
const databases: string[] = [];
afterAll(async () => {
  for (const d of databases) await dropDatabase(d).catch(() => {});
});
async function database(): Promise<string> {
  const db = (await createDatabase())!;
  databases.push(db);
  return db;
}

let bin = "";
beforeAll(() => {
  bin = binaryPath();
}, 300_000);
const tmp = tmpPerTest("agentcore-store-everywhere-");
const ENV = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: os.tmpdir() };

function cli(cwd: string, args: string[], options: { stdin?: string; env?: Record<string, string> } = {}) {
  const p = Bun.spawnSync([bin, ...args], {
    cwd,
    stdout: "pipe",
    stderr: "pipe",
    stdin: options.stdin !== undefined ? Buffer.from(options.stdin) : "ignore",
    env: { ...ENV, ...options.env },
  });
  return { code: p.exitCode, stdout: p.stdout.toString(), stderr: p.stderr.toString() };
}

function script(dir: string, name: string, ...turns: unknown[]): string {
  const f = path.join(dir, name);
  fs.writeFileSync(f, turns.map((t) => JSON.stringify(t)).join("\n") + "\n");
  return f;
}

async function sql<T = Record<string, unknown>>(url: string, text: string): Promise<T[]> {
  const { default: pg } = await import("pg");
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(text)).rows as T[];
  } finally {
    await c.end();
  }
}

describe.skipIf(server === null)("--store postgres:// in every command (the binary, a real server)", () => {
  test("agent records there (nothing in .agentcore/sessions), its calls' history too; list, show, tree, fork, rollback, retry, recover and approvals read and branch it; agent goes on on a branch there", async () => {
    const db = await database();
    const dir = tmp();
    fs.writeFileSync(path.join(dir, "notes.txt"), "remember the milk\n");
    const s = ["--store", db];
    const run = cli(dir, [
      "agent",
      "--no-plan",
      "--tools",
      "read",
      ...s,
      "--session",
      "demo",
      "--script",
      script(
        dir,
        "a.jsonl",
        { content: null, tool_calls: [{ id: "c1", name: "read_file", arguments: '{"path":"notes.txt"}' }] },
        { content: "milk" },
      ),
      "what is in notes.txt?",
    ]);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(fs.existsSync(path.join(dir, ".agentcore", "sessions"))).toBe(false);
    const rows = await sql<{ n: string }>(db, "SELECT count(*) AS n FROM agentcore.records WHERE session_id = 'demo'");
    expect(Number(rows[0]!.n)).toBeGreaterThan(3);

    // no history file set: the call's history went to the store's table, which history --store reads
    const history = cli(dir, ["history", "--json", ...s]);
    expect(history.code).toBe(0);
    expect(
      history.stdout
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l)),
    ).toEqual([expect.objectContaining({ tool: "read_file", call_id: "c1", success: true })]);
    const list = cli(dir, ["sessions", "list", "--json", ...s]);
    expect(list.code).toBe(0);
    expect(JSON.parse(list.stdout)).toEqual([expect.objectContaining({ session_id: "demo", branches: ["main"], runs: 1 })]);
    const show = JSON.parse(cli(dir, ["sessions", "show", "demo", "--json", ...s]).stdout);
    expect(show.messages.at(-1)).toMatchObject({ role: "assistant", content: "milk" });
    const tree = JSON.parse(cli(dir, ["sessions", "tree", "demo", "--json", ...s]).stdout);
    const runId = tree.records[0].data.run_id as string;
    const fork = cli(dir, ["sessions", "fork", "demo", "--name", "idea", ...s]);
    expect(fork.code).toBe(0);
    // printed commands repeat the store
    expect(fork.stdout).toContain(`--store ${db}`);
    const finished = tree.records.find((r: { type: string }) => r.type === "run_finished").revision as number;
    const back = cli(dir, ["sessions", "rollback", "demo", "--to", `r${finished}`, "--name", "back", ...s]);
    expect(back.stderr).toBe("");
    expect(back.code).toBe(0);
    const retry = cli(dir, ["sessions", "retry", "demo", "--run", runId.slice(0, 8), "--name", "again", ...s]);
    expect(retry.code).toBe(0);
    expect(retry.stdout).toContain("task what is in notes.txt?");
    expect(cli(dir, ["sessions", "recover", "demo", ...s]).stdout).toContain("no unfinished run, nothing to recover");
    expect(cli(dir, ["sessions", "approvals", "demo", ...s]).stdout).toContain("no approval waits");
    const storage = await PostgresSessionStorage.open(db);
    try {
      expect((await storage.listBranches("demo")).map((b) => b.branch_id)).toEqual(["main", "idea", "back", "again"]);
    } finally {
      await storage.close();
    }
    // the agent goes on on a branch of the store
    const onIdea = cli(dir, [
      "agent",
      "--no-plan",
      ...s,
      "--session",
      "demo",
      "--branch",
      "idea",
      "--script",
      script(dir, "b.jsonl", { content: "on idea" }),
      "more",
    ]);
    expect(onIdea.code).toBe(0);
    expect(JSON.parse(cli(dir, ["sessions", "show", "demo", "--branch", "idea", "--json", ...s]).stdout).messages.at(-1).content).toBe(
      "on idea",
    );
  }, 120_000);

  test("AGENTCORE_STORE and the config's store are used without --store; --store wins over them; --sessions-dir wins over them; --store with --sessions-dir is a usage error", async () => {
    const db = await database();
    const other = await database();
    const dir = tmp();
    const agent = (name: string, args: string[], env: Record<string, string> = {}) =>
      cli(dir, ["agent", "--no-plan", "--session", name, "--script", script(dir, `${name}.jsonl`, { content: name }), ...args, "hi"], {
        env,
      });
    expect(agent("from-env", [], { AGENTCORE_STORE: db }).code).toBe(0);
    fs.writeFileSync(path.join(dir, "config.json"), JSON.stringify({ store: other }));
    expect(agent("from-config", ["--config", path.join(dir, "config.json")]).code).toBe(0);
    expect(agent("flag-wins", ["--store", db], { AGENTCORE_STORE: other }).code).toBe(0);
    expect(agent("dir-wins", ["--sessions-dir", path.join(dir, "j")], { AGENTCORE_STORE: db }).code).toBe(0);
    const ids = async (url: string) =>
      (await sql<{ session_id: string }>(url, "SELECT session_id FROM agentcore.sessions ORDER BY 1")).map((r) => r.session_id);
    expect(await ids(db)).toEqual(["flag-wins", "from-env"]);
    expect(await ids(other)).toEqual(["from-config"]);
    expect(fs.readdirSync(path.join(dir, "j")).filter((f) => f.endsWith(".jsonl")).length).toBe(1);
    // sessions: the same rules
    expect(
      JSON.parse(cli(dir, ["sessions", "list", "--json"], { env: { AGENTCORE_STORE: db } }).stdout).map(
        (r: { session_id: string }) => r.session_id,
      ),
    ).toEqual(expect.arrayContaining(["flag-wins", "from-env"]));
    const cfgList = cli(dir, ["sessions", "list", "--json", "--config", path.join(dir, "config.json")]);
    expect(JSON.parse(cfgList.stdout).map((r: { session_id: string }) => r.session_id)).toEqual(["from-config"]);
    const dirList = cli(dir, ["sessions", "list", "--json", "--sessions-dir", path.join(dir, "j")], { env: { AGENTCORE_STORE: db } });
    expect(JSON.parse(dirList.stdout).map((r: { session_id: string }) => r.session_id)).toEqual(["dir-wins"]);
    // both flags: refused before anything is opened
    const both = ["--store", db, "--sessions-dir", path.join(dir, "j")];
    for (const r of [
      cli(dir, ["sessions", "list", ...both]),
      cli(dir, ["agent", "--no-plan", "--session", "x", "--script", script(dir, "x.jsonl", { content: "x" }), ...both, "hi"]),
      cli(dir, ["chat", "--script", script(dir, "y.jsonl", { content: "x" }), ...both], { stdin: "" }),
    ]) {
      expect(r.code).toBe(2);
      expect(r.stderr).toContain("--store and --sessions-dir both say where the sessions are: give one");
    }
    expect(await ids(db)).toEqual(["flag-wins", "from-env"]);
    // --store without --session (agent) and a store that is not one
    expect(cli(dir, ["agent", "--no-plan", "--store", db, "--script", script(dir, "z.jsonl", { content: "x" }), "hi"]).stderr).toContain(
      "--store needs --session ID",
    );
    const bad = cli(dir, ["sessions", "list", "--store", "mysql://u@h/db"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("unsupported store 'mysql://…@h/db'");
  }, 120_000);

  test("chat records in the store; sessions delete removes the session from it (a live chat's claim refuses it first); history --store reads agentcore.history", async () => {
    const db = await database();
    const dir = tmp();
    const chat = cli(
      dir,
      ["chat", "--store", db, "--session", "talk", "--no-plan", "--script", script(dir, "c.jsonl", { content: "hello there" })],
      {
        stdin: "hi\n",
      },
    );
    expect(chat.code).toBe(0);
    expect(JSON.parse(cli(dir, ["sessions", "show", "talk", "--json", "--store", db]).stdout).messages.at(-1).content).toBe("hello there");
    // a claim held by a live process (this test process, through its own storage) refuses the delete
    const storage = await PostgresSessionStorage.open(db);
    const claim = await storage.claimBranch("talk", "main", "agentcore chat");
    const refused = cli(dir, ["sessions", "delete", "talk", "--yes", "--store", db]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("branch 'main' is held by process");
    claim.release();
    await storage.close();
    const ask = cli(dir, ["sessions", "delete", "talk", "--store", db]);
    expect(ask.code).toBe(2);
    expect(ask.stderr).toContain("nothing was deleted. To confirm:");
    const del = cli(dir, ["sessions", "delete", "talk", "--yes", "--store", db]);
    expect(del.stderr).toBe("");
    expect(del.code).toBe(0);
    expect(await sql(db, "SELECT * FROM agentcore.records WHERE session_id = 'talk'")).toEqual([]);
    expect(cli(dir, ["sessions", "show", "talk", "--store", db]).stderr).toContain("no session 'talk'");
    expect(cli(dir, ["sessions", "delete", "talk", "--yes", "--store", db]).code).toBe(2);
    // history: rows of the store's table, the JSONL lines exactly
    const { PostgresSessionStorage: P } = await import("../../src/session/postgres/storage.ts");
    const s2 = await P.open(db);
    const rec = {
      time: "2026-12-01T10:00:00.000Z",
      tool: "read_file",
      call_id: "c9",
      effect: "read_only",
      decision: null,
      success: true,
      code: null,
      duration_ms: 1.5,
    } as never;
    await s2.history().append(rec);
    await s2.close();
    const h = cli(dir, ["history", "--store", db, "--json"]);
    expect(h.stderr).toBe("");
    expect(h.code).toBe(0);
    expect(h.stdout).toBe(`${JSON.stringify(rec)}\n`);
    expect(cli(dir, ["history"], { env: { AGENTCORE_STORE: db } }).stdout).toContain("read_file");
    const jsonl = cli(dir, ["history", "--store", path.join(dir, "folder")]);
    expect(jsonl.code).toBe(2);
    expect(jsonl.stderr).toContain("is a JSONL folder, which keeps no history");
  }, 120_000);
});
