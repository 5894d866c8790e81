/**
 * HEAD on a run's events route answers the headers and attaches nothing.
 * It used to attach a stream that nobody would read or cancel: one listener
 * and one heartbeat timer per HEAD request, kept until the run ended.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { eventually, startTestDaemon, type TestDaemon } from "../support/daemon.ts";

let d: TestDaemon;
beforeAll(async () => {
  d = await startTestDaemon();
});
afterAll(async () => {
  await d.stop();
});

test("HEAD /v1/runs/{id}/events: 200 with the SSE content type, no listener left on the running run", async () => {
  const res = await d.req("/v1/runs", {
    method: "POST",
    json: {
      task: "wait",
      detached: true,
      script: [{ content: null, tool_calls: [{ id: "s1", name: "sleep", arguments: '{"ms":600000}' }] }, { content: "done" }],
    },
  });
  expect(res.status).toBe(201);
  const id = res.headers.get("x-run-id")!;
  await res.body?.cancel();
  const run = d.running.daemon.runs.get(id);
  expect(run.status).toBe("running");
  // The creating stream was cancelled above: wait until it has let go.
  await eventually(() => (run.listeners.size === 0 ? true : undefined));
  for (let i = 0; i < 5; i++) {
    const h = await d.req(`/v1/runs/${id}/events`, { method: "HEAD" });
    expect(h.status).toBe(200);
    expect(h.headers.get("content-type")).toContain("text/event-stream");
    await h.text();
  }
  expect(run.listeners.size).toBe(0);
  // HEAD on an unknown run is still 404.
  expect((await d.req("/v1/runs/run_nope/events", { method: "HEAD" })).status).toBe(404);
  d.running.daemon.runs.get(id).agent.abort("test over");
});
