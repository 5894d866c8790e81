/**
 * A writer killed with SIGKILL in the middle of a run: the log it leaves
 * holds only complete, well-formed records, and appending to it still works.
 */
import { afterEach, beforeEach, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { HistoryLog, readHistory } from "../../src/runtime/history.ts";
import { record, tempDir } from "../support/history.ts";

let dir: string;
let cleanup: () => void;
beforeEach(() => ({ dir, cleanup } = tempDir()));
afterEach(() => cleanup());

const WRITER = join(import.meta.dir, "fixtures", "writer.ts");

async function killMidRun(file: string, extraRecords: number): Promise<void> {
  const child = Bun.spawn([process.execPath, WRITER, file], { stdout: "pipe", stderr: "pipe" });
  const reader = child.stdout.getReader();
  let seen = "";
  while (!seen.includes("ready\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`writer exited early: ${await new Response(child.stderr).text()}`);
    seen += new TextDecoder().decode(value);
  }
  // Let the writer get further into its loop, then kill it wherever it is.
  for (;;) {
    if (readFileSync(file).length > extraRecords * 4096) break;
    await Bun.sleep(1);
  }
  child.kill("SIGKILL");
  expect(await child.exited).not.toBe(0);
  expect(child.signalCode).toBe("SIGKILL");
}

test("after a SIGKILL mid-run the log holds only complete records, and appends still work", async () => {
  const file = join(dir, "history.jsonl");
  await killMidRun(file, 20);

  const recs = readHistory(file);
  expect(recs.length).toBeGreaterThanOrEqual(1);
  recs.forEach((r, i) => {
    expect(r.v).toBe(1);
    expect(r.call_id).toBe(`c${i}`); // in order, none missing, none duplicated
    expect(r.tool).toBe("echo");
    expect(r.args_sha256).toMatch(/^[0-9a-f]{64}$/);
    expect((r.arguments as { i: number }).i).toBe(i);
  });

  const log = HistoryLog.open(file);
  log.append(record({ call_id: "after-kill" }));
  log.close();
  const again = readHistory(file);
  expect(again.length).toBe(recs.length + 1);
  expect(again.slice(0, recs.length)).toEqual(recs);
  expect(again[again.length - 1]!.call_id).toBe("after-kill");
}, 60_000);

test("a second writer killed on the same log adds only complete records after the first", async () => {
  const file = join(dir, "shared.jsonl");
  await killMidRun(file, 5);
  const first = readHistory(file).length;
  await killMidRun(file, first + 10);
  const recs = readHistory(file);
  expect(recs.length).toBeGreaterThan(first);
  for (const r of recs) expect(r.args_sha256).toMatch(/^[0-9a-f]{64}$/);
}, 60_000);
