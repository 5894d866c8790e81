/**
 * The compiled `agentcore serve` at its limits, as a real child process:
 * - at `--max-concurrent`, health, the approval routes and abort still get
 *   through (they are what frees a full daemon), while a new call is refused;
 * - `--access-log`: one line per request with method, path, status and
 *   duration, and never the token, a query string or a body;
 * - a refused client (401, 403, 413, 431) and a 504 get `Connection: close`
 *   and the socket really closes (raw `node:net` sockets on loopback).
 */
import { afterAll, afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import * as net from "node:net";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { binaryPath } from "../support/binary.ts";
import { collectStderr, eventually, SseReader } from "../support/daemon.ts";

// The first test builds the binary; on a loaded machine that takes a while.
setDefaultTimeout(180_000);

const dirs: string[] = [];
const procs: ReturnType<typeof Bun.spawn>[] = [];
afterEach(() => {
  for (const p of procs.splice(0)) if (p.exitCode === null) p.kill("SIGKILL");
});
afterAll(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

interface Daemon {
  proc: ReturnType<typeof Bun.spawn>;
  url: string;
  port: number;
  token: string;
  auth: Record<string, string>;
  stderr: () => string;
  /** SIGTERM, then the whole of stderr once it has exited. */
  stop(): Promise<string>;
}

/** The compiled binary's `serve` on a free port, with `config` as its config file. */
async function serve(args: string[], config: Record<string, unknown> = {}, env: Record<string, string> = {}): Promise<Daemon> {
  const dir = mkdtempSync(join(tmpdir(), "agentcore-serve-conn-"));
  dirs.push(dir);
  const cfg = join(dir, "agentcore.json");
  writeFileSync(cfg, JSON.stringify(config));
  const proc = Bun.spawn(
    [binaryPath(), "serve", "--port", "0", "--state-dir", join(dir, "state"), "--root", dir, "--config", cfg, ...args],
    {
      cwd: dir,
      env: { PATH: process.env.PATH ?? "", HOME: dir, ...env },
      stdin: "ignore",
      stdout: "ignore",
      stderr: "pipe",
    },
  );
  procs.push(proc);
  const err = collectStderr(proc);
  const text = await err.ready(/token (file .+|from AGENTCORE_TOKEN)\n/);
  const url = /serve: listening on (\S+)\n/.exec(text)![1]!;
  const file = /token file (.+)\n/.exec(text)?.[1];
  const token = file !== undefined ? readFileSync(file, "utf8").trim() : env.AGENTCORE_TOKEN!;
  return {
    proc,
    url,
    port: Number(new URL(url).port),
    token,
    auth: { authorization: `Bearer ${token}` },
    stderr: err.text,
    async stop() {
      proc.kill("SIGTERM");
      expect(await err.exited).toBe(0);
      return err.text();
    },
  };
}

const ASK_ECHO = { policy: { default: "allow", rules: [{ id: "ask-echo", action: "require_approval", tools: ["echo"] }] } };
const json = (d: Daemon, body: unknown, extra: Record<string, string> = {}): RequestInit => ({
  method: "POST",
  headers: { ...d.auth, "content-type": "application/json", ...extra },
  body: JSON.stringify(body),
});
const echoStep = (id: string, message: string) => ({
  content: null,
  tool_calls: [{ id, name: "echo", arguments: JSON.stringify({ message }) }],
});

describe("at --max-concurrent, the control routes still get through", () => {
  test("a call parked on an approval fills the cap: new calls get 503, but health, the approvals list, an approval answer and abort are answered and free the daemon", async () => {
    const d = await serve(["--max-concurrent", "1"], ASK_ECHO);
    try {
      // Two runs, each waiting on an approval (a stream holds no slot once its headers are sent).
      const start = async (message: string) => {
        const res = await fetch(
          `${d.url}/v1/runs`,
          json(d, { task: message, script: [echoStep("c1", message), { content: `done ${message}` }] }),
        );
        expect(res.status).toBe(201);
        const sse = new SseReader(res);
        const asked = await sse.until((m) => m.event === "approval_requested");
        return { runId: res.headers.get("x-run-id")!, sse, approvalId: asked!.data.approval.approval_id as string };
      };
      const approveMe = await start("approve me");
      const abortMe = await start("abort me");
      // A call parked on its own approval holds the only slot.
      const parked = fetch(`${d.url}/v1/calls`, json(d, { id: "parked", tool: "echo", arguments: { message: "parked" } }));
      const listed = await eventually(async () => {
        const r = await fetch(`${d.url}/v1/approvals`, { headers: d.auth });
        expect(r.status).toBe(200); // the list is a control route: answered at the cap
        const list = (await r.json()).approvals as { approval_id: string; tool_call_id: string }[];
        return list.length === 3 ? list : undefined;
      });
      const parkedApproval = listed.find((a) => a.tool_call_id === "parked")!.approval_id;

      // The daemon is full: an ordinary request is refused, as documented.
      const refused = await fetch(`${d.url}/v1/calls`, json(d, { id: "x", tool: "sleep_not_needed", arguments: {} }));
      expect(refused.status).toBe(503);
      expect(refused.headers.get("retry-after")).toBe("1");
      expect((await refused.json()).error).toMatchObject({ code: "OVERLOADED", details: { limit: "max_concurrent" } });
      const tools = await fetch(`${d.url}/v1/tools`, { headers: d.auth });
      expect(tools.status).toBe(503);
      await tools.text();

      // Health answers.
      const health = await fetch(`${d.url}/v1/health`);
      expect(health.status).toBe(200);
      expect(await health.json()).toEqual({ status: "ok" });

      // The approval answer gets through and frees its run, which completes.
      const ok = await fetch(`${d.url}/v1/approvals/${approveMe.approvalId}`, json(d, { approved: true }));
      expect(ok.status).toBe(200);
      expect(await ok.json()).toMatchObject({ approval_id: approveMe.approvalId, approved: true });
      const done1 = await approveMe.sse.until((m) => m.event === "done");
      expect(done1!.data.result).toMatchObject({ status: "completed", output: "done approve me" });

      // Abort gets through and ends the other run.
      const ab = await fetch(`${d.url}/v1/runs/${abortMe.runId}/abort`, json(d, { reason: "stop it" }));
      expect(ab.status).toBe(200);
      expect(await ab.json()).toEqual({ run_id: abortMe.runId, aborted: true });
      const done2 = await abortMe.sse.until((m) => m.event === "done");
      expect(done2!.data.result).toMatchObject({ status: "cancelled" });

      // Still full (the parked call): answering its approval frees the slot.
      const stillFull = await fetch(`${d.url}/v1/tools`, { headers: d.auth });
      expect(stillFull.status).toBe(503);
      await stillFull.text();
      const free = await fetch(`${d.url}/v1/approvals/${parkedApproval}`, json(d, { approved: true }));
      expect(free.status).toBe(200);
      await free.text();
      const call = await parked;
      expect(call.status).toBe(200);
      expect(await call.json()).toMatchObject({ id: "parked", success: true, result: { message: "parked" } });
      const after = await fetch(`${d.url}/v1/tools`, { headers: d.auth });
      expect(after.status).toBe(200);
      await after.text();
      // A control route still needs the token, at the cap or not.
      const anon = await fetch(`${d.url}/v1/approvals`);
      expect(anon.status).toBe(401);
      await anon.text();
    } finally {
      await d.stop();
    }
  });
});

describe("--access-log", () => {
  const TOKEN = "t0ken-".repeat(8);
  const exercise = async (d: Daemon) => {
    const call = await fetch(
      `${d.url}/v1/calls`,
      json(d, { id: "a1", tool: "echo", arguments: { password: "hunter2-body-secret" } }, { cookie: "session=cookie-secret" }),
    );
    expect(call.status).toBe(200);
    await call.text();
    const missing = await fetch(`${d.url}/v1/runs/run_nope/events?after=1&api_key=query-secret`, { headers: d.auth });
    expect(missing.status).toBe(404);
    await missing.text();
    const anon = await fetch(`${d.url}/v1/tools`, { headers: { authorization: "Bearer wrong-token-secret" } });
    expect(anon.status).toBe(401);
    await anon.text();
    const health = await fetch(`${d.url}/v1/health`);
    await health.text();
  };

  test("one line per request (method, path without the query string, status, ms), never the token, a cookie, the query or the body", async () => {
    const d = await serve(["--access-log"], {}, { AGENTCORE_TOKEN: TOKEN });
    await exercise(d);
    await eventually(() => (d.stderr().includes("path=/v1/health") ? true : undefined));
    const stderr = await d.stop();
    const lines = stderr.split("\n").filter((l) => l.startsWith("agentcore info access "));
    expect(lines).toHaveLength(4);
    expect(lines[0]).toMatch(/^agentcore info access method=POST path=\/v1\/calls status=200 ms=\d+(\.\d)?$/);
    expect(lines[1]).toMatch(/^agentcore info access method=GET path=\/v1\/runs\/run_nope\/events status=404 ms=\d+(\.\d)?$/);
    expect(lines[2]).toMatch(/^agentcore info access method=GET path=\/v1\/tools status=401 ms=\d+(\.\d)?$/);
    expect(lines[3]).toMatch(/^agentcore info access method=GET path=\/v1\/health status=200 ms=\d+(\.\d)?$/);
    for (const secret of [TOKEN, "hunter2", "cookie-secret", "query-secret", "api_key", "wrong-token-secret", "Bearer"])
      expect(stderr).not.toContain(secret);
  });

  test("off by default: the same requests write no access line", async () => {
    const d = await serve([], {}, { AGENTCORE_TOKEN: TOKEN });
    await exercise(d);
    const stderr = await d.stop();
    expect(stderr).not.toContain(" access ");
    expect(stderr).toContain("agentcore serve: stopped");
  });

  test("AGENTCORE_LOG_LEVEL=info turns it on too", async () => {
    const d = await serve([], {}, { AGENTCORE_TOKEN: TOKEN, AGENTCORE_LOG_LEVEL: "info" });
    const health = await fetch(`${d.url}/v1/health?x=1`);
    await health.text();
    await eventually(() => (d.stderr().includes("agentcore info access ") ? true : undefined));
    const stderr = await d.stop();
    expect(stderr).toMatch(/agentcore info access method=GET path=\/v1\/health status=200 ms=/);
  });

  test("--help documents the flag", async () => {
    const p = Bun.spawn([binaryPath(), "serve", "--help"], { stdout: "pipe", stderr: "pipe" });
    const [out, code] = await Promise.all([new Response(p.stdout).text(), p.exited]);
    expect(code).toBe(0);
    expect(out).toContain("--access-log");
  });
});

/**
 * Send `head` (and `body`) on a fresh socket, read one whole response, then
 * wait (at most 10 s) for the server to close the connection.
 */
function exchange(port: number, head: string, body = ""): Promise<{ status: number; headers: Record<string, string>; closed: boolean }> {
  return new Promise((resolve, reject) => {
    const sock = net.connect({ host: "127.0.0.1", port });
    let buf = Buffer.alloc(0);
    let parsed: { status: number; headers: Record<string, string> } | null = null;
    let guard: ReturnType<typeof setTimeout> | undefined;
    const settle = (closed: boolean) => {
      clearTimeout(guard);
      sock.destroy();
      if (parsed === null)
        reject(
          new Error(
            `no whole response before the socket ${closed ? "closed" : "timed out"}: ${JSON.stringify(buf.toString("latin1").slice(0, 300))}`,
          ),
        );
      else resolve({ ...parsed, closed });
    };
    sock.on("data", (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      if (parsed !== null) return;
      const at = buf.indexOf("\r\n\r\n");
      if (at < 0) return;
      const lines = buf.subarray(0, at).toString("latin1").split("\r\n");
      const headers: Record<string, string> = {};
      for (const l of lines.slice(1)) headers[l.slice(0, l.indexOf(":")).toLowerCase()] = l.slice(l.indexOf(":") + 1).trim();
      const length = Number(headers["content-length"] ?? "0");
      if (buf.length - at - 4 < length) return;
      parsed = { status: Number(lines[0]!.split(" ")[1]), headers };
      guard = setTimeout(() => settle(false), 10_000);
    });
    sock.on("end", () => settle(true));
    sock.on("close", () => settle(true));
    sock.on("error", () => settle(true));
    sock.write(head + body);
  });
}

describe("refused and timed-out clients: Connection: close, and the socket closes", () => {
  let d: Daemon;
  afterEach(async () => {
    if (d !== undefined && d.proc.exitCode === null) await d.stop();
  });
  const host = () => `Host: 127.0.0.1:${d.port}\r\n`;

  test("401 (no token, and a wrong one with a body still on its way), 403 (Host, Origin), 413, 431 and 504", async () => {
    d = await serve(["--max-body-bytes", "1000", "--request-timeout-ms", "300"], ASK_ECHO);
    const late = '{"id":"late","tool":"echo","arguments":{"m":"late"}}';
    const cases: [string, string, string, number][] = [
      ["no token", `GET /v1/tools HTTP/1.1\r\n${host()}\r\n`, "", 401],
      [
        "a wrong token, the body not all sent",
        `POST /v1/calls HTTP/1.1\r\n${host()}Authorization: Bearer nope\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n`,
        '{"tool":"echo"',
        401,
      ],
      ["a foreign Host", "GET /v1/tools HTTP/1.1\r\nHost: evil.example\r\n\r\n", "", 403],
      [
        "a foreign Origin",
        `GET /v1/tools HTTP/1.1\r\n${host()}Origin: http://evil.example\r\nAuthorization: Bearer ${d.token}\r\n\r\n`,
        "",
        403,
      ],
      [
        "a body over the cap",
        `POST /v1/calls HTTP/1.1\r\n${host()}Authorization: Bearer ${d.token}\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n`,
        "x".repeat(100),
        413,
      ],
      ["headers far too large", `GET /v1/tools HTTP/1.1\r\n${host()}X-Big: ${"a".repeat(200_000)}\r\n\r\n`, "", 431],
      [
        "a call past its deadline (parked on an approval)",
        `POST /v1/calls HTTP/1.1\r\n${host()}Authorization: Bearer ${d.token}\r\nContent-Type: application/json\r\nContent-Length: ${late.length}\r\n\r\n`,
        late,
        504,
      ],
    ];
    for (const [what, head, body, status] of cases) {
      const r = await exchange(d.port, head, body);
      expect({ what, status: r.status }).toEqual({ what, status });
      if (status !== 431) expect({ what, connection: r.headers["connection"] }).toEqual({ what, connection: "close" });
      expect({ what, closed: r.closed }).toEqual({ what, closed: true });
    }
  });

  test("an answered request keeps its connection (no Connection: close)", async () => {
    d = await serve([]);
    const r = await new Promise<{ head: string }>((resolve) => {
      const sock = net.connect({ host: "127.0.0.1", port: d.port });
      let text = "";
      sock.on("data", (b: Buffer) => {
        text += b.toString("latin1");
        if (text.includes("\r\n\r\n") && text.includes('{"status":"ok"}')) {
          sock.destroy();
          resolve({ head: text.slice(0, text.indexOf("\r\n\r\n")) });
        }
      });
      sock.write(`GET /v1/health HTTP/1.1\r\n${host()}\r\n`);
    });
    expect(r.head).toStartWith("HTTP/1.1 200");
    expect(r.head.toLowerCase()).not.toContain("connection: close");
  });
});
