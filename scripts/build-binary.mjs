#!/usr/bin/env node
// The one place that compiles the single `agentcore` binary (npm run build, the
// release script, the release workflow). It runs
//
//   bun build --compile --minify --bytecode --format=esm --splitting [--target=bun-<os>-<arch>] src/cli/main.ts --outfile FILE
//
// with the build information (commit, build date, target) passed as
// `--define` values that src/core/build-info.ts reads.
//
//   node scripts/build-binary.mjs [--target linux-arm64] [--outfile dist/agentcore] [--define KEY=JSON]...
//
// The build date is SOURCE_DATE_EPOCH when it is set, else the commit's date, so
// that building one commit twice gives the same bytes (docs/install.md).
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
export const ENTRY = "src/cli/main.ts";

/** The release targets: name → Bun's --target value and the artifact's file name. */
export const TARGETS = {
  "linux-x64": { bun: "bun-linux-x64", file: "agentcore-linux-x64" },
  "linux-arm64": { bun: "bun-linux-arm64", file: "agentcore-linux-arm64" },
  "darwin-x64": { bun: "bun-darwin-x64", file: "agentcore-darwin-x64" },
  "darwin-arm64": { bun: "bun-darwin-arm64", file: "agentcore-darwin-arm64" },
  "windows-x64": { bun: "bun-windows-x64", file: "agentcore-windows-x64.exe" },
};

/** The target this machine would build without --target, in the names above. */
export function hostTarget() {
  const os = process.platform === "win32" ? "windows" : process.platform;
  return `${os}-${process.arch}`;
}

/** A target name ("linux-arm64" or "bun-linux-arm64") → its entry in TARGETS, or an error naming the known ones. */
export function targetOf(name) {
  const key = name.replace(/^bun-/, "");
  const t = TARGETS[key];
  if (t === undefined) throw new Error(`unknown target '${name}' (targets: ${Object.keys(TARGETS).join(", ")})`);
  return { name: key, ...t };
}

/** The Bun executable: this runtime under Bun, else the project's own (node_modules/.bin/bun), else `bun` on PATH. */
export function bunExecutable() {
  if (process.versions.bun !== undefined) return process.execPath;
  const local = join(ROOT, "node_modules", ".bin", process.platform === "win32" ? "bun.exe" : "bun");
  return existsSync(local) ? local : "bun";
}

function git(args, cwd) {
  try {
    return execFileSync("git", args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  } catch {
    return null;
  }
}

/**
 * The build information of the current checkout: version (package.json),
 * commit (HEAD, "+dirty" when tracked files differ from it), build date
 * (SOURCE_DATE_EPOCH, else the commit's date, else now), as strings.
 */
export function buildInfo(root = ROOT) {
  const version = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).version;
  let commit = git(["rev-parse", "HEAD"], root);
  if (commit !== null && spawnSync("git", ["diff", "--quiet", "HEAD", "--"], { cwd: root }).status === 1) commit += "+dirty";
  let date;
  const epoch = process.env.SOURCE_DATE_EPOCH;
  if (epoch !== undefined && /^\d+$/.test(epoch)) date = new Date(Number(epoch) * 1000);
  else {
    const seconds = git(["log", "-1", "--format=%ct"], root);
    date = seconds !== null && /^\d+$/.test(seconds) ? new Date(Number(seconds) * 1000) : new Date();
  }
  return { version, commit: commit ?? "unknown", buildDate: date.toISOString().replace(/\.\d{3}Z$/, "Z") };
}

/** The `--define` values src/core/build-info.ts reads, for `target` (a TARGETS name). */
export function buildInfoDefines(target, info = buildInfo()) {
  return {
    AGENTCORE_BUILD_COMMIT: JSON.stringify(info.commit),
    AGENTCORE_BUILD_DATE: JSON.stringify(info.buildDate),
    AGENTCORE_BUILD_TARGET: JSON.stringify(target),
  };
}

/**
 * Compile the binary. `target`: a TARGETS name, or undefined for this machine
 * (no --target flag). `define`: extra or overriding `--define` values (KEY →
 * a JSON/JS literal). `flags`: extra `bun build` flags. `info`: the build
 * information to embed (default: buildInfo(root)). `root`: the checkout to
 * build (default: this one). A Windows target's outfile gets ".exe" if it
 * lacks it (Bun would add it). Returns { outfile, target, ms, args }; throws
 * with Bun's stderr when the build fails.
 */
export function buildBinary({ target, outfile, define = {}, flags = [], info, root = ROOT, quiet = true } = {}) {
  const t = target === undefined ? null : targetOf(target);
  const name = t === null ? hostTarget() : t.name;
  let out = resolve(root, outfile ?? join("dist", t === null ? "agentcore" : t.file));
  if (name.startsWith("windows-") && !out.endsWith(".exe")) out += ".exe";
  mkdirSync(dirname(out), { recursive: true });
  const defines = { ...buildInfoDefines(name, info ?? buildInfo(root)), ...define };
  // --bytecode: the bundle is shipped as JSC bytecode, so start-up skips parsing it
  // (about 60 ms of every command's start). --format=esm --splitting: each command's
  // import() is its own chunk inside the binary, so a command evaluates only its own
  // modules (--version and --help almost none). See scripts/bench/startup.ts.
  const args = ["build", "--compile", "--minify", "--bytecode", "--format=esm", "--splitting"];
  if (t !== null) args.push(`--target=${t.bun}`);
  for (const [k, v] of Object.entries(defines)) args.push("--define", `${k}=${v}`);
  args.push(...flags, ENTRY, "--outfile", out);
  const started = performance.now();
  const r = spawnSync(bunExecutable(), args, { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  const ms = performance.now() - started;
  if (r.error !== undefined) throw new Error(`bun build could not start: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`bun build --compile${t === null ? "" : ` --target=${t.bun}`} failed:\n${r.stderr}${r.stdout}`);
  if (!quiet) process.stderr.write(r.stdout);
  return { outfile: out, target: name, ms, args };
}

function cli(argv) {
  const opts = { define: {}, flags: [], quiet: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const [flag, inline] =
      a.startsWith("--") && a.includes("=") ? [a.slice(0, a.indexOf("=")), a.slice(a.indexOf("=") + 1)] : [a, undefined];
    const value = () => {
      const v = inline ?? argv[++i];
      if (v === undefined) throw new Error(`${flag} needs a value`);
      return v;
    };
    if (flag === "--target") opts.target = value();
    else if (flag === "--outfile") opts.outfile = value();
    else if (flag === "--define") {
      const d = value();
      const eq = d.indexOf("=");
      if (eq <= 0) throw new Error(`--define wants KEY=VALUE, got '${d}'`);
      opts.define[d.slice(0, eq)] = d.slice(eq + 1);
    } else if (flag === "-h" || flag === "--help") {
      process.stdout.write(
        "usage: node scripts/build-binary.mjs [--target NAME] [--outfile FILE] [--define KEY=VALUE]... [-- BUN_BUILD_FLAGS...]\n" +
          `targets: ${Object.keys(TARGETS).join(", ")} (default: this machine, ${hostTarget()})\n`,
      );
      return 0;
    } else if (a === "--") {
      opts.flags.push(...argv.slice(i + 1));
      break;
    } else throw new Error(`unknown option '${a}' (see --help)`);
  }
  const r = buildBinary(opts);
  process.stderr.write(`build-binary: ${r.target} → ${r.outfile} (${(r.ms / 1000).toFixed(1)} s)\n`);
  return 0;
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    process.exitCode = cli(process.argv.slice(2));
  } catch (e) {
    process.stderr.write(`build-binary: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exitCode = 1;
  }
}
