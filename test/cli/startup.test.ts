/**
 * The binary's commands after lazy loading (src/cli/main.ts loads each
 * command's module with import(); the binary is built with --bytecode and
 * split into chunks): --version, --help and execute still answer, bad input
 * included; the built-in tools' generated validators answer in the binary as
 * ajv did; and `run` still frames lines across its read blocks.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { binaryPath } from "../support/binary.ts";
import { tmp } from "../support/tmp.ts";

const REPO = resolve(import.meta.dir, "../..");
const VERSION = (JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as { version: string }).version;
let bin: string;
let work: string;

beforeAll(() => {
  bin = binaryPath();
  work = tmp("agentcore-startup-");
}, 120_000);

function run(...args: string[]): { status: number; stdout: string; stderr: string } {
  const r = Bun.spawnSync([bin, ...args], { cwd: work, stdin: "ignore", env: { PATH: process.env.PATH ?? "/usr/bin:/bin" } });
  return { status: r.exitCode ?? -1, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

/** The envelopes of stdout without their duration_ms. */
function envelopes(stdout: string): unknown[] {
  return stdout
    .trimEnd()
    .split("\n")
    .map((l) => {
      const v = JSON.parse(l) as Record<string, unknown>;
      delete v.duration_ms;
      return v;
    });
}

describe("the binary after lazy loading", () => {
  test("--version and -V print the version, and version --json the build information", () => {
    expect(run("--version")).toEqual({ status: 0, stdout: `agentcore ${VERSION}\n`, stderr: "" });
    expect(run("-V")).toEqual({ status: 0, stdout: `agentcore ${VERSION}\n`, stderr: "" });
    const v = run("version", "--json");
    expect(v.status).toBe(0);
    expect((JSON.parse(v.stdout) as { version: string }).version).toBe(VERSION);
    // bad input: an option version does not take
    const bad = run("version", "--bogus");
    expect(bad.status).toBe(2);
    expect(bad.stdout).toBe("");
    expect(bad.stderr).toContain("--bogus");
  });

  test("--help: the overview and each command's own help; an unknown command after it is a usage error", () => {
    const h = run("--help");
    expect(h.status).toBe(0);
    expect(h.stderr).toBe("");
    for (const c of ["tools", "execute", "run", "agent", "serve", "version"]) expect(h.stdout).toContain(c);
    for (const c of ["execute", "run", "agent", "serve", "sessions"]) {
      const r = run(c, "--help");
      expect({ c, status: r.status, stderr: r.stderr }).toEqual({ c, status: 0, stderr: "" });
      expect(r.stdout).toContain(`agentcore ${c}`);
    }
    const bad = run("--help", "bogus");
    expect(bad.status).toBe(2);
    expect(bad.stdout).toBe("");
    expect(bad.stderr).toContain("unknown command 'bogus'");
  });

  test("execute: a call, a bad call, and arguments the built-in tool's generated validator refuses", () => {
    const ok = run("execute", '{"id":"c1","tool":"echo","arguments":{"message":"hi"}}');
    expect(ok.status).toBe(0);
    expect(envelopes(ok.stdout)).toEqual([{ id: "c1", success: true, tool: "echo", result: { message: "hi" }, error: null }]);
    const bad = run("execute", '{"tool":"echo","arguments":[]}');
    expect(bad.status).toBe(1);
    expect(envelopes(bad.stdout)).toEqual([
      {
        id: null,
        success: false,
        tool: "echo",
        result: null,
        error: { code: "INVALID_CALL", message: '"arguments" must be an object, got an array', details: { location: "/arguments" } },
      },
    ]);
    const invalid = run("execute", '{"id":"c2","tool":"read_file","arguments":{"path":1,"extra":true}}');
    expect(invalid.status).toBe(1);
    expect(envelopes(invalid.stdout)).toEqual([
      {
        id: "c2",
        success: false,
        tool: "read_file",
        result: null,
        error: {
          code: "INVALID_ARGUMENTS",
          message: "arguments do not match the tool's parameters (2 errors)",
          details: {
            errors: [
              { path: "/extra", keyword: "additionalProperties", message: "unexpected property" },
              { path: "/path", keyword: "type", message: "must be string" },
            ],
            truncated: false,
          },
        },
      },
    ]);
    const usage = run("execute");
    expect(usage.status).toBe(2);
    expect(usage.stdout).toBe("");
  });

  test("run: lines that straddle the 1 MiB read blocks come out whole and in order", () => {
    const file = join(work, "big.jsonl");
    const n = 25_000; // about 2.3 MiB: several lines cross a block boundary
    let text = "";
    for (let i = 0; i < n; i++) text += `{"id":"c${i}","tool":"echo","arguments":{"i":${i},"pad":"${"x".repeat(i % 50)}"}}\n`;
    writeFileSync(file, text);
    const r = run("run", file);
    expect(r.status).toBe(0);
    const out = r.stdout.trimEnd().split("\n");
    expect(out.length).toBe(n);
    out.forEach((l, i) => {
      const e = JSON.parse(l) as { id: string; result: { i: number; pad: string } };
      if (e.id !== `c${i}` || e.result.i !== i || e.result.pad.length !== i % 50) throw new Error(`line ${i + 1}: ${l}`);
    });
  });
});
