import { describe, expect, test } from "bun:test";
import { Hono } from "hono";
import { deadline, Deadlines } from "../../../src/server/middleware/deadline.ts";
import { HttpError } from "../../../src/server/errors.ts";

function tiny(ms: number) {
  const deadlines = new Deadlines(ms);
  const app = new Hono();
  app.onError((err) => (err instanceof HttpError ? err.toResponse() : new Response("boom", { status: 500 })));
  app.use(deadline(deadlines));
  return { app, deadlines };
}

describe("deadline middleware", () => {
  test("a handler that answers in time passes through", async () => {
    const { app, deadlines } = tiny(5_000);
    app.get("/", (c) => c.text("done"));
    const res = await app.request("/");
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("done");
    deadlines.close();
  });

  test("a handler that never answers gets 504 TIMEOUT with the deadline in its details", async () => {
    const { app, deadlines } = tiny(40);
    app.get("/", () => new Promise<Response>(() => {}));
    const res = await app.request("/");
    expect(res.status).toBe(504);
    const body = await res.json();
    expect(body.error).toEqual({ code: "TIMEOUT", message: "the request did not finish within 40 ms", details: { timeout_ms: 40 } });
    deadlines.close();
  });

  test("a handler's own error is not turned into a timeout", async () => {
    const { app, deadlines } = tiny(5_000);
    app.get("/", () => {
      throw new HttpError(409, "CONFLICT", "busy");
    });
    const res = await app.request("/");
    expect(res.status).toBe(409);
    deadlines.close();
  });
});

describe("Deadlines", () => {
  test("guard aborts the given controller past the deadline and rejects with 504", async () => {
    const deadlines = new Deadlines(30);
    const ac = new AbortController();
    const err = await deadlines.guard(new Promise(() => {}), ac).catch((e) => e);
    expect(err).toBeInstanceOf(HttpError);
    expect((err as HttpError).status).toBe(504);
    expect(ac.signal.aborted).toBe(true);
    expect((ac.signal.reason as DOMException).name).toBe("TimeoutError");
    deadlines.close();
  });

  test("a settled watch never fires", async () => {
    const deadlines = new Deadlines(20);
    let fired = 0;
    const settle = deadlines.watch(() => fired++);
    settle();
    const other = new Promise<void>((resolve) => deadlines.watch(resolve));
    await other;
    expect(fired).toBe(0);
    deadlines.close();
  });

  test("settle: the next step's value or promise, its throw, and 504 once the awaited promise outlives the deadline", async () => {
    const deadlines = new Deadlines(30);
    expect(await deadlines.settle(Promise.resolve(2), (v) => v * 3)).toBe(6);
    expect(await deadlines.settle(Promise.resolve(2), (v) => Promise.resolve(v + 1))).toBe(3);
    const thrown = await deadlines
      .settle(Promise.resolve(1), () => {
        throw new Error("step failed");
      })
      .catch((e) => e);
    expect((thrown as Error).message).toBe("step failed");
    const rejected = await deadlines.settle(Promise.reject(new Error("read failed")), () => 0).catch((e) => e);
    expect((rejected as Error).message).toBe("read failed");
    let called = false;
    const late = await deadlines
      .settle(new Promise(() => {}), () => {
        called = true;
      })
      .catch((e) => e);
    expect(late).toBeInstanceOf(HttpError);
    expect((late as HttpError).status).toBe(504);
    expect(called).toBe(false);
    deadlines.close();
  });

  test("a resolved guard leaves its controller alone", async () => {
    const deadlines = new Deadlines(20);
    const ac = new AbortController();
    expect(await deadlines.guard(Promise.resolve(7), ac)).toBe(7);
    await new Promise<void>((resolve) => deadlines.watch(resolve));
    expect(ac.signal.aborted).toBe(false);
    deadlines.close();
  });
});
