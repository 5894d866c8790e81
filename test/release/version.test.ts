/**
 * `agentcore --version` and `agentcore version [--json]` through a binary
 * built by scripts/build-binary.mjs (its --define values), and from source.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildBinary, hostTarget } from "../../scripts/build-binary.mjs";
import { CORE_WASM_BASE64 } from "../../src/core/core-wasm.ts";
import { VERSION } from "../../src/core/version.ts";
import { REPO } from "../support/binary.ts";

let work: string;
let bin: string;
const EPOCH = 1_700_000_000;

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), "agentcore-version-"));
  const saved = process.env.SOURCE_DATE_EPOCH;
  process.env.SOURCE_DATE_EPOCH = String(EPOCH);
  try {
    bin = buildBinary({ outfile: join(work, "agentcore") }).outfile;
  } finally {
    if (saved === undefined) delete process.env.SOURCE_DATE_EPOCH;
    else process.env.SOURCE_DATE_EPOCH = saved;
  }
}, 120_000);
afterAll(() => rmSync(work, { recursive: true, force: true }));

function run(cmd: string[]): { status: number; stdout: string; stderr: string } {
  const r = Bun.spawnSync(cmd, { cwd: work, env: { PATH: process.env.PATH ?? "/usr/bin:/bin" } });
  return { status: r.exitCode, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

const head = Bun.spawnSync(["git", "rev-parse", "HEAD"], { cwd: REPO }).stdout.toString().trim();
const wasmSha = createHash("sha256").update(Buffer.from(CORE_WASM_BASE64, "base64")).digest("hex");

test("--version prints only the version", () => {
  const r = run([bin, "--version"]);
  expect(r).toEqual({ status: 0, stdout: `agentcore ${VERSION}\n`, stderr: "" });
  expect(run([bin, "-V"]).stdout).toBe(`agentcore ${VERSION}\n`);
});

test("version --json: the build-time commit, date and target, the Bun version and the WASM core's sha256", () => {
  const r = run([bin, "version", "--json"]);
  expect(r.status).toBe(0);
  expect(r.stderr).toBe("");
  const info = JSON.parse(r.stdout);
  expect(Object.keys(info)).toEqual(["version", "commit", "build_date", "target", "bun_version", "wasm_sha256", "built"]);
  expect(info.version).toBe(VERSION);
  expect(info.commit).toMatch(new RegExp(`^${head}(\\+dirty)?$`));
  expect(info.build_date).toBe(new Date(EPOCH * 1000).toISOString().replace(".000Z", "Z"));
  expect(info.target).toBe(hostTarget());
  expect(info.bun_version).toBe(Bun.version);
  expect(info.wasm_sha256).toBe(wasmSha);
  expect(info.built).toBe(true);
});

test("version: the same as text lines", () => {
  const r = run([bin, "version"]);
  expect(r.status).toBe(0);
  const lines = r.stdout.trimEnd().split("\n");
  expect(lines[0]).toBe(`agentcore ${VERSION}`);
  expect(lines).toContain(`wasm core    sha256:${wasmSha}`);
  expect(lines).toContain(`target       ${hostTarget()}`);
  expect(r.stdout).toContain(head);
});

test("version --help, a stray argument (exit 2), and the command in the overview", () => {
  const h = run([bin, "version", "--help"]);
  expect(h.status).toBe(0);
  expect(h.stdout).toStartWith("Usage: agentcore version [--json]");
  expect(h.stdout).toContain("--json");
  const bad = run([bin, "version", "now"]);
  expect(bad.status).toBe(2);
  expect(bad.stderr).toContain("version takes no arguments");
  expect(bad.stderr).toContain("agentcore version --help");
  expect(run([bin, "version", "--jsn"]).status).toBe(2);
  expect(run([bin, "--help"]).stdout).toMatch(/^ {2}version +print the version and build information/m);
});

test("run from source: no commit or date, this machine's target, built false", () => {
  const r = run([process.execPath, join(REPO, "src/cli/main.ts"), "version", "--json"]);
  expect(r.status).toBe(0);
  const info = JSON.parse(r.stdout);
  expect(info).toEqual({
    version: VERSION,
    commit: null,
    build_date: null,
    target: hostTarget(),
    bun_version: Bun.version,
    wasm_sha256: wasmSha,
    built: false,
  });
  expect(run([process.execPath, join(REPO, "src/cli/main.ts"), "version"]).stdout).toContain("commit       unknown (run from source)");
});
