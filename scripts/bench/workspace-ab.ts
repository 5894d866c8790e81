/**
 * Workspace tools, this checkout against another one, in one process
 * (alternating rounds, medians): what a change to git_diff or exec costs.
 *
 *   bun scripts/bench/workspace-ab.ts --base ../agentcore-old [--rounds N]
 *
 * `--base` is another checkout of agentcore with its dependencies reachable
 * (for example `git worktree add ../agentcore-old REV` and a symlink to this
 * checkout's node_modules). Both trees load their own `src/`, and each case
 * runs on the same temporary git repository, with the same options:
 *
 * 1. `git_diff {}` on a repository with one changed file (status and diff);
 * 2. `exec ["git","status","--short"]` and `exec ["ls"]`, isolation "auto";
 * 3. a bare `spawnSync("git", ["status","--short"])` as the floor.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { spawnSync } from "node:child_process";
import { parseArgs } from "node:util";

const { values } = parseArgs({ options: { base: { type: "string" }, rounds: { type: "string" } } });
if (values.base === undefined) {
  console.error("usage: bun scripts/bench/workspace-ab.ts --base OTHER_CHECKOUT [--rounds N]");
  process.exit(2);
}
const ROUNDS = Number(values.rounds ?? 21);
const here = path.resolve(import.meta.dir, "../..");
const base = path.resolve(values.base);
const work = fs.mkdtempSync(path.join(os.tmpdir(), "agentcore-bench-ws-ab-"));

interface Tree {
  dispatch(tool: string, args: Record<string, unknown>): Promise<void>;
}

async function load(tree: string, root: string): Promise<Tree> {
  const runtime = await import(path.join(tree, "src/runtime/index.ts"));
  const ws = await import(path.join(tree, "src/tools/workspace/index.ts"));
  const quiet = { warn: () => {} };
  const logger = {
    trace() {},
    debug() {},
    info() {},
    warn() {},
    error() {},
    level: "error",
    child() {
      return logger;
    },
  };
  const tools = ws.workspaceTools({ git_diff: true, exec: { allow: ["git", "ls"] } }, root, quiet);
  const rt = runtime.createRuntime({ root, tools, logger: runtime.createLogger?.({ level: "error", sink: () => {} }) ?? logger });
  return {
    async dispatch(tool, args) {
      const env = await rt.dispatchCall({ id: "b", tool, arguments: args, shape: "agentcore" });
      if (!env.success) throw new Error(`${tree}: ${tool} failed: ${JSON.stringify(env.error)}`);
    },
  };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

async function compare(title: string, cases: Record<string, () => unknown>, ref: string): Promise<void> {
  const names = Object.keys(cases);
  const samples: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  for (const n of names) await cases[n]!(); // warm-up
  for (let r = 0; r < ROUNDS; r++) {
    for (const n of names) {
      const t = performance.now();
      await cases[n]!();
      samples[n]!.push(performance.now() - t);
    }
  }
  const r0 = median(samples[ref]!);
  console.log(`\n${title} (median of ${ROUNDS}, alternating; ratio against "${ref}")`);
  for (const n of names) {
    const m = median(samples[n]!);
    console.log(`  ${n.padEnd(36)} ${m.toFixed(2).padStart(9)} ms   ${(m / r0).toFixed(2)}x`);
  }
}

try {
  const root = path.join(work, "repo");
  fs.mkdirSync(root);
  const git = (...args: string[]) => spawnSync("git", args, { cwd: root, stdio: "ignore" });
  git("init", "-q");
  fs.writeFileSync(path.join(root, "f.txt"), "one\ntwo\nthree\n");
  git("add", "f.txt");
  git("-c", "user.name=b", "-c", "user.email=b@example.invalid", "commit", "-qm", "one");
  fs.writeFileSync(path.join(root, "f.txt"), "one\n2\nthree\n");

  const now = await load(here, root);
  const old = await load(base, root);
  const floor = () => spawnSync("git", ["status", "--short"], { cwd: root });
  await compare(
    "git_diff {}",
    { "this checkout": () => now.dispatch("git_diff", {}), "base checkout": () => old.dispatch("git_diff", {}), "bare git status": floor },
    "base checkout",
  );
  const status = { argv: ["git", "status", "--short"] };
  await compare(
    "exec git status --short",
    { "this checkout": () => now.dispatch("exec", status), "base checkout": () => old.dispatch("exec", status), "bare git status": floor },
    "base checkout",
  );
  const ls = { argv: ["ls"] };
  await compare(
    "exec ls",
    {
      "this checkout": () => now.dispatch("exec", ls),
      "base checkout": () => old.dispatch("exec", ls),
      "bare spawnSync ls": () => spawnSync("ls", { cwd: root }),
    },
    "base checkout",
  );
} finally {
  fs.rmSync(work, { recursive: true, force: true });
}
