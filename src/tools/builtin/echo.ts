/**
 * `echo`: returns its arguments object unchanged as `result`. Read-only; the
 * schema accepts any object. Useful for smoke tests and throughput benchmarks.
 *
 * @module
 */
import type { ToolDefinition } from "../definition.ts";
import { ARGUMENTS_OK, type ArgumentValidator, useHandWrittenValidator } from "../schema.ts";

/** `echo`'s schema: any object. Frozen; its identity selects the validator below. */
export const ECHO_PARAMETERS: Readonly<Record<string, unknown>> = Object.freeze({ type: "object" });

// Dispatch only ever validates objects, and {"type":"object"} accepts every object.
const acceptAnyObject: ArgumentValidator = (args) =>
  typeof args === "object" && args !== null && !Array.isArray(args)
    ? ARGUMENTS_OK
    : { ok: false, errors: [{ path: "", keyword: "type", message: "must be object" }], truncated: false };
useHandWrittenValidator(ECHO_PARAMETERS, () => acceptAnyObject);

function echoHandler(args: Record<string, unknown>): Record<string, unknown> {
  return args;
}

/** Create the `echo` tool definition. */
export function createEchoTool(): ToolDefinition {
  return {
    name: "echo",
    description: "Return the arguments object unchanged.",
    parameters: ECHO_PARAMETERS as Record<string, unknown>,
    effect: "read_only",
    handler: echoHandler,
  };
}
