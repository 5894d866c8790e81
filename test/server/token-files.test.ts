/**
 * One token file per daemon: real `agentcore serve` child processes sharing
 * one --state-dir each write `token-<port>` (or `token-unix-<name>-<hash>`),
 * authenticate only with their own token, remove their own file on SIGTERM
 * and `token` only while it still holds their token; a failed start touches
 * no file. Plus the file-name rules and the race-safe removal in-process.
 */
import { afterEach, describe, expect, test } from "bun:test";
import {
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { createHash } from "node:crypto";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { REPO_ROOT } from "../support/paths.ts";
import { prepareDaemonToken, removeTokenFileIfHolds, tokenFileName, TokenError } from "../../src/server/token.ts";
import { collectStderr } from "../support/daemon.ts";

const MAIN = join(REPO_ROOT, "src/cli/main.ts");
const dirs: string[] = [];
const procs: ReturnType<typeof Bun.spawn>[] = [];
afterEach(() => {
  for (const p of procs.splice(0)) if (p.exitCode === null) p.kill("SIGKILL");
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), "agentcore-token-files-"));
  dirs.push(d);
  return d;
}

interface Serve {
  proc: ReturnType<typeof Bun.spawn>;
  /** http://127.0.0.1:PORT, or unix:PATH */
  url: string;
  tokenFile: string;
  sharedLine: string | null;
  token: string;
  stderr: () => string;
  exited: Promise<number>;
}

/** Spawn `serve` on `stateDir` and wait for its "token file" line (printed last). */
async function serve(stateDir: string, cwd: string, args: string[], exe: string[] = [process.execPath, MAIN]): Promise<Serve> {
  const proc = Bun.spawn([...exe, "serve", "--state-dir", stateDir, "--root", cwd, ...args], {
    cwd,
    env: {
      PATH: process.env.PATH ?? "",
      HOME: cwd,
      DENO_DIR: process.env.DENO_DIR ?? join(process.env.HOME ?? cwd, ".cache/deno"),
      NO_COLOR: "1",
    },
    stdout: "pipe",
    stderr: "pipe",
  });
  procs.push(proc);
  const err = collectStderr(proc);
  const text = await err.ready(/token file .+\n/);
  const url = /serve: listening on (\S+)\n/.exec(text)![1]!;
  const tokenFile = /token file (.+)\n/.exec(text)![1]!;
  const sharedLine = /serve: (.+) holds this token too/.exec(text)?.[1] ?? null;
  return { proc, url, tokenFile, sharedLine, token: readFileSync(tokenFile, "utf8").trim(), stderr: err.text, exited: err.exited };
}

/** GET /v1/tools on a daemon with a token: the status. */
async function statusWith(d: Serve, token: string): Promise<number> {
  const headers = { authorization: `Bearer ${token}` };
  const r = d.url.startsWith("unix:")
    ? await fetch("http://localhost/v1/tools", { unix: d.url.slice(5), headers } as RequestInit)
    : await fetch(`${d.url}/v1/tools`, { headers });
  await r.text();
  return r.status;
}

async function stop(d: Serve): Promise<void> {
  d.proc.kill("SIGTERM");
  expect(await d.exited).toBe(0);
}

// Starts expected to fail get spawnSync's timeout: one that wrongly
// succeeds would serve until killed, and then fails the exit-code check
// (a daemon stopped by SIGTERM exits 0), instead of hanging the test.

/** Every file in the state directory, with its content. */
function snapshot(stateDir: string): Record<string, string> {
  return Object.fromEntries(
    readdirSync(stateDir)
      .sort()
      .map((n) => [n, readFileSync(join(stateDir, n), "utf8")]),
  );
}

const portOf = (d: Serve) => Number(new URL(d.url).port);

describe("one token file per daemon (child processes)", () => {
  test("two daemons on one state directory: each one's own file authenticates it and not the other; both keep working; token holds the later one", async () => {
    const dir = tempDir();
    const state = join(dir, "state");
    const a = await serve(state, dir, ["--port", "0"]);
    const b = await serve(state, dir, ["--port", "0"]);
    expect(portOf(a)).not.toBe(portOf(b));
    expect(a.tokenFile).toBe(join(state, `token-${portOf(a)}`));
    expect(b.tokenFile).toBe(join(state, `token-${portOf(b)}`));
    expect(a.token).toMatch(/^[0-9a-f]{64}$/);
    expect(b.token).toMatch(/^[0-9a-f]{64}$/);
    expect(a.token).not.toBe(b.token);
    for (const f of [a.tokenFile, b.tokenFile, join(state, "token")]) expect(statSync(f).mode & 0o777).toBe(0o600);
    // B's start left A's file alone
    expect(readFileSync(a.tokenFile, "utf8")).toBe(`${a.token}\n`);
    expect(readFileSync(join(state, "token"), "utf8")).toBe(`${b.token}\n`);
    expect(a.sharedLine).toBe(join(state, "token"));
    expect(await statusWith(a, a.token)).toBe(200);
    expect(await statusWith(b, b.token)).toBe(200);
    expect(await statusWith(a, b.token)).toBe(401);
    expect(await statusWith(b, a.token)).toBe(401);
    // the token each client reads from the daemon's own file keeps working on both
    expect(await statusWith(a, readFileSync(a.tokenFile, "utf8").trim())).toBe(200);
    expect(await statusWith(b, readFileSync(b.tokenFile, "utf8").trim())).toBe(200);
    expect(Object.keys(snapshot(state))).toEqual(["token", `token-${portOf(a)}`, `token-${portOf(b)}`].sort());
    await stop(a);
    await stop(b);
  }, 60_000);

  test("SIGTERM removes the daemon's own file, and token only when token holds its token", async () => {
    const dir = tempDir();
    const state = join(dir, "state");
    const a = await serve(state, dir, ["--port", "0"]);
    const b = await serve(state, dir, ["--port", "0"]);
    // A stops: token holds B's token, so it stays
    await stop(a);
    expect(existsSync(a.tokenFile)).toBe(false);
    expect(readFileSync(b.tokenFile, "utf8")).toBe(`${b.token}\n`);
    expect(readFileSync(join(state, "token"), "utf8")).toBe(`${b.token}\n`);
    expect(await statusWith(b, b.token)).toBe(200);
    // C starts (token is now C's), then stops: token goes with it, B's file stays
    const c = await serve(state, dir, ["--port", "0"]);
    expect(readFileSync(join(state, "token"), "utf8")).toBe(`${c.token}\n`);
    await stop(c);
    expect(existsSync(c.tokenFile)).toBe(false);
    expect(existsSync(join(state, "token"))).toBe(false);
    expect(snapshot(state)).toEqual({ [`token-${portOf(b)}`]: `${b.token}\n` });
    expect(await statusWith(b, b.token)).toBe(200);
    // B, the last one, stops: nothing is left
    await stop(b);
    expect(readdirSync(state)).toEqual([]);
  }, 60_000);

  test("a start on a busy port or a live socket fails (exit 2) and leaves every existing file as it was", async () => {
    const dir = tempDir();
    const state = join(dir, "state");
    const sock = join(dir, "live.sock");
    const a = await serve(state, dir, ["--port", "0"]);
    const u = await serve(state, dir, ["--unix", sock]);
    const before = snapshot(state);
    // the failing daemons would write exactly these two files
    expect(Object.keys(before)).toEqual(["token", `token-${portOf(a)}`, tokenFileName({ unix: sock })].sort());
    const run = (args: string[]) =>
      Bun.spawnSync([process.execPath, MAIN, "serve", "--state-dir", state, "--root", dir, ...args], {
        cwd: dir,
        env: { PATH: process.env.PATH ?? "", HOME: dir },
        timeout: 30_000,
      });
    const busy = run(["--port", String(portOf(a))]);
    expect(busy.exitCode).toBe(2);
    expect(busy.stderr.toString()).toContain(`cannot listen on 127.0.0.1:${portOf(a)}`);
    expect(snapshot(state)).toEqual(before);
    const live = run(["--unix", sock]);
    expect(live.exitCode).toBe(2);
    expect(live.stderr.toString()).toContain("another server is listening on this socket");
    expect(snapshot(state)).toEqual(before);
    // both daemons still answer with their own tokens
    expect(await statusWith(a, a.token)).toBe(200);
    expect(await statusWith(u, u.token)).toBe(200);
    await stop(a);
    await stop(u);
  }, 60_000);

  test("--unix: the file is named after the socket (its name and a hash of its absolute path); two sockets of one name, two files", async () => {
    const dir = tempDir();
    const state = join(dir, "state");
    mkdirSync(join(dir, "one"));
    mkdirSync(join(dir, "two"));
    const s1 = join(dir, "one", "agent.sock");
    const s2 = join(dir, "two", "agent.sock");
    const hash = (p: string) => createHash("sha256").update(p).digest("hex").slice(0, 16);
    const d1 = await serve(state, dir, ["--unix", s1]);
    const d2 = await serve(state, dir, ["--unix", s2]);
    expect(d1.tokenFile).toBe(join(state, `token-unix-agent.sock-${hash(s1)}`));
    expect(d2.tokenFile).toBe(join(state, `token-unix-agent.sock-${hash(s2)}`));
    expect(d1.tokenFile).not.toBe(d2.tokenFile);
    expect(readFileSync(d1.tokenFile, "utf8")).toBe(`${d1.token}\n`);
    expect(await statusWith(d1, d1.token)).toBe(200);
    expect(await statusWith(d2, d2.token)).toBe(200);
    expect(await statusWith(d1, d2.token)).toBe(401);
    expect(await statusWith(d2, d1.token)).toBe(401);
    // a relative --unix path names the same file as its absolute form
    expect(tokenFileName({ unix: relative(process.cwd(), s1) })).toBe(`token-unix-agent.sock-${hash(s1)}`);
    await stop(d2);
    expect(snapshot(state)).toEqual({ [`token-unix-agent.sock-${hash(s1)}`]: `${d1.token}\n` }); // token was d2's: gone too
    await stop(d1);
    expect(readdirSync(state)).toEqual([]);
  }, 60_000);

  test("under deno run too: its own token-<port> authenticates it; SIGTERM removes that file and token (held by it), the Bun daemon's file stays", async () => {
    const dir = tempDir();
    const state = join(dir, "state");
    const deno = [join(REPO_ROOT, "node_modules/.bin/deno"), "run", "--allow-read", "--allow-write", "--allow-env", "--allow-net", MAIN];
    const bun = await serve(state, dir, ["--port", "0"]);
    const d = await serve(state, dir, ["--port", "0"], deno);
    expect(d.tokenFile).toBe(join(state, `token-${portOf(d)}`));
    expect(await statusWith(d, d.token)).toBe(200);
    expect(await statusWith(d, bun.token)).toBe(401);
    expect(readFileSync(join(state, "token"), "utf8")).toBe(`${d.token}\n`);
    await stop(d);
    expect(snapshot(state)).toEqual({ [`token-${portOf(bun)}`]: `${bun.token}\n` });
    await stop(bun);
  }, 60_000);

  test("state directory problems exit 2 with a clear message, and so does an own token file that cannot be written (token untouched)", async () => {
    const dir = tempDir();
    const run = (state: string, args: string[]) =>
      Bun.spawnSync([process.execPath, MAIN, "serve", "--state-dir", state, "--root", dir, ...args], {
        cwd: dir,
        env: { PATH: process.env.PATH ?? "", HOME: dir },
        timeout: 30_000,
      });
    // a regular file where the state directory should be
    const file = join(dir, "plain-file");
    writeFileSync(file, "x");
    const notDir = run(file, ["--port", "0"]);
    expect(notDir.exitCode).toBe(2);
    expect(notDir.stderr.toString()).toContain(`state directory ${file}`);
    expect(notDir.stderr.toString()).not.toContain("    at ");
    // a directory of another user (as root: one handed to uid 65534; else /, owned by root)
    let foreign = "/";
    if (process.getuid?.() === 0) {
      foreign = join(dir, "foreign");
      mkdirSync(foreign, { mode: 0o755 });
      chownSync(foreign, 65534, 65534);
    }
    const notOurs = run(foreign, ["--port", "0"]);
    expect(notOurs.exitCode).toBe(2);
    expect(notOurs.stderr.toString()).toContain("belongs to another user");
    expect(statSync(foreign).mode & 0o777).not.toBe(0o700); // not tightened: it is not ours
    // the daemon's own file cannot be replaced (a directory is in its place):
    // exit 2 naming it, the socket gone again, token untouched
    const state = join(dir, "state");
    mkdirSync(state, { mode: 0o700 });
    const sock = join(dir, "x.sock");
    const own = join(state, tokenFileName({ unix: sock }));
    mkdirSync(own);
    writeFileSync(join(state, "token"), `${"e".repeat(64)}\n`, { mode: 0o600 });
    const blocked = run(state, ["--unix", sock]);
    expect(blocked.exitCode).toBe(2);
    expect(blocked.stderr.toString()).toContain(`cannot write token file ${own}`);
    expect(existsSync(sock)).toBe(false);
    expect(readFileSync(join(state, "token"), "utf8")).toBe(`${"e".repeat(64)}\n`);
    expect(statSync(own).isDirectory()).toBe(true);
  }, 60_000);
});

describe("token file names and removal (in-process)", () => {
  test("tokenFileName: port only on 127.0.0.1, the host otherwise (hashed when it is not a plain name), bad listeners refused", () => {
    expect(tokenFileName({ hostname: "127.0.0.1", port: 8787 })).toBe("token-8787");
    expect(tokenFileName({ hostname: "0.0.0.0", port: 8787 })).toBe("token-0.0.0.0-8787");
    expect(tokenFileName({ hostname: "localhost", port: 1 })).toBe("token-localhost-1");
    const v6 = tokenFileName({ hostname: "::1", port: 8787 });
    expect(v6).toBe(`token-h${createHash("sha256").update("::1").digest("hex").slice(0, 12)}-8787`);
    // names that would escape the state directory are hashed, never used as paths
    expect(tokenFileName({ hostname: "../../etc", port: 80 })).toMatch(/^token-h[0-9a-f]{12}-80$/);
    expect(tokenFileName({ unix: "/run/a b/..$x.sock" })).toMatch(/^token-unix-\.\._x\.sock-[0-9a-f]{16}$/);
    expect(tokenFileName({ unix: `/tmp/${"n".repeat(100)}` })).toMatch(new RegExp(`^token-unix-${"n".repeat(32)}-[0-9a-f]{16}$`));
    for (const port of [0, 65536, 1.5, -1, Number.NaN])
      expect(() => tokenFileName({ hostname: "127.0.0.1", port })).toThrow(/port must be an integer between 1 and 65535/);
    expect(() => tokenFileName({ hostname: "", port: 80 })).toThrow(TypeError);
    expect(() => tokenFileName({ unix: "" })).toThrow(TypeError);
  });

  test("removeTokenFileIfHolds removes only its own token, and puts back another daemon's token that arrived between its check and the removal", () => {
    const dir = tempDir();
    const f = join(dir, "token");
    const mine = "a".repeat(64);
    const theirs = "b".repeat(64);
    writeFileSync(f, `${theirs}\n`);
    expect(removeTokenFileIfHolds(f, mine)).toBe(false);
    expect(readFileSync(f, "utf8")).toBe(`${theirs}\n`);
    // the race: the file is ours at the check, another daemon replaces it before the removal
    writeFileSync(f, `${mine}\n`);
    const removed = removeTokenFileIfHolds(f, mine, {
      afterCheck: () => {
        writeFileSync(`${f}.new`, `${theirs}\n`, { mode: 0o600 });
        renameSync(`${f}.new`, f);
      },
    });
    expect(removed).toBe(false);
    expect(readFileSync(f, "utf8")).toBe(`${theirs}\n`);
    expect(readdirSync(dir)).toEqual(["token"]); // nothing left aside
    writeFileSync(f, `${mine}\n`);
    expect(removeTokenFileIfHolds(f, mine)).toBe(true);
    expect(existsSync(f)).toBe(false);
    expect(removeTokenFileIfHolds(f, mine)).toBe(false); // already gone
    // a prefix or the token without its newline is not a match
    writeFileSync(f, mine);
    expect(removeTokenFileIfHolds(f, mine)).toBe(false);
    writeFileSync(f, `${mine}\nextra`);
    expect(removeTokenFileIfHolds(f, mine)).toBe(false);
    expect(existsSync(f)).toBe(true);
  });

  test("prepareDaemonToken: writes nothing before commit; a failed write of token takes the own file back; AGENTCORE_TOKEN writes nothing", () => {
    const dir = tempDir();
    const state = join(dir, "state");
    const p = prepareDaemonToken(state, {});
    expect(readdirSync(state)).toEqual([]); // checked and created, nothing written yet
    mkdirSync(join(state, "token")); // token cannot be replaced
    expect(() => p.commit({ hostname: "127.0.0.1", port: 4321 })).toThrow(TokenError);
    expect(readdirSync(state)).toEqual(["token"]); // token-4321 was taken back
    rmSync(join(state, "token"), { recursive: true });
    const c = p.commit({ hostname: "127.0.0.1", port: 4321 });
    expect(c.file).toBe(join(state, "token-4321"));
    expect(c.sharedFile).toBe(join(state, "token"));
    expect(snapshot(state)).toEqual({ token: `${p.token}\n`, "token-4321": `${p.token}\n` });
    expect(c.release().sort()).toEqual([join(state, "token"), join(state, "token-4321")]);
    expect(c.release()).toEqual([]);
    expect(readdirSync(state)).toEqual([]);
    const env = prepareDaemonToken(join(dir, "never-created"), { AGENTCORE_TOKEN: "k".repeat(40) });
    const ce = env.commit({ hostname: "127.0.0.1", port: 4321 });
    expect(ce).toMatchObject({ token: "k".repeat(40), file: null, sharedFile: null });
    expect(ce.release()).toEqual([]);
    expect(existsSync(join(dir, "never-created"))).toBe(false);
    expect(() => env.commit({ hostname: "127.0.0.1", port: 0 })).toThrow(TypeError);
  });
});
