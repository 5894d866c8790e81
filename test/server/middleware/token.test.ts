import { describe, expect, test } from "bun:test";
import { Hono } from "hono";
import { bearerToken } from "../../../src/server/middleware/token.ts";

const TOKEN = "t".repeat(64);

function tiny() {
  const app = new Hono();
  app.use(bearerToken({ token: TOKEN }));
  app.get("/v1/health", (c) => c.text("open"));
  app.get("/v1/tools", (c) => c.text("closed"));
  app.post("/v1/health", (c) => c.text("post"));
  return app;
}

describe("bearerToken middleware", () => {
  test("the right token passes", async () => {
    const res = await tiny().request("/v1/tools", { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("closed");
  });

  for (const [name, header] of [
    ["no header", undefined],
    ["an empty header", ""],
    ["a wrong token", `Bearer ${"u".repeat(64)}`],
    ["a prefix of the token", `Bearer ${TOKEN.slice(0, 63)}`],
    ["the token without the scheme", TOKEN],
    ["Basic auth", `Basic ${btoa(`x:${TOKEN}`)}`],
  ] as const) {
    test(`${name} gets 401 UNAUTHORIZED with WWW-Authenticate`, async () => {
      const res = await tiny().request("/v1/tools", { headers: header === undefined ? {} : { authorization: header } });
      expect(res.status).toBe(401);
      expect(res.headers.get("www-authenticate")).toBe('Bearer realm="agentcore"');
      const body = await res.json();
      expect(body.success).toBe(false);
      expect(body.error.code).toBe("UNAUTHORIZED");
      expect(body.error.message).toContain("Authorization: Bearer <token>");
    });
  }

  test("GET /v1/health needs no token, but POST to the same path does", async () => {
    const app = tiny();
    expect((await app.request("/v1/health")).status).toBe(200);
    expect((await app.request("/v1/health", { method: "POST" })).status).toBe(401);
  });

  test("the open routes can be chosen", async () => {
    const app = new Hono();
    app.use(bearerToken({ token: TOKEN, open: () => true }));
    app.get("/x", (c) => c.text("x"));
    expect((await app.request("/x")).status).toBe(200);
  });
});
