/**
 * Session journals as JSONL files: one file per session named
 * `sha256(session_id).jsonl` (ids cannot escape the directory), every branch
 * in one file. Each append truncates a torn tail left by a crash, writes the
 * whole line, fsyncs the file and (best effort) the directory, all under a
 * cross-process lock (`<file>.lock`). Lines are parsed by the strict core.
 *
 * @module
 */
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { parseStrict } from "../core/index.ts";
import { envelopeProblem, JournalIndex, JournalStorage, normalizeId, serializeRecord } from "./journal.ts";
import { pidAlive, withFileLock } from "./lock.ts";
import { makeStateDir } from "./state-dir.ts";
import { JOURNAL_SCHEMA_VERSION, SessionSchemaVersionError, SessionSerializationError, SessionStorageError, SessionValidationError, type SessionRecord } from "./types.ts";

export interface JsonlSessionStorageOptions {
  /** How long to wait for the journal lock; null waits forever. Default 10 000 ms. */
  lockTimeoutMs?: number | null;
}

interface Cached {
  index: JournalIndex;
  /** Bytes of fully valid lines. */
  validLength: number;
}

const NL = 0x0a;

export class JsonlSessionStorage extends JournalStorage {
  readonly dir: string;
  readonly lockTimeoutMs: number | null;
  #cache = new Map<string, Cached>();

  constructor(dir: string, options: JsonlSessionStorageOptions = {}) {
    super();
    this.dir = path.resolve(dir);
    this.lockTimeoutMs = options.lockTimeoutMs === undefined ? 10_000 : options.lockTimeoutMs;
  }

  /** The journal file of a session. */
  fileFor(sessionId: string): string {
    return path.join(this.dir, createHash("sha256").update(normalizeId(sessionId)).digest("hex") + ".jsonl");
  }

  /** The live-run mark of a run: `<journal>.run-<hash of the run id>`, holding "<pid> <run id>". */
  runMarkFile(sessionId: string, runId: string): string {
    return `${this.fileFor(sessionId)}.run-${createHash("sha256").update(runId).digest("hex").slice(0, 16)}`;
  }

  /** Writes the run's mark file (seen by `recoverRuns` in any process). */
  override async markRunLive(sessionId: string, runId: string): Promise<void> {
    this.#ensureDir();
    try {
      fs.writeFileSync(this.runMarkFile(sessionId, runId), `${process.pid} ${runId}\n`, { mode: 0o600 });
    } catch (e) {
      throw new SessionStorageError(`cannot write the run mark of ${runId}: ${(e as Error).message}`);
    }
  }

  override async clearRunLive(sessionId: string, runId: string): Promise<void> {
    try {
      fs.unlinkSync(this.runMarkFile(sessionId, runId));
    } catch { /* already gone */ }
  }

  /** The pid in the run's mark while that process lives; null without a mark, or when its process is gone. */
  override async runOwner(sessionId: string, runId: string): Promise<number | null> {
    let text: string;
    try {
      text = fs.readFileSync(this.runMarkFile(sessionId, runId), "utf8");
    } catch {
      return null;
    }
    const [pid, id] = text.trim().split(" ");
    const n = Number(pid);
    // A mark torn by a crash, or another run's (hash collision), names no owner.
    if (id !== runId || !Number.isInteger(n) || n <= 0) return null;
    return pidAlive(n) ? n : null;
  }

  async listSessions(): Promise<string[]> {
    let names: string[];
    try {
      names = fs.readdirSync(this.dir).filter((n) => /^[0-9a-f]{64}\.jsonl$/.test(n));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw new SessionStorageError(`cannot list ${this.dir}: ${(e as Error).message}`);
    }
    const ids: string[] = [];
    for (const n of names.sort()) {
      const file = path.join(this.dir, n);
      const fd = fs.openSync(file, "r");
      try {
        const buf = Buffer.alloc(64 * 1024);
        const got = fs.readSync(fd, buf, 0, buf.length, 0);
        const end = buf.subarray(0, got).indexOf(NL);
        if (end < 0) continue; // empty, or a first record still being written
        const parsed = parseStrict<SessionRecord>(buf.subarray(0, end));
        if (parsed.ok && typeof parsed.value.session_id === "string") ids.push(parsed.value.session_id);
      } finally {
        fs.closeSync(fd);
      }
    }
    return ids.sort();
  }

  protected async transact<T>(sessionId: string, fn: (index: JournalIndex, write: (record: SessionRecord) => void) => T, readOnly: boolean): Promise<T> {
    const file = this.fileFor(sessionId);
    if (readOnly && !fs.existsSync(file) && !fs.existsSync(file + ".lock")) return fn(new JournalIndex(sessionId), () => {
      throw new Error("read-only");
    });
    if (!readOnly) this.#ensureDir();
    return await withFileLock(file + ".lock", this.lockTimeoutMs, () => {
      const cached = this.#read(sessionId, file);
      const write = (record: SessionRecord) => {
        const line = Buffer.from(serializeRecord(record), "utf8");
        cached.index.add(record); // validates by applying
        try {
          this.#writeLine(file, line, cached.validLength);
        } catch (e) {
          this.#cache.delete(sessionId);
          throw e;
        }
        cached.validLength += line.length;
      };
      return fn(cached.index, write);
    });
  }

  #ensureDir(): void {
    try {
      makeStateDir(this.dir, 0o700); // a new .agentcore/ gets its .gitignore
    } catch (e) {
      throw new SessionStorageError(`cannot create ${this.dir}: ${(e as Error).message}`);
    }
  }

  /** Bring the cached index up to date with the file (reads only the new bytes). */
  #read(sessionId: string, file: string): Cached {
    let size: number;
    try {
      size = fs.statSync(file).size;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw new SessionStorageError(`cannot read ${file}: ${(e as Error).message}`);
      size = 0;
    }
    let cached = this.#cache.get(sessionId);
    if (cached === undefined || size < cached.validLength) {
      cached = { index: new JournalIndex(sessionId), validLength: 0 };
      this.#cache.set(sessionId, cached);
    }
    if (size === cached.validLength) return cached;
    let buf: Buffer;
    try {
      const fd = fs.openSync(file, "r");
      try {
        buf = Buffer.alloc(size - cached.validLength);
        let off = 0;
        while (off < buf.length) {
          const n = fs.readSync(fd, buf, off, buf.length - off, cached.validLength + off);
          if (n === 0) break;
          off += n;
        }
        buf = buf.subarray(0, off);
      } finally {
        fs.closeSync(fd);
      }
    } catch (e) {
      throw new SessionStorageError(`cannot read ${file}: ${(e as Error).message}`);
    }
    let start = 0;
    try {
      for (;;) {
        const end = buf.indexOf(NL, start);
        if (end < 0) {
          if (start < buf.length && cached.index.records.length === 0) {
            throw new SessionSerializationError(`Session journal ${file} has an incomplete first record`, file, 1);
          }
          break; // a torn tail: ignored; the next append truncates it
        }
        const lineNo = cached.index.records.length + 1;
        const parsed = parseStrict<SessionRecord>(buf.subarray(start, end));
        if (!parsed.ok) throw new SessionSerializationError(`Session journal ${file}: invalid JSON at line ${lineNo}: ${parsed.error.message}`, file, lineNo);
        const problem = envelopeProblem(parsed.value);
        if (problem !== null) {
          const v = (parsed.value as { journal_schema_version?: unknown } | null)?.journal_schema_version;
          if (parsed.value !== null && typeof parsed.value === "object" && v !== JOURNAL_SCHEMA_VERSION) {
            throw new SessionSchemaVersionError(`Session journal ${file}: line ${lineNo}: unsupported journal_schema_version ${JSON.stringify(v)}; expected ${JOURNAL_SCHEMA_VERSION}`, file, lineNo);
          }
          throw new SessionSerializationError(`Session journal ${file}: invalid record at line ${lineNo}: ${problem}`, file, lineNo);
        }
        try {
          cached.index.add(parsed.value);
        } catch (e) {
          if (e instanceof SessionValidationError) throw new SessionSerializationError(`Session journal ${file}: line ${lineNo}: ${e.message}`, file, lineNo);
          throw e;
        }
        cached.validLength += end + 1 - start;
        start = end + 1;
      }
    } catch (e) {
      this.#cache.delete(sessionId);
      throw e;
    }
    return cached;
  }

  #writeLine(file: string, line: Buffer, validLength: number): void {
    let fd: number;
    try {
      fd = fs.openSync(file, fs.constants.O_RDWR | fs.constants.O_CREAT | fs.constants.O_APPEND, 0o600);
    } catch (e) {
      throw new SessionStorageError(`cannot open ${file}: ${(e as Error).message}`);
    }
    try {
      if (fs.fstatSync(fd).size > validLength) fs.ftruncateSync(fd, validLength); // repair a torn tail
      let off = 0;
      while (off < line.length) off += fs.writeSync(fd, line, off, line.length - off);
      fs.fsyncSync(fd);
    } catch (e) {
      throw new SessionStorageError(`cannot append to ${file}: ${(e as Error).message}`);
    } finally {
      fs.closeSync(fd);
    }
    try {
      const dfd = fs.openSync(this.dir, "r");
      try {
        fs.fsyncSync(dfd);
      } finally {
        fs.closeSync(dfd);
      }
    } catch { /* best effort */ }
  }
}
