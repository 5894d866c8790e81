/**
 * `agentcore history`: read the execution history log back.
 *
 * ```
 * agentcore history [--file FILE] [--tool T] [--since 2026-11-30T08:00:00Z|10m|2h|1d] [--failed] [--json]
 * ```
 *
 * The log is `--file` (or `--history`); else `--store` when it is a
 * postgres:// URL (the store's agentcore.history table); else the config
 * file's `history` key (`--config FILE` or `AGENTCORE_CONFIG`); else a
 * PostgreSQL store named by AGENTCORE_STORE or the config's `store`; else a
 * usage error. Reading a PostgreSQL store is asynchronous (the result is then
 * a promise); the store is opened through the host's openStore and closed. Output: a table on stdout, or with `--json` one record
 * per line exactly as stored. Exit status: 0 when the log was read (whatever
 * the calls' results); 2 for usage errors, a missing or unreadable file, or a
 * corrupt line.
 *
 * @module
 */
import { AgentcoreError } from "../core/errors.ts";
import { HISTORY_OPTIONS, parseCommandLine, renderHelp, usageText } from "./args.ts";
import { HistoryError, readHistory, type HistoryFilter, type HistoryRecord } from "../runtime/history.ts";
import { ConfigError, loadConfig } from "../host/settings.ts";
import { SessionError } from "../session/types.ts";
import { OutputError, outputFailure, type LineWriter, PIPE_HELP } from "./output.ts";

/** `agentcore history --help`. */
export const HISTORY_USAGE = renderHelp({
  name: "history",
  summary: "read an execution history log",
  usage: ["history [--file FILE | --store URL] [--tool T] [--since WHEN] [--failed] [--json]"],
  description:
    'Reads back the log that --history FILE (or the config\'s "history") appends to, or the history\ntable of a PostgreSQL store (--store, else AGENTCORE_STORE or the config\'s "store" when no log\nfile is set): one line per call with its time, tool, call id, effect, decision, duration and result.',
  options: HISTORY_OPTIONS,
  examples: [
    "agentcore history --file audit.jsonl --since 1h --failed",
    "agentcore history --file audit.jsonl --tool write_file --json",
    "agentcore history --store postgres://agent@127.0.0.1:5432/agentcore --since 1d",
  ],
  exit: [
    "0  the log was read (whatever the calls' results)",
    "2  usage error, a missing or unreadable file, a corrupt line, or a store that cannot be read",
    PIPE_HELP,
  ],
});

/** What the history command needs from its caller. */
export interface HistoryCommandIO {
  out: LineWriter;
  /** Where usage and error messages go. Default: `process.stderr`. */
  err?: (text: string) => void;
  /** Environment lookup. Default: the process environment. */
  env?: (name: string) => string | undefined;
  /** The current time, for relative `--since`. Default: now. */
  now?: () => Date;
}

/** A usage problem of `history`: exit status 2. */
export class HistoryUsageError extends AgentcoreError {
  readonly code: string = "USAGE";
  override name = "HistoryUsageError";
}

const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * Parse a `--since` value: an ISO 8601 date or date-time (`2026-11-30`,
 * `2026-11-30T08:00:00Z`, `2026-11-30T08:00:00.000+01:00`), or an age
 * `<n>s|m|h|d` counted back from `now`. Throws {@link HistoryUsageError}.
 */
export function parseSince(raw: string, now: Date = new Date()): Date {
  const rel = /^([0-9]{1,9})([smhd])$/.exec(raw);
  if (rel) return new Date(now.getTime() - Number(rel[1]) * UNIT_MS[rel[2]!]!);
  const iso = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2}))?$/;
  if (iso.test(raw)) {
    const t = Date.parse(raw);
    if (!Number.isNaN(t)) return new Date(t);
  }
  throw new HistoryUsageError(`--since needs an ISO 8601 time (2026-11-30T08:00:00Z) or an age like 10m, 2h, 1d; got '${raw}'`);
}

function processEnv(name: string): string | undefined {
  return (globalThis as { process?: { env: Record<string, string | undefined> } }).process?.env[name];
}

/**
 * Run `agentcore history` with `argv` (the arguments after `history`).
 * Returns the exit status; messages go to `io.err`. Never throws.
 */
export function cmdHistory(argv: string[], io: HistoryCommandIO): number | Promise<number> {
  const err = io.err ?? ((t: string) => void process.stderr.write(t));
  const usage = (message: string) => {
    err(usageText(message, "history"));
    return 2;
  };
  let values: Record<string, string | boolean | undefined>;
  let positionals: string[];
  try {
    ({ values, positionals } = parseCommandLine("history", HISTORY_OPTIONS, argv));
  } catch (e) {
    return usage((e as Error).message);
  }
  // also under --help: `history bogus --help` is a mistake, not a request for help
  if (positionals.length > 0) return usage(`unexpected argument '${positionals[0]}': history takes no arguments (the log is --file FILE)`);
  if (typeof values.file === "string" && typeof values.history === "string" && values.file !== values.history) {
    return usage("--file and --history name different files; give one");
  }
  try {
    if (values.help) {
      io.out.line(HISTORY_USAGE.trimEnd());
      io.out.flush();
      return 0;
    }
    const source = historySource(values, io.env ?? processEnv);
    const filter: HistoryFilter = {};
    if (typeof values.tool === "string") filter.tool = values.tool;
    if (typeof values.since === "string") filter.since = parseSince(values.since, (io.now ?? (() => new Date()))());
    if (values.failed === true) filter.failed = true;
    const print = (records: HistoryRecord[]) => {
      if (values.json === true) for (const r of records) io.out.line(JSON.stringify(r));
      else printTable(records, io.out);
      io.out.flush();
      return 0;
    };
    if (source.store !== undefined)
      return readStoreHistory(source.store, filter)
        .then(print)
        .catch((e) => failure(e, err, usage));
    return print(readHistory(source.file!, filter));
  } catch (e) {
    return failure(e, err, usage);
  }
}

/** The history of a PostgreSQL store (opened through openStore, closed after the read). */
async function readStoreHistory(spec: string, filter: HistoryFilter): Promise<HistoryRecord[]> {
  const { openStore } = await import("../host/store.ts");
  const store = await openStore(spec);
  try {
    return await store.history!.read(filter);
  } finally {
    await store.close();
  }
}

/** The exit status for an error of the command (never throws). */
function failure(e: unknown, err: (text: string) => void, usage: (message: string) => number): number {
  if (e instanceof HistoryUsageError) return usage(e.message);
  if (e instanceof OutputError) return outputFailure(e, err);
  if (e instanceof HistoryError || e instanceof ConfigError || e instanceof SessionError) {
    err(`agentcore: ${e.message}\n`);
    return 2;
  }
  err(`agentcore: internal error: ${(e as Error)?.stack ?? String(e)}\n`);
  return 2;
}

const isPostgres = (spec: string) => /^postgres(ql)?:\/\//i.test(spec.trim());

/** Where the history is read from (see the module notes): a JSONL file, or a PostgreSQL store. */
function historySource(
  values: Record<string, string | boolean | undefined>,
  env: (name: string) => string | undefined,
): { file?: string; store?: string } {
  if (typeof values.file === "string") {
    if (typeof values.store === "string") throw new HistoryUsageError("--file and --store both name the history: give one");
    return { file: values.file };
  }
  if (typeof values.history === "string") return { file: values.history };
  if (typeof values.store === "string") {
    if (!isPostgres(values.store))
      throw new HistoryUsageError(
        `--store '${values.store}' is a JSONL folder, which keeps no history: a JSONL history is the file --history FILE names (read it with --file FILE)`,
      );
    return { store: values.store };
  }
  const configPath = typeof values.config === "string" ? values.config : env("AGENTCORE_CONFIG");
  const cfg = configPath ? (loadConfig(configPath) as { history?: unknown; store?: unknown }) : {};
  if (typeof cfg.history === "string" && cfg.history.length > 0) return { file: cfg.history };
  const store = env("AGENTCORE_STORE") || (typeof cfg.store === "string" ? cfg.store : undefined);
  if (store !== undefined && isPostgres(store)) return { store };
  throw new HistoryUsageError(
    'history needs a log file: --file FILE (or a "history" key in the config file), or a PostgreSQL store (--store postgres://…, AGENTCORE_STORE or the config\'s "store")',
  );
}

/** A cell safe for a terminal: control characters escaped, long text cut. */
function cell(text: string, max = 40): string {
  // eslint-disable-next-line no-control-regex
  const safe = text.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
  return safe.length > max ? safe.slice(0, max - 1) + "…" : safe;
}

function decisionText(r: HistoryRecord): string {
  const d = r.decision;
  if (d === null) return "-";
  const approved = d.approved === undefined ? "" : d.approved ? " (approved)" : " (refused)";
  return `${d.action}${approved} by ${d.by}`;
}

function printTable(records: HistoryRecord[], out: LineWriter): void {
  const head = ["TIME", "TOOL", "CALL ID", "DECISION", "MS", "RESULT"];
  const rows = records.map((r) => [
    r.time,
    cell(r.tool, 64),
    r.call_id === null ? "-" : cell(r.call_id),
    cell(decisionText(r), 60),
    r.duration_ms.toFixed(1),
    r.success ? "ok" : cell(r.code ?? "failed"),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const fmt = (row: string[]) =>
    row.map((c, i) => (i === 4 ? c.padStart(widths[i]!) : i === row.length - 1 ? c : c.padEnd(widths[i]!))).join("  ");
  out.line(fmt(head));
  for (const row of rows) out.line(fmt(row));
}
