/**
 * exec's environment denylist and resource limits through the compiled
 * binary: the TAR_OPTIONS attack (proven against plain tar first) is refused
 * at start-up with exit 2 naming the key, scrubbed when not allowlisted, and
 * refused per call; bad `tools.exec.limits` exit 2 naming the key; a bounded
 * fork bomb ends with RESOURCE_LIMIT and leaves nothing behind.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { binaryPath, REPO } from "../../support/binary.ts";
import { waitGone } from "../../support/procs.ts";

let base: string;
let root: string;

beforeAll(() => {
  base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "agentcore-execcli-")));
  root = path.join(base, "root");
  fs.mkdirSync(root);
  fs.writeFileSync(path.join(root, "a.txt"), "hello\n");
});
afterAll(() => fs.rmSync(base, { recursive: true, force: true }));

function run(argv: string[], extraEnv: Record<string, string> = {}) {
  const r = Bun.spawnSync(argv, { cwd: base, stdin: "ignore", env: { PATH: process.env.PATH!, HOME: base, NO_COLOR: "1", ...extraEnv } });
  return { status: r.exitCode, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

function config(obj: unknown, name: string): string {
  const p = path.join(base, name);
  fs.writeFileSync(p, JSON.stringify({ root: "./root", ...(obj as object) }));
  return p;
}

const call = (args: unknown) => JSON.stringify({ id: "t", tool: "exec", arguments: args });

describe("TAR_OPTIONS, a program in disguise", () => {
  const marker = () => path.join(base, "TAR-OPTIONS-RAN");
  const attack = () => ({ TAR_OPTIONS: `--checkpoint=1 --checkpoint-action="exec=touch ${marker()}"` });

  test("the attack is real: plain tar runs the command TAR_OPTIONS names", () => {
    const r = Bun.spawnSync(["tar", "-cf", path.join(base, "control.tar"), "a.txt"], {
      cwd: root,
      env: { PATH: process.env.PATH!, ...attack() },
    });
    expect(r.exitCode).toBe(0);
    expect(fs.existsSync(marker())).toBe(true);
    fs.rmSync(marker());
  });

  test("allowlisting it stops start-up: exit 2, naming the key and the variable; nothing runs", () => {
    fs.rmSync(marker(), { force: true });
    const cfg = config({ tools: { exec: { allow: ["tar"], env: ["PATH", "TAR_OPTIONS"], isolation: "off" } } }, "tar-allow.json");
    const r = run([binaryPath(), "--config", cfg, "execute", call({ argv: ["tar", "-cf", "out.tar", "a.txt"] })], attack());
    expect(r.status).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain('"tools.exec.env[1]": environment variable "TAR_OPTIONS" can\'t be allowlisted');
    expect(r.stderr).toContain("--checkpoint-action=exec=");
    expect(fs.existsSync(marker())).toBe(false);
    expect(fs.existsSync(path.join(root, "out.tar"))).toBe(false);
  }, 120_000);

  test("not allowlisted, agentcore's own TAR_OPTIONS never reaches tar; a call can't set it", () => {
    fs.rmSync(marker(), { force: true });
    const cfg = config({ tools: { exec: { allow: ["tar"], env: ["PATH"], isolation: "off" } } }, "tar-plain.json");
    const r = run([binaryPath(), "--config", cfg, "execute", call({ argv: ["tar", "-cf", "out.tar", "a.txt"] })], attack());
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout).result).toMatchObject({ exit_code: 0 });
    expect(fs.existsSync(path.join(root, "out.tar"))).toBe(true);
    expect(fs.existsSync(marker())).toBe(false);
    const q = run([binaryPath(), "--config", cfg, "execute", call({ argv: ["tar", "-cf", "out2.tar", "a.txt"], env: attack() })]);
    expect(q.status).toBe(1);
    expect(JSON.parse(q.stdout).error).toMatchObject({ code: "COMMAND_NOT_ALLOWED", details: { env: "TAR_OPTIONS" } });
    expect(fs.existsSync(marker())).toBe(false);
    expect(fs.existsSync(path.join(root, "out2.tar"))).toBe(false);
  }, 120_000);
});

describe("exec limits through the binary", () => {
  test("bad tools.exec.limits exit 2 naming the key", () => {
    const cases: [unknown, string][] = [
      [3, '"tools.exec.limits" must be an object'],
      [{ processes: 0 }, '"tools.exec.limits.processes" must be an integer from 1 to 1000000 (processes)'],
      [{ memory_bytes: 4096 }, '"tools.exec.limits.memory_bytes" must be an integer from 1048576'],
      [{ cpu_seconds: 1.5 }, '"tools.exec.limits.cpu_seconds" must be an integer from 1'],
      [{ file_size_bytes: "1G" }, '"tools.exec.limits.file_size_bytes" must be an integer from 1'],
      [{ threads: 4 }, 'unknown key "tools.exec.limits.threads" (known: processes, memory_bytes, file_size_bytes, cpu_seconds)'],
    ];
    cases.forEach(([limits, message], i) => {
      const cfg = config({ tools: { exec: { allow: ["ls"], limits } } }, `limits-${i}.json`);
      const r = run([binaryPath(), "--config", cfg, "tools"]);
      expect(r.status).toBe(2);
      expect(r.stderr).toContain(message);
      expect(r.stdout).toBe("");
    });
  }, 120_000);

  test("a bounded fork bomb ends with RESOURCE_LIMIT (exit 1) and leaves no process behind", async () => {
    const marker = `agentcore-cli-forkbomb-${process.pid}`;
    const cfg = config(
      { tools: { exec: { allow: ["bash"], env: ["PATH"], timeout_ms: 20_000, limits: { processes: 16, cpu_seconds: 10 } } } },
      "bomb.json",
    );
    // at most 2^8 processes by construction, each a 30 s sleep named after the marker
    const bomb = `f() { if [ "$1" -gt 0 ]; then f $(($1 - 1)) & f $(($1 - 1)) & fi; exec -a ${marker} sleep 30; }; f 7`;
    const r = run([binaryPath(), "--config", cfg, "execute", call({ argv: ["bash", "-c", bomb] })]);
    expect(r.status).toBe(1);
    const env = JSON.parse(r.stdout);
    expect(env.error.code).toBe("RESOURCE_LIMIT");
    expect(env.error.details).toMatchObject({ limit: "processes", max: 16 });
    expect(env.error.message).toContain("tools.exec.limits.processes");
    expect(await waitGone(marker)).toEqual([]);
  }, 120_000);

  test("deno run -A: the same fork bomb ends the same way; without -A, start-up warns that processes and memory_bytes are not enforced", async () => {
    const marker = `agentcore-deno-forkbomb-${process.pid}`;
    const cfg = config(
      { tools: { exec: { allow: ["bash", "ls"], env: ["PATH"], timeout_ms: 20_000, limits: { processes: 16, cpu_seconds: 10 } } } },
      "bomb-deno.json",
    );
    const bomb = `f() { if [ "$1" -gt 0 ]; then f $(($1 - 1)) & f $(($1 - 1)) & fi; exec -a ${marker} sleep 30; }; f 7`;
    const deno = path.join(REPO, "node_modules/.bin/deno");
    const main = path.join(REPO, "src/cli/main.ts");
    const r = run([deno, "run", "-A", main, "--config", cfg, "execute", call({ argv: ["bash", "-c", bomb] })], {
      DENO_NO_UPDATE_CHECK: "1",
    });
    expect(r.status).toBe(1);
    expect(JSON.parse(r.stdout).error).toMatchObject({ code: "RESOURCE_LIMIT", details: { limit: "processes", max: 16 } });
    expect(await waitGone(marker)).toEqual([]);
    const q = run(
      [
        deno,
        "run",
        "--allow-read",
        "--allow-env",
        "--allow-write",
        "--allow-run",
        main,
        "--config",
        cfg,
        "execute",
        call({ argv: ["ls"] }),
      ],
      { DENO_NO_UPDATE_CHECK: "1" },
    );
    expect(q.status).toBe(0);
    expect(q.stderr).toContain("exec can't enforce the processes and memory_bytes limits");
  }, 120_000);
});

function git(cwd: string, ...args: string[]) {
  const r = Bun.spawnSync(["git", "-c", "user.email=a@b", "-c", "user.name=a", ...args], {
    cwd,
    env: { PATH: process.env.PATH!, HOME: base },
  });
  if (r.exitCode !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr.toString()}`);
}

const which = (name: string) => Bun.which(name);

describe("exec's environment: npm_config_* in any case, program variables, XDG_* and GNUPGHOME", () => {
  test("npm reads npm_config_* in any case, so the denylist does too; compilers' and runtimes' program variables are refused", async () => {
    const { envDenial } = await import("../../../src/tools/workspace/rules.ts");
    for (const n of [
      "npm_config_script_shell",
      "NPM_CONFIG_SCRIPT_SHELL",
      "Npm_Config_script_shell",
      "nPM_cONFIG_node_options",
      "NODE_REPL_EXTERNAL_MODULE",
      "OPENSSL_MODULES",
      "GCC_EXEC_PREFIX",
      "COMPILER_PATH",
      "GOFLAGS",
      "GOENV",
      "RUSTC",
      "RUSTDOC",
      "RUSTC_WORKSPACE_WRAPPER",
    ]) {
      expect([n, envDenial(n)]).not.toEqual([n, null]);
    }
    expect(envDenial("npm_configx")).toBeNull();
  });

  test.skipIf(which("npm") === null)(
    "the case attack is real (npm takes Npm_Config_foo as foo), and the binary refuses it at start-up",
    () => {
      const r = Bun.spawnSync(["npm", "config", "get", "foo"], {
        cwd: base,
        env: { PATH: process.env.PATH!, HOME: base, Npm_Config_foo: "from-mixed-case" },
      });
      expect(r.stdout.toString().trim()).toBe("from-mixed-case");
      const cfg = path.join(base, "npm-case.json");
      fs.writeFileSync(cfg, JSON.stringify({ tools: { exec: { allow: ["ls"], env: ["PATH", "Npm_Config_script_shell"] } } }));
      const out = run([
        binaryPath(),
        "--root",
        root,
        "--config",
        cfg,
        "execute",
        JSON.stringify({ id: "1", tool: "exec", arguments: { argv: ["ls"] } }),
      ]);
      expect(out.status).toBe(2);
      expect(out.stderr).toContain('"tools.exec.env[1]": environment variable "Npm_Config_script_shell" can\'t be allowlisted');
    },
    120_000,
  );

  test("a call can't set any XDG_* variable nor GNUPGHOME, allowlisted or not (they name where configuration is read)", () => {
    const cfg = path.join(base, "xdg.json");
    fs.writeFileSync(
      cfg,
      JSON.stringify({ tools: { exec: { allow: ["ls"], env: ["PATH", "XDG_CONFIG_DIRS", "GNUPGHOME"], isolation: "off" } } }),
    );
    for (const name of ["XDG_CONFIG_DIRS", "GNUPGHOME"]) {
      const out = run([
        binaryPath(),
        "--root",
        root,
        "--config",
        cfg,
        "execute",
        JSON.stringify({ id: "1", tool: "exec", arguments: { argv: ["ls"], env: { [name]: root } } }),
      ]);
      const env = JSON.parse(out.stdout);
      expect(env.success).toBe(false);
      expect(env.error.code).toBe("COMMAND_NOT_ALLOWED");
      expect(env.error.message).toContain("keeps the operator's value");
    }
  }, 120_000);
});

describe("exec limits: the sandbox's /tmp is memory too", () => {
  const tools = ["sh", "dd", "du"].every((n) => which(n) !== null);
  test.skipIf(which("bwrap") === null || !tools)(
    "files written to the private /tmp can't hold more than memory_bytes (a tmpfs no VmRSS counts)",
    () => {
      const cfg = path.join(base, "tmpfs.json");
      const mem = 64 * 1024 * 1024;
      fs.writeFileSync(
        cfg,
        JSON.stringify({
          tools: {
            exec: {
              allow: ["sh", "dd", "du"],
              isolation: "required",
              timeout_ms: 30_000,
              limits: { processes: 16, memory_bytes: mem, file_size_bytes: 9 * 1024 * 1024, cpu_seconds: 20 },
            },
          },
        }),
      );
      // 12 files of 8 MiB: 96 MiB, each under file_size_bytes, all of it over memory_bytes
      const script =
        "n=0; for i in 1 2 3 4 5 6 7 8 9 10 11 12; do dd if=/dev/zero of=/tmp/f$i bs=1048576 count=8 2>/dev/null && n=$((n+1)); done; echo written=$n; du -sk /tmp";
      const out = run([
        binaryPath(),
        "--root",
        root,
        "--config",
        cfg,
        "execute",
        JSON.stringify({ id: "1", tool: "exec", arguments: { argv: ["sh", "-c", script] } }),
      ]);
      const env = JSON.parse(out.stdout);
      expect(env.success).toBe(true);
      expect(env.result.isolated).toBe(true);
      const written = Number(/written=(\d+)/.exec(env.result.stdout)?.[1]);
      const kib = Number(/^(\d+)\s+\/tmp/m.exec(env.result.stdout)?.[1]);
      expect(written).toBeLessThan(12);
      expect(kib * 1024).toBeLessThan(mem + mem / 16); // du counts the folder and block slack too
    },
    120_000,
  );

  test.skipIf(which("bwrap") === null || !tools)(
    "nor /dev (bubblewrap's --dev is a tmpfs): /dev/shm is as small, /dev itself read-only, /dev/null still writable",
    () => {
      const cfg = path.join(base, "devshm.json");
      const mem = 64 * 1024 * 1024;
      fs.writeFileSync(
        cfg,
        JSON.stringify({
          tools: {
            exec: {
              allow: ["sh", "dd", "du"],
              isolation: "required",
              timeout_ms: 30_000,
              limits: { processes: 16, memory_bytes: mem, file_size_bytes: 9 * 1024 * 1024, cpu_seconds: 20 },
            },
          },
        }),
      );
      const script =
        "n=0; for i in 1 2 3 4 5 6 7 8 9 10 11 12; do dd if=/dev/zero of=/dev/shm/f$i bs=1048576 count=8 2>/dev/null && n=$((n+1)); done; echo written=$n; " +
        "dd if=/dev/zero of=/dev/extra bs=1024 count=1 2>/dev/null && echo dev-writable; echo x > /dev/null && echo null-ok";
      const out = run([
        binaryPath(),
        "--root",
        root,
        "--config",
        cfg,
        "execute",
        JSON.stringify({ id: "1", tool: "exec", arguments: { argv: ["sh", "-c", script] } }),
      ]);
      const env = JSON.parse(out.stdout);
      expect(env.success).toBe(true);
      expect(Number(/written=(\d+)/.exec(env.result.stdout)?.[1])).toBeLessThan(12);
      expect(env.result.stdout).not.toContain("dev-writable");
      expect(env.result.stdout).toContain("null-ok");
    },
    120_000,
  );
});

describe("exec: git options that write where they name", () => {
  test("git apply --build-fake-ancestor=FILE (and its abbreviation) is refused: without isolation it wrote a file outside the root", () => {
    const repo = path.join(base, "apply-root");
    fs.mkdirSync(repo, { recursive: true });
    git(repo, "init", "-q");
    fs.writeFileSync(path.join(repo, "f.txt"), "a\n");
    git(repo, "add", ".");
    git(repo, "commit", "-qm", "i");
    fs.writeFileSync(path.join(repo, "f.txt"), "a\nb\n");
    fs.writeFileSync(path.join(repo, "p.diff"), Bun.spawnSync(["git", "diff"], { cwd: repo }).stdout);
    git(repo, "checkout", "-q", "f.txt");
    const outside = path.join(base, "FAKE-ANCESTOR");
    // the attack is real: plain git writes the file it names
    Bun.spawnSync(["git", "apply", "--build-f=" + outside, "p.diff"], { cwd: repo });
    expect(fs.existsSync(outside)).toBe(true);
    fs.rmSync(outside);
    const cfg = path.join(base, "apply.json");
    fs.writeFileSync(cfg, JSON.stringify({ tools: { exec: { allow: ["git"], isolation: "off" } } }));
    for (const opt of ["--build-fake-ancestor", "--build-f", "--bu"]) {
      const out = run([
        binaryPath(),
        "--root",
        repo,
        "--config",
        cfg,
        "execute",
        JSON.stringify({ id: "1", tool: "exec", arguments: { argv: ["git", "apply", `${opt}=${outside}`, "p.diff"] } }),
      ]);
      const env = JSON.parse(out.stdout);
      expect([opt, env.success, env.error?.code]).toEqual([opt, false, "COMMAND_NOT_ALLOWED"]);
      expect(fs.existsSync(outside)).toBe(false);
    }
  }, 120_000);
});
