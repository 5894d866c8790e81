/**
 * The OpenAPI document lists the statuses the daemon really answers: each
 * refusal below is provoked on a real daemon, on every route that can give
 * it, and the status must be among that operation's documented responses
 * (with the right media type: /mcp refusals are JSON-RPC, not envelopes).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as net from "node:net";
import { startTestDaemon, type TestDaemon } from "../support/daemon.ts";

let d: TestDaemon;
let doc: any;
let runId: string;
beforeAll(async () => {
  d = await startTestDaemon({ requestTimeoutMs: 400 });
  doc = await (await d.req("/v1/openapi.json")).json();
  const res = await d.req("/v1/runs", {
    method: "POST",
    headers: { accept: "application/json" },
    json: { task: "hi", session: "s", script: [{ content: "hello" }] },
  });
  expect(res.status).toBe(201);
  runId = (await res.json()).run_id;
});
afterAll(async () => {
  await d.stop();
});

/** Concrete paths for the documented templates. */
function concrete(template: string): string {
  return template.replace("{run_id}", runId).replace("{session_id}", "s").replace("{approval_id}", "apr_none");
}

/** Every documented POST operation that takes a request body, as [template, operation]. */
function bodyOperations(): [string, any][] {
  return Object.entries(doc.paths as Record<string, any>)
    .filter(([, ops]) => ops.post?.requestBody !== undefined)
    .map(([p, ops]) => [p, ops.post]);
}

function documented(op: any, status: number): boolean {
  return op.responses[String(status)] !== undefined;
}

/** A POST whose body never comes (a declared length, then silence): the body read meets the deadline. */
function stalledPost(path: string, contentType: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const sock = net.connect({ host: "127.0.0.1", port: d.port });
    let text = "";
    sock.on("data", (b: Buffer) => {
      text += b.toString("utf8");
      const m = /^HTTP\/1\.1 (\d{3})/.exec(text);
      if (m !== null) {
        sock.destroy();
        resolve(Number(m[1]));
      }
    });
    sock.on("error", reject);
    sock.write(
      `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1:${d.port}\r\nAuthorization: Bearer ${d.token}\r\nContent-Type: ${contentType}\r\nAccept: application/json\r\nContent-Length: 100\r\n\r\n{`,
    );
  });
}

describe("documented statuses", () => {
  test("a body that is not JSON gets 415 on every body route, and 415 is documented there", async () => {
    const missing: string[] = [];
    for (const [template, op] of bodyOperations()) {
      const res = await d.req(concrete(template), {
        method: "POST",
        headers: { "content-type": "text/plain", accept: "application/json" },
        body: "{}",
      });
      await res.text();
      expect(`${template} ${res.status}`).toBe(`${template} 415`);
      if (!documented(op, 415)) missing.push(template);
    }
    expect(missing).toEqual([]);
  });

  test("a body over the cap gets 413 on every body route, and 413 is documented there", async () => {
    const big = `{"x":"${"a".repeat((1 << 20) + 10)}"}`;
    const missing: string[] = [];
    for (const [template, op] of bodyOperations()) {
      const type = template === "/v1/calls/batch" ? "application/x-ndjson" : "application/json";
      const res = await d.req(concrete(template), {
        method: "POST",
        headers: { "content-type": type, accept: "application/json, text/event-stream" },
        body: big,
      });
      await res.text();
      expect(`${template} ${res.status}`).toBe(`${template} 413`);
      if (!documented(op, 413)) missing.push(template);
    }
    expect(missing).toEqual([]);
  });

  test("a body that stalls gets 504 on every JSON body route, and 504 is documented there", { timeout: 60_000 }, async () => {
    const missing: string[] = [];
    for (const [template, op] of bodyOperations()) {
      if (template === "/mcp") continue; // JSON-RPC; its deadline closes the exchange
      const type = template === "/v1/calls/batch" ? "application/x-ndjson" : "application/json";
      const status = await stalledPost(concrete(template), type);
      expect(`${template} ${status}`).toBe(`${template} 504`);
      if (!documented(op, 504)) missing.push(template);
    }
    expect(missing).toEqual([]);
  });

  test("a Last-Event-ID that is not an event id gets 400, documented on the events route", async () => {
    const res = await d.req(`/v1/runs/${runId}/events`, { headers: { "last-event-id": "abc" } });
    expect(res.status).toBe(400);
    const body = await res.json();
    expect(body.error.code).toBe("INVALID_REQUEST");
    expect(body.error.details).toEqual({ header: "last-event-id" });
    expect(body.error.message).toContain("Last-Event-ID header");
    expect(documented(doc.paths["/v1/runs/{run_id}/events"].get, 400)).toBe(true);
    // The same mistake in ?after names the query parameter, not a header the client never sent.
    const q = await (await d.req(`/v1/runs/${runId}/events?after=-1`)).json();
    expect(q.error.details).toEqual({ query: "after" });
    expect(q.error.message).toContain("query parameter after");
  });

  test("/mcp documents its refusals as JSON-RPC errors (what it sends), not envelopes", async () => {
    const res = await d.req("/mcp", {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: `{"a":1,"a":2}`,
    });
    expect(res.status).toBe(400);
    const m = await res.json();
    expect(m.jsonrpc).toBe("2.0");
    expect(m.error.code).toBe(-32700);
    const op = doc.paths["/mcp"].post;
    for (const s of ["400", "413", "415"]) {
      const schema = op.responses[s]?.content?.["application/json"]?.schema;
      expect(`${s} ${JSON.stringify(schema)}`).not.toContain("Envelope");
      expect(schema).toBeDefined();
    }
  });
});
