/**
 * A client that leaves while its run is being set up (the session read,
 * the restore) has gone before the daemon listens for it leaving. Its
 * request's signal is then already aborted, and no abort event comes
 * anymore. Such a run is aborted as soon as it begins, unless detached. Before
 * the fix it ran to its end with nobody listening (model calls and tools
 * included). The request here carries a signal aborted up front, which is
 * the state the daemon finds after that race; the app's own fetch is called
 * directly.
 */
import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createApp } from "../../src/server/app.ts";
import { generateToken } from "../../src/server/token.ts";
import { eventually } from "../support/daemon.ts";

/** A script whose one turn takes a while, so that a run left alone is still going when checked. */
const SLOW_SCRIPT = [{ content: "late answer", delay_ms: 400 }];

function setUp() {
  const dir = mkdtempSync(join(tmpdir(), "agentcore-early-"));
  const token = generateToken();
  const daemon = createApp({ token, port: () => 8787, sessionsDir: join(dir, "sessions"), runtimeOptions: { root: dir } });
  const gone = new AbortController();
  gone.abort(new DOMException("the client disconnected", "AbortError"));
  const post = (body: unknown, accept: string) =>
    daemon.fetch(
      new Request("http://127.0.0.1:8787/v1/runs", {
        method: "POST",
        headers: { host: "127.0.0.1:8787", authorization: `Bearer ${token}`, "content-type": "application/json", accept },
        body: JSON.stringify(body),
        signal: gone.signal,
      }),
    );
  const cleanUp = async () => {
    await daemon.shutdown("abort", 0);
    rmSync(dir, { recursive: true, force: true });
  };
  return { daemon, post, cleanUp };
}

describe("a client gone before its run begins", () => {
  test("Accept: application/json: the run is aborted, not run to its end", async () => {
    const { post, cleanUp } = setUp();
    try {
      const res = await post({ task: "hi", session: "s", script: SLOW_SCRIPT }, "application/json");
      expect(res.status).toBe(201);
      const view = await res.json();
      expect(view.result).toMatchObject({ status: "cancelled", stop_reason: "external_abort", error: "the client disconnected" });
    } finally {
      await cleanUp();
    }
  });

  test("SSE: the run is aborted, not run to its end; a detached one goes on", async () => {
    const { daemon, post, cleanUp } = setUp();
    try {
      const res = await post({ task: "hi", session: "s", script: SLOW_SCRIPT }, "text/event-stream");
      expect(res.status).toBe(201);
      const id = res.headers.get("x-run-id")!;
      const run = daemon.runs.get(id);
      const result = await eventually(() => (run.status === "idle" ? run.results.at(-1)?.result : undefined));
      expect(result).toMatchObject({ status: "cancelled", stop_reason: "external_abort", error: "the client disconnected" });

      const res2 = await post({ task: "hi", session: "t", script: SLOW_SCRIPT, detached: true }, "text/event-stream");
      const run2 = daemon.runs.get(res2.headers.get("x-run-id")!);
      const result2 = await eventually(() => (run2.status === "idle" ? run2.results.at(-1)?.result : undefined));
      expect(result2).toMatchObject({ status: "completed", output: "late answer" });
    } finally {
      await cleanUp();
    }
  });
});
