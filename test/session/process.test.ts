// Real files and real child processes: crashes, contention, a killed lock holder.
import { describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { JsonlSessionStorage, SessionLockTimeoutError, type SessionRecordDraft } from "../../src/session/index.ts";
import { tmpPerTest } from "../support/tmp.ts";

const FIXTURE = path.join(import.meta.dir, "fixtures", "appender.ts");
const tmp = tmpPerTest("agentcore-session-proc-");

const checkpoint = (session: string, n = 0): SessionRecordDraft => ({
  session_id: session,
  agent_id: null,
  branch_id: "main",
  sequence: 0,
  type: "checkpoint",
  data: { document: { schema_version: 1, session: { session_id: session, agent_id: null, entries: [], runs: [], compactions: [] } }, n },
});

function spawn(...args: string[]) {
  return Bun.spawn([process.execPath, FIXTURE, ...args], { stdout: "pipe", stderr: "pipe" });
}

const DENO = path.resolve(import.meta.dir, "../../node_modules/.bin/deno");
/** The same fixture under Deno: the lock must work across runtimes too. */
function spawnDeno(...args: string[]) {
  return Bun.spawn([DENO, "run", "--allow-read", "--allow-write", "--allow-env", FIXTURE, ...args], {
    cwd: path.resolve(import.meta.dir, "../.."),
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1" },
  });
}

/** Read stdout lines as they come; `until` resolves when a line matches. */
function lines(proc: ReturnType<typeof spawn>) {
  const got: string[] = [];
  let partial = "";
  const waiters: { match: (l: string) => boolean; resolve: () => void }[] = [];
  const done = (async () => {
    const decoder = new TextDecoder();
    const reader = proc.stdout.getReader();
    for (;;) {
      const { value: chunk, done: end } = await reader.read();
      if (end) break;
      partial += decoder.decode(chunk, { stream: true });
      const parts = partial.split("\n");
      partial = parts.pop()!;
      for (const l of parts) {
        got.push(l);
        for (const w of waiters.splice(0))
          if (w.match(l)) w.resolve();
          else waiters.push(w);
      }
    }
  })();
  return {
    got,
    done,
    until: (match: (l: string) => boolean) =>
      new Promise<void>((resolve) => (got.some(match) ? resolve() : waiters.push({ match, resolve }))),
  };
}

describe("session journal across processes", () => {
  test("crash: SIGKILL at random points 50 times loses no acknowledged record; the next append repairs the tail", async () => {
    const dir = tmp();
    const session = "crash";
    const parent = new JsonlSessionStorage(dir);
    await parent.append(checkpoint(session));
    const file = parent.fileFor(session);
    let torn = 0;
    for (let i = 0; i < 50; i++) {
      const child = spawn("loop", dir, session);
      const out = lines(child);
      // wait for a few acknowledgements (a random number), then kill at a random moment
      const wantAcks = 1 + Math.floor(Math.random() * 5);
      await out.until(() => out.got.length >= wantAcks);
      await Bun.sleep(Math.random() * 15);
      child.kill("SIGKILL");
      await child.exited;
      await out.done;
      const acknowledged = out.got.filter((l) => /^\d+$/.test(l)).map(Number);
      expect(acknowledged.length).toBeGreaterThanOrEqual(wantAcks);
      let content = fs.readFileSync(file);
      if (content.length > 0 && content[content.length - 1] !== 0x0a) torn++;
      else if (i % 2 === 1) {
        // A kill rarely lands inside the single write(2) of a line, so every other round
        // also leaves a torn tail by hand, as a crash inside that write (or power loss) would.
        const lastLine = content.subarray(content.lastIndexOf(0x0a, content.length - 2) + 1);
        fs.appendFileSync(file, lastLine.subarray(0, 1 + Math.floor(Math.random() * (lastLine.length - 2))));
        content = fs.readFileSync(file);
      }
      const fresh = new JsonlSessionStorage(dir);
      const records = await fresh.records(session);
      const revisions = new Set(records.map((r) => r.revision));
      for (const rev of acknowledged) expect(revisions.has(rev)).toBe(true);
      expect(records.map((r) => r.revision)).toEqual(records.map((_, k) => k + 1));
      const next = await fresh.append(checkpoint(session, i));
      expect(next.revision).toBe(records.length + 1);
      const after = fs.readFileSync(file, "utf8");
      expect(after.endsWith("\n")).toBe(true);
      expect(after.split("\n").length - 1).toBe(records.length + 1);
    }
    // how often a kill left a torn tail is reported, not asserted (it depends on timing)
    console.log(`crash test: ${torn}/50 kills left a torn tail`);
  }, 120_000);

  test("contention: two processes append 1,000 records each at once → 2,000 contiguous revisions", async () => {
    const dir = tmp();
    const a = spawn("count", dir, "busy", "1000");
    const b = spawn("count", dir, "busy", "1000");
    const [oa, ob] = [lines(a), lines(b)];
    expect(await a.exited).toBe(0);
    expect(await b.exited).toBe(0);
    await Promise.all([oa.done, ob.done]);
    expect(oa.got).toEqual(["done"]);
    expect(ob.got).toEqual(["done"]);
    const records = await new JsonlSessionStorage(dir).records("busy");
    expect(records.length).toBe(2000);
    expect(records.map((r) => r.revision)).toEqual(Array.from({ length: 2000 }, (_, i) => i + 1));
    expect(new Set(records.map((r) => r.data.pid)).size).toBe(2);
    for (let i = 1; i < records.length; i++) expect(records[i].parent_id).toBe(records[i - 1].record_id);
  }, 120_000);

  test("contention across runtimes: a Bun and a Deno process append 300 records each → 600 contiguous revisions", async () => {
    const dir = tmp();
    const a = spawn("count", dir, "mixed", "300");
    const b = spawnDeno("count", dir, "mixed", "300");
    const [oa, ob] = [lines(a), lines(b as unknown as ReturnType<typeof spawn>)];
    const [ea, eb] = [await a.exited, await b.exited];
    await Promise.all([oa.done, ob.done]);
    if (eb !== 0) throw new Error(`deno appender failed: ${await new Response(b.stderr).text()}`);
    expect(ea).toBe(0);
    expect(oa.got).toEqual(["done"]);
    expect(ob.got).toEqual(["done"]);
    const records = await new JsonlSessionStorage(dir).records("mixed");
    expect(records.map((r) => r.revision)).toEqual(Array.from({ length: 600 }, (_, i) => i + 1));
    expect(new Set(records.map((r) => r.data.pid)).size).toBe(2);
  }, 120_000);

  test("two competing processes appending once against the same head: one succeeds, one conflicts", async () => {
    const dir = tmp();
    const storage = new JsonlSessionStorage(dir);
    const head = await storage.append(checkpoint("race"));
    const a = spawn("once", dir, "race", head.record_id);
    const b = spawn("once", dir, "race", head.record_id);
    const [oa, ob] = [lines(a), lines(b)];
    await Promise.all([a.exited, b.exited, oa.done, ob.done]);
    expect([...oa.got, ...ob.got].sort()).toEqual(["conflict", "ok"]);
    expect((await new JsonlSessionStorage(dir).records("race")).length).toBe(2);
  }, 30_000);

  test("a SIGKILLed lock holder does not block others beyond the lock timeout", async () => {
    const dir = tmp();
    const storage = new JsonlSessionStorage(dir, { lockTimeoutMs: 5_000 });
    await storage.append(checkpoint("held"));
    const holder = spawn("hold", dir, "held");
    const out = lines(holder);
    await out.until((l) => l === "locked");
    // while the holder lives, others time out
    const err = await new JsonlSessionStorage(dir, { lockTimeoutMs: 50 }).append(checkpoint("held", 1)).catch((e) => e);
    expect(err).toBeInstanceOf(SessionLockTimeoutError);
    holder.kill("SIGKILL");
    await holder.exited;
    const r = await storage.append(checkpoint("held", 2));
    expect(r.revision).toBe(2);
    expect(fs.existsSync(storage.fileFor("held") + ".lock")).toBe(false);
  }, 30_000);
});
