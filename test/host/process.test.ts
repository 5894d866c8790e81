// src/host/process.ts: the one owner of the process's signals and exit; the
// library layers only hold clean-ups (src/core/cleanup.ts). Each case runs in
// a real child process that signals itself.
import { afterAll, describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { REPO_ROOT } from "../support/paths.ts";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentcore-host-"));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const CLEANUP = JSON.stringify(path.join(REPO_ROOT, "src/core/cleanup.ts"));
const HOST = JSON.stringify(path.join(REPO_ROOT, "src/host/process.ts"));

let n = 0;
/** Run `body` (after the imports) as a Bun script; stdout, exit code and signal. */
function script(body: string): { stdout: string; code: number | null; signal: string | null } {
  const file = path.join(dir, `s${++n}.ts`);
  fs.writeFileSync(file, `import { holdCleanup } from ${CLEANUP};\nimport { installProcessHost } from ${HOST};\n${body}\n`);
  const r = Bun.spawnSync([process.execPath, file], { stdout: "pipe", stderr: "pipe", timeout: 30_000 });
  return {
    stdout: r.stdout.toString(),
    code: r.exitCode,
    signal: r.signalCode === undefined || r.signalCode === null ? null : String(r.signalCode),
  };
}

describe("installProcessHost", () => {
  for (const [signal, status] of [
    ["SIGTERM", 143],
    ["SIGINT", 130],
    ["SIGHUP", 129],
  ] as const) {
    test(`${signal} no command handles, while a clean-up is held: the clean-ups run (signal part, then exit part), exit ${status}`, () => {
      const r = script(`installProcessHost();
holdCleanup({ signal: async () => { await new Promise((r) => setTimeout(r, 20)); console.log("signal clean-up"); }, exit: () => console.log("exit clean-up") });
process.kill(process.pid, "${signal}");
setTimeout(() => console.log("not reached"), 5000);`);
      expect(r.stdout).toBe("signal clean-up\nexit clean-up\n");
      expect(r.code).toBe(status);
    });
  }

  test("a command's own listener decides: the host stands aside; the exit clean-ups still run at exit", () => {
    const r = script(`installProcessHost();
holdCleanup({ signal: () => console.log("signal clean-up"), exit: () => console.log("exit clean-up") });
process.on("SIGTERM", () => console.log("command handled it"));
process.kill(process.pid, "SIGTERM");
setTimeout(() => console.log("still running"), 200);`);
    expect(r.stdout).toBe("command handled it\nstill running\nexit clean-up\n");
    expect(r.code).toBe(0);
  });

  test("with nothing held, the host does not listen: a signal keeps its default meaning", () => {
    const r = script(`installProcessHost();
const release = holdCleanup({ signal: () => console.log("signal clean-up") });
release();
console.log(process.listeners("SIGTERM").length);
process.kill(process.pid, "SIGTERM");
setTimeout(() => console.log("not reached"), 5000);`);
    expect(r.stdout).toBe("0\n");
    expect(r.signal).toBe("SIGTERM");
  });

  test("an exit-only clean-up (a cgroup, a branch claim) runs at exit but does not take over signals", () => {
    const r = script(`installProcessHost();
holdCleanup({ exit: () => console.log("exit clean-up") });
console.log(process.listeners("SIGINT").length);`);
    expect(r.stdout).toBe("0\nexit clean-up\n");
    expect(r.code).toBe(0);
  });

  test("without the host, holding clean-ups touches nothing: no listener, no exit hook, default signals", () => {
    const r = script(`const before = [process.listeners("SIGTERM").length, process.listeners("exit").length];
holdCleanup({ signal: () => console.log("signal clean-up"), exit: () => console.log("exit clean-up") });
console.log(JSON.stringify(before) === JSON.stringify([process.listeners("SIGTERM").length, process.listeners("exit").length]));
process.kill(process.pid, "SIGTERM");
setTimeout(() => console.log("not reached"), 5000);`);
    expect(r.stdout).toBe("true\n");
    expect(r.signal).toBe("SIGTERM");
  });
});

describe("the library's plain clean-ups (for an application without the host)", () => {
  test("killLiveGroups() kills the running children's groups; the running call then ends", () => {
    const proc = JSON.stringify(path.join(REPO_ROOT, "src/tools/workspace/process.ts"));
    const r = script(`import { killLiveGroups, liveGroupIds, runProcess } from ${proc};
const p = runProcess({ file: "/bin/sleep", args: ["30"], cwd: "/", env: {}, timeoutMs: 60000, maxOutputBytes: 100 });
await new Promise((r) => setTimeout(r, 200));
console.log(liveGroupIds().length, process.listeners("SIGTERM").length, process.listeners("exit").length);
killLiveGroups();
const res = await p;
console.log(res.signal ?? res.exit_code, liveGroupIds().length);`);
    expect(r.stdout).toBe("1 0 0\nSIGKILL 0\n");
    expect(r.code).toBe(0);
  });
});
