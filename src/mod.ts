/**
 * agentcore: what an application needs to build and run agents.
 *
 * - Strict JSON core (WebAssembly): `parseStrict`, `validateStrict`,
 *   `JsonStreamValidator`, `parseToolCall`, `normalizeToolCall`.
 * - Tools and dispatch: `ToolRegistry`, `ToolError`, `toolOutcome`,
 *   `createRuntime`, `serializeEnvelope`, `createLogger`, `ruleBasedPolicy`.
 * - Models: `OpenAIModelAdapter` (any OpenAI-compatible endpoint; the `openai`
 *   SDK is imported on the first request), `modelConfigFromEnv`, the
 *   `ModelAdapter` contract, `ModelProviderError`.
 * - Agents: `createAgent`, `Agent`, its events and results; planning
 *   (`createPlanTool`, `PLAN_PROMPT`); compaction (`CompactionPolicy`,
 *   `ModelCompactor`).
 * - Sessions: `SessionRecorder`, `JsonlSessionStorage`,
 *   `MemorySessionStorage`, `restoreSession`.
 * - Errors: `AgentcoreError`, the base class of every error agentcore throws,
 *   with a stable `code`.
 *
 * Everything else is a subpath (see docs/library.md): `agentcore/testing`
 * (`ScriptedModel`, a scripted OpenAI-compatible server), `agentcore/workspace`
 * (list_dir, glob, grep, git_diff, write_file, apply_patch, exec),
 * `agentcore/skills`, `agentcore/mcp`, `agentcore/server` (the daemon),
 * `agentcore/session`, `agentcore/agent`, `agentcore/context`,
 * `agentcore/providers`, `agentcore/runtime`, `agentcore/tools`,
 * `agentcore/json`.
 *
 * Importing this entry loads none of Hono, the MCP SDKs, `openai` or `yaml`
 * (test/package/entry.test.ts checks it).
 *
 * @example
 * ```ts
 * import { createAgent, createRuntime } from "agentcore";
 * import { ScriptedModel } from "agentcore/testing";
 *
 * const agent = createAgent({ model: new ScriptedModel([{ content: "hello" }]), runtime: createRuntime() });
 * const result = await agent.run("say hello");
 * console.log(result.status, result.output); // completed hello
 * await agent.shutdown();
 * ```
 *
 * @module
 */

// Errors: every error agentcore throws is an AgentcoreError with a stable `code` (docs/errors.md).
export { AgentcoreError } from "./core/errors.ts";

// The strict JSON core and tool-call shapes.
export { JsonStreamValidator, parseStrict, validateStrict } from "./core/index.ts";
export type { JsonError, JsonLimits, ParseResult } from "./core/index.ts";
export { normalizeToolCall, parseToolCall } from "./core/toolcall.ts";
export type { ToolCall, ToolCallParseResult } from "./core/toolcall.ts";

// Tools.
export { ToolError, ToolRegistry, toolOutcome } from "./tools/index.ts";
export type { JsonSchema, ToolContext, ToolDefinition, ToolOutcome } from "./tools/index.ts";

// Dispatch: the runtime, envelopes, logging, policy.
export { createLogger, createRuntime, ERROR_CODES, serializeEnvelope } from "./runtime/index.ts";
export type { Envelope, EnvelopeError, ErrorCode, Logger, LogLevel, Runtime, RuntimeOptions } from "./runtime/index.ts";
export { ruleBasedPolicy } from "./runtime/middleware/index.ts";
export type {
  RuleBasedPolicyOptions,
  ToolApprovalDecision,
  ToolApprovalRequest,
  ToolApprover,
  ToolMiddleware,
  ToolPolicyRule,
} from "./runtime/middleware/index.ts";

// Models.
export { ModelProviderError, modelConfigFromEnv, OpenAIModelAdapter } from "./providers/index.ts";
export { imageFromBytes, imageFromDataUrl, ImageInputError } from "./providers/index.ts";
export type { ImageAttachment, ImageInput } from "./providers/index.ts";
export type {
  AssistantMessage,
  ChatMessage,
  ModelAdapter,
  ModelConfig,
  ModelConfigInput,
  ModelRequest,
  ModelResponse,
  ModelStreamEvent,
  ModelToolCall,
  ModelUsage,
  OpenAIModelAdapterOptions,
} from "./providers/index.ts";

// Agents.
export { Agent, AgentRunError, createAgent } from "./agent/index.ts";
export type {
  AgentEvent,
  AgentEventSink,
  AgentEventSource,
  AgentMessage,
  AgentOptions,
  AgentRunResult,
  AgentStatus,
  CompactionOptions,
  RunStatus,
  RuntimePolicyOptions,
  StopReason,
  TracingOptions,
} from "./agent/index.ts";
export { createPlanTool, PLAN_PROMPT } from "./agent/plan.ts";
export { CompactionPolicy, ModelCompactor } from "./context/index.ts";
export type { CompactionResult, Compactor } from "./context/index.ts";

// Sessions.
export { JsonlSessionStorage, MemorySessionStorage, restoreSession, SessionRecorder } from "./session/index.ts";
export { loadSessionImages, SessionBlobError } from "./session/index.ts";
export type { SessionCheckout, SessionRecord } from "./session/index.ts";

export { VERSION } from "./core/version.ts";
