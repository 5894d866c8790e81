/**
 * `agentcore store migrate [--store URL] [--json]`: apply the migrations a
 * PostgreSQL store lacks (docs/postgres.md) and print what was applied.
 * The store is `--store`, else `AGENTCORE_STORE`. Daemons and commands that
 * open a PostgreSQL store apply missing migrations themselves; this command
 * does it up front (a deploy step), and says which version the database is at.
 *
 * Exit status: 0 migrated (or nothing to do); 2 usage error, a store that is
 * not PostgreSQL, a server that cannot be reached, or a database newer than
 * this build.
 *
 * @module
 */
import { parseCommandLine, renderHelp, shown, STORE_OPTIONS, usageText } from "./args.ts";
import { GROUPS, unknownSubcommand } from "./groups.ts";
import { type LineWriter, PIPE_HELP } from "./output.ts";
import { isPostgresStore, openStore } from "../host/store.ts";
import type { MigrationResult } from "../session/postgres/migrations.ts";
import { SessionError } from "../session/types.ts";

/** `agentcore store --help`. */
export const STORE_HELP = renderHelp({
  name: "store",
  summary: "set up a PostgreSQL store",
  usage: ["store migrate [--store URL] [--json]   apply the migrations the store lacks"],
  description: `Sessions (and history) can live in PostgreSQL instead of JSONL files: a store given as
postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE. Its tables are in schema "agentcore", versioned
in agentcore.schema_migrations. 'store migrate' applies the steps the database lacks, each in a
transaction of its own (two at once do not race), and refuses a database newer than this build.`,
  options: STORE_OPTIONS,
  examples: [
    "agentcore store migrate --store postgres://agent@127.0.0.1:5432/agentcore",
    "AGENTCORE_STORE=postgres://agent@db/agentcore agentcore store migrate --json",
  ],
  exit: [
    "0  migrated, or nothing to do",
    "2  usage error, not a PostgreSQL store, the server cannot be reached, or the database is newer",
    PIPE_HELP,
  ],
});

function env(name: string): string | undefined {
  return (globalThis as { process?: { env: Record<string, string | undefined> } }).process?.env[name];
}

function fail(message: string): number {
  process.stderr.write(usageText(message, "store"));
  return 2;
}

/** Run `agentcore store …` with the arguments after `store`; resolves to the exit status. */
export async function cmdStore(argv: string[], io: { out: LineWriter }): Promise<number> {
  const { out } = io;
  let parsed;
  try {
    parsed = parseCommandLine("store", STORE_OPTIONS, argv);
  } catch (e) {
    return fail((e as Error).message);
  }
  const { values: v, positionals } = parsed;
  const [sub, ...extra] = positionals;
  // the subcommand first: `store bogus --help` is a mistake, not a request for help
  if (sub !== undefined && !GROUPS.store.includes(sub)) return fail(unknownSubcommand(sub, GROUPS.store));
  if (v.help) {
    out.line(STORE_HELP.trimEnd());
    out.flush();
    return 0;
  }
  if (sub === undefined) return fail(`missing subcommand: ${GROUPS.store.join(", ")}`);
  if (extra.length > 0) return fail(`unexpected argument '${shown(extra[0]!)}': store migrate takes no arguments`);
  const spec = v.store ?? env("AGENTCORE_STORE");
  if (spec === undefined || spec.trim() === "")
    return fail("store migrate needs the store: --store postgres://USER@HOST:PORT/DB (or AGENTCORE_STORE)");
  if (!isPostgresStore(spec))
    return fail(`'${shown(spec)}' is not a PostgreSQL store (postgres://… or postgresql://…): a JSONL folder needs no migration`);

  let result: MigrationResult | null = null;
  let location = "";
  try {
    const store = await openStore(spec, { onMigrate: (r) => (result = r) });
    location = store.location;
    await store.close();
  } catch (e) {
    if (e instanceof SessionError) {
      process.stderr.write(`agentcore store: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
  const r = result as MigrationResult | null;
  const applied = r?.applied ?? [];
  const version = r?.version ?? 0;
  if (v.json) {
    out.line(JSON.stringify({ store: location, applied: applied.map((m) => ({ version: m.version, name: m.name })), version }));
  } else {
    for (const m of applied) out.line(`applied ${m.version}: ${m.name}`);
    out.line(
      applied.length === 0
        ? `${location}: up to date at version ${version}`
        : `${location}: at version ${version} (${applied.length} applied)`,
    );
  }
  out.flush();
  return 0;
}
