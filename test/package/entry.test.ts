/**
 * The main entry stays light: bundling src/mod.ts with its packages left
 * external must leave no static import of Hono, the MCP SDKs, `openai` or
 * `yaml` (the OpenAI adapter imports `openai` on its first request). The
 * subpaths that need them do import them, which shows the check can fail.
 * The packed package is checked the same way under Node (package.test.ts).
 * And the main entry is curated: well under 100 names, each documented.
 */
import { describe, expect, test } from "bun:test";
import { join, resolve } from "node:path";
import ts from "typescript";

const REPO = resolve(import.meta.dir, "../..");
const HEAVY = /^(hono|openai|yaml|@modelcontextprotocol\/[^/]+)(\/|$)/;

/** The bare package specifiers a bundle of `entry` imports statically, and those it imports with `import()`. */
async function packageImports(entry: string): Promise<{ static: string[]; dynamic: string[] }> {
  const out = await Bun.build({ entrypoints: [join(REPO, entry)], target: "node", format: "esm", packages: "external" });
  if (!out.success) throw new Error(out.logs.map(String).join("\n"));
  const code = await out.outputs[0]!.text();
  const stat = new Set<string>();
  const dyn = new Set<string>();
  for (const m of code.matchAll(/(?:^|[;\s])(?:import|export)\s*(?:[\w*${}\s,]+from\s*)?["']([^"'.][^"']*)["']/gm)) stat.add(m[1]!);
  for (const m of code.matchAll(/\bimport\(\s*["']([^"'.][^"']*)["']\s*\)/g)) dyn.add(m[1]!);
  return { static: [...stat].filter((s) => !s.startsWith("node:")).sort(), dynamic: [...dyn].sort() };
}

describe("the main entry loads no heavy dependency", () => {
  test("src/mod.ts imports none of hono, @modelcontextprotocol/*, openai, yaml at load; openai only on demand", async () => {
    const r = await packageImports("src/mod.ts");
    expect(r.static.filter((s) => HEAVY.test(s))).toEqual([]);
    expect(r.dynamic).toContain("openai");
  });

  test("the subpaths that need them import them (the check sees a static import)", async () => {
    expect((await packageImports("src/entries/server.ts")).static).toContain("hono");
    expect((await packageImports("src/entries/mcp.ts")).static.some((s) => s.startsWith("@modelcontextprotocol/"))).toBe(true);
    expect((await packageImports("src/entries/skills.ts")).static).toContain("yaml");
  });

  test("agentcore/testing and agentcore/workspace stay light too", async () => {
    for (const entry of ["src/entries/testing.ts", "src/entries/workspace.ts", "src/entries/session.ts", "src/entries/agent.ts"]) {
      expect({ entry, heavy: (await packageImports(entry)).static.filter((s) => HEAVY.test(s)) }).toEqual({ entry, heavy: [] });
    }
  });
});

describe("the main entry is curated", () => {
  test("fewer than 100 names (values and types), each with a doc comment at its declaration", () => {
    const file = join(REPO, "src/mod.ts");
    const program = ts.createProgram([file], {
      allowImportingTsExtensions: true,
      noEmit: true,
      module: ts.ModuleKind.ESNext,
      moduleResolution: ts.ModuleResolutionKind.Bundler,
      target: ts.ScriptTarget.ES2022,
      types: ["bun"],
      skipLibCheck: true,
    });
    const checker = program.getTypeChecker();
    const exports = checker.getExportsOfModule(checker.getSymbolAtLocation(program.getSourceFile(file)!)!);
    expect(exports.length).toBeGreaterThan(20);
    expect(exports.length).toBeLessThan(100);
    const undocumented = exports.filter((e) => {
      const target = e.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(e) : e;
      return ts.displayPartsToString(target.getDocumentationComment(checker)).trim() === "";
    });
    expect(undocumented.map((e) => e.name)).toEqual([]);
    // internals stay out of it
    for (const name of ["runCall", "failureEnvelope", "withFileLock", "bwrapArgs", "stopOnSignals", "createApp", "ScriptedModel"])
      expect(exports.map((e) => e.name)).not.toContain(name);
  });
});
