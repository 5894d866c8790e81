/**
 * The tool registry: owns registered tools in a `Map` keyed by name.
 *
 * Lookup is O(1) and never consults `Object.prototype`, so a call naming
 * `toString` or `__proto__` finds nothing unless such a tool was registered.
 * Registration validates everything up front (name, handler, schema
 * compilation) and throws {@link ToolRegistrationError}; after that, dispatch
 * never has to re-check a tool's definition.
 *
 * @module
 */
import { AgentcoreError } from "../core/errors.ts";
import { type JsonSchema, TOOL_NAME_PATTERN, type ToolContext, type ToolDefinition, type ToolEffect } from "./definition.ts";
import { type ArgumentValidator, SchemaCompiler, type SchemaCompilerOptions } from "./schema.ts";

/** Thrown by {@link ToolRegistry.register}; the message names the tool. */
export class ToolRegistrationError extends AgentcoreError {
  readonly code: string = "TOOL_REGISTRATION_FAILED";
  /** The offending tool name as given (may be empty or not a string). */
  readonly tool: unknown;
  constructor(tool: unknown, message: string) {
    super(message);
    this.name = "ToolRegistrationError";
    this.tool = tool;
  }
}

/** A tool as the registry holds it: a frozen copy plus its compiled validator. */
export interface RegisteredTool {
  readonly name: string;
  readonly description: string;
  readonly parameters: JsonSchema;
  readonly effect: ToolEffect;
  readonly strict: boolean;
  readonly timeoutMs: number | undefined;
  readonly handler: (args: Record<string, unknown>, ctx: ToolContext) => unknown;
  /** Validates an arguments object against `parameters` (compiled once). */
  readonly validate: ArgumentValidator;
}

function label(name: unknown): string {
  return typeof name === "string" ? JSON.stringify(name) : `(${name === null ? "null" : typeof name})`;
}

/** Registry of tools, iterated in registration order. */
export class ToolRegistry {
  readonly #tools = new Map<string, RegisteredTool>();
  readonly #compiler: SchemaCompiler;

  constructor(options: SchemaCompilerOptions = {}) {
    this.#compiler = new SchemaCompiler(options);
  }

  /**
   * Register a tool. Throws {@link ToolRegistrationError} for a name not
   * matching `^[A-Za-z0-9_-]{1,64}$`, a duplicate name, a missing handler, an
   * invalid effect or timeout, or parameters that fail to compile.
   * Returns the registered (frozen) tool.
   */
  register<A>(def: ToolDefinition<A>): RegisteredTool {
    if (typeof def !== "object" || def === null) {
      throw new ToolRegistrationError(undefined, "tool definition must be an object");
    }
    const name: unknown = def.name;
    if (typeof name !== "string" || !TOOL_NAME_PATTERN.test(name)) {
      throw new ToolRegistrationError(name, `invalid tool name ${label(name)}: must match ^[A-Za-z0-9_-]{1,64}$`);
    }
    if (this.#tools.has(name)) {
      throw new ToolRegistrationError(name, `duplicate tool name "${name}": a tool with this name is already registered`);
    }
    if (typeof def.handler !== "function") {
      throw new ToolRegistrationError(name, `tool "${name}" has no handler function`);
    }
    const effect = def.effect ?? "side_effecting";
    if (effect !== "read_only" && effect !== "side_effecting") {
      throw new ToolRegistrationError(name, `tool "${name}": effect must be "read_only" or "side_effecting"`);
    }
    const timeoutMs = def.timeoutMs;
    if (timeoutMs !== undefined && !(typeof timeoutMs === "number" && timeoutMs > 0 && Number.isFinite(timeoutMs))) {
      throw new ToolRegistrationError(name, `tool "${name}": timeoutMs must be a positive finite number`);
    }
    // a truthy non-boolean ("yes", 1) would silently mean "not strict": refuse it like a bad effect
    if (def.strict !== undefined && typeof def.strict !== "boolean") {
      throw new ToolRegistrationError(name, `tool "${name}": strict must be a boolean`);
    }
    const description = def.description ?? "";
    if (typeof description !== "string") {
      throw new ToolRegistrationError(name, `tool "${name}": description must be a string`);
    }
    let validate: ArgumentValidator;
    let parameters: JsonSchema;
    try {
      validate = this.#compiler.compile(def.parameters, def.strict === true);
      parameters = structuredClone(def.parameters);
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      throw new ToolRegistrationError(name, `tool "${name}": parameters schema does not compile: ${why}`);
    }
    const tool: RegisteredTool = Object.freeze({
      name,
      description,
      parameters: deepFreeze(parameters),
      effect,
      strict: def.strict === true,
      timeoutMs,
      handler: def.handler as RegisteredTool["handler"],
      validate,
    });
    this.#tools.set(name, tool);
    return tool;
  }

  /** The tool registered under `name`, or `undefined`. O(1). */
  get(name: string): RegisteredTool | undefined {
    return this.#tools.get(name);
  }

  /** Whether a tool is registered under `name`. O(1). */
  has(name: string): boolean {
    return this.#tools.has(name);
  }

  /** All tools, in registration order (a fresh array). */
  list(): RegisteredTool[] {
    return [...this.#tools.values()];
  }

  /** Number of registered tools. */
  get size(): number {
    return this.#tools.size;
  }
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
