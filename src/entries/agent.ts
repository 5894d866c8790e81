/**
 * `agentcore/agent`: the agent in full. Beyond `createAgent` of the main
 * entry: run control (steering, follow-ups, continue, abort), the event kinds
 * and their payloads, usage accounting, behaviour hooks, and the `update_plan`
 * tool's helpers (`planFromMessages`, `renderPlan`, `checkPlan`).
 *
 * @module
 */
export { AgentcoreError, isAgentcoreError } from "../core/errors.ts";
export * from "../agent/index.ts";
export * from "../agent/plan.ts";
