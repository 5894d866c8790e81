/**
 * A cross-process exclusive lock built on node:fs only (works in Bun and
 * Deno): a sidecar entry created atomically holding the owner's pid and a
 * random token: a symbolic link whose target is that text (one system call,
 * no data block), or, where links are refused, a file written to a private
 * temp file and hard-linked into place, so it is never seen half-written. Waiters poll every 10 ms until a deadline.
 * A lock whose owner pid is dead is stale and is broken under a short-lived
 * breaker lock, after re-checking that it is still the same stale lock, so a
 * SIGKILLed holder never blocks others beyond the lock timeout. A
 * process-local mutex (keyed by the lock path) orders holders inside one
 * process.
 *
 * @module
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { SessionLockTimeoutError, SessionStorageError } from "./types.ts";

const POLL_MS = 10;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Process-local queues keyed by lock path. */
const localTails = new Map<string, Promise<void>>();

/** Whether process `pid` may be alive (only "no such process" proves it gone). */
export function pidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    // Only "no such process" proves the owner is gone. Anything else (EPERM,
    // or Deno refusing the probe without --allow-run) counts as alive: the
    // waiter then times out instead of breaking a lock that may be held.
    return (e as NodeJS.ErrnoException).code !== "ESRCH";
  }
}

/** The content of a lock (or claim) file, or null when it is gone; a lock made as a symbolic link holds it in its target. */
export function readLock(file: string): string | null {
  try {
    return fs.readlinkSync(file, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return null;
    // EINVAL: a regular file (a claim, or a lock made where links are refused)
  }
  try {
    return fs.readFileSync(file, "utf8");
  } catch {
    return null;
  }
}

/** Whether symbolic links can be made here; false after the first refusal (then locks are files). */
let symlinks = true;

/**
 * Create the lock `file` holding `content` atomically; false when it
 * exists. It is a symbolic link whose target is the content: one system
 * call, never seen half-made, and (a short target lives in the inode) no
 * data block for a journal fsync to flush. Where links are refused
 * (Windows without the privilege, a file system without them) it is a file
 * made as {@link tryCreate} makes one; readers take either.
 */
export function tryCreateLock(file: string, content: string, token: string): boolean {
  if (symlinks) {
    try {
      fs.symlinkSync(content, file);
      return true;
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === "EEXIST") return false;
      if (code === "ENOENT" || code === "EACCES" || code === "EROFS") throw e;
      symlinks = false; // EPERM, ENOSYS, ENOTSUP, Deno's NotCapable, …: use files from now on
    }
  }
  return tryCreate(file, content, token);
}

/** Whether `file` exists as an entry (a lock made as a dangling symbolic link counts). */
export function lockExists(file: string): boolean {
  try {
    fs.lstatSync(file);
    return true;
  } catch {
    return false;
  }
}

/** Create `file` holding `content` atomically; false when it exists. */
export function tryCreate(file: string, content: string, token: string): boolean {
  const tmp = `${file}.${token}.tmp`;
  fs.writeFileSync(tmp, content, { mode: 0o600 });
  try {
    fs.linkSync(tmp, file);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw e;
  } finally {
    try {
      fs.unlinkSync(tmp);
    } catch {
      /* already gone */
    }
  }
}

/** Break `file` if it still holds `content` whose owner is dead. */
export function breakStale(file: string, content: string, token: string): void {
  const breaker = `${file}.break`;
  const mine = `${process.pid} ${token}\n`;
  if (!tryCreate(breaker, mine, token)) {
    // A breaker whose owner died is itself stale: remove it (held for microseconds otherwise).
    const b = readLock(breaker);
    if (b !== null && !pidAlive(Number(b.split(" ")[0]))) {
      try {
        fs.unlinkSync(breaker);
      } catch {
        /* raced */
      }
    }
    return;
  }
  try {
    if (readLock(file) === content) fs.unlinkSync(file);
  } catch {
    /* raced */
  } finally {
    try {
      fs.unlinkSync(breaker);
    } catch {
      /* gone */
    }
  }
}

/** Hold the lock at `lockFile` while `fn` runs. `timeoutMs` null waits forever. */
export async function withFileLock<T>(lockFile: string, timeoutMs: number | null, fn: () => T | Promise<T>): Promise<T> {
  const deadline = timeoutMs === null ? Infinity : Date.now() + timeoutMs;
  const key = path.resolve(lockFile);
  // 1. the process-local mutex
  const prev = localTails.get(key) ?? Promise.resolve();
  let release!: () => void;
  const mine = new Promise<void>((r) => (release = r));
  const tail = prev.then(() => mine);
  localTails.set(key, tail);
  try {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const waited = await Promise.race([
      prev.then(() => true),
      new Promise<boolean>((r) => {
        if (deadline !== Infinity) timer = setTimeout(() => r(false), Math.max(0, Math.min(deadline - Date.now(), 2 ** 31 - 1)));
      }),
    ]);
    clearTimeout(timer);
    if (!waited) throw new SessionLockTimeoutError(`timed out acquiring Session journal lock ${lockFile} after ${timeoutMs} ms`);
    // 2. the cross-process lock
    const token = crypto.randomUUID().replace(/-/g, "");
    const content = `${process.pid} ${token}\n`;
    for (;;) {
      let created: boolean;
      try {
        created = tryCreateLock(key, content, token);
      } catch (e) {
        throw new SessionStorageError(`cannot create the Session journal lock ${lockFile}: ${(e as Error).message}`);
      }
      if (created) break;
      const held = readLock(key);
      if (held !== null && !pidAlive(Number(held.split(" ")[0]))) {
        breakStale(key, held, token);
        continue;
      }
      if (Date.now() >= deadline)
        throw new SessionLockTimeoutError(`timed out acquiring Session journal lock ${lockFile} after ${timeoutMs} ms`);
      await sleep(POLL_MS);
    }
    try {
      return await fn();
    } finally {
      if (readLock(key) === content) {
        try {
          fs.unlinkSync(key);
        } catch {
          /* gone */
        }
      }
    }
  } finally {
    release();
    if (localTails.get(key) === tail) localTails.delete(key);
  }
}
