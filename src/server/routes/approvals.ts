/**
 * `GET /v1/approvals` (the pending ones) and `POST /v1/approvals/{id}`
 * (answer one). Both are control routes: they count against their own
 * reserve, so a full daemon can still be freed.
 *
 * @module
 */
import { Fields } from "../body.ts";
import { HttpError, jsonResponse } from "../errors.ts";
import { deadline } from "../middleware/deadline.ts";
import { subApp, type AppDeps } from "./deps.ts";

/** The approvals sub-app. */
export function approvalRoutes(deps: AppDeps) {
  const { approvals, cluster } = deps;
  return subApp()
    .get("/", async () =>
      // cluster mode: the approvals waiting in the other daemons of the store too (answered here, applied there)
      jsonResponse({ approvals: cluster === null ? approvals.list() : [...approvals.list(), ...(await cluster.remoteApprovals())] }),
    )
    .post("/:id", deadline(deps.deadlines), async (c) => {
      const id = c.req.param("id");
      const f = Fields.of(await c.var.body.json(), ["approved", "reason"]);
      const approved = f.bool("approved");
      if (approved === undefined) f.fail("approved", "is required (true or false)");
      const reason = f.string("reason", { max: 1000 });
      const pending = approvals.get(id);
      if (pending === undefined && cluster !== null) {
        const outcome = await cluster.forward("approval", id, { approved: approved!, ...(reason !== undefined ? { reason } : {}) });
        if (outcome !== null) return jsonResponse(outcome.body, outcome.status, outcome.headers);
      }
      if (
        pending === undefined ||
        !approvals.resolve(id, reason === undefined ? { approved: approved! } : { approved: approved!, reason })
      ) {
        throw new HttpError(404, "NOT_FOUND", `no pending approval '${id.slice(0, 100)}' (answered, timed out, or never existed)`);
      }
      return jsonResponse({ approval_id: id, approved, reason: reason ?? null });
    });
}
