/**
 * The run manager: agent runs created over HTTP.
 *
 * A *run* (`run_…`) is one live agent. `POST /v1/runs` creates it and starts
 * its first task; while it lives, `continue`, `follow_up`, `steer`, `abort`
 * and `compact` act on the same agent and conversation, and every event of
 * every run on it reaches the run's listeners (the SSE streams). A finished
 * run's agent stays for `idleTtlMs` (so `continue` works), then it is shut
 * down; its last status and results stay readable until the run count limit
 * pushes them out.
 *
 * Sessions: with `session`, the agent restores the branch's messages and a
 * `SessionRecorder` journals every run (the recorder is the first sink, so an
 * event reaches a stream only after its record is written). One run at a time
 * may be active on a session branch in this daemon: a second one gets
 * `CONFLICT`, and a live agent whose branch moved on (another run wrote to it)
 * refuses to continue rather than fork the history silently. Across processes
 * the journal's conditional appends and file lock keep records whole.
 *
 * @module
 */
import type { ImageAttachment } from "../providers/images.ts";
import { randomBytes } from "node:crypto";
import * as path from "node:path";
import type { Agent, AgentEvent, AgentRunResult } from "../agent/index.ts";
import type { ModelAdapter } from "../providers/types.ts";
import type { Runtime } from "../runtime/runtime.ts";
import { JsonlSessionStorage } from "../session/jsonl.ts";
import type { JournalStorage } from "../session/journal.ts";
import { SessionRecorder } from "../session/recorder.ts";
import { resumeDecisions } from "../session/approvals.ts";
import type { RunSpec } from "../host/agent.ts";
import { pendingApprovals, SessionError, SessionUnfinishedRunError } from "../session/types.ts";
import type { ApprovalNotice, ApprovalQueue } from "./approvals.ts";
import type { SkillCatalog } from "../skills/catalog.ts";
import { HttpError } from "./errors.ts";
import { daemonModelMessage, loadRunStack, type RunRequest, runSpecOfRequest } from "./run-request.ts";
import { type RunView, ServerRun } from "./server-run.ts";
import { sessionHttpError } from "./session-errors.ts";

// The run's parts, in their own modules, stay importable from here.
export {
  loadRunStack,
  parseResumeRequest,
  parseRunRequest,
  type RunModelSpec,
  type RunRequest,
  runSpecOfRequest,
} from "./run-request.ts";
export { BACKLOG, type RunStreamItem, type RunView, ServerRun } from "./server-run.ts";
export { sessionHttpError } from "./session-errors.ts";

export interface RunManagerOptions {
  runtime: Runtime;
  approvals: ApprovalQueue;
  /** Directory of session journals. */
  sessionsDir: string;
  /** The session store (a PostgreSQL one); without it, JSONL journals in `sessionsDir`. */
  storage?: JournalStorage;
  /** Most runs whose agent is active at once; more get 503. Default 16. */
  maxActiveRuns?: number;
  /** Most runs kept (live or finished); the oldest closed ones are forgotten first. Default 256. */
  maxRuns?: number;
  /** A live agent idle this long is shut down. Default 15 minutes. */
  idleTtlMs?: number;
  /** The environment the OpenAI-compatible adapter reads (CHAT_MODEL, MODEL_URL, MODEL_API_KEY…). Default process.env. */
  env?: Readonly<Record<string, string | undefined>>;
  /** Skills every run's agent can activate (`$name` or `skill:name` in a task). */
  skills?: SkillCatalog;
  /** false: no run reads the root's AGENTS.md into its system prompt (the config's `project_instructions`). */
  projectInstructions?: boolean;
}

/** The daemon's runs. */
export class RunManager {
  readonly #runs = new Map<string, ServerRun>();
  /** Session-branch key → the run holding it while active. */
  readonly #leases = new Map<string, ServerRun>();
  readonly #opts: Required<Omit<RunManagerOptions, "env" | "skills" | "storage" | "projectInstructions">> & {
    projectInstructions: boolean;
    env: Readonly<Record<string, string | undefined>>;
    skills: SkillCatalog | undefined;
    storage: JournalStorage | undefined;
  };
  readonly #timer: ReturnType<typeof setInterval>;
  #shuttingDown = false;

  constructor(options: RunManagerOptions) {
    this.#opts = {
      runtime: options.runtime,
      approvals: options.approvals,
      sessionsDir: options.sessionsDir,
      storage: options.storage,
      maxActiveRuns: options.maxActiveRuns ?? 16,
      maxRuns: options.maxRuns ?? 256,
      idleTtlMs: options.idleTtlMs ?? 15 * 60_000,
      env: options.env ?? process.env,
      skills: options.skills,
      projectInstructions: options.projectInstructions !== false,
    };
    for (const k of ["maxActiveRuns", "maxRuns", "idleTtlMs"] as const) {
      if (!(Number.isSafeInteger(this.#opts[k]) && this.#opts[k] > 0)) throw new RangeError(`${k} must be a positive integer`);
    }
    options.approvals.subscribe((n) => this.#routeApproval(n));
    this.#timer = setInterval(() => void this.#sweep(), Math.min(60_000, Math.max(1000, this.#opts.idleTtlMs / 4)));
    (this.#timer as { unref?: () => void }).unref?.();
  }

  get(id: string): ServerRun {
    const r = this.#runs.get(id);
    if (r === undefined) throw new HttpError(404, "NOT_FOUND", `no run '${id.slice(0, 100)}'`, {});
    return r;
  }

  /** The run `id` of this daemon, or undefined. */
  find(id: string): ServerRun | undefined {
    return this.#runs.get(id);
  }

  list(): ServerRun[] {
    return [...this.#runs.values()];
  }

  /** Runs whose agent is active now. */
  activeCount(): number {
    let n = 0;
    for (const r of this.#runs.values()) if (r.status === "running") n++;
    return n;
  }

  view(r: ServerRun): RunView {
    const reason = r.closed ? "agent_shutting_down" : r.agent.continueRejectionReason;
    return {
      run_id: r.id,
      status: r.status,
      agent_id: r.agent.agentId,
      agent_status: r.agent.status,
      detached: r.detached,
      session: r.session === null ? null : { session_id: r.session.session_id, branch: r.session.branch },
      created_at: r.createdAt.toISOString(),
      result: r.results.at(-1)?.result ?? null,
      results: r.results,
      can_continue: reason === null,
      continue_rejection_reason: reason,
      pending_approvals: this.#opts.approvals.list().filter((a) => a.run_id !== null && r.agentRunIds.has(a.run_id)).length,
      tools: r.tools,
      policy: r.policy,
    };
  }

  #overloaded(message: string, limit: string): HttpError {
    return new HttpError(503, "OVERLOADED", message, { limit }, { "retry-after": "1" });
  }

  async #makeModel(spec: RunSpec): Promise<ModelAdapter> {
    const { makeModel, ModelSpecError } = await loadRunStack();
    try {
      // The operator's key goes only to the operator's endpoint: a URL chosen by
      // the request gets no MODEL_API_KEY (unless it is the configured MODEL_URL).
      return await makeModel(spec.model ?? {}, { env: this.#opts.env, keyOnlyToConfiguredUrl: true });
    } catch (e) {
      if (!(e instanceof ModelSpecError)) throw e;
      if (e.part === "script") throw new HttpError(400, "INVALID_REQUEST", `/script: ${e.message}`, { location: "/script" });
      throw new HttpError(400, "INVALID_REQUEST", `/model: ${daemonModelMessage(e.config, e.message, e.keyWithheld)}`, {
        location: "/model",
      });
    }
  }

  #leaseKey(s: { session_id: string; branch: string }): string {
    return `${s.session_id}\u0000${s.branch}`;
  }

  /** The run of this daemon working on a session branch right now, or null. */
  runningOn(sessionId: string, branch: string): ServerRun | null {
    const holder = this.#leases.get(this.#leaseKey({ session_id: sessionId, branch }));
    return holder !== undefined && holder.status === "running" ? holder : null;
  }

  /** Refuse (400, naming them) tool names of `req.tools` the daemon does not register. */
  checkTools(req: RunRequest): void {
    if (req.tools === undefined) return;
    const registry = this.#opts.runtime.registry;
    const unknown = req.tools.filter((t) => !registry.has(t));
    if (unknown.length === 0) return;
    const known = registry.list().map((t) => t.name);
    throw new HttpError(
      400,
      "INVALID_REQUEST",
      `/tools: ${unknown.length === 1 ? "no tool named" : "no tools named"} ${unknown.map((t) => JSON.stringify(t.slice(0, 100))).join(", ")}; this daemon registers ${known.length > 0 ? known.join(", ") : "(none)"} (GET /v1/tools)`,
      { location: "/tools", unknown: unknown.map((t) => t.slice(0, 100)) },
    );
  }

  /**
   * Create a run's agent (restoring its session). Does not start it. `runId`:
   * the id to give it (a cluster run claimed from the queue keeps the id it
   * was created with); default a new one. `prepare`: a write the request
   * needs on its session (a resume's recovery of a crashed run), made only
   * once every refusal that does not depend on it was decided (the model,
   * the tools, the limits, the branch lease), just before the session is read.
   */
  async create(req: RunRequest, runId?: string, prepare?: () => Promise<void>): Promise<ServerRun> {
    if (this.#shuttingDown) throw this.#overloaded("the daemon is shutting down", "shutdown");
    if (this.activeCount() >= this.#opts.maxActiveRuns)
      throw this.#overloaded(`too many active runs (${this.#opts.maxActiveRuns})`, "max_active_runs");
    if (this.#runs.size >= this.#opts.maxRuns) this.#forgetOldest();
    if (this.#runs.size >= this.#opts.maxRuns) throw this.#overloaded(`too many live runs (${this.#opts.maxRuns})`, "max_runs");
    this.checkTools(req);
    const spec = runSpecOfRequest(req);
    if (!this.#opts.projectInstructions) spec.projectInstructions = false;
    const model = await this.#makeModel(spec);
    const id = runId ?? newRunId();
    let session: ServerRun["session"] = null;
    let checkout = null;
    if (req.session !== undefined) {
      const branch = req.branch ?? "main";
      const key = this.#leaseKey({ session_id: req.session, branch });
      const holder = this.#leases.get(key);
      if (holder !== undefined && holder.status === "running") {
        throw new HttpError(409, "CONFLICT", `session '${req.session}' branch '${branch}' is in use by run ${holder.id}`, {
          reason: "session_busy",
          run_id: holder.id,
        });
      }
      const storage = this.#opts.storage ?? new JsonlSessionStorage(this.#opts.sessionsDir);
      try {
        await prepare?.();
        checkout = await storage.checkout(req.session, branch);
      } catch (e) {
        throw sessionHttpError(e) ?? e;
      }
      if (checkout === null && branch !== "main")
        throw new HttpError(404, "NOT_FOUND", `session '${req.session}' has no branch '${branch}'`, {});
      session = { session_id: req.session, branch, storage, recorder: new SessionRecorder(req.session, storage, branch) };
    }
    let run!: ServerRun;
    const broadcast = (event: AgentEvent) => {
      run.lastActivity = Date.now();
      if (event.kind === "agent_started" || event.kind === "agent_continued") run.agentRunIds.add(event.run_id);
      if (event.kind === "agent_finished") run.results.push({ agent_run_id: event.run_id, result: event.result });
      run.emit({ type: "agent", event });
    };
    let agent: Agent;
    try {
      ({ agent } = await (await loadRunStack()).buildAgent(spec, this.#opts.runtime, {
        model,
        skills: this.#opts.skills ?? null,
        approver: this.#opts.approvals.approver,
        ...(session !== null ? { storage: session.storage, recordSink: session.recorder } : {}),
        checkout,
        // The recorder first: an event reaches a stream only after its record is written.
        sinks: [broadcast],
        agentId: session === null ? `agent-${id.slice(4, 16)}` : "agentcore-daemon",
      }));
    } catch (e) {
      if (e instanceof SessionError) {
        // An unfinished run whose process lives (a CLI agent on the same journal) is in use, not crashed.
        if (e instanceof SessionUnfinishedRunError && session !== null) {
          for (const runId of e.runIds) {
            const pid = await session.storage.runOwner(req.session!, runId).catch(() => null);
            if (pid !== null)
              throw new HttpError(
                409,
                "CONFLICT",
                `session '${req.session}' branch '${session.branch}' is in use: run ${runId} is still going in process ${pid}`,
                { reason: "session_busy", run_id: runId, pid },
              );
          }
        }
        throw sessionHttpError(e) ?? e;
      }
      throw new HttpError(400, "INVALID_REQUEST", (e as Error).message, { location: req.compaction !== undefined ? "/compaction" : "" });
    }
    run = new ServerRun(id, agent, req.detached, session);
    run.compaction = req.compaction !== undefined;
    run.tools = req.tools ?? null;
    run.policy = req.policy ?? "daemon";
    this.#runs.set(id, run);
    return run;
  }

  /**
   * Start an operation on a run (`task`, `continue` or `compact`). Throws an
   * {@link HttpError} (before anything starts) when the run cannot take it.
   * The returned `done` resolves when the agent is idle again, with the last
   * result; the session lease is held meanwhile. Subscribe listeners before
   * calling this: the first events may follow at once.
   */
  async begin(
    run: ServerRun,
    op:
      | { kind: "task"; task: string; outputSchema?: Record<string, unknown>; images?: ImageAttachment[] }
      | { kind: "continue" }
      | { kind: "compact" }
      | { kind: "resume" },
  ): Promise<{ done: Promise<AgentRunResult | null> }> {
    if (run.closed) throw new HttpError(409, "CONFLICT", `run ${run.id} is closed`, { reason: "closed" });
    if (this.#shuttingDown) throw this.#overloaded("the daemon is shutting down", "shutdown");
    if (op.kind !== "task") {
      if (run.status === "running") throw new HttpError(409, "CONFLICT", `run ${run.id} is active`, { reason: "agent_active" });
      if (this.activeCount() >= this.#opts.maxActiveRuns)
        throw this.#overloaded(`too many active runs (${this.#opts.maxActiveRuns})`, "max_active_runs");
    }
    if (op.kind === "compact" && !run.compaction) {
      throw new HttpError(409, "CONFLICT", `run ${run.id} was created without compaction settings`, {
        reason: "compaction_not_configured",
      });
    }
    if (op.kind === "continue") {
      const reason = run.agent.continueRejectionReason;
      if (reason !== null) throw new HttpError(409, "CONFLICT", `cannot continue run ${run.id}: ${reason}`, { reason });
    }
    let decisions: ReturnType<typeof resumeDecisions> | null = null;
    if (op.kind === "resume") {
      const s = run.session;
      if (s === null) throw new HttpError(409, "CONFLICT", `run ${run.id} has no session to resume`, { reason: "no_session" });
      const reason = run.agent.resumeRejectionReason;
      if (reason !== null)
        throw new HttpError(409, "CONFLICT", `session '${s.session_id}' branch '${s.branch}' has no suspended run to resume (${reason})`, {
          reason,
        });
      const c = await s.storage.checkout(s.session_id, s.branch).catch((e) => {
        throw sessionHttpError(e) ?? e;
      });
      const pending = c === null ? [] : pendingApprovals(c.session);
      if (pending.length > 0) {
        throw new HttpError(
          409,
          "CONFLICT",
          `session '${s.session_id}' branch '${s.branch}' cannot resume yet: approval(s) wait for an answer: ${pending.map((a) => `${a.tool_call_id} (${a.tool})`).join(", ")}`,
          { reason: "approvals_pending", pending: pending.map((a) => a.tool_call_id) },
        );
      }
      decisions = resumeDecisions(c!.session);
    }
    if (run.session !== null) {
      const key = this.#leaseKey(run.session);
      const holder = this.#leases.get(key);
      if (holder !== undefined && holder !== run && holder.status === "running") {
        throw new HttpError(
          409,
          "CONFLICT",
          `session '${run.session.session_id}' branch '${run.session.branch}' is in use by run ${holder.id}`,
          { reason: "session_busy", run_id: holder.id },
        );
      }
      if (op.kind !== "task") await this.#checkBranchUnmoved(run);
      // Across processes: a CLI agent or chat (or another daemon) on the branch refuses this one up front.
      if (run.claim === null) {
        try {
          run.claim = await run.session.storage.claimBranch(run.session.session_id, run.session.branch, `agentcore serve, run ${run.id}`);
        } catch (e) {
          throw sessionHttpError(e) ?? e;
        }
      }
      this.#leases.set(key, run);
    }
    run.busy++;
    run.lastActivity = Date.now();
    const work =
      op.kind === "task"
        ? run.agent.run(op.task, {
            ...(op.outputSchema !== undefined ? { outputSchema: op.outputSchema } : {}),
            ...(op.images !== undefined ? { images: op.images } : {}),
          })
        : op.kind === "continue"
          ? run.agent.continueRun()
          : op.kind === "resume"
            ? run.agent.resumeRun(decisions!)
            : run.agent.compact().then(() => run.agent.lastResult);
    const done = work.finally(async () => {
      await run.agent.waitForIdle();
      run.busy--;
      run.lastActivity = Date.now();
      if (run.busy === 0) {
        run.claim?.release();
        run.claim = null;
        run.emit({ type: "idle", status: run.status, result: run.agent.lastResult });
      }
    });
    done.catch(() => {}); // the caller may not wait (detached runs)
    return { done };
  }

  /** Refuse to continue a session run whose branch was written by someone else since. */
  async #checkBranchUnmoved(run: ServerRun): Promise<void> {
    const s = run.session!;
    const head = await s.storage.head(s.session_id, s.branch);
    const mine = s.recorder.lastRecord;
    if (mine !== null && head !== null && head.record_id !== mine.record_id) {
      throw new HttpError(
        409,
        "CONFLICT",
        `session '${s.session_id}' branch '${s.branch}' has moved on since this run; create a new run to resume it`,
        { reason: "session_moved" },
      );
    }
  }

  #routeApproval(n: ApprovalNotice): void {
    const runId = n.approval.run_id;
    if (runId === null) return;
    for (const r of this.#runs.values()) {
      if (r.agentRunIds.has(runId) && r.agent.agentId === n.approval.agent_id) {
        r.emit({ type: "approval", notice: n });
        return;
      }
    }
  }

  /** Shut down agents idle past the TTL. */
  async #sweep(): Promise<void> {
    const now = Date.now();
    for (const r of this.#runs.values()) {
      if (!r.closed && r.status === "idle" && r.listeners.size === 0 && now - r.lastActivity > this.#opts.idleTtlMs) await this.#close(r);
    }
  }

  #forgetOldest(): void {
    for (const r of this.#runs.values()) {
      if (r.closed) {
        this.#runs.delete(r.id);
        return;
      }
    }
    for (const r of this.#runs.values()) {
      if (r.status === "idle" && r.listeners.size === 0) {
        void this.#close(r);
        this.#runs.delete(r.id);
        return;
      }
    }
  }

  /** Drop a run that never started (its operation was refused). */
  async discard(r: ServerRun): Promise<void> {
    this.#runs.delete(r.id);
    await this.#close(r);
  }

  async #close(r: ServerRun): Promise<void> {
    if (r.closed) return;
    r.closed = true;
    // a closed run holds its session branch no more (nor the memory of its agent through the lease table)
    if (r.session !== null && this.#leases.get(this.#leaseKey(r.session)) === r) this.#leases.delete(this.#leaseKey(r.session));
    await r.agent.shutdown();
    r.emit({ type: "idle", status: "closed", result: r.agent.lastResult });
    r.listeners.clear();
  }

  /** Abort every active run now (a second SIGINT/SIGTERM during a `finish` shutdown). */
  abortAll(reason: string): number {
    let n = 0;
    for (const r of this.#runs.values()) if (r.agent.abort(reason)) n++;
    return n;
  }

  /**
   * Shutdown: refuse new runs; in `abort` mode abort every active run at
   * once; in `finish` mode give them `graceMs`, then abort the rest. Resolves
   * when every agent is idle and shut down (so every journal record is
   * written).
   */
  async shutdown(mode: "abort" | "finish", graceMs: number): Promise<void> {
    this.#shuttingDown = true;
    clearInterval(this.#timer);
    const runs = [...this.#runs.values()];
    const abortAll = (reason: string) => {
      for (const r of runs) r.agent.abort(reason);
    };
    if (mode === "abort") abortAll("the daemon is shutting down");
    else {
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        Promise.all(runs.map((r) => r.agent.waitForIdle())),
        new Promise<void>((res) => {
          timer = setTimeout(res, graceMs);
        }),
      ]);
      clearTimeout(timer);
      abortAll(`the daemon is shutting down (runs not finished within ${graceMs} ms)`);
    }
    this.#opts.approvals.close();
    await Promise.all(runs.map((r) => this.#close(r)));
  }
}

/** A new run id: `run_` and 24 hex digits. */
export function newRunId(): string {
  return `run_${randomBytes(12).toString("hex")}`;
}

/** The default sessions directory of the daemon: `<root>/.agentcore/sessions` (as for the CLI). */
export function defaultDaemonSessionsDir(root: string): string {
  return path.join(root, ".agentcore", "sessions");
}
