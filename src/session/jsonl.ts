/**
 * Session journals as JSONL files: one file per session named
 * `sha256(session_id).jsonl` (ids cannot escape the directory), every branch
 * in one file. Each transaction (an append, a group of them, a recovery)
 * truncates a torn tail left by a crash, then writes all its lines in one
 * write and fsyncs the file once, all under a cross-process lock
 * (`<file>.lock`, taken once per transaction); the directory is fsynced (best
 * effort) the first time a descriptor writes the file. The file stays open
 * between transactions (the last few journals of the process). Lines are
 * parsed by the strict core.
 * A torn last line is ignored when read, the first line included (the
 * session is then empty), and reported through `onRepair` when cut off.
 * A branch taken for a run (`claimBranch`) is a file
 * `<file>.branch-<hash of the branch>` created atomically, holding the pid.
 * Image blobs are files `<hash>.blobs/<sha256>` beside the journal.
 *
 * @module
 */
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { holdCleanup, type ProcessCleanup } from "../core/cleanup.ts";
import { parseStrict } from "../core/index.ts";
import {
  type BranchClaim,
  busyMessage,
  envelopeProblem,
  JournalIndex,
  type JournalRepair,
  JournalStorage,
  checkLines,
  type ImportRecordsOptions,
  normalizeId,
  RECORD_LIMITS,
  recordLine,
  serializeRecord,
  sessionExistsMessage,
  validateRecords,
} from "./journal.ts";
import { assertBlobName } from "./blobs.ts";
import { breakStale, lockExists, pidAlive, readLock, tryCreate, withFileLock } from "./lock.ts";
import { makeStateDir } from "./state-dir.ts";
import {
  JOURNAL_SCHEMA_VERSION,
  SessionBranchBusyError,
  SessionConflictError,
  SessionSchemaVersionError,
  SessionSerializationError,
  SessionStorageError,
  SessionValidationError,
  type SessionRecord,
} from "./types.ts";

export interface JsonlSessionStorageOptions {
  /** How long to wait for the journal lock; null waits forever. Default 10 000 ms. */
  lockTimeoutMs?: number | null;
  /**
   * Told of each torn last line cut off before a write (a crash, or a full
   * disk, cut the previous write short): where it was and how long.
   */
  onRepair?: (repair: JournalRepair) => void;
}

/** A journal file `listSessions` cannot name a session for, and why. */
export interface UnreadableJournal {
  file: string;
  problem: string;
}

interface Cached {
  index: JournalIndex;
  /** Bytes of fully valid lines. */
  validLength: number;
  /** Bytes after them with no newline: a torn last line (0 when none). */
  torn: number;
  /** The file's inode when last read (null: there was no file). */
  ino: number | null;
}

/** A journal file this process keeps open for appending. */
interface OpenJournal {
  fd: number;
  ino: number;
  /** Whether the folder was fsynced since this descriptor was opened (so the file's name is durable). */
  folderSynced: boolean;
}

/**
 * The journal files this process appended to last, kept open (by path) so
 * an append does not open and close the file; at most {@link OPEN_JOURNALS},
 * the least recently used closed first. A descriptor is used only under the
 * journal's lock and only while the path still names its inode (a journal
 * deleted, or replaced by an import, is opened again).
 */
const openJournals = new Map<string, OpenJournal>();
const OPEN_JOURNALS = 8;

function forgetJournal(file: string): void {
  const j = openJournals.get(file);
  if (j === undefined) return;
  openJournals.delete(file);
  try {
    fs.closeSync(j.fd);
  } catch {
    /* already closed */
  }
}

/** What a branch claim file holds. */
interface ClaimContent {
  pid: number;
  holder: string | null;
  since: string | null;
}

function parseClaim(text: string): ClaimContent | null {
  try {
    const v = JSON.parse(text) as Record<string, unknown>;
    if (!Number.isInteger(v.pid) || (v.pid as number) <= 0) return null;
    return {
      pid: v.pid as number,
      holder: typeof v.holder === "string" ? v.holder : null,
      since: typeof v.since === "string" ? v.since : null,
    };
  } catch {
    return null;
  }
}

/** A storage error for an I/O failure; under Deno a refused permission names the flag. */
function ioError(what: string, e: unknown): SessionStorageError {
  const err = e as { name?: string; message?: string };
  const denied = err?.name === "NotCapable" || err?.name === "PermissionDenied" || /--allow-write/.test(err?.message ?? "");
  const hint =
    denied && "Deno" in globalThis
      ? " (under Deno, a session needs --allow-write: pass it to deno run, e.g. --allow-write=.agentcore)"
      : "";
  return new SessionStorageError(`${what}: ${err?.message ?? String(e)}${hint}`);
}

/**
 * Releases of the branch claims this process holds. While any is held,
 * {@link releaseHeldClaims} is an exit clean-up (`src/core/cleanup.ts`): the
 * host (CLI, daemon) runs it as the process exits. This module never
 * listens to the process itself.
 */
const heldClaims = new Set<() => void>();
const CLAIMS_CLEANUP: ProcessCleanup = { exit: releaseHeldClaims };
function releaseOnExit(release: () => void): void {
  heldClaims.add(release);
  holdCleanup(CLAIMS_CLEANUP);
}

/** Release every branch claim this process still holds (synchronous: for the process's exit). */
export function releaseHeldClaims(): void {
  for (const r of [...heldClaims]) r();
}

/** The session id in a torn first record, if the fragment still holds it (checked against the file name). */
function idFromFragment(fragment: Buffer, fileName: string): string | null {
  const text = fragment.toString("utf8");
  for (const m of text.matchAll(/"session_id":"((?:[^"\\]|\\.)*)"/g)) {
    let id: unknown;
    try {
      id = JSON.parse(`"${m[1]}"`);
    } catch {
      continue;
    }
    if (typeof id === "string" && id.trim() !== "" && createHash("sha256").update(id.trim()).digest("hex") + ".jsonl" === fileName)
      return id.trim();
  }
  return null;
}

const NL = 0x0a;

/**
 * Durable sessions as JSONL files in `dir` (one file per session, every
 * branch in it), safe across processes: what the CLI and the daemon use.
 */
export class JsonlSessionStorage extends JournalStorage {
  readonly dir: string;
  readonly lockTimeoutMs: number | null;
  #cache = new Map<string, Cached>();

  readonly onRepair: ((repair: JournalRepair) => void) | undefined;

  constructor(dir: string, options: JsonlSessionStorageOptions = {}) {
    super();
    this.dir = path.resolve(dir);
    this.lockTimeoutMs = options.lockTimeoutMs === undefined ? 10_000 : options.lockTimeoutMs;
    this.onRepair = options.onRepair;
  }

  /** The journal file of a session. */
  fileFor(sessionId: string): string {
    return path.join(this.dir, createHash("sha256").update(normalizeId(sessionId)).digest("hex") + ".jsonl");
  }

  /** The blob directory of a session: `<journal without .jsonl>.blobs/`, one file per image named by its SHA-256. */
  blobDir(sessionId: string): string {
    return this.fileFor(sessionId).replace(/\.jsonl$/, ".blobs");
  }

  /**
   * Writes an image blob (0600, in a 0700 directory beside the journal):
   * to a temporary file, fsynced, then renamed into place, so a blob is
   * whole or absent. A blob already there with these bytes is left as it is.
   */
  override async putBlob(sessionId: string, sha256: string, bytes: Uint8Array): Promise<void> {
    assertBlobName(sessionId, sha256);
    this.#ensureDir();
    const dir = this.blobDir(sessionId);
    const file = path.join(dir, sha256);
    try {
      fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
      // Already there with these bytes: nothing to do (a blob whose bytes were changed is written again).
      if (fs.existsSync(file) && createHash("sha256").update(fs.readFileSync(file)).digest("hex") === sha256) return;
      const tmp = `${file}.tmp-${process.pid}-${Math.random().toString(16).slice(2)}`;
      const fd = fs.openSync(tmp, "wx", 0o600);
      try {
        fs.writeSync(fd, bytes);
        fs.fsyncSync(fd);
      } finally {
        fs.closeSync(fd);
      }
      fs.renameSync(tmp, file);
    } catch (e) {
      throw new SessionStorageError(`cannot write image blob ${sha256} of session '${sessionId}' (${file}): ${(e as Error).message}`);
    }
  }

  override async getBlob(sessionId: string, sha256: string): Promise<Uint8Array | null> {
    assertBlobName(sessionId, sha256);
    const file = path.join(this.blobDir(sessionId), sha256);
    try {
      return new Uint8Array(fs.readFileSync(file));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw new SessionStorageError(`cannot read image blob ${sha256} of session '${sessionId}' (${file}): ${(e as Error).message}`);
    }
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
    } catch {
      /* already gone */
    }
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

  /** The claim file of a session branch: `<journal>.branch-<hash of the branch id>`. */
  branchClaimFile(sessionId: string, branchId: string): string {
    return `${this.fileFor(sessionId)}.branch-${createHash("sha256").update(branchId).digest("hex").slice(0, 16)}`;
  }

  /**
   * Take a branch for a run: checks that the journal can be written (the
   * directory is created), then creates the claim file atomically. A claim
   * whose pid is dead is stale and taken over; one whose pid lives throws
   * {@link SessionBranchBusyError}. The claim is also dropped when the
   * process exits (a SIGKILL leaves it, stale).
   */
  override async claimBranch(sessionId: string, branchId = "main", holder: string | null = null): Promise<BranchClaim> {
    const id = normalizeId(sessionId);
    const file = this.fileFor(id);
    this.#ensureDir();
    // The journal must take appends (a read-only file, a read-only mount, Deno without --allow-write).
    try {
      fs.closeSync(fs.openSync(file, fs.constants.O_WRONLY | fs.constants.O_APPEND));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw ioError(`cannot write the session journal ${file}`, e);
    }
    const claimFile = this.branchClaimFile(id, branchId);
    const token = crypto.randomUUID().replace(/-/g, "");
    const since = new Date().toISOString();
    const content = JSON.stringify({ pid: process.pid, token, session_id: id, branch_id: branchId, holder, since }) + "\n";
    for (let attempt = 0; ; attempt++) {
      let created: boolean;
      try {
        created = tryCreate(claimFile, content, token);
      } catch (e) {
        throw ioError(`cannot take branch '${branchId}' of session '${id}' (${claimFile})`, e);
      }
      if (created) break;
      const held = readLock(claimFile);
      if (held === null) continue; // released meanwhile
      const c = parseClaim(held);
      if (c !== null && pidAlive(c.pid))
        throw new SessionBranchBusyError(busyMessage(id, branchId, c.pid, c.holder, c.since), id, branchId, c.pid, c.holder, c.since);
      if (attempt >= 100)
        throw new SessionStorageError(
          `cannot take branch '${branchId}' of session '${id}': its stale claim ${claimFile} cannot be removed`,
        );
      breakStale(claimFile, held, token); // its process is gone
    }
    const release = () => {
      heldClaims.delete(release);
      if (readLock(claimFile) === content) {
        try {
          fs.unlinkSync(claimFile);
        } catch {
          /* gone */
        }
      }
    };
    releaseOnExit(release);
    return { sessionId: id, branchId, release };
  }

  override async branchOwner(sessionId: string, branchId = "main"): Promise<number | null> {
    const held = readLock(this.branchClaimFile(sessionId, branchId));
    const c = held === null ? null : parseClaim(held);
    return c !== null && pidAlive(c.pid) ? c.pid : null;
  }

  protected override async breakBranchClaim(sessionId: string, branchId: string): Promise<void> {
    try {
      fs.unlinkSync(this.branchClaimFile(sessionId, branchId));
    } catch {
      /* none */
    }
  }

  override async exists(sessionId: string): Promise<boolean> {
    return fs.existsSync(this.fileFor(normalizeId(sessionId)));
  }

  /** The torn last line of a session's journal (not cut off yet), or null. */
  async tornTail(sessionId: string): Promise<JournalRepair | null> {
    const id = normalizeId(sessionId);
    const file = this.fileFor(id);
    if (!fs.existsSync(file)) return null;
    return await withFileLock(file + ".lock", this.lockTimeoutMs, () => {
      const c = this.#read(id, file);
      return c.torn === 0 ? null : { session_id: id, file, line: c.index.records.length + 1, bytes: c.torn, repaired: false };
    });
  }

  override async repair(sessionId: string): Promise<JournalRepair | null> {
    const id = normalizeId(sessionId);
    const file = this.fileFor(id);
    if (!fs.existsSync(file)) return null;
    return await withFileLock(file + ".lock", this.lockTimeoutMs, () => {
      const c = this.#read(id, file);
      if (c.torn === 0) return null;
      const repair = { session_id: id, file, line: c.index.records.length + 1, bytes: c.torn, repaired: true };
      let fd: number;
      try {
        fd = fs.openSync(file, fs.constants.O_RDWR);
      } catch (e) {
        throw ioError(`cannot open ${file}`, e);
      }
      try {
        fs.ftruncateSync(fd, c.validLength);
        fs.fsyncSync(fd);
      } catch (e) {
        throw ioError(`cannot repair ${file}`, e);
      } finally {
        fs.closeSync(fd);
      }
      c.torn = 0;
      this.onRepair?.(repair);
      return repair;
    });
  }

  async listSessions(): Promise<string[]> {
    return (await this.#scan()).ids;
  }

  /**
   * Journal files in the directory that name no session: empty, a first
   * record torn before its session id, or a first line that is not a record.
   * `listSessions` leaves them out; a caller should say so.
   */
  async unreadableJournals(): Promise<UnreadableJournal[]> {
    return (await this.#scan()).unreadable;
  }

  async #scan(): Promise<{ ids: string[]; unreadable: UnreadableJournal[] }> {
    let names: string[];
    try {
      names = fs.readdirSync(this.dir).filter((n) => /^[0-9a-f]{64}\.jsonl$/.test(n));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return { ids: [], unreadable: [] };
      throw new SessionStorageError(`cannot list ${this.dir}: ${(e as Error).message}`);
    }
    const ids: string[] = [];
    const unreadable: UnreadableJournal[] = [];
    for (const n of names.sort()) {
      const file = path.join(this.dir, n);
      let first = this.#firstLine(file);
      // A first record still being written by another process: look again under the journal's lock.
      if (first !== null && !first.whole) first = await withFileLock(file + ".lock", this.lockTimeoutMs, () => this.#firstLine(file));
      if (first === null) continue; // removed meanwhile
      if (first.bytes.length === 0) {
        unreadable.push({ file, problem: "empty: it holds no record" });
        continue;
      }
      if (!first.whole) {
        const id = idFromFragment(first.bytes, n);
        if (id !== null) ids.push(id);
        else
          unreadable.push({
            file,
            problem: `its first record is torn (${first.bytes.length} bytes, a write cut short) before its session id: it holds no record; the next run of that session cuts it off`,
          });
        continue;
      }
      const parsed = parseStrict<SessionRecord>(first.bytes, RECORD_LIMITS);
      if (parsed.ok && parsed.value !== null && typeof parsed.value === "object" && typeof parsed.value.session_id === "string")
        ids.push(parsed.value.session_id);
      else
        unreadable.push({ file, problem: `line 1 is not a journal record${parsed.ok ? "" : ` (invalid JSON: ${parsed.error.message})`}` });
    }
    return { ids: ids.sort(), unreadable };
  }

  /** The first line of a file (without its newline) and whether it is whole; null when the file is gone. */
  #firstLine(file: string): { bytes: Buffer; whole: boolean } | null {
    let fd: number;
    try {
      fd = fs.openSync(file, "r");
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw new SessionStorageError(`cannot read ${file}: ${(e as Error).message}`);
    }
    try {
      const chunks: Buffer[] = [];
      let pos = 0;
      for (;;) {
        const buf = Buffer.alloc(64 * 1024);
        const got = fs.readSync(fd, buf, 0, buf.length, pos);
        if (got === 0) return { bytes: Buffer.concat(chunks), whole: false };
        const end = buf.subarray(0, got).indexOf(NL);
        if (end >= 0) {
          chunks.push(buf.subarray(0, end));
          return { bytes: Buffer.concat(chunks), whole: true };
        }
        chunks.push(buf.subarray(0, got));
        pos += got;
      }
    } finally {
      fs.closeSync(fd);
    }
  }

  protected async transact<T>(
    sessionId: string,
    fn: (index: JournalIndex, write: (record: SessionRecord) => void) => T,
    readOnly: boolean,
  ): Promise<T> {
    const file = this.fileFor(sessionId);
    if (readOnly && !fs.existsSync(file) && !lockExists(file + ".lock"))
      return fn(new JournalIndex(sessionId), () => {
        throw new Error("read-only");
      });
    if (!readOnly) this.#ensureDir();
    return await withFileLock(file + ".lock", this.lockTimeoutMs, () => {
      const cached = this.#read(sessionId, file);
      // The transaction's lines, written together once `fn` returns: one write, one fsync.
      const lines: string[] = [];
      const write = (record: SessionRecord) => {
        const line = recordLine(record); // plain JSON, small enough: checked as it is serialised
        cached.index.add(JSON.parse(line) as SessionRecord); // validates by applying; the index keeps its own copy
        lines.push(line);
      };
      let result: T;
      try {
        result = fn(cached.index, write);
      } catch (e) {
        // All or none: the index may hold records of this transaction that were not written.
        if (lines.length > 0) this.#cache.delete(sessionId);
        throw e;
      }
      if (lines.length === 0) return result;
      const bytes = Buffer.from(lines.length === 1 ? lines[0]! : lines.join(""), "utf8");
      const tornLine = cached.index.records.length - lines.length + 1;
      let cut: number;
      try {
        cut = this.#appendLines(file, bytes, cached);
      } catch (e) {
        this.#cache.delete(sessionId);
        throw e;
      }
      cached.validLength += bytes.length;
      cached.torn = 0;
      if (cut > 0) this.onRepair?.({ session_id: sessionId, file, line: tornLine, bytes: cut, repaired: true });
      return result;
    });
  }

  /**
   * Write a whole session (see JournalStorage.importRecords) as one file:
   * written to a temporary file next to the journal, fsynced, then renamed
   * into place under the journal's lock, so a crash leaves either no
   * session or all of it.
   */
  override async importRecords(
    records: readonly SessionRecord[],
    options: ImportRecordsOptions = {},
  ): Promise<{ session_id: string; records: number }> {
    const id = validateRecords(records);
    checkLines(records, options.lines);
    const file = this.fileFor(id);
    this.#ensureDir();
    return await withFileLock(file + ".lock", this.lockTimeoutMs, () => {
      if (fs.existsSync(file)) {
        let count: number | null = null;
        try {
          count = this.#read(id, file).index.records.length;
        } catch {
          /* unreadable: it exists all the same */
        }
        throw new SessionConflictError(sessionExistsMessage(id, count));
      }
      const tmp = `${file}.import-${crypto.randomUUID().slice(0, 8)}`;
      try {
        const fd = fs.openSync(tmp, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL, 0o600);
        try {
          const text = options.lines !== undefined ? options.lines.map((l) => `${l}\n`) : records.map((r) => serializeRecord(r));
          const data = Buffer.from(text.join(""), "utf8");
          let off = 0;
          while (off < data.length) off += fs.writeSync(fd, data, off, data.length - off);
          fs.fsyncSync(fd);
        } finally {
          fs.closeSync(fd);
        }
        fs.renameSync(tmp, file);
      } catch (e) {
        try {
          fs.unlinkSync(tmp);
        } catch {
          /* not there */
        }
        throw ioError(`cannot write ${file}`, e);
      }
      syncFolder(this.dir);
      this.#cache.delete(id);
      return { session_id: id, records: records.length };
    });
  }

  /** The journal's whole lines, as the file holds them (a torn tail left out). */
  override async journalText(sessionId: string): Promise<string> {
    const id = normalizeId(sessionId);
    const file = this.fileFor(id);
    if (!fs.existsSync(file)) return "";
    return await withFileLock(file + ".lock", this.lockTimeoutMs, () => {
      const valid = this.#read(id, file).validLength;
      const fd = fs.openSync(file, "r");
      try {
        const buf = Buffer.alloc(valid);
        let off = 0;
        while (off < valid) {
          const n = fs.readSync(fd, buf, off, valid - off, off);
          if (n === 0) break;
          off += n;
        }
        return buf.subarray(0, off).toString("utf8");
      } catch (e) {
        throw new SessionStorageError(`cannot read ${file}: ${(e as Error).message}`);
      } finally {
        fs.closeSync(fd);
      }
    });
  }

  #ensureDir(): void {
    try {
      makeStateDir(this.dir, 0o700); // a new .agentcore/ gets its .gitignore
    } catch (e) {
      throw ioError(`cannot create ${this.dir}`, e);
    }
  }

  /** Bring the cached index up to date with the file (reads only the new bytes). */
  #read(sessionId: string, file: string): Cached {
    let size: number;
    let ino: number | null;
    try {
      const st = fs.statSync(file);
      size = st.size;
      ino = st.ino;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw new SessionStorageError(`cannot read ${file}: ${(e as Error).message}`);
      size = 0;
      ino = null;
    }
    let cached = this.#cache.get(sessionId);
    if (cached === undefined || size < cached.validLength || ino !== cached.ino) {
      cached = { index: new JournalIndex(sessionId), validLength: 0, torn: 0, ino };
      this.#cache.set(sessionId, cached);
    }
    cached.torn = 0;
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
          // A torn tail (the first line too: the session is then empty):
          // ignored; the next append, or repair(), cuts it off.
          cached.torn = buf.length - start;
          break;
        }
        const lineNo = cached.index.records.length + 1;
        const parsed = parseStrict<SessionRecord>(buf.subarray(start, end), RECORD_LIMITS);
        if (!parsed.ok) {
          // Not a torn tail: a complete line (maybe a fragment a later write was glued to). Nothing is dropped silently.
          throw new SessionSerializationError(
            `Session journal ${file}: invalid JSON at line ${lineNo}: ${parsed.error.message}; agentcore never writes such a line and changes nothing in this journal: ` +
              `keep a copy of the file, then mend or delete line ${lineNo} by hand (records after it may depend on it), or move the file away to start the session afresh`,
            file,
            lineNo,
          );
        }
        const problem = envelopeProblem(parsed.value);
        if (problem !== null) {
          const v = (parsed.value as { journal_schema_version?: unknown } | null)?.journal_schema_version;
          if (parsed.value !== null && typeof parsed.value === "object" && v !== JOURNAL_SCHEMA_VERSION) {
            throw new SessionSchemaVersionError(
              `Session journal ${file}: line ${lineNo}: unsupported journal_schema_version ${JSON.stringify(v)}; expected ${JOURNAL_SCHEMA_VERSION}`,
              file,
              lineNo,
            );
          }
          throw new SessionSerializationError(`Session journal ${file}: invalid record at line ${lineNo}: ${problem}`, file, lineNo);
        }
        try {
          cached.index.add(parsed.value);
        } catch (e) {
          if (e instanceof SessionValidationError)
            throw new SessionSerializationError(`Session journal ${file}: line ${lineNo}: ${e.message}`, file, lineNo);
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

  /**
   * Append `bytes` (whole lines) to the journal under its lock, cutting off a
   * torn tail first, in one write, then fsync the file; the folder too the
   * first time this descriptor writes (the file may have just been created,
   * or created by a process that crashed before it fsynced the folder).
   * Returns the bytes cut off.
   */
  #appendLines(file: string, bytes: Buffer, cached: Cached): number {
    let j = openJournals.get(file);
    if (j !== undefined && j.ino !== cached.ino) {
      forgetJournal(file); // the path names another file now (deleted, or replaced by an import)
      j = undefined;
    }
    if (j === undefined) {
      let fd: number;
      try {
        fd = fs.openSync(file, fs.constants.O_RDWR | fs.constants.O_CREAT | fs.constants.O_APPEND, 0o600);
      } catch (e) {
        throw ioError(`cannot open ${file}`, e);
      }
      j = { fd, ino: -1, folderSynced: false };
      openJournals.set(file, j);
      if (openJournals.size > OPEN_JOURNALS) forgetJournal(openJournals.keys().next().value!);
    } else {
      // most recently used last
      openJournals.delete(file);
      openJournals.set(file, j);
    }
    let cut = 0;
    try {
      const st = fs.fstatSync(j.fd);
      j.ino = st.ino;
      cached.ino = st.ino;
      if (st.size > cached.validLength) {
        fs.ftruncateSync(j.fd, cached.validLength); // repair a torn tail
        cut = st.size - cached.validLength;
      }
      let off = 0;
      while (off < bytes.length) off += fs.writeSync(j.fd, bytes, off, bytes.length - off);
      fs.fsyncSync(j.fd);
    } catch (e) {
      forgetJournal(file);
      throw ioError(`cannot append to ${file}`, e);
    }
    if (!j.folderSynced) {
      syncFolder(this.dir);
      j.folderSynced = true;
    }
    return cut;
  }
}

/** fsync a folder, so a file created or renamed in it survives a crash; best effort (some file systems refuse). */
function syncFolder(dir: string): void {
  try {
    const dfd = fs.openSync(dir, "r");
    try {
      fs.fsyncSync(dfd);
    } finally {
      fs.closeSync(dfd);
    }
  } catch {
    /* best effort */
  }
}
