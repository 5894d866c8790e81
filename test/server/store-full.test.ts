// A real full disk (issue 30): the daemon's sessions folder is a 2 MiB tmpfs,
// filled by runs with large tasks and answers. Every run the daemon answers
// `completed` has its run_finished in the journal; the run that meets the
// full disk is answered 507 STORE_FULL (JSON), ends failed on its SSE stream
// and in GET /v1/runs/{id}; earlier sessions are intact; `sessions show`
// agrees; the CLI on the full folder exits non-zero naming the folder.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { JsonlSessionStorage } from "../../src/session/index.ts";
import { mountSmallTmpfs, type SmallTmpfs } from "../support/tmpfs.ts";
import { tmp } from "../support/tmp.ts";
import { SseReader, startTestDaemon, type TestDaemon } from "../support/daemon.ts";

const MAIN = path.resolve(import.meta.dir, "../../src/cli/main.ts");
const mounted = mountSmallTmpfs("2m");
const skip = "skip" in mounted ? mounted.skip : null;
if (skip !== null) console.warn(`store-full.test.ts skipped: ${skip}`);

let disk: SmallTmpfs;
let d: TestDaemon;
beforeAll(async () => {
  if (skip !== null) return;
  disk = (mounted as { fs: SmallTmpfs }).fs;
  // Room an operator can give back later (the daemon never holds it open).
  fs.mkdirSync(path.join(disk.dir, "spare"));
  fs.writeFileSync(path.join(disk.dir, "spare", "ballast"), Buffer.alloc(512 * 1024, 1));
  d = await startTestDaemon({ sessionsDir: disk.dir });
});
afterAll(async () => {
  if (skip !== null) return;
  await d?.stop();
  disk.unmount();
});

function cli(cwd: string, ...args: string[]) {
  const p = Bun.spawnSync([process.execPath, MAIN, ...args], { cwd, stdout: "pipe", stderr: "pipe" });
  return { code: p.exitCode, stdout: p.stdout.toString(), stderr: p.stderr.toString() };
}

const big = (n: number, tag: string) => `${tag} ${"x".repeat(n)}`;

describe.skipIf(skip !== null)("a daemon whose sessions folder fills up (a 2 MiB tmpfs)", () => {
  const answered: { session: string; status: number; body: any }[] = [];
  let early: { session: string; bytes: Buffer };

  test("runs are answered completed while they fit, then 507 STORE_FULL; never completed without run_finished", async () => {
    const first = await d.req("/v1/runs", {
      method: "POST",
      headers: { accept: "application/json" },
      json: { task: "a small first run", session: "early", script: [{ content: "small answer" }] },
    });
    expect(first.status).toBe(201);
    expect((await first.json()).result.status).toBe("completed");
    early = { session: "early", bytes: fs.readFileSync(new JsonlSessionStorage(disk.dir).fileFor("early")) };

    // Bounded: 2 MiB holds about six of these.
    for (let i = 0; i < 30; i++) {
      const session = `big-${i}`;
      const res = await d.req("/v1/runs", {
        method: "POST",
        headers: { accept: "application/json" },
        json: { task: big(150_000, `task ${i}`), session, script: [{ content: big(150_000, `answer ${i}`) }] },
      });
      answered.push({ session, status: res.status, body: await res.json() });
      if (res.status !== 201) break;
    }
    const statuses = answered.map((a) => a.status);
    expect(statuses.filter((s) => s === 201).length).toBeGreaterThan(0);
    expect(statuses.at(-1)).toBe(507);
    const full = answered.at(-1)!;
    expect(full.body.success).toBe(false);
    expect(full.body.error.code).toBe("STORE_FULL");
    expect(full.body.error.message).toContain(disk.dir);
    expect(full.body.error.details.result).toMatchObject({ status: "failed", stop_reason: "store_failed", error_code: "STORE_FULL" });
    expect(full.body.error.details.session).toEqual({ session_id: full.session, branch: "main" });

    // What the store says, read afresh (a torn last line is not a record).
    const store = new JsonlSessionStorage(disk.dir);
    for (const a of answered) {
      const records = await store.records(a.session).catch(() => []);
      const finished = records.filter((r) => r.type === "run_finished").map((r) => (r.data.result as { status: string }).status);
      if (a.status === 201) {
        expect(a.body.result.status).toBe("completed");
        expect(finished).toEqual(["completed"]);
      } else expect(finished).not.toContain("completed");
    }

    // GET /v1/runs/{id} tells the same end.
    const view = await (await d.req(`/v1/runs/${full.body.error.details.run_id}`)).json();
    expect(view.result).toMatchObject({ status: "failed", stop_reason: "store_failed", error_code: "STORE_FULL" });
    expect(view.results.map((r: any) => r.result.status)).toEqual(["failed"]);
  }, 120_000);

  test("an SSE client of a run on the full disk gets a failed end, never completed", async () => {
    const res = await d.req("/v1/runs", {
      method: "POST",
      json: { task: big(150_000, "sse"), session: "sse-full", script: [{ content: "hi" }] },
    });
    expect(res.status).toBe(201);
    const events = await new SseReader(res).all();
    const ends = events.filter((e) => e.event === "agent_finished").map((e) => e.data.result);
    expect(ends).toHaveLength(1);
    expect(ends[0]).toMatchObject({ status: "failed", stop_reason: "store_failed", error_code: "STORE_FULL" });
    expect(events.some((e) => JSON.stringify(e.data).includes('"status":"completed"'))).toBe(false);
    // A subscriber of the run's events (from the first) gets the same end.
    const runId = res.headers.get("x-run-id")!;
    const replay = await new SseReader(await d.req(`/v1/runs/${runId}/events?after=0`)).all();
    const replayed = replay.filter((e) => e.event === "agent_finished").map((e) => e.data.result);
    expect(replayed).toEqual(ends);
  }, 60_000);

  test("earlier sessions are intact, and sessions show agrees with what the clients were told", () => {
    expect(fs.readFileSync(new JsonlSessionStorage(disk.dir).fileFor("early")).equals(early.bytes)).toBe(true);
    const cwd = tmp();
    const show = (session: string) => {
      const r = cli(cwd, "sessions", "show", session, "--sessions-dir", disk.dir);
      return r.stdout + r.stderr;
    };
    expect(show("early")).toContain("completed");
    // The last runs the daemon called completed (those nearest the full disk), and the one it did not.
    const told = answered.filter((a) => a.status === 201 && a.body.result.status === "completed").slice(-3);
    expect(told.length).toBeGreaterThan(0);
    for (const a of told) expect(`${a.session}: ${show(a.session)}`).toContain("completed");
    const failed = answered.find((a) => a.status !== 201);
    expect(failed).toBeDefined();
    expect(show(failed!.session)).not.toContain("completed");
  }, 120_000);

  test("agentcore agent --session on the full folder exits non-zero and names the folder", () => {
    const cwd = tmp();
    const script = path.join(cwd, "script.jsonl");
    fs.writeFileSync(script, `${JSON.stringify({ content: "never journaled" })}\n`);
    const r = cli(cwd, "agent", "--session", "cli-full", "--sessions-dir", disk.dir, "--script", script, big(100_000, "cli task"));
    expect(r.code).not.toBe(0);
    // The folder, what happened to it, and the fix.
    expect(r.stderr).toContain(`the sessions folder ${disk.dir} is full (ENOSPC)`);
    expect(r.stderr).toContain("free space there");
    const records = fs.existsSync(new JsonlSessionStorage(disk.dir).fileFor("cli-full"))
      ? fs.readFileSync(new JsonlSessionStorage(disk.dir).fileFor("cli-full"), "utf8")
      : "";
    expect(records).not.toContain('"status":"completed"');
  }, 60_000);

  test("once there is room again, the failed session goes on: a torn last line is cut off, nothing written before is lost", async () => {
    const store = new JsonlSessionStorage(disk.dir);
    fs.rmSync(path.join(disk.dir, "spare"), { recursive: true });
    const failed = answered.find((a) => a.status !== 201)!.session;
    const before = await store.records(failed);
    // A run the full disk left without its end is closed as after a crash.
    if (before.some((r) => r.type === "run_started") && !before.some((r) => r.type === "run_finished"))
      expect(cli(tmp(), "sessions", "recover", failed, "--sessions-dir", disk.dir).code).toBe(0);
    const res = await d.req("/v1/runs", {
      method: "POST",
      headers: { accept: "application/json" },
      json: { task: "room again", session: failed, script: [{ content: "fine now" }] },
    });
    expect(res.status).toBe(201);
    expect((await res.json()).result.status).toBe("completed");
    const lines = fs.readFileSync(store.fileFor(failed), "utf8").split("\n");
    expect(lines.pop()).toBe("");
    for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
    const after = await store.records(failed);
    expect(after.slice(0, before.length).map((r) => r.record_id)).toEqual(before.map((r) => r.record_id));
    expect(after.at(-1)!.data.result).toMatchObject({ status: "completed" });
  }, 60_000);
});
