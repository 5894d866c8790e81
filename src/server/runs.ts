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
import { SessionBlobError } from "../session/blobs.ts";
import type { ImageAttachment } from "../providers/images.ts";
import { parseRunImages } from "./images.ts";
import { randomBytes } from "node:crypto";
import * as path from "node:path";
import type { Agent, AgentEvent, AgentRunResult } from "../agent/index.ts";
import type { ModelPresetName } from "../providers/config.ts";
import type { ModelAdapter } from "../providers/types.ts";
import type { Runtime } from "../runtime/runtime.ts";
import { JsonlSessionStorage } from "../session/jsonl.ts";
import type { JournalStorage } from "../session/journal.ts";
import { SessionRecorder } from "../session/recorder.ts";
import { resumeDecisions } from "../session/approvals.ts";
import type { RunSpec } from "../host/agent.ts";
import type * as RunStack from "./run-stack.ts";
import { isPolicyPreset, POLICY_PRESETS, type PolicyPreset } from "../host/policy-presets.ts";
import type { BranchClaim } from "../session/journal.ts";
import {
  pendingApprovals,
  SessionBranchBusyError,
  SessionConflictError,
  SessionError,
  SessionLockTimeoutError,
  SessionNotFoundError,
  SessionRunActiveError,
  SessionUnfinishedRunError,
  SessionValidationError,
} from "../session/types.ts";
import type { ApprovalNotice, ApprovalQueue } from "./approvals.ts";
import type { SkillCatalog } from "../skills/catalog.ts";
import { HttpError } from "./errors.ts";
import { Fields } from "./body.ts";

/** What a run's listeners receive: agent events, approval notices, and the end of an operation. */
export type RunStreamItem =
  | { type: "agent"; event: AgentEvent }
  | { type: "approval"; notice: ApprovalNotice }
  | { type: "idle"; status: RunView["status"]; result: AgentRunResult | null };

/** The model part of a run request. */
export interface RunModelSpec {
  preset?: ModelPresetName;
  model?: string;
  url?: string;
}

/** A parsed and checked `POST /v1/runs` body. */
export interface RunRequest {
  task: string;
  model?: RunModelSpec;
  /** Scripted model turns (see ScriptedModel): no network. */
  script?: unknown[];
  maxSteps?: number;
  maxRunTokens?: number;
  system?: string;
  session?: string;
  branch?: string;
  detached: boolean;
  compaction?: { contextWindow: number; reserveTokens: number; keepRecentTokens: number };
  /** A call that needs an approval is journaled and ends the run `awaiting_approval` instead of waiting in the queue (needs session). */
  suspendOnApproval?: boolean;
  /** `output_schema`: the task's final answer must match this JSON Schema (RunOptions.outputSchema). */
  outputSchema?: Record<string, unknown>;
  /** `images`: the task's images, checked (RunOptions.images; see `src/server/images.ts`). */
  images?: ImageAttachment[];
  /** `tools`: the daemon's tools this run may use (absent: all); checked against the registry by {@link RunManager.checkTools}. */
  tools?: string[];
  /** `policy`: a preset applied after the daemon's policy (`daemon`, the default, adds nothing). */
  policy?: PolicyPreset;
}

/** A run as `GET /v1/runs/{id}` shows it. */
export interface RunView {
  run_id: string;
  /** `running` while a task, continue, follow-up or compaction is active; `idle` between; `closed` once its agent is shut down. */
  status: "running" | "idle" | "closed";
  agent_id: string;
  agent_status: string;
  detached: boolean;
  session: { session_id: string; branch: string } | null;
  created_at: string;
  /** The latest finished agent run's result. */
  result: AgentRunResult | null;
  /** Every finished agent run on this agent, oldest first. */
  results: { agent_run_id: string; result: AgentRunResult }[];
  can_continue: boolean;
  continue_rejection_reason: string | null;
  pending_approvals: number;
  /** The tools the run may use (null: all of the daemon's). */
  tools: string[] | null;
  /** The run's policy preset. */
  policy: PolicyPreset;
}

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

const RUN_KEYS = [
  "task",
  "model",
  "script",
  "max_steps",
  "max_run_tokens",
  "system",
  "session",
  "branch",
  "detached",
  "compaction",
  "suspend_on_approval",
  "output_schema",
  "images",
  "tools",
  "policy",
] as const;

let runStack: typeof RunStack | null = null;

/**
 * Load what runs need (the agent, the model adapters: `run-stack.ts`) once;
 * the run routes await it before {@link parseRunRequest}, so that a daemon
 * loads it on its first run, not at start.
 */
export async function loadRunStack(): Promise<typeof RunStack> {
  return (runStack ??= await import("./run-stack.ts"));
}

function stack(): typeof RunStack {
  if (runStack === null) throw new Error("the run stack is not loaded: await loadRunStack() first");
  return runStack;
}

/** Check a `POST /v1/runs` body; throws 400 naming the field. Needs {@link loadRunStack} to have resolved. */
export function parseRunRequest(body: unknown): RunRequest {
  const { isPresetName, PRESET_NAMES, compileOutputSchema, MAX_CONTEXT_WINDOW, budgetForContextWindow } = stack();
  const f = Fields.of(body, RUN_KEYS);
  const req: RunRequest = { task: f.string("task", { required: true, max: 1 << 20 })!, detached: f.bool("detached") ?? false };
  const m = f.object("model", ["preset", "model", "url"]);
  const script = f.array("script");
  if (m !== undefined && script !== undefined) f.fail("script", "replaces the model: send either model or script");
  if (m !== undefined) {
    const preset = m.string("preset");
    if (preset !== undefined && !isPresetName(preset)) m.fail("preset", `must be one of ${PRESET_NAMES.join(", ")}`);
    const url = m.string("url", { max: 2048 });
    if (url !== undefined && !/^https?:\/\//i.test(url)) m.fail("url", "must be an http(s) URL");
    req.model = { preset: preset as ModelPresetName | undefined, model: m.string("model", { max: 256 }), url };
  }
  if (script !== undefined) req.script = script;
  req.maxSteps = f.int("max_steps", 1, 10_000);
  req.maxRunTokens = f.int("max_run_tokens", 1, Number.MAX_SAFE_INTEGER);
  req.system = f.string("system", { max: 1 << 20 });
  req.session = f.string("session", { max: 200 });
  req.branch = f.string("branch", { max: 200 });
  if (req.branch !== undefined && req.session === undefined) f.fail("branch", "needs session");
  const suspend = f.bool("suspend_on_approval");
  if (suspend === true && req.session === undefined)
    f.fail("suspend_on_approval", "needs session: the approval request is journaled there, and answered there later");
  if (suspend === true) req.suspendOnApproval = true;
  const schema = f.body.output_schema;
  if (schema !== undefined) {
    if (typeof schema !== "object" || schema === null || Array.isArray(schema)) f.fail("output_schema", "must be a JSON Schema object");
    try {
      compileOutputSchema({ outputSchema: schema as Record<string, unknown> });
    } catch (e) {
      f.fail("output_schema", `is not a usable JSON Schema: ${(e as Error).message.replace(/^outputSchema: /, "")}`);
    }
    req.outputSchema = schema as Record<string, unknown>;
  }
  const tools = f.array("tools");
  if (tools !== undefined) {
    if (tools.length > 1000) f.fail("tools", `holds ${tools.length} names; at most 1000`);
    tools.forEach((t, i) => {
      if (typeof t !== "string" || t === "") f.fail(`tools/${i}`, "must be a tool name (a non-empty string; see GET /v1/tools)");
    });
    req.tools = [...new Set(tools as string[])];
  }
  const policy = f.string("policy", { max: 100 });
  if (policy !== undefined && !isPolicyPreset(policy))
    f.fail(
      "policy",
      `must be one of ${POLICY_PRESETS.join(", ")} (a preset only narrows the daemon's policy), got ${JSON.stringify(policy)}`,
    );
  if (policy !== undefined) req.policy = policy as PolicyPreset;
  const images = parseRunImages(f.body.images);
  if (images !== undefined && images.length > 0) req.images = images;
  const rawCompaction = f.body.compaction;
  if (typeof rawCompaction === "number") f.fail("compaction", `must be an object, such as {"context_window": ${rawCompaction}}`);
  const c = f.object("compaction", ["context_window", "reserve_tokens", "keep_recent_tokens"]);
  if (c !== undefined) {
    const w = c.int("context_window", 1, MAX_CONTEXT_WINDOW);
    const r = c.int("reserve_tokens", 0, MAX_CONTEXT_WINDOW);
    const k = c.int("keep_recent_tokens", 1, MAX_CONTEXT_WINDOW);
    if (w === undefined) c.fail("context_window", "is required");
    if (r !== undefined && k !== undefined) req.compaction = { contextWindow: w!, reserveTokens: r, keepRecentTokens: k };
    else {
      // The short form: what is left out comes from the window, by the CLI's
      // --context-window rule (a quarter kept free, every turn but the latest summarised).
      const derived = (() => {
        try {
          return budgetForContextWindow(w!);
        } catch (e) {
          return c.fail(
            "context_window",
            `${(e as Error).message} (reserve_tokens and keep_recent_tokens are derived from it when left out; send all three for a smaller window)`,
          );
        }
      })();
      req.compaction = { contextWindow: w!, reserveTokens: r ?? derived.reserveTokens, keepRecentTokens: k ?? derived.keepRecentTokens };
    }
    const { contextWindow, reserveTokens, keepRecentTokens } = req.compaction;
    if (reserveTokens >= contextWindow)
      c.fail("reserve_tokens", `must be less than context_window (${contextWindow}), got ${reserveTokens}`);
    if (keepRecentTokens > contextWindow - reserveTokens) {
      c.fail(
        "keep_recent_tokens",
        `must be at most context_window - reserve_tokens (${contextWindow - reserveTokens}), got ${keepRecentTokens}`,
      );
    }
  }
  return req;
}

/**
 * The run spec of a request: the daemon's words for what `agent` and `chat`
 * take as flags, so the same settings build the same agent
 * (`buildAgent` in `src/host/agent.ts`). A daemon run registers no plan tool,
 * and compacts only when asked (`POST /v1/runs/{id}/compact`).
 */
export function runSpecOfRequest(req: RunRequest): RunSpec {
  const spec: RunSpec = { plan: false };
  if (req.script !== undefined) spec.model = { script: { turns: req.script } };
  else {
    spec.model = {};
    if (req.model?.preset !== undefined) spec.model.preset = req.model.preset;
    if (req.model?.model !== undefined) spec.model.model = req.model.model;
    if (req.model?.url !== undefined) spec.model.url = req.model.url;
  }
  if (req.system !== undefined) spec.system = req.system;
  if (req.maxSteps !== undefined) spec.maxSteps = req.maxSteps;
  if (req.maxRunTokens !== undefined) spec.maxRunTokens = req.maxRunTokens;
  if (req.compaction !== undefined) spec.compaction = { ...req.compaction, auto: false };
  if (req.session !== undefined) spec.session = { id: req.session, branch: req.branch ?? "main" };
  if (req.suspendOnApproval === true) spec.suspendOnApproval = true;
  if (req.tools !== undefined) spec.tools = req.tools;
  if (req.policy !== undefined) spec.policy = req.policy;
  return spec;
}

/**
 * Check a `POST /v1/sessions/{id}/resume` body: a run request without `task`
 * and `session` (the session is the path's), `branch` included.
 */
export function parseResumeRequest(body: unknown, sessionId: string): RunRequest {
  const b = body === null || body === undefined ? {} : body;
  if (typeof b === "object" && !Array.isArray(b)) {
    for (const k of ["task", "session"]) {
      if (Object.hasOwn(b, k))
        throw new HttpError(400, "INVALID_REQUEST", `${k} is not taken here: resume goes on with the session's suspended run`, {
          location: `/${k}`,
        });
    }
    if (Object.hasOwn(b, "images"))
      throw new HttpError(400, "INVALID_REQUEST", "/images: is not taken by resume: images go with a new task (POST /v1/runs)", {
        location: "/images",
      });
    if (Object.hasOwn(b, "output_schema"))
      throw new HttpError(
        400,
        "INVALID_REQUEST",
        "/output_schema: is not taken by resume: an output schema applies to the run started with it (POST /v1/runs)",
        { location: "/output_schema" },
      );
  }
  return parseRunRequest(typeof b === "object" && !Array.isArray(b) ? { ...b, task: "(resume)", session: sessionId } : b);
}

/** Map a session-layer error to an HTTP refusal. */
export function sessionHttpError(e: unknown): HttpError | null {
  if (e instanceof SessionRunActiveError)
    return new HttpError(409, "CONFLICT", e.message, { reason: "session_busy", run_id: e.runId, pid: e.pid });
  // Another process (a CLI agent or chat, another daemon) holds the branch: refused before the run starts.
  if (e instanceof SessionBranchBusyError) return new HttpError(409, "CONFLICT", e.message, { reason: "session_busy", pid: e.pid });
  if (e instanceof SessionConflictError) return new HttpError(409, "CONFLICT", e.message, { reason: "session_conflict" });
  if (e instanceof SessionLockTimeoutError)
    return new HttpError(503, "OVERLOADED", e.message, { limit: "session_lock" }, { "retry-after": "1" });
  if (e instanceof SessionNotFoundError) return new HttpError(404, "NOT_FOUND", e.message, {});
  // A run a crash left unfinished: POST /v1/sessions/{id}/recover closes it.
  if (e instanceof SessionUnfinishedRunError)
    return new HttpError(409, "CONFLICT", e.message, {
      reason: "session_unfinished_run",
      run_ids: [...e.runIds],
      recover: `POST /v1/sessions/${encodeURIComponent(e.sessionId)}/recover`,
    });
  // An image blob of the session is missing or corrupted: the session cannot be restored as it is.
  if (e instanceof SessionBlobError)
    return new HttpError(409, "CONFLICT", e.message, { reason: "session_blob_invalid", sha256: e.sha256, problem: e.problem });
  if (e instanceof SessionValidationError) return new HttpError(400, "INVALID_REQUEST", e.message, { reason: "session_invalid" });
  if (e instanceof SessionError) return new HttpError(409, "CONFLICT", e.message, { reason: "session" });
  return null;
}

/** Items kept per run for replays to a client that reattaches. */
export const BACKLOG = 2000;

/**
 * A model-config error in the words of a daemon client: the library names its
 * own options (`apiKey`, `model`), which no request body has.
 */
function daemonModelMessage(e: Error | null, message: string, ownUrl: boolean): string {
  if (e === null) return message;
  if (runStack === null || !(e instanceof runStack.ModelConfigError) || e.problem !== "missing") return e.message;
  if (e.setting === "model") return "no model configured: send model.model (or a script), or start the daemon with CHAT_MODEL set";
  if (e.setting === "apiKey") {
    const who = e.message.slice(0, e.message.indexOf(" needs an API key"));
    return ownUrl
      ? `${who} needs an API key, and MODEL_API_KEY goes only to the daemon's MODEL_URL: leave model.url out, or start the daemon with MODEL_URL set to it`
      : `${who} needs an API key: start the daemon with MODEL_API_KEY set (a local server needs none: model.preset ollama or lmstudio, or model.url)`;
  }
  return e.message;
}

/** One live (or finished) run. */
export class ServerRun {
  readonly createdAt = new Date();
  readonly results: { agent_run_id: string; result: AgentRunResult }[] = [];
  /** Stream listeners; `id` numbers the run's events and approval notices from 1 (0 for `idle`). */
  readonly listeners = new Set<(item: RunStreamItem, id: number) => void>();
  /** The last {@link BACKLOG} numbered items, for `Last-Event-ID` replays. */
  readonly backlog: { id: number; item: RunStreamItem }[] = [];
  /** The id of the last numbered item. */
  lastId = 0;
  /** Event run ids of the agent (to route approvals). */
  readonly agentRunIds = new Set<string>();
  closed = false;
  lastActivity = Date.now();
  /** Whether the run was created with compaction settings (so `compact` works). */
  compaction = false;
  /** The tools the run may use (null: all), and its policy preset. */
  tools: string[] | null = null;
  policy: PolicyPreset = "daemon";
  /** Operations in flight (task, continue, compaction): the session lease is held while > 0. */
  busy = 0;
  /** The session branch, taken (across processes) while an operation is in flight. */
  claim: BranchClaim | null = null;

  constructor(
    readonly id: string,
    readonly agent: Agent,
    readonly detached: boolean,
    readonly session: { session_id: string; branch: string; storage: JournalStorage; recorder: SessionRecorder } | null,
  ) {}

  emit(item: RunStreamItem): void {
    let id = 0;
    if (item.type !== "idle") {
      id = ++this.lastId;
      this.backlog.push({ id, item });
      if (this.backlog.length > BACKLOG) this.backlog.shift();
    }
    for (const l of [...this.listeners]) {
      try {
        l(item, id);
      } catch {
        // a broken stream never affects the run
      }
    }
  }

  get status(): RunView["status"] {
    if (this.closed) return "closed";
    return this.busy > 0 || this.agent.isActive ? "running" : "idle";
  }
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
