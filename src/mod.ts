/**
 * agentcore: the public library API.
 *
 * - Strict JSON core (WebAssembly): `parseStrict`, `validateStrict`,
 *   `JsonStreamValidator`, `parseToolCall`, `normalizeToolCall`.
 * - Tools: `ToolRegistry`, `ToolError`, the built-in `echo` and `read_file`;
 *   the opt-in workspace tools (`workspaceTools`: list_dir, glob, grep,
 *   git_diff, write_file, apply_patch, exec).
 * - Dispatch: `createRuntime`, `serializeEnvelope`, `createLogger`.
 * - Models: `OpenAIModelAdapter`, `ScriptedModel`, `modelConfigFromEnv`, the
 *   `ModelAdapter` contract.
 * - Agents: `createAgent`, events, run control, `toolOutcome` for tool controls.
 * - Planning: `createPlanTool` (the `update_plan` tool), `PLAN_PROMPT`,
 *   `planFromMessages`, `renderPlan`.
 * - Skills: `discoverSkills`, `SkillCatalog`, the index and active-skill messages.
 * - MCP: `attachMcpServers` / `McpToolHandler` (MCP servers' tools as agentcore
 *   tools), `createMcpServer` (agentcore's tools served over MCP).
 * - Daemon: `createApp` (the Hono app of `agentcore serve`), `startDaemon`,
 *   `ApprovalQueue`, `generateToken` / `loadOrCreateToken`, `hostOriginGuard`.
 *
 * @example
 * ```ts
 * import { createRuntime, serializeEnvelope } from "./src/mod.ts";
 * const rt = createRuntime();
 * const env = await rt.dispatch('{"id":"c1","tool":"echo","arguments":{"hi":1}}');
 * console.log(serializeEnvelope(env));
 * ```
 *
 * @module
 */
export * from "./core/index.ts";
export * from "./core/toolcall.ts";
export * from "./tools/index.ts";
export * from "./tools/workspace/index.ts";
export * from "./runtime/index.ts";
export * from "./providers/index.ts";
export * from "./agent/index.ts";
export * from "./agent/plan.ts";
export type { Envelope, EnvelopeError, ErrorCode } from "./runtime/envelope.ts";
export { VERSION } from "./version.ts";
export * from "./middleware/index.ts";
export * from "./context/index.ts";
export * from "./session/index.ts";
export * from "./skills/index.ts";
export * from "./mcp/index.ts";
export * from "./server/index.ts";
