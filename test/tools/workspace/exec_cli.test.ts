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
import { waitGone } from "./procs.ts";

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
    const r = Bun.spawnSync(["tar", "-cf", path.join(base, "control.tar"), "a.txt"], { cwd: root, env: { PATH: process.env.PATH!, ...attack() } });
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
    const cfg = config({ tools: { exec: { allow: ["bash"], env: ["PATH"], timeout_ms: 20_000, limits: { processes: 16, cpu_seconds: 10 } } } }, "bomb.json");
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
    const cfg = config({ tools: { exec: { allow: ["bash", "ls"], env: ["PATH"], timeout_ms: 20_000, limits: { processes: 16, cpu_seconds: 10 } } } }, "bomb-deno.json");
    const bomb = `f() { if [ "$1" -gt 0 ]; then f $(($1 - 1)) & f $(($1 - 1)) & fi; exec -a ${marker} sleep 30; }; f 7`;
    const deno = path.join(REPO, "node_modules/.bin/deno");
    const main = path.join(REPO, "src/cli/main.ts");
    const r = run([deno, "run", "-A", main, "--config", cfg, "execute", call({ argv: ["bash", "-c", bomb] })], { DENO_NO_UPDATE_CHECK: "1" });
    expect(r.status).toBe(1);
    expect(JSON.parse(r.stdout).error).toMatchObject({ code: "RESOURCE_LIMIT", details: { limit: "processes", max: 16 } });
    expect(await waitGone(marker)).toEqual([]);
    const q = run([deno, "run", "--allow-read", "--allow-env", "--allow-write", "--allow-run", main, "--config", cfg, "execute", call({ argv: ["ls"] })], { DENO_NO_UPDATE_CHECK: "1" });
    expect(q.status).toBe(0);
    expect(q.stderr).toContain("exec can't enforce the processes and memory_bytes limits");
  }, 120_000);
});
