/**
 * A compressed body (`Content-Encoding: gzip`, …) is not supported: it gets
 * 415 naming the header on every body route, instead of a JSON parse error
 * about byte 0x1f at line 1, column 1. `identity` is the same as none.
 * Real daemon on loopback.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { gzipSync } from "node:zlib";
import { startTestDaemon, type TestDaemon } from "../support/daemon.ts";

let d: TestDaemon;
beforeAll(async () => {
  d = await startTestDaemon();
});
afterAll(async () => {
  await d.stop();
});

const ROUTES: [string, string, string][] = [
  ["/v1/calls", "application/json", `{"tool":"echo","arguments":{"z":1}}`],
  ["/v1/calls/batch", "application/x-ndjson", `{"tool":"echo","arguments":{"z":1}}\n`],
  ["/v1/runs", "application/json", `{"task":"hi","script":[{"content":"a"}]}`],
  ["/v1/approvals/apr_none", "application/json", `{"approved":true}`],
];

describe("Content-Encoding", () => {
  test("a gzip body gets 415 naming content-encoding on every body route", async () => {
    for (const [path, type, body] of ROUTES) {
      const res = await d.req(path, {
        method: "POST",
        headers: { "content-type": type, "content-encoding": "gzip", accept: "application/json" },
        body: gzipSync(body),
      });
      const env = await res.json();
      expect(`${path} ${res.status} ${env.error?.code}`).toBe(`${path} 415 INVALID_REQUEST`);
      expect(env.error.details).toEqual({ header: "content-encoding" });
      expect(env.error.message).toContain(`"gzip" is not supported`);
    }
    // /mcp answers in JSON-RPC, with the same status.
    const mcp = await d.req("/mcp", {
      method: "POST",
      headers: { "content-type": "application/json", "content-encoding": "gzip", accept: "application/json, text/event-stream" },
      body: gzipSync(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`),
    });
    expect(mcp.status).toBe(415);
    expect((await mcp.json()).error.message).toContain("Content-Encoding");
  });

  test("identity is the same as no Content-Encoding", async () => {
    const res = await d.req("/v1/calls", {
      method: "POST",
      headers: { "content-type": "application/json", "content-encoding": "identity" },
      body: `{"tool":"echo","arguments":{"z":1}}`,
    });
    expect(res.status).toBe(200);
    expect((await res.json()).result).toEqual({ z: 1 });
  });
});
