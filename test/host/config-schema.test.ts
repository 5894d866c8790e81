// The config file's JSON Schema: published for editors, the one the loader
// checks with, and its problems placed at the file's line and column.
import { describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import Ajv from "ajv";
import { CONFIG_SCHEMA, CONFIG_SCHEMA_FILE, configSchemaText, generatedValidators } from "../../src/host/config-schema.ts";
import { loadConfig } from "../../src/host/settings.ts";
import { configError, configFile } from "../support/config.ts";
import { binaryPath } from "../support/binary.ts";
import { tmp } from "../support/tmp.ts";

const REPO = path.resolve(import.meta.dir, "../..");
const file = (content: string) => configFile(content, "agentcore-schema-");
const error = configError;

describe("the published schema", () => {
  test("schema/agentcore.config.schema.json is what the loader checks with (run `npm run schema` after changing it)", () => {
    expect(fs.readFileSync(path.join(REPO, CONFIG_SCHEMA_FILE), "utf8")).toBe(configSchemaText());
  });

  test("the validators compiled from it are current, and import nothing (no schema is compiled at run time)", async () => {
    const files = await generatedValidators();
    expect(Object.keys(files).length).toBe(4);
    for (const [file, text] of Object.entries(files)) {
      expect(fs.readFileSync(path.join(REPO, file), "utf8")).toBe(text);
      expect(text).not.toMatch(/\bimport\b|require\(/);
    }
  });

  test("reading a config file compiles no schema (ajv's compile is never called)", () => {
    const probe = `import Ajv from ${JSON.stringify(path.join(REPO, "node_modules/ajv/dist/ajv.js"))};
const core = Object.getPrototypeOf(Ajv.prototype);
const compile = core.compile;
let compiled = 0;
core.compile = function (...args) { compiled++; return compile.apply(this, args); };
const { loadConfig } = await import(${JSON.stringify(path.join(REPO, "src/host/settings.ts"))});
loadConfig(process.argv[2]);
console.log(compiled);`;
    const d = tmp("agentcore-schema-probe-");
    fs.writeFileSync(path.join(d, "probe.ts"), probe);
    const cfg = path.join(d, "c.jsonc");
    fs.writeFileSync(
      cfg,
      '{"policy": {"rules": [{"id": "a", "action": "allow"}]}, "tools": {"grep": true}, "mcpServers": {"s": {"command": "x"}}}',
    );
    const p = Bun.spawnSync([process.execPath, path.join(d, "probe.ts"), cfg], { stdout: "pipe", stderr: "pipe" });
    expect(p.stderr.toString()).toBe("");
    expect(p.stdout.toString().trim()).toBe("0");
  });

  test("it is a valid draft-07 schema, and the package ships it", () => {
    const ajv = new Ajv({ strict: false });
    expect(ajv.validateSchema(CONFIG_SCHEMA as object)).toBe(true);
    const pkg = JSON.parse(fs.readFileSync(path.join(REPO, "package.json"), "utf8")) as { files: string[] };
    expect(pkg.files).toContain("schema/");
  });

  test("every key the loader reads is in the schema, each with a description for editors", () => {
    const props = CONFIG_SCHEMA.properties as Record<string, { description?: string }>;
    for (const key of [
      "$schema",
      "root",
      "max_input_bytes",
      "max_depth",
      "max_file_bytes",
      "default_timeout_ms",
      "history",
      "store",
      "skills_dir",
      "policy",
      "tools",
      "mcpServers",
    ]) {
      expect(props[key]?.description ?? "").not.toBe("");
    }
  });

  test('a file naming the schema in "$schema" loads (what docs/cli.md shows)', () => {
    const f = file(
      `{\n  "$schema": "./node_modules/agentcore/${CONFIG_SCHEMA_FILE}",\n  "max_depth": 12,\n  "policy": { "on_approval": "suspend" },\n  "store": "./state"\n}\n`,
    );
    const c = loadConfig(f);
    expect(c.max_depth).toBe(12);
    expect(c.policy?.on_approval).toBe("suspend");
    expect(c.store).toBe(path.join(path.dirname(f), "state"));
    expect(loadConfig(file('{"store": "postgres://u@127.0.0.1:5432/db"}')).store).toBe("postgres://u@127.0.0.1:5432/db");
  });
});

describe("schema problems name FILE:LINE:COL, the key, and show the place", () => {
  test("a wrong value: the caret under the value", () => {
    const f = file('{\n  "policy": {\n    "rules": [{ "id": "a", "action": "allows" }]\n  }\n}\n');
    expect(error(f)).toBe(
      `${f}:3:38: "policy.rules[0].action" must be one of allow, deny, require_approval\n` +
        `    3 |     "rules": [{ "id": "a", "action": "allows" }]\n` +
        `      |                                      ^`,
    );
  });

  test("an unknown key: the caret under the key, the known ones listed", () => {
    const f = file('{\n  "tools": { "grep": { "max_result": 5 } }\n}\n');
    const lines = error(f).split("\n");
    expect(lines[0]).toBe(`${f}:2:24: unknown key "tools.grep.max_result" (known: max_results, max_file_bytes, timeout_ms)`);
    expect(lines[2]!.indexOf("^")).toBe(lines[1]!.indexOf('"max_result"'));
  });

  test("a missing key: the caret at the object that needs it, and why", () => {
    const f = file('{"tools": {"exec": {"timeout_ms": 5}}}');
    expect(error(f).split("\n")[0]).toBe(`${f}:1:20: "tools.exec.allow" is required (the programs exec may run)`);
  });

  test("the first problem in the file is reported, whatever the schema's order", () => {
    const f = file('{\n  "tools": { "glob": "x" },\n  "root": 5\n}\n');
    expect(error(f).split("\n")[0]).toBe(`${f}:2:22: "tools.glob" must be true, false or an object`);
  });

  test("the rules a schema can't say are placed too: a repeated rule id, an unset variable, a denied variable", () => {
    let f = file('{"policy": {"rules": [\n  {"id": "a", "action": "allow"},\n  {"id": "a", "action": "deny"}\n]}}');
    expect(error(f).split("\n")[0]).toBe(`${f}:3:10: "policy.rules[1].id": duplicate rule id "a"`);
    f = file('{"mcpServers": {"s": {"command": "x",\n  "args": ["--token", "${AGENTCORE_TEST_SURELY_UNSET}"]}}}');
    expect(error(f).split("\n")[0]).toBe(`${f}:2:23: "mcpServers.s.args[1]": environment variable AGENTCORE_TEST_SURELY_UNSET is not set`);
    f = file('{"tools": {"exec": {"allow": ["ls"],\n "env": ["PATH", "LD_PRELOAD"]}}}');
    expect(error(f).split("\n")[0]).toStartWith(`${f}:2:18: "tools.exec.env[1]": environment variable "LD_PRELOAD" can't be allowlisted`);
  });

  test("a key name the schema refuses (an MCP server name) points at the key", () => {
    const f = file('{"mcpServers": {\n  "a b": {"command": "x"}}}');
    expect(error(f).split("\n")[0]).toBe(`${f}:2:3: "mcpServers.a b": server names must be 1 to 32 letters, digits, '_' or '-'`);
  });

  test("through the binary: exit 2, the placed message, no usage hint", () => {
    const f = file('{ "max_depth": "deep" }');
    const p = Bun.spawnSync([binaryPath(), "--config", f, "tools"], { stdout: "pipe", stderr: "pipe" });
    expect(p.exitCode).toBe(2);
    expect(p.stderr.toString()).toBe(
      `agentcore: ${f}:1:16: "max_depth" must be an integer from 1 to 4096\n    1 | { "max_depth": "deep" }\n      |                ^\n`,
    );
    expect(p.stdout.toString()).toBe("");
  });
});
