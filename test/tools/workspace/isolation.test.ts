/**
 * exec under bubblewrap: a command cannot write outside the root, open a
 * network socket, or see host processes; a timeout still kills everything.
 * Each check has a control run with isolation off that shows the same
 * command *does* succeed unisolated (so the isolated failure is the sandbox's
 * doing). Without a working bwrap these tests are skipped, with the reason in
 * their names; CI installs bubblewrap (.ci/run), so there they run.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import * as fs from "node:fs";
import * as net from "node:net";
import * as path from "node:path";
import { code, sandbox, type Sandbox } from "../../support/workspace.ts";
import { forkingScript, SEARCH_PATH, waitGone } from "../../support/procs.ts";
import { detectBwrap, bwrapArgs } from "../../../src/tools/workspace/sandbox.ts";
import { createExecTool } from "../../../src/tools/workspace/exec.ts";
import { createRuntime } from "../../../src/runtime/index.ts";
import { createLogger } from "../../../src/core/logger.ts";

// real child processes and files on a machine shared with other jobs: generous per-test limits
setDefaultTimeout(60_000);

// AGENTCORE_TEST_NO_BWRAP=1 simulates a machine without bubblewrap (to check the skip path)
const bwrap = process.env.AGENTCORE_TEST_NO_BWRAP === "1" ? null : detectBwrap(SEARCH_PATH);
const SKIP = bwrap === null ? " (SKIPPED: bubblewrap is missing or not working on this machine)" : "";
if (bwrap === null) console.warn("isolation tests skipped: bubblewrap (bwrap) is missing or not working on this machine");

let iso: Sandbox;
let open: Sandbox;
const exec = { allow: ["bun", "ls", "cat"], env: ["PATH"], timeout_ms: 20_000, max_output_bytes: 65536 };

beforeAll(() => {
  if (bwrap === null) return;
  iso = sandbox({ exec: { ...exec, isolation: "required" } }, "agentcore-iso-", { searchPath: SEARCH_PATH, warn: () => {} });
  // the control shares the same folders
  open = sandbox({ exec: { ...exec, isolation: "off" } }, "agentcore-open-", { searchPath: SEARCH_PATH, warn: () => {} });
  fs.mkdirSync(path.join(iso.root, ".git", "hooks"), { recursive: true });
  fs.mkdirSync(path.join(iso.root, ".agentcore"));
});

afterAll(() => {
  iso?.cleanup();
  open?.cleanup();
});

type R = { exit_code: number | null; stdout: string; stderr: string; timed_out: boolean; isolated: boolean };
async function runIn(sb: Sandbox, argv: string[], timeout_ms?: number): Promise<R> {
  const env = await sb.call("exec", { argv, ...(timeout_ms ? { timeout_ms } : {}) });
  expect(env.error).toBeNull();
  return env.result as R;
}

/** A bun script that tries to write each path and prints {path: "ok" | errno}. */
function writer(paths: string[]): string {
  return `const fs = require("node:fs"); const out = {};
for (const p of ${JSON.stringify(paths)}) { try { fs.writeFileSync(p, "pwned"); out[p] = "ok"; } catch (e) { out[p] = e.code; } }
console.log(JSON.stringify(out));`;
}

describe("exec isolation under bubblewrap", () => {
  test.skipIf(bwrap === null)(
    `cannot write outside the root (system, other folders, .git, .agentcore); can write inside${SKIP}`,
    async () => {
      const targets = [
        path.join(iso.outside, "pwned.txt"),
        path.join(iso.base, "pwned.txt"),
        "/etc/agentcore-pwned",
        "/usr/agentcore-pwned",
        path.join(iso.root, ".git", "hooks", "pre-commit"),
        path.join(iso.root, ".agentcore", "config.json"),
        path.join(iso.root, "inside.txt"),
      ];
      const r = await runIn(iso, ["bun", "-e", writer(targets)]);
      expect(r.isolated).toBe(true);
      const res = JSON.parse(r.stdout) as Record<string, string>;
      expect(res[path.join(iso.root, "inside.txt")]).toBe("ok");
      // /tmp is a private tmpfs inside the sandbox: a write under the host's
      // /tmp (here iso.base) may succeed there but never reaches the host.
      for (const t of targets.slice(0, 6)) if (t !== path.join(iso.base, "pwned.txt")) expect(res[t]).not.toBe("ok");
      expect(res[path.join(iso.outside, "pwned.txt")]).toBe("ENOENT");
      expect(res["/etc/agentcore-pwned"]).toBe("EROFS");
      expect(res[path.join(iso.root, ".git", "hooks", "pre-commit")]).toBe("EROFS");
      for (const t of targets.slice(0, 6)) expect(fs.existsSync(t)).toBe(false);
      expect(fs.readFileSync(path.join(iso.root, "inside.txt"), "utf8")).toBe("pwned");

      // control: unisolated, the same command writes outside the root
      const outsideTarget = path.join(open.outside, "pwned.txt");
      const c = await runIn(open, ["bun", "-e", writer([outsideTarget])]);
      expect(c.isolated).toBe(false);
      expect(JSON.parse(c.stdout)).toEqual({ [outsideTarget]: "ok" });
      expect(fs.existsSync(outsideTarget)).toBe(true);
    },
  );

  test.skipIf(bwrap === null)(`agentcore's config file inside the root is read-only in the sandbox${SKIP}`, async () => {
    const cfg = path.join(iso.root, "agentcore.jsonc");
    fs.writeFileSync(cfg, "{}");
    const tool = createExecTool({
      root: iso.root,
      allow: ["bun"],
      env: ["PATH"],
      searchPath: SEARCH_PATH,
      isolation: "required",
      warn: () => {},
      protect: [cfg],
    });
    const rt = createRuntime({
      root: iso.root,
      builtins: false,
      tools: [tool as never],
      logger: createLogger({ level: "error", sink: () => {} }),
    });
    const env = await rt.dispatchCall({
      id: "c",
      tool: "exec",
      arguments: { argv: ["bun", "-e", writer([cfg, path.join(iso.root, "other.json")])] },
      shape: "agentcore",
    });
    expect(JSON.parse((env.result as R).stdout)).toEqual({ [cfg]: "EROFS", [path.join(iso.root, "other.json")]: "ok" });
    expect(fs.readFileSync(cfg, "utf8")).toBe("{}");
  });

  test.skipIf(bwrap === null)(`cannot open a network socket to the host${SKIP}`, async () => {
    let connections = 0;
    const server = net.createServer((s) => {
      connections++;
      s.end();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as net.AddressInfo).port;
    const script = `const s = require("node:net").connect(${port}, "127.0.0.1");
s.on("connect", () => { console.log("connected"); process.exit(0); });
s.on("error", (e) => { console.log("error " + e.code); process.exit(3); });`;
    try {
      const r = await runIn(iso, ["bun", "-e", script]);
      expect(r.stdout).toStartWith("error ");
      expect(r.exit_code).not.toBe(0);
      expect(connections).toBe(0);
      // control: unisolated it connects
      const c = await runIn(open, ["bun", "-e", script]);
      expect(c.stdout).toBe("connected\n");
      for (let i = 0; i < 50 && connections === 0; i++) await Bun.sleep(20);
      expect(connections).toBe(1);
    } finally {
      server.close();
    }
  });

  // Host services listen on Unix sockets under /run (D-Bus and the systemd user
  // manager in /run/user/UID, docker.sock): a read-only bind does not stop
  // connect(), and the network namespace does not cover them.
  const runDir = (() => {
    try {
      return fs.mkdtempSync("/run/agentcore-sock-");
    } catch {
      return null;
    }
  })();
  afterAll(() => {
    if (runDir !== null) fs.rmSync(runDir, { recursive: true, force: true });
  });
  test.skipIf(bwrap === null || runDir === null)(
    `cannot connect to a host Unix socket under /run${bwrap === null ? SKIP : runDir === null ? " (SKIPPED: /run is not writable here)" : ""}`,
    async () => {
      const sock = path.join(runDir!, "host.sock");
      let connections = 0;
      const server = net.createServer((s) => {
        connections++;
        s.end("hello from the host\n");
      });
      await new Promise<void>((resolve) => server.listen(sock, resolve));
      const script = `const s = require("node:net").connect(${JSON.stringify(sock)});
s.on("data", (d) => { console.log("got " + d); process.exit(0); });
s.on("error", (e) => { console.log("error " + e.code); process.exit(3); });`;
      try {
        const r = await runIn(iso, ["bun", "-e", script]);
        expect(r.stdout).toBe("error ENOENT\n");
        expect(connections).toBe(0);
        // control: unisolated it connects
        const c = await runIn(open, ["bun", "-e", script]);
        expect(c.stdout).toStartWith("got hello from the host");
        expect(connections).toBe(1);
      } finally {
        server.close();
      }
    },
  );

  test.skipIf(bwrap === null)(`cannot see host processes (new PID namespace)${SKIP}`, async () => {
    const pids = (out: string) =>
      out
        .split("\n")
        .filter((l) => /^\d+$/.test(l))
        .map(Number);
    const r = await runIn(iso, ["ls", "/proc"]);
    const inside = pids(r.stdout);
    expect(inside.length).toBeGreaterThan(0);
    expect(inside).not.toContain(process.pid);
    expect(inside.every((p) => p < 100)).toBe(true);
    const c = await runIn(open, ["ls", "/proc"]);
    expect(pids(c.stdout)).toContain(process.pid);
  });

  test.skipIf(bwrap === null)(`a timeout kills the sandboxed grandchildren too${SKIP}`, async () => {
    const marker = `agentcore-iso-grandchild-${process.pid}-${Date.now()}`;
    const r = await runIn(iso, ["bun", "-e", forkingScript(marker)], 2000);
    expect(r.stdout).toBe("started\n");
    expect(r.timed_out).toBe(true);
    expect(await waitGone(marker)).toEqual([]);
  });

  test.skipIf(bwrap === null)(`a bypass refused before bwrap is still refused${SKIP}`, async () => {
    expect(code(await iso.call("exec", { argv: ["sh", "-c", "id"] }))).toBe("COMMAND_NOT_ALLOWED");
  });
});

describe("exec isolation: programs that live under /tmp", () => {
  // A checkout under /tmp (CI clones anywhere) has its allowlisted programs
  // there too, behind the sandbox's private /tmp: they are bound back read-only.
  test.skipIf(bwrap === null)(`an allowlisted program under /tmp, reached through a symlink, still runs isolated${SKIP}`, async () => {
    const base = fs.realpathSync(fs.mkdtempSync("/tmp/agentcore-tmpprog-"));
    try {
      const real = path.join(base, "pkg", "bin");
      const link = path.join(base, "dotbin");
      fs.mkdirSync(real, { recursive: true });
      fs.mkdirSync(link);
      fs.copyFileSync("/bin/echo", path.join(real, "say"));
      fs.chmodSync(path.join(real, "say"), 0o755);
      fs.symlinkSync(path.join("..", "pkg", "bin", "say"), path.join(link, "say"));
      const args = bwrapArgs(iso.root, iso.root, path.join(link, "say"), ["x"]);
      expect(args.join(" ")).toContain(`--ro-bind ${link} ${link} --ro-bind ${real} ${real}`);
      const tool = createExecTool({
        root: iso.root,
        allow: ["say"],
        env: ["PATH"],
        searchPath: [link, ...SEARCH_PATH],
        isolation: "required",
        warn: () => {},
      });
      const rt = createRuntime({
        root: iso.root,
        builtins: false,
        tools: [tool as never],
        logger: createLogger({ level: "error", sink: () => {} }),
      });
      const env = await rt.dispatchCall({
        id: "c",
        tool: "exec",
        arguments: { argv: ["say", "hello", "from", "tmp"] },
        shape: "agentcore",
      });
      expect(env.error).toBeNull();
      expect(env.result as R).toMatchObject({ exit_code: 0, stdout: "hello from tmp\n", isolated: true });
    } finally {
      fs.rmSync(base, { recursive: true, force: true });
    }
  });

  test("bwrap arguments bind nothing extra for programs outside /tmp, or inside the root", () => {
    const args = bwrapArgs("/tmp/some-root", "/tmp/some-root", "/usr/bin/ls", []).join(" ");
    expect(args).not.toContain("--ro-bind /usr");
    const inRoot = bwrapArgs("/tmp/some-root", "/tmp/some-root", "/tmp/some-root/bin/tool", []).join(" ");
    expect(inRoot).not.toContain("--ro-bind /tmp/some-root/bin");
    // a program under the hidden /run (NixOS's /run/current-system/sw/bin) is bound back, after the tmpfs
    if (fs.existsSync("/run") && fs.lstatSync("/run").isDirectory()) {
      const nix = bwrapArgs("/tmp/some-root", "/tmp/some-root", "/run/current-system/sw/bin/git", []).join(" ");
      const bindBack = nix.indexOf("--ro-bind /run/current-system/sw/bin /run/current-system/sw/bin");
      expect(nix.indexOf("--tmpfs /run ")).toBeGreaterThan(0);
      expect(bindBack).toBeGreaterThan(nix.indexOf("--tmpfs /run "));
    }
  });
});

describe("bwrap arguments", () => {
  test("the root is bound writable, .git and .agentcore read-only; symlinks are never bound", () => {
    const sb = sandbox({}, "agentcore-bwargs-");
    try {
      fs.mkdirSync(path.join(sb.root, ".git"));
      fs.symlinkSync("/etc", path.join(sb.root, ".agentcore"));
      const args = bwrapArgs(sb.root, path.join(sb.root, "sub"), "/usr/bin/ls", ["-la"]);
      const hidden = ["/tmp", ...["/run", "/var/run"].filter((p) => fs.existsSync(p) && fs.lstatSync(p).isDirectory())];
      expect(args.join(" ")).toBe(
        `--ro-bind / / --dev /dev --proc /proc ${hidden.map((t) => `--tmpfs ${t}`).join(" ")} --bind ${sb.root} ${sb.root} --ro-bind ${sb.root}/.git ${sb.root}/.git ` +
          `--unshare-all --die-with-parent --new-session --cap-drop ALL --chdir ${sb.root}/sub -- /usr/bin/ls -la`,
      );
    } finally {
      sb.cleanup();
    }
  });
});
