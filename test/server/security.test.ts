/**
 * Authentication, Host/Origin guards, body limits, concurrency and deadlines,
 * over real loopback sockets (raw HTTP where the exact head matters).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ERROR_CODES } from "../../src/core/envelope.ts";
import { bearerChecker, loadOrCreateToken, TokenError } from "../../src/server/token.ts";
import { hostOriginGuard } from "../../src/server/guard.ts";
import { createLogger } from "../../src/core/logger.ts";
import { eventually, rawRequest, startTestDaemon, type TestDaemon } from "../support/daemon.ts";
import type { ApprovalNotice } from "../../src/server/approvals.ts";

let d: TestDaemon;
beforeAll(async () => {
  d = await startTestDaemon({ allowedOrigins: ["http://localhost:5173"], maxBodyBytes: 1 << 20 });
});
afterAll(() => d.stop());

function envelopeOf(text: string) {
  const env = JSON.parse(text);
  expect(Object.keys(env)).toEqual(["id", "success", "tool", "result", "error", "duration_ms"]);
  expect(env.success).toBe(false);
  expect(ERROR_CODES as readonly string[]).toContain(env.error.code);
  expect(text).not.toContain("    at "); // never a stack trace
  return env;
}

const call = '{"id":"c1","tool":"echo","arguments":{"message":"hi"}}';

describe("authentication", () => {
  test("health needs no token and says only that it is up", async () => {
    const r = await fetch(`${d.url}/v1/health`);
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ status: "ok" });
  });

  test("a missing token gets 401 with an envelope on every other route", async () => {
    for (const [method, path] of [
      ["GET", "/v1/tools"],
      ["GET", "/v1/openapi.json"],
      ["POST", "/v1/calls"],
      ["GET", "/v1/runs"],
      ["GET", "/v1/approvals"],
      ["GET", "/v1/sessions"],
      ["POST", "/v1/runs"],
    ] as const) {
      const r = await fetch(d.url + path, {
        method,
        headers: { "content-type": "application/json" },
        body: method === "POST" ? call : undefined,
      });
      expect(r.status).toBe(401);
      expect(r.headers.get("www-authenticate")).toContain("Bearer");
      expect(envelopeOf(await r.text()).error.code).toBe("UNAUTHORIZED");
    }
  });

  test("a wrong token, a token with the wrong scheme, a prefix or a longer token get 401", async () => {
    for (const value of [
      `Bearer ${"0".repeat(64)}`,
      `Basic ${d.token}`,
      `Bearer ${d.token.slice(0, 63)}`,
      `Bearer ${d.token}0`,
      `Bearer`,
      d.token,
      `Bearer ${d.token} extra`,
    ]) {
      const r = await fetch(`${d.url}/v1/tools`, { headers: { authorization: value } });
      expect(r.status).toBe(401);
      await r.text();
    }
  });

  test("the right token passes (scheme case-insensitive)", async () => {
    const r = await fetch(`${d.url}/v1/tools`, { headers: { authorization: `bearer ${d.token}` } });
    expect(r.status).toBe(200);
    const names = (await r.json()).tools.map((t: { name: string }) => t.name);
    expect(names).toEqual(["echo", "read_file", "sleep"]);
  });

  test("bearerChecker compares whole tokens", () => {
    const check = bearerChecker("a".repeat(64));
    expect(check(`Bearer ${"a".repeat(64)}`)).toBe(true);
    expect(check(`Bearer ${"a".repeat(63)}`)).toBe(false);
    expect(check(`Bearer ${"a".repeat(63)}b`)).toBe(false);
    expect(check(undefined)).toBe(false);
    expect(check("")).toBe(false);
  });
});

describe("token file", () => {
  test("256 random bits in a 0600 file inside a 0700 directory; a new token per start", () => {
    const dir = mkdtempSync(join(tmpdir(), "agentcore-token-"));
    try {
      const state = join(dir, "state", "agentcore");
      const a = loadOrCreateToken(state, {});
      expect(a.token).toMatch(/^[0-9a-f]{64}$/);
      expect(a.file).toBe(join(state, "token"));
      expect(readFileSync(a.file!, "utf8")).toBe(`${a.token}\n`);
      expect(statSync(a.file!).mode & 0o777).toBe(0o600);
      expect(statSync(state).mode & 0o777).toBe(0o700);
      const b = loadOrCreateToken(state, {});
      expect(b.token).not.toBe(a.token);
      expect(readFileSync(a.file!, "utf8")).toBe(`${b.token}\n`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("AGENTCORE_TOKEN wins and must be long enough", () => {
    const t = "x".repeat(40);
    expect(loadOrCreateToken("/nonexistent/never-created", { AGENTCORE_TOKEN: t })).toEqual({ token: t, file: null });
    expect(() => loadOrCreateToken("/nonexistent", { AGENTCORE_TOKEN: "short" })).toThrow(TokenError);
    expect(() => loadOrCreateToken("/nonexistent", { AGENTCORE_TOKEN: `${"x".repeat(40)} y` })).toThrow(/whitespace/);
  });
});

describe("Host and Origin (DNS rebinding)", () => {
  const get = (host: string | null, extra = "") =>
    rawRequest(
      d.port,
      `GET /v1/tools HTTP/1.1\r\n${host === null ? "" : `Host: ${host}\r\n`}Authorization: Bearer ${d.token}\r\nConnection: close\r\n${extra}`,
    );

  test("loopback names with the daemon's port pass", async () => {
    for (const h of [`127.0.0.1:${d.port}`, `localhost:${d.port}`, `LOCALHOST:${d.port}`, `[::1]:${d.port}`, `127.1.2.3:${d.port}`]) {
      expect((await get(h)).status).toBe(200);
    }
  });

  test("Host: evil.example, :port, an empty host, another port, no port, or a lookalike get 403", async () => {
    for (const h of [
      "evil.example",
      `evil.example:${d.port}`,
      `:${d.port}`,
      "",
      `127.0.0.1:${d.port + 1}`,
      "127.0.0.1",
      `localhost.evil.example:${d.port}`,
      `127.0.0.1.nip.io:${d.port}`,
      `0.0.0.0:${d.port}`,
      `user@127.0.0.1:${d.port}`,
    ]) {
      const r = await get(h);
      expect(r.status).toBe(403);
      const env = envelopeOf(r.body);
      expect(env.error.code).toBe("FORBIDDEN");
      expect(env.error.details.header).toBe("host");
    }
  });

  test("the guard runs before authentication, also for health", async () => {
    const r = await rawRequest(d.port, `GET /v1/health HTTP/1.1\r\nHost: evil.example:${d.port}\r\nConnection: close`);
    expect(r.status).toBe(403);
  });

  test("an Origin not in the allowlist gets 403; an allowed one is echoed by name, never *", async () => {
    for (const o of [
      "http://evil.example",
      "null",
      `http://127.0.0.1:${d.port}`,
      "http://localhost:5174",
      "http://localhost:5173/path",
      "file://",
    ]) {
      const r = await get(`127.0.0.1:${d.port}`, `Origin: ${o}\r\n`);
      expect(r.status).toBe(403);
      expect(envelopeOf(r.body).error.details.header).toBe("origin");
      expect(r.headers["access-control-allow-origin"]).toBeUndefined();
    }
    const ok = await get(`127.0.0.1:${d.port}`, "Origin: http://localhost:5173\r\n");
    expect(ok.status).toBe(200);
    expect(ok.headers["access-control-allow-origin"]).toBe("http://localhost:5173");
    expect(ok.headers.vary).toBe("Origin");
  });

  test("a preflight from an allowed origin is answered without a token; never a wildcard", async () => {
    const r = await rawRequest(
      d.port,
      `OPTIONS /v1/calls HTTP/1.1\r\nHost: localhost:${d.port}\r\nOrigin: http://localhost:5173\r\nAccess-Control-Request-Method: POST\r\nConnection: close`,
    );
    expect(r.status).toBe(204);
    expect(r.headers["access-control-allow-origin"]).toBe("http://localhost:5173");
    const bad = await rawRequest(
      d.port,
      `OPTIONS /v1/calls HTTP/1.1\r\nHost: localhost:${d.port}\r\nOrigin: http://evil.example\r\nConnection: close`,
    );
    expect(bad.status).toBe(403);
  });

  test("allowed hosts: name:port exactly, a bare name with the daemon's port (known only after listening); malformed entries throw", () => {
    let port: number | null = null;
    const check = hostOriginGuard({ port: () => port, allowedHosts: ["box.lan:9000", "192.0.2.7", "[fd00::1]"] });
    port = 41234; // bound after the guard was made (--port 0)
    expect(check("192.0.2.7:41234", null)).toBeNull();
    expect(check("[fd00::1]:41234", null)).toBeNull();
    expect(check("192.0.2.7:41235", null)?.header).toBe("host");
    expect(check("192.0.2.7", null)?.header).toBe("host");
    expect(check("box.lan:9000", null)).toBeNull();
    expect(check("box.lan:41234", null)?.header).toBe("host");
    expect(check("other.lan:41234", null)?.header).toBe("host");
    expect(() => hostOriginGuard({ port: () => 1, allowedHosts: ["not a host"] })).toThrow(TypeError);
    expect(() => hostOriginGuard({ port: () => 1, allowedHosts: [":8787"] })).toThrow(TypeError);
  });

  test("a Host without a port means port 80 (what clients send to a daemon on port 80)", () => {
    const on80 = hostOriginGuard({ port: () => 80 });
    expect(on80("localhost", null)).toBeNull();
    expect(on80("127.0.0.1", null)).toBeNull();
    expect(on80("localhost:80", null)).toBeNull();
    expect(on80("evil.example", null)?.header).toBe("host");
    const on8787 = hostOriginGuard({ port: () => 8787 });
    expect(on8787("localhost", null)?.header).toBe("host");
  });

  test("on a Unix socket (no port) loopback names without a port pass", () => {
    const check = hostOriginGuard({ port: () => null });
    expect(check("localhost", null)).toBeNull();
    expect(check("localhost:8787", null)?.header).toBe("host");
    expect(check("evil.example", null)?.header).toBe("host");
  });
});

describe("bodies", () => {
  test("a body over 1 MiB gets 413 with a JSON_SIZE envelope (declared length)", async () => {
    const big = JSON.stringify({ tool: "echo", arguments: { message: "x".repeat((1 << 20) + 10) } });
    const r = await d.req("/v1/calls", { method: "POST", headers: { "content-type": "application/json" }, body: big });
    expect(r.status).toBe(413);
    const env = envelopeOf(await r.text());
    expect(env.error.code).toBe("JSON_SIZE");
    expect(env.error.details.max_bytes).toBe(1 << 20);
  });

  test("a chunked body is counted while it streams and refused past the cap", async () => {
    const chunk = "x".repeat(64 * 1024);
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(c) {
        if (sent >= 20) return c.close();
        sent++;
        c.enqueue(new TextEncoder().encode(sent === 1 ? `{"tool":"echo","arguments":{"message":"${chunk}` : chunk));
      },
    });
    const r = await d.req("/v1/calls", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: stream,
      duplex: "half",
    } as RequestInit);
    expect(r.status).toBe(413);
    expect(envelopeOf(await r.text()).error.details.received_bytes).toBeGreaterThan(1 << 20);
  });

  test("malformed JSON gets 400 with an envelope that says where", async () => {
    const r = await d.req("/v1/calls", { method: "POST", headers: { "content-type": "application/json" }, body: '{"tool":"echo",' });
    expect(r.status).toBe(400);
    const env = envelopeOf(await r.text());
    expect(env.error.code).toBe("JSON_PARSE");
    expect(env.error.details).toHaveProperty("offset");
    const dup = await d.req("/v1/runs", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: '{"task":"a","task":"b"}',
    });
    expect(dup.status).toBe(400);
    const e2 = envelopeOf(await dup.text());
    expect(e2.error.code).toBe("JSON_DUPLICATE_KEY");
    expect(e2.error.message).toContain("line 1");
  });

  test("bodies must be JSON: another content type gets 415", async () => {
    for (const type of ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"]) {
      const r = await d.req("/v1/calls", { method: "POST", headers: { "content-type": type }, body: call });
      expect(r.status).toBe(415);
      expect(envelopeOf(await r.text()).error.code).toBe("INVALID_REQUEST");
    }
    const none = await rawRequest(
      d.port,
      `POST /v1/runs HTTP/1.1\r\nHost: localhost:${d.port}\r\nAuthorization: Bearer ${d.token}\r\nContent-Length: 12\r\nConnection: close`,
      '{"task":"x"}',
    );
    expect(none.status).toBe(415);
  });

  test("wrong fields name their JSON Pointer", async () => {
    const cases: [unknown, string][] = [
      [[], ""],
      [{ task: 5 }, "/task"],
      [{ task: " " }, "/task"],
      [{ task: "x", max_steps: 0 }, "/max_steps"],
      [{ task: "x", bogus: 1 }, "/bogus"],
      [{ task: "x", model: { preset: "nope" } }, "/model/preset"],
      [{ task: "x", model: { url: "file:///etc/passwd" } }, "/model/url"],
      [{ task: "x", script: [{ content: "a" }], model: {} }, "/script"],
      [{ task: "x", branch: "b" }, "/branch"],
      [{ task: "x", detached: "yes" }, "/detached"],
      [{ task: "x", script: [{ bogus: 1 }] }, "/script"],
    ];
    for (const [body, location] of cases) {
      const r = await d.req("/v1/runs", { method: "POST", json: body });
      expect(r.status).toBe(400);
      const env = envelopeOf(await r.text());
      expect(env.error.code).toBe("INVALID_REQUEST");
      expect(env.error.details.location).toBe(location);
    }
  });

  test("unknown routes and methods get a 404 envelope", async () => {
    for (const [m, p] of [
      ["GET", "/v2/health"],
      ["DELETE", "/v1/runs"],
      ["GET", "/v1/runs/run_nope"],
      ["POST", "/v1/approvals/apr_nope"],
    ] as const) {
      const r = await d.req(p, { method: m, json: m === "POST" ? { approved: true } : undefined });
      expect(r.status).toBe(404);
      expect(envelopeOf(await r.text()).error.code).toBe("NOT_FOUND");
    }
  });
});

describe("internal errors", () => {
  test("an unexpected exception is a bare 500 INTERNAL_ERROR envelope: no message, no stack", async () => {
    const logged: string[] = [];
    const t = await startTestDaemon({
      runtimeOptions: { logger: createLogger({ level: "error", sink: (l) => logged.push(l) }) },
      mount: (app) => {
        app.get("/v1/boom", () => {
          throw new Error("secret internal detail at /home/me/key");
        });
      },
    });
    try {
      const r = await t.req("/v1/boom");
      expect(r.status).toBe(500);
      const text = await r.text();
      expect(envelopeOf(text).error).toEqual({ code: "INTERNAL_ERROR", message: "internal error", details: {} });
      expect(text).not.toContain("secret");
      expect(text).not.toContain("/home/me");
      // the operator's log has it
      expect(logged.join("\n")).toContain("secret internal detail");
    } finally {
      await t.stop();
    }
  });
});

describe("limits", () => {
  test("past the concurrency limit requests get 503 with Retry-After", async () => {
    const small = await startTestDaemon({ maxConcurrent: 2 });
    try {
      const slow = () => small.req("/v1/calls", { method: "POST", json: { tool: "sleep", arguments: { ms: 100_000 } }, signal: ac.signal });
      const ac = new AbortController();
      const pending = [slow(), slow()];
      pending.forEach((p) => p.catch(() => {}));
      // Wait until both are inside (the daemon counts them), then one more is refused.
      let r: Response;
      for (;;) {
        r = await small.req("/v1/tools");
        if (r.status === 503) break;
        await r.text();
        await new Promise((res) => setTimeout(res, 10));
      }
      expect(r.headers.get("retry-after")).toBe("1");
      const env = envelopeOf(await r.text());
      expect(env.error.code).toBe("OVERLOADED");
      expect(env.error.details.limit).toBe("max_concurrent");
      // health stays answerable
      expect((await fetch(`${small.url}/v1/health`)).status).toBe(200);
      ac.abort();
    } finally {
      await small.stop();
    }
  });

  test("a request that outlives its deadline gets 504 TIMEOUT and its call is cancelled", async () => {
    const t = await startTestDaemon({
      requestTimeoutMs: 200,
      policy: { default: "allow", rules: [{ id: "ask", action: "require_approval", tools: ["echo"] }] },
    });
    const notices: ApprovalNotice[] = [];
    t.running.daemon.approvals.subscribe((n) => notices.push(n));
    try {
      const r = await t.req("/v1/calls", { method: "POST", json: { tool: "sleep", arguments: { ms: 100_000 } } });
      expect(r.status).toBe(504);
      const env = envelopeOf(await r.text());
      expect(env.error.code).toBe("TIMEOUT");
      expect(env.error.details.timeout_ms).toBe(200);
      // A call parked on an approval past the deadline: the call's signal fires, so the approval is withdrawn.
      const parked = await t.req("/v1/calls", { method: "POST", json: { id: "p1", tool: "echo", arguments: {} } });
      expect(parked.status).toBe(504);
      await parked.text();
      const resolved = await eventually(() => notices.find((n) => n.kind === "approval_resolved"));
      expect(resolved).toMatchObject({ approval: { tool: "echo", tool_call_id: "p1" }, outcome: { approved: false, by: "aborted" } });
      expect(t.running.daemon.approvals.list()).toEqual([]);
    } finally {
      await t.stop();
    }
  });
});
