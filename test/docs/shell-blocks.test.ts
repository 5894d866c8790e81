/**
 * Every fenced shell block of README.md and docs/*.md runs as written, in a
 * folder laid out like a fresh clone, and prints what the page shows under
 * its commands; or it is marked `<!-- doc-test: not run: REASON -->` and the
 * page says REASON in its text. The convention is in test/support/doc-blocks.ts
 * and docs/README.md.
 *
 * Each page runs in one bash, in order, as a reader would go through it, with:
 * `./dist/agentcore` (the compiled binary) and `agentcore` on PATH; the
 * repository's examples (copied), sources and node_modules (linked) in a git
 * repository of its own; a HOME of its own; no `bun` on PATH (a fresh clone
 * has none); free ports instead of the fixed ones a page names; and, for the
 * pages that use PostgreSQL, a private throwaway server in place of the
 * `127.0.0.1:5432` of their URLs.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as net from "node:net";
import * as path from "node:path";
import { binaryPath, REPO } from "../support/binary.ts";
import { type Drift, docPages, runPage, type ShellBlock, type Substitution, shellBlocks } from "../support/doc-blocks.ts";
import { type PrivateCluster, startCluster } from "../support/pg-cluster.ts";
import { tmp } from "../support/tmp.ts";

const PAGES = docPages(REPO);
const BLOCKS = new Map<string, ShellBlock[]>(PAGES.map((p) => [p, shellBlocks(REPO, p)]));

/** The fixed ports pages name; each page gets free ones instead. */
const PORTS = ["8787", "8788", "8791", "4318"];
/** The pages that need a PostgreSQL server (their URLs name 127.0.0.1:5432). */
const POSTGRES_PAGES = new Set(["docs/postgres.md", "docs/cluster.md"]);

let work: string;
let bin: string;

beforeAll(() => {
  work = tmp("agentcore-doc-blocks-");
  bin = binaryPath();
}, 120_000);

/** The pages with blocks to run. */
const RUNNABLE = PAGES.filter((p) => BLOCKS.get(p)!.some((b) => b.notRun === null));
/** Pages run at once: most of a page's time is spent waiting on the processes it starts. */
const AT_ONCE = 3;
let outcomes: Map<string, Promise<Drift[] | string>> | null = null;

/** What running a page found (a string: why it was not run); the first call starts every page. */
function pageOutcome(page: string): Promise<Drift[] | string> {
  if (outcomes === null) {
    const started = new Map<string, Promise<Drift[] | string>>();
    const settle = new Map<string, (o: Drift[] | string) => void>();
    const failed = new Map<string, (e: unknown) => void>();
    for (const p of RUNNABLE)
      started.set(
        p,
        new Promise((resolve, reject) => {
          settle.set(p, resolve);
          failed.set(p, reject);
        }),
      );
    const queue = [...RUNNABLE];
    const worker = async () => {
      for (let p = queue.shift(); p !== undefined; p = queue.shift()) {
        try {
          settle.get(p)!(await runOne(p));
        } catch (e) {
          failed.get(p)!(e);
        }
      }
    };
    // a page that throws is reported by its own test, whenever that awaits it
    for (const o of started.values()) o.catch(() => {});
    for (let k = 0; k < AT_ONCE; k++) void worker();
    outcomes = started;
  }
  return outcomes.get(page)!;
}

/** Run one page in a clone-like folder of its own, with its ports and (when it needs one) its PostgreSQL server. */
async function runOne(page: string): Promise<Drift[] | string> {
  const subs: Substitution[] = [];
  for (const p of PORTS) subs.push([new RegExp(`\\b${p}\\b`, "g"), String(await freePort())]);
  let pg: PrivateCluster | null = null;
  if (POSTGRES_PAGES.has(page)) {
    // a private server of the page's own: the page creates its role and database
    pg = startCluster();
    if (pg === null) {
      if (process.env.CI === "true") throw new Error(`${page} needs PostgreSQL's server (initdb), which CI installs`);
      return `${page}: not run, PostgreSQL's server is not installed (no /usr/lib/postgresql/*/bin/initdb)`;
    }
    const u = new URL(pg.url);
    subs.push(["postgres://postgres@", `postgres://${u.username}@`], [/127\.0\.0\.1:5432\b/g, `127.0.0.1:${u.port}`]);
  }
  try {
    const { cwd, env } = cloneLike(page);
    return await runPage(BLOCKS.get(page)!, { cwd, env, subs, timeoutMs: 120_000 });
  } finally {
    pg?.stop();
  }
}

/** A free TCP port on loopback. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/** A folder like a fresh clone after `npm ci && npm run build`: the page's working directory. */
function cloneLike(name: string): { cwd: string; env: Record<string, string> } {
  const root = path.join(work, name.replace(/[/.]/g, "_"));
  const cwd = path.join(root, "agentcore");
  fs.mkdirSync(path.join(cwd, "dist"), { recursive: true });
  fs.cpSync(path.join(REPO, "examples"), path.join(cwd, "examples"), { recursive: true });
  for (const f of ["src", "test", "node_modules", "package.json", "deno.json", "tsconfig.json", "bunfig.toml", "asm"])
    fs.symlinkSync(path.join(REPO, f), path.join(cwd, f));
  fs.symlinkSync(bin, path.join(cwd, "dist", "agentcore"));
  const binDir = path.join(root, "bin");
  fs.mkdirSync(binDir);
  fs.symlinkSync(bin, path.join(binDir, "agentcore"));
  const home = path.join(root, "home");
  fs.mkdirSync(home);
  // no node_modules/.bin on PATH: after `npm ci` a shell has no bun, deno or tsc there
  const system = (process.env.PATH ?? "/usr/bin:/bin").split(":").filter((d) => !d.includes("node_modules"));
  const env: Record<string, string> = {
    PATH: [binDir, ...system].join(":"),
    HOME: home,
    TMPDIR: root,
    LANG: "C.UTF-8",
    // npm stays off the network: a block that would fetch a package fails instead
    npm_config_offline: "true",
    GIT_AUTHOR_NAME: "docs",
    GIT_AUTHOR_EMAIL: "docs@example.invalid",
    GIT_COMMITTER_NAME: "docs",
    GIT_COMMITTER_EMAIL: "docs@example.invalid",
  };
  if (process.env.AGENTCORE_TEST_PG !== undefined) env.AGENTCORE_TEST_PG = process.env.AGENTCORE_TEST_PG;
  const git = (args: string[]) => {
    const r = Bun.spawnSync(["git", ...args], { cwd, env });
    if (r.exitCode !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr.toString()}`);
  };
  git(["init", "-q", "-b", "main"]);
  git(["add", "examples"]);
  git(["commit", "-q", "-m", "examples"]);
  return { cwd, env };
}

describe("the docs' shell blocks", () => {
  test("every block runs, or is marked not run with its reason in the page's text", () => {
    let total = 0;
    const unsaid: string[] = [];
    for (const [page, blocks] of BLOCKS) {
      total += blocks.length;
      for (const b of blocks)
        if (b.notRun !== null && !b.prose.toLowerCase().includes(b.notRun.toLowerCase()))
          unsaid.push(`${page}:${b.line}: marked "not run: ${b.notRun}", which the text around it does not say`);
    }
    expect(unsaid).toEqual([]);
    expect(total).toBeGreaterThanOrEqual(70);
  });

  test("the runner reports wrong output, a failing command (also before &&) and a hang", async () => {
    const page = path.join(work, "self.md");
    fs.writeFileSync(
      page,
      [
        "```sh",
        "echo one",
        "# one",
        "echo two",
        "# three",
        "false",
        "echo fine",
        "```",
        "",
        "```sh",
        "false && echo never",
        "```",
        "",
        "<!-- doc-test: not run: a moon base -->",
        "```sh",
        "exit 7",
        "```",
        "",
        "```sh",
        "sleep 600 &",
        "sleep 600",
        "```",
      ].join("\n"),
    );
    const blocks = shellBlocks(work, "self.md");
    expect(blocks.map((b) => b.notRun)).toEqual([null, null, "a moon base", null]);
    const drifts = await runPage(blocks, { cwd: work, env: { PATH: process.env.PATH ?? "/usr/bin:/bin" }, timeoutMs: 3000 });
    expect(drifts.map((d) => [d.code, d.problem])).toEqual([
      ["echo two", "printed other than what the page shows"],
      ["false\necho fine", "a command failed (exit 1)"],
      ["false && echo never", "a command failed (exit 1)"],
      ["sleep 600 &\nsleep 600", "timed out here"],
    ]);
  });

  for (const page of RUNNABLE)
    test(`${page}: every command prints what the page shows`, async () => {
      const outcome = await pageOutcome(page);
      if (typeof outcome === "string") console.warn(outcome);
      else expect(outcome).toEqual([]);
    }, 300_000);
});
