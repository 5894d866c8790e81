/**
 * The pieces of MCP support on their own: the `mcpServers` checker, result
 * mapping and capping, and createMcpServer over an in-memory pair and over
 * real Streamable HTTP (the way the daemon mounts it).
 */
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { Client, InMemoryTransport, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { createMcpHandler } from "@modelcontextprotocol/server";
import { createRuntime } from "../../src/runtime/index.ts";
import { createLogger } from "../../src/core/logger.ts";
import { policyFromConfig } from "../../src/runtime/middleware/index.ts";
import { parseMcpServers } from "../../src/mcp/config.ts";
import { capResult, mapCallToolResult, type McpCallResult } from "../../src/mcp/result.ts";
import { createMcpServer, envelopeToCallToolResult } from "../../src/mcp/server.ts";
import { serverEnvironment } from "../../src/mcp/stdio.ts";

const quiet = createLogger({ level: "error" });

describe("parseMcpServers", () => {
  const parse = (v: unknown, env: Record<string, string> = {}) => parseMcpServers("/etc/agentcore/c.jsonc", v, env);
  const err = (v: unknown, env: Record<string, string> = {}) => {
    try {
      parse(v, env);
    } catch (e) {
      return (e as Error).message;
    }
    throw new Error("expected an error");
  };

  test("the shape other MCP clients use, plus our options", () => {
    const c = parse(
      {
        fs: {
          command: "npx",
          args: ["-y", "srv", "${HOME}/data"],
          env: { TOKEN: "${T}" },
          cwd: "work",
          prefix: "",
          effect: "read_only",
          tools: { write: { effect: "side_effecting" } },
          exclude: ["rm"],
          timeout_ms: 5,
          connect_timeout_ms: 6,
          max_result_bytes: 2048,
        },
        web: { url: "https://h.example/mcp", headers: { Authorization: "Bearer ${T}" }, type: "http" },
      },
      { HOME: "/home/u", T: "s3cret" },
    );
    expect(c.fs).toEqual({
      command: "npx",
      args: ["-y", "srv", "/home/u/data"],
      env: { TOKEN: "s3cret" },
      cwd: "/etc/agentcore/work",
      prefix: "",
      effect: "read_only",
      tools: { write: { effect: "side_effecting" } },
      exclude: ["rm"],
      timeout_ms: 5,
      connect_timeout_ms: 6,
      max_result_bytes: 2048,
    });
    expect(c.web).toEqual({ url: "https://h.example/mcp", headers: { Authorization: "Bearer s3cret" }, type: "http" });
  });

  test("errors name the key", () => {
    expect(err([])).toBe('"mcpServers" must be an object');
    expect(err({ "a.b": { command: "x" } })).toBe(`"mcpServers.a.b": server names must be 1 to 32 letters, digits, '_' or '-'`);
    expect(err({ s: "npx" })).toBe('"mcpServers.s" must be an object');
    expect(err({ s: {} })).toBe('"mcpServers.s" needs exactly one of "command" (stdio) or "url" (HTTP)');
    expect(err({ s: { command: "x", url: "http://h/" } })).toBe('"mcpServers.s" needs exactly one of "command" (stdio) or "url" (HTTP)');
    expect(err({ s: { command: "x", comand: "y" } })).toStartWith('unknown key "mcpServers.s.comand" (known: command, args,');
    expect(err({ s: { command: "x", args: ["a", 1] } })).toBe('"mcpServers.s.args[1]" must be a string');
    expect(err({ s: { command: "x", args: "a b" } })).toBe('"mcpServers.s.args" must be an array of strings');
    expect(err({ s: { command: "x", env: { A: 1 } } })).toBe('"mcpServers.s.env.A" must be a string');
    expect(err({ s: { command: "x", headers: {} } })).toBe('"mcpServers.s.headers" applies to HTTP (url) servers only');
    expect(err({ s: { url: "http://h/", args: [] } })).toBe('"mcpServers.s.args" applies to stdio (command) servers only');
    expect(err({ s: { url: "ftp://h/" } })).toBe('"mcpServers.s.url" must be an http: or https: URL');
    expect(err({ s: { url: "not a url" } })).toBe('"mcpServers.s.url" is not a valid URL');
    expect(err({ s: { url: "http://h/", type: "stdio" } })).toBe('"mcpServers.s.type" is "stdio" but the server has "url"');
    expect(err({ s: { command: "x", type: "websocket" } })).toBe('"mcpServers.s.type" must be one of stdio, http, sse');
    expect(err({ s: { command: "x", effect: "pure" } })).toBe('"mcpServers.s.effect" must be one of read_only, side_effecting');
    expect(err({ s: { command: "x", tools: { t: { effect: "pure" } } } })).toBe(
      '"mcpServers.s.tools.t.effect" must be one of read_only, side_effecting',
    );
    expect(err({ s: { command: "x", tools: { t: { timeout: 1 } } } })).toBe('unknown key "mcpServers.s.tools.t.timeout" (known: effect)');
    expect(err({ s: { command: "x", include: ["a"], exclude: ["b"] } })).toBe('"mcpServers.s": use "include" or "exclude", not both');
    expect(err({ s: { command: "x", timeout_ms: 0 } })).toBe(
      '"mcpServers.s.timeout_ms" must be an integer from 1 to 2147483647 (milliseconds, about 24.8 days)',
    );
    expect(err({ s: { command: "x", connect_timeout_ms: 1.5 } })).toBe(
      '"mcpServers.s.connect_timeout_ms" must be an integer from 1 to 2147483647 (milliseconds, about 24.8 days)',
    );
    // a timer cannot wait longer than 2^31-1 ms: a larger value would fire at once, not never
    expect(err({ s: { command: "x", timeout_ms: 2_147_483_648 } })).toBe(
      '"mcpServers.s.timeout_ms" must be an integer from 1 to 2147483647 (milliseconds, about 24.8 days)',
    );
    expect(err({ s: { url: "http://h/", connect_timeout_ms: Number.MAX_SAFE_INTEGER } })).toBe(
      '"mcpServers.s.connect_timeout_ms" must be an integer from 1 to 2147483647 (milliseconds, about 24.8 days)',
    );
    expect(parse({ s: { command: "x", timeout_ms: 2_147_483_647 } }).s!.timeout_ms).toBe(2_147_483_647);
    expect(err({ s: { command: "x", max_result_bytes: 100 } })).toBe('"mcpServers.s.max_result_bytes" must be an integer of at least 1024');
    expect(err({ s: { command: "x", prefix: "a__b c" } })).toBe(`"mcpServers.s.prefix" must be "" or 1 to 32 letters, digits, '_' or '-'`);
    expect(err({ s: { command: "x", args: ["${NOPE}"] } })).toBe('"mcpServers.s.args[0]": environment variable NOPE is not set');
    expect(err({ s: { url: "http://h/", headers: { A: "${NOPE}" } } })).toBe(
      '"mcpServers.s.headers.A": environment variable NOPE is not set',
    );
  });

  test('a server or tool named "__proto__" is an ordinary key', () => {
    const c = parse(JSON.parse('{"__proto__":{"command":"x","tools":{"__proto__":{"effect":"read_only"}}}}'));
    expect(Object.keys(c)).toEqual(["__proto__"]);
    expect(Object.getPrototypeOf(c)).toBe(Object.prototype);
    expect(Object.keys(c["__proto__"]!.tools!)).toEqual(["__proto__"]);
  });

  test("a value of an expanded variable is not expanded again", () => {
    const c = parse({ s: { command: "x", args: ["${A}"] } }, { A: "${B}", B: "no" });
    expect(c.s!.args).toEqual(["${B}"]);
  });
});

describe("the stdio server's environment", () => {
  test("only the safe variables are inherited, then the configured ones", () => {
    const saved = { ...process.env };
    process.env.SECRET_API_KEY = "do-not-leak";
    process.env.HOME = "/home/test";
    try {
      const env = serverEnvironment({ EXTRA: "1", HOME: "/override" });
      expect(env.SECRET_API_KEY).toBeUndefined();
      expect(env.EXTRA).toBe("1");
      expect(env.HOME).toBe("/override");
      expect(env.PATH).toBe(process.env.PATH!);
    } finally {
      process.env = saved;
    }
  });
});

describe("result mapping", () => {
  test("every block kind", () => {
    const r = mapCallToolResult({
      content: [
        { type: "text", text: "t" },
        { type: "image", mimeType: "image/gif", data: "R0lG" },
        { type: "audio", mimeType: "audio/wav", data: "UklG" },
        { type: "resource_link", uri: "file:///a", name: "a", description: "d" },
        { type: "resource", resource: { uri: "mem://x", mimeType: "text/plain", text: "hello" } },
        { type: "resource", resource: { uri: "mem://y", blob: "AAE=" } },
        { type: "hologram", beams: 3 },
        "not a block",
      ],
      structuredContent: [1, 2],
    });
    expect(r).toEqual({
      content: [
        { type: "text", text: "t" },
        { type: "image", mime_type: "image/gif", data: "R0lG" },
        { type: "audio", mime_type: "audio/wav", data: "UklG" },
        { type: "resource_link", uri: "file:///a", name: "a", description: "d" },
        { type: "resource", uri: "mem://x", mime_type: "text/plain", text: "hello" },
        { type: "resource", uri: "mem://y", blob: "AAE=" },
        { type: "hologram", unsupported: true },
        { type: "invalid", unsupported: true },
      ],
      structured_content: [1, 2],
    });
    expect(mapCallToolResult({})).toEqual({ content: [] });
  });

  test("capping: images become stubs, text is cut on a code point boundary, structured content is dropped when it does not fit", () => {
    const big: McpCallResult = {
      content: [
        { type: "text", text: "é".repeat(3000) },
        { type: "image", mime_type: "image/png", data: "A".repeat(5000) },
      ],
      structured_content: { blob: "z".repeat(5000) },
    };
    const c = capResult(big, 2048);
    const json = JSON.stringify(c);
    expect(Buffer.byteLength(json)).toBeLessThanOrEqual(2048);
    expect(c.truncated).toBe(true);
    expect(c.original_bytes).toBe(Buffer.byteLength(JSON.stringify(big)));
    const text = (c.content[0] as { text: string }).text;
    expect(text).toMatch(/^é+…\[truncated\]$/);
    expect(c.content[1]).toEqual({ type: "image", mime_type: "image/png", omitted: true, bytes: 5000 });
    expect(c.structured_content).toBeUndefined();
    const small: McpCallResult = { content: [{ type: "text", text: "ok" }] };
    expect(capResult(small, 1024)).toBe(small);
  });

  test("property: a capped result is always within the limit and flagged exactly when it was over", () => {
    const block = fc.oneof(
      fc.string({ maxLength: 3000, unit: "binary" }).map((text) => ({ type: "text" as const, text })),
      fc.base64String({ maxLength: 3000 }).map((data) => ({ type: "image" as const, mime_type: "image/png", data })),
      fc.record({ type: fc.constant("resource_link" as const), uri: fc.webUrl() }),
      fc.record({ type: fc.constant("resource" as const), uri: fc.string({ maxLength: 600 }), text: fc.string({ maxLength: 2000 }) }),
    );
    fc.assert(
      fc.property(
        fc.array(block, { maxLength: 12 }),
        fc.option(fc.jsonValue({ maxDepth: 3 }), { nil: undefined }),
        fc.integer({ min: 1024, max: 8192 }),
        (content, sc, max) => {
          const r: McpCallResult = sc === undefined ? { content } : { content, structured_content: sc };
          const c = capResult(r, max);
          const over = Buffer.byteLength(JSON.stringify(r)) > max;
          if (!over) expect(c).toBe(r);
          else {
            expect(Buffer.byteLength(JSON.stringify(c))).toBeLessThanOrEqual(max);
            expect(c.truncated).toBe(true);
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe("createMcpServer", () => {
  test("envelope → CallToolResult", () => {
    expect(envelopeToCallToolResult({ id: "1", success: true, tool: "t", result: [1, 2], error: null, duration_ms: 1 })).toEqual({
      content: [{ type: "text", text: "[1,2]" }],
    });
    expect(envelopeToCallToolResult({ id: "1", success: true, tool: "t", result: { a: 1 }, error: null, duration_ms: 1 })).toEqual({
      content: [{ type: "text", text: '{"a":1}' }],
      structuredContent: { a: 1 },
    });
    const failed = envelopeToCallToolResult({
      id: "1",
      success: false,
      tool: "t",
      result: null,
      error: { code: "DENIED", message: "no", details: {} },
      duration_ms: 1,
    });
    expect(failed.isError).toBe(true);
    expect(JSON.parse((failed.content[0] as { text: string }).text).error.code).toBe("DENIED");
  });

  test("over an in-memory pair: tools/list reads the registry at each request (tools added later appear)", async () => {
    const rt = createRuntime({ logger: quiet });
    const server = createMcpServer(rt, { name: "unit", version: "9.9.9" });
    const [a, b] = InMemoryTransport.createLinkedPair();
    await server.connect(b);
    const client = new Client({ name: "t", version: "1" });
    await client.connect(a);
    expect(client.getServerVersion()).toMatchObject({ name: "unit", version: "9.9.9" });
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["echo", "read_file"]);
    rt.registry.register({
      name: "later",
      description: "added later",
      parameters: { type: "object" },
      effect: "read_only",
      handler: () => "late",
    });
    expect((await client.listTools(undefined, { cacheMode: "bypass" })).tools.map((t) => t.name)).toEqual(["echo", "read_file", "later"]);
    const r = await client.callTool({ name: "later", arguments: {} });
    expect(r.content).toEqual([{ type: "text", text: '"late"' }]);
    await client.close();
  });

  test("the strict parser's limits apply to served calls: size and depth", async () => {
    const rt = createRuntime({ logger: quiet, limits: { maxBytes: 2048, maxDepth: 8 } });
    const server = createMcpServer(rt);
    const [a, b] = InMemoryTransport.createLinkedPair();
    await server.connect(b);
    const client = new Client({ name: "t", version: "1" });
    await client.connect(a);
    const code = async (args: Record<string, unknown>) => {
      const r = await client.callTool({ name: "echo", arguments: args });
      return r.isError === true ? (r.structuredContent as { error: { code: string } }).error.code : "OK";
    };
    try {
      expect(await code({ s: "x".repeat(100) })).toBe("OK");
      expect(await code({ s: "x".repeat(5000) })).toBe("JSON_SIZE");
      let deep: unknown = 1;
      for (let i = 0; i < 20; i++) deep = [deep];
      expect(await code({ deep })).toBe("JSON_DEPTH");
      // the SDK's own parsing drops an own "__proto__" member before we see it
      // (and our parser would refuse it); either way nothing is polluted
      expect(["OK", "JSON_FORBIDDEN_KEY"]).toContain(await code(JSON.parse('{"__proto__":{"polluted":true}}')));
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      // deeper down the member reaches our parser, which refuses it
      expect(await code(JSON.parse('{"a":{"__proto__":{"polluted":true}}}'))).toBe("JSON_FORBIDDEN_KEY");
    } finally {
      await client.close();
    }
  });

  test("over Streamable HTTP with createMcpHandler (how the daemon mounts it): calls go through the policy", async () => {
    const rt = createRuntime({
      logger: quiet,
      middleware: [policyFromConfig({ default: "allow", rules: [{ id: "x", action: "deny", tools: ["read_file"] }] })],
    });
    const handler = createMcpHandler(() => createMcpServer(rt), { responseMode: "json" });
    const http = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (req) => handler.fetch(req) });
    const client = new Client({ name: "t", version: "1" });
    try {
      await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${http.port}/mcp`)));
      const ok = await client.callTool({ name: "echo", arguments: { over: "http" } });
      expect(ok.structuredContent).toEqual({ over: "http" });
      const denied = await client.callTool({ name: "read_file", arguments: { path: "x" } });
      expect(denied.isError).toBe(true);
      expect((denied.structuredContent as { error: { code: string } }).error.code).toBe("DENIED");
    } finally {
      await client.close();
      await handler.close();
      await http.stop(true);
    }
  });
});

describe("the client over HTTP against agentcore's own server", () => {
  test("configured headers (with ${VAR} expanded from the config) reach the server on every request", async () => {
    const seen: (string | null)[] = [];
    const inner = createRuntime({ logger: quiet });
    const handler = createMcpHandler(() => createMcpServer(inner), { responseMode: "json" });
    const http = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: (req) => {
        seen.push(req.headers.get("authorization"));
        return req.headers.get("authorization") === "Bearer t0ken" ? handler.fetch(req) : new Response("no", { status: 401 });
      },
    });
    const { attachMcpServers } = await import("../../src/mcp/attach.ts");
    const servers = parseMcpServers(
      "/x/c.jsonc",
      { inner: { url: `http://127.0.0.1:${http.port}/mcp`, headers: { Authorization: "Bearer ${TOKEN}" } } },
      { TOKEN: "t0ken" },
    );
    const outer = createRuntime({ logger: quiet });
    const mcp = await attachMcpServers(outer, servers, { logger: quiet });
    try {
      expect(mcp.tools).toEqual(["inner__echo", "inner__read_file"]);
      const e = await outer.dispatch('{"id":"1","tool":"inner__echo","arguments":{"nested":true}}');
      expect(e.result).toEqual({ content: [{ type: "text", text: '{"nested":true}' }], structured_content: { nested: true } });
      expect(seen.length).toBeGreaterThan(2);
      expect(seen.every((h) => h === "Bearer t0ken")).toBe(true);
    } finally {
      await mcp.close();
      await handler.close();
      await http.stop(true);
    }
  });

  test("a 401 is a startup error naming the server (4xx on both transports)", async () => {
    const http = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("no", { status: 401 }) });
    const { attachMcpServers, McpStartupError } = await import("../../src/mcp/attach.ts");
    try {
      const err = await attachMcpServers(
        createRuntime({ logger: quiet }),
        { locked: { url: `http://127.0.0.1:${http.port}/mcp`, connect_timeout_ms: 5000 } },
        { logger: quiet },
      ).catch((e) => e);
      expect(err).toBeInstanceOf(McpStartupError);
      expect(err.message).toStartWith('mcp server "locked": cannot connect: Streamable HTTP: ');
      expect(err.message).toContain("; SSE fallback: ");
      expect(err.message).toContain("401");
    } finally {
      await http.stop(true);
    }
  });
});

test("type sse: configured headers are sent on the SSE stream request too", async () => {
  const seen: { method: string; auth: string | null }[] = [];
  const http = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: (req) => {
      seen.push({ method: req.method, auth: req.headers.get("authorization") });
      return new Response("no", { status: 403 });
    },
  });
  const { attachMcpServers, McpStartupError } = await import("../../src/mcp/attach.ts");
  try {
    const err = await attachMcpServers(
      createRuntime({ logger: quiet }),
      {
        old: { url: `http://127.0.0.1:${http.port}/sse`, type: "sse", headers: { Authorization: "Bearer abc" }, connect_timeout_ms: 5000 },
      },
      { logger: quiet },
    ).catch((e) => e);
    expect(err).toBeInstanceOf(McpStartupError);
    expect(err.message).toContain("403");
    expect(seen.length).toBeGreaterThan(0);
    expect(seen[0]).toEqual({ method: "GET", auth: "Bearer abc" });
  } finally {
    await http.stop(true);
  }
});
