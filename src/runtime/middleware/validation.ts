/**
 * Schema validation middleware: checks `ctx.arguments` against the tool's
 * `parameters` with the validator the registry compiled (ajv) at
 * registration, i.e. at `createRuntime` (an invalid schema fails there, naming
 * the tool). A failure short-circuits the call (handler and every later
 * middleware, the policy included, are skipped) with an `INVALID_ARGUMENTS`
 * envelope whose details are `{ errors, truncated }`. The agent turns it into
 * the non-terminal payload of harness-contracts §6:
 * `{"status":"error","tool":…,"code":"invalid_tool_arguments","errors":[…],"truncated":…}`.
 *
 * Unless the configured list already contains it, the runtime inserts this
 * middleware right before the first policy middleware (or innermost); with no other middleware the runtime runs the very same check
 * inline (synchronous fast path).
 *
 * @module
 */
import type { Envelope } from "../../core/envelope.ts";
import { failureEnvelope } from "../envelope_io.ts";
import type { ToolCallOutcome, ToolMiddleware } from "./types.ts";
import type { RegisteredTool } from "../../tools/registry.ts";
import type { ArgumentError } from "../../tools/schema.ts";

const VALIDATION_BRAND: unique symbol = Symbol.for("agentcore.schemaValidation");

/** The agent-facing code of a validation failure. */
export const INVALID_TOOL_ARGUMENTS = "invalid_tool_arguments";

/** Value-free wording per JSON Schema keyword (harness-contracts §6). */
export const VALIDATION_MESSAGES: Readonly<Record<string, string>> = Object.freeze({
  additionalProperties: "unexpected properties are not allowed",
  unevaluatedProperties: "unexpected properties are not allowed",
  anyOf: "value does not match any allowed schema",
  const: "value does not match the required constant",
  contains: "array does not contain a required item",
  dependentRequired: "dependent properties are missing",
  enum: "value is not in the allowed set",
  exclusiveMaximum: "number is above the allowed exclusive maximum",
  exclusiveMinimum: "number is below the allowed exclusive minimum",
  format: "value does not match the required format",
  maxItems: "array contains too many items",
  maxLength: "string is longer than allowed",
  maxProperties: "object contains too many properties",
  maximum: "number is above the allowed maximum",
  minItems: "array contains too few items",
  minLength: "string is shorter than allowed",
  minProperties: "object contains too few properties",
  minimum: "number is below the allowed minimum",
  multipleOf: "number is not an allowed multiple",
  not: "value matches a forbidden schema",
  oneOf: "value does not match exactly one allowed schema",
  pattern: "string does not match the required pattern",
  patternProperties: "property does not match the required schema",
  prefixItems: "array item does not match the required schema",
  propertyNames: "property name is not allowed",
  required: "required property is missing",
  type: "value does not match the required type",
  uniqueItems: "array items must be unique",
});

/** The §6 message for a keyword ("value does not match the tool schema" for others). */
export function validationMessage(keyword: string): string {
  return Object.hasOwn(VALIDATION_MESSAGES, keyword) ? VALIDATION_MESSAGES[keyword]! : "value does not match the tool schema";
}

/** The agent-facing payload of §6 for an `INVALID_ARGUMENTS` envelope's details. */
export function invalidArgumentsPayload(tool: string, errors: readonly ArgumentError[], truncated: boolean): Record<string, unknown> {
  const list = errors
    .map((e) => ({ path: String(e.path), keyword: String(e.keyword), message: validationMessage(String(e.keyword)) }))
    .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : a.keyword < b.keyword ? -1 : a.keyword > b.keyword ? 1 : 0));
  return { status: "error", tool, code: INVALID_TOOL_ARGUMENTS, errors: list, truncated };
}

/**
 * Check `args` against `tool`'s compiled validator: `null` when they pass,
 * else the `INVALID_ARGUMENTS` envelope. Used by the middleware and by the
 * dispatcher's synchronous fast path.
 */
export function validateArguments(tool: RegisteredTool, id: string | null, args: Record<string, unknown>, start: number): Envelope | null {
  if (typeof args !== "object" || args === null || Array.isArray(args)) {
    return failureEnvelope(
      id,
      tool.name,
      "INVALID_ARGUMENTS",
      "arguments must be a JSON object",
      {
        errors: [{ path: "", keyword: "type", message: "must be object" }],
        truncated: false,
      },
      start,
    );
  }
  const check = tool.validate(args);
  if (check.ok) return null;
  const n = check.errors.length;
  return failureEnvelope(
    id,
    tool.name,
    "INVALID_ARGUMENTS",
    `arguments do not match the tool's parameters (${n}${check.truncated ? "+" : ""} error${n === 1 && !check.truncated ? "" : "s"})`,
    { errors: check.errors, truncated: check.truncated },
    start,
  );
}

/** The schema validation middleware (one shared instance; it has no state). */
const schemaValidationMiddleware: ToolMiddleware = Object.assign(
  (ctx: Parameters<ToolMiddleware>[0], next: Parameters<ToolMiddleware>[1]): Promise<ToolCallOutcome> => {
    const failed = validateArguments(ctx.definition, ctx.toolCallId, ctx.arguments, performance.now());
    if (failed !== null) return Promise.resolve({ envelope: failed, control: "continue" });
    return next(ctx);
  },
  { [VALIDATION_BRAND]: true },
);

/** The schema validation middleware. */
export function schemaValidation(): ToolMiddleware {
  return schemaValidationMiddleware;
}

/** Whether `m` is the schema validation middleware. */
export function isSchemaValidation(m: unknown): boolean {
  return typeof m === "function" && (m as unknown as Record<symbol, unknown>)[VALIDATION_BRAND] === true;
}
