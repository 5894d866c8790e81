/**
 * Child process for the SIGKILL test: opens a HistoryLog at argv[2] and
 * appends records in a loop, forever. After the first append it prints
 * "ready" on stdout, so the parent knows at least one record is on disk.
 */
import { HistoryLog, argumentsDigest, type HistoryRecord } from "../../src/runtime/history.ts";

const path = process.argv[2];
if (!path) {
  process.stderr.write("usage: writer.ts FILE\n");
  process.exit(2);
}
const log = HistoryLog.open(path);
// A few KiB of arguments per record, so that the kill often lands mid-write.
const payload = "x".repeat(4096);
for (let i = 0; ; i++) {
  const args = { i, payload };
  const rec: HistoryRecord = {
    v: 1,
    time: new Date().toISOString(),
    tool: "echo",
    call_id: `c${i}`,
    effect: "read_only",
    decision: { action: "allow", by: "rule:0" },
    duration_ms: 0.5,
    success: i % 3 !== 0,
    code: i % 3 !== 0 ? null : "TOOL_ERROR",
    args_sha256: argumentsDigest(args),
    arguments: args,
  };
  log.append(rec);
  if (i === 0) process.stdout.write("ready\n");
}
