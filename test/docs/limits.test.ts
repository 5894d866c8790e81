/**
 * docs/limits.md stays true for the input limits: the defaults and hard caps
 * its first rows name are what the binary enforces.
 */
import { beforeAll, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { binaryPath, REPO } from "../support/binary.ts";

let bin: string;
beforeAll(() => {
  bin = binaryPath();
}, 120_000);

const doc = fs.readFileSync(path.join(REPO, "docs/limits.md"), "utf8");
const ENV = { PATH: process.env.PATH ?? "/usr/bin:/bin", AGENTCORE_CONFIG: "" };

function row(name: string): string[] {
  const line = doc.split("\n").find((l) => l.startsWith(`| ${name} |`));
  expect(line).toBeDefined();
  return line!
    .split("|")
    .slice(2, -1)
    .map((c) => c.trim());
}

function execute(args: string[], stdin?: string) {
  const r = Bun.spawnSync([bin, "execute", ...args], { cwd: REPO, env: ENV, stdin: stdin === undefined ? "ignore" : Buffer.from(stdin) });
  return { status: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() };
}

test("input size: 1048576 bytes by default, at most 268435456 (256 MiB)", () => {
  const [def, cap] = row("input size of one call");
  expect(def).toBe("1 MiB (1048576 bytes)");
  expect(cap).toBe("256 MiB");
  const call = (n: number) => {
    const head = '{"tool":"echo","arguments":{"s":"';
    const tail = '"}}';
    return head + "x".repeat(n - head.length - tail.length) + tail;
  };
  expect(execute(["-"], call(1048576)).out).toContain('"success":true');
  expect(execute(["-"], call(1048577)).out).toContain('"code":"JSON_SIZE"');
  expect(execute(["--max-input-bytes", "268435457", "{}"]).err).toContain("between 1 and 268435456");
  expect(execute(["--max-input-bytes", "268435456", '{"tool":"echo","arguments":{}}']).status).toBe(0);
});

test("nesting: 64 levels by default (counted over the whole call), at most 4096", () => {
  const [def, cap] = row("nesting of arrays and objects");
  expect(def).toBe("64 levels");
  expect(cap).toBe("4096");
  // the call object is level 1 and `arguments` level 2, so 62 more levels fit
  const nested = (levels: number) => `{"tool":"echo","arguments":{"a":${"[".repeat(levels)}${"]".repeat(levels)}}}`;
  expect(execute([nested(62)]).out).toContain('"success":true');
  expect(execute([nested(63)]).out).toContain('"code":"JSON_DEPTH"');
  expect(execute(["--max-depth", "4097", "{}"]).err).toContain("between 1 and 4096");
});
