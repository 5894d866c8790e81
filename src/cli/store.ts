/**
 * `agentcore store migrate [--store URL] [--json]`: apply the migrations a
 * PostgreSQL store lacks (docs/postgres.md) and print what was applied.
 * The store is `--store`, else `AGENTCORE_STORE`. Daemons and commands that
 * open a PostgreSQL store apply missing migrations themselves; this command
 * does it up front (a deploy step), and says which version the database is at.
 *
 * `agentcore store prune [--store URL] [--older-than AGE] [--dry-run] [--json]`:
 * delete the rows of cluster runs that finished longer ago than AGE (default
 * 30d), as the daemons' retention job does (docs/cluster.md), and print the
 * counts; `--dry-run` counts and changes nothing. Sessions are never touched.
 *
 * Exit status: 0 migrated (or nothing to do), pruned (or counted); 2 usage
 * error, a store that is not PostgreSQL, a server that cannot be reached, or
 * a database newer than this build.
 *
 * @module
 */
import { type OptionTable, parseCommandLine, renderHelp, shown, STORE_OPTIONS, usageText } from "./args.ts";
import { GROUPS, unknownSubcommand } from "./groups.ts";
import { type LineWriter, PIPE_HELP } from "./output.ts";
import { isPostgresStore, openStore } from "../host/store.ts";
import type { MigrationResult } from "../session/postgres/migrations.ts";
import { DEFAULT_RETENTION_MS, formatDuration, parseDuration, type PruneCounts, pruneStore } from "../server/cluster/prune.ts";
import { SessionError } from "../session/types.ts";

/** The options of `store` and its subcommands (migrate takes --store and --json). */
const STORE_CLI_OPTIONS = {
  ...STORE_OPTIONS,
  json: {
    type: "boolean",
    help: 'print JSON: migrate {"store", "applied": [{"version", "name"}], "version"};\nprune {"store", "older_than", "dry_run", "removed": {"runs", "run_events", ...}}',
  },
  "older-than": {
    type: "string",
    arg: "AGE",
    help: "prune: runs finished longer ago than AGE, a number and a unit\n(s, m, h, d: 90m, 12h, 30d; default 30d)",
  },
  "dry-run": { type: "boolean", help: "prune: count the rows it would delete, and delete nothing" },
} as const satisfies OptionTable;

/** `agentcore store --help`. */
export const STORE_HELP = renderHelp({
  name: "store",
  summary: "set up and tidy a PostgreSQL store",
  usage: [
    "store migrate [--store URL] [--json]   apply the migrations the store lacks",
    "store prune [--store URL] [--older-than AGE] [--dry-run] [--json]   delete old finished cluster runs",
  ],
  description: `Sessions (and history) can live in PostgreSQL instead of JSONL files: a store given as
postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE. Its tables are in schema "agentcore", versioned
in agentcore.schema_migrations. 'store migrate' applies the steps the database lacks, each in a
transaction of its own (two at once do not race), and refuses a database newer than this build.
'store prune' deletes the rows of cluster runs (agentcore.runs and their events, commands and
approvals) that finished (idle or failed) longer ago than AGE, as the daemons' retention job does
(AGENTCORE_RUN_RETENTION). Queued, running and suspended runs stay, and sessions are never pruned:
a pruned run's session and its journal are all still there. It prints the rows it removed.`,
  options: STORE_CLI_OPTIONS,
  examples: [
    "agentcore store migrate --store postgres://agent@127.0.0.1:5432/agentcore",
    "AGENTCORE_STORE=postgres://agent@db/agentcore agentcore store migrate --json",
    "agentcore store prune --store postgres://agent@db/agentcore --older-than 7d --dry-run",
  ],
  exit: [
    "0  migrated, or nothing to do; pruned, or counted (--dry-run)",
    "2  usage error, not a PostgreSQL store, the server cannot be reached, or the database is newer",
    PIPE_HELP,
  ],
});

/** `agentcore store prune --help`. */
export const STORE_PRUNE_HELP = renderHelp({
  name: "store",
  summary: "delete the rows of cluster runs that finished long ago",
  usage: ["store prune [--store URL] [--older-than AGE] [--dry-run] [--json]"],
  description: `Deletes the rows of cluster runs that finished (idle or failed) longer ago than AGE (default
30d): agentcore.runs, and their run_events, run_commands and run_approvals. The daemons of the
store do the same once an hour (AGENTCORE_RUN_RETENTION, docs/cluster.md). Queued, running and
suspended runs stay, whatever their age, and sessions are never pruned: a pruned run's session and
its journal are all still there. Prints the rows it removed; --dry-run prints the rows it would
remove and deletes nothing. AGE is a whole number and a unit: s, m, h or d (90m, 12h, 30d).`,
  options: STORE_CLI_OPTIONS,
  examples: [
    "agentcore store prune --store postgres://agent@db/agentcore --dry-run",
    "AGENTCORE_STORE=postgres://agent@db/agentcore agentcore store prune --older-than 7d --json",
  ],
  exit: [
    "0  pruned, or counted (--dry-run)",
    "2  usage error (a bad --older-than), not a PostgreSQL store, or the server cannot be reached",
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
    parsed = parseCommandLine("store", STORE_CLI_OPTIONS, argv);
  } catch (e) {
    return fail((e as Error).message);
  }
  const { values: v, positionals } = parsed;
  const [sub, ...extra] = positionals;
  // the subcommand first: `store bogus --help` is a mistake, not a request for help
  if (sub !== undefined && !GROUPS.store.includes(sub)) return fail(unknownSubcommand(sub, GROUPS.store));
  if (v.help) {
    out.line((sub === "prune" ? STORE_PRUNE_HELP : STORE_HELP).trimEnd());
    out.flush();
    return 0;
  }
  if (sub === undefined) return fail(`missing subcommand: ${GROUPS.store.join(", ")}`);
  if (extra.length > 0) return fail(`unexpected argument '${shown(extra[0]!)}': store ${sub} takes no arguments`);
  let olderThanMs = DEFAULT_RETENTION_MS;
  if (sub === "migrate") {
    const misplaced = (["older-than", "dry-run"] as const).find((o) => v[o] !== undefined && v[o] !== false);
    if (misplaced !== undefined) return fail(`--${misplaced} belongs to store prune, not store migrate`);
  } else if (v["older-than"] !== undefined) {
    const ms = parseDuration(v["older-than"]);
    if (ms === null)
      return fail(
        `--older-than must be a number and a unit s, m, h or d (90m, 12h, 30d), from 1 second to 100 years, got '${shown(v["older-than"])}'`,
      );
    olderThanMs = ms;
  }
  const spec = v.store ?? env("AGENTCORE_STORE");
  if (spec === undefined || spec.trim() === "")
    return fail(`store ${sub} needs the store: --store postgres://USER@HOST:PORT/DB (or AGENTCORE_STORE)`);
  if (!isPostgresStore(spec))
    return fail(
      sub === "migrate"
        ? `'${shown(spec)}' is not a PostgreSQL store (postgres://… or postgresql://…): a JSONL folder needs no migration`
        : `'${shown(spec)}' is not a PostgreSQL store (postgres://… or postgresql://…): a JSONL folder has no cluster runs to prune (its sessions are never pruned)`,
    );

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
  if (sub === "prune") return prune(spec.trim(), location, olderThanMs, v["dry-run"] === true, v.json === true, out);
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

/** `store prune` once the store is open (and migrated): the counts, printed. */
async function prune(url: string, location: string, olderThanMs: number, dryRun: boolean, json: boolean, out: LineWriter): Promise<number> {
  let removed: PruneCounts;
  try {
    removed = await pruneStore(url, { olderThanMs, dryRun });
  } catch (e) {
    if (e instanceof SessionError) {
      process.stderr.write(`agentcore store: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
  const age = formatDuration(olderThanMs);
  if (json) out.line(JSON.stringify({ store: location, older_than: age, dry_run: dryRun, removed }));
  else {
    const counts = `${removed.runs} runs, ${removed.run_events} run events, ${removed.run_commands} run commands, ${removed.run_approvals} run approvals`;
    out.line(`${location}: ${dryRun ? "would remove" : "removed"} ${counts} (runs finished more than ${age} ago)`);
  }
  out.flush();
  return 0;
}
