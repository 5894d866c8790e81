/**
 * Property: for any two texts, the unified diff that the real `diff -u`
 * (with 0, 1 or 3 lines of context) produces between them, parsed and
 * applied to the first text, gives exactly the second; applied to a text
 * with unrelated lines inserted in front, it still gives the second with
 * those lines in front (the offset search). Lines come from a tiny alphabet
 * so that repeated and empty lines (ambiguous context) are common.
 */
import { afterAll, expect, test } from "bun:test";
import fc from "fast-check";
import * as fs from "node:fs";
import * as path from "node:path";
import { spawnSync } from "node:child_process";
import { applyFilePatch, parseUnifiedDiff } from "../../../src/tools/workspace/patch.ts";
import { tmp } from "../../support/tmp.ts";

const dir = tmp("agentcore-patchprop-");
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const line = fc.constantFrom("a", "b", "c", "", "x y", "é");
const text = fc
  .tuple(fc.array(line, { maxLength: 14 }), fc.boolean())
  .map(([lines, eol]) => (lines.length === 0 ? "" : lines.join("\n") + (eol ? "\n" : "")));

function diffU(a: string, b: string, context: number): string {
  fs.writeFileSync(path.join(dir, "old"), a);
  fs.writeFileSync(path.join(dir, "new"), b);
  const r = spawnSync("diff", [`-U${context}`, "--label", "a/f", "--label", "b/f", path.join(dir, "old"), path.join(dir, "new")], {
    encoding: "utf8",
  });
  return r.stdout;
}

test("diff -u output applies exactly (contexts 0, 1, 3), also after an offset", () => {
  fc.assert(
    fc.property(text, text, fc.constantFrom(0, 1, 3), (a, b, context) => {
      const d = diffU(a, b, context);
      if (d === "") {
        expect(a).toBe(b);
        return;
      }
      const [fp] = parseUnifiedDiff(d);
      expect(applyFilePatch(fp!, a, "f")).toBe(b);
      // unrelated lines in front: the hunks are found further down
      const head = "zz1\nzz2\n";
      if (a !== "" && context > 0) expect(applyFilePatch(fp!, head + a, "f")).toBe(head + b);
    }),
    { numRuns: 150 },
  );
}, 60_000);
