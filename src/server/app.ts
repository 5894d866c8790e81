/**
 * The daemon's Hono app: one `fetch` handler that runs unchanged on Bun
 * (`Bun.serve`) and Deno (`Deno.serve`), assembled from named middleware
 * (`src/server/middleware/`) and one sub-app per resource
 * (`src/server/routes/`).
 *
 * Every request passes, in order: the Host/Origin guard (403, and CORS),
 * the bearer token (401; not for `GET /v1/health` and CORS preflights; the
 * console's session cookie stands in for it, with a CSRF check on requests
 * that change state: docs/console.md), the
 * concurrency limit (503 with `Retry-After`; the control routes — the
 * approvals, abort — have a reserve of their own, so that a full daemon can
 * still be answered and freed; health is never counted), the body limit
 * (413, read under the deadline), then the route, whose work has a deadline
 * (504). Every refusal is an error envelope; an unexpected exception becomes
 * a bare `INTERNAL_ERROR` envelope (500) and is logged, never shown. A 401,
 * 403, 413, 431 or 504 answer says `Connection: close`, and the connection
 * is closed after it (Bun).
 *
 * `POST /v1/calls`, the hot path, skips the router: the same checks, in the
 * same order, called as plain functions.
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
import { Hono } from "hono";
import type { SkillCatalog } from "../skills/catalog.ts";
import { createRuntime, type Runtime, type RuntimeOptions } from "../runtime/runtime.ts";
import { createLogger, type Logger } from "../core/logger.ts";
import { policyFromConfig, type PolicyConfig } from "../runtime/middleware/policy.ts";
import type { ToolMiddleware } from "../runtime/middleware/types.ts";
import { JsonlSessionStorage } from "../session/jsonl.ts";
import type { JournalStorage } from "../session/journal.ts";
import type { Cluster } from "./cluster/cluster.ts";
import { ApprovalQueue } from "./approvals.ts";
import { DEFAULT_MAX_BODY_BYTES } from "./body.ts";
import { errorResponse, HttpError } from "./errors.ts";
import { defaultDaemonSessionsDir, RunManager, sessionHttpError } from "./runs.ts";
import { bodyLimit } from "./middleware/body-limit.ts";
import { concurrency, Pool, stoppingResponse } from "./middleware/concurrency.ts";
import { Deadlines } from "./middleware/deadline.ts";
import { hostOrigin, hostOriginCheck, withCors } from "./middleware/host-origin.ts";
import { bearerToken, isHealth, tokenCheck } from "./middleware/token.ts";
import { approvalRoutes } from "./routes/approvals.ts";
import { callHandler, callRoutes } from "./routes/calls.ts";
import type { AppDeps, DaemonEnv, TrackedCall } from "./routes/deps.ts";
import { healthRoutes, openApiRoutes, toolRoutes } from "./routes/basics.ts";
import { mcpRoutes } from "./routes/mcp.ts";
import { runCommands, runRoutes } from "./routes/runs.ts";
import { sessionRoutes } from "./routes/sessions.ts";
import { historyRoutes, type HistoryReader } from "./routes/history.ts";
import { consoleGate, consoleRoutes, isConsoleOpen } from "./routes/console.ts";
import { ConsoleAuth } from "./console/auth.ts";

export { callStatus } from "./routes/calls.ts";

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
  /** The session store (e.g. PostgreSQL, from openStore); replaces the JSONL journals of `sessionsDir`. */
  storage?: JournalStorage;
  /** Cluster mode (docs/cluster.md): the daemon's part in a cluster on its PostgreSQL store; started by startDaemon, stopped by shutdown. */
  cluster?: Cluster;
  /** A live idle agent is shut down after this long. Default 15 minutes. */
  idleTtlMs?: number;
  /** Environment for the OpenAI-compatible model adapter. Default process.env. */
  env?: Readonly<Record<string, string | undefined>>;
  /** Skills every run can activate (`$name` or `skill:name` in its task). */
  skills?: SkillCatalog;
  /** false: runs leave the root's AGENTS.md out of their system prompt (default true). */
  projectInstructions?: boolean;
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
  /** The browser console at `/` (docs/console.md). Default true. */
  console?: boolean;
  /** The execution history log (JSONL) that `GET /v1/history` reads; none by default. */
  historyFile?: string;
  /** Or the store's history (PostgreSQL's history table) that `GET /v1/history` reads, when there is no history file. */
  historyReader?: HistoryReader;
}

/** A created app and the parts a server needs for shutdown. */
export interface Daemon {
  readonly app: Hono;
  readonly fetch: (request: Request) => Response | Promise<Response>;
  readonly runtime: Runtime;
  readonly runs: RunManager;
  readonly approvals: ApprovalQueue;
  /** Cluster mode: the cluster part (null otherwise). */
  readonly cluster: Cluster | null;
  /** The console's sign-in (codes and sessions; null when the console is off): `issueCode()` for a sign-in link. */
  readonly console: ConsoleAuth | null;
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

/** `Connection: close` on the answers in CLOSING_STATUSES (a Response whose headers are locked is copied). */
function closing(res: Response): Response {
  if (!CLOSING_STATUSES.has(res.status)) return res;
  try {
    res.headers.set("connection", "close");
    return res;
  } catch {
    const copy = new Response(res.body, { status: res.status, statusText: res.statusText, headers: res.headers });
    copy.headers.set("connection", "close");
    return copy;
  }
}

/** Create the daemon app. */
export function createApp(options: AppOptions): Daemon {
  const maxBody = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
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
  const runs = new RunManager({
    runtime,
    approvals,
    sessionsDir,
    storage: options.storage,
    maxActiveRuns: options.maxActiveRuns,
    idleTtlMs: options.idleTtlMs,
    env: options.env,
    skills: options.skills,
    ...(options.projectInstructions === false ? { projectInstructions: false } : {}),
  });
  const deadlines = new Deadlines(options.requestTimeoutMs ?? 30_000);
  let stopping = false;
  const calls = new Set<TrackedCall>();
  const deps: AppDeps = {
    runtime,
    runs,
    approvals,
    deadlines,
    maxBody,
    heartbeatMs: options.heartbeatMs ?? 15_000,
    storage: options.storage !== undefined ? () => options.storage! : () => new JsonlSessionStorage(sessionsDir),
    cluster: options.cluster ?? null,
    stopping: () => stopping,
    calls,
    track(ac, p) {
      const entry = { ac, done: p };
      calls.add(entry);
      const untrack = () => calls.delete(entry);
      p.then(untrack, untrack);
    },
  };
  options.cluster?.attach({
    runs,
    apply: runCommands(deps),
    logger: runtime.logger,
    toolEffect: (name) => runtime.registry.get(name)?.effect,
  });
  const accessOption = options.accessLog ?? runtime.logger.enabled("info");
  // Its own logger at info: the access log is on or off whatever the runtime's level (stderr on Bun and Deno).
  const accessLog: Logger | null =
    accessOption === false ? null : createLogger({ level: "info", sink: typeof accessOption === "function" ? accessOption : undefined });

  /** A client that left while its body was read is no daemon error: a debug line, not an error one. */
  const noteRefusal = (err: HttpError, path: string): void => {
    if (err.details.reason === "body_unreadable")
      runtime.logger.debug("the client left before its request body was read", { path, error: err.message });
  };
  /** The answer to an error thrown by a handler. */
  const errorFor = (err: unknown, method: string, path: string): Response => {
    if (err instanceof HttpError) {
      noteRefusal(err, path);
      return err.toResponse();
    }
    const s = sessionHttpError(err);
    if (s !== null) return s.toResponse();
    runtime.logger.error("request failed unexpectedly", { method, path, error: err instanceof Error ? err.message : String(err) });
    return errorResponse(500, "INTERNAL_ERROR", "internal error");
  };

  const consoleAuth = options.console === false ? null : new ConsoleAuth();
  const guard = {
    port: options.port,
    allowedHosts: options.allowedHosts,
    allowedOrigins: options.allowedOrigins,
    // the console's own pages: a request without a bearer token (the session cookie decides next); a bearer request is held to the allowlist as ever
    allowSelfOrigin: consoleAuth === null ? undefined : (req: Request) => req.headers.get("authorization") === null,
  };
  const main = new Pool(options.maxConcurrent ?? 256, "max_concurrent", "too many requests at once");
  const control = new Pool(CONTROL_CONCURRENCY, "control_concurrency", "too many control requests at once");
  // Health is never counted; the control routes count against their own reserve.
  const poolOf = (method: string, path: string): Pool | null =>
    isHealth(method, path) ? null : isControlRoute(method, path) ? control : main;

  const app = new Hono<DaemonEnv>();
  app.onError((err, c) => errorFor(err, c.req.method, c.req.path));
  app.notFound((c) => errorResponse(404, "NOT_FOUND", `no route ${c.req.method} ${c.req.path.slice(0, 200)}`));
  app.use(hostOrigin(guard));
  app.use(
    bearerToken(
      consoleAuth === null
        ? { token: options.token }
        : {
            token: options.token,
            open: (m, p) => isHealth(m, p) || isConsoleOpen(m, p),
            alternative: consoleGate(consoleAuth, options.port),
          },
    ),
  );
  app.use(concurrency({ pool: poolOf, stopping: () => stopping }));
  app.use(bodyLimit({ maxBytes: maxBody, deadlines }));

  const handleCall = callHandler(deps);
  app.route("/v1", healthRoutes(deps));
  app.route("/v1", openApiRoutes());
  app.route("/v1", toolRoutes(deps));
  app.route("/v1/calls", callRoutes(deps, handleCall));
  app.route("/v1/runs", runRoutes(deps));
  app.route("/v1/approvals", approvalRoutes(deps));
  app.route("/v1/sessions", sessionRoutes(deps));
  app.route("/v1", historyRoutes(deps, options.historyFile ?? options.historyReader));
  if (consoleAuth !== null) app.route("/", consoleRoutes(consoleAuth, options.port));
  const mcp = options.mcp === false ? null : mcpRoutes(deps);
  if (mcp !== null) app.route("/mcp", mcp.app);

  options.mount?.(app as unknown as Hono, { runtime });

  // The direct path of POST /v1/calls: the middleware's checks as plain functions, in the same order.
  const checkHostOrigin = hostOriginCheck(guard);
  const checkToken = tokenCheck(options.token);
  // The end of a direct call without an Origin (the usual one): made once, not per request.
  const callDone = (res: Response): Response => {
    main.active--;
    return closing(res);
  };
  const callFailed = (err: unknown): Response => callDone(errorFor(err, "POST", "/v1/calls"));
  /**
   * The app's fetch, with `POST /v1/calls` taken straight to its handler
   * (same guards, same errors), then `Connection: close` where due.
   */
  const route = (request: Request): Response | Promise<Response> => {
    if (request.method !== "POST") return routed(request);
    const url = request.url;
    const slash = url.indexOf("/", url.indexOf("//") + 2);
    if (slash < 0 || url.length - slash !== 9 || !url.endsWith("/v1/calls")) return routed(request);
    const origin = request.headers.get("origin");
    const refused =
      checkHostOrigin(request, origin) ??
      checkToken(request.headers.get("authorization")) ??
      (stopping ? stoppingResponse() : main.refusal());
    if (refused !== null) return closing(withCors(refused, origin));
    main.active++;
    if (origin === null) return handleCall(request).then(callDone, callFailed);
    const done = (res: Response): Response => callDone(withCors(res, origin));
    return handleCall(request).then(done, (err) => done(errorFor(err, "POST", "/v1/calls")));
  };
  /** A request for the router, then `Connection: close` where due. */
  const routed = (request: Request): Response | Promise<Response> => {
    const out = app.fetch(request);
    return out instanceof Promise ? out.then(closing) : closing(out);
  };

  /** Every request: routed (see `route`), then (when on) its access log line. */
  const fetch = (request: Request): Response | Promise<Response> => {
    if (accessLog === null) return route(request);
    const start = performance.now();
    const log = (res: Response): Response => {
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
    app: app as unknown as Hono,
    fetch,
    runtime,
    runs,
    approvals,
    cluster: options.cluster ?? null,
    console: consoleAuth,
    async shutdown(mode, graceMs) {
      stopping = true;
      // cluster mode: no new job is taken from the queue while the runs here end
      await options.cluster?.drain();
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
      await options.cluster?.stop();
      deadlines.close();
      await mcp?.close().catch(() => {});
    },
    abortAll(reason) {
      return runs.abortAll(reason) + abortCalls(reason);
    },
  };
}
