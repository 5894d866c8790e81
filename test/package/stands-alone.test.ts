/**
 * The repository stands alone: no file under src/, test/, scripts/ or .ci/
 * (nor the root config files) reaches outside the repository, so a clone with
 * nothing beside it builds, tests and benchmarks. The scan resolves every
 * relative path written in the source against the folder it is resolved from
 * and fails when one lands above the repository root:
 * - each string literal holding a `..` segment (imports, `new URL(…,
 *   import.meta.url)`, `readFileSync("../…")`), against the file's folder;
 * - each `resolve(base, "a", "b")` / `join(…)` whose base is the file's folder
 *   (`import.meta.dir`, `import.meta.dirname`, `import.meta.url`, `__dirname`)
 *   or the repository root (`REPO`, `REPO_ROOT`, `ROOT`), its literal
 *   arguments joined;
 * - in shell files (.ci/*, *.sh, *.toml) each `../` path, against both the
 *   repository root (where the scripts `cd`) and the file's folder;
 * and it fails on absolute paths of the development machine (`/work/`).
 * Third-party data (test/fixtures/), node_modules and build output are not
 * scanned, nor this file (its examples below are written to be caught). A
 * literal that escapes is caught wherever it stands, test data included: a
 * test of path traversal builds such a path (`"../".repeat(n)`) instead.
 */
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, extname, join, resolve, sep } from "node:path";
import { REPO_ROOT } from "../support/paths.ts";

const SCANNED_DIRS = ["src", "test", "scripts", ".ci"];
const ROOT_FILES = [
  "package.json",
  "bunfig.toml",
  "deno.json",
  "tsconfig.json",
  "tsconfig.build.json",
  "biome.json",
  ".dependency-cruiser.cjs",
];
const SKIPPED_DIRS = new Set(["node_modules", "dist", "build", ".cache", "test-artifacts"]);
const SKIPPED_PREFIXES = ["test/fixtures/"];
const SELF = "test/package/stands-alone.test.ts";
const CODE_EXT = new Set([".ts", ".mts", ".cts", ".js", ".mjs", ".cjs", ".json", ".jsonc"]);
const SHELL_EXT = new Set([".sh", ".bash", ".toml", ".yml", ".yaml"]);
/** Absolute paths of the machines this project is developed on. */
const MACHINE_PATHS = ["/work/"];

interface Reach {
  file: string;
  line: number;
  text: string;
  why: string;
}

const inside = (root: string, p: string): boolean => p === root || p.startsWith(root.endsWith(sep) ? root : root + sep);
const hasParentSegment = (s: string): boolean => /(^|[\\/])\.\.([\\/]|$)/.test(s);
const lineOf = (src: string, index: number): number => src.slice(0, index).split("\n").length;

/** The arguments of the call whose `(` is at `open`, split at top-level commas (null when unbalanced). */
function callArgs(src: string, open: number): string[] | null {
  const args: string[] = [];
  let depth = 0;
  let quote: string | null = null;
  let start = open + 1;
  for (let i = open + 1; i < src.length && i < open + 2000; i++) {
    const c = src[i];
    if (quote) {
      if (c === "\\") i++;
      else if (c === quote) quote = null;
      continue;
    }
    if (c === '"' || c === "'" || c === "`") quote = c;
    else if (c === "(" || c === "[" || c === "{") depth++;
    else if ((c === ")" || c === "]" || c === "}") && depth > 0) depth--;
    else if (c === ")" && depth === 0) {
      args.push(src.slice(start, i).trim());
      return args;
    } else if (c === "," && depth === 0) {
      args.push(src.slice(start, i).trim());
      start = i + 1;
    }
  }
  return null;
}

const literalValue = (arg: string): string | null => {
  const m = /^(["'])((?:\\.|(?!\1)[^\\\n])*)\1$/.exec(arg) ?? /^`([^`$\\]*)`$/.exec(arg);
  return m ? (m[2] ?? m[1]) : null;
};

/**
 * Every place in `src` (the text of the file at repository path `file`) that
 * reaches outside `root`.
 */
function outsideReaches(root: string, file: string, src: string): Reach[] {
  const found: Reach[] = [];
  const folder = dirname(resolve(root, file));
  const report = (index: number, text: string, why: string) => found.push({ file, line: lineOf(src, index), text, why });
  const ext = extname(file);
  // package.json's scripts are shell commands run from the repository root
  const shell = SHELL_EXT.has(ext) || (file.startsWith(".ci/") && !CODE_EXT.has(ext)) || file === "package.json";

  for (const machine of MACHINE_PATHS) {
    for (let i = src.indexOf(machine); i >= 0; i = src.indexOf(machine, i + 1)) {
      if (/[\w.-]/.test(src[i - 1] ?? "")) continue; // part of a longer relative path such as a/work/b
      report(i, src.slice(i, i + 60).split(/["'`\s]/)[0], `absolute path of the development machine (${machine})`);
    }
  }

  if (shell) {
    const token = /(?:^|[\s"'=:(])((?:\.\.\/)+[^\s"'`;)]*|\.\.(?=["'\s;)]|$))/gm;
    for (const m of src.matchAll(token)) {
      const rel = m[1];
      for (const [base, name] of [
        [root, "the repository root"],
        [folder, "the file's folder"],
      ] as const) {
        if (!inside(root, resolve(base, rel))) {
          report(m.index + m[0].indexOf(rel), rel, `resolved from ${name} it leaves the repository`);
          break;
        }
      }
    }
    return found;
  }

  const literal = /(["'`])((?:\\.|(?!\1)[^\\\n])*)\1/g;
  for (const m of src.matchAll(literal)) {
    const value = m[2];
    if (m[1] === "`" && value.includes("${")) continue;
    if (!hasParentSegment(value) || /\s/.test(value.trim())) continue;
    if (!inside(root, resolve(folder, value))) report(m.index, value, "resolved from the file's folder it leaves the repository");
  }

  for (const m of src.matchAll(/\b(?:resolve|join)\(/g)) {
    const args = callArgs(src, m.index + m[0].length - 1);
    if (!args || args.length < 2) continue;
    const baseArg = args[0];
    const base = /import\.meta\.(?:dirname|dir|url)\b|__dirname/.test(baseArg)
      ? folder
      : /^(?:REPO|REPO_ROOT|ROOT)$/.test(baseArg)
        ? root
        : null;
    if (base === null) continue;
    const parts: string[] = [];
    for (const a of args.slice(1)) {
      const v = literalValue(a);
      if (v === null) break;
      parts.push(v);
    }
    if (parts.length === 0 || !parts.some(hasParentSegment)) continue;
    if (!inside(root, resolve(base, ...parts))) {
      report(
        m.index,
        `${m[0]}${args.join(", ")})`,
        `resolved from ${base === root ? "the repository root" : "the file's folder"} it leaves the repository`,
      );
    }
  }
  return found;
}

/** Repository paths of every scanned file. */
function scannedFiles(root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(resolve(root, dir), { withFileTypes: true })) {
      const rel = dir ? `${dir}/${entry.name}` : entry.name;
      if (entry.isDirectory()) {
        if (!SKIPPED_DIRS.has(entry.name) && !SKIPPED_PREFIXES.some((p) => `${rel}/`.startsWith(p))) walk(rel);
      } else if (entry.isFile()) {
        const ext = extname(entry.name);
        if (rel === SELF) continue;
        if (CODE_EXT.has(ext) || SHELL_EXT.has(ext) || (rel.startsWith(".ci/") && ext === "")) out.push(rel);
      }
    }
  };
  for (const d of SCANNED_DIRS) walk(d);
  for (const f of ROOT_FILES) if (statSync(resolve(root, f), { throwIfNoEntry: false })?.isFile()) out.push(f);
  return out.sort();
}

describe("the repository stands alone", () => {
  test("no file under src/, test/, scripts/, .ci/ or the root config reaches outside the repository", () => {
    const files = scannedFiles(REPO_ROOT);
    // the scan sees the tree (a broken walk must not pass by finding nothing)
    expect(files).toContain(".ci/run");
    expect(files).toContain("package.json");
    expect(files).toContain("test/support/paths.ts");
    expect(files).toContain("scripts/bench/lib.ts");
    expect(files.length).toBeGreaterThan(400);
    const reaches = files.flatMap((f) => outsideReaches(REPO_ROOT, f, readFileSync(resolve(REPO_ROOT, f), "utf8")));
    expect(reaches.map((r) => `${r.file}:${r.line}: ${r.text} (${r.why})`)).toEqual([]);
  });

  test("the data the tests and benchmarks read is in the repository, with its provenance", () => {
    for (const dir of ["test/fixtures/JSONTestSuite", "test/fixtures/bench-data"]) {
      expect(readFileSync(join(REPO_ROOT, dir, "README.md"), "utf8")).toMatch(/commit [0-9a-f]{7}/);
    }
    expect(readFileSync(join(REPO_ROOT, "test/fixtures/JSONTestSuite/LICENSE"), "utf8")).toContain("MIT License");
    expect(readdirSync(join(REPO_ROOT, "test/fixtures/bench-data")).filter((f) => f.endsWith(".json")).length).toBe(8);
  });

  describe("the scan catches what it is for", () => {
    const root = "/r/repo";
    const reaches = (file: string, src: string) => outsideReaches(root, file, src).map((r) => r.text);

    test("the ../shared paths main used before the data moved in", () => {
      // test/support/paths.ts, scripts/bench/lib.ts and scripts/bench/core-quick.ts as they were
      expect(reaches("test/support/paths.ts", 'export const SHARED_DIR = resolve(import.meta.dir, "../../../shared");')).toEqual([
        "../../../shared",
        'resolve(import.meta.dir, "../../../shared")',
      ]);
      expect(
        reaches(
          "scripts/bench/lib.ts",
          'export const SHARED = resolve(import.meta.dirname ?? new URL(".", import.meta.url).pathname, "../../../shared");',
        ),
      ).toHaveLength(2);
      expect(
        reaches(
          "scripts/bench/core-quick.ts",
          'const dir = resolve(fileURLToPath(new URL(".", import.meta.url)), "../../../shared/bench-data");',
        ),
      ).toHaveLength(2);
    });

    test("escapes assembled from pieces, from the root, in URLs, imports and shell", () => {
      expect(reaches("test/a/b.test.ts", 'resolve(import.meta.dir, "..", "..", "..", "shared")')).toHaveLength(1);
      expect(reaches("test/a/b.test.ts", 'path.join(REPO, "../shared", "x.json")')).toHaveLength(1);
      expect(reaches("test/a/b.test.ts", 'new URL("../../../x.json", import.meta.url)')).toEqual(["../../../x.json"]);
      expect(reaches("test/a/b.test.ts", 'import x from "../../../outside/mod.ts";')).toEqual(["../../../outside/mod.ts"]);
      expect(reaches(".ci/run", 'cd "$(dirname "$0")/.."\ncp -r ../shared/data test/')).toEqual(["../shared/data"]);
      expect(reaches("package.json", '{"scripts": {"x": "bun ../shared/run.ts"}}')).toEqual(["../shared/run.ts"]);
      expect(reaches("src/x.ts", 'const data = "/work/shared/bench-data";')).toEqual(["/work/shared/bench-data"]);
    });

    test("paths that stay inside are left alone", () => {
      expect(reaches("test/server/x.test.ts", 'import { a } from "../../src/server/app.ts";')).toEqual([]);
      expect(reaches("test/support/paths.ts", 'export const REPO_ROOT = resolve(import.meta.dir, "../..");')).toEqual([]);
      expect(reaches("test/a/b.test.ts", 'join(REPO, "test/fixtures", "x.json"); join(dir, "../etc/passwd")')).toEqual([]);
      expect(reaches(".ci/run", 'cd "$(dirname "$0")/.."\nnpm ci')).toEqual([]);
      expect(reaches("test/a/b.test.ts", 'const s = "a/work/b"; const t = `${"../".repeat(9)}`;')).toEqual([]);
    });
  });
});
