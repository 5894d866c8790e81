// The test tree's own rules: shared helpers live in test/support/ (every
// other TypeScript file under test/ is a `*.test.ts` file, or sits in a
// fixtures folder or the session corpus), and the one fake model is the
// public ScriptedModel of agentcore/testing: no file under test/ defines a
// model adapter class of its own. Adapters from src (OpenAIModelAdapter,
// RetryingModelAdapter, ...) are imported and tested, never defined here, and
// a one-off `const model: ModelAdapter = {...}` object that plays what a
// script cannot (a stream that ignores its signal, a delta and then a
// failure) is not a class, so the rule leaves those alone.
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve, sep } from "node:path";
import ts from "typescript";

const TEST_DIR = resolve(import.meta.dir);
const REPO = resolve(TEST_DIR, "..");
const TS_FILE = /\.(ts|mts|cts|tsx)$/;

/** Every TypeScript file under test/, as repo-relative paths with "/". */
function testTreeFiles(): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile() && TS_FILE.test(e.name)) out.push(relative(REPO, p).split(sep).join("/"));
    }
  };
  walk(TEST_DIR);
  return out.sort();
}

/** Where a TypeScript file under test/ may be without being a test: support, a fixtures folder, the session corpus. */
function misplacedModule(path: string): boolean {
  if (/\.test\.(ts|mts|cts|tsx)$/.test(path)) return false;
  if (path.startsWith("test/support/")) return false;
  if (path.split("/").includes("fixtures")) return false;
  if (path.startsWith("test/session/corpus/")) return false;
  return true;
}

/** The names of a heritage clause's types (`ModelAdapter`, `types.ModelAdapter` → "ModelAdapter"). */
function heritageNames(node: ts.ClassLikeDeclaration, token: ts.SyntaxKind): string[] {
  const clause = node.heritageClauses?.find((h) => h.token === token);
  if (!clause) return [];
  return clause.types.map((t) => {
    const e = t.expression;
    return ts.isPropertyAccessExpression(e) ? e.name.text : e.getText();
  });
}

/** A member's name when it is a method or a function-valued property. */
function methodName(m: ts.ClassElement): string | undefined {
  if (!m.name || !(ts.isIdentifier(m.name) || ts.isStringLiteral(m.name))) return undefined;
  if (ts.isMethodDeclaration(m)) return m.name.text;
  if (ts.isPropertyDeclaration(m) && m.initializer && (ts.isArrowFunction(m.initializer) || ts.isFunctionExpression(m.initializer)))
    return m.name.text;
  return undefined;
}

/**
 * Classes in `source` that are hand-written model adapters: they say
 * `implements ModelAdapter`, or they have the adapter's two methods
 * `complete` and `stream` (a fake that left the clause out). Returns
 * "name:line" for each.
 */
function modelAdapterClasses(source: string, fileName = "x.ts"): string[] {
  const sf = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isClassDeclaration(node) || ts.isClassExpression(node)) {
      const implementsAdapter = heritageNames(node, ts.SyntaxKind.ImplementsKeyword).includes("ModelAdapter");
      const methods = new Set(node.members.map(methodName));
      if (implementsAdapter || (methods.has("complete") && methods.has("stream"))) {
        const line = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1;
        found.push(`${node.name?.text ?? "(anonymous class)"}:${line}`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

describe("helpers live in test/support", () => {
  test("the rule: only *.test.ts files, test/support/, fixtures folders and the session corpus", () => {
    expect(misplacedModule("test/agent/loop.test.ts")).toBe(false);
    expect(misplacedModule("test/support/agent.ts")).toBe(false);
    expect(misplacedModule("test/history/fixtures/writer.ts")).toBe(false);
    expect(misplacedModule("test/runtime/middleware/fixtures/approve_child.ts")).toBe(false);
    expect(misplacedModule("test/session/corpus/write.ts")).toBe(false);
    for (const bad of ["test/agent/support.ts", "test/server/helpers.ts", "test/helpers.ts", "test/mcp/fixtures-old.ts", "test/x.spec.ts"])
      expect({ bad, misplaced: misplacedModule(bad) }).toEqual({ bad, misplaced: true });
  });

  test("no TypeScript module under test/ sits outside test/support (fixtures excepted)", () => {
    const files = testTreeFiles();
    expect(files.length).toBeGreaterThan(100); // it really walked test/
    expect(files).toContain("test/tidy.test.ts");
    expect(files.filter(misplacedModule)).toEqual([]);
  });
});

describe("one fake model: the public ScriptedModel", () => {
  test("the rule finds adapter classes, with or without the clause, and nothing else", () => {
    const src = `
      import type { ModelAdapter } from "../src/providers/types.ts";
      import * as types from "../src/providers/types.ts";
      export class FakeModel implements ModelAdapter { async complete() { return null as never; } }
      class Qualified implements types.ModelAdapter, Other { complete = async () => null as never; }
      const Anonymous = class { async complete() { return null as never; } async *stream() {} };
      class StubCompactor implements Compactor { async compact() { return null as never; } }
      class OnlyComplete { complete() {} }
      const model: ModelAdapter = { complete: () => Promise.reject(new Error("unused")), async *stream() {} };
      const adapter = new OpenAIModelAdapter({ model: "m" });
      class Retrying extends RetryingModelAdapter {}
    `;
    expect(modelAdapterClasses(src)).toEqual(["FakeModel:4", "Qualified:5", "(anonymous class):6"]);
  });

  test("no file under test/ defines a model adapter class", () => {
    const found: string[] = [];
    for (const f of testTreeFiles()) {
      const text = readFileSync(join(REPO, f), "utf8");
      // Only files that could hold such a class are parsed (the parse decides).
      if (!/\bclass\b/.test(text) || !(text.includes("ModelAdapter") || (text.includes("complete") && text.includes("stream")))) continue;
      for (const c of modelAdapterClasses(text, f)) found.push(`${f}: ${c}`);
    }
    expect(found).toEqual([]);
  });
});
