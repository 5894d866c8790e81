/**
 * Moving a session between stores (`agentcore sessions export` / `import`):
 * the journal as JSONL, exactly the lines the store holds (a JSONL file's
 * whole lines, the PostgreSQL store's `line` column), in revision order. An
 * import keeps the lines as they are (unless `as` renames the session), so
 * a journal moves both ways byte for byte.
 *
 * An import checks every line the way the storages check what they read
 * (strict JSON, envelope, schema version, revisions, parents, branches, one
 * session id) before it writes anything, then writes the whole session in
 * one step ({@link JournalStorage.importRecords}): all of it or nothing.
 *
 * Images: a journal names its images by SHA-256; their bytes (blobs) travel
 * beside it ({@link exportSessionBlobs}, the `blobs` option of an import),
 * checked against their hashes, so a session with images moves whole too.
 * The command line keeps them in a `NAME.blobs/` folder beside `NAME.jsonl`,
 * the layout of the JSONL store.
 *
 * @module
 */
import { parseStrict } from "../core/index.ts";
import { type JournalStorage, normalizeId, RECORD_LIMITS, validateRecords } from "./journal.ts";
import { SessionError, type SessionRecord, SessionNotFoundError, SessionValidationError } from "./types.ts";
import { putBlobs, recordImageHashes, SessionBlobError } from "./blobs.ts";
import { sha256Hex } from "../providers/images.ts";

/** The journal of session `sessionId` as JSONL (every record, revision order). Throws SessionNotFoundError when it holds none. */
export async function exportSession(storage: JournalStorage, sessionId: string): Promise<string> {
  const id = normalizeId(sessionId);
  const text = await storage.journalText(id);
  if (text === "") throw new SessionNotFoundError(`no session '${id}' to export`);
  return text;
}

/**
 * The blobs of every image session `sessionId`'s journal names, by hash (an
 * empty map for a session without images). Throws SessionBlobError for a
 * blob the store does not have.
 */
export async function exportSessionBlobs(storage: JournalStorage, sessionId: string): Promise<Map<string, Uint8Array>> {
  const id = normalizeId(sessionId);
  const out = new Map<string, Uint8Array>();
  for (const sha of recordImageHashes(await storage.records(id))) {
    const bytes = await storage.getBlob(id, sha);
    if (bytes === null)
      throw new SessionBlobError(
        `session '${id}': the blob of image ${sha} is missing from the store; the session cannot be exported whole`,
        id,
        sha,
        "missing",
      );
    out.set(sha, bytes);
  }
  return out;
}

/** Options of {@link parseJournal} and {@link importSession}. */
export interface ImportOptions {
  /**
   * The blobs of the journal's images, by hash ({@link exportSessionBlobs}
   * on the other side). Every image the journal names must be here, with
   * bytes that hash to its name; nothing is imported otherwise.
   */
  blobs?: ReadonlyMap<string, Uint8Array>;
  /** Store the session under this id instead of the one its records carry (every record's session_id is rewritten). */
  as?: string;
  /** Where the text came from, for messages (a file name, or "stdin"). */
  source?: string;
  /** Hears of the work (for a progress line): each line read, once before the records are checked together, once before they are written. */
  onProgress?: (phase: "read" | "checking" | "writing", records: number) => void;
}

/** What {@link importSession} wrote. */
export interface SessionImport {
  session_id: string;
  /** The id the records carried (differs from `session_id` with `as`). */
  source_session_id: string;
  records: number;
  branches: string[];
}

/**
 * The records of a JSONL journal, checked as a storage would check them
 * (see the module notes). Throws SessionValidationError (schema version:
 * SessionSchemaVersionError) naming the line and what to do.
 */
export function parseJournal(
  text: string,
  options: ImportOptions = {},
): { records: SessionRecord[]; sourceId: string; lines: string[] | undefined } {
  const where = options.source ?? "the journal";
  if (text.length === 0) throw new SessionValidationError(`${where} is empty: it holds no record; nothing was imported`);
  if (!text.endsWith("\n")) {
    const line = text.split("\n").length;
    throw new SessionValidationError(
      `${where}: line ${line} is torn (it does not end with a newline: a write cut short, or a file cut off); nothing was imported: export the session again, or remove that line`,
    );
  }
  const lines = text
    .slice(0, -1)
    .split("\n")
    .map((l) => (l.endsWith("\r") ? l.slice(0, -1) : l));
  const records: SessionRecord[] = [];
  let sourceId: string | null = null;
  lines.forEach((line, i) => {
    const at = `${where}: line ${i + 1}`;
    const parsed = parseStrict<SessionRecord>(line, RECORD_LIMITS);
    if (!parsed.ok) throw new SessionValidationError(`${at} is not a JSON record: ${parsed.error.message}; nothing was imported`);
    const r = parsed.value as SessionRecord;
    if (r === null || typeof r !== "object" || Array.isArray(r) || typeof r.session_id !== "string")
      throw new SessionValidationError(`${at} is not a journal record (no session_id); nothing was imported`);
    if (sourceId === null) sourceId = r.session_id;
    else if (r.session_id !== sourceId)
      throw new SessionValidationError(
        `${at} belongs to session '${r.session_id}', the lines before it to '${sourceId}': a journal holds one session; nothing was imported`,
      );
    records.push(r);
    options.onProgress?.("read", records.length);
  });
  const target = options.as !== undefined ? normalizeId(options.as) : null;
  if (target !== null) for (const r of records) r.session_id = target;
  options.onProgress?.("checking", records.length);
  try {
    validateRecords(records);
  } catch (e) {
    if (e instanceof SessionError) e.message = `${where}: ${e.message.replace(/^record (\d+):/, "line $1:")}; nothing was imported`;
    throw e;
  }
  // The lines as they are, unless --as rewrote the records (their lines are then written anew).
  return { records, sourceId: sourceId!, lines: target === null ? lines : undefined };
}

/**
 * Import a JSONL journal into `storage` (see the module notes). Throws
 * SessionValidationError for a line that is not a valid record, and
 * SessionConflictError when the session exists there already.
 */
export async function importSession(storage: JournalStorage, text: string, options: ImportOptions = {}): Promise<SessionImport> {
  const { records, sourceId, lines } = parseJournal(text, options);
  const where = options.source ?? "the journal";
  const hashes = recordImageHashes(records);
  const missing = hashes.filter((h) => !options.blobs?.has(h));
  if (missing.length > 0)
    throw new SessionBlobError(
      `${where} names ${hashes.length} image(s) whose bytes are not given (${missing.length} missing, the first ${missing[0]}); nothing was imported: import it with its blobs (the command line reads them from the NAME.blobs/ folder beside NAME.jsonl, as \`sessions export --out\` writes them)`,
      sourceId,
      missing[0]!,
      "missing",
    );
  options.onProgress?.("writing", records.length);
  const id = records[0]!.session_id;
  // every blob checked against its name before anything is written; then the blobs (content-addressed:
  // a failed import leaves only bytes nothing names), then the records in one step
  const blobs = new Map(hashes.map((h) => [h, options.blobs!.get(h)!]));
  for (const [h, bytes] of blobs) {
    const actual = sha256Hex(bytes);
    if (actual !== h)
      throw new SessionBlobError(
        `${where}: the blob of image ${h} is corrupted (its bytes hash to ${actual}); nothing was imported`,
        id,
        h,
        "corrupted",
      );
  }
  if (blobs.size > 0) await putBlobs(storage, id, blobs);
  const r = await storage.importRecords(records, { lines });
  const branches = [...new Set(records.map((x) => x.branch_id))];
  return { session_id: r.session_id, source_session_id: sourceId, records: r.records, branches };
}
