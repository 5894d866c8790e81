/**
 * The drain before a 413 (src/server/body.ts), on `Request`s whose bodies
 * count what is pulled from them: a refused body is read on past the cap up
 * to the drain bound and no further (however much more the client offers),
 * a body that stops arriving is given up when the drain time is up, and a
 * declared length over the bound is refused without reading. Before the
 * drain, a chunked body was cancelled at the first chunk over the cap.
 */
import { describe, expect, test } from "bun:test";
import { DRAIN_MS, drainBound, drainMsFor, readBody } from "../../src/server/body.ts";

const CHUNK = 64 * 1024;

/** A POST whose body offers `chunks` chunks of 64 KiB (then ends, or hangs when `hang`), counting those pulled. */
function counted(chunks: number, headers: Record<string, string> = {}, hang = false): { req: Request; pulled: () => number } {
  let pulled = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(c) {
      if (pulled >= chunks) return hang ? new Promise<void>(() => {}) : c.close();
      pulled++;
      c.enqueue(new Uint8Array(CHUNK));
    },
  });
  const req = new Request("http://127.0.0.1/v1/calls", { method: "POST", body, headers, duplex: "half" } as RequestInit);
  return { req, pulled: () => pulled };
}

async function refusal(p: Promise<unknown>): Promise<{ status: number; code: string; details: Record<string, unknown> }> {
  try {
    await p;
  } catch (e) {
    const h = e as { status: number; code: string; details: Record<string, unknown> };
    return { status: h.status, code: h.code, details: h.details };
  }
  throw new Error("the body was not refused");
}

describe("draining a refused body", () => {
  const max = 1 << 20;

  test("the bound: twice the cap, at least 1 MiB; the time: 2 s, or half a shorter deadline", () => {
    expect(drainBound(max)).toBe(2 * max);
    expect(drainBound(1000)).toBe(1 << 20);
    expect(drainMsFor(30_000)).toBe(DRAIN_MS);
    expect(drainMsFor(300)).toBe(150);
  });

  test("a chunked body is read on past the cap up to the bound, and no further, however long it is", async () => {
    // 100 MiB offered; the cap is 16 chunks, the bound 32
    const { req, pulled } = counted(1600);
    expect(await refusal(readBody(req, max))).toMatchObject({ status: 413, code: "JSON_SIZE", details: { max_bytes: max } });
    expect(pulled()).toBeGreaterThanOrEqual(drainBound(max) / CHUNK);
    expect(pulled()).toBeLessThanOrEqual(drainBound(max) / CHUNK + 2);
  });

  test("a chunked body that ends within the bound is read to its end", async () => {
    const { req, pulled } = counted(20);
    expect((await refusal(readBody(req, max))).status).toBe(413);
    expect(pulled()).toBe(20);
  });

  test("a declared length within the bound is read to its end before the 413", async () => {
    const { req, pulled } = counted(24, { "content-length": String(24 * CHUNK) });
    expect(await refusal(readBody(req, max))).toMatchObject({ status: 413, details: { content_length: 24 * CHUNK } });
    expect(pulled()).toBe(24);
  });

  test("a declared length over the bound is refused without reading", async () => {
    const { req, pulled } = counted(1600, { "content-length": String(1600 * CHUNK) });
    expect(await refusal(readBody(req, max))).toMatchObject({ status: 413, details: { content_length: 1600 * CHUNK } });
    // nothing is read (the stream's own read-ahead of one chunk aside)
    expect(pulled()).toBeLessThanOrEqual(1);
  });

  test("a body that stops arriving is given up when the drain time is up (chunked and declared)", async () => {
    const chunked = counted(20, {}, true);
    expect((await refusal(readBody(chunked.req, max, 50))).status).toBe(413);
    const declared = counted(20, { "content-length": String(30 * CHUNK) }, true);
    expect((await refusal(readBody(declared.req, max, 50))).status).toBe(413);
    expect(declared.pulled()).toBe(20);
  });
});
