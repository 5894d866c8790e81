/**
 * A narrowed view of a runtime: the same tools, root, logger and middleware,
 * but only some of the tools, and optionally more middleware: after the
 * runtime's own chain (innermost, so it only ever sees calls the runtime's
 * policy let through), or right before its policy (a refusal that comes
 * before anybody is asked to approve). The daemon gives one run a view (`POST /v1/runs`
 * `tools` and `policy`); every other run keeps the runtime as it is.
 *
 * A tool left out of the view is not there at all: the model is not offered
 * it, and a call naming it gets `UNKNOWN_TOOL` as for a name never
 * registered. A view cannot register tools (the runtime's registry is shared).
 *
 * @module
 */
import { parseToolCall, type ToolCall } from "../core/toolcall.ts";
import type { Envelope } from "../core/envelope.ts";
import type { ToolDefinition } from "../tools/definition.ts";
import { type RegisteredTool, ToolRegistrationError, ToolRegistry } from "../tools/registry.ts";
import type { CallHooks } from "./context.ts";
import { runCall } from "./dispatch.ts";
import { failureEnvelope } from "./envelope_io.ts";
import { isPolicyMiddleware } from "./middleware/policy.ts";
import type { ToolMiddleware } from "./middleware/types.ts";
import type { Runtime } from "./runtime.ts";

/** What a {@link runtimeView} narrows. */
export interface RuntimeViewOptions {
  /** The tools the view has (names the runtime registers; absent = all of them). */
  tools?: readonly string[];
  /** Middleware run after the runtime's chain, first = outermost (absent = none). */
  middleware?: readonly ToolMiddleware[];
  /**
   * Middleware run right before the runtime's first policy middleware (after
   * the schema validation), or innermost when it has none: a refusal that
   * should come before anybody is asked for an approval.
   */
  beforePolicy?: readonly ToolMiddleware[];
}

/** The runtime's registry with only `names` in it (tools registered later under those names appear too). */
class RegistryView extends ToolRegistry {
  readonly #base: ToolRegistry;
  readonly #names: ReadonlySet<string> | null;

  constructor(base: ToolRegistry, names: ReadonlySet<string> | null) {
    super();
    this.#base = base;
    this.#names = names;
  }

  override register<A>(def: ToolDefinition<A>): RegisteredTool {
    throw new ToolRegistrationError(def?.name, "a runtime view cannot register tools: register them on the runtime");
  }

  override get(name: string): RegisteredTool | undefined {
    return this.#names === null || this.#names.has(name) ? this.#base.get(name) : undefined;
  }

  override has(name: string): boolean {
    return this.get(name) !== undefined;
  }

  override list(): RegisteredTool[] {
    const all = this.#base.list();
    return this.#names === null ? all : all.filter((t) => this.#names!.has(t.name));
  }

  override get size(): number {
    return this.list().length;
  }
}

/** A view of `base` with only `options.tools` and `options.middleware` after its chain. */
export function runtimeView(base: Runtime, options: RuntimeViewOptions): Runtime {
  const registry = new RegistryView(base.registry, options.tools === undefined ? null : new Set(options.tools));
  const extra = [...(options.middleware ?? [])];
  const early = [...(options.beforePolicy ?? [])];
  [...early, ...extra].forEach((m, i) => {
    if (typeof m !== "function") throw new TypeError(`middleware[${i}] must be a function`);
  });
  const list = [...base.middlewareChain];
  const at = list.findIndex(isPolicyMiddleware);
  list.splice(at < 0 ? list.length : at, 0, ...early);
  const chain = Object.freeze([...list, ...extra]);
  const env = {
    registry,
    logger: base.logger,
    defaultTimeoutMs: base.defaultTimeoutMs,
    // only the default validation and nothing added: the synchronous fast path, as on the runtime
    middleware: chain.length === 1 ? undefined : chain,
  };
  const run = (call: ToolCall, signal: AbortSignal | undefined, start: number, hooks?: CallHooks): Envelope | Promise<Envelope> => {
    try {
      return runCall(env, call, signal, start, hooks);
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      return failureEnvelope(null, null, "INTERNAL_ERROR", `internal error: ${message}`, {}, start);
    }
  };
  return {
    root: base.root,
    registry,
    logger: base.logger,
    limits: base.limits,
    maxFileBytes: base.maxFileBytes,
    defaultTimeoutMs: base.defaultTimeoutMs,
    middlewareChain: chain,
    dispatch(input, signal) {
      const start = performance.now();
      const parsed = parseToolCall(input, base.limits);
      if (!parsed.ok) return failureEnvelope(parsed.id, parsed.tool, parsed.error.code, parsed.error.message, parsed.error.details, start);
      return run(parsed.call, signal, start);
    },
    dispatchCall(call, signal, hooks) {
      return run(call, signal, performance.now(), hooks);
    },
  };
}
