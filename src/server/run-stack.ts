/**
 * What only runs need: the agent, the context window rules, the model
 * adapters and the agent builder (and, through them, the tracing API). The
 * daemon loads this module on the first `POST /v1/runs` (or resume), not at
 * start: an idle daemon, or one that only serves `/v1/calls`, never holds it.
 * See {@link loadRunStack} in `run-request.ts`.
 *
 * @module
 */
export { compileOutputSchema } from "../agent/index.ts";
export { budgetForContextWindow, MAX_CONTEXT_WINDOW } from "../context/index.ts";
export { ModelConfigError } from "../providers/config.ts";
export { buildAgent } from "../host/agent.ts";
export { isPresetName, makeModel, ModelSpecError, PRESET_NAMES } from "../host/model.ts";
