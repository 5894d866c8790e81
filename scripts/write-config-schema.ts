/**
 * `npm run schema`: writes the config file's published JSON Schema and the
 * validators compiled from it, all from the schema objects in the sources:
 *
 * - schema/agentcore.config.schema.json, for editors (src/host/config-schema.ts);
 * - one `*.validator.generated.ts` module beside each section's parser
 *   (the top level, policy, tools, mcpServers): ajv's standalone code for
 *   that schema, so that reading a config file does not compile schemas at
 *   run time (compiling them cost about 50 ms of CPU per command).
 * - src/tools/parameters.validator.generated.ts: the same for the built-in
 *   tools' parameter schemas (src/tools/builtin-schemas.ts), so that
 *   registering them compiles nothing (about 20 ms at every start).
 *
 * These files are committed on purpose (a fresh clone and the package use
 * them as they are). test/host/config-schema.test.ts fails while any of them
 * differs from what this script would write.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { CONFIG_SCHEMA_FILE, configSchemaText, generatedValidators } from "../src/host/config-schema.ts";
import { generatedToolValidators, TOOL_VALIDATORS_FILE } from "../src/tools/builtin-schemas.ts";

const repo = join(import.meta.dirname, "..");
writeFileSync(join(repo, CONFIG_SCHEMA_FILE), configSchemaText());
console.log(`wrote ${CONFIG_SCHEMA_FILE}`);
for (const [file, text] of Object.entries(await generatedValidators())) {
  writeFileSync(join(repo, file), text);
  console.log(`wrote ${file}`);
}
writeFileSync(join(repo, TOOL_VALIDATORS_FILE), await generatedToolValidators());
console.log(`wrote ${TOOL_VALIDATORS_FILE}`);
