/**
 * POST /v1/calls (every call shape), /v1/calls/batch (NDJSON in, NDJSON out,
 * in order), GET /v1/tools, the OpenAPI document against the routes, and the
 * MCP endpoint with the SDK's v2 Client over Streamable HTTP.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { rawRequest, startTestDaemon, type TestDaemon } from "../support/daemon.ts";

let d: TestDaemon;
beforeAll(async () => {
  d = await startTestDaemon({
    policy: { default: "allow", rules: [{ id: "no-reads", action: "deny", tools: ["read_file"], reason: "reads are off" }] },
  });
  writeFileSync(join(d.dir, "hello.txt"), "hi");
});
afterAll(() => d.stop());

const post = (path: string, body: string, type = "application/json") =>
  d.req(path, { method: "POST", headers: { "content-type": type }, body });

describe("POST /v1/calls", () => {
  test("the four call shapes give the same envelope", async () => {
    const shapes = [
      '{"id":"c1","tool":"echo","arguments":{"x":1}}',
      '{"id":"c1","type":"function","function":{"name":"echo","arguments":"{\\"x\\":1}"}}',
      '{"type":"function_call","call_id":"c1","name":"echo","arguments":"{\\"x\\":1}"}',
      '{"type":"tool_use","id":"c1","name":"echo","input":{"x":1}}',
    ];
    for (const s of shapes) {
      const r = await post("/v1/calls", s);
      expect(r.status).toBe(200);
      const text = await r.text();
      expect(text).toMatch(/^\{"id":"c1","success":true,"tool":"echo","result":\{"x":1\},"error":null,"duration_ms":[0-9.]+\}\n$/);
    }
  });

  test("a malformed call is a 400 envelope; a tool failure or a policy refusal is a 200 envelope with success false", async () => {
    const cases: [string, number, string][] = [
      ['{"id":"c1","tool":"echo","arguments":{"x":1,"x":2}}', 400, "JSON_DUPLICATE_KEY"],
      ['{"id":"c1","tool":"echo"', 400, "JSON_PARSE"],
      ['{"id":"c1","tool":"echo","arguments":[]}', 400, "INVALID_CALL"],
      ['{"id":"c1","tool":"nope","arguments":{}}', 200, "UNKNOWN_TOOL"],
      ['{"id":"c1","tool":"sleep","arguments":{"ms":"soon"}}', 200, "INVALID_ARGUMENTS"],
      ['{"id":"c1","tool":"read_file","arguments":{"path":"hello.txt"}}', 200, "DENIED"],
    ];
    for (const [body, status, code] of cases) {
      const r = await post("/v1/calls", body);
      expect(r.status).toBe(status);
      const env = await r.json();
      expect(env.success).toBe(false);
      expect(env.error.code).toBe(code);
    }
  });

  test("an empty body is a JSON_PARSE envelope, not a crash", async () => {
    const r = await post("/v1/calls", "");
    expect(r.status).toBe(400);
    expect((await r.json()).error.code).toBe("JSON_PARSE");
  });
});

describe("POST /v1/calls/batch", () => {
  test("NDJSON in, one envelope per non-blank line out, in input order, errors with input_line", async () => {
    const lines = [
      '{"id":"a","tool":"sleep","arguments":{"ms":30}}',
      "",
      '{"id":"b","tool":"echo","arguments":{"n":2}}',
      "not json",
      '{"id":"c","tool":"read_file","arguments":{"path":"hello.txt"}}',
      '{"type":"tool_use","id":"d","name":"echo","input":{"n":4}}',
    ];
    const r = await post("/v1/calls/batch", lines.join("\n") + "\n", "application/x-ndjson");
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toContain("application/x-ndjson");
    const out = (await r.text())
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(out.map((e) => [e.id, e.success])).toEqual([
      ["a", true],
      ["b", true],
      [null, false],
      ["c", false],
      ["d", true],
    ]);
    expect(out[2].error).toMatchObject({ code: "JSON_PARSE", details: { input_line: 4 } });
    expect(out[3].error).toMatchObject({ code: "DENIED", details: { input_line: 5 } });
  });

  test("batch takes NDJSON only, and the body cap applies", async () => {
    expect((await post("/v1/calls/batch", '{"tool":"echo","arguments":{}}')).status).toBe(415);
    const big = d.req("/v1/calls/batch", {
      method: "POST",
      headers: { "content-type": "application/x-ndjson" },
      body: "x".repeat((1 << 20) + 1),
    });
    expect((await big).status).toBe(413);
  });
});

describe("discovery", () => {
  test("GET /v1/tools lists names, effects and schemas", async () => {
    const { tools } = await (await d.req("/v1/tools")).json();
    const sleep = tools.find((t: { name: string }) => t.name === "sleep");
    expect(sleep).toMatchObject({ effect: "read_only", parameters: { required: ["ms"] } });
  });

  test("the OpenAPI document describes exactly the routes the app serves", async () => {
    const doc = await (await d.req("/v1/openapi.json")).json();
    expect(doc.openapi).toBe("3.1.0");
    const norm = (p: string) => p.replace(/\{[^}]+\}/g, "{}").replace(/:[A-Za-z_]+/g, "{}");
    const documented = new Set<string>();
    for (const [p, ops] of Object.entries(doc.paths as Record<string, Record<string, unknown>>)) {
      if (p.startsWith("/v1/")) for (const m of Object.keys(ops)) documented.add(`${m.toUpperCase()} ${norm(p)}`);
    }
    // /mcp (every method goes to the MCP handler) is described too
    expect(doc.paths["/mcp"].post).toBeDefined();
    expect(d.running.daemon.app.routes.some((r) => r.path === "/mcp" && r.method === "ALL")).toBe(true);
    const routed = new Set(d.running.daemon.app.routes.filter((r) => r.path.startsWith("/v1/")).map((r) => `${r.method} ${norm(r.path)}`));
    expect([...routed].sort()).toEqual([...documented].sort());
    // every path's refs resolve
    const text = JSON.stringify(doc);
    for (const m of text.matchAll(/"#\/components\/schemas\/(\w+)"/g)) expect(doc.components.schemas[m[1]!]).toBeDefined();
  });
});

describe("/mcp", () => {
  test("the v2 SDK Client lists and calls the registered tools over Streamable HTTP; the policy applies", async () => {
    const client = new Client({ name: "daemon-test", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${d.url}/mcp`), { requestInit: { headers: d.auth } }));
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toEqual(["echo", "read_file", "sleep"]);
      const ok = await client.callTool({ name: "echo", arguments: { via: "mcp" } });
      expect(ok.isError).toBeFalsy();
      expect(ok.structuredContent).toEqual({ via: "mcp" });
      const denied = await client.callTool({ name: "read_file", arguments: { path: "hello.txt" } });
      expect(denied.isError).toBe(true);
      expect(JSON.stringify(denied.content)).toContain("DENIED");
    } finally {
      await client.close();
    }
  });

  test("/mcp has the same token and Host checks", async () => {
    const client = new Client({ name: "no-token", version: "1" });
    await expect(client.connect(new StreamableHTTPClientTransport(new URL(`${d.url}/mcp`)))).rejects.toThrow();
    const body = '{"jsonrpc":"2.0","id":1,"method":"tools/list"}';
    const evil = await rawRequest(
      d.port,
      `POST /mcp HTTP/1.1\r\nHost: evil.example:${d.port}\r\nAuthorization: Bearer ${d.token}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close`,
      body,
    );
    expect(evil.status).toBe(403);
    const noAuth = await rawRequest(
      d.port,
      `POST /mcp HTTP/1.1\r\nHost: localhost:${d.port}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close`,
      body,
    );
    expect(noAuth.status).toBe(401);
  });
});
