// `agentcore store migrate` through the compiled binary against a real
// PostgreSQL server (test/support/postgres.ts): applies the steps once and
// says so, --json, AGENTCORE_STORE, and the refusals (no store, a folder, an
// unreachable server with its password hidden, a database newer than the build).
import { afterAll, describe, expect, test } from "bun:test";
import { binaryPath } from "../support/binary.ts";
import { createDatabase, dropDatabase, pgUrl, skipMessage } from "../support/postgres.ts";
import { tmp } from "../support/tmp.ts";
import { LATEST_VERSION, MIGRATIONS } from "../../src/session/postgres/migrations.ts";

const server = await pgUrl();
if (server === null) console.log(`skip: agentcore store migrate against PostgreSQL: ${skipMessage}`);
const databases: string[] = [];
afterAll(async () => {
  for (const d of databases) await dropDatabase(d).catch(() => {});
});

function agentcore(args: string[], env: Record<string, string> = {}) {
  const p = Bun.spawnSync([binaryPath(), ...args], {
    cwd: tmp("agentcore-store-cli-"),
    stdout: "pipe",
    stderr: "pipe",
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
  });
  return { code: p.exitCode, stdout: p.stdout.toString(), stderr: p.stderr.toString() };
}

describe.skipIf(server === null)("agentcore store migrate (the binary, a real server)", () => {
  test("a fresh database gets every step, printed one a line; a second run is up to date; --json and AGENTCORE_STORE", async () => {
    const db = (await createDatabase())!;
    databases.push(db);
    const first = agentcore(["store", "migrate", "--store", db]);
    expect(first.stderr).toBe("");
    expect(first.code).toBe(0);
    const lines = first.stdout.trimEnd().split("\n");
    expect(lines.slice(0, -1)).toEqual(MIGRATIONS.map((m) => `applied ${m.version}: ${m.name}`));
    expect(lines.at(-1)).toContain(`at version ${LATEST_VERSION} (${MIGRATIONS.length} applied)`);
    const again = agentcore(["store", "migrate"], { AGENTCORE_STORE: db });
    expect(again.code).toBe(0);
    expect(again.stdout.trim()).toEqual(`${new URL(db).toString()}: up to date at version ${LATEST_VERSION}`);
    const json = agentcore(["store", "migrate", "--json", "--store", db]);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({ store: new URL(db).toString(), applied: [], version: LATEST_VERSION });
  });

  test("a database newer than this build is refused (exit 2), naming the version", async () => {
    const db = (await createDatabase())!;
    databases.push(db);
    expect(agentcore(["store", "migrate", "--store", db]).code).toBe(0);
    const { default: pg } = await import("pg");
    const c = new pg.Client({ connectionString: db });
    await c.connect();
    await c.query("INSERT INTO agentcore.schema_migrations (version, name) VALUES (1000, 'future')");
    await c.end();
    const r = agentcore(["store", "migrate", "--store", db]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("version(s) 1000, newer than this build knows");
  });
});

describe("agentcore store: refusals (the binary)", () => {
  test("no store, a folder, an unknown subcommand, an unreachable server: exit 2 with what to do; the password never shown", () => {
    let r = agentcore(["store", "migrate"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("store migrate needs the store: --store postgres://");
    r = agentcore(["store", "migrate", "--store", "./sessions"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("is not a PostgreSQL store");
    r = agentcore(["store", "migrat"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("did you mean 'migrate'?");
    const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    const port = probe.port;
    probe.stop(true);
    r = agentcore(["store", "migrate", "--store", `postgresql://agent:hunter2@127.0.0.1:${port}/db`]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`postgresql://agent:***@127.0.0.1:${port}/db`);
    expect(r.stderr).toContain("check that the PostgreSQL server is running");
    expect(r.stderr).not.toContain("hunter2");
    r = agentcore(["store", "--help"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("Usage: agentcore store migrate [--store URL] [--json]");
  });
});
