/**
 * `/v1/runs`: start a run, list and view runs, follow a run's events, and
 * the operations on a run (abort, steer, follow_up, continue, compact).
 *
 * @module
 */
import type { Context } from "hono";
import { Fields } from "../body.ts";
import { HttpError, jsonResponse } from "../errors.ts";
import { deadline } from "../middleware/deadline.ts";
import { parseRunRequest, type RunManager, type ServerRun } from "../runs.ts";
import { runEventStream, SSE_HEADERS } from "../sse.ts";
import { subApp, type AppDeps, type DaemonEnv } from "./deps.ts";

function wantsJson(c: Context): boolean {
  const accept = c.req.header("accept") ?? "";
  return /application\/json/i.test(accept) && !/text\/event-stream/i.test(accept);
}

/**
 * Answer an operation on a run: SSE by default, the final view with `Accept:
 * application/json` (`POST /v1/runs`, continue, compact, and a session's resume).
 */
export function runResponder(deps: AppDeps) {
  const { runs, heartbeatMs } = deps;
  return async (c: Context<DaemonEnv>, run: ServerRun, op: Parameters<RunManager["begin"]>[1], created: boolean): Promise<Response> =>
    runResponseOf(runs, heartbeatMs, c, run, op, created);
}

/** The runs sub-app. */
export function runRoutes(deps: AppDeps) {
  const { runs, heartbeatMs } = deps;
  const timed = deadline(deps.deadlines);
  const app = subApp();
  const runResponse = runResponder(deps);

  app.post("/", async (c) => {
    const req = parseRunRequest(await c.var.body.json());
    const run = await runs.create(req);
    try {
      return await runResponse(c, run, { kind: "task", task: req.task }, true);
    } catch (e) {
      if (run.status !== "running") await runs.discard(run);
      throw e;
    }
  });
  app.get("/", () => jsonResponse({ runs: runs.list().map((r) => runs.view(r)) }));
  app.get("/:id", (c) => jsonResponse(runs.view(runs.get(c.req.param("id")))));
  app.get("/:id/events", (c) => {
    const run = runs.get(c.req.param("id"));
    // Last-Event-ID (or ?after=N) replays the kept items after that id; without it only new items come.
    const header = c.req.header("last-event-id");
    const raw = header ?? c.req.query("after");
    let replayAfter: number | undefined;
    if (raw !== undefined) {
      if (!/^\d{1,15}$/.test(raw.trim())) {
        throw new HttpError(
          400,
          "INVALID_REQUEST",
          `${header !== undefined ? "the Last-Event-ID header" : "the query parameter after"} must be an event id: a non-negative integer`,
          header !== undefined ? { header: "last-event-id" } : { query: "after" },
        );
      }
      replayAfter = Number(raw.trim());
    }
    // HEAD (which the GET route answers too) gets the headers only: a stream made for it would never be read or cancelled.
    if (c.req.method === "HEAD") return new Response(null, { headers: SSE_HEADERS });
    return new Response(runEventStream(run, { heartbeatMs, signal: c.req.raw.signal, endIfIdle: true, replayAfter }), {
      headers: SSE_HEADERS,
    });
  });
  app.post("/:id/abort", timed, async (c) => {
    const run = runs.get(c.req.param("id"));
    const f = Fields.of(await c.var.body.json({ allowEmpty: true }), ["reason"]);
    const reason = f.string("reason", { max: 1000 }) ?? "aborted by a client";
    return jsonResponse({ run_id: run.id, aborted: run.agent.abort(reason) });
  });
  app.post("/:id/steer", timed, async (c) => {
    const run = runs.get(c.req.param("id"));
    const f = Fields.of(await c.var.body.json(), ["content"]);
    const content = f.string("content", { required: true, max: 1 << 20 })!;
    const receipt = run.agent.steer(content);
    return jsonResponse({ run_id: run.id, ...receipt }, receipt.status === "accepted" ? 202 : 409);
  });
  app.post("/:id/follow_up", timed, async (c) => {
    const run = runs.get(c.req.param("id"));
    const f = Fields.of(await c.var.body.json(), ["task"]);
    const task = f.string("task", { required: true, max: 1 << 20 })!;
    if (run.closed) throw new HttpError(409, "CONFLICT", `run ${run.id} is closed`, { reason: "closed" });
    const handle = run.agent.followUp(task);
    handle.wait().catch(() => {});
    return jsonResponse({ run_id: run.id, ...handle.receipt }, handle.receipt.status === "accepted" ? 202 : 409);
  });
  // continue and compact take no fields: the body is empty, or `{}`.
  app.post("/:id/continue", async (c) => {
    const run = runs.get(c.req.param("id"));
    Fields.of(await c.var.body.json({ allowEmpty: true }), []);
    return runResponse(c, run, { kind: "continue" }, false);
  });
  app.post("/:id/compact", async (c) => {
    const run = runs.get(c.req.param("id"));
    Fields.of(await c.var.body.json({ allowEmpty: true }), []);
    return runResponse(c, run, { kind: "compact" }, false);
  });
  return app;
}

async function runResponseOf(
  runs: RunManager,
  heartbeatMs: AppDeps["heartbeatMs"],
  c: Context<DaemonEnv>,
  run: ServerRun,
  op: Parameters<RunManager["begin"]>[1],
  created: boolean,
): Promise<Response> {
  const status = created ? 201 : 200;
  const headers = { location: `/v1/runs/${run.id}`, "x-run-id": run.id };
  if (wantsJson(c)) {
    const { done } = await runs.begin(run, op);
    const onGone = () => {
      if (!run.detached) run.agent.abort("the client disconnected");
    };
    c.req.raw.signal?.addEventListener("abort", onGone, { once: true });
    // A client that left while the run was being set up (its session read) is gone already.
    if (c.req.raw.signal?.aborted === true) onGone();
    try {
      await done.catch(() => null);
    } finally {
      c.req.raw.signal?.removeEventListener("abort", onGone);
    }
    return jsonResponse(runs.view(run), status, headers);
  }
  let begun = false;
  const stream = runEventStream(run, {
    heartbeatMs,
    signal: c.req.raw.signal,
    onDisconnect: () => {
      // Only a stream that was answered can be left; a refused operation aborts nothing.
      if (begun && !run.detached) run.agent.abort("the client disconnected");
    },
  });
  try {
    await runs.begin(run, op);
    begun = true;
    // The stream saw the client leave before the run began (the operation was set up meanwhile): end it now.
    if (c.req.raw.signal?.aborted === true && !run.detached) run.agent.abort("the client disconnected");
  } catch (e) {
    await stream.cancel().catch(() => {});
    throw e;
  }
  return new Response(stream, { status, headers: { ...SSE_HEADERS, ...headers } });
}
