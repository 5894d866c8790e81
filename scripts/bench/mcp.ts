/**
 * What MCP costs per call, measured side by side in one run:
 *
 * - `direct`: runtime.dispatch of the built-in `echo` (no MCP);
 * - `served`: the SDK's Client calling `echo` on createMcpServer(runtime)
 *   over an in-memory transport (our MCP server's overhead);
 * - `stdio client`: runtime.dispatch of a tool of an MCP server over stdio
 *   (the fixture server in test/mcp/fixtures, a Node child process), i.e.
 *   our MCP client's whole path: validation, JSON-RPC both ways, mapping;
 * - start-up: connect + tools/list + close of that server, and of
 *   server-everything.
 *
 *   bun scripts/bench/mcp.ts [calls]       (default 2000 calls per contender)
 *
 * @module
 */
import { join, resolve } from "node:path";
import { Client, InMemoryTransport } from "@modelcontextprotocol/client";
import { createRuntime } from "../../src/runtime/index.ts";
import { createLogger } from "../../src/core/logger.ts";
import { attachMcpServers } from "../../src/mcp/attach.ts";
import { createMcpServer } from "../../src/mcp/server.ts";

const REPO = resolve(import.meta.dir, "../..");
const NODE = Bun.which("node") ?? "node";
const FIXTURE = join(REPO, "test/mcp/fixtures/server.mjs");
const EVERYTHING = join(REPO, "node_modules/@modelcontextprotocol/server-everything/dist/index.js");
const N = Number(process.argv[2] ?? 2000);
const quiet = createLogger({ level: "error" });

async function perCall(label: string, n: number, call: (i: number) => Promise<unknown>): Promise<number> {
  for (let i = 0; i < Math.min(200, n); i++) await call(i); // warm-up
  const t0 = performance.now();
  for (let i = 0; i < n; i++) await call(i);
  const us = ((performance.now() - t0) * 1000) / n;
  console.log(`${label.padEnd(34)} ${us.toFixed(1).padStart(9)} µs/call`);
  return us;
}

async function startup(label: string, config: Parameters<typeof attachMcpServers>[1], rounds = 5): Promise<void> {
  const times: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const rt = createRuntime({ logger: quiet });
    const t0 = performance.now();
    const mcp = await attachMcpServers(rt, config, { logger: quiet });
    await mcp.close();
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  console.log(`${label.padEnd(34)} ${times[Math.floor(times.length / 2)]!.toFixed(0).padStart(9)} ms (median of ${rounds})`);
}

console.log(`MCP per-call overhead (${N} sequential calls each, ${process.versions.bun ? `bun ${process.versions.bun}` : "node"})`);

const rt = createRuntime({ logger: quiet });
const echo = '{"id":"b","tool":"echo","arguments":{"n":1}}';
const direct = await perCall("direct dispatch (echo)", N, async () => rt.dispatch(echo));

const server = createMcpServer(rt);
const [a, b] = InMemoryTransport.createLinkedPair();
await server.connect(b);
const client = new Client({ name: "bench", version: "1" });
await client.connect(a);
const served = await perCall("SDK Client → createMcpServer (echo)", N, () => client.callTool({ name: "echo", arguments: { n: 1 } }));
await client.close();

const rt2 = createRuntime({ logger: quiet });
const mcp = await attachMcpServers(rt2, { fx: { command: NODE, args: [FIXTURE] } }, { logger: quiet });
const count = '{"id":"b","tool":"fx__count","arguments":{}}';
const stdio = await perCall("dispatch → MCP stdio server (count)", N, async () => rt2.dispatch(count));
await mcp.close();

console.log(`ratios: served/direct ${(served / direct).toFixed(1)}x, stdio client/direct ${(stdio / direct).toFixed(1)}x`);
await startup("start-up + close: fixture (node)", { fx: { command: NODE, args: [FIXTURE] } });
await startup("start-up + close: server-everything", { ev: { command: NODE, args: [EVERYTHING, "stdio"] } }, 3);
