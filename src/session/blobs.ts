/**
 * Image blobs of a session: a journal keeps an image by reference
 * (`{"media_type","sha256","bytes"}` in a message's `images`), never its
 * base64; the bytes live in the store, content-addressed by their SHA-256
 * (the JSONL storage: `<journal>.blobs/<sha256>` beside the journal file;
 * PostgreSQL: the `session_blobs` table).
 *
 * - {@link externalizeImages} takes the bytes out of a record's data (the
 *   recorder writes each blob before the record that names it);
 * - {@link loadSessionImages} puts them back into a session read from the
 *   store, checking each blob's hash, so a restore gives the model the same
 *   images. A missing blob or one whose bytes do not hash to its name is a
 *   {@link SessionBlobError} naming the session and the hash.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { type ImageAttachment, isImageAttachment, isSha256, sha256Hex } from "../providers/images.ts";
import type { AgentMessage } from "../providers/messages.ts";
import { type AgentSession, SessionError } from "./types.ts";

/** A session's image blob is missing or its bytes do not match its hash. */
export class SessionBlobError extends SessionError {
  override readonly code: string = "SESSION_BLOB_INVALID";
  override name = "SessionBlobError";
  constructor(
    message: string,
    readonly sessionId: string,
    readonly sha256: string,
    readonly problem: "missing" | "corrupted" | "unsupported",
  ) {
    super(message);
  }
}

/** What a storage keeps blobs with (every built-in storage has it). */
export interface BlobStore {
  /** Store `bytes` under `sha256` for the session; idempotent (the same hash is the same bytes). */
  putBlob(sessionId: string, sha256: string, bytes: Uint8Array): Promise<void>;
  /** The bytes stored under `sha256`, or null when there are none. Does not check the hash. */
  getBlob(sessionId: string, sha256: string): Promise<Uint8Array | null>;
}

/** Throws unless `sha256` is a lowercase hex SHA-256 (so it is a safe file name too). */
export function assertBlobName(sessionId: string, sha256: string): void {
  if (!isSha256(sha256))
    throw new SessionBlobError(
      `session '${sessionId}': blob name ${JSON.stringify(String(sha256).slice(0, 80))} is not a SHA-256 (64 lowercase hex digits)`,
      sessionId,
      String(sha256),
      "corrupted",
    );
}

/**
 * `data` with the bytes of every image attachment taken out (each `images`
 * list of a message, at any depth: a run's task, tool messages, the
 * messages of a compaction), and those bytes by hash. `data` itself is not
 * changed; without images it is returned as it is.
 */
export function externalizeImages(data: Record<string, unknown>): { data: Record<string, unknown>; blobs: Map<string, Uint8Array> } {
  const blobs = new Map<string, Uint8Array>();
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) {
      let changed = false;
      const out = v.map((x) => {
        const y = walk(x);
        if (y !== x) changed = true;
        return y;
      });
      return changed ? out : v;
    }
    if (typeof v !== "object" || v === null) return v;
    const o = v as Record<string, unknown>;
    let out: Record<string, unknown> | null = null;
    for (const [k, x] of Object.entries(o)) {
      let y: unknown;
      if (k === "images" && Array.isArray(x) && x.some((a) => isImageAttachment(a) && a.data !== undefined)) {
        y = x.map((a) => {
          if (!isImageAttachment(a) || a.data === undefined) return a;
          if (!blobs.has(a.sha256)) blobs.set(a.sha256, new Uint8Array(Buffer.from(a.data, "base64")));
          return { media_type: a.media_type, sha256: a.sha256, bytes: a.bytes };
        });
      } else y = walk(x);
      if (y !== x) {
        out ??= { ...o };
        out[k] = y;
      }
    }
    return out ?? o;
  };
  return { data: walk(data) as Record<string, unknown>, blobs };
}

/** The hashes of every image a journal's records name (sorted, each once): the blobs a copy of the session needs. */
export function recordImageHashes(records: readonly { data: Record<string, unknown> }[]): string[] {
  const found = new Set<string>();
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) for (const x of v) walk(x);
    else if (typeof v === "object" && v !== null) {
      for (const [k, x] of Object.entries(v)) {
        if (k === "images" && Array.isArray(x)) for (const a of x) if (isImageAttachment(a)) found.add(a.sha256);
        walk(x);
      }
    }
  };
  for (const r of records) walk(r.data);
  return [...found].sort();
}

/** Write the blobs of {@link externalizeImages} to `store` (hash checked first). */
export async function putBlobs(store: BlobStore, sessionId: string, blobs: ReadonlyMap<string, Uint8Array>): Promise<void> {
  for (const [sha, bytes] of blobs) {
    const actual = sha256Hex(bytes);
    if (actual !== sha)
      throw new SessionBlobError(
        `session '${sessionId}': an image says its sha256 is ${sha}, but its bytes hash to ${actual}`,
        sessionId,
        sha,
        "corrupted",
      );
    await store.putBlob(sessionId, sha, bytes);
  }
}

/** Every image attachment in the messages of a session (entries and compactions). */
function sessionImages(session: AgentSession): ImageAttachment[] {
  const out: ImageAttachment[] = [];
  const messages: AgentMessage[] = [...session.entries.map((e) => e.message), ...session.compactions.flatMap((c) => c.messages)];
  for (const m of messages) {
    const images = (m as { images?: unknown }).images;
    if (Array.isArray(images)) for (const a of images) if (isImageAttachment(a)) out.push(a);
  }
  return out;
}

/** Whether a session holds images whose bytes are not loaded. */
export function hasUnloadedImages(session: AgentSession): boolean {
  return sessionImages(session).some((a) => a.data === undefined);
}

/**
 * Put the bytes of every image of `session` back (in place) from `store`,
 * each checked against its hash. Throws {@link SessionBlobError} for a
 * missing blob or a hash mismatch, naming the session and the hash. A
 * session without images costs one pass over its messages.
 */
export async function loadSessionImages(store: Partial<BlobStore>, session: AgentSession): Promise<AgentSession> {
  const wanted = sessionImages(session).filter((a) => a.data === undefined);
  if (wanted.length === 0) return session;
  const sid = session.session_id;
  if (typeof store.getBlob !== "function")
    throw new SessionBlobError(`session '${sid}' holds images, and its storage keeps no blobs`, sid, wanted[0]!.sha256, "unsupported");
  const loaded = new Map<string, string>();
  for (const a of wanted) {
    let data = loaded.get(a.sha256);
    if (data === undefined) {
      assertBlobName(sid, a.sha256);
      const bytes = await store.getBlob(sid, a.sha256);
      if (bytes === null)
        throw new SessionBlobError(
          `session '${sid}': the blob of image ${a.sha256} is missing from the store (was the journal copied without its blobs?)`,
          sid,
          a.sha256,
          "missing",
        );
      const actual = sha256Hex(bytes);
      if (actual !== a.sha256)
        throw new SessionBlobError(
          `session '${sid}': the blob of image ${a.sha256} is corrupted (its bytes hash to ${actual}); restore it from a backup, or the run cannot be restored with this image`,
          sid,
          a.sha256,
          "corrupted",
        );
      data = Buffer.from(bytes).toString("base64");
      loaded.set(a.sha256, data);
    }
    a.data = data;
  }
  return session;
}
