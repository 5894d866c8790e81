/**
 * `agentcore/providers`: model adapters in full: `OpenAIModelAdapter`,
 * `RetryingModelAdapter` and the retry policy, model presets and
 * configuration from the environment, provider errors and their
 * normalisation, the streamed tool-call assembler. The `openai` SDK is
 * imported on the first request of an OpenAI adapter.
 *
 * @module
 */
export { AgentcoreError, isAgentcoreError } from "../core/errors.ts";
export * from "../providers/index.ts";
