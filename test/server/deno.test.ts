/**
 * Smoke test: the same daemon under `deno run` (Deno.serve): health without a
 * token, an authenticated call, a scripted run over SSE, a disconnect that
 * aborts a run, a refused Host, then SIGTERM during a session run → the
 * journal ends with run_finished and the exit status is 0.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REPO_ROOT } from "../support/paths.ts";
import { rawRequest, SseReader } from "../support/daemon.ts";
import { JsonlSessionStorage } from "../../src/session/jsonl.ts";

const dir = mkdtempSync(join(tmpdir(), "agentcore-serve-deno-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("agentcore serve runs under deno run", async () => {
  const deno = join(REPO_ROOT, "node_modules/.bin/deno");
  const proc = Bun.spawn(
    [
      deno,
      "run",
      "--allow-read",
      "--allow-write",
      "--allow-env",
      "--allow-net",
      join(REPO_ROOT, "src/cli/main.ts"),
      "serve",
      "--port",
      "0",
      "--state-dir",
      join(dir, "state"),
      "--root",
      dir,
    ],
    {
      cwd: REPO_ROOT,
      env: {
        PATH: process.env.PATH ?? "",
        HOME: dir,
        DENO_DIR: process.env.DENO_DIR ?? join(process.env.HOME ?? dir, ".cache/deno"),
        NO_COLOR: "1",
      },
      stderr: "pipe",
      stdout: "pipe",
    },
  );
  try {
    let text = "";
    const reader = proc.stderr.getReader();
    const dec = new TextDecoder();
    while (!/token file .+\n/.test(text)) {
      const { done, value } = await reader.read();
      if (done) throw new Error(`deno serve ended early: ${text}`);
      text += dec.decode(value, { stream: true });
    }
    const url = /serve: listening on (\S+)\n/.exec(text)![1]!;
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const token = readFileSync(/token file (.+)\n/.exec(text)![1]!, "utf8").trim();
    expect(await (await fetch(`${url}/v1/health`)).json()).toEqual({ status: "ok" });
    const r = await fetch(`${url}/v1/calls`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: '{"type":"tool_use","id":"d1","name":"echo","input":{"message":"from deno"}}',
    });
    expect(r.status).toBe(200);
    expect(await r.json()).toMatchObject({ id: "d1", success: true, tool: "echo", result: { message: "from deno" } });
    const anon = await fetch(`${url}/v1/tools`);
    expect(anon.status).toBe(401);
    // The refusal asks to close the connection (Deno itself keeps it open: docs/daemon.md, Known limits).
    expect(anon.headers.get("connection")).toBe("close");
    await anon.text();
    // A scripted run streams over SSE on Deno.serve too.
    const run = await fetch(`${url}/v1/runs`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({
        task: "t",
        script: [{ content: null, tool_calls: [{ id: "c1", name: "echo", arguments: '{"on":"deno"}' }] }, { content: "deno done" }],
      }),
    });
    expect(run.headers.get("content-type")).toContain("text/event-stream");
    const events = await new SseReader(run).all();
    expect(events.find((m) => m.event === "tool_completed")!.data.result.error).toBeNull();
    expect(events.at(-1)).toMatchObject({ event: "done", data: { result: { status: "completed", output: "deno done" } } });
    // A client that goes away aborts its (non-detached) run on Deno too.
    const long = await fetch(`${url}/v1/runs`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ task: "t", script: [{ content: "thinking", delay_ms: 600_000 }] }),
    });
    const longId = long.headers.get("x-run-id")!;
    const longSse = new SseReader(long);
    await longSse.until((m) => m.event === "turn_started");
    await longSse.cancel();
    for (;;) {
      const v = await (await fetch(`${url}/v1/runs/${longId}`, { headers: { authorization: `Bearer ${token}` } })).json();
      if (v.status === "idle") {
        expect(v.result).toMatchObject({ status: "cancelled", error: "the client disconnected" });
        break;
      }
      await Bun.sleep(20);
    }
    const port = Number(new URL(url).port);
    const evil = await rawRequest(port, `GET /v1/health HTTP/1.1\r\nHost: evil.example:${port}\r\nConnection: close`);
    expect(evil.status).toBe(403);
    // SIGTERM during a session run: the run is aborted, its journal ends with run_finished, exit 0.
    const job = await fetch(`${url}/v1/runs`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ task: "t", session: "deno-job", script: [{ content: "slow", delay_ms: 600_000 }] }),
    });
    const jobSse = new SseReader(job);
    await jobSse.until((m) => m.event === "turn_started");
    proc.kill("SIGTERM");
    const finished = await jobSse.until((m) => m.event === "agent_finished");
    expect(finished!.data.result.status).toBe("cancelled");
    expect(await proc.exited).toBe(0);
    const journal = readFileSync(new JsonlSessionStorage(join(dir, ".agentcore", "sessions")).fileFor("deno-job"), "utf8")
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(journal.map((r) => r.type)).toEqual(["run_started", "run_finished"]);
  } finally {
    if (proc.exitCode === null) proc.kill("SIGKILL");
  }
}, 120_000);
