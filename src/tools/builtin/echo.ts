/**
 * `echo`: returns its arguments object unchanged as `result`. Read-only; the
 * schema accepts any object. Useful for smoke tests and throughput benchmarks.
 *
 * @module
 */
import type { ToolDefinition } from "../definition.ts";
import { markTrustedSchema } from "../schema.ts";

/** `echo`'s schema: any object. Frozen, and trusted (see `markTrustedSchema`). */
export const ECHO_PARAMETERS: Readonly<Record<string, unknown>> = Object.freeze({ type: "object" });
markTrustedSchema(ECHO_PARAMETERS);

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
