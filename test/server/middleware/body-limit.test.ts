import { describe, expect, test } from "bun:test";
import { Hono } from "hono";
import { bodyLimit, type BodyEnv } from "../../../src/server/middleware/body-limit.ts";
import { Deadlines } from "../../../src/server/middleware/deadline.ts";
import { HttpError } from "../../../src/server/errors.ts";

function tiny(maxBytes: number, timeoutMs = 5_000) {
  const deadlines = new Deadlines(timeoutMs);
  const app = new Hono<BodyEnv>();
  app.onError((err) => (err instanceof HttpError ? err.toResponse() : new Response(String(err), { status: 500 })));
  app.use(bodyLimit({ maxBytes, deadlines }));
  app.post("/json", async (c) => c.json({ got: await c.var.body.json() }));
  app.post("/empty-ok", async (c) => c.json({ got: await c.var.body.json({ allowEmpty: true }) }));
  app.post("/bytes", async (c) => c.json({ n: (await c.var.body.bytes()).length }));
  return { app, deadlines };
}

describe("bodyLimit middleware", () => {
  test("a body within the cap is read", async () => {
    const { app, deadlines } = tiny(64);
    const res = await app.request("/json", { method: "POST", headers: { "content-type": "application/json" }, body: '{"a":1}' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ got: { a: 1 } });
    deadlines.close();
  });

  test("a body whose Content-Length is over the cap gets 413 JSON_SIZE naming the length", async () => {
    const { app, deadlines } = tiny(16);
    const res = await app.request("/bytes", { method: "POST", headers: { "content-length": "17" }, body: "x".repeat(17) });
    expect(res.status).toBe(413);
    const body = await res.json();
    expect(body.error.code).toBe("JSON_SIZE");
    expect(body.error.details.content_length).toBe(17);
    deadlines.close();
  });

  test("a streamed body that goes over the cap (no Content-Length) gets 413", async () => {
    const { app, deadlines } = tiny(16);
    const stream = new ReadableStream<Uint8Array>({
      start(ctrl) {
        for (let i = 0; i < 4; i++) ctrl.enqueue(new TextEncoder().encode("xxxxxxxx"));
        ctrl.close();
      },
    });
    const res = await app.request("/bytes", { method: "POST", body: stream, duplex: "half" } as RequestInit);
    expect(res.status).toBe(413);
    expect((await res.json()).error.details.received_bytes).toBeGreaterThan(16);
    deadlines.close();
  });

  test("duplicate keys are refused with a structured error; an empty body is {} only where allowed", async () => {
    const { app, deadlines } = tiny(64);
    const dup = await app.request("/json", { method: "POST", headers: { "content-type": "application/json" }, body: '{"a":1,"a":2}' });
    expect(dup.status).toBe(400);
    expect((await dup.json()).error.code).toBe("JSON_DUPLICATE_KEY");
    expect((await app.request("/json", { method: "POST", headers: { "content-type": "application/json" }, body: "" })).status).toBe(400);
    const empty = await app.request("/empty-ok", { method: "POST", headers: { "content-type": "application/json" }, body: "" });
    expect(await empty.json()).toEqual({ got: {} });
    deadlines.close();
  });

  test("a body that never ends gets 504 TIMEOUT at the deadline", async () => {
    const { app, deadlines } = tiny(1 << 20, 40);
    const stream = new ReadableStream<Uint8Array>({
      start(ctrl) {
        ctrl.enqueue(new TextEncoder().encode("{"));
      },
    });
    const res = await app.request("/bytes", { method: "POST", body: stream, duplex: "half" } as RequestInit);
    expect(res.status).toBe(504);
    expect((await res.json()).error.code).toBe("TIMEOUT");
    deadlines.close();
  });
});
