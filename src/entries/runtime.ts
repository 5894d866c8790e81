/**
 * `agentcore/runtime`: dispatch of one tool call: `createRuntime`, the result
 * envelopes and error codes, the middleware chain (schema validation, policy,
 * approval, history), logging and the call history log.
 *
 * @module
 */
export { AgentcoreError, isAgentcoreError } from "../core/errors.ts";
export * from "../runtime/index.ts";
export * from "../runtime/middleware/index.ts";
