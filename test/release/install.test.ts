/**
 * install.sh, run by real `sh` (and `dash` when present) child processes
 * against local release folders: one holding the real linux-x64 binary built
 * by scripts/build-binary.mjs, others holding small fake artifacts (shell
 * scripts that print a version) for the installer's own logic; one run
 * downloads over HTTP on loopback.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildBinary, hostTarget, TARGETS } from "../../scripts/build-binary.mjs";
import { VERSION } from "../../src/core/version.ts";
import { REPO } from "../support/binary.ts";

const INSTALL = join(REPO, "install.sh");
/** sh (dash on Debian), dash and bash, those present. */
const SHELLS = ["sh", "dash", "bash"].filter((s) => Bun.which(s) !== null);
let work: string;
let real: string; // a release folder with the real linux-x64 binary
let fake: string; // one with fake artifacts for every target, version 0.0.9
let n = 0;

const sha = (bytes: Uint8Array | string) => createHash("sha256").update(bytes).digest("hex");

function writeSums(dir: string) {
  const lines = readdirSync(dir)
    .filter((f) => f.startsWith("agentcore-"))
    .sort()
    .map((f) => `${sha(readFileSync(join(dir, f)))}  ${f}\n`);
  writeFileSync(join(dir, "SHA256SUMS"), lines.join(""));
}

/** A folder of fake artifacts: each a script printing `agentcore VERSION` (and its target for `which`). */
function fakeRelease(version: string): string {
  const dir = join(work, `fake-${version}-${n++}`);
  mkdirSync(dir);
  for (const [target, t] of Object.entries(TARGETS)) {
    writeFileSync(join(dir, t.file), `#!/bin/sh\nif [ "\${1:-}" = which ]; then echo ${target}; else echo "agentcore ${version}"; fi\n`);
  }
  writeSums(dir);
  return dir;
}

/** A PATH folder whose `uname` answers -s and -m as given. */
function fakeUname(s: string, m: string): string {
  const dir = join(work, `uname-${n++}`);
  mkdirSync(dir);
  writeFileSync(join(dir, "uname"), `#!/bin/sh\ncase "$1" in -s) echo ${s} ;; -m) echo ${m} ;; *) echo ${s} ;; esac\n`);
  chmodSync(join(dir, "uname"), 0o755);
  return dir;
}

interface Result {
  status: number;
  stdout: string;
  stderr: string;
}

async function install(shell: string, args: string[], opts: { home?: string; path?: string[] } = {}): Promise<Result> {
  const home = opts.home ?? mkdtempSync(join(work, "home-"));
  const p = Bun.spawn([shell, INSTALL, ...args], {
    cwd: work,
    env: { HOME: home, PATH: [...(opts.path ?? []), "/usr/local/bin", "/usr/bin", "/bin"].join(":") },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, status] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { status, stdout, stderr };
}

function run(file: string, ...args: string[]): string {
  return Bun.spawnSync([file, ...args]).stdout.toString();
}

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), "agentcore-install-"));
  real = join(work, "real");
  if (hostTarget() === "linux-x64") {
    buildBinary({ target: "linux-x64", outfile: join(real, TARGETS["linux-x64"].file) });
    writeSums(real);
  }
  fake = fakeRelease("0.0.9");
}, 180_000);
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe.each(SHELLS)("install.sh under %s", (shell) => {
  test.if(hostTarget() === "linux-x64")("happy path: the real linux-x64 binary into ~/.local/bin, then it runs", async () => {
    const home = mkdtempSync(join(work, "home-"));
    const r = await install(shell, ["--base-url", real], { home });
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    const bin = join(home, ".local", "bin", "agentcore");
    expect(run(bin, "--version")).toBe(`agentcore ${VERSION}\n`);
    expect(readdirSync(join(home, ".local", "bin"))).toEqual(["agentcore"]);
    expect(r.stdout).toContain(`installed ${VERSION} at ${bin}`);
    expect(r.stdout).toContain(`${join(home, ".local", "bin")} is not on your PATH`);
    expect(JSON.parse(run(bin, "version", "--json")).target).toBe("linux-x64");
  });

  test("--prefix DIR installs DIR/bin/agentcore, from a file:// URL; no PATH note when DIR/bin is on PATH", async () => {
    const prefix = join(work, `prefix-${n++}`);
    const r = await install(shell, ["--base-url", `file://${fake}`, "--prefix", prefix, "--version", "0.0.9"], {
      path: [join(prefix, "bin"), fakeUname("Linux", "x86_64")],
    });
    expect(r.status).toBe(0);
    expect(run(join(prefix, "bin", "agentcore"), "which")).toBe("linux-x64\n");
    expect(r.stdout).toContain("installed 0.0.9");
    expect(r.stdout).not.toContain("not on your PATH");
  });

  test("picks the artifact for uname -s / uname -m", async () => {
    for (const [s, m, target] of [
      ["Darwin", "arm64", "darwin-arm64"],
      ["Darwin", "x86_64", "darwin-x64"],
      ["Linux", "aarch64", "linux-arm64"],
      ["Linux", "amd64", "linux-x64"],
      ["MINGW64_NT-10.0", "x86_64", "windows-x64"],
    ] as const) {
      const home = mkdtempSync(join(work, "home-"));
      const r = await install(shell, ["--base-url", fake], { home, path: [fakeUname(s, m)] });
      expect(r.status).toBe(0);
      const exe = target === "windows-x64" ? "agentcore.exe" : "agentcore";
      expect(run(join(home, ".local", "bin", exe), "which")).toBe(`${target}\n`);
      expect(r.stdout).toContain(`installing ${TARGETS[target].file} from ${fake}`);
    }
  });

  test("a corrupted file is refused and nothing is installed (an installed one stays)", async () => {
    const bad = fakeRelease("0.0.10");
    writeFileSync(join(bad, "agentcore-linux-x64"), '#!/bin/sh\necho "agentcore 6.6.6"\n'); // after SHA256SUMS
    const uname = fakeUname("Linux", "x86_64");
    const home = mkdtempSync(join(work, "home-"));
    const r = await install(shell, ["--base-url", bad], { home, path: [uname] });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("sha256 mismatch for agentcore-linux-x64");
    expect(r.stderr).toContain("nothing installed");
    expect(existsSync(join(home, ".local", "bin"))).toBe(false);
    // over an installed agentcore: it is left as it was, and no staged file remains
    expect((await install(shell, ["--base-url", fake], { home, path: [uname] })).status).toBe(0);
    const again = await install(shell, ["--base-url", bad], { home, path: [uname] });
    expect(again.status).toBe(1);
    expect(readdirSync(join(home, ".local", "bin"))).toEqual(["agentcore"]);
    expect(run(join(home, ".local", "bin", "agentcore"))).toBe("agentcore 0.0.9\n");
  });

  test("an unknown platform is refused with the builds there are", async () => {
    for (const [s, m, shown] of [
      ["SunOS", "sun4v", "SunOS sun4v"],
      ["Linux", "riscv64", "Linux riscv64"],
      ["FreeBSD", "amd64", "FreeBSD amd64"],
    ] as const) {
      const home = mkdtempSync(join(work, "home-"));
      const r = await install(shell, ["--base-url", fake], { home, path: [fakeUname(s, m)] });
      expect(r.status).toBe(1);
      expect(r.stderr).toBe(
        `install.sh: no agentcore build for this platform: ${shown} (builds: linux-x64, linux-arm64, darwin-x64, darwin-arm64, windows-x64)\n`,
      );
      expect(existsSync(join(home, ".local"))).toBe(false);
    }
  });

  test.if(hostTarget() === "linux-x64")("a reinstall over an older version replaces it", async () => {
    const home = mkdtempSync(join(work, "home-"));
    const old = await install(shell, ["--base-url", fake], { home, path: [fakeUname("Linux", "x86_64")] });
    expect(old.status).toBe(0);
    expect(run(join(home, ".local", "bin", "agentcore"))).toBe("agentcore 0.0.9\n");
    const r = await install(shell, ["--base-url", real], { home });
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(`replaced 0.0.9 with ${VERSION} at ${join(home, ".local", "bin", "agentcore")}`);
    expect(run(join(home, ".local", "bin", "agentcore"), "--version")).toBe(`agentcore ${VERSION}\n`);
    expect(readdirSync(join(home, ".local", "bin"))).toEqual(["agentcore"]);
  });

  test("refused: no SHA256SUMS line for the artifact, a missing file, another version than --version", async () => {
    const uname = fakeUname("Linux", "x86_64");
    const partial = fakeRelease("0.0.11");
    writeFileSync(join(partial, "SHA256SUMS"), readFileSync(join(partial, "SHA256SUMS"), "utf8").replace(/^.*agentcore-linux-x64\n/m, ""));
    const home = mkdtempSync(join(work, "home-"));
    let r = await install(shell, ["--base-url", partial], { home, path: [uname] });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("SHA256SUMS has no line for agentcore-linux-x64: nothing installed");
    r = await install(shell, ["--base-url", join(work, "no-such-folder")], { home, path: [uname] });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("no SHA256SUMS in");
    r = await install(shell, ["--base-url", fake, "--version", "1.2.3"], { home, path: [uname] });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("asked for agentcore 1.2.3, but agentcore-linux-x64 is 0.0.9: nothing installed");
    expect(existsSync(join(home, ".local"))).toBe(false);
  });

  test("--help, and an unknown option (exit 2)", async () => {
    const h = await install(shell, ["--help"]);
    expect(h.status).toBe(0);
    expect(h.stdout).toStartWith("Usage: sh install.sh [--base-url URL|DIR] [--prefix DIR] [--version VERSION]");
    const bad = await install(shell, ["--frobnicate"]);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain("unknown option --frobnicate");
  });
});

test("downloads over HTTP (curl), and a failed download installs nothing", async () => {
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch(req) {
      const name = new URL(req.url).pathname.slice(1);
      const path = join(fake, name);
      return name.includes("/") || !existsSync(path) ? new Response("not found", { status: 404 }) : new Response(Bun.file(path));
    },
  });
  try {
    const uname = fakeUname("Linux", "aarch64");
    const home = mkdtempSync(join(work, "home-"));
    const r = await install("sh", ["--base-url", `http://127.0.0.1:${server.port}/`], { home, path: [uname] });
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    expect(run(join(home, ".local", "bin", "agentcore"), "which")).toBe("linux-arm64\n");
    const other = mkdtempSync(join(work, "home-"));
    const missing = await install("sh", ["--base-url", `http://127.0.0.1:${server.port}/nested`], { home: other, path: [uname] });
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain(`could not download http://127.0.0.1:${server.port}/nested/SHA256SUMS`);
    expect(existsSync(join(other, ".local"))).toBe(false);
  } finally {
    server.stop(true);
  }
});
