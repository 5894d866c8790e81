/**
 * Public API of the model provider layer.
 *
 * @module
 */
export * from "./types.ts";
export * from "./images.ts";
export {
  DEFAULT_INCLUDE_USAGE,
  DEFAULT_TEMPERATURE,
  DEFAULT_MODEL_TIMEOUT_MS,
  MODEL_ENV_VARS,
  MODEL_PRESETS,
  ModelConfigError,
  modelConfigFromEnv,
  modelConfigFromPreset,
  resolveModelConfig,
  type EnvSource,
  type ModelConfig,
  type ModelConfigInput,
  type ModelConfigOverrides,
  type ModelPreset,
  type ModelPresetName,
} from "./config.ts";
export {
  abortError,
  COMPLETION_FAILED_PREFIX,
  CONTEXT_OVERFLOW_CODES,
  CONTEXT_OVERFLOW_PHRASES,
  isContextOverflow,
  isRetryableModelError,
  normalizeModelError,
  parseRetryAfter,
  retryableModelError,
  STREAM_FAILED_PREFIX,
  type NormalizeOptions,
} from "./errors.ts";
export {
  abortableSleep,
  DEFAULT_BASE_DELAY_MS,
  DEFAULT_MAX_DELAY_MS,
  DEFAULT_MAX_RETRIES,
  DEFAULT_RETRY_AFTER_CAP_MS,
  resolveRetryOptions,
  RetryingModelAdapter,
  retryDelayMs,
  retryingStream,
  type ResolvedRetryOptions,
  type RetryOptions,
} from "./retry.ts";
export { completedToolCall, ToolCallAssembler, type ToolCallFragment, toolCallArguments } from "./toolcalls.ts";
export {
  OPENAI_DEFAULT_BASE_URL,
  OpenAIModelAdapter,
  toModelUsage,
  toWireTools,
  type ChatCompletionBody,
  type OpenAIModelAdapterOptions,
} from "./openai.ts";
export {
  parseScript,
  SCRIPTED_FINISH_REASONS,
  ScriptedModel,
  ScriptError,
  validateScriptedTurn,
  type RecordedRequest,
  type ScriptedFailure,
  type ScriptedFinishReason,
  type ScriptedModelOptions,
  type ScriptedReply,
  type ScriptedStep,
  type ScriptedToolCall,
  type ScriptedTurn,
  type ScriptedUsage,
} from "./scripted.ts";
