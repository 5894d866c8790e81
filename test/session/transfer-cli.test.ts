// `agentcore sessions export` / `import` through the compiled binary, between
// a JSONL folder and a real PostgreSQL store (test/support/postgres.ts): the
// journals of the compatibility corpus (branches, a compaction, approvals,
// suspended and resumed runs) round-trip byte for byte both ways, and restore
// to the same messages; a session recorded by `agent --store` goes across
// and on. Then the adversarial inputs: each refused with the line named and
// nothing written, on both kinds of store.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { binaryPath } from "../support/binary.ts";
import { createDatabase, dropDatabase, pgUrl, skipMessage } from "../support/postgres.ts";
import { tmpPerTest } from "../support/tmp.ts";

const server = await pgUrl();
if (server === null) console.log(`skip: sessions export/import against PostgreSQL: ${skipMessage}`);
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
const tmp = tmpPerTest("agentcore-transfer-cli-");
const ENV = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: os.tmpdir() };
const CORPUS = path.resolve(import.meta.dir, "corpus");
const JOURNALS = fs
  .readdirSync(CORPUS)
  .filter((d) => fs.statSync(path.join(CORPUS, d)).isDirectory())
  .flatMap((d) =>
    fs
      .readdirSync(path.join(CORPUS, d))
      .filter((f) => f.endsWith(".jsonl"))
      .map((f) => path.join(CORPUS, d, f)),
  );

function cli(cwd: string, args: string[], options: { stdin?: Uint8Array; env?: Record<string, string> } = {}) {
  const p = Bun.spawnSync([bin, ...args], {
    cwd,
    stdout: "pipe",
    stderr: "pipe",
    stdin: options.stdin ?? "ignore",
    env: { ...ENV, ...options.env },
  });
  return { code: p.exitCode, stdout: p.stdout.toString(), stderr: p.stderr.toString(), bytes: p.stdout };
}

/** The messages of every branch of a session, as `sessions show --json` restores them. */
function restored(cwd: string, store: string[], id: string): Record<string, unknown[]> {
  const tree = cli(cwd, ["sessions", "tree", id, "--json", ...store]);
  expect(tree.code).toBe(0);
  const out: Record<string, unknown[]> = {};
  for (const b of JSON.parse(tree.stdout).branches as { branch_id: string }[]) {
    const show = cli(cwd, ["sessions", "show", id, "--branch", b.branch_id, "--json", ...store]);
    expect(show.code).toBe(0);
    out[b.branch_id] = JSON.parse(show.stdout).messages;
  }
  return out;
}

describe.skipIf(server === null)("sessions export/import: lossless both ways (the binary, a real server)", () => {
  test("every corpus journal: JSONL → export (the file's bytes, its images' blobs beside it) → import into PostgreSQL → export → the same bytes and blobs → import into a new JSONL folder → the same file; restores the same messages (images included) everywhere", async () => {
    for (const journal of JOURNALS) {
      const db = await database(); // the journals share session ids
      const dir = tmp();
      const original = fs.readFileSync(journal);
      const expected = JSON.parse(fs.readFileSync(journal.replace(/\.jsonl$/, ".expected.json"), "utf8"));
      const id = expected.session_id as string;
      const a = ["--store", path.join(dir, "a")];
      const pg = ["--store", db];
      const b = ["--store", path.join(dir, "b")];
      // the corpus file as a JSONL store holds it
      const imported = cli(dir, ["sessions", "import", journal, ...a]);
      expect({ journal, stderr: imported.stderr, code: imported.code }).toEqual({ journal, stderr: "", code: 0 });
      // out to a file (a session with images also gets FILE.blobs/ beside it: the JSONL store's layout)
      const out1 = path.join(dir, "a-export.jsonl");
      const fromJsonl = cli(dir, ["sessions", "export", id, "--out", out1, ...a]);
      expect({ journal, stderr: fromJsonl.code === 0 ? "" : fromJsonl.stderr, code: fromJsonl.code }).toEqual({
        journal,
        stderr: "",
        code: 0,
      });
      expect(fs.readFileSync(out1).equals(original)).toBe(true);
      const corpusBlobs = journal.replace(/\.jsonl$/, ".blobs");
      const blobsOf = (d: string) =>
        fs.existsSync(d)
          ? fs
              .readdirSync(d)
              .sort()
              .map((f) => [f, fs.readFileSync(path.join(d, f)).toString("hex")])
          : [];
      expect(blobsOf(path.join(dir, "a-export.blobs"))).toEqual(blobsOf(corpusBlobs));
      // into PostgreSQL and back out
      const intoPg = cli(dir, ["sessions", "import", out1, ...pg]);
      expect({ journal, stderr: intoPg.stderr, code: intoPg.code }).toEqual({ journal, stderr: "", code: 0 });
      const fromPg = cli(dir, ["sessions", "export", id, "--out", path.join(dir, "pg.jsonl"), ...pg]);
      expect(fromPg.code).toBe(0);
      expect(fs.readFileSync(path.join(dir, "pg.jsonl")).equals(original)).toBe(true);
      expect(blobsOf(path.join(dir, "pg.blobs"))).toEqual(blobsOf(corpusBlobs));
      if (fs.existsSync(corpusBlobs)) {
        // the journal alone can't carry its images: stdout is refused, and so is an import without the blobs
        const toStdout = cli(dir, ["sessions", "export", id, ...pg]);
        expect(toStdout.code).toBe(2);
        expect(toStdout.stderr).toContain("image(s), whose bytes can't go to stdout with the journal: export it with --out FILE.jsonl");
        const bare = cli(dir, ["sessions", "import", "-", "--store", path.join(dir, "c")], { stdin: fs.readFileSync(out1) });
        expect(bare.code).toBe(2);
        expect(bare.stderr).toContain("whose bytes are not given");
        expect(fs.existsSync(path.join(dir, "c")) ? fs.readdirSync(path.join(dir, "c")).filter((f) => f.endsWith(".jsonl")) : []).toEqual(
          [],
        );
      }
      // PostgreSQL → a new JSONL folder: the journal file is the original, byte for byte
      expect(cli(dir, ["sessions", "import", path.join(dir, "pg.jsonl"), ...b]).code).toBe(0);
      const files = fs.readdirSync(path.join(dir, "b")).filter((f) => f.endsWith(".jsonl"));
      expect(files.length).toBe(1);
      expect(fs.readFileSync(path.join(dir, "b", files[0]!)).equals(original)).toBe(true);
      // restore (checkout) gives the corpus's messages in all three stores
      const want = expected.branches;
      expect(restored(dir, a, id)).toEqual(want);
      expect(restored(dir, pg, id)).toEqual(want);
      expect(restored(dir, b, id)).toEqual(want);
    }
  }, 240_000);

  test("a journal whose lines are not in this build's canonical form (keys in another order, spaces) still moves byte for byte both ways", async () => {
    const db = await database();
    const dir = tmp();
    const tour = fs.readFileSync(path.join(CORPUS, "v1-approvals", "tour.jsonl"), "utf8");
    const reorder = (v: unknown): unknown =>
      Array.isArray(v)
        ? v.map(reorder)
        : v !== null && typeof v === "object"
          ? Object.fromEntries(
              Object.entries(v as Record<string, unknown>)
                .reverse()
                .map(([k, x]) => [k, reorder(x)]),
            )
          : v;
    const odd =
      tour
        .split("\n")
        .slice(0, -1)
        .map((l, i) => (i % 2 === 0 ? JSON.stringify(reorder(JSON.parse(l))) : l.replace('{"', '{ "').replace('":', '" :')))
        .join("\n") + "\n";
    expect(odd).not.toBe(tour);
    fs.writeFileSync(path.join(dir, "odd.jsonl"), odd);
    const a = ["--store", path.join(dir, "a")];
    const pg = ["--store", db];
    expect(cli(dir, ["sessions", "import", "odd.jsonl", ...a]).code).toBe(0);
    const one = cli(dir, ["sessions", "export", "corpus", ...a]);
    expect(one.stdout).toBe(odd);
    expect(cli(dir, ["sessions", "import", "-", ...pg], { stdin: one.bytes }).code).toBe(0);
    const two = cli(dir, ["sessions", "export", "corpus", ...pg]);
    expect(two.stdout).toBe(odd);
    expect(cli(dir, ["sessions", "import", "-", "--store", path.join(dir, "b")], { stdin: two.bytes }).code).toBe(0);
    expect(cli(dir, ["sessions", "export", "corpus", "--store", path.join(dir, "b")]).stdout).toBe(odd);
    // the same records as the canonical journal: the same restored messages
    fs.writeFileSync(path.join(dir, "tour.jsonl"), tour);
    expect(cli(dir, ["sessions", "import", "tour.jsonl", "--store", path.join(dir, "c")]).code).toBe(0);
    expect(restored(dir, pg, "corpus")).toEqual(restored(dir, ["--store", path.join(dir, "c")], "corpus"));
  }, 120_000);

  test("a session recorded by agent --store postgres:// (tool call, fork, a second run) goes to JSONL and on: agent --continue there, then back under --as", async () => {
    const db = await database();
    const dir = tmp();
    const script = (name: string, ...turns: unknown[]) => {
      const f = path.join(dir, name);
      fs.writeFileSync(f, turns.map((t) => JSON.stringify(t)).join("\n") + "\n");
      return f;
    };
    fs.writeFileSync(path.join(dir, "hello.txt"), "hello\n");
    const first = cli(dir, [
      "agent",
      "--no-plan",
      "--store",
      db,
      "--session",
      "live",
      "--tools",
      "read",
      "--script",
      script(
        "1.jsonl",
        { content: null, tool_calls: [{ id: "c1", name: "read_file", arguments: '{"path":"hello.txt"}' }] },
        { content: "it says hello" },
      ),
      "read hello.txt",
    ]);
    expect(first.stderr).toBe("");
    expect(first.code).toBe(0);
    expect(cli(dir, ["sessions", "fork", "live", "--name", "alt", "--store", db]).code).toBe(0);
    const second = cli(dir, [
      "agent",
      "--no-plan",
      "--store",
      db,
      "--session",
      "live",
      "--branch",
      "alt",
      "--script",
      script("2.jsonl", { content: "on alt" }),
      "go on",
    ]);
    expect(second.code).toBe(0);
    const exported = cli(dir, ["sessions", "export", "live", "--store", db]);
    expect(exported.code).toBe(0);
    const j = ["--sessions-dir", path.join(dir, "j")];
    expect(cli(dir, ["sessions", "import", "-", ...j], { stdin: exported.bytes }).code).toBe(0);
    expect(restored(dir, j, "live")).toEqual(restored(dir, ["--store", db], "live"));
    const again = cli(dir, [
      "agent",
      "--no-plan",
      ...j,
      "--session",
      "live",
      "--continue",
      "--script",
      script("3.jsonl", { content: "continued" }),
    ]);
    expect(again.stderr).toBe("");
    expect(again.code).toBe(0);
    const back = cli(dir, ["sessions", "export", "live", ...j]);
    // the JSONL copy went on: the original's records first, unchanged, then the new run's
    expect(back.stdout.startsWith(exported.stdout)).toBe(true);
    expect(back.stdout.length).toBeGreaterThan(exported.stdout.length);
    const copy = cli(dir, ["sessions", "import", "-", "--as", "live-2", "--store", db, "--json"], { stdin: back.bytes });
    expect(copy.code).toBe(0);
    expect(JSON.parse(copy.stdout)).toMatchObject({ session_id: "live-2", source_session_id: "live", branches: ["main", "alt"] });
    const copied = cli(dir, ["sessions", "export", "live-2", "--store", db]).stdout;
    expect(copied).toBe(back.stdout.replaceAll('"session_id":"live"', '"session_id":"live-2"'));
  }, 120_000);
});

describe.skipIf(server === null)(
  "sessions import: adversarial journals are refused, the line named, nothing written (JSONL and PostgreSQL)",
  () => {
    const tour = fs.readFileSync(path.join(CORPUS, "v1-approvals", "tour.jsonl"), "utf8");
    const lines = tour.split("\n").slice(0, -1);
    const records = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    const join = (rs: unknown[]) => rs.map((r) => (typeof r === "string" ? r : JSON.stringify(r))).join("\n") + "\n";
    const cases: { name: string; text: string; says: RegExp }[] = [
      { name: "a torn last line", text: tour.slice(0, tour.length - 40), says: /line 45 is torn/ },
      {
        name: "a record whose parent is missing",
        text: join(records.map((r, i) => (i === 9 ? { ...r, parent_id: "0000000000000000000000000000dead" } : r))),
        says: /line 10: .*parent changed or is missing/,
      },
      { name: "a revision gap", text: join(records.filter((_, i) => i !== 4)), says: /line 5: .*revision jumped \(expected 5\)/ },
      {
        name: "a duplicate record id",
        text: join(records.map((r, i) => (i === 7 ? { ...r, record_id: records[2]!.record_id } : r))),
        says: /line 8: .*duplicate record_id/,
      },
      {
        name: "a different session id inside the file",
        text: join(records.map((r, i) => (i === 20 ? { ...r, session_id: "intruder" } : r))),
        says: /line 21 belongs to session 'intruder', the lines before it to 'corpus'.*--as ID renames one whole session/,
      },
      {
        name: "an unknown schema version",
        text: join(records.map((r, i) => (i === 3 ? { ...r, journal_schema_version: 2 } : r))),
        says: /line 4: unsupported journal_schema_version 2; expected 1/,
      },
      {
        name: "a line that is not JSON",
        text: join([...lines.slice(0, 5), "{not json", ...lines.slice(5)]),
        says: /line 6 is not a JSON record/,
      },
      { name: "an empty file", text: "", says: /is empty: it holds no record/ },
    ];

    for (const kind of ["jsonl", "postgres"] as const) {
      test(`${kind}: each case exits 2 naming the line, and the store holds nothing after it`, async () => {
        const dir = tmp();
        const store = ["--store", kind === "jsonl" ? path.join(dir, "s") : await database()];
        for (const c of cases) {
          fs.writeFileSync(path.join(dir, "in.jsonl"), c.text);
          const r = cli(dir, ["sessions", "import", "in.jsonl", ...store]);
          expect({ case: c.name, code: r.code, stdout: r.stdout }).toEqual({ case: c.name, code: 2, stdout: "" });
          expect({ case: c.name, stderr: r.stderr }).toEqual({ case: c.name, stderr: expect.stringMatching(c.says) });
          expect(r.stderr).toContain("nothing was imported");
          expect(r.stderr).not.toContain("internal error");
          const list = cli(dir, ["sessions", "list", "--json", ...store]);
          expect({ case: c.name, list: list.stdout.trim() }).toEqual({ case: c.name, list: "[]" });
        }
      }, 120_000);

      test(`${kind}: an id the store has already is refused naming --as; with --as it goes in beside it; a 2 MiB line round-trips byte for byte`, async () => {
        const dir = tmp();
        const store = ["--store", kind === "jsonl" ? path.join(dir, "s") : await database()];
        fs.writeFileSync(path.join(dir, "tour.jsonl"), tour);
        expect(cli(dir, ["sessions", "import", "tour.jsonl", ...store]).code).toBe(0);
        const twice = cli(dir, ["sessions", "import", "tour.jsonl", ...store]);
        expect(twice.code).toBe(2);
        expect(twice.stderr).toContain("session 'corpus' exists already (45 record(s))");
        expect(twice.stderr).toContain("--as ID");
        expect(cli(dir, ["sessions", "export", "corpus", ...store]).stdout).toBe(tour);
        expect(cli(dir, ["sessions", "import", "tour.jsonl", "--as", "copy", ...store]).code).toBe(0);
        expect(cli(dir, ["sessions", "export", "copy", ...store]).stdout).toBe(
          tour.replaceAll('"session_id":"corpus"', '"session_id":"copy"'),
        );
        // one record of 2 MiB (a pasted log as the task): accepted, and exported exactly as it went in
        const first = {
          agent_id: records[0]!.agent_id,
          branch_id: "main",
          data: { run_id: "r-big", task: `summarise this log:\n${"x".repeat(2 << 20)}` },
          journal_schema_version: 1,
          parent_id: null,
          record_id: "b1g0000000000000000000000000000a",
          revision: 1,
          sequence: 1,
          session_id: "big",
          type: "run_started",
        };
        const { serializeRecord } = await import("../../src/session/journal.ts");
        const line = serializeRecord(first as never);
        expect(line.length).toBeGreaterThan(2 << 20);
        fs.writeFileSync(path.join(dir, "big.jsonl"), line);
        const r = cli(dir, ["sessions", "import", "big.jsonl", ...store]);
        expect(r.stderr).toBe("");
        expect(r.code).toBe(0);
        expect(cli(dir, ["sessions", "export", "big", ...store]).stdout).toBe(line);
      }, 120_000);
    }

    test("usage: import without a FILE, export of an unknown session, --out that exists, --as empty", async () => {
      const dir = tmp();
      const s = ["--sessions-dir", path.join(dir, "s")];
      const none = cli(dir, ["sessions", "import", ...s]);
      expect(none.code).toBe(2);
      expect(none.stderr).toContain("import needs the journal: a FILE written by agentcore sessions export, or - for stdin");
      const unknown = cli(dir, ["sessions", "export", "nope", ...s]);
      expect(unknown.code).toBe(2);
      expect(unknown.stderr).toContain("no session 'nope'");
      fs.writeFileSync(path.join(dir, "t.jsonl"), tour);
      expect(cli(dir, ["sessions", "import", "t.jsonl", ...s]).code).toBe(0);
      fs.writeFileSync(path.join(dir, "taken"), "keep me");
      const exists = cli(dir, ["sessions", "export", "corpus", "--out", "taken", ...s]);
      expect(exists.code).toBe(2);
      expect(exists.stderr).toContain("taken exists: nothing was written");
      expect(fs.readFileSync(path.join(dir, "taken"), "utf8")).toBe("keep me");
      expect(cli(dir, ["sessions", "import", "t.jsonl", "--as", " ", ...s]).stderr).toContain("--as must not be empty");
      const missing = cli(dir, ["sessions", "import", "no-such.jsonl", ...s]);
      expect(missing.code).toBe(2);
      expect(missing.stderr).toContain("cannot read no-such.jsonl");
    });
  },
);
