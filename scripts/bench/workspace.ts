/**
 * Workspace tools benchmark: what the safety costs, measured side by side in
 * one run (alternating rounds, medians).
 *
 *   bun scripts/bench/workspace.ts [--rounds N]
 *
 * 1. `exec ["ls"]` under bubblewrap against the same call unisolated (skipped
 *    without a working bwrap), and against a bare `spawnSync("ls")`.
 * 2. `write_file` of 4 KiB (descriptor walk, temp file, fsync, rename, fsync
 *    of the folder) against `fs.writeFileSync` + `fsync` of the same bytes.
 * 3. `grep` over this repository's `src/`: a plain word (matched inline) and
 *    a pattern with a quantifier (matched in a worker, start-up included),
 *    against a plain synchronous loop over the same files.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { spawnSync } from "node:child_process";
import { parseArgs } from "node:util";
import { createRuntime } from "../../src/runtime/index.ts";
import { createLogger } from "../../src/core/logger.ts";
import { detectBwrap, workspaceTools } from "../../src/tools/workspace/index.ts";

const { values } = parseArgs({ options: { rounds: { type: "string" } } });
const ROUNDS = Number(values.rounds ?? 21);
const repo = path.resolve(import.meta.dir, "../..");
const base = fs.mkdtempSync(path.join(os.tmpdir(), "agentcore-bench-ws-"));
const logger = createLogger({ level: "error", sink: () => {} });
const quiet = { warn: () => {} };

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

async function time(f: () => unknown): Promise<number> {
  const t = performance.now();
  await f();
  return performance.now() - t;
}

async function compare(title: string, cases: Record<string, () => unknown>): Promise<void> {
  const names = Object.keys(cases);
  const samples: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  for (const n of names) await cases[n]!(); // warm-up
  for (let r = 0; r < ROUNDS; r++) for (const n of names) samples[n]!.push(await time(cases[n]!));
  const ref = median(samples[names[names.length - 1]!]!);
  console.log(`\n${title} (median of ${ROUNDS}, alternating)`);
  for (const n of names) {
    const m = median(samples[n]!);
    console.log(`  ${n.padEnd(34)} ${m.toFixed(2).padStart(9)} ms   ${(m / ref).toFixed(2)}x`);
  }
}

const call = (rt: ReturnType<typeof createRuntime>, tool: string, args: Record<string, unknown>) => async () => {
  const env = await rt.dispatchCall({ id: "b", tool, arguments: args, shape: "agentcore" });
  if (!env.success) throw new Error(`${tool} failed: ${JSON.stringify(env.error)}`);
};

try {
  const root = path.join(base, "root");
  fs.mkdirSync(root);
  const bwrap = detectBwrap();
  const direct = createRuntime({
    root,
    logger,
    tools: workspaceTools({ exec: { allow: ["ls"], isolation: "off" }, write_file: true }, root, quiet),
  });
  const execCases: Record<string, () => unknown> = {};
  if (bwrap !== null) {
    const iso = createRuntime({ root, logger, tools: workspaceTools({ exec: { allow: ["ls"], isolation: "required" } }, root, quiet) });
    execCases["exec ls (bubblewrap)"] = call(iso, "exec", { argv: ["ls"] });
  } else console.log("bubblewrap missing: the isolated exec case is skipped");
  execCases["exec ls (unisolated)"] = call(direct, "exec", { argv: ["ls"] });
  execCases["spawnSync ls"] = () => spawnSync("ls", { cwd: root });
  await compare("exec", execCases);

  const data = "x".repeat(4096);
  await compare("write 4 KiB", {
    write_file: call(direct, "write_file", { path: "d/f.txt", content: data }),
    "writeFileSync + fsync": () => {
      const fd = fs.openSync(path.join(root, "plain.txt"), "w");
      fs.writeSync(fd, data);
      fs.fsyncSync(fd);
      fs.closeSync(fd);
    },
  });

  const src = createRuntime({ root: repo, logger, tools: workspaceTools({ grep: true }, repo, quiet) });
  const files: string[] = [];
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) files.push(p);
    }
  };
  walk(path.join(repo, "src"));
  await compare(`grep "ToolError" in src/ (${files.length} files)`, {
    "grep tool (plain word: inline)": call(src, "grep", { pattern: "ToolError", path: "src" }),
    "grep tool (ToolErr(or)+: worker)": call(src, "grep", { pattern: "ToolErr(or)+", path: "src" }),
    "sync read + RegExp loop": () => {
      const re = /ToolError/;
      let n = 0;
      for (const f of files) for (const line of fs.readFileSync(f, "utf8").split("\n")) if (re.test(line)) n++;
      return n;
    },
  });
} finally {
  fs.rmSync(base, { recursive: true, force: true });
}
