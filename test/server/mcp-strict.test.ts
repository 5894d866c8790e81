/**
 * /mcp bodies are strict JSON, as every other daemon route: a duplicate key
 * (which the MCP SDK's JSON.parse would resolve last-wins, so that
 * `{"name":"a","name":"b"}` called `b`), bytes that are not UTF-8 and a
 * `__proto__` member are refused with a JSON-RPC parse error naming where,
 * before any tool runs. Real daemon on loopback, raw HTTP and the SDK Client.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import type { AnyToolDefinition, ToolDefinition } from "../../src/tools/definition.ts";
import { startTestDaemon, type TestDaemon } from "../support/daemon.ts";

/** Counts its calls, so a test can see that a refused body ran nothing. */
let counted = 0;
const countTool = {
  name: "count",
  description: "count calls",
  effect: "read_only",
  parameters: { type: "object" },
  handler: (args: Record<string, unknown>) => {
    counted++;
    return { n: counted, args };
  },
} satisfies ToolDefinition<Record<string, unknown>> as unknown as AnyToolDefinition;

let d: TestDaemon;
beforeAll(async () => {
  d = await startTestDaemon({ runtimeOptions: { tools: [countTool] } });
});
afterAll(async () => {
  await d.stop();
});

const MCP_HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };

function mcpPost(body: string | Uint8Array<ArrayBuffer>): Promise<Response> {
  return d.req("/mcp", { method: "POST", headers: MCP_HEADERS, body });
}

/** The JSON-RPC message of an answer (JSON, or the first SSE `data:` line). */
async function rpc(res: Response): Promise<any> {
  const text = await res.text();
  const data = /^data: (.*)$/m.exec(text);
  return JSON.parse(data !== null ? data[1]! : text);
}

const call = (params: string) => `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":${params}}`;

describe("/mcp bodies are strict JSON", () => {
  test("a well-formed tools/call still runs (control)", async () => {
    const before = counted;
    const res = await mcpPost(call(`{"name":"count","arguments":{"a":1}}`));
    expect(res.status).toBe(200);
    const m = await rpc(res);
    expect(m.result.structuredContent.args).toEqual({ a: 1 });
    expect(counted).toBe(before + 1);
  });

  test("a duplicate key naming the tool is refused (400, -32700, where), and no tool runs", async () => {
    const before = counted;
    const body = call(`{"name":"nope","name":"count","arguments":{}}`);
    const res = await mcpPost(body);
    expect(res.status).toBe(400);
    const m = await rpc(res);
    expect(m.jsonrpc).toBe("2.0");
    expect(m.id).toBeNull();
    expect(m.error.code).toBe(-32700);
    expect(m.error.message).toContain("duplicate key");
    expect(m.error.data.code).toBe("JSON_DUPLICATE_KEY");
    expect(m.error.data.offset).toBe(body.indexOf(`"name":"count"`));
    expect(m.error.data.line).toBe(1);
    expect(counted).toBe(before);
  });

  test("a duplicate key inside the arguments is refused; so are bytes that are not UTF-8 and a top-level __proto__ in arguments", async () => {
    const before = counted;
    const dup = await mcpPost(call(`{"name":"count","arguments":{"a":1,"a":2}}`));
    expect(dup.status).toBe(400);
    expect((await rpc(dup)).error.data.code).toBe("JSON_DUPLICATE_KEY");

    const enc = new TextEncoder();
    const head = enc.encode(call(`{"name":"count","arguments":{"s":"`));
    const bad = new Uint8Array([...head, 0xff, ...enc.encode(`"}}}`)]);
    const notUtf8 = await mcpPost(bad);
    expect(notUtf8.status).toBe(400);
    const m = await rpc(notUtf8);
    expect(m.error.code).toBe(-32700);
    expect(m.error.data.code).toBe("JSON_ENCODING");
    expect(m.error.data.offset).toBe(head.length);

    const proto = await mcpPost(call(`{"name":"count","arguments":{"__proto__":{"x":1}}}`));
    expect(proto.status).toBe(400);
    expect((await rpc(proto)).error.code).toBe(-32700);
    expect(counted).toBe(before);
  });

  test("an oversize body is still a JSON-RPC 413; deep but allowed arguments still pass", async () => {
    const big = call(`{"name":"count","arguments":{"s":"${"x".repeat(1 << 20)}"}}`);
    const res = await mcpPost(big);
    expect(res.status).toBe(413);
    const m = await rpc(res);
    expect(m.error.message).toContain("1048576");

    // 60 levels inside arguments: the call ({id, tool, arguments}) stays within the default depth 64.
    const deep = "[".repeat(60) + "]".repeat(60);
    const ok = await mcpPost(call(`{"name":"count","arguments":{"d":${deep}}}`));
    expect(ok.status).toBe(200);
    expect((await rpc(ok)).result.isError).toBeUndefined();
  });

  test("the SDK Client still lists and calls tools through the strict path", async () => {
    const client = new Client({ name: "strict-test", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${d.url}/mcp`), { requestInit: { headers: d.auth } }));
    try {
      const tools = await client.listTools();
      expect(tools.tools.map((t) => t.name)).toContain("count");
      const r = await client.callTool({ name: "count", arguments: { hi: "ü" } });
      expect((r.structuredContent as { args: unknown }).args).toEqual({ hi: "ü" });
    } finally {
      await client.close();
    }
  });
});
