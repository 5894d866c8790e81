/**
 * The runtime: one registry, one logger, one root, and `dispatch`.
 *
 * @example
 * ```ts
 * import { createRuntime, serializeEnvelope } from "./src/runtime/index.ts";
 * const rt = createRuntime({ root: "/srv/project" });
 * const env = await rt.dispatch('{"id":"c1","tool":"echo","arguments":{"msg":"hi"}}');
 * console.log(serializeEnvelope(env));
 * // {"id":"c1","success":true,"tool":"echo","result":{"msg":"hi"},"error":null,"duration_ms":0.02}
 * ```
 *
 * Guarantees:
 * - `dispatch` and `dispatchCall` never throw and never reject: every failure
 *   (parse, unknown tool, invalid arguments, handler error, timeout,
 *   cancellation) is an envelope with `success: false`;
 * - they return the Envelope synchronously when the handler is synchronous
 *   (`await` works either way);
 * - a failed or timed-out call leaves the runtime usable.
 *
 * @module
 */
import type { JsonLimits } from "../core/errors.ts";
import { parseToolCall, type ToolCall } from "../core/toolcall.ts";
import { resolveLimits, validateStrict } from "../core/parse.ts";
import type { AnyToolDefinition } from "../tools/definition.ts";
import { ToolRegistry } from "../tools/registry.ts";
import { createEchoTool } from "../tools/builtin/echo.ts";
import { createReadFileTool } from "../tools/builtin/read_file.ts";
import { DEFAULT_MAX_FILE_BYTES, resolveRoot } from "../tools/fs/rooted.ts";
import type { Envelope } from "../core/envelope.ts";
import { failureEnvelope } from "./envelope_io.ts";
import { runCall } from "./dispatch.ts";
import type { CallHooks } from "./context.ts";
import { createLogger, type Logger } from "../core/logger.ts";
import type { ToolMiddleware } from "./middleware/types.ts";
import { isSchemaValidation, schemaValidation } from "./middleware/validation.ts";
import { isPolicyMiddleware } from "./middleware/policy.ts";

export const DEFAULT_TIMEOUT_MS = 30_000;

/** Operator-chosen settings. A call can change none of them. */
export interface RuntimeOptions {
  /** Root for file tools. Default: the working directory at creation. Resolved with realpath once. */
  root?: string;
  /** Limits for the strict JSON parser (input size, depth). */
  limits?: JsonLimits;
  /** Configured size limit for `read_file`. Default 1 MiB. */
  maxFileBytes?: number;
  /** Per-call timeout for async handlers without their own `timeoutMs`. Default 30000. */
  defaultTimeoutMs?: number;
  /** Logger; default `createLogger()` (stderr, `AGENTCORE_LOG_LEVEL`). */
  logger?: Logger;
  /** Register `echo` and `read_file`. Default true. */
  builtins?: boolean;
  /** Extra tools, registered after the built-ins, in order. */
  tools?: readonly AnyToolDefinition[];
  /**
   * Tool middleware, first = outermost, run around every call (CLI, agent,
   * …). Unless the list already contains `schemaValidation()` (then its
   * position is kept), the schema validation is inserted right before the
   * first `ruleBasedPolicy()` middleware, or innermost when there is none. With no
   * middleware beyond validation, calls keep the synchronous fast path.
   */
  middleware?: readonly ToolMiddleware[];
}

/** A configured runtime. */
export interface Runtime {
  /** Canonical absolute root (realpath). */
  readonly root: string;
  readonly registry: ToolRegistry;
  readonly logger: Logger;
  readonly limits: JsonLimits;
  readonly maxFileBytes: number;
  readonly defaultTimeoutMs: number;
  /** The effective middleware chain (first = outermost), schema validation included. */
  readonly middlewareChain: readonly ToolMiddleware[];
  /** Parse one tool call (any accepted shape) and run it. Never throws. */
  dispatch(input: string | Uint8Array, signal?: AbortSignal): Envelope | Promise<Envelope>;
  /**
   * Run an already-parsed call. Never throws. `hooks` (used by the agent loop)
   * observe `ctx.progress()` reports and the control of a `toolOutcome()`.
   */
  dispatchCall(call: ToolCall, signal?: AbortSignal, hooks?: CallHooks): Envelope | Promise<Envelope>;
}

/** The text of a thrown value; never throws itself (a hostile value's getters or toString may). */
function errorText(err: unknown): string {
  try {
    return err instanceof Error ? String(err.message) : String(err);
  } catch {
    return "unreadable error value";
  }
}

function internalError(err: unknown, id: string | null, tool: string | null, start: number): Envelope {
  const message = errorText(err);
  return failureEnvelope(id, tool, "INTERNAL_ERROR", `internal error: ${message}`, {}, start);
}

/** Debug line for one finished call (only called when debug logging is on). */
function logOutcome(logger: Logger, env: Envelope): Envelope {
  logger.debug("call finished", {
    id: env.id,
    tool: env.tool,
    success: env.success,
    code: env.error?.code ?? null,
    duration_ms: env.duration_ms,
  });
  return env;
}

class RuntimeImpl implements Runtime {
  readonly root: string;
  readonly registry: ToolRegistry;
  readonly logger: Logger;
  readonly limits: JsonLimits;
  readonly maxFileBytes: number;
  readonly defaultTimeoutMs: number;
  readonly middlewareChain: readonly ToolMiddleware[];
  /** `undefined` when the chain is only the default validation (fast path). */
  readonly middleware: readonly ToolMiddleware[] | undefined;
  /** Cached once: the logger's level never changes, and the hot path pays one boolean test. */
  readonly #logCalls: boolean;
  readonly #traceCalls: boolean;

  constructor(options: RuntimeOptions) {
    const timeout = options.defaultTimeoutMs ?? DEFAULT_TIMEOUT_MS;
    if (!(typeof timeout === "number" && timeout > 0)) throw new RangeError("defaultTimeoutMs must be a positive number");
    const maxFileBytes = options.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES;
    if (!Number.isSafeInteger(maxFileBytes) || maxFileBytes < 0) throw new RangeError("maxFileBytes must be a non-negative safe integer");
    this.root = resolveRoot(options.root ?? globalThis.process?.cwd?.() ?? ".");
    this.limits = Object.freeze({ ...options.limits });
    // a limit out of range throws its RangeError (naming the field) now, not as every call's INTERNAL_ERROR
    resolveLimits(this.limits);
    this.maxFileBytes = maxFileBytes;
    this.defaultTimeoutMs = timeout;
    this.logger = options.logger ?? createLogger();
    this.#logCalls = this.logger.enabled("debug");
    this.#traceCalls = this.logger.enabled("trace");
    // Compile and instantiate the WebAssembly core now, so that the first
    // call's duration_ms measures the call and not the module's start-up.
    validateStrict("0");
    this.registry = new ToolRegistry();
    if (options.builtins !== false) {
      this.registry.register(createEchoTool());
      this.registry.register(createReadFileTool({ root: this.root, maxFileBytes }));
    }
    for (const def of options.tools ?? []) this.registry.register(def);
    const list = [...(options.middleware ?? [])];
    list.forEach((m, i) => {
      if (typeof m !== "function") throw new TypeError(`middleware[${i}] must be a function`);
    });
    if (!list.some(isSchemaValidation)) {
      // Right before the first policy (invalid arguments never consume limits or
      // approvals), else innermost; outer middleware (history, tracing) see every call.
      const at = list.findIndex(isPolicyMiddleware);
      list.splice(at < 0 ? list.length : at, 0, schemaValidation());
    }
    this.middlewareChain = Object.freeze(list);
    this.middleware = list.length === 1 ? undefined : this.middlewareChain;
  }

  #logged(out: Envelope | Promise<Envelope>): Envelope | Promise<Envelope> {
    const logger = this.logger;
    return out instanceof Promise ? out.then((env) => logOutcome(logger, env)) : logOutcome(logger, out);
  }

  dispatch(input: string | Uint8Array, signal?: AbortSignal): Envelope | Promise<Envelope> {
    const start = performance.now();
    try {
      const parsed = parseToolCall(input, this.limits);
      if (!parsed.ok) {
        const e = parsed.error;
        const env = failureEnvelope(parsed.id, parsed.tool, e.code, e.message, e.details, start);
        return this.#logCalls ? logOutcome(this.logger, env) : env;
      }
      if (this.#traceCalls) this.logger.trace("call received", { id: parsed.call.id, tool: parsed.call.tool, shape: parsed.call.shape });
      const out = runCall(this, parsed.call, signal, start);
      return this.#logCalls ? this.#logged(out) : out;
    } catch (err) {
      this.logger.error("dispatch failed unexpectedly", { error: errorText(err) });
      return internalError(err, null, null, start);
    }
  }

  dispatchCall(call: ToolCall, signal?: AbortSignal, hooks?: CallHooks): Envelope | Promise<Envelope> {
    const start = performance.now();
    try {
      const out = runCall(this, call, signal, start, hooks);
      return this.#logCalls ? this.#logged(out) : out;
    } catch (err) {
      this.logger.error("dispatch failed unexpectedly", { error: errorText(err) });
      // the call object itself may be what throws (a getter): read its id and tool defensively
      let id: string | null = null;
      let tool: string | null = null;
      try {
        id = typeof call?.id === "string" ? call.id : null;
        tool = typeof call?.tool === "string" ? call.tool : null;
      } catch {
        // keep null
      }
      return internalError(err, id, tool, start);
    }
  }
}

/**
 * Create a runtime. Throws (at creation, never later) when the root is not a
 * directory, an option is out of range, or a tool fails to register.
 */
export function createRuntime(options: RuntimeOptions = {}): Runtime {
  return new RuntimeImpl(options);
}
