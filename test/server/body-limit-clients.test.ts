/**
 * A body over the cap gets its 413 `JSON_SIZE` envelope in every common
 * client, every time: Node's fetch (undici, a child process), Python's
 * urllib and requests, and curl (with and without `Expect: 100-continue`),
 * each sending 1 MiB + 1 and 2 MiB to `POST /v1/calls` and `POST /v1/runs`
 * three times. Never EPIPE or a reset. Before the fix the daemon answered and
 * closed the connection while the client was still sending, so Node's fetch
 * got EPIPE and urllib a broken pipe in a share of the tries.
 *
 * Slow senders are still cut off: a raw socket that declares 100 MiB and
 * trickles it, and one that trickles a chunked body past the cap, each see
 * the connection closed (the test's own timeout is the only clock), and the
 * daemon keeps serving.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as net from "node:net";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { DEFAULT_MAX_BODY_BYTES, drainBound } from "../../src/server/body.ts";
import { startTestDaemon, type TestDaemon } from "../support/daemon.ts";
import { commandWorks, runClient } from "../support/http-clients.ts";

let d: TestDaemon;
beforeAll(async () => {
  d = await startTestDaemon();
});
afterAll(async () => {
  await d.stop();
});

const MAX = DEFAULT_MAX_BODY_BYTES;
const TRIES = 3;
const SIZES = [MAX + 1, 2 * MAX];
const ROUTES = ["/v1/calls", "/v1/runs"];
const REFUSED = Array(TRIES).fill(`413 JSON_SIZE ${MAX}`);

/** A JSON-looking body of exactly `n` bytes (its content never matters: it is refused by its size). */
function bodyOf(n: number): string {
  const head = '{"tool":"echo","arguments":{"m":"';
  const tail = '"}}';
  return head + "x".repeat(n - head.length - tail.length) + tail;
}

/** Node's fetch in a child process: one outcome per try. */
const nodeScript = (url: string, bytes: number) => `
  const body = ${JSON.stringify(bodyOf(bytes).slice(0, 40))} + "x".repeat(${bytes - 40});
  const out = [];
  for (let i = 0; i < ${TRIES}; i++) {
    try {
      const r = await fetch(${JSON.stringify(url)}, {
        method: "POST",
        headers: { authorization: ${JSON.stringify(d.auth.authorization)}, "content-type": "application/json" },
        body,
      });
      const env = await r.json();
      out.push(r.status + " " + env.error.code + " " + env.error.details.max_bytes);
    } catch (e) {
      out.push("error " + (e.cause?.code ?? e.message));
    }
  }
  console.log(JSON.stringify(out));
`;

/** Python (urllib, or requests when `lib` says so) in a child process: one outcome per try. */
const pythonScript = (url: string, bytes: number, lib: "urllib" | "requests") => `
import json, sys
body = b"x" * ${bytes}
headers = {"authorization": ${JSON.stringify(d.auth.authorization)}, "content-type": "application/json"}
out = []
for i in range(${TRIES}):
    try:
        if ${JSON.stringify(lib)} == "requests":
            import requests
            r = requests.post(${JSON.stringify(url)}, data=body, headers=headers)
            status, text = r.status_code, r.text
        else:
            import urllib.request, urllib.error
            try:
                with urllib.request.urlopen(urllib.request.Request(${JSON.stringify(url)}, data=body, headers=headers, method="POST")) as r:
                    status, text = r.status, r.read().decode()
            except urllib.error.HTTPError as e:
                status, text = e.code, e.read().decode()
        env = json.loads(text)
        out.append("%d %s %d" % (status, env["error"]["code"], env["error"]["details"]["max_bytes"]))
    except Exception as e:
        out.append("error %s: %s" % (type(e).__name__, e))
print(json.dumps(out))
`;

describe("a body over the cap gets its 413 in every client", () => {
  for (const route of ROUTES) {
    for (const bytes of SIZES) {
      test(`Node's fetch, ${route}, ${bytes} bytes`, async () => {
        const out = await runClient(["node", "--input-type=module", "-e", nodeScript(d.url + route, bytes)]);
        expect(JSON.parse(out)).toEqual(REFUSED);
      });

      test(`Python urllib, ${route}, ${bytes} bytes`, async () => {
        const out = await runClient(["python3", "-c", pythonScript(d.url + route, bytes, "urllib")]);
        expect(JSON.parse(out)).toEqual(REFUSED);
      });

      test(`Python requests, ${route}, ${bytes} bytes`, async () => {
        if (!(await commandWorks(["python3", "-c", "import requests"]))) return; // requests is not installed here
        const out = await runClient(["python3", "-c", pythonScript(d.url + route, bytes, "requests")]);
        expect(JSON.parse(out)).toEqual(REFUSED);
      });

      for (const expect100 of [true, false]) {
        test(`curl ${expect100 ? "with" : "without"} Expect: 100-continue, ${route}, ${bytes} bytes`, async () => {
          const file = join(d.dir, `body-${bytes}.json`);
          writeFileSync(file, bodyOf(bytes));
          const outcomes: string[] = [];
          for (let i = 0; i < TRIES; i++) {
            const args = ["curl", "-sS", "-o", "-", "-w", "\n%{http_code}", "--data-binary", `@${file}`];
            args.push("-H", `authorization: ${d.auth.authorization}`, "-H", "content-type: application/json");
            args.push("-H", expect100 ? "expect: 100-continue" : "expect:");
            const out = await runClient([...args, d.url + route], { allowFailure: true });
            const at = out.lastIndexOf("\n");
            try {
              const env = JSON.parse(out.slice(0, at));
              outcomes.push(`${out.slice(at + 1)} ${env.error.code} ${env.error.details.max_bytes}`);
            } catch {
              outcomes.push(`error ${out}`);
            }
          }
          expect(outcomes).toEqual(REFUSED);
        });
      }
    }
  }
});

/** A raw socket that sends `head` and then `piece` every `everyMs` until the daemon closes it; resolves with what it read. */
function trickle(head: string, piece: string, everyMs: number): Promise<{ text: string; sent: number }> {
  return new Promise((resolve) => {
    const sock = net.connect({ host: "127.0.0.1", port: d.port });
    const chunks: Buffer[] = [];
    let sent = 0;
    let timer: ReturnType<typeof setInterval> | undefined;
    const done = () => {
      clearInterval(timer);
      resolve({ text: Buffer.concat(chunks).toString("latin1"), sent });
    };
    sock.on("data", (b: Buffer) => chunks.push(b));
    sock.on("error", () => {});
    sock.on("close", done);
    sock.write(head);
    timer = setInterval(() => {
      if (sock.destroyed || sock.writableEnded) return;
      sent += piece.length;
      sock.write(piece);
    }, everyMs);
  });
}

describe("slow senders are cut off", () => {
  const head = (route: string, framing: string) =>
    `POST ${route} HTTP/1.1\r\nHost: 127.0.0.1:${d.port}\r\nAuthorization: ${d.auth.authorization}\r\nContent-Type: application/json\r\n${framing}\r\n`;

  test("a declared 100 MiB or 2 MiB body trickled in: the connection is closed, and the daemon keeps serving", async () => {
    // 1 KiB every 20 ms: 40 s for 2 MiB, half an hour for 100 MiB; the test's timeout is 30 s
    for (const route of ROUTES) {
      for (const declared of [100 * MAX, drainBound(MAX)]) {
        const r = await trickle(head(route, `Content-Length: ${declared}\r\n`), "x".repeat(1024), 20);
        // the answer, when the client can still read it, is the 413
        if (r.text !== "") expect(r.text).toStartWith("HTTP/1.1 413");
        expect(r.sent).toBeLessThan(declared);
      }
    }
    const ok = await d.req("/v1/calls", { method: "POST", json: { tool: "echo", arguments: { after: "slow senders" } } });
    expect(await ok.json()).toMatchObject({ success: true, result: { after: "slow senders" } });
  }, 30_000);

  test("a chunked body trickled in past the cap: 413 and the connection is closed, and the daemon keeps serving", async () => {
    // 64 KiB chunks, one every 50 ms: over the cap after 17, at a pace that would take minutes to reach 100 MiB
    const size = 64 * 1024;
    const piece = `${size.toString(16)}\r\n${"x".repeat(size)}\r\n`;
    for (const route of ROUTES) {
      const r = await trickle(head(route, "Transfer-Encoding: chunked\r\n"), piece, 50);
      expect(r.text).toStartWith("HTTP/1.1 413");
      expect(r.text.toLowerCase()).toContain("connection: close");
      expect(r.text).toContain('"JSON_SIZE"');
      expect(r.sent).toBeLessThan(100 * MAX);
    }
    const ok = await d.req("/v1/calls", { method: "POST", json: { tool: "echo", arguments: { after: "chunked" } } });
    expect(await ok.json()).toMatchObject({ success: true, result: { after: "chunked" } });
  }, 60_000);
});
