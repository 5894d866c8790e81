/**
 * `npm ci` on a fresh clone is clean and the Node floor is true, checked
 * offline from package.json and package-lock.json the way npm checks them:
 * - every package in the lockfile with an install script has a decision in
 *   `allowScripts` (what `npm ci --strict-allow-scripts` requires), `bun` and
 *   `deno` approved; and npm's own `npm install-scripts ls` finds nothing
 *   pending in the installed tree;
 * - every peer dependency resolves (Node's lookup through the lockfile's
 *   node_modules paths) to a version its range accepts, so npm has no peer to
 *   override (no ERESOLVE warning);
 * - the floor in `engines` (`>=X.Y.Z`) satisfies every installed package's
 *   `engines.node` (npm's EBADENGINE check, on the floor version), some
 *   runtime dependency rejects anything below it (the floor is what they
 *   need, no higher), and the README's Set-up section, docs/library.md and
 *   docs/install.md name it;
 * - on an older Node (CI's 20.20) the set-up still works: the tools of
 *   `npm test` and `npm run build` accept Node 20 and start under the `node`
 *   on PATH, and the suite itself runs under the bundled Bun.
 */
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "../support/paths.ts";

interface LockEntry {
  version?: string;
  dev?: boolean;
  optional?: boolean;
  engines?: { node?: string } | string[];
  hasInstallScript?: boolean;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}
interface Manifest {
  engines: { node: string };
  allowScripts?: Record<string, boolean>;
  scripts: Record<string, string>;
}

const manifest = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as Manifest;
const lock = JSON.parse(readFileSync(join(REPO_ROOT, "package-lock.json"), "utf8")) as { packages: Record<string, LockEntry> };
const installed = Object.entries(lock.packages).filter(([path]) => path !== "");
/** The package name of a lockfile path (`node_modules/a/node_modules/@s/b` → `@s/b`). */
const nameOf = (path: string): string => path.slice(path.lastIndexOf("node_modules/") + "node_modules/".length);
const nodeRange = (e: LockEntry): string | undefined => (Array.isArray(e.engines) ? undefined : e.engines?.node);

/** The floor version named by `engines.node`, which must be of the form `>=X.Y.Z`. */
function floorOf(range: string): string {
  const m = /^>=\s*(\d+\.\d+\.\d+)$/.exec(range.trim());
  if (!m) throw new Error(`package.json engines.node is ${JSON.stringify(range)}; expected ">=X.Y.Z"`);
  return m[1];
}
/** The highest version below `v` that npm could meet (X.Y-1.999, or ). */
function justBelow(v: string): string {
  const [major, minor, patch] = v.split(".").map(Number);
  if (patch > 0) return `${major}.${minor}.${patch - 1}`;
  if (minor > 0) return `${major}.${minor - 1}.999`;
  return `${major - 1}.999.999`;
}

describe("install scripts: every one decided in allowScripts", () => {
  test("each lockfile package with an install script is approved or denied; bun and deno are approved", () => {
    const allow = manifest.allowScripts ?? {};
    const withScripts = [...new Set(installed.filter(([, e]) => e.hasInstallScript).map(([path]) => nameOf(path)))].sort();
    expect(withScripts).toEqual(expect.arrayContaining(["bun", "deno"]));
    const undecided = withScripts.filter((name) => !Object.keys(allow).some((k) => k === name || k.startsWith(`${name}@`)));
    expect(undecided).toEqual([]);
    // the set-up needs their binaries: their postinstall puts them in place
    expect(allow.bun).toBe(true);
    expect(allow.deno).toBe(true);
    // protobufjs (tests only) is decided: its old postinstall only printed a version-scheme warning
    expect(allow.protobufjs).toBe(false);
  });

  test("npm install-scripts ls finds nothing pending in the installed tree", () => {
    const r = Bun.spawnSync(["npm", "install-scripts", "ls", "--json"], {
      cwd: REPO_ROOT,
      env: { ...process.env, npm_config_update_notifier: "false" },
      stdin: "ignore",
    });
    expect(r.stderr.toString()).toBe("");
    expect(JSON.parse(r.stdout.toString())).toEqual({ allowScripts: [] });
  });
});

describe("peer dependencies: none needs overriding", () => {
  /** The lockfile path Node would load `dep` from, seen from the package at `from`. */
  function resolveFrom(from: string, dep: string): string | null {
    let dir = from;
    for (;;) {
      const candidate = dir === "" ? `node_modules/${dep}` : `${dir}/node_modules/${dep}`;
      if (lock.packages[candidate]) return candidate;
      if (dir === "") return null;
      const cut = dir.lastIndexOf("/node_modules/");
      dir = cut < 0 ? "" : dir.slice(0, cut);
    }
  }

  test("every required peer resolves to a version its range accepts", () => {
    const unmet: string[] = [];
    for (const [path, e] of installed) {
      for (const [dep, range] of Object.entries(e.peerDependencies ?? {})) {
        const at = resolveFrom(path, dep);
        const optional = e.peerDependenciesMeta?.[dep]?.optional === true;
        if (at === null) {
          if (!optional) unmet.push(`${path}@${e.version} wants ${dep}@${range}: not installed`);
          continue;
        }
        const version = lock.packages[at].version ?? "";
        if (!Bun.semver.satisfies(version, range)) unmet.push(`${path}@${e.version} wants ${dep}@${range}, gets ${version} (${at})`);
      }
    }
    expect(unmet).toEqual([]);
  });

  test("no dependency is an npm alias (each installs under its own name)", () => {
    const aliased = installed.filter(
      ([path, e]) => (e as { name?: string }).name !== undefined && (e as { name?: string }).name !== nameOf(path),
    );
    expect(aliased.map(([path]) => path)).toEqual([]);
  });
});

describe("one Node floor", () => {
  // read in each test, so that a malformed range fails the tests rather than the file
  const floorVersion = () => floorOf(manifest.engines.node);

  test("the lockfile records the same engines as package.json", () => {
    expect(nodeRange(lock.packages[""])).toBe(manifest.engines.node);
  });

  test("the floor satisfies every installed package's engines.node (npm ci prints no EBADENGINE on it)", () => {
    const floor = floorVersion();
    const refused = installed
      .filter(([, e]) => nodeRange(e) !== undefined && !Bun.semver.satisfies(floor, nodeRange(e) as string))
      .map(([path, e]) => `${path}@${e.version}: ${nodeRange(e)}`);
    expect(refused).toEqual([]);
  });

  test("the floor is what the runtime dependencies need: some of them refuse the version just below it", () => {
    const below = justBelow(floorVersion());
    const needing = installed
      .filter(([, e]) => !e.dev && nodeRange(e) !== undefined && !Bun.semver.satisfies(below, nodeRange(e) as string))
      .map(([path]) => nameOf(path));
    expect(needing.length).toBeGreaterThan(0);
  });

  test("no page of README.md or docs/ names another Node floor", () => {
    const floor = floorVersion();
    const pages = [
      "README.md",
      ...readdirSync(join(REPO_ROOT, "docs"))
        .filter((f) => f.endsWith(".md"))
        .map((f) => `docs/${f}`),
    ];
    expect(pages.length).toBeGreaterThan(20);
    const other = pages.flatMap((page) =>
      (
        readFileSync(join(REPO_ROOT, page), "utf8").match(
          /Node(?:\.js)? (?:(?:≥ ?|>= ?)\d+(?:\.\d+)*|\d+(?:\.\d+)*(?:\+| or later| or newer))/g,
        ) ?? []
      )
        .filter((s) => !s.includes(floor))
        .map((s) => `${page}: ${s}`),
    );
    expect(other).toEqual([]);
  });

  test("README's Set-up section, docs/library.md and docs/install.md name the floor", () => {
    const floor = floorVersion();
    const readme = readFileSync(join(REPO_ROOT, "README.md"), "utf8");
    const setup = /^## Set-up[^\n]*\n([\s\S]*?)(?=^## )/m.exec(readme)?.[1] ?? "";
    const library = readFileSync(join(REPO_ROOT, "docs/library.md"), "utf8");
    const install = readFileSync(join(REPO_ROOT, "docs/install.md"), "utf8");
    for (const [name, text] of [
      ["README.md Set-up", setup],
      ["docs/library.md", library],
      ["docs/install.md", install],
    ] as const) {
      expect({ name, names: text.includes(`Node ${floor}`) || text.includes(`Node.js ${floor}`) }).toEqual({ name, names: true });
      // and no other Node floor: "Node 22+", "Node ≥ 22", "Node.js 22 or later"
      expect({
        name,
        other:
          text
            .match(/Node(?:\.js)? (?:(?:≥ ?|>= ?)\d+(?:\.\d+)*|\d+(?:\.\d+)*(?:\+| or later| or newer))/g)
            ?.filter((s) => !s.includes(floor)) ?? [],
      }).toEqual({
        name,
        other: [],
      });
    }
  });
});

describe("an older Node (CI's 20.20) still sets up, builds and tests", () => {
  /** The Node line CI and the development machines run. */
  const OLDER_NODE = "20.20.0";
  /** The packages whose programs `npm test` and `npm run build` run, besides the scripts in scripts/. */
  const TOOLS: Record<string, { pkg: string; argv: string[] }> = {
    biome: { pkg: "@biomejs/biome", argv: ["node_modules/.bin/biome", "--version"] },
    tsc: { pkg: "typescript", argv: ["node", "node_modules/typescript/bin/tsc", "--version"] },
    bun: { pkg: "bun", argv: ["node_modules/.bin/bun", "--version"] },
    asc: { pkg: "assemblyscript", argv: ["node", "node_modules/assemblyscript/bin/asc.js", "--version"] },
  };

  test("npm test runs biome, tsc and bun only", () => {
    const programs = manifest.scripts.test.split("&&").map((c) => c.trim().split(/\s+/)[0]);
    expect(programs).toEqual(["biome", "tsc", "bun"]);
  });

  test("those tools and AssemblyScript (the build) accept Node 20 in their engines", () => {
    for (const { pkg } of Object.values(TOOLS)) {
      const range = nodeRange(lock.packages[`node_modules/${pkg}`]);
      expect({ pkg, ok: range === undefined || Bun.semver.satisfies(OLDER_NODE, range) }).toEqual({ pkg, ok: true });
    }
    // while the floor itself is above it: this is the path the README describes
    expect(Bun.semver.satisfies(OLDER_NODE, manifest.engines.node)).toBe(false);
  });

  test("each tool starts under the node on PATH, whatever its version", () => {
    const node = Bun.spawnSync(["node", "--version"], { stdin: "ignore" });
    expect(node.exitCode).toBe(0);
    for (const [name, { argv }] of Object.entries(TOOLS)) {
      const r = Bun.spawnSync(argv, { cwd: REPO_ROOT, stdin: "ignore", env: { ...process.env, NO_COLOR: "1" } });
      expect({ name, node: node.stdout.toString().trim(), exit: r.exitCode, out: /\d+\.\d+\.\d+/.test(r.stdout.toString()) }).toEqual({
        name,
        node: node.stdout.toString().trim(),
        exit: 0,
        out: true,
      });
    }
  }, 60_000);
});
