/**
 * The conversation as the agent keeps it: chat-shaped messages (assistant
 * messages keep their reported usage) and the metadata of a compaction
 * summary. Context (estimates, compaction), sessions (journal, restore) and
 * the agent all use them, so they live here with the model's message types
 * (issue 14: one-way layers); `src/agent/types.ts` and `src/context/types.ts`
 * re-export them.
 *
 * @module
 */
import type { ImageAttachment } from "./images.ts";
import type { ModelUsage } from "./types.ts";

/** The metadata of a summary message (`_agentcore_summary`). */
export interface SummaryEntry {
  content: string;
  source: string;
  history_start_index: number;
  first_kept_index: number;
  /** Messages folded into this summary, including those of the previous summary. */
  summarized_message_count: number;
  /** Estimated history tokens before the compaction. */
  tokens_before: number;
}

/** A tool result message in the chat wire shape. */
export interface ToolMessage {
  role: "tool";
  tool_call_id: string;
  content: string;
  /**
   * Images the tool returned (an MCP result's image blocks): the model gets
   * them as content parts of a user message after the turn's tool messages.
   */
  images?: ImageAttachment[];
}

/** A conversation message as the agent stores it: assistant messages keep their `usage` when reported. */
export type AgentMessage =
  | { role: "system"; content: string /** Set on compaction summary messages; never sent to a model. */; _agentcore_summary?: SummaryEntry }
  | { role: "user"; content: string /** The task's images, sent as content parts after the text. */; images?: ImageAttachment[] }
  | {
      role: "assistant";
      content: string | null;
      tool_calls?: { id: string; type: "function"; function: { name: string; arguments: string } }[];
      usage?: ModelUsage;
    }
  | ToolMessage;
