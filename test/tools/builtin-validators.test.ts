// The built-in tools' validators are generated at build time
// (src/tools/parameters.validator.generated.ts, `npm run schema`): current,
// importing nothing, used instead of compiling (no ajv compile when the
// built-in and workspace tools are registered), and reporting exactly what
// ajv's own compile of the same schema reports.
import { describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { BUILTIN_SCHEMAS, generatedToolValidators, TOOL_VALIDATORS_FILE } from "../../src/tools/builtin-schemas.ts";
import { SchemaCompiler } from "../../src/tools/schema.ts";
import { tmp } from "../support/tmp.ts";

const REPO = path.resolve(import.meta.dir, "../..");

describe("the built-in tools' precompiled validators", () => {
  test("the generated module is current (run `npm run schema` after changing a schema) and imports nothing", async () => {
    const text = await generatedToolValidators();
    expect(fs.readFileSync(path.join(REPO, TOOL_VALIDATORS_FILE), "utf8")).toBe(text);
    expect(text).not.toMatch(/\bimport\b|require\(/);
  });

  test("registering echo, read_file and every workspace tool compiles no schema", () => {
    const probe = `import Ajv from ${JSON.stringify(path.join(REPO, "node_modules/ajv/dist/ajv.js"))};
const core = Object.getPrototypeOf(Ajv.prototype);
const compile = core.compile;
let compiled = 0;
core.compile = function (...args) { compiled++; return compile.apply(this, args); };
const { createRuntime } = await import(${JSON.stringify(path.join(REPO, "src/runtime/runtime.ts"))});
const { workspaceTools } = await import(${JSON.stringify(path.join(REPO, "src/tools/workspace/index.ts"))});
const all = { list_dir: true, glob: true, grep: true, git_diff: true, write_file: true, apply_patch: true, exec: { allow: ["true"], isolation: "off" } };
const tools = workspaceTools(all, process.cwd(), { warn: () => {} });
const rt = createRuntime({ root: process.cwd(), tools });
console.log(JSON.stringify({ compiled, tools: rt.registry.list().map((t) => t.name) }));`;
    const d = tmp("agentcore-tool-validators-");
    fs.writeFileSync(path.join(d, "probe.ts"), probe);
    const r = Bun.spawnSync([process.execPath, path.join(d, "probe.ts")], { cwd: d, stdout: "pipe", stderr: "pipe" });
    expect(r.stderr.toString()).toBe("");
    const out = JSON.parse(r.stdout.toString());
    expect(out.tools).toEqual(expect.arrayContaining(Object.keys(BUILTIN_SCHEMAS)));
    expect(out.compiled).toBe(0);
  });

  /** Wrong values of every kind for each declared property, a missing object, an undeclared member. */
  function badInputs(schema: Record<string, unknown>): Record<string, unknown>[] {
    const props = Object.keys((schema.properties as Record<string, unknown> | undefined) ?? {});
    const values: unknown[] = [null, true, -1, 0, 1.5, 1e12, "", "x", "é".repeat(5000), [], ["a", 1], [""], {}, { a: 1 }];
    const out: Record<string, unknown>[] = [{}, { not_declared: 1 }, { [props[0] ?? "a"]: "x", extra: [] }];
    for (const p of props) for (const v of values) out.push({ [p]: v });
    out.push(Object.fromEntries(props.map((p) => [p, 7])));
    return out;
  }

  for (const [tool, schema] of Object.entries(BUILTIN_SCHEMAS)) {
    test(`${tool}: the generated validator reports what ajv's compile of the same schema reports`, () => {
      const compiler = new SchemaCompiler({ maxErrors: 100 });
      const generated = compiler.compile(schema); // trusted: the generated code
      const compiled = compiler.compile(structuredClone(schema)); // a copy is not trusted: ajv compiles it
      for (const args of badInputs(schema as Record<string, unknown>))
        expect({ args, check: generated(args) }).toEqual({ args, check: compiled(args) });
    });
  }
});
