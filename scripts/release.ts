#!/usr/bin/env bun
/**
 * `npm run release`: build agentcore for every release target into
 * dist/release/, put install.sh beside the binaries (its default download
 * URL set with --download-url), write SHA256SUMS and manifest.json, then
 * check what was built before it counts (docs/install.md, "Releases"):
 *
 * - each file's format and architecture, read from its own header (ELF
 *   x86-64 / aarch64, Mach-O x86-64 / arm64, PE32+ x86-64);
 * - the manifest's sizes and sha256 values, and SHA256SUMS, against the files
 *   (install.sh's too; it must also parse under `sh -n`);
 * - a smoke test of the Linux binaries (linux-arm64 under qemu-user): --version,
 *   version --json, tools, execute of an echo call and run of
 *   examples/tool_calls.jsonl, whose stdout must be the same bytes as the
 *   native linux-x64 binary's (the envelopes' duration_ms set to 0 first).
 *
 *   bun scripts/release.ts [--targets linux-x64,linux-arm64] [--out DIR] [--download-url URL] [--from-commit] [--repro] [--smoke auto|require|skip]
 *   bun scripts/release.ts --check [--out DIR] [--smoke auto|require|skip]
 *
 * Progress goes to stderr. Exit status: 0 built and checked; 1 a build or a
 * check failed; 2 usage error.
 *
 * @module
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  chmodSync,
  closeSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join, resolve } from "node:path";
import { type BuildInfo, buildBinary, buildInfo, hostTarget, ROOT, TARGETS, type TargetName } from "./build-binary.mjs";

export const TARGET_NAMES = Object.keys(TARGETS) as TargetName[];
export const MANIFEST = "manifest.json";
export const SUMS = "SHA256SUMS";
/** The installer, copied from the repository's root into each release. */
export const INSTALLER = "install.sh";

// ---------------------------------------------------------------- headers

/** What a file's header says it is. */
export interface BinaryFormat {
  readonly format: "ELF" | "Mach-O" | "PE32+" | "PE32" | "unknown";
  /** x86-64, aarch64 (ELF), arm64 (Mach-O), or `machine 0x…` for another. */
  readonly arch: string;
  /** Executable (ELF ET_EXEC/ET_DYN, Mach-O MH_EXECUTE, PE with IMAGE_FILE_EXECUTABLE_IMAGE). */
  readonly executable: boolean;
}

/** The format and architecture each target's file must have. */
export const EXPECTED: Readonly<Record<TargetName, { format: BinaryFormat["format"]; arch: string }>> = {
  "linux-x64": { format: "ELF", arch: "x86-64" },
  "linux-arm64": { format: "ELF", arch: "aarch64" },
  "darwin-x64": { format: "Mach-O", arch: "x86-64" },
  "darwin-arm64": { format: "Mach-O", arch: "arm64" },
  "windows-x64": { format: "PE32+", arch: "x86-64" },
};

const hex = (n: number) => `0x${n.toString(16)}`;

/**
 * Read the format from the first bytes of a file (4 KiB are plenty: the PE
 * header sits where the DOS header's e_lfanew points, within the first KiB
 * for Bun's binaries; a later one reads as unknown). Only the fields the
 * check needs: the magic, the class / optional-header magic, the machine and
 * the file type.
 */
export function binaryFormat(b: Uint8Array): BinaryFormat {
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const unknown: BinaryFormat = { format: "unknown", arch: "unknown", executable: false };
  if (b.length >= 20 && b[0] === 0x7f && b[1] === 0x45 && b[2] === 0x4c && b[3] === 0x46) {
    // ELF: e_ident[EI_CLASS] 2 = 64-bit, [EI_DATA] 1 = little-endian; e_type at 16, e_machine at 18.
    if (b[4] !== 2 || b[5] !== 1) return { format: "ELF", arch: `class ${b[4]} data ${b[5]}`, executable: false };
    const type = v.getUint16(16, true);
    const machine = v.getUint16(18, true);
    const arch = machine === 0x3e ? "x86-64" : machine === 0xb7 ? "aarch64" : `machine ${hex(machine)}`;
    return { format: "ELF", arch, executable: type === 2 || type === 3 };
  }
  if (b.length >= 16 && v.getUint32(0, true) === 0xfeedfacf) {
    // Mach-O 64-bit, little-endian: cputype at 4, filetype at 12 (2 = MH_EXECUTE).
    const cpu = v.getUint32(4, true);
    const arch = cpu === 0x01000007 ? "x86-64" : cpu === 0x0100000c ? "arm64" : `machine ${hex(cpu)}`;
    return { format: "Mach-O", arch, executable: v.getUint32(12, true) === 2 };
  }
  if (b.length >= 64 && b[0] === 0x4d && b[1] === 0x5a) {
    // PE: "MZ", e_lfanew at 0x3c → "PE\0\0", COFF header (Machine, …, Characteristics), then the optional header's magic.
    const pe = v.getUint32(0x3c, true);
    if (pe + 26 > b.length || v.getUint32(pe, true) !== 0x00004550) return unknown;
    const machine = v.getUint16(pe + 4, true);
    const characteristics = v.getUint16(pe + 22, true);
    const magic = v.getUint16(pe + 24, true);
    const arch = machine === 0x8664 ? "x86-64" : machine === 0xaa64 ? "arm64" : `machine ${hex(machine)}`;
    const format = magic === 0x20b ? "PE32+" : magic === 0x10b ? "PE32" : "unknown";
    return { format, arch, executable: (characteristics & 0x0002) !== 0 };
  }
  return unknown;
}

/** The header of a file on disk. */
export function fileFormat(path: string): BinaryFormat {
  const fd = openSync(path, "r");
  try {
    const buf = new Uint8Array(4096);
    const n = readSync(fd, buf, 0, buf.length, 0);
    return binaryFormat(buf.subarray(0, n));
  } finally {
    closeSync(fd);
  }
}

export function sha256File(path: string): string {
  return createHash("sha256").update(readFileSync(path)).digest("hex");
}

// ---------------------------------------------------------------- manifest

export interface Artifact {
  readonly file: string;
  readonly target: TargetName;
  readonly size: number;
  readonly sha256: string;
}

/** The release's install.sh: where it downloads from when no --base-url is given. */
export interface Installer {
  readonly file: typeof INSTALLER;
  readonly size: number;
  readonly sha256: string;
  readonly base_url: string;
}

export interface Manifest {
  readonly name: "agentcore";
  readonly version: string;
  readonly commit: string;
  readonly build_date: string;
  /** The Bun that built the artifacts (and that each one embeds). */
  readonly bun_version: string;
  readonly artifacts: readonly Artifact[];
  /** Absent in a release made before install.sh was part of it (its check then fails). */
  readonly installer?: Installer;
}

/** The files SHA256SUMS lists: the binaries, and install.sh when the manifest has it. */
export function summedFiles(manifest: Pick<Manifest, "artifacts" | "installer">): { file: string; sha256: string }[] {
  return [...manifest.artifacts, ...(manifest.installer !== undefined ? [manifest.installer] : [])];
}

/** SHA256SUMS in sha256sum's format (`HEX  NAME`, one line each, sorted by name). */
export function sumsText(artifacts: readonly { file: string; sha256: string }[]): string {
  return [...artifacts]
    .sort((a, b) => (a.file < b.file ? -1 : 1))
    .map((a) => `${a.sha256}  ${a.file}\n`)
    .join("");
}

/** install.sh's line that sets the download URL (the workflow and --download-url rewrite it). */
const BASE_URL_LINE = /^DEFAULT_BASE_URL="([^"\n]*)"$/m;

/** The download URL an install.sh uses without --base-url, or null when it has no such line. */
export function installerBaseUrl(script: string): string | null {
  return BASE_URL_LINE.exec(script)?.[1] ?? null;
}

/**
 * install.sh as a release carries it: the repository's script with its
 * default download URL set to `baseUrl` (unchanged when undefined). Throws
 * when the script has no `DEFAULT_BASE_URL="…"` line, or `baseUrl` is not
 * an http(s) or file URL (a double quote, `$` or backquote in it is refused:
 * it would change the shell line).
 */
export function installerText(script: string, baseUrl?: string): string {
  if (installerBaseUrl(script) === null) throw new Error(`${INSTALLER} has no DEFAULT_BASE_URL="…" line`);
  if (baseUrl === undefined) return script;
  if (!/^(https?|file):\/\/[^\s"$`\\]+$/.test(baseUrl))
    throw new Error(`--download-url must be an http://, https:// or file:// URL without spaces, quotes, $ or backquotes, not '${baseUrl}'`);
  return script.replace(BASE_URL_LINE, () => `DEFAULT_BASE_URL="${baseUrl.replace(/\/+$/, "")}"`);
}

// ---------------------------------------------------------------- build

export interface BuildOptions {
  readonly targets: readonly TargetName[];
  readonly out: string;
  /** The URL the release's install.sh downloads from by default (default: the one in install.sh). */
  readonly downloadUrl?: string;
  /** Build from a `git archive` of HEAD (only committed files) instead of the working tree. */
  readonly fromCommit?: boolean;
  /** Build every target a second time (elsewhere, the same file name) and compare the bytes. */
  readonly repro?: boolean;
  readonly log?: (line: string) => void;
}

export interface BuildResult {
  readonly manifest: Manifest;
  /** Per target: build seconds, and for --repro whether the second build was byte-identical. */
  readonly timings: readonly { target: TargetName; seconds: number; identical?: boolean; differing?: number }[];
}

const mb = (n: number) => `${(n / 1e6).toFixed(1)} MB`;

/** A checkout of HEAD's committed files in a temp folder (node_modules linked), and its clean-up. */
function exportCommit(): { root: string; done: () => void } {
  const dir = mkdtempSync(join(tmpdir(), "agentcore-release-src-"));
  const archive = spawnSync("git", ["archive", "--format=tar", "HEAD"], { cwd: ROOT, maxBuffer: 1 << 30 });
  if (archive.status !== 0) throw new Error(`git archive HEAD failed: ${archive.stderr.toString()}`);
  const tar = spawnSync("tar", ["-x", "-C", dir], { input: archive.stdout });
  if (tar.status !== 0) throw new Error(`tar -x failed: ${tar.stderr.toString()}`);
  symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"));
  return { root: dir, done: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Count the bytes where two files differ (and a size difference as differing bytes). */
function differingBytes(a: string, b: string): number {
  const x = readFileSync(a);
  const y = readFileSync(b);
  let n = Math.abs(x.length - y.length);
  const len = Math.min(x.length, y.length);
  for (let i = 0; i < len; i++) if (x[i] !== y[i]) n++;
  return n;
}

/** Build the targets into `out` with install.sh beside them (the previous artifacts, install.sh, SHA256SUMS and manifest removed first). */
export function buildRelease(opts: BuildOptions): BuildResult {
  const log = opts.log ?? ((l: string) => process.stderr.write(`${l}\n`));
  mkdirSync(opts.out, { recursive: true });
  for (const f of readdirSync(opts.out))
    if (f.startsWith("agentcore-") || f === SUMS || f === MANIFEST || f === INSTALLER) rmSync(join(opts.out, f));
  const info: BuildInfo = buildInfo();
  const source = opts.fromCommit ? exportCommit() : null;
  if (source !== null) info.commit = info.commit.replace(/\+dirty$/, "");
  const root = source?.root ?? ROOT;
  log(
    `release: agentcore ${info.version}, commit ${info.commit}, build date ${info.buildDate}${source ? " (from a git archive of HEAD)" : ""}`,
  );
  const artifacts: Artifact[] = [];
  const timings: { target: TargetName; seconds: number; identical?: boolean; differing?: number }[] = [];
  const second = opts.repro ? mkdtempSync(join(tmpdir(), "agentcore-release-repro-")) : null;
  try {
    opts.targets.forEach((target, i) => {
      const file = TARGETS[target].file;
      const r = buildBinary({ target, outfile: join(resolve(opts.out), file), info, root });
      const size = statSync(r.outfile).size;
      const sha256 = sha256File(r.outfile);
      artifacts.push({ file, target, size, sha256 });
      const t: (typeof timings)[number] = { target, seconds: r.ms / 1000 };
      let note = "";
      if (second !== null) {
        const again = buildBinary({ target, outfile: join(second, file), info, root });
        t.differing = differingBytes(r.outfile, again.outfile);
        t.identical = t.differing === 0;
        note = t.identical ? "  rebuilt: identical bytes" : `  rebuilt: ${t.differing} bytes differ`;
        rmSync(again.outfile);
      }
      timings.push(t);
      log(
        `release: [${i + 1}/${opts.targets.length}] ${target.padEnd(12)} ${file.padEnd(26)} ${mb(size).padStart(9)}  ${t.seconds.toFixed(1)} s  sha256 ${sha256.slice(0, 16)}…${note}`,
      );
    });
    // install.sh from the same source as the binaries (a --from-commit release takes the committed one)
    writeFileSync(join(opts.out, INSTALLER), installerText(readFileSync(join(root, INSTALLER), "utf8"), opts.downloadUrl));
    chmodSync(join(opts.out, INSTALLER), 0o755);
  } finally {
    source?.done();
    if (second !== null) rmSync(second, { recursive: true, force: true });
  }
  const installerPath = join(opts.out, INSTALLER);
  const installer: Installer = {
    file: INSTALLER,
    size: statSync(installerPath).size,
    sha256: sha256File(installerPath),
    base_url: installerBaseUrl(readFileSync(installerPath, "utf8")) ?? "",
  };
  log(`release: ${INSTALLER} (downloads from ${installer.base_url} by default)  sha256 ${installer.sha256.slice(0, 16)}…`);
  const manifest: Manifest = {
    name: "agentcore",
    version: info.version,
    commit: info.commit,
    build_date: info.buildDate,
    bun_version: Bun.version,
    artifacts,
    installer,
  };
  writeFileSync(join(opts.out, SUMS), sumsText(summedFiles(manifest)));
  writeFileSync(join(opts.out, MANIFEST), `${JSON.stringify(manifest, null, 2)}\n`);
  log(`release: wrote ${SUMS} and ${MANIFEST} in ${opts.out}`);
  return { manifest, timings };
}

// ---------------------------------------------------------------- checks

export interface Check {
  readonly name: string;
  readonly ok: boolean;
  /** Set for a check that could not run here (no qemu, not a Linux x64 host). */
  readonly skipped?: boolean;
  readonly detail: string;
}

export type SmokeMode = "auto" | "require" | "skip";

/** qemu-user for aarch64 and the folder holding an aarch64 glibc (for -L), or why not. */
export function findQemu(): { qemu: string; sysroot: string | null } | { missing: string } {
  const dirs = (process.env.PATH ?? "").split(delimiter);
  const qemu = ["qemu-aarch64-static", "qemu-aarch64"].flatMap((n) => dirs.map((d) => join(d, n))).find((p) => existsSync(p));
  if (qemu === undefined) return { missing: "qemu-aarch64(-static) is not on PATH (Debian: apt-get install qemu-user-static)" };
  // Bun's linux-arm64 binary is linked against glibc: its loader must be found under / or under -L DIR.
  if (existsSync("/lib/ld-linux-aarch64.so.1")) return { qemu, sysroot: null };
  for (const dir of [process.env.QEMU_LD_PREFIX, "/usr/aarch64-linux-gnu"]) {
    if (dir !== undefined && dir !== "" && existsSync(join(dir, "lib", "ld-linux-aarch64.so.1"))) return { qemu, sysroot: dir };
  }
  return { missing: "no aarch64 glibc for qemu (Debian: apt-get install libc6-arm64-cross, or set QEMU_LD_PREFIX)" };
}

/** The smoke commands: name → argv after the binary. Run in a folder holding examples/tool_calls.jsonl and examples/hello.txt. */
export const SMOKE_COMMANDS: readonly (readonly [string, readonly string[]])[] = [
  ["--version", ["--version"]],
  ["version --json", ["version", "--json"]],
  ["tools", ["tools"]],
  ["execute echo", ["execute", '{"id":"c1","tool":"echo","arguments":{"message":"hello from the smoke test"}}']],
  ["run examples/tool_calls.jsonl", ["run", "examples/tool_calls.jsonl"]],
];

/** Stdout made comparable across machines: each envelope's duration_ms (a timing) set to 0, version --json's target removed. */
export function comparable(name: string, stdout: string): string {
  if (name === "version --json") {
    const { target: _, ...rest } = JSON.parse(stdout) as Record<string, unknown>;
    return JSON.stringify(rest);
  }
  return stdout.replace(/"duration_ms":\d+(\.\d+)?(e[-+]?\d+)?/g, '"duration_ms":0');
}

interface SmokeRun {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function smokeRun(prefix: readonly string[], bin: string, args: readonly string[], cwd: string): SmokeRun {
  const r = spawnSync(prefix[0] ?? bin, [...prefix.slice(1), ...(prefix.length > 0 ? [bin] : []), ...args], {
    cwd,
    encoding: "utf8",
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: cwd, AGENTCORE_CONFIG: "" },
    timeout: 120_000,
  });
  return { status: r.status, stdout: r.stdout ?? "", stderr: r.error !== undefined ? String(r.error) : (r.stderr ?? "") };
}

/**
 * Run the smoke commands with the Linux artifacts of `dir`: linux-x64
 * natively (on a Linux x64 host), linux-arm64 under qemu; arm64's stdout and
 * exit status must equal x64's, command by command.
 */
export function smokeChecks(dir: string, manifest: Manifest, mode: SmokeMode): Check[] {
  if (mode === "skip") return [{ name: "smoke", ok: true, skipped: true, detail: "skipped (--smoke skip)" }];
  const checks: Check[] = [];
  const has = (t: TargetName) => manifest.artifacts.find((a) => a.target === t);
  const x64 = has("linux-x64");
  const arm = has("linux-arm64");
  const work = mkdtempSync(join(tmpdir(), "agentcore-smoke-"));
  try {
    mkdirSync(join(work, "examples"));
    for (const f of ["tool_calls.jsonl", "hello.txt"]) copyFileSync(join(ROOT, "examples", f), join(work, "examples", f));
    let reference: Map<string, SmokeRun> | null = null;
    if (x64 !== undefined) {
      if (hostTarget() !== "linux-x64") {
        checks.push({ name: "smoke linux-x64", ok: mode !== "require", skipped: true, detail: `cannot run here (${hostTarget()})` });
      } else {
        reference = new Map(SMOKE_COMMANDS.map(([name, args]) => [name, smokeRun([], join(dir, x64.file), args, work)]));
        checks.push(...expectations("linux-x64", reference, manifest));
      }
    }
    if (arm !== undefined) {
      const q = findQemu();
      if ("missing" in q) {
        checks.push({ name: "smoke linux-arm64 (qemu)", ok: mode !== "require", skipped: true, detail: q.missing });
      } else {
        const prefix = [q.qemu, ...(q.sysroot !== null ? ["-L", q.sysroot] : [])];
        const runs = new Map(SMOKE_COMMANDS.map(([name, args]) => [name, smokeRun(prefix, join(dir, arm.file), args, work)]));
        checks.push(...expectations("linux-arm64", runs, manifest));
        if (reference === null) {
          checks.push({
            name: "smoke linux-arm64 = linux-x64",
            ok: true,
            skipped: true,
            detail: "no native linux-x64 run to compare with",
          });
        } else {
          for (const [name] of SMOKE_COMMANDS) {
            const a = runs.get(name)!;
            const b = reference.get(name)!;
            const same = a.status === b.status && comparable(name, a.stdout) === comparable(name, b.stdout);
            checks.push({
              name: `smoke linux-arm64 = linux-x64: ${name}`,
              ok: same,
              detail: same
                ? `exit ${a.status}, ${Buffer.byteLength(a.stdout)} bytes of stdout, the same`
                : `arm64 exit ${a.status} vs x64 exit ${b.status}; stdout ${JSON.stringify(a.stdout.slice(0, 300))} vs ${JSON.stringify(b.stdout.slice(0, 300))}`,
            });
          }
        }
      }
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return checks;
}

/** What each smoke command must print on its own (before any comparison). */
function expectations(target: TargetName, runs: Map<string, SmokeRun>, manifest: Manifest): Check[] {
  const out: Check[] = [];
  const expect = (name: string, ok: boolean, detail: string) => out.push({ name: `smoke ${target}: ${name}`, ok, detail });
  const r = (name: string) => runs.get(name)!;
  const v = r("--version");
  expect(
    "--version",
    v.status === 0 && v.stdout === `agentcore ${manifest.version}\n`,
    `exit ${v.status}: ${JSON.stringify(v.stdout || v.stderr)}`,
  );
  const j = r("version --json");
  let info: Record<string, unknown> = {};
  try {
    info = JSON.parse(j.stdout) as Record<string, unknown>;
  } catch {}
  const infoOk =
    j.status === 0 &&
    info.version === manifest.version &&
    info.commit === manifest.commit &&
    info.build_date === manifest.build_date &&
    info.target === target &&
    info.bun_version === manifest.bun_version;
  expect("version --json", infoOk, `exit ${j.status}: ${(j.stdout || j.stderr).trim().slice(0, 300)}`);
  const t = r("tools");
  expect("tools", t.status === 0 && /^echo\s/m.test(t.stdout), `exit ${t.status}, ${t.stdout.split("\n").length - 1} lines`);
  const e = r("execute echo");
  let env: Record<string, unknown> = {};
  try {
    env = JSON.parse(e.stdout) as Record<string, unknown>;
  } catch {}
  const echoed = JSON.stringify(env.result) === JSON.stringify({ message: "hello from the smoke test" });
  expect(
    "execute echo",
    e.status === 0 && env.success === true && echoed,
    `exit ${e.status}: ${(e.stdout || e.stderr).trim().slice(0, 200)}`,
  );
  const run = r("run examples/tool_calls.jsonl");
  const lines = run.stdout.trimEnd().split("\n");
  // The example mixes good and bad calls on purpose (README): nine envelopes, exit status 1.
  const allEnvelopes = lines.every((l) => {
    try {
      return typeof (JSON.parse(l) as { success?: unknown }).success === "boolean";
    } catch {
      return false;
    }
  });
  expect(
    "run examples/tool_calls.jsonl",
    run.status === 1 && lines.length === 9 && allEnvelopes,
    `exit ${run.status}, ${lines.length} envelopes`,
  );
  return out;
}

/** install.sh in a release: listed in the manifest, its size and sha256, its download URL, and `sh -n` (it parses). */
function installerChecks(dir: string, manifest: Manifest): Check[] {
  const path = join(dir, INSTALLER);
  const i = manifest.installer;
  if (i === undefined || !existsSync(path))
    return [{ name: INSTALLER, ok: false, detail: i === undefined ? "not in the manifest" : "missing" }];
  const size = statSync(path).size;
  const sha = sha256File(path);
  const url = installerBaseUrl(readFileSync(path, "utf8"));
  // /bin/sh by its path: the check also runs with an empty PATH (the test of --smoke without qemu)
  const parse = spawnSync(existsSync("/bin/sh") ? "/bin/sh" : "sh", ["-n", path], { encoding: "utf8" });
  return [
    { name: `${INSTALLER}: size`, ok: size === i.size, detail: `${size} bytes; manifest says ${i.size}` },
    { name: `${INSTALLER}: sha256`, ok: sha === i.sha256, detail: sha === i.sha256 ? sha : `${sha}; manifest says ${i.sha256}` },
    {
      name: `${INSTALLER}: download URL`,
      ok: url === i.base_url,
      detail: `${url ?? "no DEFAULT_BASE_URL line"}; manifest says ${i.base_url}`,
    },
    {
      name: `${INSTALLER}: sh -n`,
      ok: parse.status === 0,
      detail: parse.status === 0 ? "parses" : (parse.stderr || String(parse.error)).trim().slice(0, 300),
    },
  ];
}

/** Check a release folder: its manifest, SHA256SUMS, each file's size, sha256 and header, then the smoke tests. */
export function checkRelease(dir: string, opts: { smoke: SmokeMode; targets?: readonly TargetName[] }): Check[] {
  const checks: Check[] = [];
  const add = (name: string, ok: boolean, detail: string) => checks.push({ name, ok, detail });
  let manifest: Manifest;
  try {
    manifest = JSON.parse(readFileSync(join(dir, MANIFEST), "utf8")) as Manifest;
  } catch (e) {
    add(MANIFEST, false, `cannot read ${join(dir, MANIFEST)}: ${(e as Error).message}`);
    return checks;
  }
  const listed = manifest.artifacts.map((a) => a.target).sort();
  if (opts.targets !== undefined) {
    const wanted = [...opts.targets].sort();
    add(
      "targets",
      JSON.stringify(listed) === JSON.stringify(wanted),
      `manifest lists ${listed.join(", ") || "none"}; wanted ${wanted.join(", ")}`,
    );
  }
  for (const a of manifest.artifacts) {
    const path = join(dir, a.file);
    const expected = EXPECTED[a.target];
    if (expected === undefined || TARGETS[a.target].file !== a.file) {
      add(a.file, false, `unknown target '${a.target}' or file name for it`);
      continue;
    }
    if (!existsSync(path)) {
      add(a.file, false, "missing");
      continue;
    }
    const size = statSync(path).size;
    add(`${a.file}: size`, size === a.size, `${size} bytes; manifest says ${a.size}`);
    const sha = sha256File(path);
    add(`${a.file}: sha256`, sha === a.sha256, sha === a.sha256 ? sha : `${sha}; manifest says ${a.sha256}`);
    const f = fileFormat(path);
    add(
      `${a.file}: format`,
      f.format === expected.format && f.arch === expected.arch && f.executable,
      `${f.format} ${f.arch}${f.executable ? " executable" : " (not an executable)"}; ${a.target} needs ${expected.format} ${expected.arch}`,
    );
  }
  checks.push(...installerChecks(dir, manifest));
  let sums = "";
  try {
    sums = readFileSync(join(dir, SUMS), "utf8");
  } catch {}
  add(
    SUMS,
    sums !== "" && sums === sumsText(summedFiles(manifest)),
    sums === "" ? "missing or empty" : "one line per artifact and for install.sh, as in the manifest",
  );
  const extra = readdirSync(dir).filter(
    (f) => f !== SUMS && f !== MANIFEST && f !== INSTALLER && !manifest.artifacts.some((a) => a.file === f),
  );
  add("no other files", extra.length === 0, extra.length === 0 ? "none" : extra.join(", "));
  checks.push(...smokeChecks(dir, manifest, opts.smoke));
  return checks;
}

// ---------------------------------------------------------------- CLI

const USAGE = `usage: bun scripts/release.ts [--targets T1,T2] [--out DIR] [--download-url URL] [--from-commit] [--repro] [--smoke auto|require|skip]
       bun scripts/release.ts --check [--out DIR] [--targets T1,T2] [--smoke auto|require|skip]
targets: ${TARGET_NAMES.join(", ")} (default: all)
--out DIR        the release folder (default: dist/release); install.sh is copied into it
--download-url URL
                 where the release's install.sh downloads from without --base-url
                 (default: the URL in install.sh, this project's latest GitHub release)
--from-commit    build HEAD's committed files (a git archive), not the working tree
--repro          build each target twice and compare the bytes (exit 1 if they differ)
--check          only check an existing release folder
--smoke MODE     the Linux smoke tests: auto (default; skipped without qemu or off Linux x64,
                 except under CI=true, where that fails), require, or skip
`;

export function parseTargets(text: string): TargetName[] {
  const names = text
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  if (names.length === 0) throw new Error("--targets needs at least one target");
  for (const n of names)
    if (!(TARGET_NAMES as string[]).includes(n)) throw new Error(`unknown target '${n}' (targets: ${TARGET_NAMES.join(", ")})`);
  return [...new Set(names)] as TargetName[];
}

function cli(argv: string[]): number {
  let targets: TargetName[] | undefined;
  let out = join(ROOT, "dist", "release");
  let check = false;
  let fromCommit = false;
  let repro = false;
  let downloadUrl: string | undefined;
  let smoke: SmokeMode = process.env.CI === "true" ? "require" : "auto";
  try {
    for (let i = 0; i < argv.length; i++) {
      const a = argv[i]!;
      const eq = a.indexOf("=");
      const flag = a.startsWith("--") && eq > 0 ? a.slice(0, eq) : a;
      const value = () => {
        const v = a.startsWith("--") && eq > 0 ? a.slice(eq + 1) : argv[++i];
        if (v === undefined) throw new Error(`${flag} needs a value`);
        return v;
      };
      if (flag === "--targets") targets = parseTargets(value());
      else if (flag === "--out") out = resolve(value());
      else if (flag === "--download-url") {
        downloadUrl = value();
        installerText('DEFAULT_BASE_URL=""\n', downloadUrl); // a bad URL is a usage error now, not after the builds
      } else if (flag === "--check") check = true;
      else if (flag === "--from-commit") fromCommit = true;
      else if (flag === "--repro") repro = true;
      else if (flag === "--smoke") {
        const m = value();
        if (m !== "auto" && m !== "require" && m !== "skip") throw new Error(`--smoke takes auto, require or skip, not '${m}'`);
        smoke = m === "auto" && process.env.CI === "true" ? "require" : m;
      } else if (flag === "-h" || flag === "--help") {
        process.stdout.write(USAGE);
        return 0;
      } else throw new Error(`unknown option '${a}'`);
    }
    if (check && (fromCommit || repro || downloadUrl !== undefined))
      throw new Error("--check only checks: --from-commit, --repro and --download-url are for a build");
  } catch (e) {
    process.stderr.write(`release: ${(e as Error).message}\n${USAGE}`);
    return 2;
  }
  let failed = false;
  if (!check) {
    try {
      const r = buildRelease({ targets: targets ?? TARGET_NAMES, out, fromCommit, repro, downloadUrl });
      if (repro && r.timings.some((t) => t.identical === false)) failed = true;
    } catch (e) {
      process.stderr.write(`release: ${(e as Error).message}\n`);
      return 1;
    }
  }
  process.stderr.write(`release: checking ${out}\n`);
  const checks = checkRelease(out, { smoke, targets: check ? targets : (targets ?? TARGET_NAMES) });
  for (const c of checks) process.stderr.write(`  ${c.ok ? (c.skipped ? "skip" : "ok  ") : "FAIL"}  ${c.name}: ${c.detail}\n`);
  const bad = checks.filter((c) => !c.ok);
  const skipped = checks.filter((c) => c.skipped && c.ok).length;
  process.stderr.write(
    `release: ${checks.length - bad.length - skipped} checks passed, ${skipped} skipped, ${bad.length} failed${failed ? "; the rebuilt bytes differ" : ""}\n`,
  );
  return bad.length > 0 || failed ? 1 : 0;
}

if (import.meta.main) process.exitCode = cli(process.argv.slice(2));
