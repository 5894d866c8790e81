/**
 * `agentcore sessions` as a new user meets it, through the compiled binary:
 * records named by revision (r7) or a unique id prefix, runs by a prefix,
 * `list` by last activity with a time column, `delete ID --yes`, and refused
 * forks that say what to do instead.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { binaryPath } from "../support/binary.ts";
import { tmp } from "../support/tmp.ts";

let work: string;
let bin: string;
const ENV = { PATH: process.env.PATH ?? "/usr/bin:/bin", TZ: "UTC" };

beforeAll(() => {
  work = tmp("agentcore-sessions-manage-");
  bin = binaryPath();
  fs.writeFileSync(path.join(work, "answer.jsonl"), JSON.stringify({ content: "done" }) + "\n");
  fs.writeFileSync(
    path.join(work, "two.jsonl"),
    [{ content: "first" }, { content: "second" }].map((t) => JSON.stringify(t)).join("\n") + "\n",
  );
  fs.writeFileSync(path.join(work, "slow.jsonl"), JSON.stringify({ content: "never reached", delay_ms: 600_000 }) + "\n");
}, 120_000);

afterAll(() => {
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

function cli(cwd: string, ...args: string[]) {
  // stdin is a pipe nobody writes to: a prompt would hang until the timeout kills it
  const r = Bun.spawnSync([bin, ...args], { cwd, stdin: "pipe", env: ENV, timeout: 30_000 });
  return { status: r.exitCode ?? -1, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

function dir(name: string): string {
  const d = path.join(work, name);
  fs.mkdirSync(d);
  return d;
}

function agent(cwd: string, session: string, task: string, ...extra: string[]) {
  const r = cli(cwd, "agent", "--session", session, "--script", path.join(work, "answer.jsonl"), ...extra, task);
  expect(r.stderr).toBe("");
  expect(r.status).toBe(0);
}

interface Rec {
  record_id: string;
  revision: number;
  type: string;
  branch_id: string;
  data: { run_id?: string };
}

function tree(
  cwd: string,
  session: string,
): { records: Rec[]; branches: { branch_id: string; base_record_id: string | null; source_branch_id: string | null }[] } {
  const r = cli(cwd, "sessions", "tree", session, "--json");
  expect(r.status).toBe(0);
  return JSON.parse(r.stdout);
}

const journal = (cwd: string, session: string) =>
  path.join(cwd, ".agentcore", "sessions", createHash("sha256").update(session).digest("hex") + ".jsonl");

describe("sessions list", () => {
  test("newest activity first, with a time column; --json adds last_activity and keeps the other fields", () => {
    const d = dir("list");
    agent(d, "alpha", "one");
    agent(d, "beta", "two");
    agent(d, "gamma", "three");
    agent(d, "alpha", "four"); // alpha is the most recent now
    const r = cli(d, "sessions", "list");
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    const lines = r.stdout.trimEnd().split("\n");
    expect(lines.map((l) => l.split("  ")[1])).toEqual(["alpha", "gamma", "beta"]);
    for (const l of lines) expect(l).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d  \w+  records \d+  runs \d+  branches main$/);
    expect(lines[0]).toContain("alpha  records 6  runs 2  branches main");

    const json = JSON.parse(cli(d, "sessions", "list", "--json").stdout);
    expect(json.map((x: { session_id: string }) => x.session_id)).toEqual(["alpha", "gamma", "beta"]);
    expect(Object.keys(json[0])).toEqual(["session_id", "records", "branches", "runs", "last_activity"]);
    expect(json[0]).toMatchObject({ session_id: "alpha", records: 6, branches: ["main"], runs: 2 });
    for (const x of json) expect(new Date(x.last_activity).toISOString()).toBe(x.last_activity);
    // the text shows the same instant (TZ=UTC here), to the minute
    expect(lines[0]!.slice(0, 16)).toBe(json[0].last_activity.slice(0, 16).replace("T", " "));
  }, 60_000);

  test("the newest record time wins; a journal written before records carried times uses the file's modification time", () => {
    const d = dir("list-mtime");
    fs.mkdirSync(path.join(d, ".agentcore", "sessions"), { recursive: true });
    const write = (id: string, times: (string | undefined)[]) => {
      const base = { journal_schema_version: 1, branch_id: "main", session_id: id, agent_id: "a" };
      const lines = [
        {
          ...base,
          record_id: `${id}-1`,
          parent_id: null,
          revision: 1,
          sequence: 1,
          type: "run_started",
          data: { run_id: `${id}-run`, task: "t" },
        },
        {
          ...base,
          record_id: `${id}-2`,
          parent_id: `${id}-1`,
          revision: 2,
          sequence: 2,
          type: "run_finished",
          data: { run_id: `${id}-run`, result: { status: "completed" } },
        },
      ].map((r, i) => (times[i] === undefined ? r : { ...r, time: times[i] }));
      fs.writeFileSync(journal(d, id), lines.map((l) => JSON.stringify(l)).join("\n") + "\n");
    };
    write("old", [undefined, undefined]);
    fs.utimesSync(journal(d, "old"), new Date("2030-01-02T03:04:05Z"), new Date("2030-01-02T03:04:05Z"));
    write("timed", ["2031-05-06T07:08:09.000Z", "2031-05-06T07:09:10.000Z"]);
    fs.utimesSync(journal(d, "timed"), new Date("2020-01-01T00:00:00Z"), new Date("2020-01-01T00:00:00Z")); // not used: the records say
    const r = cli(d, "sessions", "list");
    expect(r.stderr).toBe("");
    expect(r.stdout).toBe(
      "2031-05-06 07:09  timed  records 2  runs 1  branches main\n2030-01-02 03:04  old  records 2  runs 1  branches main\n",
    );
    expect(JSON.parse(cli(d, "sessions", "list", "--json").stdout).map((x: { last_activity: string }) => x.last_activity)).toEqual([
      "2031-05-06T07:09:10.000Z",
      "2030-01-02T03:04:05.000Z",
    ]);
    // local time: the same instant shown in another zone
    const tokyo = Bun.spawnSync([bin, "sessions", "list"], { cwd: d, env: { ...ENV, TZ: "Asia/Tokyo" } }).stdout.toString();
    expect(tokyo.split("\n")[0]).toBe("2031-05-06 16:09  timed  records 2  runs 1  branches main");
  }, 60_000);

  test("control characters in a session id are shown escaped", () => {
    const d = dir("list-escape");
    agent(d, "evil\u001b[2Jid", "one");
    const r = cli(d, "sessions", "list");
    expect(r.stdout).toContain("evil\\x1b[2Jid  records 3");
    expect(r.stdout).not.toContain("\u001b");
  }, 60_000);
});

describe("records by revision or id prefix", () => {
  test("r7, a unique prefix, the full id and an upper-case prefix all name the same record", () => {
    const d = dir("refs");
    agent(d, "demo", "one");
    agent(d, "demo", "two");
    const { records } = tree(d, "demo");
    const r3 = records[2]!;
    expect(r3.type).toBe("run_finished");
    // tree shows the revision the way it is typed back
    expect(cli(d, "sessions", "tree", "demo").stdout).toContain(`   r3  ${r3.record_id}  parent`);
    const unique = (() => {
      for (let n = 4; n <= 32; n++) {
        const p = r3.record_id.slice(0, n);
        if (records.filter((x) => x.record_id.startsWith(p)).length === 1) return p;
      }
      throw new Error("no unique prefix");
    })();
    const bases = [];
    for (const [i, ref] of ["r3", unique, r3.record_id, unique.toUpperCase(), "R3"].entries()) {
      const r = cli(d, "sessions", "fork", "demo", "--from", ref, "--name", `f${i}`, "--json");
      expect(r.stderr).toBe("");
      expect(r.status).toBe(0);
      bases.push(JSON.parse(r.stdout).branch.base_record_id);
    }
    expect(new Set(bases)).toEqual(new Set([r3.record_id]));
    const rb = cli(d, "sessions", "rollback", "demo", "--to", "r3", "--name", "back");
    expect(rb.status).toBe(0);
    expect(rb.stdout).toContain(`branch back created at ${r3.record_id} (r3; rollback of main)`);
    expect(rb.stdout).toContain('work on it: agentcore agent --session demo --branch back "TASK"');
  }, 60_000);

  test("unknown, out of range, too short and bare-number references say how to find ids", () => {
    const d = dir("refs-bad");
    agent(d, "demo", "one");
    let r = cli(d, "sessions", "fork", "demo", "--from", "r99");
    expect(r.status).toBe(2);
    expect(r.stderr).toBe(
      "agentcore sessions: session 'demo' has no revision r99 (it has revisions r1 to r3; see the revisions and ids with: agentcore sessions tree demo)\n",
    );
    r = cli(d, "sessions", "rollback", "demo", "--to", "3");
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("write revision 3 as r3");
    r = cli(d, "sessions", "fork", "demo", "--from", "zzzzzz");
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("session 'demo' has no record 'zzzzzz' (see the revisions and ids with: agentcore sessions tree demo)");
    r = cli(d, "sessions", "fork", "demo", "--from", "ab");
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("at least 4 characters");
    r = cli(d, "sessions", "fork", "demo", "--from", "r0");
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("no revision r0");
    // nothing was written by any of them
    expect(tree(d, "demo").records.length).toBe(3);
    r = cli(d, "sessions", "fork", "ghost", "--from", "r1");
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("no session 'ghost'");
    expect(r.stderr).toContain("agentcore sessions list");
  }, 60_000);

  test("an ambiguous prefix is an error listing the candidates", () => {
    const d = dir("refs-ambiguous");
    const sessions = path.join(d, ".agentcore", "sessions");
    fs.mkdirSync(sessions, { recursive: true });
    const base = { journal_schema_version: 1, branch_id: "main", session_id: "amb", agent_id: "a" };
    const lines = [
      {
        ...base,
        record_id: "abcd0001",
        parent_id: null,
        revision: 1,
        sequence: 1,
        type: "run_started",
        data: { run_id: "run-1", task: "t" },
      },
      {
        ...base,
        record_id: "abcd0002",
        parent_id: "abcd0001",
        revision: 2,
        sequence: 2,
        type: "message_appended",
        data: { run_id: "run-1", message: { role: "assistant", content: "x" } },
      },
      {
        ...base,
        record_id: "abce0003",
        parent_id: "abcd0002",
        revision: 3,
        sequence: 3,
        type: "run_finished",
        data: { run_id: "run-1", result: { status: "completed" } },
      },
    ];
    fs.writeFileSync(journal(d, "amb"), lines.map((l) => JSON.stringify(l)).join("\n") + "\n");
    let r = cli(d, "sessions", "fork", "amb", "--from", "abcd");
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(
      "record 'abcd' is ambiguous in session 'amb': it starts 2 record ids: abcd0001 (r1 main run_started run run-1), abcd0002 (r2 main message_appended run run-1); give more characters, or the revision (r7)",
    );
    r = cli(d, "sessions", "fork", "amb", "--from", "abce", "--json");
    expect(r.stderr).toBe("");
    expect(JSON.parse(r.stdout).branch.base_record_id).toBe("abce0003");
    // a run by prefix too
    r = cli(d, "sessions", "retry", "amb", "--run", "run-");
    expect(r.stderr).toBe("");
    expect(r.stdout).toContain("task t\n");
  }, 60_000);
});

describe("retry by run prefix", () => {
  test("a unique run prefix works; a --continue run names the task run to retry", () => {
    const d = dir("retry");
    agent(d, "demo", "one");
    const c = cli(d, "agent", "--session", "demo", "--script", path.join(work, "answer.jsonl"), "--continue");
    expect(c.status).toBe(0);
    const shown = JSON.parse(cli(d, "sessions", "show", "demo", "--json").stdout);
    const [task, cont] = shown.session.runs.map((x: { run_id: string }) => x.run_id);
    let r = cli(d, "sessions", "retry", "demo", "--run", task.slice(0, 8), "--name", "again");
    expect(r.stderr).toBe("");
    expect(r.stdout).toBe("branch again\ntask one\nrun it: agentcore agent --session demo --branch again one\n");
    r = cli(d, "sessions", "retry", "demo", "--run", cont.slice(0, 8));
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`retry the task run it continued: agentcore sessions retry demo --run ${task}`);
    r = cli(d, "sessions", "retry", "demo", "--run", "ffffffff");
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("session 'demo' has no run 'ffffffff' (see the runs with: agentcore sessions show demo");
  }, 60_000);
});

describe("refused forks say what to do", () => {
  test("an existing branch name, a record inside a run, a record on another branch", () => {
    const d = dir("refused");
    const two = path.join(work, "two.jsonl");
    // one run with two turns: r1 run_started, r2 message (tool-less), … see the tree
    agent(d, "demo", "one");
    agent(d, "demo", "two");
    expect(cli(d, "sessions", "fork", "demo", "--name", "exp").status).toBe(0);
    let r = cli(d, "sessions", "fork", "demo", "--name", "exp");
    expect(r.status).toBe(2);
    expect(r.stderr).toBe(
      `agentcore sessions: session 'demo' already has a branch 'exp': choose another --name (or leave it out for a generated one), or work on that branch: agentcore agent --session demo --branch exp "TASK"\n`,
    );
    // with --sessions-dir, the printed command carries it
    r = cli(work, "sessions", "fork", "demo", "--name", "exp", "--sessions-dir", path.join(d, ".agentcore", "sessions"));
    expect(r.stderr).toContain(`--branch exp --sessions-dir ${path.join(d, ".agentcore", "sessions")} "TASK"`);

    // r5 is the second run's message: inside that run
    r = cli(d, "sessions", "fork", "demo", "--from", "r5");
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("record r5 is inside run");
    expect(r.stderr).toContain("choose r3 (before the run started) or r6 (its run_finished) or later");

    // a record written on exp: the fork starts from exp by itself; --branch main is refused with the way out
    expect(cli(d, "agent", "--session", "demo", "--branch", "exp", "--script", two, "on exp").status).toBe(0);
    const recs = tree(d, "demo").records;
    const onExp = recs.filter((x) => x.branch_id === "exp").at(-1)!;
    r = cli(d, "sessions", "fork", "demo", "--from", `r${onExp.revision}`, "--name", "from-exp", "--json");
    expect(r.stderr).toBe("");
    expect(JSON.parse(r.stdout).branch).toMatchObject({ source_branch_id: "exp", base_record_id: onExp.record_id });
    r = cli(d, "sessions", "fork", "demo", "--from", `r${onExp.revision}`, "--branch", "main");
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(
      `record r${onExp.revision} is not on branch 'main' (it was written on 'exp'): leave out --branch to start from 'exp'`,
    );
    r = cli(d, "sessions", "fork", "demo", "--branch", "ghost");
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("session 'demo' has no branch 'ghost' (branches main, exp, from-exp)");
    // usage mistakes keep the usage hint; journal problems do not
    r = cli(d, "sessions", "delete", "demo", "--name", "x");
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("--name");
    expect(r.stderr).toContain("--help");
    expect(fs.existsSync(journal(d, "demo"))).toBe(true);
  }, 60_000);
});

describe("sessions delete", () => {
  test("without --yes nothing is deleted and the message says how to confirm; --yes removes the journal, marks and lock leftovers", () => {
    const d = dir("delete");
    agent(d, "demo", "one");
    agent(d, "keep", "one");
    const file = journal(d, "demo");
    // leftovers of a crash: a stale run mark and a stale lock (dead pid), a breaker file
    fs.writeFileSync(`${file}.run-0123456789abcdef`, "999999999 some-run\n");
    fs.writeFileSync(`${file}.lock`, "999999999 deadbeef\n");
    fs.writeFileSync(`${file}.lock.break`, "999999999 deadbeef\n");
    let r = cli(d, "sessions", "delete", "demo");
    expect(r.status).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe(
      "agentcore sessions: delete removes session 'demo' for good (3 record(s), 1 run(s), branch main); nothing was deleted. To confirm: agentcore sessions delete demo --yes\n",
    );
    expect(fs.existsSync(file)).toBe(true);

    r = cli(d, "sessions", "delete", "demo", "--yes");
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    expect(r.stdout).toBe("session demo deleted (3 record(s), 1 run(s), branch main)\n");
    const left = fs.readdirSync(path.dirname(file));
    expect(left.filter((n) => n.startsWith(path.basename(file)))).toEqual([]);
    expect(left.filter((n) => n.endsWith(".jsonl")).length).toBe(1); // keep's
    expect(cli(d, "sessions", "list", "--json").stdout).toContain('"keep"');
    expect(cli(d, "sessions", "show", "demo").status).toBe(2);
    // the id is free again
    agent(d, "demo", "fresh start");
    expect(JSON.parse(cli(d, "sessions", "show", "demo", "--json").stdout).session.runs.length).toBe(1);

    r = cli(d, "sessions", "delete", "nope", "--yes");
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("no session 'nope'");
    expect(r.stderr).toContain("agentcore sessions list");
    r = cli(d, "sessions", "delete", "keep", "--yes", "--json");
    expect(JSON.parse(r.stdout)).toMatchObject({ session_id: "keep", deleted: true });
  }, 60_000);

  test("a corrupt journal can be deleted", () => {
    const d = dir("delete-corrupt");
    agent(d, "demo", "one");
    fs.appendFileSync(journal(d, "demo"), "{not json}\n");
    let r = cli(d, "sessions", "delete", "demo");
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("its journal cannot be read");
    expect(r.stderr).toContain("--yes");
    r = cli(d, "sessions", "delete", "demo", "--yes");
    expect(r.status).toBe(0);
    expect(fs.existsSync(journal(d, "demo"))).toBe(false);
  }, 60_000);

  test("list shows the readable sessions when one journal is corrupt, names the corrupt one on stderr and exits 1", () => {
    const d = dir("list-corrupt");
    agent(d, "good", "one");
    agent(d, "bad", "one");
    fs.appendFileSync(journal(d, "bad"), "{not json}\n");
    const r = cli(d, "sessions", "list");
    expect(r.status).toBe(1);
    expect(r.stdout).toContain("good");
    expect(r.stdout).not.toContain("bad");
    expect(r.stderr).toContain("session 'bad' is left out");
    expect(r.stderr).toContain("agentcore sessions delete bad --yes");
    const j = cli(d, "sessions", "list", "--json");
    expect(j.status).toBe(1);
    expect(JSON.parse(j.stdout).map((row: { session_id: string }) => row.session_id)).toEqual(["good"]);
  }, 60_000);

  test("a session with a run still going is refused (and so is a fork at its head), until that process is gone", async () => {
    const d = dir("delete-live");
    agent(d, "demo", "one");
    const child = Bun.spawn([bin, "agent", "--session", "demo", "--script", path.join(work, "slow.jsonl"), "a long task"], {
      cwd: d,
      env: ENV,
      stdout: "ignore",
      stderr: "ignore",
      stdin: "ignore",
    });
    const marks = () => fs.readdirSync(path.dirname(journal(d, "demo"))).filter((n) => n.includes(".run-"));
    for (let i = 0; i < 2000 && marks().length === 0; i++) await Bun.sleep(10);
    expect(marks().length).toBe(1);
    try {
      let r = cli(d, "sessions", "delete", "demo", "--yes");
      expect(r.status).toBe(2);
      expect(r.stderr).toContain(`still going in process ${child.pid}: stop that process first`);
      expect(fs.existsSync(journal(d, "demo"))).toBe(true);
      r = cli(d, "sessions", "fork", "demo");
      expect(r.status).toBe(2);
      expect(r.stderr).toContain(`it is still going in process ${child.pid}: wait for it to finish`);
      expect(r.stderr).toContain("or choose r3 (before the run started)");
    } finally {
      child.kill("SIGKILL");
      await child.exited;
    }
    // its process is gone: the mark is stale, and delete goes ahead
    const r = cli(d, "sessions", "delete", "demo", "--yes");
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    expect(fs.readdirSync(path.dirname(journal(d, "demo")))).toEqual([]);
  }, 60_000);
});

test("sessions --help documents revisions, prefixes and delete", () => {
  const r = cli(work, "sessions", "--help");
  expect(r.stdout).toContain("agentcore sessions delete ID --yes [--force]");
  expect(r.stdout).toContain("RECORD is a revision as 'sessions tree' shows it (r7)");
  expect(r.stdout).toContain("the most recently active first");
  expect(cli(work, "sessions", "delete", "--help").stdout).toContain("--yes");
  expect(cli(work, "--help").stdout).toContain("  sessions  read, branch and recover durable sessions, or delete one\n");
});

test("a subcommand's missing argument or option points at that subcommand's help", () => {
  const d = dir("sub-usage");
  const cases: [string[], string][] = [
    [["sessions", "tree"], "tree"],
    [["sessions", "recover"], "recover"],
    [["sessions", "list", "extra"], "list"],
    [["sessions", "rollback", "demo"], "rollback"],
    [["sessions", "retry", "demo"], "retry"],
  ];
  for (const [args, sub] of cases) {
    const r = cli(d, ...args);
    expect(r.status).toBe(2);
    expect(r.stderr).toStartWith(`agentcore sessions ${sub}: `);
    expect(r.stderr).toEndWith(`\nRun 'agentcore sessions ${sub} --help' for usage.\n`);
  }
});
