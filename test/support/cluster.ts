/**
 * Helpers of the cluster tests (test/server/cluster*.test.ts): daemons of
 * the compiled binary on one PostgreSQL store, on loopback, and what they
 * are asked.
 */
import { afterEach, beforeAll, describe } from "bun:test";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { binaryPath } from "./binary.ts";
import { freshDatabase, skipMessage } from "./postgres.ts";

export const ENV = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: os.tmpdir() };

let bin = "";
export const live: { kill(signal?: number | NodeJS.Signals): void }[] = [];
export const sleepers: string[] = [];

/**
 * Set up a cluster test file (call it at the file's top level): a fresh
 * database of its own (dropped after the file), the binary built before its
 * tests, and every daemon and left-over sleeper of a test killed after it.
 * `maybe` is `describe`, or `describe.skip` without a PostgreSQL server.
 */
export async function clusterFile(what = "the cluster tests"): Promise<{ db: string | null; maybe: typeof describe }> {
  const db = await freshDatabase();
  if (db === null) console.warn(`skipping ${what}: ${skipMessage}`);
  beforeAll(() => {
    if (db !== null) bin = binaryPath();
  }, 300_000);
  afterEach(() => {
    for (const p of live.splice(0)) p.kill("SIGKILL");
    for (const f of sleepers.splice(0)) {
      try {
        process.kill(Number(fs.readFileSync(f, "utf8").trim()), "SIGKILL");
      } catch {
        /* gone */
      }
    }
  });
  return { db, maybe: db === null ? describe.skip : describe };
}

/** A config whose exec may run sh without isolation, and maybe a policy. */
export function config(dir: string, extra: Record<string, unknown> = {}): string {
  const f = path.join(dir, "config.json");
  fs.writeFileSync(
    f,
    JSON.stringify({ tools: { exec: { allow: ["sh"], env: ["PATH"], isolation: "off", timeout_ms: 600_000 } }, ...extra }),
  );
  return f;
}

export const ASK = {
  policy: {
    default: "allow",
    rules: [{ id: "side-effecting", action: "require_approval", effects: ["side_effecting"], reason: "ask first" }],
  },
};

/** A model turn that runs `cmd` through exec (side-effecting) and an echo (read-only). */
export function shTurn(cmd: string, id = "w1") {
  return {
    content: null,
    tool_calls: [
      { id, name: "exec", arguments: JSON.stringify({ argv: ["sh", "-c", cmd] }) },
      { id: `${id}-echo`, name: "echo", arguments: JSON.stringify({ message: "same turn" }) },
    ],
  };
}

export const lines = (f: string) =>
  fs.existsSync(f)
    ? fs
        .readFileSync(f, "utf8")
        .split("\n")
        .filter((l) => l !== "")
    : [];

export interface Daemon {
  proc: ReturnType<typeof Bun.spawn>;
  url: string;
  tokenFile: string;
  stderr: () => string;
}

/** `agentcore serve --store <db>` on a free loopback port, its own state directory; `env` is added to {@link ENV}. */
export async function startDaemon(
  store: string,
  dir: string,
  name: string,
  cfg: string,
  extra: string[] = [],
  env: Record<string, string> = {},
): Promise<Daemon> {
  const state = path.join(dir, `state-${name}`);
  if (bin === "") bin = binaryPath();
  const proc = Bun.spawn([bin, "serve", "--config", cfg, "--store", store, "--port", "0", "--state-dir", state, ...extra], {
    cwd: dir,
    stdout: "ignore",
    stderr: "pipe",
    stdin: "ignore",
    env: { ...ENV, ...env },
  });
  live.push(proc);
  let printed = "";
  const reader = (proc.stderr as ReadableStream<Uint8Array>).getReader();
  while (!/token file (\S+)\n/.test(printed)) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`serve ${name} ended: ${printed}`);
    printed += new TextDecoder().decode(value);
  }
  // keep reading, so that the pipe never fills
  void (async () => {
    for (;;) {
      const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
      if (done) return;
      printed += new TextDecoder().decode(value);
    }
  })();
  return {
    proc,
    url: /listening on (\S+)\n/.exec(printed)![1]!,
    tokenFile: /token file (\S+)\n/.exec(printed)![1]!,
    stderr: () => printed,
  };
}

export function auth(d: Daemon) {
  return { authorization: `Bearer ${fs.readFileSync(d.tokenFile, "utf8").trim()}`, "content-type": "application/json" };
}

export async function call(d: Daemon, method: string, route: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${d.url}${route}`, {
    method,
    headers: { ...auth(d), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let json: any = null;
  try {
    json = JSON.parse(text);
  } catch {
    /* SSE or empty */
  }
  return { status: res.status, json, text };
}

export async function waitFor<T>(check: () => Promise<T | null | undefined | false>, what: string, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v !== null && v !== undefined && v !== false) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(100);
  }
}

/**
 * The SSE messages of a stream until `done`, or until `boundMs` has passed
 * (then the messages so far, without `done`: the caller's expectation fails).
 */
export async function sse(d: Daemon, runId: string, lastEventId?: number, boundMs = 90_000) {
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), boundMs);
  const res = await fetch(`${d.url}/v1/runs/${runId}/events`, {
    headers: { ...auth(d), ...(lastEventId !== undefined ? { "last-event-id": String(lastEventId) } : {}) },
    signal: ac.signal,
  });
  let text = "";
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
  } catch {
    /* the bound: what came so far */
  }
  clearTimeout(timer);
  const messages = text
    .split("\n\n")
    .slice(0, -1) // a message cut by the bound is left out
    .filter((m) => /^event: /m.test(m))
    .map((m) => ({
      id: /^id: (\d+)$/m.exec(m)?.[1] !== undefined ? Number(/^id: (\d+)$/m.exec(m)![1]) : null,
      event: /^event: (.+)$/m.exec(m)![1]!,
      data: JSON.parse(/^data: (.+)$/m.exec(m)![1]!),
    }));
  return { status: res.status, messages };
}

/** The run's row once its owner is set (it has been claimed). */
export const claimed = (d: Daemon, runId: string) =>
  waitFor(async () => {
    const r = await call(d, "GET", `/v1/runs/${runId}`);
    return r.status === 200 && (r.json.owner ?? r.json.agent_id) ? r.json : null;
  }, `run ${runId} to be claimed`);

export const settled = (d: Daemon, runId: string, ms = 90_000) =>
  waitFor(
    async () => {
      const r = await call(d, "GET", `/v1/runs/${runId}`);
      return r.status === 200 && r.json.status !== "running" && r.json.status !== "queued" && r.json.result !== null ? r.json : null;
    },
    `run ${runId} to settle`,
    ms,
  );
