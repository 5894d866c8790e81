/** The error-code table of docs/errors.md and the code's list of codes must agree. */
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { ERROR_CODES } from "../../src/mod.ts";

test("docs/errors.md's error-code table lists exactly ERROR_CODES, in order", () => {
  const doc = readFileSync(resolve(import.meta.dir, "../../docs/errors.md"), "utf8");
  const at = doc.indexOf("\n## Error codes\n");
  expect(at).toBeGreaterThan(0);
  const next = doc.indexOf("\n## ", at + 1);
  const section = doc.slice(at, next === -1 ? undefined : next);
  const documented = [...section.matchAll(/^\| `([A-Z0-9_]+)` \|/gm)].map((m) => m[1]);
  expect(documented).toEqual([...ERROR_CODES]);
});
