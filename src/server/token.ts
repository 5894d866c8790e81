/**
 * The daemon's bearer token: 256 random bits (64 hex characters), written to
 * a 0600 file in a 0700 state directory, or taken from `AGENTCORE_TOKEN`.
 * Tokens are compared in constant time: both sides are hashed with SHA-256
 * and the equal-length digests go through `timingSafeEqual`, so neither the
 * length nor the content of the expected token leaks through timing.
 *
 * @module
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

/** The environment variable that overrides the generated token. */
export const TOKEN_ENV = "AGENTCORE_TOKEN";
/** Shortest token accepted from {@link TOKEN_ENV}. */
export const MIN_TOKEN_LENGTH = 32;

/** A problem with the state directory or the token (the CLI exits 2). */
export class TokenError extends Error {
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
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
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
export function prepareToken(stateDir: string, env: Record<string, string | undefined> = process.env): PendingToken {
  const fromEnv = env[TOKEN_ENV];
  if (fromEnv !== undefined && fromEnv !== "") {
    if (fromEnv.length < MIN_TOKEN_LENGTH) throw new TokenError(`${TOKEN_ENV} must be at least ${MIN_TOKEN_LENGTH} characters long`);
    if (/[\s\u0000-\u001f\u007f]/.test(fromEnv)) throw new TokenError(`${TOKEN_ENV} must not contain whitespace or control characters`);
    return { token: fromEnv, file: null, commit() {} };
  }
  ensureStateDir(stateDir);
  const file = path.join(stateDir, "token");
  const token = generateToken();
  return {
    token,
    file,
    commit() {
      const tmp = `${file}.${process.pid}.${generateToken().slice(0, 8)}.tmp`;
      try {
        fs.writeFileSync(tmp, token + "\n", { mode: 0o600, flag: "wx" });
        fs.chmodSync(tmp, 0o600);
        fs.renameSync(tmp, file);
      } catch (e) {
        try {
          fs.unlinkSync(tmp);
        } catch { /* never created */ }
        throw new TokenError(`cannot write token file ${file}: ${(e as NodeJS.ErrnoException).code ?? String(e)}`);
      }
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
const digest = bunHasher !== undefined
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
