/**
 * `agentcore/json`: the strict JSON core (WebAssembly) in full: one-shot
 * `parseStrict` / `validateStrict`, the incremental `JsonStreamValidator`, the
 * limits (defaults and hard caps), and the tool-call shapes (`parseToolCall`,
 * `normalizeToolCall`: AgentCore, OpenAI chat and Responses, Anthropic).
 *
 * @module
 */
export * from "../core/index.ts";
export * from "../core/toolcall.ts";
