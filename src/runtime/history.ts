/**
 * Persistent execution history: an append-only JSONL audit log of tool calls.
 *
 * - {@link HistoryLog} appends one record per line. Each append is a single
 *   `write` on a file opened with `O_APPEND` (so concurrent writers, in this
 *   process or others, never interleave within a line), followed by `fsync`,
 *   before the call's outcome is returned. Calls that finish together share
 *   it: the middleware appends through {@link HistoryLog.appendGrouped}, which
 *   writes the records handed in during one turn of the event loop (or
 *   during the previous group's fsync) with one `write` and one `fsync`, and
 *   resolves each once the group is on disk. A new file is created with mode
 *   0600 and its folder is fsynced once, so the file's entry is durable too.
 * - {@link historyMiddleware} is the {@link ToolMiddleware} that records every
 *   call. Place it FIRST (outermost) in the chain so it also sees calls that
 *   the policy or validation middleware refuse.
 * - {@link readHistory} reads the log back with the strict JSON core.
 *
 * Interruption: a process killed in the middle of a write can leave a torn
 * last line (no trailing newline). Readers ignore it. When a log whose last
 * line is torn is opened again, the first append starts with a newline, so
 * the torn fragment stays on a line of its own; readers recognise such a
 * fragment (a truncated JSON object: the strict parser reports "unexpected
 * end of data" exactly at the end of the line) and skip it. A fragment torn
 * by one process and directly followed by a record that another process
 * appended (it could not know about the tear) is read as that record. Any other
 * unreadable complete line is corruption and {@link readHistory} throws
 * {@link HistoryError} naming the file and the line.
 *
 * Record (one compact line, keys in this order; optional keys only when set):
 * ```json
 * {"v":1,"time":"2026-11-30T08:13:12.123Z","tool":"echo","call_id":"c1","effect":"read_only",
 *  "decision":{"action":"allow","by":"rule:0"},"duration_ms":0.412,"success":true,"code":null,
 *  "args_sha256":"<64 hex>","arguments":{…},"run_id":"…","agent_id":"…","turn":1}
 * ```
 *
 * @module
 */
import { canonicalJson } from "../core/canonical.ts";
import { concatBytes } from "../core/bytes.ts";
import { closeSync, constants, fstatSync, fsync, fsyncSync, openSync, readSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import { createRequire } from "node:module";
import { parseStrict } from "../core/index.ts";
import { AgentcoreError, HARD_MAX_BYTES, HARD_MAX_DEPTH } from "../core/errors.ts";
import type { ToolEffect } from "../tools/definition.ts";
import { thrownToEnvelope } from "./dispatch.ts";
import { elapsedMs } from "./envelope_io.ts";
import { createLogger, type Logger } from "../core/logger.ts";
import type { CallDecision, ToolCallContext, ToolCallOutcome, ToolMiddleware } from "./middleware/types.ts";

/** Version of the record format, written as `"v"` on every line. */
export const HISTORY_RECORD_VERSION = 1;

/** The decision part of a record: who let the call run (or refused it). */
export interface HistoryDecision {
  action: CallDecision["action"];
  /** `rule:<id>`, `default`, `approver`, `approve_all`, or a middleware's own name. */
  by: string;
  /** Only for `require_approval`, when the approver answered. */
  approved?: boolean;
}

/** One line of the history log. Wire names are snake_case. */
export interface HistoryRecord {
  v: 1;
  /** When the call entered the chain: ISO 8601, UTC, milliseconds (`2026-11-30T08:13:12.123Z`). */
  time: string;
  tool: string;
  call_id: string | null;
  effect: ToolEffect;
  /** `null` when no policy middleware decided (no policy configured). */
  decision: HistoryDecision | null;
  /**
   * Milliseconds the call spent in the chain below the history middleware
   * (policy, approval wait, validation, handler), from a monotonic clock,
   * rounded to 3 decimals. It excludes the history write itself, so it can be
   * slightly below the `duration_ms` of the envelope the caller receives.
   */
  duration_ms: number;
  success: boolean;
  /** The envelope's error code, `null` on success. */
  code: string | null;
  /** Hex SHA-256 of the canonical arguments ({@link canonicalJson}). */
  args_sha256: string;
  /** The canonical arguments themselves; only with `includeArguments: true`. */
  arguments?: unknown;
  /** Present when the call came from the agent loop. */
  run_id?: string;
  agent_id?: string;
  turn?: number;
}

/** Which records {@link readHistory} returns. */
export interface HistoryFilter {
  /** Only this tool. */
  tool?: string;
  /** Only records whose `time` is at or after this instant. */
  since?: Date;
  /** `true`: only failed calls; `false`: only successful ones. */
  failed?: boolean;
}

/** A history file could not be opened, written or read, or holds a corrupt line. */
export class HistoryError extends AgentcoreError {
  readonly code: string = "HISTORY_LOG_FAILED";
  override name = "HistoryError";
  /** The log file. */
  readonly path: string;
  /** 1-based line number of a corrupt line, when that is the problem. */
  readonly line: number | undefined;
  constructor(path: string, message: string, line?: number) {
    super(message);
    this.path = path;
    this.line = line;
  }
}

function errnoCode(e: unknown): string {
  return (e as NodeJS.ErrnoException)?.code ?? (e instanceof Error ? e.message : String(e));
}

// ---------------------------------------------------------------- canonical arguments

/** Hex SHA-256 of {@link canonicalJson}(`args`). Equal for equal arguments in any key order. */
export function argumentsDigest(args: unknown): string {
  return sha256Hex(canonicalJson(args));
}

/**
 * node:crypto's createHash, loaded at the first digest rather than with this
 * module: evaluating node:crypto (and the streams it pulls in) cost about 10 ms
 * of every CLI start, history or not.
 */
let createHash: typeof import("node:crypto").createHash | undefined;

function sha256Hex(text: string): string {
  // getBuiltinModule: Bun, Deno, Node 20.16+/22.3+; require for an older Node 22
  createHash ??= (
    (process.getBuiltinModule?.("node:crypto") as typeof import("node:crypto") | undefined) ??
    (createRequire(import.meta.url)("node:crypto") as typeof import("node:crypto"))
  ).createHash;
  return createHash("sha256").update(text, "utf8").digest("hex");
}

// ---------------------------------------------------------------- writing

const NEWLINE = 0x0a;
const ENCODER = new TextEncoder();

/** Run `fn` in the next turn of the event loop (after the microtasks queued now). */
const later: (fn: () => void) => void = typeof setImmediate === "function" ? (fn) => void setImmediate(fn) : (fn) => void setTimeout(fn, 0);

/**
 * An open history log. `append` is synchronous: when it returns, the line is
 * on disk (written and fsynced). Not safe to share across `fork`; safe to
 * open the same file from several processes at once.
 */
export class HistoryLog {
  readonly path: string;
  #fd: number | null;
  /** The file ends with a torn line: the next append first writes a newline. */
  #torn: boolean;

  private constructor(path: string, fd: number, torn: boolean) {
    this.path = path;
    this.#fd = fd;
    this.#torn = torn;
  }

  /**
   * Open (or create) the log at `path` for appending. A new file is created
   * with mode 0600 and its folder fsynced; an existing file keeps its mode.
   * Throws {@link HistoryError} when the file cannot be opened.
   */
  static open(path: string): HistoryLog {
    const { O_APPEND, O_CREAT, O_EXCL, O_RDWR } = constants;
    let fd: number;
    let created = false;
    try {
      try {
        fd = openSync(path, O_RDWR | O_APPEND | O_CREAT | O_EXCL, 0o600);
        created = true;
      } catch (e) {
        if (errnoCode(e) !== "EEXIST") throw e;
        fd = openSync(path, O_RDWR | O_APPEND);
      }
    } catch (e) {
      throw new HistoryError(path, `cannot open history file ${path}: ${errnoCode(e)}`);
    }
    try {
      const st = fstatSync(fd);
      if (!st.isFile()) throw new HistoryError(path, `history file ${path} is not a regular file`);
      let torn = false;
      if (st.size > 0) {
        const last = new Uint8Array(1);
        const n = readSync(fd, last, 0, 1, st.size - 1);
        torn = n === 1 && last[0] !== NEWLINE;
      }
      if (created) {
        fsyncSync(fd);
        syncDirectory(dirname(path));
      }
      return new HistoryLog(path, fd, torn);
    } catch (e) {
      closeSync(fd);
      if (e instanceof HistoryError) throw e;
      throw new HistoryError(path, `cannot open history file ${path}: ${errnoCode(e)}`);
    }
  }

  /** Whether the log is still open. */
  get isOpen(): boolean {
    return this.#fd !== null;
  }

  /**
   * Append one record as one line, in one `write` call, then fsync. Throws
   * {@link HistoryError} when the log is closed or the write or fsync fails.
   */
  append(record: HistoryRecord): void {
    this.appendLine(JSON.stringify(record));
  }

  /**
   * Append one already serialised JSON line (no newline inside). Used by
   * {@link append}; exposed for tests and tools that copy logs.
   */
  appendLine(json: string): void {
    if (json.includes("\n")) throw new HistoryError(this.path, "a history line cannot contain a newline");
    const fd = this.#write(json + "\n");
    try {
      fsyncSync(fd);
    } catch (e) {
      throw new HistoryError(this.path, `cannot fsync history file ${this.path}: ${errnoCode(e)}`);
    }
  }

  /** Records waiting for the next group write ({@link appendGrouped}), with their callers. */
  #queue: { json: string; done: (e?: HistoryError) => void }[] = [];
  #flushing = false;

  /**
   * Group commit: append `record` as one line and resolve once it is on
   * disk (written and fsynced), like {@link append}, but together with the
   * records appended around it: those handed in during the same turn of the
   * event loop, or while the previous group's fsync runs, go out in one
   * `write` and one `fsync` (calls that finish together, in one process,
   * share their fsync). Rejects with {@link HistoryError} when the log is
   * closed or the write or fsync fails.
   */
  appendGrouped(record: HistoryRecord): Promise<void> {
    const json = JSON.stringify(record);
    return new Promise((resolve, reject) => {
      this.#queue.push({ json, done: (e) => (e === undefined ? resolve() : reject(e)) });
      if (this.#flushing) return;
      this.#flushing = true;
      later(() => void this.#flush());
    });
  }

  async #flush(): Promise<void> {
    try {
      while (this.#queue.length > 0) {
        const group = this.#queue.splice(0);
        let failure: HistoryError | undefined;
        try {
          const fd = this.#write(group.map((g) => g.json).join("\n") + "\n");
          // The event loop goes on during the fsync: records handed in meanwhile make the next group.
          await new Promise<void>((resolve, reject) => fsync(fd, (e) => (e ? reject(e) : resolve())));
        } catch (e) {
          failure = e instanceof HistoryError ? e : new HistoryError(this.path, `cannot fsync history file ${this.path}: ${errnoCode(e)}`);
        }
        for (const g of group) g.done(failure);
      }
    } finally {
      this.#flushing = false;
    }
  }

  /** Write whole lines in one `write` call (after a newline when the file ends torn); returns the fd to fsync. */
  #write(lines: string): number {
    const fd = this.#fd;
    if (fd === null) throw new HistoryError(this.path, `history file ${this.path} is closed`);
    const bytes = ENCODER.encode((this.#torn ? "\n" : "") + lines);
    let written: number;
    try {
      written = writeSync(fd, bytes, 0, bytes.length);
    } catch (e) {
      // The write may have reached the file partly: isolate whatever is there.
      this.#torn = true;
      throw new HistoryError(this.path, `cannot write history file ${this.path}: ${errnoCode(e)}`);
    }
    if (written !== bytes.length) {
      this.#torn = true;
      throw new HistoryError(this.path, `short write to history file ${this.path} (${written} of ${bytes.length} bytes)`);
    }
    this.#torn = false;
    return fd;
  }

  /** Close the file. Idempotent. */
  close(): void {
    const fd = this.#fd;
    if (fd === null) return;
    this.#fd = null;
    closeSync(fd);
  }
}

/**
 * fsync a folder so a newly created entry in it survives a crash. Some
 * platforms (Windows) and file systems cannot fsync a folder; that is ignored.
 */
function syncDirectory(dir: string): void {
  let fd: number;
  try {
    fd = openSync(dir, constants.O_RDONLY);
  } catch {
    return;
  }
  try {
    fsyncSync(fd);
  } catch {
    // EINVAL/EISDIR/EPERM: the platform cannot sync folders
  } finally {
    closeSync(fd);
  }
}

// ---------------------------------------------------------------- middleware

/** Options of {@link historyMiddleware}. */
export interface HistoryMiddlewareOptions {
  /** Also record the canonical arguments (they may hold secrets). Default false: only their digest. */
  includeArguments?: boolean;
  /** Where a failed append is reported. Default: `createLogger()` (stderr). */
  logger?: Logger;
}

/**
 * Where {@link historyMiddleware} appends: a {@link HistoryLog} (a JSONL file,
 * synchronous), or a store's history (PostgreSQL: `storage.history()`), whose
 * append resolves once the record is committed.
 */
export interface HistorySink {
  /** Where the records go, for messages (a file, or a store's URL without its password). */
  readonly path: string;
  append(record: HistoryRecord): void | Promise<void>;
  /**
   * Append with the records appended around it as one group (one write and
   * one fsync, or one INSERT), resolving once this one is committed; the
   * middleware uses it when there is one ({@link HistoryLog.appendGrouped}).
   */
  appendGrouped?(record: HistoryRecord): Promise<void>;
}

/**
 * A middleware that records every call in `log`. Put it first in the chain
 * (outermost) so it also records refused calls.
 *
 * It digests the arguments as it receives them (before any inner middleware
 * or the handler sees them), calls `next`, and appends the record before
 * returning the outcome. `success` and `code` come from the outcome's
 * envelope; `duration_ms` is measured around `next` (so a refusal after a
 * long approval wait shows that wait). The decision is read from `ctx.decision` (set by
 * the policy middleware on the context passed down); `null` when absent.
 *
 * A failed append (disk full, file closed, …) does NOT fail the call: it is
 * logged at error level and the outcome is returned unchanged, so such a call
 * is missing from the history. If `next` throws, a failure record is appended
 * (with the code the dispatcher will give the throw) and the error rethrown.
 */
export function historyMiddleware(log: HistorySink, options: HistoryMiddlewareOptions = {}): ToolMiddleware {
  const includeArguments = options.includeArguments === true;
  let logger = options.logger;
  const report = (ctx: ToolCallContext, err: unknown) => {
    logger ??= createLogger();
    logger.error("history: cannot record call", {
      file: log.path,
      tool: ctx.tool,
      id: ctx.toolCallId,
      error: err instanceof Error ? err.message : String(err),
    });
  };

  return async (ctx, next) => {
    const time = new Date().toISOString();
    const start = performance.now();
    let canonical: string | null = null;
    try {
      canonical = canonicalJson(ctx.arguments);
    } catch (err) {
      report(ctx, err);
    }
    let outcome: ToolCallOutcome;
    try {
      outcome = await next(ctx);
    } catch (err) {
      const env = thrownToEnvelope(err, ctx.toolCallId, ctx.tool, start);
      await record(ctx, time, canonical, false, env.error?.code ?? "TOOL_ERROR", elapsedMs(start));
      throw err;
    }
    const env = outcome.envelope;
    await record(ctx, time, canonical, env.success, env.error?.code ?? null, elapsedMs(start));
    return outcome;
  };

  async function record(
    ctx: ToolCallContext,
    time: string,
    canonical: string | null,
    success: boolean,
    code: string | null,
    durationMs: number,
  ): Promise<void> {
    if (canonical === null) return; // arguments could not be serialised; already reported
    try {
      const rec: HistoryRecord = {
        v: 1,
        time,
        tool: ctx.tool,
        call_id: ctx.toolCallId,
        effect: ctx.definition.effect,
        decision: decisionOf(ctx.decision),
        duration_ms: durationMs,
        success,
        code,
        args_sha256: sha256Hex(canonical),
      };
      if (includeArguments) rec.arguments = JSON.parse(canonical);
      if (ctx.run) {
        rec.run_id = ctx.run.runId;
        rec.agent_id = ctx.run.agentId;
        rec.turn = ctx.run.turn;
      }
      if (log.appendGrouped !== undefined) await log.appendGrouped(rec);
      else await log.append(rec);
    } catch (err) {
      report(ctx, err);
    }
  }
}

function decisionOf(d: CallDecision | undefined): HistoryDecision | null {
  if (d === undefined || d === null) return null;
  const out: HistoryDecision = { action: d.action, by: d.by };
  if (typeof d.approved === "boolean") out.approved = d.approved;
  return out;
}

// ---------------------------------------------------------------- reading

const READ_CHUNK = 1 << 16;
const READ_LIMITS = { maxBytes: HARD_MAX_BYTES, maxDepth: HARD_MAX_DEPTH };

/**
 * Read the records of the log at `path` that match `filter`, in file order.
 *
 * Each line is parsed with the strict core. Skipped silently: blank lines, a
 * final line without its newline (a torn tail), and torn fragments isolated
 * by a later append (see the module notes). Throws {@link HistoryError} when
 * the file cannot be read, or naming the file and 1-based line number of any
 * other unparsable line or a line that is not a version-1 record.
 */
export function readHistory(path: string, filter: HistoryFilter = {}): HistoryRecord[] {
  const out: HistoryRecord[] = [];
  const sinceMs = filter.since?.getTime();
  if (sinceMs !== undefined && Number.isNaN(sinceMs)) throw new RangeError("filter.since is an invalid Date");
  for (const rec of iterateLines(path)) {
    if (filter.tool !== undefined && rec.tool !== filter.tool) continue;
    if (filter.failed !== undefined && rec.success === filter.failed) continue;
    if (sinceMs !== undefined && Date.parse(rec.time) < sinceMs) continue;
    out.push(rec);
  }
  return out;
}

function* iterateLines(path: string): Generator<HistoryRecord> {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY);
    if (!fstatSync(fd).isFile()) {
      closeSync(fd);
      throw new HistoryError(path, `history file ${path} is not a regular file`);
    }
  } catch (e) {
    if (e instanceof HistoryError) throw e;
    throw new HistoryError(path, `cannot open history file ${path}: ${errnoCode(e)}`);
  }
  try {
    const buf = new Uint8Array(READ_CHUNK);
    let carry: Uint8Array[] = [];
    let lineNo = 0;
    for (;;) {
      let n: number;
      try {
        n = readSync(fd, buf, 0, buf.length, null);
      } catch (e) {
        throw new HistoryError(path, `cannot read history file ${path}: ${errnoCode(e)}`);
      }
      if (n === 0) break; // whatever is left in `carry` is a torn tail: ignored
      let from = 0;
      for (let i = 0; i < n; i++) {
        if (buf[i] !== NEWLINE) continue;
        lineNo++;
        const piece = buf.slice(from, i);
        let line: Uint8Array;
        if (carry.length === 0) line = piece;
        else {
          carry.push(piece);
          line = concatBytes(carry);
          carry = [];
        }
        from = i + 1;
        const rec = parseLine(path, lineNo, line);
        if (rec !== null) yield rec;
      }
      if (from < n) carry.push(buf.slice(from, n));
    }
  } finally {
    closeSync(fd);
  }
}

function isBlank(line: Uint8Array): boolean {
  for (const b of line) if (b !== 0x20 && b !== 0x09 && b !== 0x0d) return false;
  return true;
}

/** Whether `bytes` is a truncated JSON object: the strict parser runs out of data exactly at its end. */
function isTornFragment(bytes: Uint8Array, error?: { code: string; offset: number; message: string }): boolean {
  if (bytes.length === 0 || bytes[0] !== 0x7b) return false;
  const e =
    error ??
    (() => {
      const r = parseStrict(bytes, READ_LIMITS);
      return r.ok ? undefined : r.error;
    })();
  return e !== undefined && e.code === "JSON_PARSE" && e.offset === bytes.length && e.message === "unexpected end of data";
}

/** The bytes of `{"v":`, where every record starts. */
const RECORD_START = ENCODER.encode('{"v":');

/**
 * A torn fragment written by one process, directly followed by a whole record
 * appended by another process that did not know about the tear: the record
 * after the fragment, or `null` when the line is not that.
 */
function recordAfterFragment(line: Uint8Array): HistoryRecord | null {
  outer: for (let at = 1; at + RECORD_START.length <= line.length; at++) {
    for (let k = 0; k < RECORD_START.length; k++) if (line[at + k] !== RECORD_START[k]) continue outer;
    const rest = parseStrict<unknown>(line.subarray(at), READ_LIMITS);
    if (rest.ok && recordProblem(rest.value) === null && isTornFragment(line.subarray(0, at))) return rest.value as HistoryRecord;
  }
  return null;
}

/** One complete line: a record, `null` to skip, or a thrown {@link HistoryError}. */
function parseLine(path: string, lineNo: number, line: Uint8Array): HistoryRecord | null {
  if (isBlank(line)) return null;
  const parsed = parseStrict<unknown>(line, READ_LIMITS);
  if (!parsed.ok) {
    // Checked first: fragment + record can itself look like a truncated object.
    const after = recordAfterFragment(line);
    if (after !== null) return after;
    // A torn fragment isolated by a later append: a truncated object.
    if (isTornFragment(line, parsed.error)) return null;
    const e = parsed.error;
    throw new HistoryError(path, `${path}:${lineNo}: corrupt history line: ${e.message} at column ${e.column}`, lineNo);
  }
  const problem = recordProblem(parsed.value);
  if (problem !== null) throw new HistoryError(path, `${path}:${lineNo}: not a history record: ${problem}`, lineNo);
  return parsed.value as HistoryRecord;
}

const ISO_UTC_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const HEX64 = /^[0-9a-f]{64}$/;

/** Why `v` is not a well-formed version-1 record, or `null` when it is. */
function recordProblem(v: unknown): string | null {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return "not an object";
  const r = v as Record<string, unknown>;
  if (r.v !== HISTORY_RECORD_VERSION) return `unsupported version ${JSON.stringify(r.v)}`;
  if (typeof r.time !== "string" || !ISO_UTC_MS.test(r.time) || Number.isNaN(Date.parse(r.time)))
    return `"time" must be an ISO 8601 UTC time`;
  if (typeof r.tool !== "string") return `"tool" must be a string`;
  if (r.call_id !== null && typeof r.call_id !== "string") return `"call_id" must be a string or null`;
  if (r.effect !== "read_only" && r.effect !== "side_effecting") return `"effect" must be read_only or side_effecting`;
  if (r.decision !== null) {
    const d = r.decision as Record<string, unknown>;
    if (typeof d !== "object" || Array.isArray(d)) return `"decision" must be an object or null`;
    if (d.action !== "allow" && d.action !== "deny" && d.action !== "require_approval") return `"decision.action" is invalid`;
    if (typeof d.by !== "string") return `"decision.by" must be a string`;
    if (d.approved !== undefined && typeof d.approved !== "boolean") return `"decision.approved" must be a boolean`;
  }
  if (typeof r.duration_ms !== "number" || !(r.duration_ms >= 0)) return `"duration_ms" must be a non-negative number`;
  if (typeof r.success !== "boolean") return `"success" must be a boolean`;
  if (r.code !== null && typeof r.code !== "string") return `"code" must be a string or null`;
  if (typeof r.args_sha256 !== "string" || !HEX64.test(r.args_sha256)) return `"args_sha256" must be 64 hex digits`;
  if (r.run_id !== undefined && typeof r.run_id !== "string") return `"run_id" must be a string`;
  if (r.agent_id !== undefined && typeof r.agent_id !== "string") return `"agent_id" must be a string`;
  if (r.turn !== undefined && !Number.isSafeInteger(r.turn)) return `"turn" must be an integer`;
  return null;
}
