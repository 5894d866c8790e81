// A real PostgreSQL stopped (`pg_ctl stop -m immediate`) while a run's model
// call is in flight, and started again (issue 30), under a daemon whose
// session store is that database (a private cluster of this test's own).
// A short outage is bridged by the recorder's retries: the run completes
// with every record in the store. A long one outlasts them: 503
// STORE_UNAVAILABLE with Retry-After, the run failed, and the store never
// holds a completed end. Never `completed` without `run_finished`.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { PostgresSessionStorage } from "../../src/session/postgres/storage.ts";
import { restartableCluster, skipMessage } from "../support/postgres.ts";
import { startTestDaemon, type TestDaemon } from "../support/daemon.ts";

// A durable server: `pg_ctl stop -m immediate` is a crash, and the tests' usual
// settings (fsync and synchronous_commit off) would lose the commits before it.
const cluster = restartableCluster({ fsync: true });
if (cluster === null) console.log(`skip: PostgreSQL stopped mid-run: ${skipMessage}`);

let storage: PostgresSessionStorage;
let reader: PostgresSessionStorage;
let d: TestDaemon;
beforeAll(async () => {
  if (cluster === null) return;
  storage = await PostgresSessionStorage.open(cluster.url);
  reader = await PostgresSessionStorage.open(cluster.url);
  d = await startTestDaemon({ storage });
});
afterAll(async () => {
  if (cluster === null) return;
  await d?.stop();
  await storage?.close();
  await reader?.close();
});

/** Wait (bounded) until `ok` holds. */
async function until(ok: () => Promise<boolean>, what: string, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(20);
  }
}

const types = async (session: string) => (await reader.records(session)).map((r) => r.type);

/**
 * Start a run whose model answers after `answerMs`, stop the server once its
 * run_started is in the store (the model call is then in flight), keep it
 * down `downMs`, start it again; returns the JSON answer.
 */
async function runThroughOutage(session: string, answerMs: number, downMs: number): Promise<{ res: Response; body: any }> {
  const answer = d.req("/v1/runs", {
    method: "POST",
    headers: { accept: "application/json" },
    json: { task: `task of ${session}`, session, script: [{ content: `answer of ${session}`, delay_ms: answerMs }] },
  });
  await until(async () => (await types(session).catch((): string[] => [])).includes("run_started"), "run_started");
  cluster!.halt();
  const back = Bun.sleep(downMs).then(() => cluster!.start());
  const res = await answer;
  const body = await res.json();
  await back;
  return { res, body };
}

describe.skipIf(cluster === null)("a daemon on PostgreSQL: the server stopped while the model call is in flight", () => {
  test("a short outage is bridged by the retries: the run completes, every record in the store", async () => {
    const { res, body } = await runThroughOutage("short", 500, 2500);
    expect(res.status).toBe(201);
    expect(body.result).toMatchObject({ status: "completed", stop_reason: "text_response" });
    expect(await types("short")).toEqual(["run_started", "message_appended", "run_finished"]);
    const end = (await reader.records("short")).at(-1)!;
    expect(end.data.result).toMatchObject({ status: "completed" });
  }, 120_000);

  test("an outage past the retries: 503 STORE_UNAVAILABLE with Retry-After, failed everywhere, never completed", async () => {
    const { res, body } = await runThroughOutage("long", 200, 20_000);
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("10");
    expect(body.error.code).toBe("STORE_UNAVAILABLE");
    // The database is named, without a password, with the fix.
    expect(body.error.message).toContain(`the PostgreSQL database ${cluster!.url} is unavailable`);
    expect(body.error.message).toContain("check that the server is running");
    expect(body.error.details.result).toMatchObject({ status: "failed", stop_reason: "store_failed", error_code: "STORE_UNAVAILABLE" });
    const view = await (await d.req(`/v1/runs/${body.error.details.run_id}`)).json();
    expect(view.result).toMatchObject({ status: "failed", error_code: "STORE_UNAVAILABLE" });
    // The server is back: the store holds the run's start, and no completed end.
    const records = await reader.records("long");
    expect(records[0]!.type).toBe("run_started");
    expect(records.some((r) => r.type === "run_finished" && (r.data.result as { status: string }).status === "completed")).toBe(false);
    expect(records.some((r) => r.type === "message_appended")).toBe(false);
  }, 120_000);
});
