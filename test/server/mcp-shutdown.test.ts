/**
 * Shutdown and /mcp: a tools/call in flight is handled like one on
 * /v1/calls. In `abort` mode it is cancelled at once and its client gets the
 * CANCELLED result; in `finish` mode it may end within the grace period and
 * its client gets the real result. Before, shutdown ignored /mcp calls: the
 * exchange was cut when the connections were closed (the client got no
 * result at all), and in finish mode the call was not waited for.
 */
import { describe, expect, test } from "bun:test";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import type { AnyToolDefinition, ToolDefinition } from "../../src/tools/definition.ts";
import { startTestDaemon } from "../support/daemon.ts";

/** A tool that reports when it starts and ends when released (or aborted). */
function gateTool() {
  let started!: () => void;
  const running = new Promise<void>((r) => (started = r));
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let aborted = false;
  const tool = {
    name: "gate",
    description: "wait for the test",
    effect: "read_only",
    parameters: { type: "object" },
    timeoutMs: 600_000,
    handler: async (_args: Record<string, unknown>, ctx) => {
      started();
      await new Promise<void>((resolve, reject) => {
        void released.then(resolve);
        ctx.signal.addEventListener(
          "abort",
          () => {
            aborted = true;
            reject(ctx.signal.reason ?? new Error("aborted"));
          },
          { once: true },
        );
      });
      return { released: true };
    },
  } satisfies ToolDefinition<Record<string, unknown>> as unknown as AnyToolDefinition;
  return { tool, running, release, wasAborted: () => aborted };
}

async function connect(url: string, auth: Record<string, string>): Promise<Client> {
  const client = new Client({ name: "shutdown-test", version: "1" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers: auth } }));
  return client;
}

describe("/mcp calls at shutdown", () => {
  test("abort mode: the call in flight is cancelled and its client gets the CANCELLED result", async () => {
    const g = gateTool();
    const d = await startTestDaemon({ runtimeOptions: { tools: [g.tool] } });
    const client = await connect(d.url, d.auth);
    const result = client.callTool({ name: "gate", arguments: {} }).then(
      (r) => ({ r }),
      (e: unknown) => ({ e }),
    );
    await g.running;
    await d.stop();
    const out = await result;
    expect("e" in out ? String(out.e) : "").toBe("");
    const r = (out as { r: { isError?: boolean; structuredContent?: { error?: { code?: string } } } }).r;
    expect(r.isError).toBe(true);
    expect(r.structuredContent?.error?.code).toBe("CANCELLED");
    expect(g.wasAborted()).toBe(true);
    await client.close().catch(() => {});
  });

  test("finish mode: the call in flight may end within the grace period; its client gets the real result", async () => {
    const g = gateTool();
    const d = await startTestDaemon({ runtimeOptions: { tools: [g.tool] } }, { onShutdown: "finish", graceMs: 60_000 });
    const client = await connect(d.url, d.auth);
    const result = client.callTool({ name: "gate", arguments: {} });
    await g.running;
    let stopped = false;
    const stopping = d.stop().then(() => (stopped = true));
    // Longer than the 2 s the daemon gives answers being written before it
    // closes the connections: the call must still be waited for.
    await new Promise((r) => setTimeout(r, 2500));
    expect(stopped).toBe(false);
    g.release();
    const r = await result;
    expect(r.isError).toBeUndefined();
    expect(r.structuredContent).toEqual({ released: true });
    await stopping;
    expect(g.wasAborted()).toBe(false);
    await client.close().catch(() => {});
  }, 30_000);
});
