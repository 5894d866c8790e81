/**
 * A client that leaves while its request body is still being read (a
 * declared length never reached, or a chunked body cut off) is the client's
 * doing: the daemon notes it at debug level and goes on. It was logged as
 * "request failed unexpectedly" at error level, once per such request, on
 * every body route. Real daemon, raw sockets.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as net from "node:net";
import type { Logger, LogLevel } from "../../src/core/logger.ts";
import { eventually, startTestDaemon, type TestDaemon } from "../support/daemon.ts";

const lines: { level: LogLevel; message: string; path: unknown }[] = [];
const logger: Logger = {
  level: "debug",
  enabled: () => true,
  trace() {},
  debug: (message, fields) => void lines.push({ level: "debug", message, path: fields?.path }),
  info: (message, fields) => void lines.push({ level: "info", message, path: fields?.path }),
  warn: (message, fields) => void lines.push({ level: "warn", message, path: fields?.path }),
  error: (message, fields) => void lines.push({ level: "error", message, path: fields?.path }),
};

let d: TestDaemon;
beforeAll(async () => {
  d = await startTestDaemon({ runtimeOptions: { logger } });
});
afterAll(async () => {
  await d.stop();
});

/**
 * Send a request head (with `Expect: 100-continue`), wait for the daemon's
 * `100 Continue` (so the head has been taken), send part of the body, then
 * close the connection.
 */
async function leaveMidBody(path: string, contentType: string, chunked: boolean): Promise<void> {
  const sock = net.connect({ host: "127.0.0.1", port: d.port });
  await new Promise<void>((resolve, reject) => {
    sock.once("connect", resolve);
    sock.once("error", reject);
  });
  const continued = new Promise<void>((resolve) => {
    let text = "";
    sock.on("data", (b: Buffer) => {
      text += b.toString("latin1");
      if (text.includes("100 Continue")) resolve();
    });
  });
  const framing = chunked ? "Transfer-Encoding: chunked" : "Content-Length: 100";
  sock.write(
    `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1:${d.port}\r\nAuthorization: Bearer ${d.token}\r\nContent-Type: ${contentType}\r\nExpect: 100-continue\r\n${framing}\r\n\r\n`,
  );
  await continued;
  sock.write(chunked ? '5\r\n{"a":\r\n' : '{"a":');
  sock.end();
  sock.destroy();
}

const ROUTES: [string, string][] = [
  ["/v1/calls", "application/json"],
  ["/v1/calls/batch", "application/x-ndjson"],
  ["/v1/runs", "application/json"],
  ["/v1/approvals/apr_x", "application/json"],
  ["/v1/sessions/s/fork", "application/json"],
];

describe("a client that leaves mid-body", () => {
  for (const chunked of [false, true]) {
    test(`is a debug note, not an error, on every body route (${chunked ? "chunked" : "declared length"})`, async () => {
      for (const [path, type] of ROUTES) {
        const seen = lines.length;
        await leaveMidBody(path, type, chunked);
        const note = await eventually(() => lines.slice(seen).find((l) => l.path === path));
        expect(`${path} ${note.level} ${note.message}`).toBe(`${path} debug the client left before its request body was read`);
      }
      expect(lines.filter((l) => l.level === "error")).toEqual([]);
      // The daemon still answers.
      const res = await d.req("/v1/calls", { method: "POST", json: { tool: "echo", arguments: { ok: true } } });
      expect((await res.json()).result).toEqual({ ok: true });
    });
  }
});
