/**
 * `/v1/sessions`: list sessions, show one (a branch's checkout) or its
 * record tree, and fork, roll back, retry or recover one. Every route runs
 * under the request deadline.
 *
 * @module
 */
import type { JournalStorage } from "../../session/journal.ts";
import { pendingApprovals, sessionMessages, unfinishedRuns } from "../../session/types.ts";
import { decideApproval, liveRunOwner, type ResumeRefusal, resumeRefusal, SessionApprovalError } from "../../session/approvals.ts";
import { loadRunStack, parseResumeRequest, type RunManager } from "../runs.ts";
import { runCommands, runResponder } from "./runs.ts";
import { Fields } from "../body.ts";
import { HttpError, jsonResponse } from "../errors.ts";
import { deadline } from "../middleware/deadline.ts";
import { subApp, type AppDeps } from "./deps.ts";

/** The sessions sub-app. */
export function sessionRoutes(deps: AppDeps) {
  const { storage, runs } = deps;
  const app = subApp();
  const respond = runResponder(deps);
  const timed = deadline(deps.deadlines);
  app.get("/", timed, async () => {
    const s = storage();
    const rows = [];
    for (const id of await s.listSessions()) {
      const branches = await s.listBranches(id);
      const records = await s.records(id);
      const main = await s.load(id);
      rows.push({ session_id: id, records: records.length, branches: branches.map((b) => b.branch_id), runs: main?.runs.length ?? 0 });
    }
    return jsonResponse({ sessions: rows });
  });
  app.get("/:id", timed, async (c) => {
    const id = c.req.param("id");
    const branch = c.req.query("branch") ?? "main";
    const checkout = await storage().checkout(id, branch);
    if (checkout === null) throw new HttpError(404, "NOT_FOUND", `no session '${id.slice(0, 100)}' with branch '${branch.slice(0, 100)}'`);
    return jsonResponse({
      session_id: id,
      branch: checkout.branch,
      head: checkout.head,
      session: checkout.session,
      messages: sessionMessages(checkout.session),
    });
  });
  app.get("/:id/tree", timed, async (c) => {
    const id = c.req.param("id");
    const s = storage();
    const records = await s.records(id);
    if (records.length === 0) throw new HttpError(404, "NOT_FOUND", `no session '${id.slice(0, 100)}'`);
    return jsonResponse({ session_id: id, branches: await s.listBranches(id), records });
  });
  /** A session's storage, or 404 when it has no journal (as for the GET routes). */
  const existing = async (id: string): Promise<JournalStorage> => {
    const s = storage();
    if ((await s.records(id)).length === 0) throw new HttpError(404, "NOT_FOUND", `no session '${id.slice(0, 100)}'`);
    return s;
  };
  app.post("/:id/fork", timed, async (c) => {
    const f = Fields.of(await c.var.body.json({ allowEmpty: true }), ["from", "name"]);
    const checkout = await (await existing(c.req.param("id"))).fork(c.req.param("id"), {
      fromRecordId: f.string("from", { max: 200 }),
      branchId: f.string("name", { max: 200 }),
    });
    return jsonResponse({ branch: checkout.branch, head: checkout.head, messages: sessionMessages(checkout.session).length }, 201);
  });
  app.post("/:id/rollback", timed, async (c) => {
    const f = Fields.of(await c.var.body.json(), ["to", "name"]);
    const to = f.string("to", { required: true, max: 200 })!;
    const checkout = await (await existing(c.req.param("id"))).rollback(c.req.param("id"), to, {
      branchId: f.string("name", { max: 200 }),
    });
    return jsonResponse({ branch: checkout.branch, head: checkout.head, messages: sessionMessages(checkout.session).length }, 201);
  });
  app.post("/:id/retry", timed, async (c) => {
    const f = Fields.of(await c.var.body.json(), ["run", "name"]);
    const runId = f.string("run", { required: true, max: 200 })!;
    const r = await (await existing(c.req.param("id"))).prepareRetry(c.req.param("id"), runId, {
      branchId: f.string("name", { max: 200 }),
    });
    return jsonResponse(
      {
        branch: r.checkout.branch,
        head: r.checkout.head,
        task: r.task,
        retried_run_id: r.retried_run_id,
        messages: sessionMessages(r.checkout.session).length,
      },
      201,
    );
  });
  app.post("/:id/recover", timed, async (c) => {
    const f = Fields.of(await c.var.body.json({ allowEmpty: true }), ["branch", "force"]);
    const id = c.req.param("id");
    const branch = f.string("branch", { max: 200 }) ?? "main";
    const force = f.bool("force") === true;
    const s = await existing(id);
    // A run of this daemon on the branch is alive, not interrupted: never close it from under it.
    refuseLiveRun(runs, id, branch);
    // A run of another process (its live-run mark names a live pid): SessionRunActiveError, 409, unless forced.
    return jsonResponse(await s.recoverRuns(id, { branch, force, reason: "recovered through the daemon" }));
  });
  app.get("/:id/approvals", timed, async (c) => {
    const id = c.req.param("id");
    const branch = c.req.query("branch") ?? "main";
    const checkout = await storage().checkout(id, branch);
    if (checkout === null) throw new HttpError(404, "NOT_FOUND", `no session '${id.slice(0, 100)}' with branch '${branch.slice(0, 100)}'`);
    return jsonResponse({ session_id: id, branch_id: branch, pending: pendingApprovals(checkout.session) });
  });
  // Answer an approval a suspended run waits for: journaled as approval_decided (what --resume and /resume act on).
  app.post("/:id/approvals/:call", timed, async (c) => {
    const id = c.req.param("id");
    const call = c.req.param("call");
    const f = Fields.of(await c.var.body.json(), ["approved", "reason", "branch"]);
    const approved = f.bool("approved");
    if (approved === undefined) f.fail("approved", "is required: true to approve, false to deny");
    const reason = f.string("reason", { max: 4000 });
    const branch = f.string("branch", { max: 200 }) ?? "main";
    const s = await existing(id);
    try {
      const { record, approval } = await decideApproval(s, id, call, {
        branch,
        approved: approved!,
        reason: reason ?? null,
        decidedBy: "http",
      });
      const left = pendingApprovals((await s.checkout(id, branch))!.session);
      return jsonResponse({
        session_id: id,
        branch_id: branch,
        tool_call_id: call,
        tool: approval.tool,
        approved,
        reason: reason ?? null,
        record_id: record.record_id,
        pending: left.map((a) => a.tool_call_id),
      });
    } catch (e) {
      if (!(e instanceof SessionApprovalError)) throw e;
      // cluster mode: a live run's approval waits in the queue of the daemon that runs it; answered there
      const live = e.problem === "run_active" && deps.cluster !== null ? await deps.cluster.liveApproval(id, branch, call) : null;
      if (live !== null) {
        const body = { approved: approved!, ...(reason !== undefined ? { reason } : {}) };
        const outcome =
          (await deps.cluster!.forward("approval", live.approval_id, body)) ??
          (await runCommands(deps)("approval", null, { ...body, key: live.approval_id }));
        if (outcome.status !== 200) return jsonResponse(outcome.body, outcome.status, outcome.headers);
        return jsonResponse({
          session_id: id,
          branch_id: branch,
          tool_call_id: call,
          approval_id: live.approval_id,
          approved,
          reason: reason ?? null,
          record_id: null,
          live: true,
        });
      }
      if (e.problem === "run_active")
        throw new HttpError(409, "CONFLICT", e.message, { reason: "session_unfinished_run", pending: [...e.pending] });
      const answered = /answered already/.test(e.message);
      throw answered
        ? new HttpError(409, "CONFLICT", e.message, { reason: "approval_answered", pending: [...e.pending] })
        : new HttpError(404, "NOT_FOUND", e.message, { reason: "approval_not_found", pending: [...e.pending] });
    }
  });
  // Go on with a suspended run: a new daemon run (like POST /v1/runs, followable at /v1/runs/{id}/events).
  app.post("/:id/resume", async (c) => {
    const id = c.req.param("id");
    const body = await c.var.body.json({ allowEmpty: true });
    await loadRunStack();
    const req = parseResumeRequest(body, id);
    const branch = req.branch ?? "main";
    const s = await existing(id);
    refuseLiveRun(runs, id, branch);
    const c0 = await s.checkout(id, branch);
    if (c0 === null) throw new HttpError(404, "NOT_FOUND", `no session '${id.slice(0, 100)}' with branch '${branch.slice(0, 100)}'`);
    // A daemon (or CLI) that died mid-run left a run open: the crash rules close it, with this daemon's tool
    // effects, but only for a resume that is accepted. Every refusal is decided on the branch as the recovery
    // would leave it, before anything is written (docs/durable-runs.md#crashes-what-recovery-does-now).
    const open = unfinishedRuns(c0.session);
    const live = await liveRunOwner(s, id, branch, open);
    if (live !== null)
      throw new HttpError(
        409,
        "CONFLICT",
        `session '${id.slice(0, 100)}' branch '${branch.slice(0, 100)}' is in use: run ${live.run_id} is still going in process ${live.pid}`,
        { reason: "session_busy", ...live },
      );
    const toolEffect = (name: string) => deps.runtime.registry.get(name)?.effect;
    const refusal = resumeRefusal(c0.session, toolEffect);
    if (refusal !== null) throw resumeRefused(id, branch, refusal);
    const recover =
      open.length === 0
        ? undefined
        : async () => {
            await s.recoverRuns(id, { branch, reason: "recovered by POST /v1/sessions/{id}/resume", toolEffect });
          };
    const run = await runs.create(req, undefined, recover);
    try {
      return await respond(c, run, { kind: "resume" }, true);
    } catch (e) {
      if (run.status !== "running") await runs.discard(run);
      throw e;
    }
  });
  return app;
}

/** The 409 of a resume refused by {@link resumeRefusal} (the same reasons and details as a refusal of the run itself). */
function resumeRefused(id: string, branch: string, r: ResumeRefusal): HttpError {
  const where = `session '${id.slice(0, 100)}' branch '${branch.slice(0, 100)}'`;
  const open = r.recovering.map((x) => x.run_id);
  const recover = `POST /v1/sessions/${encodeURIComponent(id)}/recover`;
  const crashed = open.length === 0 ? {} : { run_ids: open, recover };
  const leftOpen = `its run ${open.join(", ")} was left unfinished by a process that ended`;
  if (r.reason === "approvals_pending")
    return new HttpError(
      409,
      "CONFLICT",
      `${where} cannot resume yet: approval(s) wait for an answer: ${r.pending.map((a) => `${a.tool_call_id} (${a.tool})`).join(", ")}` +
        (open.length === 0 ? "" : `; ${leftOpen}: close it with ${recover} (it closes suspended), then answer`),
      { reason: r.reason, pending: r.pending.map((a) => a.tool_call_id), ...crashed },
    );
  const note =
    open.length === 0
      ? ""
      : `; ${leftOpen}, and would close ${r.last?.status ?? "cancelled"} (nothing to resume): close it with ${recover}, then start a new run`;
  return new HttpError(409, "CONFLICT", `${where} has no suspended run to resume (${r.reason})${note}`, { reason: r.reason, ...crashed });
}

/** A run of this daemon on the branch is alive, not interrupted: 409, never close or resume it from under it. */
function refuseLiveRun(runs: RunManager, id: string, branch: string): void {
  const live = runs.runningOn(id, branch);
  if (live !== null)
    throw new HttpError(409, "CONFLICT", `session '${id.slice(0, 100)}' branch '${branch.slice(0, 100)}' is in use by run ${live.id}`, {
      reason: "session_busy",
      run_id: live.id,
    });
}
