/**
 * `npm run release` for the two Linux targets, as CI runs it: the release
 * script in a child process builds linux-x64 and linux-arm64 into a temp
 * folder (each twice, comparing the bytes), writes SHA256SUMS and
 * manifest.json, and checks them, the smoke tests included (linux-arm64
 * under qemu-user; under CI=true a missing qemu fails this file). Then
 * `--check` must refuse a tampered folder, and the header reader must tell
 * each format apart.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { hostTarget } from "../../scripts/build-binary.mjs";
import { binaryFormat, comparable, findQemu, type Manifest, parseTargets, sumsText } from "../../scripts/release.ts";
import { VERSION } from "../../src/core/version.ts";
import { REPO } from "../support/binary.ts";

const onLinuxX64 = hostTarget() === "linux-x64";
const underCI = process.env.CI === "true";
const qemu = findQemu();
let work: string;
let out: string;
let build: { status: number; stderr: string };

function release(args: string[]): { status: number; stderr: string; stdout: string } {
  const r = Bun.spawnSync([process.execPath, join(REPO, "scripts/release.ts"), ...args], {
    cwd: REPO,
    env: { ...process.env },
  });
  return { status: r.exitCode, stderr: r.stderr.toString(), stdout: r.stdout.toString() };
}

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), "agentcore-release-"));
  out = join(work, "release");
  // From a git archive of HEAD when there is one: other edits to the working tree can't change the second build.
  const inGit = Bun.spawnSync(["git", "rev-parse", "HEAD"], { cwd: REPO }).exitCode === 0;
  const args = ["--targets", "linux-x64,linux-arm64", "--out", out, "--repro", ...(inGit ? ["--from-commit"] : [])];
  if (onLinuxX64) build = release(args);
}, 600_000);
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe.if(onLinuxX64)("release of linux-x64 and linux-arm64", () => {
  test("builds, is reproducible and passes every check", () => {
    if (build.status !== 0) console.error(build.stderr);
    expect(build.status).toBe(0);
    expect(build.stderr).toMatch(/\[1\/2\] linux-x64 .* rebuilt: identical bytes/);
    expect(build.stderr).toMatch(/\[2\/2\] linux-arm64 .* rebuilt: identical bytes/);
    expect(build.stderr).toMatch(/ok {4}agentcore-linux-x64: format: ELF x86-64 executable/);
    expect(build.stderr).toMatch(/ok {4}agentcore-linux-arm64: format: ELF aarch64 executable/);
    expect(build.stderr).toMatch(/ok {4}agentcore-linux-arm64: sha256: [0-9a-f]{64}\n/);
    expect(build.stderr).toMatch(/ 0 failed\n$/);
  });

  // Without qemu the release script skips the arm64 smoke test (and says so), and so does this test; under
  // CI=true the script fails instead (.ci/run installs qemu-user-static and an aarch64 glibc).
  test.if(!("missing" in qemu) || underCI)("the smoke tests ran: linux-arm64 under qemu prints what linux-x64 prints", () => {
    expect(qemu).not.toHaveProperty("missing");
    for (const name of ["--version", "version --json", "tools", "execute echo", "run examples/tool_calls.jsonl"]) {
      expect(build.stderr).toContain(`ok    smoke linux-x64: ${name}:`);
      expect(build.stderr).toContain(`ok    smoke linux-arm64: ${name}:`);
      expect(build.stderr).toContain(`ok    smoke linux-arm64 = linux-x64: ${name}: exit `);
    }
    expect(build.stderr).toMatch(/ 0 skipped, 0 failed\n$/);
  });

  test("without qemu: --smoke auto skips the arm64 smoke test and says why; --smoke require and CI=true fail", () => {
    const noQemu = (smoke: string[], ci: string) =>
      Bun.spawnSync([process.execPath, join(REPO, "scripts/release.ts"), "--check", "--out", out, ...smoke], {
        cwd: REPO,
        env: { PATH: join(work, "empty-path"), CI: ci },
      });
    const auto = noQemu([], "");
    expect(auto.stderr.toString()).toContain("skip  smoke linux-arm64 (qemu): qemu-aarch64(-static) is not on PATH");
    expect(auto.stderr.toString()).toContain("ok    smoke linux-x64: run examples/tool_calls.jsonl: exit 1, 9 envelopes");
    expect(auto.exitCode).toBe(0);
    for (const [smoke, ci] of [
      [["--smoke", "require"], ""],
      [[], "true"],
    ] as const) {
      const r = noQemu([...smoke], ci);
      expect(r.stderr.toString()).toContain("FAIL  smoke linux-arm64 (qemu): qemu-aarch64(-static) is not on PATH");
      expect(r.exitCode).toBe(1);
    }
  });

  test("SHA256SUMS (sha256sum's format, checked by sha256sum itself) and manifest.json", () => {
    const manifest = JSON.parse(readFileSync(join(out, "manifest.json"), "utf8")) as Manifest;
    expect(manifest).toMatchObject({ name: "agentcore", version: VERSION, bun_version: Bun.version });
    expect(manifest.commit).toMatch(/^([0-9a-f]{40}|unknown)$/);
    expect(manifest.build_date).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(manifest.artifacts.map((a) => [a.file, a.target])).toEqual([
      ["agentcore-linux-x64", "linux-x64"],
      ["agentcore-linux-arm64", "linux-arm64"],
    ]);
    expect(readFileSync(join(out, "SHA256SUMS"), "utf8")).toBe(sumsText(manifest.artifacts));
    const check = Bun.spawnSync(["sha256sum", "--check", "--strict", "SHA256SUMS"], { cwd: out });
    expect(check.stdout.toString()).toBe("agentcore-linux-arm64: OK\nagentcore-linux-x64: OK\n");
    expect(check.exitCode).toBe(0);
  });

  test("--check refuses a tampered folder: a changed byte, a swapped file, a missing artifact", () => {
    const copy = join(work, "tampered");
    const ok = release(["--check", "--out", out, "--smoke", "skip"]);
    expect(ok.status).toBe(0);
    rmSync(copy, { recursive: true, force: true });
    Bun.spawnSync(["cp", "-r", out, copy]);
    // one byte changed at the end of linux-x64
    const x64 = join(copy, "agentcore-linux-x64");
    const bytes = readFileSync(x64);
    bytes[bytes.length - 1] ^= 1;
    writeFileSync(x64, bytes);
    let r = release(["--check", "--out", copy, "--smoke", "skip"]);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/FAIL {2}agentcore-linux-x64: sha256: [0-9a-f]{64}; manifest says [0-9a-f]{64}/);
    // the arm64 file replaced by the x64 one (and the manifest "fixed" to match): the header gives it away
    copyFileSync(join(out, "agentcore-linux-x64"), join(copy, "agentcore-linux-arm64"));
    copyFileSync(join(out, "agentcore-linux-x64"), x64);
    const manifest = JSON.parse(readFileSync(join(copy, "manifest.json"), "utf8")) as Manifest;
    const x = manifest.artifacts[0]!;
    const fixed = { ...manifest, artifacts: [x, { ...x, file: "agentcore-linux-arm64", target: "linux-arm64" as const }] };
    writeFileSync(join(copy, "manifest.json"), JSON.stringify(fixed));
    writeFileSync(join(copy, "SHA256SUMS"), sumsText(fixed.artifacts));
    r = release(["--check", "--out", copy, "--smoke", "skip"]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("FAIL  agentcore-linux-arm64: format: ELF x86-64 executable; linux-arm64 needs ELF aarch64");
    expect(r.stderr).toContain("ok    agentcore-linux-arm64: sha256:");
    // a missing artifact, and a stray file
    rmSync(join(copy, "agentcore-linux-arm64"));
    writeFileSync(join(copy, "notes.txt"), "x");
    r = release(["--check", "--out", copy, "--smoke", "skip"]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("FAIL  agentcore-linux-arm64: missing");
    expect(r.stderr).toContain("FAIL  no other files: notes.txt");
  });
});

describe("the header reader", () => {
  const bytes = (n: number, set: (v: DataView) => void) => {
    const b = new Uint8Array(n);
    set(new DataView(b.buffer));
    return b;
  };
  const elf = (machine: number, cls = 2) =>
    bytes(64, (v) => {
      v.setUint32(0, 0x464c457f, true);
      v.setUint8(4, cls);
      v.setUint8(5, 1);
      v.setUint16(16, 2, true);
      v.setUint16(18, machine, true);
    });
  const macho = (cpu: number, filetype = 2) =>
    bytes(32, (v) => {
      v.setUint32(0, 0xfeedfacf, true);
      v.setUint32(4, cpu, true);
      v.setUint32(12, filetype, true);
    });
  const pe = (machine: number, magic: number) =>
    bytes(512, (v) => {
      v.setUint16(0, 0x5a4d, true);
      v.setUint32(0x3c, 0x80, true);
      v.setUint32(0x80, 0x00004550, true);
      v.setUint16(0x84, machine, true);
      v.setUint16(0x80 + 22, 0x0022, true);
      v.setUint16(0x80 + 24, magic, true);
    });

  test("ELF, Mach-O and PE: format, architecture, executable", () => {
    expect(binaryFormat(elf(0x3e))).toEqual({ format: "ELF", arch: "x86-64", executable: true });
    expect(binaryFormat(elf(0xb7))).toEqual({ format: "ELF", arch: "aarch64", executable: true });
    expect(binaryFormat(elf(0xf3)).arch).toBe("machine 0xf3");
    expect(binaryFormat(elf(0x3e, 1)).executable).toBe(false);
    expect(binaryFormat(macho(0x01000007))).toEqual({ format: "Mach-O", arch: "x86-64", executable: true });
    expect(binaryFormat(macho(0x0100000c))).toEqual({ format: "Mach-O", arch: "arm64", executable: true });
    expect(binaryFormat(macho(0x0100000c, 6)).executable).toBe(false);
    expect(binaryFormat(pe(0x8664, 0x20b))).toEqual({ format: "PE32+", arch: "x86-64", executable: true });
    expect(binaryFormat(pe(0x14c, 0x10b))).toEqual({ format: "PE32", arch: "machine 0x14c", executable: true });
  });

  test("anything else, or too short, is unknown", () => {
    expect(binaryFormat(new TextEncoder().encode("#!/bin/sh\necho agentcore 0.1.0\n")).format).toBe("unknown");
    expect(binaryFormat(new Uint8Array([0x7f, 0x45, 0x4c])).format).toBe("unknown");
    expect(binaryFormat(pe(0x8664, 0x20b).subarray(0, 0x90)).format).toBe("unknown");
    expect(binaryFormat(new Uint8Array(0)).format).toBe("unknown");
  });
});

test("targets and comparable output", () => {
  expect(parseTargets("linux-x64, linux-arm64,linux-x64")).toEqual(["linux-x64", "linux-arm64"]);
  expect(() => parseTargets("linux-riscv64")).toThrow("unknown target 'linux-riscv64'");
  expect(comparable("run", '{"id":"a","duration_ms":12.5}\n{"id":"b","duration_ms":3}\n')).toBe(
    '{"id":"a","duration_ms":0}\n{"id":"b","duration_ms":0}\n',
  );
  expect(comparable("version --json", '{"version":"1","target":"linux-arm64","commit":"c"}')).toBe('{"version":"1","commit":"c"}');
});
