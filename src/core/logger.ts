/**
 * Per-runtime logger. Lines go to stderr (stdout carries results only):
 *
 * ```text
 * agentcore <level> <message> key=value key="value with spaces"
 * ```
 *
 * The level comes from the `level` option, else from `AGENTCORE_LOG_LEVEL`
 * (case-insensitive: trace, debug, info, warn, error), else `warn`. An invalid
 * value logs one warning and falls back to `warn`. A disabled level costs one
 * integer comparison: nothing is formatted.
 *
 * The environment is read through `globalThis.process?.env`, falling back to
 * `Deno.env.get` (guarded: without `--allow-env` it is treated as unset), so
 * the logger works unchanged in Bun, Node and Deno.
 *
 * @module
 */

export type LogLevel = "trace" | "debug" | "info" | "warn" | "error";

/** Structured fields appended as `key=value`. */
export type LogFields = Record<string, unknown>;

/** A leveled logger. Methods never throw. */
export interface Logger {
  readonly level: LogLevel;
  /** True when messages at `level` would be written. */
  enabled(level: LogLevel): boolean;
  trace(message: string, fields?: LogFields): void;
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

/** Options for {@link createLogger}. */
export interface LoggerOptions {
  /** Explicit level; overrides the environment. */
  level?: LogLevel;
  /** Environment lookup (for tests). Default: the process environment. */
  env?: Record<string, string | undefined> | ((name: string) => string | undefined);
  /** Receives each formatted line without its trailing newline. Default: stderr. */
  sink?: (line: string) => void;
}

export const LOG_LEVELS: readonly LogLevel[] = ["trace", "debug", "info", "warn", "error"];
const RANK: Record<LogLevel, number> = { trace: 0, debug: 1, info: 2, warn: 3, error: 4 };
export const LOG_LEVEL_ENV = "AGENTCORE_LOG_LEVEL";

/** Read an environment variable in Bun, Node or Deno; `undefined` when unset or not permitted. */
export function readEnv(name: string): string | undefined {
  const g = globalThis as {
    process?: { env?: Record<string, string | undefined> };
    Deno?: { env?: { get(n: string): string | undefined } };
  };
  try {
    const env = g.process?.env;
    if (env !== undefined) return env[name];
    return g.Deno?.env?.get(name);
  } catch {
    return undefined;
  }
}

/** Parse a level name case-insensitively; `undefined` when not a level. */
export function parseLogLevel(value: string): LogLevel | undefined {
  const v = value.trim().toLowerCase();
  return Object.hasOwn(RANK, v) ? (v as LogLevel) : undefined;
}

let encoder: TextEncoder | undefined;

function stderrSink(line: string): void {
  const g = globalThis as {
    process?: { stderr?: { write(s: string): unknown } };
    Deno?: { stderr?: { writeSync(b: Uint8Array): number } };
  };
  try {
    if (g.process?.stderr) {
      g.process.stderr.write(line + "\n");
    } else if (g.Deno?.stderr) {
      encoder ??= new TextEncoder();
      const bytes = encoder.encode(line + "\n");
      let off = 0;
      while (off < bytes.length) off += g.Deno.stderr.writeSync(bytes.subarray(off));
    } else {
      console.error(line);
    }
  } catch {
    // Logging must never break a call.
  }
}

const BARE = /^[A-Za-z0-9_.,:\/@+-]+$/;

function formatValue(v: unknown): string {
  if (typeof v === "number" || typeof v === "boolean" || typeof v === "bigint") return String(v);
  if (v === null || v === undefined) return String(v);
  if (typeof v === "string") return BARE.test(v) ? v : JSON.stringify(v);
  if (v instanceof Error) return JSON.stringify(v.message);
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return JSON.stringify(String(v));
  }
}

/** Format one line (exported for tests and custom sinks). */
export function formatLogLine(level: LogLevel, message: string, fields?: LogFields): string {
  let line = "agentcore " + level + " " + message.replace(/[\r\n]+/g, " ");
  if (fields !== undefined) {
    for (const key of Object.keys(fields)) line += " " + key + "=" + formatValue(fields[key]).replace(/[\r\n]+/g, " ");
  }
  return line;
}

class LevelLogger implements Logger {
  readonly level: LogLevel;
  readonly #rank: number;
  readonly #sink: (line: string) => void;

  constructor(level: LogLevel, sink: (line: string) => void) {
    this.level = level;
    this.#rank = RANK[level];
    this.#sink = sink;
  }

  enabled(level: LogLevel): boolean {
    return RANK[level] >= this.#rank;
  }

  #write(level: LogLevel, message: string, fields?: LogFields): void {
    try {
      this.#sink(formatLogLine(level, message, fields));
    } catch {
      // A failing sink must not fail the caller.
    }
  }

  trace(message: string, fields?: LogFields): void {
    if (this.#rank <= 0) this.#write("trace", message, fields);
  }
  debug(message: string, fields?: LogFields): void {
    if (this.#rank <= 1) this.#write("debug", message, fields);
  }
  info(message: string, fields?: LogFields): void {
    if (this.#rank <= 2) this.#write("info", message, fields);
  }
  warn(message: string, fields?: LogFields): void {
    if (this.#rank <= 3) this.#write("warn", message, fields);
  }
  error(message: string, fields?: LogFields): void {
    this.#write("error", message, fields);
  }
}

/**
 * Create a logger. The level is `options.level`, else `AGENTCORE_LOG_LEVEL`,
 * else `warn`; an unrecognised environment value produces one warning line and
 * falls back to `warn`.
 *
 * @example
 * ```ts
 * const lines: string[] = [];
 * const log = createLogger({ env: { AGENTCORE_LOG_LEVEL: "DEBUG" }, sink: (l) => lines.push(l) });
 * log.debug("dispatched", { tool: "echo", ms: 0.02 }); // "agentcore debug dispatched tool=echo ms=0.02"
 * ```
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const sink = options.sink ?? stderrSink;
  if (options.level !== undefined) {
    if (!Object.hasOwn(RANK, options.level)) throw new RangeError(`invalid log level ${JSON.stringify(options.level)}`);
    return new LevelLogger(options.level, sink);
  }
  const env = options.env;
  const raw = env === undefined ? readEnv(LOG_LEVEL_ENV) : typeof env === "function" ? env(LOG_LEVEL_ENV) : env[LOG_LEVEL_ENV];
  if (raw === undefined || raw.trim() === "") return new LevelLogger("warn", sink);
  const parsed = parseLogLevel(raw);
  const logger = new LevelLogger(parsed ?? "warn", sink);
  if (parsed === undefined) {
    logger.warn(`invalid ${LOG_LEVEL_ENV}, using warn`, { value: raw.slice(0, 40), allowed: LOG_LEVELS.join(",") });
  }
  return logger;
}
