/**
 * docs/errors.md's table of error classes agrees with the code: one row per
 * error class in src/, each with the class's code, the class it extends, the
 * public entries that export it, and how the CLI ends on it (src/cli/exit.ts).
 */
import { beforeAll, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import type { AgentcoreError } from "../../src/core/errors.ts";
import { ERROR_CODES } from "../../src/core/envelope.ts";
import { EXIT_BY_CODE, exitKind } from "../../src/cli/exit.ts";
import { type ErrorClass, errorClasses, PER_INSTANCE, REPO } from "../support/error-classes.ts";

interface Row {
  name: string;
  code: string;
  parent: string;
  entries: string[];
  cli: string;
}

function tableRows(): Row[] {
  const doc = readFileSync(path.join(REPO, "docs/errors.md"), "utf8");
  const at = doc.indexOf("\n## Error classes\n");
  expect(at).toBeGreaterThan(0);
  const next = doc.indexOf("\n## ", at + 1);
  const section = doc.slice(at, next === -1 ? undefined : next);
  const rows: Row[] = [];
  for (const line of section.split("\n")) {
    const m = /^\| `(\w+)` \| ([^|]+) \| `(\w+)` \| ([^|]+) \| ([^|]+) \| [^|]+ \|$/.exec(line);
    if (m === null) continue;
    const unquote = (cell: string) => cell.trim().replace(/^`(.*)`$/, "$1");
    rows.push({
      name: m[1]!,
      code: unquote(m[2]!),
      parent: m[3]!,
      entries: m[4]!.trim() === "—" ? [] : m[4]!.split(",").map(unquote),
      cli: m[5]!.trim(),
    });
  }
  return rows;
}

const CLI_CELL = { usage: "usage", message: "message", pipe_closed: "quiet, 141", internal: "—" } as const;

let classes: ErrorClass[] = [];
beforeAll(async () => {
  classes = await errorClasses();
});

test("docs/errors.md has one row per error class, in name order", () => {
  const rows = tableRows();
  expect(rows.map((r) => r.name)).toEqual(classes.map((c) => c.name));
});

test("each row's code, parent class, entries and CLI ending are the code's", () => {
  const rows = new Map(tableRows().map((r) => [r.name, r]));
  for (const c of classes) {
    const family = PER_INSTANCE[c.name];
    const code = family === undefined ? (c.sample as AgentcoreError).code : family === "envelope" ? "envelope code" : "skill code";
    const cli = family === undefined ? CLI_CELL[exitKind(c.sample)] : "—";
    expect({ name: c.name, ...rows.get(c.name) }).toEqual({ name: c.name, code, parent: c.parent, entries: c.entries, cli });
  }
});

test("the CLI's table names only codes the classes have, none of them an envelope code", () => {
  const codes = new Set(classes.map((c) => (c.sample as AgentcoreError).code));
  for (const code of EXIT_BY_CODE.keys()) {
    expect({ code, known: codes.has(code) }).toEqual({ code, known: true });
    expect((ERROR_CODES as readonly string[]).includes(code)).toBe(false);
  }
});
