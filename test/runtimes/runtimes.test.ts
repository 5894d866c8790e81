/**
 * The library and CLI outside Bun: Deno runs the sources directly, Node 20
 * runs a bundle. Each is a real child process.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const repo = resolve(import.meta.dir, "../..");
const deno = join(repo, "node_modules/.bin/deno");
const tmp = mkdtempSync(join(tmpdir(), "agentcore-rt-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function spawn(argv: string[], cwd = repo, stdin?: string) {
  const r = Bun.spawnSync(argv, {
    cwd,
    stdin: stdin === undefined ? "ignore" : new TextEncoder().encode(stdin),
    env: { ...process.env, DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1" },
  });
  return { status: r.exitCode, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

describe("Deno", () => {
  test("deno run: the CLI runs the example JSONL like Bun does", () => {
    const d = spawn([deno, "run", "--allow-read", "--allow-env", "src/cli/main.ts", "run", "examples/tool_calls.jsonl"]);
    const b = spawn([process.execPath, "src/cli/main.ts", "run", "examples/tool_calls.jsonl"]);
    expect(d.stderr).toBe("");
    expect(d.status).toBe(1);
    const strip = (s: string) => s.replace(/"duration_ms":[0-9.e-]+/g, '"duration_ms":0');
    expect(strip(d.stdout)).toBe(strip(b.stdout));
    expect(d.stdout.split("\n").filter(Boolean)).toHaveLength(9);
  }, 60_000);

  test("deno task agentcore: execute from stdin", () => {
    const r = spawn([deno, "task", "-q", "agentcore", "execute", "-"], repo, '{"id":"d","tool":"echo","arguments":{"x":"ü"}}');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^\{"id":"d","success":true,"tool":"echo","result":\{"x":"ü"\},"error":null,"duration_ms":[0-9.]+\}\n$/);
  }, 60_000);

  test("the Deno example imports the library and dispatches calls", () => {
    const r = spawn([deno, "run", "--allow-read", "--allow-env", "examples/deno_dispatch.ts"]);
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('"success":true');
  }, 60_000);
});

describe("Bun", () => {
  test("the Bun example imports the library and dispatches calls", () => {
    const r = spawn([process.execPath, "examples/bun_dispatch.ts"]);
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('"success":true');
  });
});

describe("Node 20+", () => {
  test("a bundle of the library loads the embedded WebAssembly and parses strictly", () => {
    const bundle = join(tmp, "agentcore.mjs");
    const b = spawn([process.execPath, "build", "src/mod.ts", "--target", "node", "--format", "esm", "--outfile", bundle]);
    expect(b.status).toBe(0);
    const script = join(tmp, "check.mjs");
    writeFileSync(
      script,
      `import { parseStrict, createRuntime, serializeEnvelope } from ${JSON.stringify(bundle)};
const ok = parseStrict('{"a":[1,2,{"b":"ü"}]}');
const dup = parseStrict('{"a":1,"\\\\u0061":2}');
const env = await createRuntime().dispatch('{"id":"n","tool":"echo","arguments":{"v":1}}');
console.log(JSON.stringify({ ok, dup: dup.ok ? null : dup.error.code, env: JSON.parse(serializeEnvelope(env)).result }));
`,
    );
    const r = spawn(["node", script], tmp);
    expect(r.stderr).toBe("");
    expect(JSON.parse(r.stdout)).toEqual({ ok: { ok: true, value: { a: [1, 2, { b: "ü" }] } }, dup: "JSON_DUPLICATE_KEY", env: { v: 1 } });
  }, 60_000);
});

test("package.json version matches the CLI's VERSION", async () => {
  const { VERSION } = await import("../../src/core/version.ts");
  const pkg = (await import("../../package.json")).default as { version: string };
  expect(VERSION).toBe(pkg.version);
});
