/**
 * The compiled single binary for end-to-end tests: built once per test process
 * with `bun build --compile`, then copied to a folder with no node_modules.
 */
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

export const REPO = resolve(import.meta.dir, "../..");
let built: string | null = null;

/** Path of the compiled binary (built on first use). */
export function binaryPath(): string {
  if (built !== null) return built;
  const work = mkdtempSync(join(tmpdir(), "agentcore-binary-"));
  const out = join(work, "build", "agentcore");
  // the release flags (scripts/build-binary.mjs): --bytecode changes how the bundle is loaded
  const flags = ["--compile", "--minify", "--bytecode", "--format=esm", "--splitting"];
  const r = Bun.spawnSync([process.execPath, "build", ...flags, "src/cli/main.ts", "--outfile", out], { cwd: REPO });
  if (r.exitCode !== 0) throw new Error(`bun build --compile failed: ${r.stderr.toString()}`);
  mkdirSync(join(work, "bin"));
  const bin = join(work, "bin", "agentcore");
  copyFileSync(out, bin);
  chmodSync(bin, 0o755);
  rmSync(join(work, "build"), { recursive: true });
  process.on("exit", () => rmSync(work, { recursive: true, force: true }));
  built = bin;
  return bin;
}
