/**
 * `agentcore/testing`: test agents without a network or an API key.
 *
 * - `ScriptedModel`: a `ModelAdapter` that answers from a script of turns
 *   (text, tool calls, usage, failures), recording every request; in code a
 *   turn may be a `ScriptedStep`, a function of the request that gives the
 *   turn when it arrives (to hold it behind a gate);
 *   `parseScript` reads a JSONL script (the CLI's `--script`).
 * - `startOpenAIServer`: a scripted OpenAI-compatible HTTP server on
 *   127.0.0.1, to test `OpenAIModelAdapter` or any client end to end, with
 *   the reply helpers `textReply`, `chunk`, `toolChunk`, `usageChunk`,
 *   `errorBody`, `sseBytes`, `splitBytes`.
 *
 * @example
 * ```ts
 * import { createAgent } from "agentcore";
 * import { ScriptedModel } from "agentcore/testing";
 *
 * const model = new ScriptedModel([
 *   { content: null, tool_calls: [{ id: "c1", name: "echo", arguments: '{"message":"hi"}' }] },
 *   { content: "done" },
 * ]);
 * const agent = createAgent({ model });
 * console.log((await agent.run("echo hi")).output); // done
 * console.log(model.requests.length); // 2
 * ```
 *
 * @module
 */
export { AgentcoreError, isAgentcoreError } from "../core/errors.ts";
export { parseScript, ScriptError, ScriptedModel, SCRIPTED_FINISH_REASONS, validateScriptedTurn } from "../providers/scripted.ts";
export type {
  RecordedRequest,
  ScriptedFailure,
  ScriptedFinishReason,
  ScriptedModelOptions,
  ScriptedReply,
  ScriptedStep,
  ScriptedToolCall,
  ScriptedTurn,
  ScriptedUsage,
} from "../providers/scripted.ts";
export {
  chunk,
  errorBody,
  splitBytes,
  sseBytes,
  startOpenAIServer,
  textReply,
  toolChunk,
  usageChunk,
} from "../providers/scripted-server.ts";
export type {
  Chunk,
  RawPiece,
  RecordedHttpRequest,
  Reply as ServerReply,
  ScriptedOpenAIServer,
  ScriptedReply as ScriptedServerReply,
} from "../providers/scripted-server.ts";
