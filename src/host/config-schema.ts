/**
 * The config file's JSON Schema (draft-07): one object for the loader
 * (checked with ajv, see src/tools/settings-check.ts) and for editors, which
 * read the copy published at `schema/agentcore.config.schema.json`
 * (`npm run schema` writes it; a test keeps the two equal).
 *
 * The sections come from the layers that own them: `policy` from the
 * runtime, `tools` from the workspace tools, `mcpServers` from the MCP
 * client.
 *
 * @module
 */
import { HARD_MAX_BYTES, HARD_MAX_DEPTH } from "../core/errors.ts";
import { POLICY_CONFIG_SCHEMA } from "../runtime/middleware/policy.ts";
import { TOOLS_CONFIG_SCHEMA } from "../tools/workspace/config.ts";
import { MCP_SERVERS_SCHEMA } from "../mcp/config.ts";
import type { SettingsSchema } from "../tools/settings-check.ts";

/** Where the published copy lives in the package and the repository. */
export const CONFIG_SCHEMA_FILE = "schema/agentcore.config.schema.json";

const PATH = { type: "string", minLength: 1 } as const;

/** The whole file. Relative paths are resolved from the file's folder. */
export const CONFIG_SCHEMA: SettingsSchema = {
  $schema: "http://json-schema.org/draft-07/schema#",
  $id: "https://agentcore.dev/schema/agentcore.config.schema.json",
  title: "agentcore config file",
  description:
    "Settings read by every agentcore command and the daemon (--config FILE or AGENTCORE_CONFIG). Command-line flags override them.",
  type: "object",
  additionalProperties: false,
  properties: {
    $schema: { description: "The schema editors check this file against (ignored by agentcore).", type: "string" },
    root: { description: "The folder file tools are confined to (default: the working directory).", ...PATH },
    max_input_bytes: {
      description: "Largest accepted call, in bytes.",
      type: "integer",
      minimum: 1,
      maximum: HARD_MAX_BYTES,
      default: 1048576,
      "x-unit": "bytes",
    },
    max_depth: {
      description: "Deepest accepted nesting of arrays and objects in a call.",
      type: "integer",
      minimum: 1,
      maximum: HARD_MAX_DEPTH,
      default: 64,
    },
    max_file_bytes: { description: "read_file's size limit, in bytes.", type: "integer", minimum: 1 },
    default_timeout_ms: { description: "Timeout of asynchronous tools without their own, in milliseconds.", type: "integer", minimum: 1 },
    history: { description: "Append every call to this JSONL execution history (read it with agentcore history).", ...PATH },
    store: {
      description:
        "Where sessions, history and approvals are kept: a folder (JSONL files, the default) or a postgres:// URL (see docs/postgres.md).",
      ...PATH,
    },
    skills_dir: { description: "The skills folder (default: .agentcore/skills under the root, when it exists).", ...PATH },
    project_instructions: {
      description:
        "Read the workspace's AGENTS.md files (the root's, and those down to the working folder) into a run's system prompt (see docs/instructions.md).",
      type: "boolean",
      default: true,
    },
    policy: { description: "Tool policy; without it every call runs (see docs/policy.md).", ...POLICY_CONFIG_SCHEMA },
    tools: { description: "Workspace tools to enable, all off by default (see docs/workspace-tools.md).", ...TOOLS_CONFIG_SCHEMA },
    mcpServers: { description: "MCP servers whose tools are added as <server>__<tool> (see docs/mcp.md).", ...MCP_SERVERS_SCHEMA },
  },
};

/** The sections that check themselves (each layer's own parser compiles its own part of the schema, once). */
export const CONFIG_SECTIONS = ["policy", "tools", "mcpServers"] as const;

/**
 * {@link CONFIG_SCHEMA} with each of {@link CONFIG_SECTIONS} reduced to "an
 * object": what the loader checks the top level with before it hands each
 * section to its own parser, so no part of the schema is compiled twice
 * (compiling is most of the cost of reading a config file).
 */
export const CONFIG_TOP_LEVEL_SCHEMA: SettingsSchema = {
  ...CONFIG_SCHEMA,
  properties: Object.fromEntries(
    Object.entries(CONFIG_SCHEMA.properties as Record<string, SettingsSchema>).map(([key, schema]) => [
      key,
      (CONFIG_SECTIONS as readonly string[]).includes(key) ? { type: "object" } : schema,
    ]),
  ),
};

/** The published file's text: the schema, two-space indented, with a final newline. */
export function configSchemaText(): string {
  return `${JSON.stringify(CONFIG_SCHEMA, null, 2)}\n`;
}

/** Where each section's generated validator lives, and the schema it is compiled from. */
const VALIDATORS: readonly [file: string, schema: SettingsSchema][] = [
  ["src/host/config.validator.generated.ts", CONFIG_TOP_LEVEL_SCHEMA],
  ["src/runtime/middleware/policy.validator.generated.ts", POLICY_CONFIG_SCHEMA],
  ["src/tools/workspace/config.validator.generated.ts", TOOLS_CONFIG_SCHEMA],
  ["src/mcp/config.validator.generated.ts", MCP_SERVERS_SCHEMA],
];

/** ajv's runtime helper for `minLength`, written out so the generated code imports nothing. */
const UCS2LENGTH = `(s) => { let n = 0; for (const _ of s) n++; return n; }`;

/**
 * The text of each generated validator module (what `npm run schema` writes):
 * ajv's standalone code, with the same options the checks rely on (all
 * errors, own properties only, the schema in each error for the messages).
 * Build-time only: ajv's code generator is imported here, never at run time.
 */
export async function generatedValidators(): Promise<Record<string, string>> {
  const { default: Ajv } = await import("ajv");
  const { default: standaloneCode } = await import("ajv/dist/standalone/index.js");
  const out: Record<string, string> = {};
  for (const [file, schema] of VALIDATORS) {
    const { $id: _id, $schema: _draft, ...plain } = schema as Record<string, unknown>;
    const ajv = new Ajv({ allErrors: true, strict: false, ownProperties: true, verbose: true, code: { source: true, esm: true } });
    ajv.addSchema(plain, "section");
    let code = standaloneCode(ajv, { validate: "section" });
    code = code.replaceAll('require("ajv/dist/runtime/ucs2length").default', UCS2LENGTH);
    if (code.includes("require(")) throw new Error(`${file}: the generated code needs a runtime helper it can't import`);
    out[file] =
      `// Generated by \`npm run schema\` (scripts/write-config-schema.ts) from the schema in the sources; do not edit.\n` +
      `// ajv standalone validation code, committed on purpose: see docs/cli.md, "Config file".\n` +
      `// @ts-nocheck\n${code.replace(/^"use strict";/, "")}\n`;
  }
  return out;
}
