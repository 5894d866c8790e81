/**
 * The daemon's bearer token: 256 random bits (64 hex characters), written to
 * 0600 files in a 0700 state directory, or taken from `AGENTCORE_TOKEN`.
 * Each `agentcore serve` writes a file of its own, named after where it
 * listens ({@link tokenFileName}), and `token`, which holds the token of the
 * daemon started last; a daemon that stops removes its own file, and `token`
 * only while `token` still holds its token ({@link prepareDaemonToken}).
 * Tokens are compared in constant time: both sides are hashed with SHA-256
 * and the equal-length digests go through `timingSafeEqual`, so neither the
 * length nor the content of the expected token leaks through timing.
 *
 * @module
 */
import { AgentcoreError } from "../core/errors.ts";
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { makeStateDir } from "../session/state-dir.ts";

/** The environment variable that overrides the generated token. */
export const TOKEN_ENV = "AGENTCORE_TOKEN";
/** Shortest token accepted from {@link TOKEN_ENV}. */
export const MIN_TOKEN_LENGTH = 32;

/** A problem with the state directory or the token (the CLI exits 2). */
export class TokenError extends AgentcoreError {
  readonly code: string = "TOKEN_SETUP_FAILED";
  override name = "TokenError";
}

/** 256 bits from the system CSPRNG, hex-encoded. */
export function generateToken(): string {
  return randomBytes(32).toString("hex");
}

/** `$XDG_STATE_HOME/agentcore`, else `~/.local/state/agentcore`. */
export function defaultStateDir(env: Record<string, string | undefined> = process.env): string {
  const xdg = env.XDG_STATE_HOME;
  if (xdg !== undefined && path.isAbsolute(xdg)) return path.join(xdg, "agentcore");
  return path.join(env.HOME ?? os.homedir(), ".local", "state", "agentcore");
}

/**
 * Create `dir` (and parents) with mode 0700. An existing directory must be a
 * real directory owned by us, and is tightened to 0700.
 */
export function ensureStateDir(dir: string): void {
  try {
    makeStateDir(dir, 0o700); // a .agentcore/ it creates (--state-dir .agentcore/daemon) gets its .gitignore
    const st = fs.lstatSync(dir);
    if (!st.isDirectory()) throw new TokenError(`state directory ${dir} is not a directory`);
    let uid: number | undefined;
    try {
      uid = process.getuid?.();
    } catch {
      uid = undefined; // Deno without --allow-sys: skip the owner check (the mode is still enforced)
    }
    if (uid !== undefined && st.uid !== uid) throw new TokenError(`state directory ${dir} belongs to another user (uid ${st.uid})`);
    if ((st.mode & 0o777) !== 0o700) fs.chmodSync(dir, 0o700);
  } catch (e) {
    if (e instanceof TokenError) throw e;
    throw new TokenError(`cannot prepare state directory ${dir}: ${(e as NodeJS.ErrnoException).code ?? String(e)}`);
  }
}

/** Where the daemon keeps its token, and the token itself. */
export interface DaemonToken {
  token: string;
  /** The 0600 file holding the token; null when it came from the environment. */
  file: string | null;
}

/** A daemon token whose file is not written yet (see {@link prepareToken}). */
export interface PendingToken extends DaemonToken {
  /**
   * Write the token file (mode 0600, replaced atomically, so a reader never
   * sees half a token). Does nothing for a token from the environment.
   * Throws {@link TokenError}.
   */
  commit(): void;
}

/**
 * The token for a daemon, without touching the token file yet:
 * `AGENTCORE_TOKEN` when set (at least {@link MIN_TOKEN_LENGTH} characters,
 * no whitespace), else a fresh random token for `<stateDir>/token`. The state
 * directory is checked (and created 0700) at once, so its problems are
 * reported before anything listens. Call `commit()` once the daemon listens:
 * a start that fails (address in use, bad config) must not replace the file
 * of a daemon that is already running with another token.
 */
export function prepareToken(stateDir: string, env: Record<string, string | undefined> = process.env, given?: string): PendingToken {
  const fromEnv = env[TOKEN_ENV];
  if (fromEnv !== undefined && fromEnv !== "") {
    if (fromEnv.length < MIN_TOKEN_LENGTH) throw new TokenError(`${TOKEN_ENV} must be at least ${MIN_TOKEN_LENGTH} characters long`);
    if (/[\s\u0000-\u001f\u007f]/.test(fromEnv)) throw new TokenError(`${TOKEN_ENV} must not contain whitespace or control characters`);
    return { token: fromEnv, file: null, commit() {} };
  }
  ensureStateDir(stateDir);
  const file = path.join(stateDir, "token");
  // `given`: a token shared by the daemons of one store (docs/cluster.md), else a fresh one.
  const token = given ?? generateToken();
  return {
    token,
    file,
    commit() {
      writeAtomically(file, token + "\n");
    },
  };
}

/**
 * Where a daemon listens, as far as the name of its own token file goes:
 * the host and the port it really got (never 0), or its socket path.
 */
export type TokenListener = { hostname: string; port: number } | { unix: string };

/** The host whose token files carry only the port (the daemon's default bind address). */
export const DEFAULT_TOKEN_HOST = "127.0.0.1";
/** The file every daemon on a state directory also writes: the token of the one started last. */
export const SHARED_TOKEN_FILE = "token";

const sha256hex = (s: string, n: number): string => createHash("sha256").update(s, "utf8").digest("hex").slice(0, n);

/**
 * The name of a daemon's own token file inside the state directory:
 * - `token-<port>` on 127.0.0.1 (the default host);
 * - `token-<host>-<port>` on another host whose name is only letters,
 *   digits, dots and dashes (`token-0.0.0.0-8787`, `token-localhost-8787`);
 *   any other host (an IPv6 address) becomes `h` and the first 12 hex
 *   digits of the SHA-256 of its name (`token-h<12 hex>-<port>`);
 * - `token-unix-<name>-<16 hex>` for a Unix socket: `<name>` is the socket's
 *   file name (characters other than letters, digits, `.`, `_` and `-`
 *   become `_`, at most 32 of them) and the hex digits are the start of the
 *   SHA-256 of its absolute path (`path.resolve`, symlinks not followed),
 *   so two sockets of the same name in different folders get two files.
 * Throws a TypeError for a port outside 1-65535 or an empty path or host.
 */
export function tokenFileName(listener: TokenListener): string {
  if ("unix" in listener) {
    if (typeof listener.unix !== "string" || listener.unix === "")
      throw new TypeError("tokenFileName: the socket path must be a non-empty string");
    const abs = path.resolve(listener.unix);
    const base = path
      .basename(abs)
      .replace(/[^A-Za-z0-9._-]/g, "_")
      .slice(0, 32);
    return `token-unix-${base}-${sha256hex(abs, 16)}`;
  }
  const { hostname, port } = listener;
  if (!Number.isInteger(port) || port < 1 || port > 65535)
    throw new TypeError(`tokenFileName: port must be an integer between 1 and 65535, got ${String(port)}`);
  if (typeof hostname !== "string" || hostname === "") throw new TypeError("tokenFileName: hostname must be a non-empty string");
  if (hostname === DEFAULT_TOKEN_HOST) return `token-${port}`;
  const host = /^[A-Za-z0-9.-]+$/.test(hostname) ? hostname : `h${sha256hex(hostname, 12)}`;
  return `token-${host}-${port}`;
}

/** Write `content` to `file` with mode 0600, replacing it atomically (a reader never sees half a token). */
function writeAtomically(file: string, content: string): void {
  const tmp = `${file}.${process.pid}.${generateToken().slice(0, 8)}.tmp`;
  try {
    fs.writeFileSync(tmp, content, { mode: 0o600, flag: "wx" });
    fs.chmodSync(tmp, 0o600);
    fs.renameSync(tmp, file);
  } catch (e) {
    try {
      fs.unlinkSync(tmp);
    } catch {
      /* never created */
    }
    throw new TokenError(`cannot write token file ${file}: ${(e as NodeJS.ErrnoException).code ?? String(e)}`);
  }
}

function readOrNull(file: string): string | null {
  try {
    return fs.readFileSync(file, "utf8");
  } catch {
    return null;
  }
}

/**
 * Remove `file` if it holds exactly `token` (as written: the token and a
 * newline); leave it alone otherwise. Another daemon may replace the file
 * at any moment, so the file is first moved aside (an atomic rename), its
 * content checked again, and put back with a hard link when it turned out
 * to be another daemon's (unless a newer file is in place by then). Never
 * throws; true when the file was removed. `hooks.afterCheck` runs between
 * the first check and the move (tests use it to replace the file there).
 */
export function removeTokenFileIfHolds(file: string, token: string, hooks: { afterCheck?: () => void } = {}): boolean {
  const expected = `${token}\n`;
  if (readOrNull(file) !== expected) return false;
  hooks.afterCheck?.();
  const aside = `${file}.${process.pid}.${generateToken().slice(0, 8)}.release`;
  try {
    fs.renameSync(file, aside);
  } catch {
    return false; // gone already
  }
  if (readOrNull(aside) === expected) {
    try {
      fs.unlinkSync(aside);
    } catch {
      /* nothing left to do */
    }
    return true;
  }
  // Another daemon's token came in between: put it back, unless a newer one is there already.
  try {
    fs.linkSync(aside, file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST" && !fs.existsSync(file)) {
      try {
        fs.renameSync(aside, file); // a file system without hard links
        return false;
      } catch {
        /* left below */
      }
    }
  }
  try {
    fs.unlinkSync(aside);
  } catch {
    /* moved back by rename */
  }
  return false;
}

/** A daemon's token once its files are written (see {@link prepareDaemonToken}). */
export interface CommittedDaemonToken {
  readonly token: string;
  /** This daemon's own file (`<state-dir>/` + {@link tokenFileName}); null when the token came from the environment. */
  readonly file: string | null;
  /** `<state-dir>/token`, which now holds this token too; null when the token came from the environment. */
  readonly sharedFile: string | null;
  /**
   * Remove this daemon's own file, and `<state-dir>/token` only while it
   * still holds this token (a daemon started later keeps its token there).
   * Idempotent, never throws; returns the files removed.
   */
  release(): string[];
}

/** A daemon token whose files are not written yet. */
export interface PendingDaemonToken {
  readonly token: string;
  /** The checked state directory; null when the token came from the environment. */
  readonly stateDir: string | null;
  /**
   * Write the token, once the daemon listens, to its own file (named by
   * {@link tokenFileName} after `listener`), then to `<state-dir>/token`;
   * both mode 0600 and replaced atomically. When the second write fails the
   * first file is removed again. Nothing is written for a token from the
   * environment. Throws {@link TokenError} (or a TypeError for a bad listener).
   */
  commit(listener: TokenListener): CommittedDaemonToken;
}

/**
 * The token of one `agentcore serve`: like {@link prepareToken} (the same
 * `AGENTCORE_TOKEN` rules, the state directory checked at once), but the
 * token goes to a file of the daemon's own, named after where it listens,
 * so daemons sharing a state directory never replace each other's token;
 * `<state-dir>/token` holds the token of the daemon started last.
 */
export function prepareDaemonToken(
  stateDir: string,
  env: Record<string, string | undefined> = process.env,
  given?: string,
): PendingDaemonToken {
  const base = prepareToken(stateDir, env, given);
  const token = base.token;
  if (base.file === null) {
    const none: CommittedDaemonToken = { token, file: null, sharedFile: null, release: () => [] };
    return { token, stateDir: null, commit: (listener) => (tokenFileName(listener), none) };
  }
  const shared = base.file;
  const dir = path.dirname(shared);
  return {
    token,
    stateDir: dir,
    commit(listener) {
      const own = path.join(dir, tokenFileName(listener));
      writeAtomically(own, token + "\n");
      try {
        writeAtomically(shared, token + "\n");
      } catch (e) {
        removeTokenFileIfHolds(own, token);
        throw e;
      }
      let released: string[] | null = null;
      return {
        token,
        file: own,
        sharedFile: shared,
        release() {
          if (released !== null) return [];
          released = [own, shared].filter((f) => removeTokenFileIfHolds(f, token));
          return released;
        },
      };
    },
  };
}

/**
 * The token for a daemon, with its file written at once: {@link prepareToken}
 * then `commit()`. A fresh token per start means a leaked file is only good
 * until the next restart.
 */
export function loadOrCreateToken(stateDir: string, env: Record<string, string | undefined> = process.env): DaemonToken {
  const t = prepareToken(stateDir, env);
  t.commit();
  return { token: t.token, file: t.file };
}

type BunHasher = { CryptoHasher?: { hash(algorithm: "sha256", data: string): Uint8Array } };
const bunHasher = (globalThis as { Bun?: BunHasher }).Bun?.CryptoHasher;

/** SHA-256 of a string (Bun's native one-shot hasher when present, else node:crypto). */
const digest =
  bunHasher !== undefined
    ? (s: string): Uint8Array => bunHasher.hash("sha256", s)
    : (s: string): Uint8Array => createHash("sha256").update(s, "utf8").digest();

/**
 * A checker for `Authorization` header values. Accepts exactly
 * `Bearer <token>` (scheme case-insensitive); the comparison takes the same
 * time whatever the candidate is.
 */
export function bearerChecker(token: string): (authorization: string | null | undefined) => boolean {
  if (typeof token !== "string" || token.length === 0) throw new TypeError("bearerChecker: token must be a non-empty string");
  const expected = digest(token);
  return function checkBearer(authorization) {
    if (typeof authorization !== "string") return false;
    const m = /^Bearer[ ]+(\S+)[ ]*$/i.exec(authorization);
    const candidate = digest(m === null ? "" : m[1]!);
    return timingSafeEqual(candidate, expected) && m !== null;
  };
}
