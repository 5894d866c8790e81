/**
 * `/v1/runs`: start a run, list and view runs, follow a run's events, and
 * the operations on a run (abort, steer, follow_up, continue, compact).
 *
 * @module
 */
import type { Context } from "hono";
import { Fields } from "../body.ts";
import type { AgentRunResult } from "../../agent/index.ts";
import type { ErrorCode } from "../../core/envelope.ts";
import { errorResponse, HttpError, jsonResponse } from "../errors.ts";
import { deadline } from "../middleware/deadline.ts";
import { loadRunStack, parseRunRequest, type RunManager, type ServerRun } from "../runs.ts";
import { runEventStream, SSE_HEADERS } from "../sse.ts";
import { subApp, type AppDeps, type DaemonEnv } from "./deps.ts";
import type { CommandKind, CommandOutcome } from "../cluster/cluster.ts";

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

/**
 * The operations on a run of this daemon, as the routes answer them (status
 * and body): what `POST /v1/runs/{id}/abort|steer|follow_up|continue` and
 * `POST /v1/approvals/{id}` do here, and what a cluster owner applies for a
 * command another daemon sent it. A `continue` applied for another daemon
 * answers 202 once the run goes on (its events follow at /events).
 */
export function runCommands(deps: AppDeps) {
  const { runs, approvals } = deps;
  return async (kind: CommandKind, id: string | null, body: Record<string, unknown>): Promise<CommandOutcome> => {
    if (kind === "approval") {
      const key = String(body.key ?? id ?? "");
      const approved = body.approved === true;
      const reason = typeof body.reason === "string" ? body.reason : undefined;
      if (approvals.get(key) === undefined || !approvals.resolve(key, reason === undefined ? { approved } : { approved, reason }))
        throw new HttpError(404, "NOT_FOUND", `no pending approval '${key.slice(0, 100)}' (answered, timed out, or never existed)`);
      return { status: 200, body: { approval_id: key, approved, reason: reason ?? null } };
    }
    const run = runs.get(id ?? "");
    switch (kind) {
      case "abort":
        return { status: 200, body: { run_id: run.id, aborted: run.agent.abort(String(body.reason)) } };
      case "steer": {
        const receipt = run.agent.steer(String(body.content));
        return { status: receipt.status === "accepted" ? 202 : 409, body: { run_id: run.id, ...receipt } };
      }
      case "follow_up": {
        if (run.closed) throw new HttpError(409, "CONFLICT", `run ${run.id} is closed`, { reason: "closed" });
        const handle = run.agent.followUp(String(body.task));
        handle.wait().catch(() => {});
        return { status: handle.receipt.status === "accepted" ? 202 : 409, body: { run_id: run.id, ...handle.receipt } };
      }
      case "continue": {
        await runs.begin(run, { kind: "continue" });
        return { status: 202, body: { run_id: run.id, status: "running", events: `/v1/runs/${run.id}/events` } };
      }
    }
  };
}

/** The runs sub-app. */
export function runRoutes(deps: AppDeps) {
  const { runs, heartbeatMs } = deps;
  const timed = deadline(deps.deadlines);
  const app = subApp();
  const runResponse = runResponder(deps);

  const cluster = deps.cluster;
  app.post("/", async (c) => {
    const body = await c.var.body.json();
    await loadRunStack();
    const req = parseRunRequest(body);
    if (cluster !== null) {
      // Not queued through the store yet: refused rather than dropped.
      if (req.images !== undefined)
        throw new HttpError(
          400,
          "INVALID_REQUEST",
          "/images: is not taken in cluster mode yet; send it to a daemon that is not in a cluster",
          {
            location: "/images",
          },
        );
      // cluster mode: queued in the store, run by whichever daemon claims it (docs/cluster.md)
      runs.checkTools(req);
      const view = await cluster.submit(req);
      return jsonResponse(view, 201, { location: `/v1/runs/${view.run_id}`, "x-run-id": view.run_id });
    }
    const run = await runs.create(req);
    try {
      return await runResponse(
        c,
        run,
        {
          kind: "task",
          task: req.task,
          ...(req.outputSchema !== undefined ? { outputSchema: req.outputSchema } : {}),
          ...(req.images !== undefined ? { images: req.images } : {}),
        },
        true,
      );
    } catch (e) {
      if (run.status !== "running") await runs.discard(run);
      throw e;
    }
  });
  app.get("/", async () => {
    const local = runs.list().map((r) => runs.view(r));
    if (cluster === null) return jsonResponse({ runs: local });
    const mine = new Set(local.map((r) => r.run_id));
    return jsonResponse({ runs: [...local, ...(await cluster.list()).filter((r) => !mine.has(r.run_id))] });
  });
  app.get("/:id", async (c) => {
    const id = c.req.param("id");
    if (cluster === null) return jsonResponse(runs.view(runs.get(id)));
    const view = await cluster.view(id);
    // a run this daemon runs: its own view, with the table's word on who owns it now (looked up after the
    // row, so that a run that ended meanwhile, and so left the live table, is shown as the row has it)
    const local = runs.find(id);
    if (local !== undefined)
      return jsonResponse({
        ...runs.view(local),
        ...(view !== null ? { cluster: { status: view.status, owner: view.owner, epoch: view.epoch } } : {}),
      });
    if (view === null) throw new HttpError(404, "NOT_FOUND", `no run '${id.slice(0, 100)}'`, {});
    return jsonResponse(view);
  });
  app.get("/:id/events", async (c) => {
    const id = c.req.param("id");
    const run = cluster === null ? runs.get(id) : runs.find(id);
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
    if (cluster !== null) {
      // a cluster run's events come from the store on every daemon, its owner too; from the first without Last-Event-ID
      const stream = c.req.method === "HEAD" ? null : await cluster.events(id, replayAfter ?? 0, heartbeatMs, c.req.raw.signal);
      if (stream !== null) return new Response(stream, { headers: SSE_HEADERS });
      if (c.req.method === "HEAD" && (run !== undefined || (await cluster.view(id)) !== null))
        return new Response(null, { headers: SSE_HEADERS });
      if (run === undefined) throw new HttpError(404, "NOT_FOUND", `no run '${id.slice(0, 100)}'`, {});
    }
    // HEAD (which the GET route answers too) gets the headers only: a stream made for it would never be read or cancelled.
    if (c.req.method === "HEAD") return new Response(null, { headers: SSE_HEADERS });
    return new Response(runEventStream(run!, { heartbeatMs, signal: c.req.raw.signal, endIfIdle: true, replayAfter }), {
      headers: SSE_HEADERS,
    });
  });
  const command = runCommands(deps);
  /** An operation on a run: applied here when this daemon has the run, else sent to its owner (cluster mode). */
  const operate = async (kind: CommandKind, id: string, body: Record<string, unknown>, c?: Context<DaemonEnv>): Promise<Response> => {
    if (cluster !== null && runs.find(id) === undefined) {
      const outcome = await cluster.forward(kind, id, body);
      if (outcome !== null) return jsonResponse(outcome.body, outcome.status, outcome.headers);
    }
    if (kind === "continue" && c !== undefined) return runResponse(c, runs.get(id), { kind: "continue" }, false);
    const o = await command(kind, id, body);
    return jsonResponse(o.body, o.status, o.headers);
  };
  // Without a cluster, an unknown run is 404 before its body is read (as it always was).
  const known = (id: string) => (cluster === null ? runs.get(id) : undefined);
  app.post("/:id/abort", timed, async (c) => {
    known(c.req.param("id"));
    const f = Fields.of(await c.var.body.json({ allowEmpty: true }), ["reason"]);
    return operate("abort", c.req.param("id"), { reason: f.string("reason", { max: 1000 }) ?? "aborted by a client" });
  });
  app.post("/:id/steer", timed, async (c) => {
    known(c.req.param("id"));
    const f = Fields.of(await c.var.body.json(), ["content"]);
    return operate("steer", c.req.param("id"), { content: f.string("content", { required: true, max: 1 << 20 })! });
  });
  app.post("/:id/follow_up", timed, async (c) => {
    known(c.req.param("id"));
    const f = Fields.of(await c.var.body.json(), ["task"]);
    return operate("follow_up", c.req.param("id"), { task: f.string("task", { required: true, max: 1 << 20 })! });
  });
  // continue and compact take no fields: the body is empty, or `{}`.
  app.post("/:id/continue", async (c) => {
    known(c.req.param("id"));
    Fields.of(await c.var.body.json({ allowEmpty: true }), []);
    return operate("continue", c.req.param("id"), {}, c);
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
    let result: AgentRunResult | null;
    try {
      result = await done.catch(() => null);
    } finally {
      c.req.raw.signal?.removeEventListener("abort", onGone);
    }
    // A compaction's result is the last run's: only a run this operation made can answer its failure.
    const failed = op.kind === "compact" ? null : storeFailureResponse(run, result, headers);
    return failed ?? jsonResponse(runs.view(run), status, headers);
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

/** The status and envelope code of a run that stopped because its records could not be written (docs/durability.md). */
const STORE_STATUS: Readonly<Record<string, [number, ErrorCode]>> = {
  STORE_FULL: [507, "STORE_FULL"],
  STORE_READONLY: [507, "STORE_READONLY"],
  STORE_UNAVAILABLE: [503, "STORE_UNAVAILABLE"],
};

/** Seconds a client waits before trying again after STORE_UNAVAILABLE: about the recorder's retry bound. */
const STORE_RETRY_AFTER_S = "10";

/**
 * The answer to an operation whose run ended `store_failed`: an error
 * envelope (507 full or read-only, 503 with Retry-After unavailable, 500
 * `STORE_FAILED` otherwise) whose details carry the run, its session and its
 * failed result; null for any other result, which is answered as usual.
 */
export function storeFailureResponse(run: ServerRun, result: AgentRunResult | null, headers: Record<string, string>): Response | null {
  if (result === null || result.stop_reason !== "store_failed") return null;
  const code = result.error_code ?? "STORE_FAILED";
  const [status, envelopeCode] = STORE_STATUS[code] ?? [500, "STORE_FAILED"];
  const details: Record<string, unknown> = {
    run_id: run.id,
    session: run.session === null ? null : { session_id: run.session.session_id, branch: run.session.branch },
    result,
  };
  if (envelopeCode === "STORE_FAILED") details.error_code = code;
  const extra: Record<string, string> = envelopeCode === "STORE_UNAVAILABLE" ? { "retry-after": STORE_RETRY_AFTER_S } : {};
  return errorResponse(status, envelopeCode, result.error ?? "the run's records could not be written", details, { ...headers, ...extra });
}
