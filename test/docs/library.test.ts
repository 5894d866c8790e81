/**
 * docs/library.md's table of the main entry names every value and type that
 * `import("agentcore")` exports (src/mod.ts), each once, and its counts are
 * the real ones.
 */
import { expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { REPO } from "../support/binary.ts";

const page = fs.readFileSync(path.join(REPO, "docs/library.md"), "utf8");
const source = fs.readFileSync(path.join(REPO, "src/mod.ts"), "utf8");

/** The table under "## The main entry", as [values, types] name lists. */
function table(): { values: string[]; types: string[] } {
  const at = page.indexOf("## The main entry");
  expect(at).toBeGreaterThan(0);
  const rows = page
    .slice(at, page.indexOf("\n## ", at + 1))
    .split("\n")
    .filter((l) => l.startsWith("|") && !l.startsWith("|---") && !l.startsWith("| Area"));
  // a name is a backticked identifier; the Area column (first) may hold prose
  const names = (cell: string) => [...cell.replace(/\([^)]*\)/g, "").matchAll(/`([A-Za-z_][A-Za-z0-9_]*)`/g)].map((m) => m[1]!);
  const cells = rows.map((r) => r.split("|").slice(2, 4));
  return { values: cells.flatMap((c) => names(c[0]!)), types: cells.flatMap((c) => names(c[1]!)) };
}

test('docs/library.md\'s main-entry table lists exactly the values import("agentcore") gives', async () => {
  const exported = Object.keys(await import("../../src/mod.ts")).sort();
  const { values } = table();
  expect([...values].sort()).toEqual(exported);
  expect(new Set(values).size).toBe(values.length);
  expect(page).toContain(`(${exported.length} values and`);
});

test("docs/library.md's main-entry table lists exactly the types src/mod.ts exports", () => {
  const types = [...source.matchAll(/export type \{([^}]*)\}/g)].flatMap((m) =>
    m[1]!
      .split(",")
      .map((s) => s.trim())
      .filter((s) => s !== ""),
  );
  expect(types.length).toBeGreaterThan(0);
  const { types: listed } = table();
  expect([...listed].sort()).toEqual([...types].sort());
  expect(page).toMatch(new RegExp(`values and\\s+${types.length} types`));
});
