import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { parseStrict, validateStrict } from "../../src/core/index.ts";
import { JSON_TEST_SUITE_DIR, REPO_ROOT } from "../support/paths.ts";

const DEVIATIONS = new Set(["y_object_duplicated_key.json", "y_object_duplicated_key_and_value.json"]);

interface Row {
  outcome: "accepted" | "rejected";
  code: string | null;
}

/** Read the `| file | outcome | code | why |` rows of docs/json-conformance.md. */
function readDocTable(): Map<string, Row> {
  const md = readFileSync(resolve(REPO_ROOT, "docs/json-conformance.md"), "utf8");
  const rows = new Map<string, Row>();
  for (const line of md.split("\n")) {
    const m = /^\|\s*`([iyn]_[^`]+)`\s*\|\s*(accepted|rejected)\s*\|\s*([A-Z_]+|-)\s*\|/.exec(line);
    if (m) rows.set(m[1], { outcome: m[2] as Row["outcome"], code: m[3] === "-" ? null : m[3] });
  }
  return rows;
}

describe("JSONTestSuite test_parsing", () => {
  test("the suite folder exists", () => {
    // fail (not skip) when the in-repo copy is missing or incomplete
    expect(existsSync(JSON_TEST_SUITE_DIR)).toBe(true);
    expect(readdirSync(JSON_TEST_SUITE_DIR).length).toBe(318);
  });

  const files = existsSync(JSON_TEST_SUITE_DIR) ? readdirSync(JSON_TEST_SUITE_DIR).sort() : [];
  const table = readDocTable();

  test("y_ files are accepted (except the documented duplicate-key deviations)", () => {
    const ys = files.filter((f) => f.startsWith("y_"));
    expect(ys.length).toBeGreaterThan(90);
    for (const f of ys) {
      const bytes = new Uint8Array(readFileSync(resolve(JSON_TEST_SUITE_DIR, f)));
      const r = parseStrict(bytes);
      if (DEVIATIONS.has(f)) {
        expect({ f, code: r.ok ? null : r.error.code }).toEqual({ f, code: "JSON_DUPLICATE_KEY" });
        expect(table.get(f)).toEqual({ outcome: "rejected", code: "JSON_DUPLICATE_KEY" });
        continue;
      }
      expect({ f, ok: r.ok, error: r.ok ? null : r.error }).toEqual({ f, ok: true, error: null });
      // the value equals the one JSON.parse builds
      if (r.ok) expect(r.value).toEqual(JSON.parse(new TextDecoder().decode(bytes)));
    }
  });

  test("n_ files are rejected", () => {
    const ns = files.filter((f) => f.startsWith("n_"));
    expect(ns.length).toBeGreaterThan(180);
    for (const f of ns) {
      const bytes = new Uint8Array(readFileSync(resolve(JSON_TEST_SUITE_DIR, f)));
      const e = validateStrict(bytes);
      expect({ f, rejected: e !== null }).toEqual({ f, rejected: true });
      // the same verdict through a JS string when the bytes are valid UTF-8
      let text: string | null = null;
      try {
        text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
      } catch {
        text = null;
      }
      if (text !== null) expect({ f, rejected: validateStrict(text) !== null }).toEqual({ f, rejected: true });
    }
  });

  test("i_ files match the table in docs/json-conformance.md", () => {
    const is = files.filter((f) => f.startsWith("i_"));
    expect(is.length).toBeGreaterThan(30);
    for (const f of is) {
      const row = table.get(f);
      expect({ f, documented: row !== undefined }).toEqual({ f, documented: true });
      const e = validateStrict(new Uint8Array(readFileSync(resolve(JSON_TEST_SUITE_DIR, f))));
      const got: Row = e === null ? { outcome: "accepted", code: null } : { outcome: "rejected", code: e.code };
      expect({ f, ...got }).toEqual({ f, ...row! });
    }
    // no stale rows for files that no longer exist
    for (const name of table.keys()) if (name.startsWith("i_")) expect(is).toContain(name);
  });
});
