/**
 * The daemon's Hono app: one `fetch` handler that runs unchanged on Bun
 * (`Bun.serve`) and Deno (`Deno.serve`).
 *
 * Every request passes, in order: the Host/Origin guard (403), the bearer
 * token (401; not for `GET /v1/health` and CORS preflights), the concurrency
 * limit (503 with `Retry-After`; the control routes — health, the approvals,
 * abort — have a reserve of their own, so that a full daemon can still be
 * answered and freed), then the route, whose body reading is capped (413) and
 * whose work has a deadline (504). Every refusal is an error envelope; an
 * unexpected exception becomes a bare `INTERNAL_ERROR` envelope (500) and is
 * logged, never shown. A 401, 403, 413, 431 or 504 answer says
 * `Connection: close`, and the connection is closed after it (Bun).
 *
 * With `accessLog`, each request gets one line on stderr when its answer's
 * headers are ready: `agentcore info access method=POST path=/v1/calls
 * status=200 ms=0.4` (no query string, no header, no body).
 *
 * @example
 * ```ts
 * import { createApp } from "./src/server/app.ts";
 * const daemon = createApp({ token: "…64 hex…", port: () => 8787 });
 * Bun.serve({ hostname: "127.0.0.1", port: 8787, fetch: daemon.fetch });
 * ```
 *
 * @module
 */
import { Hono, type Context } from "hono";
import { createMcpHandler } from "@modelcontextprotocol/server";
import { createMcpServer } from "../mcp/server.ts";
import type { SkillCatalog } from "../skills/catalog.ts";
import { createRuntime, type Runtime, type RuntimeOptions } from "../runtime/runtime.ts";
import { createLogger, type Logger } from "../core/logger.ts";
import { serializeEnvelope } from "../runtime/envelope_io.ts";
import type { Envelope } from "../core/envelope.ts";
import { policyFromConfig, type PolicyConfig } from "../runtime/middleware/policy.ts";
import type { ToolMiddleware } from "../runtime/middleware/types.ts";
import { JsonlSessionStorage } from "../session/jsonl.ts";
import { sessionMessages } from "../session/types.ts";
import { LineFramer, isBlank } from "../core/lines.ts";
import { VERSION } from "../core/version.ts";
import { ApprovalQueue } from "./approvals.ts";
import { DEFAULT_MAX_BODY_BYTES, Fields, isJsonType, isNdjsonType, readBody, readJson } from "./body.ts";
import { validateStrict } from "../core/index.ts";
import { HARD_MAX_DEPTH } from "../core/errors.ts";
import { errorResponse, HttpError, jsonResponse, JSON_HEADERS } from "./errors.ts";
import { bearerChecker } from "./token.ts";
import { corsHeaders, hostOriginGuard } from "./guard.ts";
import { openApiDocument } from "./openapi.ts";
import { defaultDaemonSessionsDir, parseRunRequest, RunManager, sessionHttpError, type ServerRun } from "./runs.ts";
import { runEventStream, SSE_HEADERS } from "./sse.ts";

/** Options of {@link createApp}. */
export interface AppOptions {
  /** The bearer token clients must send. */
  token: string;
  /** The listening TCP port, read per request (known after binding port 0); return null on a Unix socket. */
  port: () => number | null;
  /** Extra accepted Host values (`name:port`), e.g. an explicit non-loopback `--host`. */
  allowedHosts?: readonly string[];
  /** Accepted Origins (exact, e.g. `http://localhost:5173`). Default none. */
  allowedOrigins?: readonly string[];
  /** Runtime settings (root, limits, extra tools, …). Ignored when `runtime` is given. */
  runtimeOptions?: RuntimeOptions;
  /** A runtime built by the caller (its middleware then decides about approvals). */
  runtime?: Runtime;
  /** Tool policy (as in the config file); `require_approval` goes to the HTTP approval queue. */
  policy?: PolicyConfig;
  /** Pending approvals are denied after this long. Default 5 minutes. */
  approvalTimeoutMs?: number;
  /** Body cap in bytes. Default 1 MiB. */
  maxBodyBytes?: number;
  /**
   * Requests handled at once (streams count only until their headers are
   * sent). Default 256. The control routes (`GET /v1/health`,
   * `GET /v1/approvals`, `POST /v1/approvals/{id}`, `POST /v1/runs/{id}/abort`)
   * are not counted: they have their own {@link CONTROL_CONCURRENCY}.
   */
  maxConcurrent?: number;
  /** Agents active at once. Default 16. */
  maxActiveRuns?: number;
  /** Deadline of a request's handler (not of run streams), ms. Default 30000. */
  requestTimeoutMs?: number;
  /** SSE heartbeat period, ms. Default 15000. */
  heartbeatMs?: number;
  /** Session journals. Default `<root>/.agentcore/sessions`. */
  sessionsDir?: string;
  /** A live idle agent is shut down after this long. Default 15 minutes. */
  idleTtlMs?: number;
  /** Environment for the OpenAI-compatible model adapter. Default process.env. */
  env?: Readonly<Record<string, string | undefined>>;
  /** Skills every run can activate (`$name` or `skill:name` in its task). */
  skills?: SkillCatalog;
  /** Serve the runtime's tools over MCP Streamable HTTP at `/mcp`. Default true. */
  mcp?: boolean;
  /**
   * One access log line per request: `true` writes them to stderr, a function
   * receives each line. Default: on when the runtime's logger has `info`
   * enabled (`AGENTCORE_LOG_LEVEL=info` or lower), else off.
   */
  accessLog?: boolean | ((line: string) => void);
  /** Mount extra routes behind the same guards. */
  mount?: (app: Hono, ctx: { runtime: Runtime }) => void;
}

/** A created app and the parts a server needs for shutdown. */
export interface Daemon {
  readonly app: Hono;
  readonly fetch: (request: Request) => Response | Promise<Response>;
  readonly runtime: Runtime;
  readonly runs: RunManager;
  readonly approvals: ApprovalQueue;
  /**
   * Stop taking requests (503), then finish or abort runs (see
   * {@link RunManager.shutdown}) and the calls in flight (`POST /v1/calls`,
   * batches): in `abort` mode their signals fire at once, in `finish` mode
   * after `graceMs`. Resolves when every run and call has settled (so every
   * journal and history record is written).
   */
  shutdown(mode: "abort" | "finish", graceMs: number): Promise<void>;
  /** Abort every active run and call now (a second signal during a `finish` shutdown); returns how many. */
  abortAll(reason: string): number;
}

const CALL_INPUT_CODES = new Set(["JSON_PARSE", "JSON_DEPTH", "JSON_SIZE", "JSON_DUPLICATE_KEY", "JSON_ENCODING", "JSON_NUMBER_RANGE", "JSON_FORBIDDEN_KEY", "INVALID_CALL"]);

/** The JSON headers as one `Headers` object: a Response copies it several times faster than a record. */
const CALL_HEADERS = new Headers(JSON_HEADERS);

/**
 * Control requests (answering or listing approvals, aborting a run) handled
 * at once, besides `maxConcurrent`: they are what frees a daemon whose
 * requests all wait, so they never wait behind them. Health is not counted.
 */
export const CONTROL_CONCURRENCY = 64;

/**
 * The answers after which the connection is closed (`Connection: close`): a
 * client refused for who it is or what it sent (401, 403, 413, 431), or one
 * whose request outlived its deadline (504), has no use for a kept-alive
 * connection, and may not have sent its whole body.
 */
export const CLOSING_STATUSES: ReadonlySet<number> = new Set([401, 403, 413, 431, 504]);

/** Whether `method path` is a control route (see {@link CONTROL_CONCURRENCY}); health is handled apart. */
export function isControlRoute(method: string, path: string): boolean {
  if (method === "POST") return /^\/v1\/approvals\/[^/]+$/.test(path) || /^\/v1\/runs\/[^/]+\/abort$/.test(path);
  return method === "GET" && path === "/v1/approvals";
}

/** The path of a request URL, without its query string (or fragment). */
function pathOf(url: string): string {
  const slash = url.indexOf("/", url.indexOf("//") + 2);
  if (slash < 0) return "/";
  let end = url.length;
  const q = url.indexOf("?", slash);
  if (q >= 0) end = q;
  const h = url.indexOf("#", slash);
  if (h >= 0 && h < end) end = h;
  return url.slice(slash, end);
}

/** HTTP status of a dispatched call's envelope: 400 when the call itself was malformed, else 200. */
export function callStatus(env: Envelope): number {
  return env.success || env.error === null ? 200 : CALL_INPUT_CODES.has(env.error.code) ? 400 : 200;
}

function wantsJson(c: Context): boolean {
  const accept = c.req.header("accept") ?? "";
  return /application\/json/i.test(accept) && !/text\/event-stream/i.test(accept);
}

/** Create the daemon app. */
export function createApp(options: AppOptions): Daemon {
  const maxBody = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const maxConcurrent = options.maxConcurrent ?? 256;
  const requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
  const heartbeatMs = options.heartbeatMs ?? 15_000;
  const approvals = new ApprovalQueue({ timeoutMs: options.approvalTimeoutMs });
  let runtime: Runtime;
  if (options.runtime !== undefined) runtime = options.runtime;
  else {
    const base = options.runtimeOptions ?? {};
    const middleware: ToolMiddleware[] = [...(base.middleware ?? [])];
    if (options.policy !== undefined) middleware.push(policyFromConfig(options.policy, { approver: approvals.approver }));
    runtime = createRuntime({ ...base, middleware });
  }
  const sessionsDir = options.sessionsDir ?? defaultDaemonSessionsDir(runtime.root);
  const runs = new RunManager({ runtime, approvals, sessionsDir, maxActiveRuns: options.maxActiveRuns, idleTtlMs: options.idleTtlMs, env: options.env, skills: options.skills });
  const checkBearer = bearerChecker(options.token);
  const checkHostOrigin = hostOriginGuard({ port: options.port, allowedHosts: options.allowedHosts, allowedOrigins: options.allowedOrigins });
  const storage = () => new JsonlSessionStorage(sessionsDir);
  let inflight = 0;
  let controlInflight = 0;
  let stopping = false;
  const accessOption = options.accessLog ?? runtime.logger.enabled("info");
  // Its own logger at info: the access log is on or off whatever the runtime's level (stderr on Bun and Deno).
  const accessLog: Logger | null = accessOption === false ? null : createLogger({ level: "info", sink: typeof accessOption === "function" ? accessOption : undefined });

  const app = new Hono();

  /** A client that left while its body was read is no daemon error: a debug line, not an error one. */
  const noteRefusal = (err: HttpError, path: string): void => {
    if (err.details.reason === "body_unreadable") runtime.logger.debug("the client left before its request body was read", { path, error: err.message });
  };

  app.onError((err, c) => {
    if (err instanceof HttpError) {
      noteRefusal(err, c.req.path);
      return err.toResponse();
    }
    const s = sessionHttpError(err);
    if (s !== null) return s.toResponse();
    runtime.logger.error("request failed unexpectedly", { method: c.req.method, path: c.req.path, error: err instanceof Error ? err.message : String(err) });
    return errorResponse(500, "INTERNAL_ERROR", "internal error");
  });
  app.notFound((c) => errorResponse(404, "NOT_FOUND", `no route ${c.req.method} ${c.req.path.slice(0, 200)}`));

  /**
   * The guards every request passes: Host/Origin (403), CORS preflight (204),
   * the token (401, not for GET /v1/health), shutdown and the concurrency
   * limit (503: `maxConcurrent`, or for the control routes
   * CONTROL_CONCURRENCY). Returns a response to send instead, or null to
   * proceed.
   */
  const gate = (req: Request, path: string, origin: string | null, control = false): Response | null => {
    const h = req.headers;
    const refusal = checkHostOrigin(h.get("host"), origin);
    if (refusal !== null) return errorResponse(403, "FORBIDDEN", refusal.message, { header: refusal.header });
    const cors = origin === null ? undefined : corsHeaders(origin);
    if (req.method === "OPTIONS") return new Response(null, { status: 204, headers: { ...cors, "access-control-max-age": "600" } });
    const open = req.method === "GET" && path === "/v1/health";
    if (open) return null;
    if (!checkBearer(h.get("authorization"))) {
      return errorResponse(401, "UNAUTHORIZED", "a valid bearer token is required (Authorization: Bearer <token>)", {}, { "www-authenticate": 'Bearer realm="agentcore"', ...cors });
    }
    if (stopping) return errorResponse(503, "OVERLOADED", "the daemon is shutting down", { limit: "shutdown" }, { "retry-after": "5", ...cors });
    if (control) {
      if (controlInflight >= CONTROL_CONCURRENCY) {
        return errorResponse(503, "OVERLOADED", `too many control requests at once (${CONTROL_CONCURRENCY})`, { limit: "control_concurrency" }, { "retry-after": "1", ...cors });
      }
    } else if (inflight >= maxConcurrent) {
      return errorResponse(503, "OVERLOADED", `too many requests at once (${maxConcurrent})`, { limit: "max_concurrent" }, { "retry-after": "1", ...cors });
    }
    return null;
  };

  app.use("*", async (c, next) => {
    const origin = c.req.raw.headers.get("origin");
    const method = c.req.method;
    const path = c.req.path;
    // Health is never counted; the control routes count against their own reserve.
    const health = method === "GET" && path === "/v1/health";
    const control = !health && isControlRoute(method, path);
    const refused = gate(c.req.raw, path, origin, control);
    if (refused !== null) return refused;
    if (health) await next();
    else if (control) {
      controlInflight++;
      try {
        await next();
      } finally {
        controlInflight--;
      }
    } else {
      inflight++;
      try {
        await next();
      } finally {
        inflight--;
      }
    }
    if (origin !== null) for (const [k, v] of Object.entries(corsHeaders(origin))) c.res.headers.set(k, v);
  });

  // Request deadlines: one coarse ticker for all requests instead of a timer
  // per request (the hot path of /v1/calls stays allocation-light).
  const deadlines = new Set<{ at: number; fire(): void }>();
  const tickMs = Math.max(5, Math.min(1000, Math.floor(requestTimeoutMs / 4)));
  const ticker = setInterval(() => {
    const now = performance.now();
    for (const d of deadlines) if (d.at <= now) d.fire();
  }, tickMs);
  (ticker as { unref?: () => void }).unref?.();

  /** Run `fn` with the request deadline: past it, its signal fires and the client gets 504 TIMEOUT. */
  const timed = async (fn: (signal: AbortSignal) => Promise<Response>, ac = new AbortController()): Promise<Response> => {
    let settle!: (r: Response) => void;
    const deadline = new Promise<Response>((resolve) => (settle = resolve));
    const entry = {
      at: performance.now() + requestTimeoutMs,
      fire() {
        deadlines.delete(entry);
        ac.abort(new DOMException("request timed out", "TimeoutError"));
        settle(errorResponse(504, "TIMEOUT", `the request did not finish within ${requestTimeoutMs} ms`, { timeout_ms: requestTimeoutMs }));
      },
    };
    deadlines.add(entry);
    try {
      return await Promise.race([fn(ac.signal), deadline]);
    } finally {
      deadlines.delete(entry);
    }
  };

  /** `p`, or a 504 TIMEOUT refusal once the request deadline passes (for body reads). */
  const withDeadline = <T>(p: Promise<T>): Promise<T> => {
    let entry!: { at: number; fire(): void };
    const deadline = new Promise<never>((_, reject) => {
      entry = {
        at: performance.now() + requestTimeoutMs,
        fire() {
          deadlines.delete(entry);
          reject(new HttpError(504, "TIMEOUT", `the request did not finish within ${requestTimeoutMs} ms`, { timeout_ms: requestTimeoutMs }));
        },
      };
    });
    deadline.catch(() => {});
    deadlines.add(entry);
    return Promise.race([p, deadline]).finally(() => deadlines.delete(entry));
  };

  // ---------------------------------------------------------------- basics

  app.get("/v1/health", () => jsonResponse({ status: stopping ? "stopping" : "ok" }));
  app.get("/v1/openapi.json", () => jsonResponse(openApiDocument(VERSION)));
  app.get("/v1/tools", () =>
    jsonResponse({
      tools: runtime.registry.list().map((t) => ({ name: t.name, description: t.description, effect: t.effect ?? "side_effecting", strict: t.strict ?? false, parameters: t.parameters ?? null })),
    }));

  // ---------------------------------------------------------------- calls

  /**
   * `POST /v1/calls`, the hot path: also reached without the router (see
   * `fetch` below). A synchronous tool answers without any timer; an
   * asynchronous one races the request deadline.
   */
  const controllers: AbortController[] = [];
  const reusable = runtime.middlewareChain.length === 1;
  /** Asynchronous calls in flight (single and batch): shutdown aborts them and waits for them. */
  const calls = new Set<{ ac: AbortController; done: Promise<unknown> }>();
  const track = (ac: AbortController, p: Promise<unknown>): void => {
    const entry = { ac, done: p };
    calls.add(entry);
    const untrack = () => calls.delete(entry);
    p.then(untrack, untrack);
  };
  const handleCall = async (req: Request): Promise<Response> => {
    const type = req.headers.get("content-type");
    if (type === null || !/^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i.test(type)) {
      throw new HttpError(415, "INVALID_REQUEST", "the body must be one JSON tool call (Content-Type: application/json)", { header: "content-type" });
    }
    const bytes = await withDeadline(readBody(req, maxBody));
    const ac = controllers.pop() ?? new AbortController();
    const out = runtime.dispatch(bytes, ac.signal);
    if (!(out instanceof Promise)) {
      // A synchronous call only read `signal.aborted`: with no middleware
      // (which could have listened), the controller is as new and is reused.
      if (reusable && controllers.length < 256) controllers.push(ac);
      return new Response(serializeEnvelope(out) + "\n", { status: callStatus(out), headers: CALL_HEADERS });
    }
    track(ac, out);
    // A client that goes away cancels its call (runtimes that report it on the request's signal).
    const gone = () => ac.abort(new DOMException("the client disconnected", "AbortError"));
    req.signal?.addEventListener("abort", gone, { once: true });
    try {
      return await timed(async () => {
        const env = await out;
        return new Response(serializeEnvelope(env) + "\n", { status: callStatus(env), headers: CALL_HEADERS });
      }, ac);
    } finally {
      req.signal?.removeEventListener("abort", gone);
    }
  };
  app.post("/v1/calls", (c) => handleCall(c.req.raw));

  // The body is read under the request deadline; the calls then run one by
  // one as the client reads the answers (each under its own tool timeout).
  // A client that goes away cancels the call in flight and the rest.
  app.post("/v1/calls/batch", async (c) => {
      const type = c.req.header("content-type") ?? null;
      if (!isNdjsonType(type)) throw new HttpError(415, "INVALID_REQUEST", "the body must be NDJSON, one call per line (Content-Type: application/x-ndjson)", { header: "content-type" });
      const bytes = await withDeadline(readBody(c.req.raw, maxBody));
      const ac = new AbortController();
      const signal = ac.signal;
      const maxLine = runtime.limits.maxBytes ?? maxBody;
      const lines: { number: number; bytes: Uint8Array | null; length: number }[] = [];
      const framer = new LineFramer(maxLine);
      const collect = (l: import("../core/lines.ts").Line) => lines.push(l.overlong ? { number: l.number, bytes: null, length: l.bytes } : { number: l.number, bytes: l.bytes, length: l.bytes.length });
      framer.push(bytes, collect);
      framer.end(collect);
      const enc = new TextEncoder();
      let i = 0;
      const stream = new ReadableStream<Uint8Array>({
        async pull(ctrl) {
          for (;;) {
            const l = lines[i++];
            if (l === undefined || signal.aborted) return ctrl.close();
            if (l.bytes !== null && isBlank(l.bytes)) continue;
            let env: Envelope;
            if (l.bytes === null) {
              env = { id: null, success: false, tool: null, result: null, error: { code: "JSON_SIZE", message: `line exceeds ${maxLine} bytes`, details: { bytes: l.length } }, duration_ms: 0 };
            } else {
              const out = runtime.dispatch(l.bytes, signal);
              if (out instanceof Promise) track(ac, out);
              env = await out;
            }
            if (!env.success && env.error !== null) env.error.details.input_line = l.number;
            ctrl.enqueue(enc.encode(serializeEnvelope(env) + "\n"));
            return;
          }
        },
        cancel() {
          ac.abort(new DOMException("the client disconnected", "AbortError"));
        },
      });
      return new Response(stream, { headers: { "content-type": "application/x-ndjson; charset=utf-8", "cache-control": "no-store", "x-content-type-options": "nosniff" } });
  });

  // ---------------------------------------------------------------- runs

  /** Answer an operation on a run: SSE by default, the final view with `Accept: application/json`. */
  const runResponse = async (c: Context, run: ServerRun, op: Parameters<RunManager["begin"]>[1], created: boolean): Promise<Response> => {
    const status = created ? 201 : 200;
    const headers = { "location": `/v1/runs/${run.id}`, "x-run-id": run.id };
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
  };

  app.post("/v1/runs", async (c) => {
    const req = parseRunRequest(await withDeadline(readJson(c.req.raw, maxBody)));
    const run = await runs.create(req);
    try {
      return await runResponse(c, run, { kind: "task", task: req.task }, true);
    } catch (e) {
      if (run.status !== "running") await runs.discard(run);
      throw e;
    }
  });
  app.get("/v1/runs", () => jsonResponse({ runs: runs.list().map((r) => runs.view(r)) }));
  app.get("/v1/runs/:id", (c) => jsonResponse(runs.view(runs.get(c.req.param("id")))));
  app.get("/v1/runs/:id/events", (c) => {
    const run = runs.get(c.req.param("id"));
    // Last-Event-ID (or ?after=N) replays the kept items after that id; without it only new items come.
    const header = c.req.header("last-event-id");
    const raw = header ?? c.req.query("after");
    let replayAfter: number | undefined;
    if (raw !== undefined) {
      if (!/^\d{1,15}$/.test(raw.trim())) {
        throw new HttpError(400, "INVALID_REQUEST", `${header !== undefined ? "the Last-Event-ID header" : "the query parameter after"} must be an event id: a non-negative integer`, header !== undefined ? { header: "last-event-id" } : { query: "after" });
      }
      replayAfter = Number(raw.trim());
    }
    // HEAD (which the GET route answers too) gets the headers only: a stream made for it would never be read or cancelled.
    if (c.req.method === "HEAD") return new Response(null, { headers: SSE_HEADERS });
    return new Response(runEventStream(run, { heartbeatMs, signal: c.req.raw.signal, endIfIdle: true, replayAfter }), { headers: SSE_HEADERS });
  });
  app.post("/v1/runs/:id/abort", (c) =>
    timed(async () => {
      const run = runs.get(c.req.param("id"));
      const f = Fields.of(await readJson(c.req.raw, maxBody, { allowEmpty: true }), ["reason"]);
      const reason = f.string("reason", { max: 1000 }) ?? "aborted by a client";
      return jsonResponse({ run_id: run.id, aborted: run.agent.abort(reason) });
    }));
  app.post("/v1/runs/:id/steer", (c) =>
    timed(async () => {
      const run = runs.get(c.req.param("id"));
      const f = Fields.of(await readJson(c.req.raw, maxBody), ["content"]);
      const content = f.string("content", { required: true, max: 1 << 20 })!;
      const receipt = run.agent.steer(content);
      return jsonResponse({ run_id: run.id, ...receipt }, receipt.status === "accepted" ? 202 : 409);
    }));
  app.post("/v1/runs/:id/follow_up", (c) =>
    timed(async () => {
      const run = runs.get(c.req.param("id"));
      const f = Fields.of(await readJson(c.req.raw, maxBody), ["task"]);
      const task = f.string("task", { required: true, max: 1 << 20 })!;
      if (run.closed) throw new HttpError(409, "CONFLICT", `run ${run.id} is closed`, { reason: "closed" });
      const handle = run.agent.followUp(task);
      handle.wait().catch(() => {});
      return jsonResponse({ run_id: run.id, ...handle.receipt }, handle.receipt.status === "accepted" ? 202 : 409);
    }));
  // continue and compact take no fields: the body is empty, or `{}`.
  app.post("/v1/runs/:id/continue", async (c) => {
    const run = runs.get(c.req.param("id"));
    Fields.of(await withDeadline(readJson(c.req.raw, maxBody, { allowEmpty: true })), []);
    return runResponse(c, run, { kind: "continue" }, false);
  });
  app.post("/v1/runs/:id/compact", async (c) => {
    const run = runs.get(c.req.param("id"));
    Fields.of(await withDeadline(readJson(c.req.raw, maxBody, { allowEmpty: true })), []);
    return runResponse(c, run, { kind: "compact" }, false);
  });

  // ---------------------------------------------------------------- approvals

  app.get("/v1/approvals", () => jsonResponse({ approvals: approvals.list() }));
  app.post("/v1/approvals/:id", (c) =>
    timed(async () => {
      const id = c.req.param("id");
      const f = Fields.of(await readJson(c.req.raw, maxBody), ["approved", "reason"]);
      const approved = f.bool("approved");
      if (approved === undefined) f.fail("approved", "is required (true or false)");
      const reason = f.string("reason", { max: 1000 });
      const pending = approvals.get(id);
      if (pending === undefined || !approvals.resolve(id, reason === undefined ? { approved: approved! } : { approved: approved!, reason })) {
        throw new HttpError(404, "NOT_FOUND", `no pending approval '${id.slice(0, 100)}' (answered, timed out, or never existed)`);
      }
      return jsonResponse({ approval_id: id, approved, reason: reason ?? null });
    }));

  // ---------------------------------------------------------------- sessions

  app.get("/v1/sessions", (c) =>
    timed(async () => {
      const s = storage();
      const rows = [];
      for (const id of await s.listSessions()) {
        const branches = await s.listBranches(id);
        const records = await s.records(id);
        const main = await s.load(id);
        rows.push({ session_id: id, records: records.length, branches: branches.map((b) => b.branch_id), runs: main?.runs.length ?? 0 });
      }
      return jsonResponse({ sessions: rows });
    }));
  app.get("/v1/sessions/:id", (c) => timed(async () => {
    const id = c.req.param("id");
    const branch = c.req.query("branch") ?? "main";
    const checkout = await storage().checkout(id, branch);
    if (checkout === null) throw new HttpError(404, "NOT_FOUND", `no session '${id.slice(0, 100)}' with branch '${branch.slice(0, 100)}'`);
    return jsonResponse({ session_id: id, branch: checkout.branch, head: checkout.head, session: checkout.session, messages: sessionMessages(checkout.session) });
  }));
  app.get("/v1/sessions/:id/tree", (c) => timed(async () => {
    const id = c.req.param("id");
    const s = storage();
    const records = await s.records(id);
    if (records.length === 0) throw new HttpError(404, "NOT_FOUND", `no session '${id.slice(0, 100)}'`);
    return jsonResponse({ session_id: id, branches: await s.listBranches(id), records });
  }));
  /** A session's storage, or 404 when it has no journal (as for the GET routes). */
  const existing = async (id: string): Promise<JsonlSessionStorage> => {
    const s = storage();
    if ((await s.records(id)).length === 0) throw new HttpError(404, "NOT_FOUND", `no session '${id.slice(0, 100)}'`);
    return s;
  };
  app.post("/v1/sessions/:id/fork", (c) =>
    timed(async () => {
      const f = Fields.of(await readJson(c.req.raw, maxBody, { allowEmpty: true }), ["from", "name"]);
      const checkout = await (await existing(c.req.param("id"))).fork(c.req.param("id"), { fromRecordId: f.string("from", { max: 200 }), branchId: f.string("name", { max: 200 }) });
      return jsonResponse({ branch: checkout.branch, head: checkout.head, messages: sessionMessages(checkout.session).length }, 201);
    }));
  app.post("/v1/sessions/:id/rollback", (c) =>
    timed(async () => {
      const f = Fields.of(await readJson(c.req.raw, maxBody), ["to", "name"]);
      const to = f.string("to", { required: true, max: 200 })!;
      const checkout = await (await existing(c.req.param("id"))).rollback(c.req.param("id"), to, { branchId: f.string("name", { max: 200 }) });
      return jsonResponse({ branch: checkout.branch, head: checkout.head, messages: sessionMessages(checkout.session).length }, 201);
    }));
  app.post("/v1/sessions/:id/retry", (c) =>
    timed(async () => {
      const f = Fields.of(await readJson(c.req.raw, maxBody), ["run", "name"]);
      const runId = f.string("run", { required: true, max: 200 })!;
      const r = await (await existing(c.req.param("id"))).prepareRetry(c.req.param("id"), runId, { branchId: f.string("name", { max: 200 }) });
      return jsonResponse({ branch: r.checkout.branch, head: r.checkout.head, task: r.task, retried_run_id: r.retried_run_id, messages: sessionMessages(r.checkout.session).length }, 201);
    }));

  app.post("/v1/sessions/:id/recover", (c) =>
    timed(async () => {
      const f = Fields.of(await readJson(c.req.raw, maxBody, { allowEmpty: true }), ["branch", "force"]);
      const id = c.req.param("id");
      const branch = f.string("branch", { max: 200 }) ?? "main";
      const force = f.bool("force") === true;
      const s = await existing(id);
      // A run of this daemon on the branch is alive, not interrupted: never close it from under it.
      const live = runs.runningOn(id, branch);
      if (live !== null) throw new HttpError(409, "CONFLICT", `session '${id.slice(0, 100)}' branch '${branch.slice(0, 100)}' is in use by run ${live.id}`, { reason: "session_busy", run_id: live.id });
      // A run of another process (its live-run mark names a live pid): SessionRunActiveError, 409, unless forced.
      return jsonResponse(await s.recoverRuns(id, { branch, force, reason: "recovered through the daemon" }));
    }));

  // ---------------------------------------------------------------- MCP

  // The registered tools over MCP Streamable HTTP (stateless: one fresh SDK
  // server per request, all on this runtime, so validation, policy and
  // approvals apply as for /v1/calls). The guards above run first.
  // Its calls are tracked like those of /v1/calls: shutdown aborts them (or,
  // in finish mode, waits for them within the grace period) and waits until
  // they have settled, so the client gets its CANCELLED result and the
  // history record is written before the daemon exits.
  const mcpRuntime = Object.create(runtime) as Runtime;
  Object.defineProperty(mcpRuntime, "dispatch", {
    value(input: string | Uint8Array, signal?: AbortSignal): Envelope | Promise<Envelope> {
      const ac = new AbortController();
      const relay = () => ac.abort(signal?.reason);
      if (signal?.aborted) relay();
      else signal?.addEventListener("abort", relay, { once: true });
      const out = runtime.dispatch(input, ac.signal);
      if (!(out instanceof Promise)) {
        signal?.removeEventListener("abort", relay);
        return out;
      }
      track(ac, out);
      void out.then(() => signal?.removeEventListener("abort", relay), () => signal?.removeEventListener("abort", relay));
      return out;
    },
  });
  const mcp = options.mcp === false ? null : createMcpHandler(() => createMcpServer(mcpRuntime), {
    maxRequestBodySize: maxBody,
    onerror: (e) => runtime.logger.debug("mcp request refused", { error: e.message }),
  });
  /** A JSON-RPC error answer (what the MCP SDK sends for the refusals it makes itself). */
  const rpcError = (status: number, code: number, message: string, data?: Record<string, unknown>): Response =>
    jsonResponse({ jsonrpc: "2.0", error: data === undefined ? { code, message } : { code, message, data }, id: null }, status);
  /**
   * An /mcp body, read under the cap and the deadline and validated strictly
   * (duplicate keys, encoding, `__proto__`; nesting up to the hard cap, so
   * the runtime's own depth limit still decides about the arguments), or the
   * JSON-RPC refusal to send.
   */
  const readMcpBody = async (req: Request): Promise<Uint8Array | Response> => {
    let bytes: Uint8Array;
    try {
      bytes = await withDeadline(readBody(req, maxBody));
    } catch (e) {
      if (!(e instanceof HttpError)) throw e;
      return rpcError(e.status, e.status === 413 ? -32000 : -32600, e.status === 413 ? `Payload Too Large: ${e.message}` : e.message, { code: e.code, ...e.details });
    }
    const bad = validateStrict(bytes, { maxBytes: maxBody, maxDepth: HARD_MAX_DEPTH });
    if (bad === null) return bytes;
    return rpcError(400, -32700, `Parse error: ${bad.message} at line ${bad.line}, column ${bad.column}`, { code: bad.code, offset: bad.offset, line: bad.line, column: bad.column });
  };
  if (mcp !== null) {
    // The request deadline applies here too: past it the request's signal
    // fires, the SDK tears the exchange down, and the call in flight is
    // cancelled (a pending approval is withdrawn). The deadline lasts until
    // the answer (JSON or an SSE stream) has been sent.
    app.all("/mcp", async (c) => {
      const raw = c.req.raw;
      const ac = new AbortController();
      const entry = {
        at: performance.now() + requestTimeoutMs,
        fire() {
          deadlines.delete(entry);
          ac.abort(new DOMException("request timed out", "TimeoutError"));
        },
      };
      const settle = (): void => {
        deadlines.delete(entry);
      };
      deadlines.add(entry);
      raw.signal?.addEventListener("abort", () => ac.abort(raw.signal.reason), { once: true });
      let res: Response;
      try {
        // A JSON body is read here and checked by the strict core first: the
        // SDK's JSON.parse would take a duplicate key last-wins (so
        // {"name":"a","name":"b"} called b), and accept bytes that are not UTF-8.
        let forward: Request = raw;
        if (raw.method === "POST" && isJsonType(raw.headers.get("content-type"))) {
          const body = await readMcpBody(raw);
          if (body instanceof Response) {
            settle();
            return body;
          }
          forward = new Request(raw.url, { method: "POST", headers: raw.headers, body: body as Uint8Array<ArrayBuffer> });
        }
        res = await mcp.fetch(new Request(forward, { signal: ac.signal }));
      } catch (e) {
        settle();
        throw e;
      }
      if (res.body === null) {
        settle();
        return res;
      }
      const body = res.body.pipeThrough(new TransformStream<Uint8Array, Uint8Array>({ flush: settle }));
      return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
    });
  }

  options.mount?.(app, { runtime });

  /** The app's fetch, with `POST /v1/calls` taken straight to its handler (same gate, same errors). */
  const route = (request: Request): Response | Promise<Response> => {
    if (request.method !== "POST") return app.fetch(request);
    const url = request.url;
    const slash = url.indexOf("/", url.indexOf("//") + 2);
    if (slash < 0 || url.length - slash !== 9 || !url.endsWith("/v1/calls")) return app.fetch(request);
    const origin = request.headers.get("origin");
    const refused = gate(request, "/v1/calls", origin);
    if (refused !== null) return refused;
    inflight++;
    const done = (res: Response): Response => {
      inflight--;
      if (origin !== null) for (const [k, v] of Object.entries(corsHeaders(origin))) res.headers.set(k, v);
      return res;
    };
    return handleCall(request).then(done, (err) => done(errorFor(err)));
  };

  /** `Connection: close` on the answers in CLOSING_STATUSES (a Response whose headers are locked is copied). */
  const closing = (res: Response): Response => {
    if (!CLOSING_STATUSES.has(res.status)) return res;
    try {
      res.headers.set("connection", "close");
      return res;
    } catch {
      const copy = new Response(res.body, { status: res.status, statusText: res.statusText, headers: res.headers });
      copy.headers.set("connection", "close");
      return copy;
    }
  };

  /** Every request: routed, then `Connection: close` where due, then (when on) its access log line. */
  const fetch = (request: Request): Response | Promise<Response> => {
    if (accessLog === null) {
      const out = route(request);
      return out instanceof Promise ? out.then(closing) : closing(out);
    }
    const start = performance.now();
    const log = (res: Response): Response => {
      res = closing(res);
      // The path only: a query string, the headers (the token) and the body are never written.
      const path = pathOf(request.url);
      accessLog.info("access", {
        method: request.method.slice(0, 16),
        path: path.length > 200 ? `${path.slice(0, 200)}…` : path,
        status: res.status,
        ms: Math.round((performance.now() - start) * 10) / 10,
      });
      return res;
    };
    const out = route(request);
    return out instanceof Promise ? out.then(log) : log(out);
  };
  const errorFor = (err: unknown): Response => {
    if (err instanceof HttpError) {
      noteRefusal(err, "/v1/calls");
      return err.toResponse();
    }
    runtime.logger.error("request failed unexpectedly", { path: "/v1/calls", error: err instanceof Error ? err.message : String(err) });
    return errorResponse(500, "INTERNAL_ERROR", "internal error");
  };

  const abortCalls = (reason: string): number => {
    let n = 0;
    for (const c of calls) {
      if (!c.ac.signal.aborted) {
        c.ac.abort(new DOMException(reason, "AbortError"));
        n++;
      }
    }
    return n;
  };

  return {
    app,
    fetch,
    runtime,
    runs,
    approvals,
    async shutdown(mode, graceMs) {
      stopping = true;
      const settleCalls = async () => {
        if (mode === "finish" && calls.size > 0) {
          let timer: ReturnType<typeof setTimeout> | undefined;
          await Promise.race([Promise.all([...calls].map((c) => c.done)), new Promise<void>((r) => (timer = setTimeout(r, graceMs)))]);
          clearTimeout(timer);
        }
        abortCalls("the daemon is shutting down");
        await Promise.all([...calls].map((c) => c.done));
      };
      await Promise.all([runs.shutdown(mode, graceMs), settleCalls()]);
      clearInterval(ticker);
      await mcp?.close().catch(() => {});
    },
    abortAll(reason) {
      return runs.abortAll(reason) + abortCalls(reason);
    },
  };
}
