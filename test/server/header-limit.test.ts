/**
 * Oversized request headers get `431 Request Header Fields Too Large`, an
 * `INVALID_REQUEST` envelope with `Connection: close`, in every client and
 * every time, as oversized bodies get 413: raw `node:net` sockets, Bun's
 * fetch and Node's fetch (undici, a real child process), at just over the
 * limit, 653 KiB (the Cookie of the report) and 2 MiB, several times each;
 * never a reset or EPIPE. A head exactly at the limit passes, and the daemon
 * keeps serving afterwards. Before the fix the runtime's own 16 KiB limit
 * answered a bare 431 and closed while the client was still sending, so
 * Node's fetch got EPIPE in a share of the tries (and the raw client a
 * bodiless answer).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as net from "node:net";
import { listen } from "../../src/server/listen.ts";
import { DEFAULT_MAX_HEADER_BYTES, RUNTIME_MAX_HEADER_BYTES } from "../../src/server/middleware/header-limit.ts";
import { startTestDaemon, type TestDaemon } from "../support/daemon.ts";

let d: TestDaemon;
beforeAll(async () => {
  d = await startTestDaemon();
});
afterAll(async () => {
  await d.stop();
});

const LIMIT = DEFAULT_MAX_HEADER_BYTES;
const TRIES = 4;
const host = () => `127.0.0.1:${d.port}`;
/** A Cookie value that makes the raw head below (Host and Cookie only) exactly `total` bytes of header fields. */
const cookieFor = (total: number) => "a".repeat(total - ("host".length + host().length + 4) - ("cookie".length + 4));
const SIZES: [string, () => number][] = [
  ["just over the limit", () => LIMIT + 1],
  ["653 KiB", () => 653 * 1024],
  ["2 MiB", () => 2 * 1024 * 1024],
];

interface RawAnswer {
  status: number;
  head: string;
  body: string;
  /** A socket error (ECONNRESET, EPIPE), or null. */
  error: string | null;
}

/** Write `GET path` with a Cookie making `total` header bytes, in one go, and read until the daemon closes. */
function rawGet(path: string, total: number): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const sock = net.connect({ host: "127.0.0.1", port: d.port });
    const chunks: Buffer[] = [];
    let error: string | null = null;
    sock.on("data", (b: Buffer) => chunks.push(b));
    sock.on("error", (e: NodeJS.ErrnoException) => (error = e.code ?? e.message));
    sock.on("close", () => {
      const text = Buffer.concat(chunks).toString("latin1");
      const at = text.indexOf("\r\n\r\n");
      const head = at < 0 ? text : text.slice(0, at);
      resolve({ status: Number(head.split(" ")[1] ?? 0), head: head.toLowerCase(), body: at < 0 ? "" : text.slice(at + 4), error });
    });
    sock.write(`GET ${path} HTTP/1.1\r\nHost: ${host()}\r\nCookie: ${cookieFor(total)}\r\n\r\n`);
    sock.end();
  });
}

/** Node's own fetch (undici) in a child process: the outcome of each of `tries` requests with a `bytes`-long Cookie. */
async function nodeFetch(bytes: number, tries: number): Promise<string[]> {
  const script = `
    const out = [];
    for (let i = 0; i < ${tries}; i++) {
      try {
        const r = await fetch(${JSON.stringify(`${d.url}/v1/health`)}, { headers: { cookie: "a".repeat(${bytes}) } });
        const body = await r.json();
        out.push(r.status + " " + body.error.code);
      } catch (e) {
        out.push("error " + (e.cause?.code ?? e.message));
      }
    }
    console.log(JSON.stringify(out));
  `;
  const proc = Bun.spawn(["node", "--input-type=module", "-e", script], { stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  expect({ code, err }).toEqual({ code: 0, err: "" });
  return JSON.parse(out);
}

describe("oversized request headers get 431 in every client", () => {
  test("raw sockets: 431 with an INVALID_REQUEST envelope and Connection: close, never a reset", async () => {
    for (const [what, size] of SIZES) {
      for (let i = 0; i < TRIES; i++) {
        const r = await rawGet("/v1/health", size());
        expect({ what, i, status: r.status, error: r.error }).toEqual({ what, i, status: 431, error: null });
        expect(r.head).toContain("connection: close");
        const env = JSON.parse(r.body);
        expect(env.error).toMatchObject({ code: "INVALID_REQUEST", details: { limit: "max_header_bytes", max_bytes: LIMIT } });
        expect(env.error.message).toContain(`limit of ${LIMIT} bytes`);
      }
    }
  });

  test("a head exactly at the limit passes; a limit the runtime cannot honour is refused by name", async () => {
    const r = await rawGet("/v1/health", LIMIT);
    expect({ status: r.status, error: r.error }).toEqual({ status: 200, error: null });
    expect(JSON.parse(r.body)).toMatchObject({ status: "ok" });
    for (const bad of [0, 1.5, RUNTIME_MAX_HEADER_BYTES + 1])
      await expect(listen(() => new Response("never"), { port: 0, maxHeaderBytes: bad })).rejects.toThrow(
        `maxHeaderBytes must be an integer from 1 to ${RUNTIME_MAX_HEADER_BYTES}, not ${bad}`,
      );
  });

  test("Bun's fetch: 431 every time", async () => {
    for (const [what, size] of SIZES) {
      for (let i = 0; i < TRIES; i++) {
        const r = await fetch(`${d.url}/v1/health`, { headers: { cookie: "a".repeat(size()) } });
        expect({ what, i, status: r.status, code: (await r.json()).error.code }).toEqual({ what, i, status: 431, code: "INVALID_REQUEST" });
      }
    }
  });

  test("Node's fetch (undici, a child process): 431 every time, never EPIPE; then the daemon still serves", async () => {
    for (const [what, size] of SIZES) {
      expect({ what, outcomes: await nodeFetch(size(), 2 * TRIES) }).toEqual({
        what,
        outcomes: Array(2 * TRIES).fill("431 INVALID_REQUEST"),
      });
    }
    // and the daemon keeps serving
    expect((await fetch(`${d.url}/v1/health`)).status).toBe(200);
    const r = await d.req("/v1/calls", { method: "POST", json: { tool: "echo", arguments: { after: "431s" } } });
    expect(r.status).toBe(200);
    expect(await r.json()).toMatchObject({ success: true, result: { after: "431s" } });
  });
});
