/**
 * exec's resource limits with real processes: a bounded fork bomb, a memory
 * hog, a file-size overrun and a CPU spin each end with RESOURCE_LIMIT naming
 * the limit, and leave no process behind. Every attack is bounded twice: by
 * small limits and a short timeout, and by its own construction (the fork
 * bomb stops at 2^9 processes, the hog at 1 GiB), so a broken limit can't
 * hurt the machine. Isolation is off here (the tests must hold without
 * bubblewrap); with a working bwrap the same checks run isolated too. Where
 * the kernel backstop applies (a pids cgroup agentcore can create, as root
 * here; RLIMIT_NPROC inside bwrap for other users), the fork bomb is also
 * shown never to get past it.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { code, sandbox, type Sandbox } from "../../support/workspace.ts";
import { livePidsWith, SEARCH_PATH, waitGone } from "../../support/procs.ts";
import { bwrapMakesUserNamespace, detectBwrap, pidsCgroupBase } from "../../../src/tools/workspace/sandbox.ts";
import { createExecTool, taskBackstop } from "../../../src/tools/workspace/exec.ts";
import { Census } from "../../../src/tools/workspace/process.ts";
import type { Envelope } from "../../../src/core/envelope.ts";

setDefaultTimeout(60_000);

const LIMITS = { processes: 32, memory_bytes: 96 * 1024 * 1024, file_size_bytes: 1024 * 1024, cpu_seconds: 1 };
const EXEC = { allow: ["bash", "perl", "dd", "ls", "git"], env: ["PATH"], timeout_ms: 20_000, max_output_bytes: 4096, limits: LIMITS };

const bwrap = detectBwrap(SEARCH_PATH);
/** Whether the kernel caps the command's tasks here: a pids cgroup, or RLIMIT_NPROC in bubblewrap's user namespace (not for root). */
const backstop = (isolation: "off" | "required") =>
  pidsCgroupBase() !== null || (isolation === "required" && process.getuid!() !== 0 && bwrapMakesUserNamespace(bwrap!, SEARCH_PATH));
const modes: ("off" | "required")[] = bwrap === null ? ["off"] : ["off", "required"];
const sandboxes: Sandbox[] = [];

afterAll(() => {
  for (const sb of sandboxes) sb.cleanup();
});

function limitError(env: Envelope): { code: string | null; details: Record<string, unknown> } {
  return { code: code(env), details: env.error?.details ?? {} };
}

/**
 * A fork bomb that can't run away: each bash forks two more down to depth 8
 * (511 processes at most), and every leaf then waits 30 s under a name that
 * carries `marker` (so survivors can be found).
 */
function forkBomb(marker: string): string[] {
  return ["bash", "-c", `f() { if [ "$1" -gt 0 ]; then f $(($1 - 1)) & f $(($1 - 1)) & fi; exec -a ${marker} sleep 30; }; f 8`];
}

for (const isolation of modes) {
  describe(`exec limits (isolation ${isolation})`, () => {
    let sb: Sandbox;
    beforeAll(() => {
      sb = sandbox({ exec: { ...EXEC, isolation } }, "agentcore-limits-", { searchPath: SEARCH_PATH, warn: () => {} });
      sandboxes.push(sb);
    });

    test("a bounded fork bomb ends with RESOURCE_LIMIT (processes) and leaves no process behind", async () => {
      const marker = `agentcore-forkbomb-${process.pid}-${isolation}`;
      const env = await sb.call("exec", { argv: forkBomb(marker) });
      const { code: c, details } = limitError(env);
      expect(c).toBe("RESOURCE_LIMIT");
      expect(details).toMatchObject({ limit: "processes", max: 32 });
      expect(env.error!.message).toContain("tools.exec.limits.processes");
      // where the kernel backstop applies, the bomb never got past it; elsewhere the supervisor caught it late
      if (backstop(isolation)) expect(details.observed as number).toBeLessThanOrEqual(taskBackstop(32) + 1);
      else expect(details.observed as number).toBeGreaterThan(32);
      expect(await waitGone(marker)).toEqual([]);
      // the command's cgroup is gone with it
      const base = pidsCgroupBase();
      if (base !== null) expect(fs.readdirSync(base).filter((n) => n.startsWith(`agentcore-${process.pid}-`))).toEqual([]);
    });

    test("a memory hog ends with RESOURCE_LIMIT (memory_bytes)", async () => {
      // 1 MiB more every 10 ms, up to 1 GiB: the supervisor sees it pass 96 MiB
      const hog = 'my @a; for (1 .. 1024) { push @a, "x" x 1048576; select(undef, undef, undef, 0.01) } print "survived\\n"';
      const env = await sb.call("exec", { argv: ["perl", "-e", hog] });
      const { code: c, details } = limitError(env);
      expect(c).toBe("RESOURCE_LIMIT");
      expect(details).toMatchObject({ limit: "memory_bytes", max: LIMITS.memory_bytes });
      expect(details.observed as number).toBeGreaterThan(LIMITS.memory_bytes);
      expect(details.stdout).toBe("");
    });

    test("writing a file over file_size_bytes ends with RESOURCE_LIMIT (file_size_bytes); the file stops at the limit", async () => {
      const env = await sb.call("exec", { argv: ["dd", "if=/dev/zero", `of=big-${isolation}`, "bs=65536", "count=64"] });
      const { code: c, details } = limitError(env);
      expect(c).toBe("RESOURCE_LIMIT");
      expect(details).toMatchObject({ limit: "file_size_bytes", max: LIMITS.file_size_bytes });
      expect(fs.statSync(path.join(sb.root, `big-${isolation}`)).size).toBe(LIMITS.file_size_bytes);
    });

    test("a CPU spin ends with RESOURCE_LIMIT (cpu_seconds)", async () => {
      const env = await sb.call("exec", { argv: ["bash", "-c", "while :; do :; done"] });
      const { code: c, details } = limitError(env);
      expect(c).toBe("RESOURCE_LIMIT");
      expect(details).toMatchObject({ limit: "cpu_seconds", max: 1, timed_out: false });
    });

    test("ordinary commands are untouched by the limits", async () => {
      const env = await sb.call("exec", { argv: ["bash", "-c", "for i in 1 2 3 4 5 6 7 8; do ls >/dev/null & done; wait; echo done"] });
      expect(env.error).toBeNull();
      expect(env.result).toMatchObject({ exit_code: 0, stdout: "done\n", timed_out: false });
    });
  });
}

describe("exec limits from the configuration", () => {
  test("a limit set alone (processes: 4) is enforced, the others keep their defaults", async () => {
    const sb = sandbox(
      { exec: { allow: ["bash"], env: ["PATH"], isolation: "off", timeout_ms: 20_000, limits: { processes: 4 } } },
      "agentcore-limits-",
      { searchPath: SEARCH_PATH, warn: () => {} },
    );
    sandboxes.push(sb);
    const marker = `agentcore-five-${process.pid}`;
    const env = await sb.call("exec", { argv: ["bash", "-c", `for i in 1 2 3 4 5 6 7 8; do (exec -a ${marker} sleep 30) & done; wait`] });
    expect(code(env)).toBe("RESOURCE_LIMIT");
    expect(env.error!.details).toMatchObject({ limit: "processes", max: 4 });
    expect(await waitGone(marker)).toEqual([]);
  });
});

describe("exec limits from the library", () => {
  test("out-of-range limits throw at creation, naming the limit", () => {
    for (const [limits, name] of [
      [{ processes: 0 }, "processes"],
      [{ memoryBytes: 1.5 }, "memory_bytes"],
      [{ fileSizeBytes: -1 }, "file_size_bytes"],
      [{ cpuSeconds: Number.NaN }, "cpu_seconds"],
    ] as const) {
      expect(() =>
        createExecTool({ root: os.tmpdir(), allow: ["ls"], searchPath: SEARCH_PATH, isolation: "off", warn: () => {}, limits }),
      ).toThrow(`exec limits.${name} must be a positive integer`);
    }
  });
});

describe("the command's pids cgroup", () => {
  test.skipIf(pidsCgroupBase() === null)(
    "a process that left the session (setsid) dies with the command; the cgroup is removed",
    async () => {
      const sb = sandbox({ exec: { allow: ["bash"], env: ["PATH"], isolation: "off", timeout_ms: 20_000 } }, "agentcore-limits-", {
        searchPath: SEARCH_PATH,
        warn: () => {},
      });
      sandboxes.push(sb);
      const marker = `agentcore-setsid-${process.pid}`;
      const env = await sb.call("exec", {
        argv: ["bash", "-c", `setsid -f bash -c 'exec -a ${marker} sleep 30'; sleep 0.5; echo started`],
      });
      expect(env.error).toBeNull();
      expect(env.result).toMatchObject({ exit_code: 0, stdout: "started\n" });
      expect(await waitGone(marker)).toEqual([]);
      expect(fs.readdirSync(pidsCgroupBase()!).filter((n) => n.startsWith(`agentcore-${process.pid}-`))).toEqual([]);
    },
  );
});

describe("the process census", () => {
  test("counts a command's processes, grandchildren and re-parented orphans included, and not threads", async () => {
    const marker = `agentcore-census-${process.pid}`;
    // bash starts 3 sleepers in a subshell that exits (they are orphans, re-parented), then 2 of its own
    const child = Bun.spawn(
      [
        "bash",
        "-c",
        `( for i in 1 2 3; do exec -a ${marker} sleep 30 & done ); for i in 1 2; do (exec -a ${marker} sleep 30) & done; echo ready; wait`,
      ],
      { stdout: "pipe", detached: true } as never,
    );
    try {
      const reader = child.stdout.getReader();
      await reader.read();
      const census = new Census(child.pid);
      for (let i = 0; i < 50 && census.members.size < 6; i++) {
        census.update();
        if (census.members.size < 6) await Bun.sleep(50);
      }
      expect(census.members.size).toBe(6);
      expect(livePidsWith(marker).every((p) => census.members.has(p))).toBe(true);
    } finally {
      process.kill(-child.pid, "SIGKILL");
    }
    expect(await waitGone(marker)).toEqual([]);
  });

  test("new threads (which take pids too) are not counted as processes", async () => {
    const own = new Census(process.pid);
    own.update();
    const worker = new Worker(URL.createObjectURL(new Blob(["postMessage('up')"], { type: "application/javascript" })));
    try {
      await new Promise((r) => (worker.onmessage = r));
      own.update(); // reads the pids handed out since, the worker's new threads among them
      const threads = fs
        .readdirSync("/proc/self/task")
        .map(Number)
        .filter((t) => t !== process.pid);
      expect(threads.length).toBeGreaterThan(0);
      expect(own.members.has(process.pid)).toBe(true);
      expect(threads.filter((t) => own.members.has(t))).toEqual([]);
    } finally {
      worker.terminate();
    }
  });
});
