/** The README's error-code table and the code's list of codes must agree. */
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { ERROR_CODES } from "../../src/core/envelope.ts";

test("README error-code table lists exactly ERROR_CODES, in order", () => {
  const readme = readFileSync(resolve(import.meta.dir, "../../README.md"), "utf8");
  const section = readme.slice(readme.indexOf("### Error codes"), readme.indexOf("## The strict JSON core"));
  const documented = [...section.matchAll(/^\| `([A-Z0-9_]+)` \|/gm)].map((m) => m[1]);
  expect(documented).toEqual([...ERROR_CODES]);
});
