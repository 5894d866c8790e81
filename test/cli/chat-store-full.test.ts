// Issue 30 §1 for `agentcore chat`: its session recorder is part of the run,
// as agent's is. The sessions folder is a small tmpfs filled for real (a true
// ENOSPC, root only: CI runs as root, and there a mount that fails is an
// error); the task is larger than the room left, so the run's first record
// cannot be written. The turn must end failed / store_failed with the message
// naming the folder and the fix, the model never asked, the exit status
// non-zero, and nothing anywhere saying completed.
import { afterAll, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { mountSmallTmpfs } from "../support/tmpfs.ts";
import { tmp } from "../support/tmp.ts";

const REPO = resolve(import.meta.dir, "../..");
const mounted = mountSmallTmpfs("64k");
const skip = "skip" in mounted ? mounted.skip : null;
if (skip !== null) console.warn(`skipping the chat store-full test: ${skip}`);
afterAll(() => {
  if ("fs" in mounted) mounted.fs.unmount();
});

describe.skipIf(skip !== null)("chat whose sessions folder is full (a 64 KiB tmpfs)", () => {
  test("the turn ends failed / store_failed naming the folder and the fix; exit 1; nothing says completed", () => {
    const disk = (mounted as { fs: { dir: string } }).fs.dir;
    const sessions = join(disk, "sessions");
    // leave two pages: room for the branch claim the chat takes at start, not for the task's records
    const filled = Bun.spawnSync(["dd", "if=/dev/zero", `of=${join(disk, "filler")}`, "bs=4k", "count=13"]);
    expect(filled.exitCode).toBe(0);
    const work = tmp("agentcore-chat-full-");
    const script = join(work, "script.jsonl");
    writeFileSync(script, `${JSON.stringify({ content: "the model answered" })}\n`);
    const r = Bun.spawnSync(
      [process.execPath, "src/cli/main.ts", "chat", "--script", script, "--sessions-dir", sessions, "--session", "full", "--no-plan"],
      { cwd: REPO, stdin: new TextEncoder().encode(`${"x".repeat(100_000)}\n`), env: { PATH: process.env.PATH ?? "" } },
    );
    rmSync(work, { recursive: true, force: true });
    const stdout = r.stdout.toString().replace(/x{1000,}/g, "<the task>"); // the echoed task, kept out of failure reports
    const stderr = r.stderr.toString();
    expect(r.exitCode).toBe(1);
    expect(stdout).toContain("[run failed: store_failed — the sessions folder");
    expect(stderr).toContain(`agentcore chat: the session journal was not written: the sessions folder ${sessions} is full (ENOSPC)`);
    expect(stderr).toContain("free space there");
    // the run stopped at its first record: the model was never asked, and nothing reads completed
    expect(stdout).not.toContain("the model answered");
    expect(stdout).not.toContain("completed");
    for (const f of readdirSync(sessions)) expect(readFileSync(join(sessions, f), "utf8")).not.toContain('"completed"');
  }, 60_000);
});
