/**
 * Limits and edge cases of runs and requests: the active-run cap, a stalled
 * body hitting the request deadline, an approval interrupted by an abort,
 * attaching to an idle run, and a stop with an approval pending.
 */
import { describe, expect, test } from "bun:test";
import * as net from "node:net";
import { eventually, SseReader, startTestDaemon } from "../support/daemon.ts";
import { idleTimeoutFor } from "../../src/server/serve.ts";
import type { ApprovalNotice } from "../../src/server/approvals.ts";
import type { AnyToolDefinition } from "../../src/tools/definition.ts";

const sleepCall = (id: string, ms: number) => ({ id, name: "sleep", arguments: JSON.stringify({ ms }) });

describe("limits", () => {
  test("past the active-run cap a new run gets 503 OVERLOADED with Retry-After; the cap frees up when a run ends", async () => {
    const d = await startTestDaemon({ maxActiveRuns: 1 });
    try {
      const first = await d.req("/v1/runs", {
        method: "POST",
        json: { task: "a", script: [{ content: null, tool_calls: [sleepCall("c1", 600_000)] }, { content: "x" }] },
      });
      const sse = new SseReader(first);
      await sse.until((m) => m.event === "tool_progressed");
      const second = await d.req("/v1/runs", { method: "POST", json: { task: "b", script: [{ content: "y" }] } });
      expect(second.status).toBe(503);
      expect(second.headers.get("retry-after")).toBe("1");
      expect((await second.json()).error).toMatchObject({ code: "OVERLOADED", details: { limit: "max_active_runs" } });
      await d.req(`/v1/runs/${first.headers.get("x-run-id")}/abort`, { method: "POST" });
      await sse.all();
      const third = await d.req("/v1/runs", {
        method: "POST",
        headers: { accept: "application/json" },
        json: { task: "c", script: [{ content: "z" }] },
      });
      expect(third.status).toBe(201);
      expect((await third.json()).result.output).toBe("z");
    } finally {
      await d.stop();
    }
  });

  test("a body that stalls gets 504 TIMEOUT at the request deadline", async () => {
    const d = await startTestDaemon({ requestTimeoutMs: 300 });
    try {
      const answer = await new Promise<string>((resolve, reject) => {
        const sock = net.connect({ host: "127.0.0.1", port: d.port });
        let text = "";
        sock.on("data", (b: Buffer) => (text += b.toString()));
        sock.on("error", reject);
        sock.on("close", () => resolve(text));
        // Declares 200 bytes, sends 10, then waits.
        sock.write(
          `POST /v1/calls HTTP/1.1\r\nHost: 127.0.0.1:${d.port}\r\nAuthorization: Bearer ${d.token}\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{"tool":"e`,
        );
        const check = setInterval(() => {
          if (text.includes("\r\n\r\n") && text.includes("duration_ms")) {
            clearInterval(check);
            sock.destroy();
          }
        }, 20);
      });
      expect(answer.split("\r\n")[0]).toContain("504");
      expect(answer).toContain('"code":"TIMEOUT"');
    } finally {
      await d.stop();
    }
  });
});

describe("batch", () => {
  test("a batch client that goes away cancels the call in flight (its pending approval is withdrawn)", async () => {
    const d = await startTestDaemon({ policy: { default: "allow", rules: [{ id: "ask", action: "require_approval", tools: ["echo"] }] } });
    try {
      const ac = new AbortController();
      const res = await d.req("/v1/calls/batch", {
        method: "POST",
        headers: { "content-type": "application/x-ndjson" },
        body: '{"id":"a","tool":"sleep","arguments":{"ms":1}}\n{"id":"b","tool":"echo","arguments":{"x":1}}\n{"id":"c","tool":"sleep","arguments":{"ms":1}}\n',
        signal: ac.signal,
      });
      const reader = res.body!.getReader();
      const first = new TextDecoder().decode((await reader.read()).value);
      expect(JSON.parse(first)).toMatchObject({ id: "a", success: true });
      const pending = await eventually(async () => {
        const list = (await (await d.req("/v1/approvals")).json()).approvals;
        return list.length === 1 ? list : undefined;
      });
      expect(pending[0]).toMatchObject({ tool: "echo", tool_call_id: "b" });
      await reader.cancel();
      ac.abort();
      await eventually(async () => ((await (await d.req("/v1/approvals")).json()).approvals.length === 0 ? true : undefined));
    } finally {
      await d.stop();
    }
  });
});

describe("idle connections", () => {
  test("the idle timeout always outlasts the heartbeat period, so a quiet run's stream is never cut", async () => {
    expect(idleTimeoutFor()).toBe(60);
    expect(idleTimeoutFor(120_000)).toBe(130);
    expect(idleTimeoutFor(240_000)).toBe(250);
    expect(idleTimeoutFor(3_000, 1)).toBe(13);
    // Asked for a 1 s idle timeout with a 10 s heartbeat: a model that is
    // quiet for 6 s (Bun cuts a connection idle for 1 s within about 4 s)
    // still finishes, because the daemon raised the idle timeout to 20 s.
    const d = await startTestDaemon({ heartbeatMs: 10_000 }, { listen: { hostname: "127.0.0.1", port: 0, idleTimeoutSeconds: 1 } });
    try {
      const res = await d.req("/v1/runs", { method: "POST", json: { task: "t", script: [{ content: "after a pause", delay_ms: 6_000 }] } });
      const done = await new SseReader(res).until((m) => m.event === "done");
      expect(done!.data.result).toMatchObject({ status: "completed", output: "after a pause" });
    } finally {
      await d.stop();
    }
  }, 30_000);
});

describe("/mcp deadline", () => {
  test("an /mcp tools/call past the request deadline is cancelled: its pending approval is withdrawn (by: aborted), the exchange ends", async () => {
    const d = await startTestDaemon({
      requestTimeoutMs: 300,
      policy: { default: "allow", rules: [{ id: "ask", action: "require_approval", tools: ["echo"] }] },
    });
    const notices: ApprovalNotice[] = [];
    d.running.daemon.approvals.subscribe((n) => notices.push(n));
    try {
      const res = await d.req("/mcp", {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-protocol-version": "2025-06-18",
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "echo", arguments: { via: "mcp" } } }),
      });
      expect(res.status).toBe(200);
      const resolved = await eventually(() => notices.find((n) => n.kind === "approval_resolved"));
      expect(resolved).toMatchObject({ approval: { tool: "echo" }, outcome: { approved: false, by: "aborted" } });
      await res.text().catch(() => ""); // the stream ends (no result was produced)
      expect(d.running.daemon.approvals.list()).toEqual([]);
      // a quick call is answered as usual
      const ok = await d.req("/mcp", {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-protocol-version": "2025-06-18",
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: 8, method: "tools/list" }),
      });
      expect(await ok.text()).toContain('"name":"echo"');
    } finally {
      await d.stop();
    }
  });
});

describe("single calls", () => {
  test("a client that goes away cancels its POST /v1/calls call (its pending approval is withdrawn, by: aborted)", async () => {
    const d = await startTestDaemon({ policy: { default: "allow", rules: [{ id: "ask", action: "require_approval", tools: ["echo"] }] } });
    const notices: ApprovalNotice[] = [];
    d.running.daemon.approvals.subscribe((n) => notices.push(n));
    try {
      const ac = new AbortController();
      const call = d.req("/v1/calls", { method: "POST", json: { id: "gone1", tool: "echo", arguments: {} }, signal: ac.signal });
      call.catch(() => {});
      await eventually(() => (d.running.daemon.approvals.list().length === 1 ? true : undefined));
      ac.abort();
      const resolved = await eventually(() => notices.find((n) => n.kind === "approval_resolved"));
      expect(resolved).toMatchObject({ approval: { tool_call_id: "gone1" }, outcome: { approved: false, by: "aborted" } });
    } finally {
      await d.stop();
    }
  });

  test("stopping the daemon cancels a call in flight and answers it (CANCELLED) before closing", async () => {
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    const waitTool = {
      name: "wait_forever",
      description: "waits until aborted",
      effect: "read_only",
      parameters: { type: "object" },
      handler: (_args: unknown, ctx: { signal: AbortSignal }) =>
        new Promise((_, reject) => {
          started();
          ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason), { once: true });
        }),
    } as unknown as AnyToolDefinition;
    const d = await startTestDaemon({ runtimeOptions: { tools: [waitTool] } });
    const answer = d.req("/v1/calls", { method: "POST", json: { id: "s1", tool: "wait_forever", arguments: {} } });
    await running;
    await d.stop();
    const res = await answer;
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ id: "s1", success: false, tool: "wait_forever", error: { code: "CANCELLED" } });
  });
});

describe("single calls at shutdown in finish mode", () => {
  test("a call in flight may finish within the grace period; its answer goes out, then the daemon stops", async () => {
    let started!: () => void;
    let release!: () => void;
    const running = new Promise<void>((r) => (started = r));
    const gate = new Promise<void>((r) => (release = r));
    const gated = {
      name: "gated",
      description: "finishes when the test says so",
      effect: "read_only",
      parameters: { type: "object" },
      handler: async (_args: unknown, ctx: { signal: AbortSignal }) => {
        started();
        await gate;
        return { aborted: ctx.signal.aborted };
      },
    } as unknown as AnyToolDefinition;
    const d = await startTestDaemon({ runtimeOptions: { tools: [gated] } }, { onShutdown: "finish", graceMs: 600_000 });
    const answer = d.req("/v1/calls", { method: "POST", json: { id: "g1", tool: "gated", arguments: {} } });
    await running;
    let stopped = false;
    const stopping = d.stop().then(() => (stopped = true));
    await Bun.sleep(50); // the stop is waiting for the call (it would have aborted it by now in abort mode)
    expect(stopped).toBe(false);
    release();
    const res = await answer;
    expect(await res.json()).toMatchObject({ id: "g1", success: true, result: { aborted: false } });
    await stopping;
  });
});

describe("approvals and runs at the edges", () => {
  test("aborting a run while its approval is pending denies the approval (by: aborted) and cancels the run", async () => {
    const d = await startTestDaemon({ policy: { default: "require_approval" } });
    try {
      const res = await d.req("/v1/runs", {
        method: "POST",
        json: { task: "t", script: [{ content: null, tool_calls: [{ id: "c1", name: "echo", arguments: "{}" }] }, { content: "never" }] },
      });
      const sse = new SseReader(res);
      const req = await sse.until((m) => m.event === "approval_requested");
      await d.req(`/v1/runs/${res.headers.get("x-run-id")}/abort`, { method: "POST", json: { reason: "stop" } });
      const resolved = await sse.until((m) => m.event === "approval_resolved");
      expect(resolved!.data.outcome).toMatchObject({ approval_id: req!.data.approval.approval_id, approved: false, by: "aborted" });
      const done = await sse.until((m) => m.event === "done");
      expect(done!.data.result.status).toBe("cancelled");
      expect((await (await d.req("/v1/approvals")).json()).approvals).toEqual([]);
    } finally {
      await d.stop();
    }
  });

  test("an idle agent is shut down after its TTL; the run stays readable and refuses to continue", async () => {
    const d = await startTestDaemon({ idleTtlMs: 100 });
    try {
      const created = await d.req("/v1/runs", {
        method: "POST",
        headers: { accept: "application/json" },
        json: { task: "t", script: [{ content: "bye" }, { content: "never" }] },
      });
      const { run_id } = await created.json();
      const view = await eventually(async () => {
        const v = await (await d.req(`/v1/runs/${run_id}`)).json();
        return v.status === "closed" ? v : undefined;
      }, 50);
      expect(view).toMatchObject({ result: { output: "bye" }, can_continue: false, continue_rejection_reason: "agent_shutting_down" });
      const cont = await d.req(`/v1/runs/${run_id}/continue`, { method: "POST" });
      expect(cont.status).toBe(409);
      expect((await cont.json()).error.details.reason).toBe("closed");
    } finally {
      await d.stop();
    }
  });

  test("attaching to an idle run ends at once with done; an unknown run is 404", async () => {
    const d = await startTestDaemon();
    try {
      const created = await d.req("/v1/runs", {
        method: "POST",
        headers: { accept: "application/json" },
        json: { task: "t", script: [{ content: "idle now" }] },
      });
      const { run_id } = await created.json();
      const watch = new SseReader(await d.req(`/v1/runs/${run_id}/events`));
      const all = await watch.all();
      expect(all.map((m) => m.event)).toEqual(["done"]);
      expect(all[0]!.data).toMatchObject({ run_id, status: "idle", result: { output: "idle now" } });
      expect((await d.req("/v1/runs/run_000/events")).status).toBe(404);
    } finally {
      await d.stop();
    }
  });

  test("stopping the daemon with an approval pending: the run ends cancelled, the stream ends, nothing is left pending", async () => {
    const d = await startTestDaemon({ policy: { default: "require_approval" } });
    const res = await d.req("/v1/runs", {
      method: "POST",
      json: { task: "t", script: [{ content: null, tool_calls: [{ id: "c1", name: "echo", arguments: "{}" }] }, { content: "never" }] },
    });
    const sse = new SseReader(res);
    await sse.until((m) => m.event === "approval_requested");
    const stopped = d.stop();
    const finished = await sse.until((m) => m.event === "agent_finished");
    expect(finished!.data.result).toMatchObject({ status: "cancelled", error: "the daemon is shutting down" });
    await stopped;
    expect(d.running.daemon.approvals.list()).toEqual([]);
    expect(d.running.daemon.runs.list().every((r) => r.status === "closed")).toBe(true);
  });
});

describe("listening", () => {
  test("an IPv6 host given with or without brackets gives one well-formed URL that answers", async () => {
    for (const hostname of ["::1", "[::1]"]) {
      const d = await startTestDaemon({}, { listen: { hostname, port: 0 } });
      try {
        expect(d.url).toMatch(/^http:\/\/\[::1\]:\d+$/);
        expect(await (await fetch(`${d.url}/v1/health`)).json()).toEqual({ status: "ok" });
      } finally {
        await d.stop();
      }
    }
  });
});
