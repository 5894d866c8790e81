/**
 * The daemon's approval queue: a {@link ToolApprover} that parks each
 * `require_approval` call as a pending approval until a client answers it
 * over HTTP (`POST /v1/approvals/{id}`), the approval times out (deny), the
 * call is aborted (deny), or the daemon shuts down (deny).
 *
 * Pending approvals are listed at `GET /v1/approvals` and announced to
 * listeners (the run manager turns them into `approval_requested` /
 * `approval_resolved` events on the run's stream). The arguments shown are a
 * redacted preview (secret-looking keys replaced, long strings clipped); the
 * tool itself still receives the real arguments.
 *
 * @module
 */
import { randomBytes } from "node:crypto";
import { redactArguments, type ToolApprovalDecision, type ToolApprovalRequest, type ToolApprover } from "../runtime/middleware/approval.ts";

/** Default time a pending approval waits for an answer before it is denied. */
export const DEFAULT_APPROVAL_TIMEOUT_MS = 5 * 60_000;

/** A pending approval as clients see it (snake_case, as on the wire). */
export interface PendingApproval {
  approval_id: string;
  tool: string;
  effect: string;
  /** A redacted preview of the arguments. */
  arguments: unknown;
  tool_call_id: string | null;
  reason: string | null;
  rule_id: string | null;
  /** The agent run that asked, when the call came from the agent loop. */
  agent_id: string | null;
  run_id: string | null;
  turn: number | null;
  created_at: string;
  expires_at: string;
}

/** How an approval ended. */
export interface ApprovalOutcome {
  approval_id: string;
  approved: boolean;
  reason: string | null;
  /** Who decided: `client`, `timeout`, `aborted` or `shutdown`. */
  by: "client" | "timeout" | "aborted" | "shutdown";
}

/** Announcements to listeners. */
export type ApprovalNotice =
  | { kind: "approval_requested"; approval: PendingApproval }
  | { kind: "approval_resolved"; approval: PendingApproval; outcome: ApprovalOutcome };

export interface ApprovalQueueOptions {
  /** Deny after this many ms without an answer. Default 5 minutes. */
  timeoutMs?: number;
  /** Most approvals pending at once; more are denied at once. Default 1024. */
  maxPending?: number;
}

interface Entry {
  view: PendingApproval;
  finish(outcome: ApprovalOutcome): void;
}

/** The queue; create one per daemon and pass {@link ApprovalQueue.approver} to the policy middleware. */
export class ApprovalQueue {
  readonly timeoutMs: number;
  readonly maxPending: number;
  readonly #pending = new Map<string, Entry>();
  readonly #listeners = new Set<(n: ApprovalNotice) => void>();
  #closed = false;

  constructor(options: ApprovalQueueOptions = {}) {
    this.timeoutMs = options.timeoutMs ?? DEFAULT_APPROVAL_TIMEOUT_MS;
    if (!(Number.isFinite(this.timeoutMs) && this.timeoutMs > 0)) throw new RangeError("approval timeoutMs must be a positive number");
    this.maxPending = options.maxPending ?? 1024;
    if (!(Number.isSafeInteger(this.maxPending) && this.maxPending > 0))
      throw new RangeError("approval maxPending must be a positive integer");
  }

  /** Listen to requests and resolutions; returns the unsubscribe function. A throwing listener is ignored. */
  subscribe(listener: (n: ApprovalNotice) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #notify(n: ApprovalNotice): void {
    for (const l of [...this.#listeners]) {
      try {
        l(n);
      } catch {
        // a listener's failure never affects the decision
      }
    }
  }

  /** The pending approvals, oldest first. */
  list(): PendingApproval[] {
    return [...this.#pending.values()].map((e) => e.view);
  }

  get(id: string): PendingApproval | undefined {
    return this.#pending.get(id)?.view;
  }

  /** Answer a pending approval; false when there is no such (still pending) approval. */
  resolve(id: string, decision: ToolApprovalDecision): boolean {
    const e = this.#pending.get(id);
    if (e === undefined) return false;
    e.finish({ approval_id: id, approved: decision.approved === true, reason: decision.reason ?? null, by: "client" });
    return true;
  }

  /** Deny everything pending and every later request (daemon shutdown). */
  close(reason = "the daemon is shutting down"): void {
    this.#closed = true;
    for (const [id, e] of [...this.#pending]) e.finish({ approval_id: id, approved: false, reason, by: "shutdown" });
  }

  /** The approver to give the policy middleware. */
  readonly approver: ToolApprover = (request: ToolApprovalRequest, signal: AbortSignal): Promise<ToolApprovalDecision> => {
    if (this.#closed) return Promise.resolve({ approved: false, reason: "the daemon is shutting down" });
    if (signal.aborted) return Promise.resolve({ approved: false, reason: "approval interrupted" });
    if (this.#pending.size >= this.maxPending)
      return Promise.resolve({ approved: false, reason: `too many pending approvals (${this.maxPending})` });
    const id = `apr_${randomBytes(12).toString("hex")}`;
    const now = Date.now();
    let preview: unknown;
    try {
      preview = redactArguments(request.arguments);
    } catch {
      preview = "(arguments cannot be shown)";
    }
    const view: PendingApproval = Object.freeze({
      approval_id: id,
      tool: request.tool,
      effect: request.effect,
      arguments: preview,
      tool_call_id: request.toolCallId,
      reason: request.reason,
      rule_id: request.ruleId,
      agent_id: request.run?.agentId ?? null,
      run_id: request.run?.runId ?? null,
      turn: request.run?.turn ?? null,
      created_at: new Date(now).toISOString(),
      expires_at: new Date(now + this.timeoutMs).toISOString(),
    });
    return new Promise<ToolApprovalDecision>((resolve) => {
      let done = false;
      const finish = (outcome: ApprovalOutcome) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        signal.removeEventListener("abort", onAbort);
        this.#pending.delete(id);
        resolve(outcome.reason === null ? { approved: outcome.approved } : { approved: outcome.approved, reason: outcome.reason });
        this.#notify({ kind: "approval_resolved", approval: view, outcome });
      };
      const onAbort = () =>
        finish({ approval_id: id, approved: false, reason: "approval interrupted: the call was aborted", by: "aborted" });
      const timer = setTimeout(
        () => finish({ approval_id: id, approved: false, reason: `no answer within ${this.timeoutMs} ms`, by: "timeout" }),
        this.timeoutMs,
      );
      signal.addEventListener("abort", onAbort, { once: true });
      this.#pending.set(id, { view, finish });
      this.#notify({ kind: "approval_requested", approval: view });
    });
  };
}
