import { describe, expect, test } from "bun:test";
import { Hono } from "hono";
import { hostOrigin } from "../../../src/server/middleware/host-origin.ts";

function tiny(allowedOrigins: string[] = []) {
  const app = new Hono();
  app.use(hostOrigin({ port: () => 8787, allowedOrigins }));
  app.get("/", (c) => c.text("ok"));
  app.get("/refused", (c) => c.text("no", 401));
  return app;
}

describe("hostOrigin middleware", () => {
  test("a loopback Host with the daemon's port passes", async () => {
    for (const host of ["127.0.0.1:8787", "localhost:8787", "[::1]:8787"]) {
      const res = await tiny().request("http://x/", { headers: { host } });
      expect(res.status).toBe(200);
    }
  });

  for (const host of ["evil.example:8787", "127.0.0.1:9999", ":8787", "", "127.0.0.1"]) {
    test(`Host '${host}' gets 403 FORBIDDEN naming the header`, async () => {
      const res = await tiny().request("http://x/", { headers: { host } });
      expect(res.status).toBe(403);
      const body = await res.json();
      expect(body.error.code).toBe("FORBIDDEN");
      expect(body.error.details).toEqual({ header: "host" });
    });
  }

  test("an Origin that is not allowed gets 403 naming the origin header", async () => {
    const res = await tiny().request("http://x/", { headers: { host: "127.0.0.1:8787", origin: "https://evil.example" } });
    expect(res.status).toBe(403);
    expect((await res.json()).error.details).toEqual({ header: "origin" });
  });

  test("an allowed Origin gets CORS headers on every answer, refusals included, and a 204 preflight", async () => {
    const app = tiny(["http://localhost:5173"]);
    const headers = { host: "127.0.0.1:8787", origin: "http://localhost:5173" };
    const ok = await app.request("http://x/", { headers });
    expect(ok.status).toBe(200);
    expect(ok.headers.get("access-control-allow-origin")).toBe("http://localhost:5173");
    const refused = await app.request("http://x/refused", { headers });
    expect(refused.status).toBe(401);
    expect(refused.headers.get("access-control-allow-origin")).toBe("http://localhost:5173");
    const pre = await app.request("http://x/", { method: "OPTIONS", headers });
    expect(pre.status).toBe(204);
    expect(pre.headers.get("access-control-max-age")).toBe("600");
    expect(pre.headers.get("access-control-allow-origin")).toBe("http://localhost:5173");
  });

  test("no Origin, no CORS headers", async () => {
    const res = await tiny().request("http://x/", { headers: { host: "127.0.0.1:8787" } });
    expect(res.headers.get("access-control-allow-origin")).toBeNull();
  });
});
