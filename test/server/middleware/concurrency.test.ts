import { describe, expect, test } from "bun:test";
import { Hono } from "hono";
import { concurrency, Pool } from "../../../src/server/middleware/concurrency.ts";

function tiny(limit: number) {
  const pool = new Pool(limit, "max_concurrent", "too many requests at once");
  const state = { stopping: false };
  const gates: (() => void)[] = [];
  const app = new Hono();
  app.onError(() => new Response("failed", { status: 500 }));
  app.use(concurrency({ pool: (_m, path) => (path === "/free" ? null : pool), stopping: () => state.stopping }));
  app.get("/wait", () => new Promise<Response>((resolve) => gates.push(() => resolve(new Response("done")))));
  app.get("/now", (c) => c.text("now"));
  app.get("/free", (c) => c.text("free"));
  app.get("/throws", () => {
    throw new Error("boom");
  });
  return { app, pool, state, gates };
}

describe("concurrency middleware", () => {
  test("past the limit: 503 OVERLOADED with Retry-After 1 naming the pool; freed once a request answers", async () => {
    const { app, pool, gates } = tiny(2);
    const a = app.request("/wait");
    const b = app.request("/wait");
    await Bun.sleep(0);
    expect(pool.active).toBe(2);
    const refused = await app.request("/now");
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toBe("1");
    const body = await refused.json();
    expect(body.error).toEqual({ code: "OVERLOADED", message: "too many requests at once (2)", details: { limit: "max_concurrent" } });
    // An uncounted route still answers.
    expect((await app.request("/free")).status).toBe(200);
    gates.shift()!();
    expect((await a).status).toBe(200);
    expect((await app.request("/now")).status).toBe(200);
    gates.shift()!();
    await b;
    expect(pool.active).toBe(0);
  });

  test("a handler that throws frees its place", async () => {
    const { app, pool } = tiny(1);
    expect((await app.request("/throws")).status).toBe(500);
    expect(pool.active).toBe(0);
    expect((await app.request("/now")).status).toBe(200);
  });

  test("while stopping: 503 with Retry-After 5 and limit shutdown; uncounted routes still answer", async () => {
    const { app, state } = tiny(10);
    state.stopping = true;
    const res = await app.request("/now");
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("5");
    expect((await res.json()).error.details).toEqual({ limit: "shutdown" });
    expect((await app.request("/free")).status).toBe(200);
  });
});
