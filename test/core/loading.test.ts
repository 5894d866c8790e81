import { describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { REPO_ROOT } from "../support/paths.ts";
import { tmp } from "../support/tmp.ts";

const BIN = resolve(REPO_ROOT, "node_modules/.bin");
const smoke = (entry: string) => `
import { parseStrict, JsonStreamValidator } from ${JSON.stringify(entry)};
const a = parseStrict('{"a":[1,"\\u00e9"]}');
const b = parseStrict('{"a":1,"\\\\u0061":2}');
const v = new JsonStreamValidator();
v.push('{"x":');
const s = v.push("1}").state;
v.dispose();
console.log(JSON.stringify([a.ok && a.value, !b.ok && b.error.code, s]));
`;
const EXPECTED = JSON.stringify([{ a: [1, "é"] }, "JSON_DUPLICATE_KEY", "complete"]);

describe("the embedded module loads everywhere", () => {
  const dir = tmp("agentcore-core-load-");
  const script = join(dir, "smoke.ts");
  writeFileSync(script, smoke(resolve(REPO_ROOT, "src/core/index.ts")));

  test("Deno", () => {
    const r = spawnSync(join(BIN, "deno"), ["run", "--quiet", script], { encoding: "utf8", cwd: dir });
    expect(r.stderr).toBe("");
    expect(r.stdout.trim()).toBe(EXPECTED);
  });

  test("Node (bundled to plain JS)", () => {
    const out = join(dir, "smoke.mjs");
    const b = spawnSync(join(BIN, "bun"), ["build", "--target=node", script, "--outfile", out], { encoding: "utf8" });
    expect(b.status).toBe(0);
    const r = spawnSync(process.env.NODE ?? "node", [out], { encoding: "utf8", cwd: dir });
    expect(r.stdout.trim()).toBe(EXPECTED);
  });

  test("bun build --compile binary, run from another directory", () => {
    const exe = join(dir, "smoke-bin");
    const b = spawnSync(join(BIN, "bun"), ["build", "--compile", script, "--outfile", exe], { encoding: "utf8", cwd: dir });
    expect(b.status).toBe(0);
    const r = spawnSync(exe, [], { encoding: "utf8", cwd: tmpdir() });
    expect(r.stdout.trim()).toBe(EXPECTED);
    rmSync(dir, { recursive: true, force: true });
  });
});

describe("reproducible build", () => {
  test("src/core/core-wasm.ts matches asm/ (node scripts/build-wasm.mjs --check)", () => {
    const r = spawnSync(process.env.NODE ?? "node", ["scripts/build-wasm.mjs", "--check"], { encoding: "utf8", cwd: REPO_ROOT });
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
  }, 120000);
});
