// PostgreSQL restarted under load, at the storage level (issue 15 §5): two
// writer processes (fixtures/pg-writer.ts), each with its own
// PostgresSessionStorage, append and import whole sessions while the test
// restarts the server (`pg_ctl restart -m fast`) of a private cluster of its
// own (never AGENTCORE_TEST_PG's, which other tests share). What is checked:
// requests in flight fail cleanly with SessionStorageError (no hang, no
// crash), both storages reconnect on their own and go on, every acknowledged
// append is in the store at its revision, revisions have no gap, and every
// imported session (one transaction of 10 records) is all there or absent.
import { afterEach, describe, expect, test } from "bun:test";
import * as path from "node:path";
import { PostgresSessionStorage } from "../../src/session/postgres/storage.ts";
import { restartableCluster, skipMessage } from "../support/postgres.ts";

const cluster = restartableCluster();
if (cluster === null) console.log(`skip: PostgreSQL restarted under load: ${skipMessage}`);

const WRITER = path.join(import.meta.dir, "fixtures", "pg-writer.ts");

interface Outcome {
  ack?: "append" | "import";
  session?: string;
  record_id?: string;
  revision?: number;
  records?: number;
  error?: string;
  message?: string;
  op?: string;
  done?: boolean;
}

interface Writer {
  name: string;
  proc: ReturnType<typeof Bun.spawn>;
  outcomes: Outcome[];
  exited: Promise<number>;
  stderr: () => string;
}

const writers: Writer[] = [];
afterEach(() => {
  for (const w of writers.splice(0)) w.proc.kill("SIGKILL");
});

function startWriter(url: string, name: string): Writer {
  const proc = Bun.spawn([process.execPath, WRITER, url, name], { stdin: "pipe", stdout: "pipe", stderr: "pipe" });
  const outcomes: Outcome[] = [];
  let err = "";
  void (async () => {
    let buf = "";
    for await (const chunk of proc.stdout as unknown as AsyncIterable<Uint8Array>) {
      buf += new TextDecoder().decode(chunk);
      let i: number;
      while ((i = buf.indexOf("\n")) >= 0) {
        outcomes.push(JSON.parse(buf.slice(0, i)) as Outcome);
        buf = buf.slice(i + 1);
      }
    }
  })();
  void (async () => {
    for await (const chunk of proc.stderr as unknown as AsyncIterable<Uint8Array>) err += new TextDecoder().decode(chunk);
  })();
  const w = { name, proc, outcomes, exited: proc.exited, stderr: () => err };
  writers.push(w);
  return w;
}

const acks = (w: Writer) => w.outcomes.filter((o) => o.ack !== undefined).length;

/** Wait (bounded) until `ok` holds; fails the test with `what` after `ms`. */
async function until(ok: () => boolean, what: string, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(25);
  }
}

describe.skipIf(cluster === null)("postgres: the server restarted under load (two writer processes)", () => {
  test("in-flight requests fail with SessionStorageError, both storages reconnect on their own, nothing acknowledged is lost, nothing is half-written", async () => {
    const url = cluster!.url;
    (await PostgresSessionStorage.open(url)).close(); // migrated before the writers start
    const a = startWriter(url, "a");
    const b = startWriter(url, "b");
    await until(() => acks(a) >= 30 && acks(b) >= 30, "both writers to be acknowledged 30 times");
    // Round 1: pg_ctl restart -m fast (back within the storages' one retry, mostly). Round 2: the server
    // stays down 2 s, longer than that retry waits, so requests in flight fail and are reported.
    for (let round = 0; round < 2; round++) {
      const before = [acks(a), acks(b)];
      cluster!.restart(round === 0 ? 0 : 2000);
      // they go on by themselves: new acknowledgements after the restart
      await until(() => acks(a) >= before[0]! + 30 && acks(b) >= before[1]! + 30, `both writers to go on after restart ${round + 1}`);
    }
    for (const w of [a, b]) {
      const stdin = w.proc.stdin as { write(s: string): void; flush(): void; end(): void };
      stdin.write("stop\n");
      stdin.flush();
      stdin.end();
    }
    const codes = await Promise.race([
      Promise.all([a.exited, b.exited]),
      Bun.sleep(30_000).then(() => {
        throw new Error("a writer did not stop within 30 s (a hang)");
      }),
    ]);
    expect({ codes, stderr: [a.stderr(), b.stderr()] }).toEqual({ codes: [0, 0], stderr: ["", ""] });
    for (const w of [a, b]) expect(w.outcomes.at(-1)).toEqual({ done: true });

    const errors = [...a.outcomes, ...b.outcomes].filter((o) => o.error !== undefined);
    // while the server was down, requests failed (no hang): each with the storage's own error, naming the store; never anything else
    expect(errors.length).toBeGreaterThan(0);
    for (const e of errors) {
      expect({ error: e.error, message: e.message }).toEqual({
        error: "SessionStorageError",
        message: expect.stringContaining("PostgreSQL store"),
      });
    }

    const check = await PostgresSessionStorage.open(url);
    try {
      const sessions = new Set(await check.listSessions());
      for (const w of [a, b]) {
        for (const s of [`${w.name}-0`, `${w.name}-1`]) {
          const records = await check.records(s);
          // revisions have no gap (the storage validates that on read), and every acknowledged append is there, at its revision
          const byId = new Map(records.map((r) => [r.record_id, r.revision]));
          for (const o of w.outcomes.filter((x) => x.ack === "append" && x.session === s))
            expect({ record: o.record_id, revision: byId.get(o.record_id!) }).toEqual({ record: o.record_id, revision: o.revision });
        }
        // an import is one transaction: all 10 records or none, and every acknowledged one is whole
        const acked = new Set(w.outcomes.filter((o) => o.ack === "import").map((o) => o.session!));
        const tried = new Set(w.outcomes.filter((o) => o.op === "import" || o.ack === "import").map((o) => o.session!));
        for (const s of tried) {
          const n = (await check.records(s)).length;
          expect({ session: s, n: acked.has(s) ? n : n === 0 || n === 10 ? "all or none" : n }).toEqual({
            session: s,
            n: acked.has(s) ? 10 : "all or none",
          });
          if (acked.has(s)) expect(sessions.has(s)).toBe(true);
        }
      }
    } finally {
      await check.close();
    }
  }, 240_000);
});
