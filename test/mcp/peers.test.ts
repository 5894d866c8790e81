/**
 * The MCP client against real servers from npm: server-everything over stdio,
 * Streamable HTTP and SSE (fallback), and server-filesystem.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createRuntime, type Runtime } from "../../src/runtime/index.ts";
import { createLogger } from "../../src/core/logger.ts";
import { attachMcpServers, McpStartupError, type McpToolset } from "../../src/mcp/attach.ts";
import { McpToolHandler } from "../../src/mcp/client.ts";
import { alive, EVERYTHING, FILESYSTEM, NODE, startEverythingHttp } from "../support/mcp.ts";
import { tmp } from "../support/tmp.ts";

const quiet = createLogger({ level: "error" });

describe("server-everything over stdio", () => {
  let rt: Runtime;
  let mcp: McpToolset;
  beforeAll(async () => {
    rt = createRuntime({ logger: quiet });
    mcp = await attachMcpServers(rt, {
      ev: { command: NODE, args: [EVERYTHING, "stdio"], timeout_ms: 20_000, tools: { "get-sum": { effect: "read_only" } } },
    });
  }, 30_000);
  afterAll(() => mcp.close());

  test("tools are listed with the service__tool prefix, default effect side_effecting, overrides applied", () => {
    expect(mcp.tools).toContain("ev__echo");
    expect(mcp.tools).toContain("ev__get-sum");
    expect(rt.registry.get("ev__echo")?.effect).toBe("side_effecting");
    expect(rt.registry.get("ev__get-sum")?.effect).toBe("read_only");
    expect(rt.registry.get("ev__get-sum")?.parameters).toMatchObject({ required: ["a", "b"] });
    expect(mcp.handlers[0]!.transportKind).toBe("stdio");
  });

  test("echo and get-sum return text content", async () => {
    const e = await rt.dispatch('{"id":"1","tool":"ev__echo","arguments":{"message":"héllo"}}');
    expect(e.success).toBe(true);
    expect(e.result).toEqual({ content: [{ type: "text", text: "Echo: héllo" }] });
    const s = await rt.dispatch('{"id":"2","tool":"ev__get-sum","arguments":{"a":2,"b":40}}');
    expect((s.result as { content: { text: string }[] }).content[0]!.text).toContain("42");
  });

  test("arguments are validated against the server's inputSchema before anything is sent", async () => {
    const e = await rt.dispatch('{"id":"3","tool":"ev__get-sum","arguments":{"a":"two","b":40}}');
    expect(e.error?.code).toBe("INVALID_ARGUMENTS");
    expect(e.error?.details.errors).toEqual([{ path: "/a", keyword: "type", message: "must be number" }]);
  });

  test("an image arrives as data with its MIME type", async () => {
    const e = await rt.dispatch('{"id":"4","tool":"ev__get-tiny-image","arguments":{}}');
    const blocks = (e.result as { content: Record<string, unknown>[] }).content;
    const img = blocks.find((b) => b.type === "image")!;
    expect(img.mime_type).toBe("image/png");
    // real base64 of a PNG: decodes to the PNG signature
    const bytes = Buffer.from(img.data as string, "base64");
    expect([...bytes.subarray(0, 4)]).toEqual([0x89, 0x50, 0x4e, 0x47]);
  });

  test("structured content is kept", async () => {
    const e = await rt.dispatch('{"id":"5","tool":"ev__get-structured-content","arguments":{"location":"Chicago"}}');
    const r = e.result as { structured_content: Record<string, unknown> };
    expect(Object.keys(r.structured_content).sort()).toEqual(["conditions", "humidity", "temperature"]);
  });

  test("resource links are kept as data", async () => {
    const e = await rt.dispatch('{"id":"6","tool":"ev__get-resource-links","arguments":{"count":2}}');
    const links = (e.result as { content: Record<string, unknown>[] }).content.filter((b) => b.type === "resource_link");
    expect(links.length).toBe(2);
    expect(links[0]!.uri).toMatch(/^demo:\/\/resource\//);
  });

  test("an AbortSignal cancels a long-running call, and the server keeps serving", async () => {
    const ac = new AbortController();
    const p = rt.dispatch('{"id":"7","tool":"ev__trigger-long-running-operation","arguments":{"duration":30,"steps":30}}', ac.signal);
    setTimeout(() => ac.abort(), 300);
    const e = await p;
    expect(e.error?.code).toBe("CANCELLED");
    const after = await rt.dispatch('{"id":"8","tool":"ev__echo","arguments":{"message":"still here"}}');
    expect(after.success).toBe(true);
    expect(mcp.handlers[0]!.connections).toBe(1); // same connection, no reconnect needed
  });

  test("the server's progress notifications become tool progress reports", async () => {
    const reports: [string, unknown][] = [];
    const e = await rt.dispatchCall(
      { id: "p1", tool: "ev__trigger-long-running-operation", arguments: { duration: 0.3, steps: 3 }, shape: "agentcore" },
      undefined,
      { onProgress: (m, d) => reports.push([m, d]) },
    );
    expect(e.success).toBe(true);
    // Steps 1 and 2 come 100 ms before the result; the SDK delivers progress
    // asynchronously, so the last one can lose the race with the result (a
    // report after the call settled is dropped by design).
    const expected = [
      { progress: 1, total: 3 },
      { progress: 2, total: 3 },
      { progress: 3, total: 3 },
    ];
    expect(reports.length).toBeGreaterThanOrEqual(2);
    expect(reports.map(([, d]) => d)).toEqual(expected.slice(0, reports.length));
    expect(reports.every(([m]) => m.length > 0)).toBe(true);
  });

  test("the server sees a minimal environment plus the configured variables, not our secrets", async () => {
    process.env.AGENTCORE_TEST_SECRET = "hunter2";
    const h = new McpToolHandler(
      "envcheck",
      { command: NODE, args: [EVERYTHING, "stdio"], env: { GIVEN_VAR: "given" } },
      { logger: quiet },
    );
    try {
      const r = await h.callTool("get-env", {});
      const env = JSON.parse((r.content[0] as { text: string }).text) as Record<string, string>;
      expect(env.GIVEN_VAR).toBe("given");
      expect(env.PATH).toBe(process.env.PATH!);
      expect(env.AGENTCORE_TEST_SECRET).toBeUndefined();
      expect(JSON.stringify(env)).not.toContain("hunter2");
    } finally {
      delete process.env.AGENTCORE_TEST_SECRET;
      await h.close();
    }
  }, 20_000);

  test("close() stops the server process", async () => {
    const h = new McpToolHandler("ev2", { command: NODE, args: [EVERYTHING, "stdio"] }, { logger: quiet });
    await h.connect();
    const pid = h.pid!;
    expect(alive(pid)).toBe(true);
    await h.close();
    expect(alive(pid)).toBe(false);
    const e = await h.callTool("echo", { message: "x" }).catch((err) => err);
    expect(e.code).toBe("UNAVAILABLE");
    expect(e.message).toBe('mcp server "ev2" is closed');
  }, 20_000);
});

describe("server-everything over HTTP", () => {
  test("Streamable HTTP", async () => {
    const srv = await startEverythingHttp("streamableHttp");
    const rt = createRuntime({ logger: quiet });
    const mcp = await attachMcpServers(rt, { web: { url: `http://127.0.0.1:${srv.port}/mcp`, headers: { "X-Test": "1" } } });
    try {
      expect(mcp.handlers[0]!.transportKind).toBe("streamable_http");
      const e = await rt.dispatch('{"id":"1","tool":"web__get-sum","arguments":{"a":1,"b":2}}');
      expect(e.success).toBe(true);
      expect((e.result as { content: { text: string }[] }).content[0]!.text).toContain("3");
    } finally {
      await mcp.close();
      await srv.stop();
    }
  }, 30_000);

  test("an old SSE-only server: Streamable HTTP gets a 4xx, the client falls back to SSE", async () => {
    const srv = await startEverythingHttp("sse");
    const rt = createRuntime({ logger: quiet });
    const mcp = await attachMcpServers(rt, { old: { url: `http://127.0.0.1:${srv.port}/sse`, connect_timeout_ms: 10_000 } });
    try {
      expect(mcp.handlers[0]!.transportKind).toBe("sse");
      const e = await rt.dispatch('{"id":"1","tool":"old__echo","arguments":{"message":"via sse"}}');
      expect(e.result).toEqual({ content: [{ type: "text", text: "Echo: via sse" }] });
    } finally {
      await mcp.close();
      await srv.stop();
    }
  }, 30_000);

  test("type: http does not fall back to SSE on a connection error; the startup error names the server", async () => {
    const rt = createRuntime({ logger: quiet });
    const err = await attachMcpServers(rt, { gone: { url: "http://127.0.0.1:9/mcp", type: "http", connect_timeout_ms: 3000 } }).catch(
      (e) => e,
    );
    expect(err).toBeInstanceOf(McpStartupError);
    expect(err.message).toContain('mcp server "gone"');
    expect(rt.registry.has("gone__echo")).toBe(false);
  }, 20_000);
});

describe("server-filesystem", () => {
  let dir: string;
  beforeAll(() => {
    dir = tmp("agentcore-mcp-fs-");
    mkdirSync(join(dir, "sub"));
    writeFileSync(join(dir, "sub", "note.txt"), "the word is heron\n");
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test("reads a file inside its root; a path outside is a tool error", async () => {
    const rt = createRuntime({ logger: quiet });
    const mcp = await attachMcpServers(rt, {
      fs: { command: NODE, args: [FILESYSTEM, dir], effect: "read_only", include: ["read_text_file", "list_directory"] },
    });
    try {
      expect(mcp.tools).toEqual(["fs__read_text_file", "fs__list_directory"]);
      expect(rt.registry.get("fs__read_text_file")?.effect).toBe("read_only");
      const call = JSON.stringify({ id: "1", tool: "fs__read_text_file", arguments: { path: join(dir, "sub", "note.txt") } });
      const e = await rt.dispatch(call);
      expect(e.success).toBe(true);
      expect((e.result as { content: { text: string }[] }).content[0]!.text).toBe("the word is heron\n");
      const out = await rt.dispatch(JSON.stringify({ id: "2", tool: "fs__read_text_file", arguments: { path: "/etc/hostname" } }));
      expect(out.success).toBe(false);
      expect(out.error?.code).toBe("TOOL_ERROR");
      expect(out.error?.message).toContain('mcp server "fs"');
      expect(out.error?.message).toMatch(/denied|outside|not allowed/i);
    } finally {
      await mcp.close();
    }
  }, 30_000);

  test('with prefix "" its read_file collides with the built-in: a clear startup error, nothing registered', async () => {
    const rt = createRuntime({ logger: quiet });
    const before = rt.registry.list().map((t) => t.name);
    const err = await attachMcpServers(rt, { fs: { command: NODE, args: [FILESYSTEM, dir], prefix: "" } }).catch((e) => e);
    expect(err).toBeInstanceOf(McpStartupError);
    expect(err.message).toBe(
      'mcp server "fs": its tool "read_file" collides with the already registered tool "read_file"; set "prefix" (mcpServers.fs.prefix) or "exclude" to avoid it',
    );
    // nothing was registered
    expect(rt.registry.list().map((t) => t.name)).toEqual(before);
  }, 30_000);
});

describe("server-everything over Streamable HTTP, restarted", () => {
  test("a call while the server is down, or with a session the restarted server does not know, fails with UNAVAILABLE; the next call reconnects", async () => {
    let srv = await startEverythingHttp("streamableHttp");
    const port = srv.port;
    const h = new McpToolHandler("web", { url: `http://127.0.0.1:${port}/mcp`, timeout_ms: 10_000 }, { logger: quiet });
    try {
      await h.connect();
      expect((await h.callTool("echo", { message: "one" })).content).toEqual([{ type: "text", text: "Echo: one" }]);
      await srv.stop();
      const err = await h.callTool("echo", { message: "two" }).then(
        () => null,
        (e) => e,
      );
      expect(err.code).toBe("UNAVAILABLE");
      expect(err.message).toContain('mcp server "web"');
      srv = await startEverythingHttp("streamableHttp", port);
      // the old session is gone with the old process: a new one is set up
      expect((await h.callTool("echo", { message: "three" })).content).toEqual([{ type: "text", text: "Echo: three" }]);
      expect(h.connections).toBe(2);
      // restarted between two calls: the first finds its session unknown (a 4xx), fails, and is not retried
      await srv.stop();
      srv = await startEverythingHttp("streamableHttp", port);
      const stale = await h.callTool("echo", { message: "four" }).then(
        () => null,
        (e) => e,
      );
      expect(stale.code).toBe("UNAVAILABLE");
      expect(stale.message).toContain("session");
      expect((await h.callTool("echo", { message: "five" })).content).toEqual([{ type: "text", text: "Echo: five" }]);
      expect(h.connections).toBe(3);
    } finally {
      await h.close();
      await srv.stop();
    }
  }, 30_000);
});
