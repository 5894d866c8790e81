/**
 * Clients that half-close their side after sending (`socket.end()` after the
 * request, as `nc -N` does). Bun closes such a connection at once, so a
 * request still being worked on when the FIN arrives cannot be answered
 * (docs/daemon.md, Known limits); what the client chooses is what happens to
 * its work: by default the run is aborted and the call cancelled, as for a
 * client that really left; with `X-Agentcore-On-Disconnect: continue` the
 * run completes and the call finishes, both recorded as usual. A request
 * answered before the FIN is read (a quick echo call) gets its whole answer.
 * Before the header, a half-closing client always lost its run. Real daemon,
 * raw `node:net` sockets, scripted model.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as net from "node:net";
import type { AnyToolDefinition } from "../../src/tools/definition.ts";
import { eventually, sleepTool, startTestDaemon, type TestDaemon } from "../support/daemon.ts";

/** How each `nap` call ended, by call id: "finished", or the abort's message. */
const naps = new Map<string, string>();
/** The sleep tool, noting how each call ended. */
const napTool: AnyToolDefinition = {
  ...sleepTool,
  name: "nap",
  handler: async (args, ctx) => {
    try {
      const out = await sleepTool.handler(args, ctx);
      naps.set(String(ctx.callId), "finished");
      return out;
    } catch (e) {
      naps.set(String(ctx.callId), `aborted: ${(e as Error).message}`);
      throw e;
    }
  },
};

let d: TestDaemon;
beforeAll(async () => {
  d = await startTestDaemon({ runtimeOptions: { tools: [sleepTool, napTool] }, allowedOrigins: ["http://app.example"] });
});
afterAll(async () => {
  await d.stop();
});

/** Write a whole request, half-close, and read what comes back until the daemon closes. */
function halfClosed(method: string, path: string, body: string, extra: Record<string, string> = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = net.connect({ host: "127.0.0.1", port: d.port });
    const chunks: Buffer[] = [];
    sock.on("data", (b: Buffer) => chunks.push(b));
    sock.on("error", reject);
    sock.on("close", () => resolve(Buffer.concat(chunks).toString("utf8")));
    const head = [
      `${method} ${path} HTTP/1.1`,
      `Host: 127.0.0.1:${d.port}`,
      `Authorization: Bearer ${d.token}`,
      "Content-Type: application/json",
      "Accept: application/json",
      `Content-Length: ${Buffer.byteLength(body)}`,
      ...Object.entries(extra).map(([k, v]) => `${k}: ${v}`),
    ];
    sock.write(`${head.join("\r\n")}\r\n\r\n${body}`);
    sock.end();
  });
}

/** The daemon's view of the run of session `session`, once it has a result. */
async function finishedRun(session: string): Promise<{ status: string; result: { status: string; output: string | null } }> {
  return eventually(async () => {
    const { runs } = await (await d.req("/v1/runs")).json();
    const run = runs.find((r: { session: { session_id: string } | null }) => r.session?.session_id === session);
    return run?.result?.status !== undefined ? run : undefined;
  });
}

/** How call `id` of the nap tool ended, once it has. */
const napOf = (id: string): Promise<string> => eventually(() => naps.get(id));

const slowRun = (session: string) => JSON.stringify({ task: "t", session, script: [{ content: "done after a while", delay_ms: 300 }] });
const napCall = (id: string) => JSON.stringify({ id, tool: "nap", arguments: { ms: 300 } });

describe("a client that half-closes after sending", () => {
  test("POST /v1/runs with X-Agentcore-On-Disconnect: continue: the run completes; without it, it is aborted", async () => {
    const answer = await halfClosed("POST", "/v1/runs", slowRun("hc-continue"), { "X-Agentcore-On-Disconnect": "continue" });
    // Bun closed the half-closed connection before the answer was ready (the documented limit)
    expect(answer).toBe("");
    const run = await finishedRun("hc-continue");
    expect(run.result).toMatchObject({ status: "completed", output: "done after a while" });

    await halfClosed("POST", "/v1/runs", slowRun("hc-default"));
    expect((await finishedRun("hc-default")).result.status).toBe("cancelled");
  });

  test("POST /v1/calls with X-Agentcore-On-Disconnect: continue: the call finishes; without it, it is cancelled; a quick one is answered", async () => {
    expect(await halfClosed("POST", "/v1/calls", napCall("hc-call-continue"), { "X-Agentcore-On-Disconnect": "continue" })).toBe("");
    expect(await napOf("hc-call-continue")).toBe("finished");
    await halfClosed("POST", "/v1/calls", napCall("hc-call-default"));
    expect(await napOf("hc-call-default")).toStartWith("aborted");
    // a call answered before the FIN is read gets its whole answer
    const answer = await halfClosed("POST", "/v1/calls", JSON.stringify({ id: "e1", tool: "echo", arguments: { m: "hi" } }), {
      "X-Agentcore-On-Disconnect": "continue",
    });
    expect(answer).toStartWith("HTTP/1.1 200");
    expect(JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4))).toMatchObject({ id: "e1", success: true, result: { m: "hi" } });
  });

  test("another value of X-Agentcore-On-Disconnect is 400 INVALID_REQUEST naming the header", async () => {
    const r = await d.req("/v1/calls", {
      method: "POST",
      headers: { "x-agentcore-on-disconnect": "linger" },
      json: { tool: "echo", arguments: {} },
    });
    expect(r.status).toBe(400);
    expect((await r.json()).error).toMatchObject({ code: "INVALID_REQUEST", details: { header: "x-agentcore-on-disconnect" } });
  });

  test("an allowed browser origin may send the header: the CORS preflight lists it", async () => {
    const r = await fetch(`${d.url}/v1/runs`, {
      method: "OPTIONS",
      headers: {
        origin: "http://app.example",
        "access-control-request-method": "POST",
        "access-control-request-headers": "x-agentcore-on-disconnect",
      },
    });
    expect(r.status).toBe(204);
    expect(r.headers.get("access-control-allow-headers")?.split(/,\s*/)).toContain("x-agentcore-on-disconnect");
  });
});
