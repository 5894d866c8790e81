/**
 * `npm run release` for the two Linux targets, as CI runs it: the release
 * script in a child process builds linux-x64 and linux-arm64 into a temp
 * folder (each twice, comparing the bytes), puts install.sh beside them,
 * writes SHA256SUMS and manifest.json, and checks them, the smoke tests
 * included (linux-arm64 under qemu-user; under CI=true a missing qemu fails
 * this file). The README's install line then runs against that folder served
 * over loopback HTTP (and against the folder itself), and refuses a
 * corrupted binary. `--check` must refuse a tampered folder, and the header
 * reader must tell each format apart.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { hostTarget } from "../../scripts/build-binary.mjs";
import {
  binaryFormat,
  comparable,
  findQemu,
  installerBaseUrl,
  installerText,
  type Manifest,
  parseTargets,
  summedFiles,
  sumsText,
} from "../../scripts/release.ts";
import { VERSION } from "../../src/core/version.ts";
import { REPO } from "../support/binary.ts";

const onLinuxX64 = hostTarget() === "linux-x64";
const underCI = process.env.CI === "true";
const qemu = findQemu();
let work: string;
let out: string;
let build: { status: number; stderr: string };
const inGit = Bun.spawnSync(["git", "rev-parse", "HEAD"], { cwd: REPO }).exitCode === 0;

function release(args: string[]): { status: number; stderr: string; stdout: string } {
  const r = Bun.spawnSync([process.execPath, join(REPO, "scripts/release.ts"), ...args], {
    cwd: REPO,
    env: { ...process.env },
  });
  return { status: r.exitCode, stderr: r.stderr.toString(), stdout: r.stdout.toString() };
}

/** A release folder over HTTP on loopback, as a release page serves it (404 for anything else). */
function serveFolder(dir: string) {
  return Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch(req) {
      const name = decodeURIComponent(new URL(req.url).pathname.slice(1));
      const path = join(dir, name);
      return /^[\w.-]+$/.test(name) && existsSync(path) ? new Response(Bun.file(path)) : new Response("not found", { status: 404 });
    },
  });
}

/** `sh -c SCRIPT sh ARGS…` with a plain PATH and HOME in the work folder (not spawnSync: the folder's server runs in this process). */
async function sh([script, ...args]: string[]): Promise<{ status: number; stdout: string; stderr: string }> {
  const p = Bun.spawn(["sh", "-c", script!, "sh", ...args], {
    cwd: work,
    env: { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: work },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, status] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { status, stdout, stderr };
}

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), "agentcore-release-"));
  out = join(work, "release");
  // From a git archive of HEAD when there is one: other edits to the working tree can't change the second build.
  // the release's install.sh downloads from the folder itself unless told otherwise
  const args = [
    "--targets",
    "linux-x64,linux-arm64",
    "--out",
    out,
    "--download-url",
    `file://${out}`,
    "--repro",
    ...(inGit ? ["--from-commit"] : []),
  ];
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
    expect(readFileSync(join(out, "SHA256SUMS"), "utf8")).toBe(sumsText(summedFiles(manifest)));
    const check = Bun.spawnSync(["sha256sum", "--check", "--strict", "SHA256SUMS"], { cwd: out });
    expect(check.stdout.toString()).toBe("agentcore-linux-arm64: OK\nagentcore-linux-x64: OK\ninstall.sh: OK\n");
    expect(check.exitCode).toBe(0);
  });

  test("install.sh is in the release folder: executable, in the manifest, downloading from --download-url by default", () => {
    expect(readdirSync(out).sort()).toEqual(["SHA256SUMS", "agentcore-linux-arm64", "agentcore-linux-x64", "install.sh", "manifest.json"]);
    const manifest = JSON.parse(readFileSync(join(out, "manifest.json"), "utf8")) as Manifest;
    expect(manifest.installer).toMatchObject({ file: "install.sh", base_url: `file://${out}` });
    const script = readFileSync(join(out, "install.sh"), "utf8");
    // the repository's install.sh but for that one line (a --from-commit release takes the committed one)
    const source = inGit
      ? Bun.spawnSync(["git", "show", "HEAD:install.sh"], { cwd: REPO }).stdout.toString()
      : readFileSync(join(REPO, "install.sh"), "utf8");
    expect(script).toBe(installerText(source, `file://${out}`));
    expect(installerBaseUrl(script)).toBe(`file://${out}`);
    expect(Bun.spawnSync(["test", "-x", join(out, "install.sh")]).exitCode).toBe(0);
    expect(build.stderr).toContain("ok    install.sh: sh -n: parses");
  });

  test("the README's install line against the release over loopback HTTP, and from the folder itself: the binary runs", async () => {
    const server = serveFolder(out);
    try {
      const url = `http://127.0.0.1:${server.port}`;
      const prefix = join(work, "prefix-http");
      // curl -fsSL …/install.sh | sh, with the base URL and prefix passed through the pipe
      const r = await sh(['curl -fsSL "$1/install.sh" | sh -s -- --base-url "$1" --prefix "$2"', url, prefix]);
      expect(r.stderr).toBe("");
      expect(r.status).toBe(0);
      expect(r.stdout).toContain(`installing agentcore-linux-x64 from ${url}`);
      expect(r.stdout).toContain(`installed ${VERSION} at ${join(prefix, "bin", "agentcore")}`);
      expect(Bun.spawnSync([join(prefix, "bin", "agentcore"), "--version"]).stdout.toString()).toBe(`agentcore ${VERSION}\n`);
    } finally {
      server.stop(true);
    }
    // the folder's own install.sh with no --base-url: its default, the folder
    const prefix = join(work, "prefix-dir");
    const r = await sh(['sh "$1/install.sh" --prefix "$2"', out, prefix]);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(`installing agentcore-linux-x64 from file://${out}`);
    expect(Bun.spawnSync([join(prefix, "bin", "agentcore"), "version", "--json"]).stdout.toString()).toContain('"target":"linux-x64"');
  });

  test("a corrupted binary in the release is refused by the sha256 check, over HTTP and from the folder: nothing installed", async () => {
    const bad = join(work, "corrupted");
    rmSync(bad, { recursive: true, force: true });
    Bun.spawnSync(["cp", "-r", out, bad]);
    const x64 = join(bad, "agentcore-linux-x64");
    const bytes = readFileSync(x64);
    bytes[bytes.length >> 1] ^= 0x40;
    writeFileSync(x64, bytes);
    const server = serveFolder(bad);
    try {
      for (const base of [`http://127.0.0.1:${server.port}`, bad]) {
        const prefix = join(work, `prefix-bad-${base.startsWith("http") ? "http" : "dir"}`);
        const r = await sh(['sh "$1/install.sh" --base-url "$2" --prefix "$3"', bad, base, prefix]);
        expect(r.status).toBe(1);
        expect(r.stderr).toMatch(
          /^install\.sh: sha256 mismatch for agentcore-linux-x64: expected [0-9a-f]{64}, got [0-9a-f]{64}; nothing installed\n$/,
        );
        expect(existsSync(prefix)).toBe(false);
      }
    } finally {
      server.stop(true);
    }
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
    writeFileSync(join(copy, "SHA256SUMS"), sumsText(summedFiles(fixed)));
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

test("installerText sets install.sh's download URL, and refuses one that would change the shell line", () => {
  const script = readFileSync(join(REPO, "install.sh"), "utf8");
  expect(installerBaseUrl(script)).toBe("https://github.com/agentcore/agentcore/releases/latest/download");
  expect(installerText(script)).toBe(script);
  const moved = installerText(script, "https://github.com/someone/agentcore/releases/latest/download/");
  expect(installerBaseUrl(moved)).toBe("https://github.com/someone/agentcore/releases/latest/download");
  expect(moved.split("\n").filter((l, i) => l !== script.split("\n")[i])).toEqual([
    'DEFAULT_BASE_URL="https://github.com/someone/agentcore/releases/latest/download"',
  ]);
  for (const bad of ["ftp://x/y", "https://x/$(id)", 'https://x/"', "https://x/`id`", "https://x/a b", "/tmp/release"])
    expect(() => installerText(script, bad)).toThrow("--download-url must be an http://, https:// or file:// URL");
  expect(() => installerText("#!/bin/sh\necho hi\n")).toThrow('install.sh has no DEFAULT_BASE_URL="…" line');
});

test("targets and comparable output", () => {
  expect(parseTargets("linux-x64, linux-arm64,linux-x64")).toEqual(["linux-x64", "linux-arm64"]);
  expect(() => parseTargets("linux-riscv64")).toThrow("unknown target 'linux-riscv64'");
  expect(comparable("run", '{"id":"a","duration_ms":12.5}\n{"id":"b","duration_ms":3}\n')).toBe(
    '{"id":"a","duration_ms":0}\n{"id":"b","duration_ms":0}\n',
  );
  expect(comparable("version --json", '{"version":"1","target":"linux-arm64","commit":"c"}')).toBe('{"version":"1","commit":"c"}');
});
