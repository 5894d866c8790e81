/**
 * Dispatch of one call: find the tool, validate arguments, run the handler,
 * and turn every outcome into an {@link Envelope}. Nothing throws past here.
 *
 * Outcomes, in order of checking:
 * - unknown tool → `UNKNOWN_TOOL`;
 * - arguments fail the schema → `INVALID_ARGUMENTS`, `details: { errors, truncated }`;
 * - caller's signal already aborted → `CANCELLED` (handler not run);
 * - handler throws a {@link ToolError} → its code, message and details (a code
 *   outside {@link ERROR_CODES} becomes `TOOL_ERROR`; messages are capped at
 *   2000 characters);
 * - handler throws anything else → `TOOL_ERROR` with the error's message;
 * - an async handler outlives its timeout (`tool.timeoutMs ?? defaultTimeoutMs`)
 *   → `TIMEOUT`, and its `ctx.signal` aborts with a `TimeoutError`;
 * - the caller's signal aborts first → `CANCELLED`, and `ctx.signal` aborts with
 *   the caller's reason.
 *
 * Cost model: a handler that returns a non-Promise gets its envelope back
 * synchronously, with no AbortController, timer or listener allocated. Only a
 * returned Promise (thenable) arms the timeout and links the caller's signal.
 * A handler that settles after its call was already decided (late resolve or
 * rejection) is ignored and logged at debug level; it can never surface as an
 * unhandled rejection.
 *
 * Middleware: when the runtime has middleware beyond the default schema
 * validation, the call (after the unknown-tool and non-object checks) runs
 * through the chain (see {@link ToolMiddleware}); the validation then happens
 * where its middleware sits in the chain. Timeouts arm around the handler only
 * (a slow approver is not a slow tool); the caller's cancel settles the whole
 * call at once with `CANCELLED` and aborts `ctx.signal`, which middleware
 * (approvers) and the handler share. With only the default validation the
 * call takes the synchronous fast path described above, unchanged.
 *
 * Agent hooks: a handler may return `toolOutcome(data, { control })`; the
 * envelope's `result` is then `data` (so plain dispatch output is unchanged)
 * and the control goes to `hooks.onControl` when the caller passed hooks.
 * `ctx.progress()` reports go to `hooks.onProgress` until the call settles.
 *
 * @module
 */
import type { Envelope, ErrorCode } from "../core/envelope.ts";
import { ERROR_CODES } from "../core/envelope.ts";
import { elapsedMs, failureEnvelope, successEnvelope } from "./envelope_io.ts";
import { CallContext, type CallHooks } from "./context.ts";
import type { Logger } from "../core/logger.ts";
import { isToolOutcome, ToolError } from "../tools/definition.ts";
import type { RegisteredTool, ToolRegistry } from "../tools/registry.ts";
import type { ToolCall } from "../core/toolcall.ts";
import type { ToolCallContext, ToolCallOutcome, ToolMiddleware } from "./middleware/types.ts";
import { composeMiddleware } from "./middleware/compose.ts";
import { validateArguments } from "./middleware/validation.ts";
import type { ToolControl, ToolOutcome } from "../tools/definition.ts";

/** setTimeout's ceiling; longer timeouts mean "no timer". */
const MAX_TIMER_MS = 2_147_483_647;
const KNOWN_CODES: ReadonlySet<string> = new Set(ERROR_CODES);

function isThenable(v: unknown): v is PromiseLike<unknown> {
  return v !== null && (typeof v === "object" || typeof v === "function") && typeof (v as { then?: unknown }).then === "function";
}

/** A success envelope for a handler's value, unwrapping a `toolOutcome()` and reporting its control. */
function valueEnvelope(
  id: string | null,
  tool: string,
  value: unknown,
  start: number,
  hooks: CallHooks | undefined,
  logger: Logger,
): Envelope {
  let outcome: ToolOutcome | null;
  try {
    outcome = isToolOutcome(value) ? value : null;
  } catch (err) {
    return thrownToEnvelope(err, id, tool, start); // a Proxy whose traps throw
  }
  if (outcome === null) return successEnvelope(id, tool, value, start);
  if (hooks?.onControl !== undefined) {
    try {
      hooks.onControl(outcome.control);
    } catch (err) {
      logger.warn("control observer failed", { tool, error: errorMessage(err) });
    }
  }
  return successEnvelope(id, tool, outcome.data, start);
}

/** Longest handler-supplied message kept in an envelope. */
const MAX_MESSAGE_CHARS = 2000;

function errorMessage(err: unknown): string {
  let m: string;
  try {
    if (err instanceof Error) m = String(err.message || err.name || "tool failed");
    else if (typeof err === "string") m = err;
    else m = "tool failed with a non-Error value";
  } catch {
    m = "tool failed";
  }
  return m.length > MAX_MESSAGE_CHARS ? m.slice(0, MAX_MESSAGE_CHARS) + "…" : m;
}

/** Map a thrown value to an envelope. ToolError (or a look-alike from another copy of agentcore) keeps its code. */
export function thrownToEnvelope(err: unknown, id: string | null, tool: string, start: number): Envelope {
  try {
    return toolErrorEnvelope(err, id, tool, start);
  } catch {
    // the thrown value itself throws when inspected (a revoked Proxy, hostile getters)
    return failureEnvelope(id, tool, "TOOL_ERROR", "tool failed with an unreadable error value", {}, start);
  }
}

function toolErrorEnvelope(err: unknown, id: string | null, tool: string, start: number): Envelope {
  if (err instanceof ToolError || isToolErrorLike(err)) {
    const e = err as ToolError;
    const details = typeof e.details === "object" && e.details !== null && !Array.isArray(e.details) ? e.details : {};
    // Only documented codes reach the wire; a made-up one (via a cast) becomes TOOL_ERROR.
    const code: ErrorCode = KNOWN_CODES.has(e.code) ? e.code : "TOOL_ERROR";
    return failureEnvelope(id, tool, code, errorMessage(e), details, start);
  }
  return failureEnvelope(id, tool, "TOOL_ERROR", errorMessage(err), {}, start);
}

function isToolErrorLike(err: unknown): boolean {
  if (!(err instanceof Error) || err.name !== "ToolError") return false;
  const code = (err as { code?: unknown }).code;
  return typeof code === "string" && KNOWN_CODES.has(code);
}

function describeTool(name: unknown): string {
  const s = typeof name === "string" ? name : String(name);
  return JSON.stringify(s.length > 64 ? s.slice(0, 64) + "…" : s);
}

/** Settles one asynchronous call exactly once: value, error, timeout or cancel. */
class PendingCall {
  private settled = false;
  private timer: ReturnType<typeof setTimeout> | undefined = undefined;
  private readonly external: AbortSignal | undefined;
  private readonly onExternalAbort: (() => void) | undefined;

  constructor(
    private readonly call: ToolCall,
    private readonly tool: RegisteredTool,
    private readonly ctx: CallContext,
    private readonly logger: Logger,
    private readonly start: number,
    private readonly resolve: (env: Envelope) => void,
    timeoutMs: number,
    external: AbortSignal | undefined,
    private readonly hooks: CallHooks | undefined,
  ) {
    this.external = external;
    if (external !== undefined) {
      this.onExternalAbort = () => this.cancel();
      external.addEventListener("abort", this.onExternalAbort, { once: true });
    }
    if (timeoutMs > 0 && timeoutMs <= MAX_TIMER_MS) {
      this.timer = setTimeout(() => this.timeout(timeoutMs), timeoutMs);
    }
  }

  private finish(env: Envelope): void {
    this.settled = true;
    this.ctx.close();
    if (this.timer !== undefined) clearTimeout(this.timer);
    if (this.onExternalAbort !== undefined) this.external!.removeEventListener("abort", this.onExternalAbort);
    this.resolve(env);
  }

  value(v: unknown): void {
    if (this.settled) {
      this.logger.debug("handler resolved after its call ended; result dropped", { tool: this.tool.name });
      return;
    }
    this.ctx.close();
    this.finish(valueEnvelope(this.call.id, this.tool.name, v, this.start, this.hooks, this.logger));
  }

  error(err: unknown): void {
    if (this.settled) {
      this.logger.debug("handler rejected after its call ended; ignored", { tool: this.tool.name, error: errorMessage(err) });
      return;
    }
    this.finish(thrownToEnvelope(err, this.call.id, this.tool.name, this.start));
  }

  private timeout(ms: number): void {
    this.timer = undefined;
    if (this.settled) return;
    this.finish(
      failureEnvelope(this.call.id, this.tool.name, "TIMEOUT", `tool did not finish within ${ms} ms`, { timeout_ms: ms }, this.start),
    );
    this.ctx.abort(new DOMException(`tool call timed out after ${ms} ms`, "TimeoutError"));
  }

  cancel(): void {
    if (this.settled) return;
    this.finish(failureEnvelope(this.call.id, this.tool.name, "CANCELLED", "call cancelled by the caller", {}, this.start));
    this.ctx.abort(this.external?.reason ?? new DOMException("call cancelled", "AbortError"));
  }
}

/** Everything dispatch needs from its runtime. */
export interface DispatchEnv {
  readonly registry: ToolRegistry;
  readonly logger: Logger;
  readonly defaultTimeoutMs: number;
  /**
   * The middleware chain, first = outermost; `undefined` when it is only the
   * default schema validation (the synchronous fast path).
   */
  readonly middleware?: readonly ToolMiddleware[] | undefined;
}

/**
 * Run one already-parsed call. Returns an Envelope synchronously when the
 * handler did, else a Promise that always resolves (never rejects).
 */
export function runCall(
  env: DispatchEnv,
  call: ToolCall,
  signal: AbortSignal | undefined,
  start: number,
  hooks?: CallHooks,
): Envelope | Promise<Envelope> {
  const id = call.id ?? null;
  const tool = env.registry.get(call.tool);
  if (tool === undefined) {
    return failureEnvelope(
      id,
      typeof call.tool === "string" ? call.tool : null,
      "UNKNOWN_TOOL",
      `no tool named ${describeTool(call.tool)}`,
      {},
      start,
    );
  }
  const args = call.arguments;
  if (typeof args !== "object" || args === null || Array.isArray(args)) {
    return failureEnvelope(
      id,
      tool.name,
      "INVALID_ARGUMENTS",
      "arguments must be a JSON object",
      { errors: [{ path: "", keyword: "type", message: "must be object" }], truncated: false },
      start,
    );
  }
  if (env.middleware !== undefined) return runChain(env, env.middleware, tool, id, args, signal, start, hooks);
  const invalid = validateArguments(tool, id, args, start);
  if (invalid !== null) return invalid;
  if (signal !== undefined && signal.aborted) {
    return failureEnvelope(id, tool.name, "CANCELLED", "call cancelled by the caller before it started", {}, start);
  }

  const ctx = new CallContext(id, tool.name, env.logger, hooks);
  let out: unknown;
  let promised: boolean;
  try {
    out = tool.handler(args, ctx);
    promised = isThenable(out); // reading `then` of the handler's value may throw too (getter, revoked Proxy)
  } catch (err) {
    ctx.close();
    return thrownToEnvelope(err, id, tool.name, start);
  }
  if (!promised) {
    ctx.close();
    return valueEnvelope(id, tool.name, out, start, hooks, env.logger);
  }

  const thenable = out;
  const timeoutMs = tool.timeoutMs ?? env.defaultTimeoutMs;
  return new Promise<Envelope>((resolve) => {
    const pending = new PendingCall(call, tool, ctx, env.logger, start, resolve, timeoutMs, signal, hooks);
    if (signal !== undefined && signal.aborted) pending.cancel(); // aborted while the handler ran
    try {
      Promise.resolve(thenable).then(
        (v) => pending.value(v),
        (e) => pending.error(e),
      );
    } catch (err) {
      pending.error(err); // a hostile thenable whose `then` getter throws
    }
  });
}

function fixDuration(e: Envelope, start: number): Envelope {
  return { ...e, duration_ms: elapsedMs(start) };
}

function isOutcome(o: unknown): o is ToolCallOutcome {
  if (typeof o !== "object" || o === null) return false;
  const { envelope, control } = o as ToolCallOutcome;
  return (
    typeof envelope === "object" &&
    envelope !== null &&
    typeof envelope.success === "boolean" &&
    (control === "continue" || control === "complete" || control === "reject" || control === "cancel")
  );
}

/** Run one call through the middleware chain. Always resolves. */
function runChain(
  env: DispatchEnv,
  middleware: readonly ToolMiddleware[],
  tool: RegisteredTool,
  id: string | null,
  args: Record<string, unknown>,
  signal: AbortSignal | undefined,
  start: number,
  hooks: CallHooks | undefined,
): Envelope | Promise<Envelope> {
  if (signal !== undefined && signal.aborted) {
    return failureEnvelope(id, tool.name, "CANCELLED", "call cancelled by the caller before it started", {}, start);
  }
  const cctx = new CallContext(id, tool.name, env.logger, hooks);
  const callSignal = cctx.signal;
  let handlerReported = false;
  const ctx: ToolCallContext = {
    tool: tool.name,
    definition: tool,
    arguments: args,
    toolCallId: id,
    signal: callSignal,
    progress: (message, data) => cctx.progress(message, data),
    run: hooks?.run,
    ...(hooks?.approval !== undefined ? { approval: hooks.approval } : {}),
  };

  // The innermost step: the handler, with its timeout; cancelled through ctx.signal.
  const terminal = (c: ToolCallContext): Promise<ToolCallOutcome> => {
    let control: ToolControl = "continue";
    const capture: CallHooks = {
      onControl: (k) => {
        control = k;
        handlerReported = true;
      },
    };
    const done = (e: Envelope): ToolCallOutcome => ({ envelope: e, control });
    if (callSignal.aborted) {
      return Promise.resolve(
        done(failureEnvelope(id, tool.name, "CANCELLED", "call cancelled by the caller before it started", {}, start)),
      );
    }
    let out: unknown;
    let promised: boolean;
    try {
      out = tool.handler(c.arguments, cctx);
      promised = isThenable(out);
    } catch (err) {
      return Promise.resolve(done(thrownToEnvelope(err, id, tool.name, start)));
    }
    if (!promised) return Promise.resolve(done(valueEnvelope(id, tool.name, out, start, capture, env.logger)));
    const thenable = out;
    const timeoutMs = tool.timeoutMs ?? env.defaultTimeoutMs;
    return new Promise<ToolCallOutcome>((resolve) => {
      const pending = new PendingCall(
        { id, tool: tool.name, arguments: c.arguments, shape: "agentcore" } as ToolCall,
        tool,
        cctx,
        env.logger,
        start,
        (e) => resolve(done(e)),
        timeoutMs,
        callSignal,
        capture,
      );
      if (callSignal.aborted) pending.cancel();
      try {
        Promise.resolve(thenable).then(
          (v) => pending.value(v),
          (e) => pending.error(e),
        );
      } catch (err) {
        pending.error(err);
      }
    });
  };

  const chain = composeMiddleware(middleware, terminal);
  return new Promise<Envelope>((resolve) => {
    let settled = false;
    const onAbort = () => {
      if (settled) return;
      finish(failureEnvelope(id, tool.name, "CANCELLED", "call cancelled by the caller", {}, start), "continue");
      cctx.abort(signal!.reason ?? new DOMException("call cancelled", "AbortError"));
    };
    const finish = (e: Envelope, control: ToolControl) => {
      settled = true;
      cctx.close();
      if (signal !== undefined) signal.removeEventListener("abort", onAbort);
      if (hooks?.onControl !== undefined && (control !== "continue" || handlerReported)) {
        try {
          hooks.onControl(control);
        } catch (err) {
          env.logger.warn("control observer failed", { tool: tool.name, error: errorMessage(err) });
        }
      }
      resolve(fixDuration(e, start));
    };
    if (signal !== undefined) signal.addEventListener("abort", onAbort, { once: true });
    let p: Promise<ToolCallOutcome>;
    try {
      p = chain(ctx);
    } catch (err) {
      p = Promise.reject(err);
    }
    p.then(
      (o) => {
        if (settled) return;
        if (!isOutcome(o)) {
          env.logger.error("middleware returned an invalid outcome", { tool: tool.name });
          finish(
            failureEnvelope(id, tool.name, "INTERNAL_ERROR", "internal error: a middleware returned an invalid outcome", {}, start),
            "continue",
          );
          return;
        }
        finish(o.envelope, o.control);
      },
      (err) => {
        if (settled) return;
        finish(thrownToEnvelope(err, id, tool.name, start), "continue");
      },
    );
    if (signal !== undefined && signal.aborted) onAbort();
  });
}
