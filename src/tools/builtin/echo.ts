/**
 * `echo`: returns its arguments object unchanged as `result`. Read-only; the
 * schema accepts any object. Useful for smoke tests and throughput benchmarks.
 *
 * @module
 */
import type { ToolDefinition } from "../definition.ts";

function echoHandler(args: Record<string, unknown>): Record<string, unknown> {
  return args;
}

/** Create the `echo` tool definition. */
export function createEchoTool(): ToolDefinition {
  return {
    name: "echo",
    description: "Return the arguments object unchanged.",
    parameters: { type: "object" },
    effect: "read_only",
    handler: echoHandler,
  };
}
