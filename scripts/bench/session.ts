/**
 * Session journal benchmark.
 *
 *   bun scripts/bench/session.ts [--appends N] [--dir DIR]
 *
 * 1. Append throughput: N journal appends, one record each (lock, torn-tail
 *    check, write, fsync of the file; the directory only at the first write)
 *    against a bare loop that writes the same lines to an open file with
 *    write + fsync each, in the same run.
 * 2. Load + restore: journals of 1k, 10k and 100k records (runs of 11
 *    records, so sizes are rounded up to whole runs: a task, 4 tool calls with their results, an answer, the finish)
 *    loaded by a fresh storage and restored into a new agent; time per record
 *    for each size shows whether the cost grows linearly.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parseArgs } from "node:util";
import { createAgent } from "../../src/agent/index.ts";
import { ScriptedModel } from "../../src/providers/scripted.ts";
import { JournalIndex, serializeRecord } from "../../src/session/journal.ts";
import { JsonlSessionStorage } from "../../src/session/jsonl.ts";
import { restoreSession } from "../../src/session/restore.ts";
import type { SessionRecordDraft } from "../../src/session/types.ts";

const { values } = parseArgs({ options: { appends: { type: "string" }, dir: { type: "string" } } });
const N = Number(values.appends ?? 2000);
const root = fs.mkdtempSync(path.join(values.dir ?? os.tmpdir(), "agentcore-bench-session-"));

const AGENT = "bench-agent";
const usage = { input_tokens: 1200, output_tokens: 80 };
const result = {
  status: "completed",
  stop_reason: "text_response",
  turns: 5,
  output: "done",
  error: null,
  usage: { input_tokens: 6000, output_tokens: 400, total_tokens: 6400, request_count: 5, reported_request_count: 5, complete: true },
};

/** The drafts of run number `k` (11 records). */
function runDrafts(session: string, k: number): SessionRecordDraft[] {
  const runId = `run-${k}`;
  const d = (sequence: number, type: SessionRecordDraft["type"], data: Record<string, unknown>): SessionRecordDraft => ({
    session_id: session,
    agent_id: AGENT,
    branch_id: "main",
    sequence,
    type,
    data: { run_id: runId, ...data },
  });
  const out: SessionRecordDraft[] = [d(1, "run_started", { task: `task ${k}: read the file and summarise it` })];
  let seq = 2;
  for (let i = 0; i < 4; i++) {
    const id = `call-${k}-${i}`;
    out.push(
      d(seq++, "message_appended", {
        message: {
          role: "assistant",
          content: null,
          tool_calls: [{ id, type: "function", function: { name: "read_file", arguments: `{"path":"src/file${i}.ts"}` } }],
          usage,
        },
      }),
    );
    out.push(
      d(seq++, "messages_appended", {
        messages: [{ role: "tool", tool_call_id: id, content: `{"content":"${"line of file content ".repeat(10)}","truncated":false}` }],
      }),
    );
  }
  out.push(d(seq++, "message_appended", { message: { role: "assistant", content: "The file defines the session journal.", usage } }));
  out.push(d(seq++, "run_finished", { result }));
  return out;
}

function* drafts(session: string, count: number): Generator<SessionRecordDraft> {
  let n = 0;
  for (let k = 0; ; k++)
    for (const dr of runDrafts(session, k)) {
      if (n++ === count) return;
      yield dr;
    }
}

const fmt = (x: number, d = 0) => x.toLocaleString("en-US", { maximumFractionDigits: d, minimumFractionDigits: d });

// ---------------------------------------------------------------- 1. append throughput
{
  const dir = path.join(root, "append");
  const storage = new JsonlSessionStorage(dir);
  const lines: Buffer[] = [];
  const t0 = performance.now();
  for (const dr of drafts("append", N)) lines.push(Buffer.from(serializeRecord(await storage.append(dr))));
  const journalMs = performance.now() - t0;

  const bare = path.join(root, "bare.jsonl");
  const fd = fs.openSync(bare, "a");
  const t1 = performance.now();
  for (const l of lines) {
    fs.writeSync(fd, l);
    fs.fsyncSync(fd);
  }
  const bareMs = performance.now() - t1;
  fs.closeSync(fd);
  const jr = N / (journalMs / 1000);
  const br = N / (bareMs / 1000);
  console.log(
    `Append throughput (${fmt(N)} records, avg ${fmt(lines.reduce((a, l) => a + l.length, 0) / N)} bytes; ${os.platform()} ${root})`,
  );
  console.log("| loop | records/s | µs/record |");
  console.log("|---|---:|---:|");
  console.log(`| JsonlSessionStorage.append (lock + write + fsync) | ${fmt(jr)} | ${fmt((journalMs * 1000) / N)} |`);
  console.log(`| bare write + fsync, file kept open | ${fmt(br)} | ${fmt((bareMs * 1000) / N)} |`);
  console.log(`| ratio journal / bare | ${fmt(jr / br, 2)} | |`);
  console.log();
}

// ---------------------------------------------------------------- 2. load + restore
console.log("Load + restore (fresh storage: read, strict-parse and validate every line, project main, restore into a new agent)");
console.log("| records | file MB | load ms | restore ms | total ms | µs/record |");
console.log("|---:|---:|---:|---:|---:|---:|");
for (const target of [1_000, 10_000, 100_000]) {
  const size = Math.ceil(target / 11) * 11; // whole runs, so the session can be restored
  const dir = path.join(root, `load-${size}`);
  fs.mkdirSync(dir, { recursive: true });
  const storage = new JsonlSessionStorage(dir);
  const index = new JournalIndex("load");
  const chunks: string[] = [];
  for (const dr of drafts("load", size)) {
    const rec = index.build(dr, index.head("main")?.record_id ?? null);
    index.add(rec);
    chunks.push(serializeRecord(rec));
  }
  fs.writeFileSync(storage.fileFor("load"), chunks.join(""));
  const mb = fs.statSync(storage.fileFor("load")).size / 1e6;
  const t0 = performance.now();
  const checkout = (await new JsonlSessionStorage(dir).checkout("load"))!;
  const t1 = performance.now();
  const agent = createAgent({ agentId: AGENT, model: new ScriptedModel([]), tools: [] });
  restoreSession(agent, checkout);
  const t2 = performance.now();
  if (agent.messages.length !== (size / 11) * 10) throw new Error("restore lost messages");
  await agent.shutdown();
  const total = t2 - t0;
  console.log(
    `| ${fmt(size)} | ${fmt(mb, 1)} | ${fmt(t1 - t0, 1)} | ${fmt(t2 - t1, 1)} | ${fmt(total, 1)} | ${fmt((total * 1000) / size, 1)} |`,
  );
}
fs.rmSync(root, { recursive: true, force: true });
