/**
 * Projecting the agent's history into what a model sees. The history itself
 * is never changed: `usage` and every `_agentcore_` key stay on the stored
 * messages and are dropped from the request copies.
 *
 * @module
 */
import type { AgentMessage } from "../providers/messages.ts";
import type { ChatMessage } from "../providers/types.ts";
import { isInternalKey } from "./estimate.ts";
import { SUMMARY_HEADER, SUMMARY_METADATA_KEY, type SummaryEntry } from "./types.ts";

/** A frozen request-shaped copy of one message, without `usage` and internal keys. */
export function toModelMessage(m: AgentMessage): ChatMessage {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(m)) {
    if (isInternalKey(k)) continue;
    if (k === "tool_calls" && Array.isArray(v)) {
      out[k] = v.map((c) => Object.freeze({ ...c, function: Object.freeze({ ...c.function }) }));
    } else out[k] = v;
  }
  return Object.freeze(out) as ChatMessage;
}

/** The request messages for a history: `system` first (when given), then the history, then `transient`. */
export function buildModelContext(
  history: readonly AgentMessage[],
  options: { system?: ChatMessage | null; transient?: readonly ChatMessage[] } = {},
): ChatMessage[] {
  const out: ChatMessage[] = [];
  if (options.system) out.push(options.system);
  for (const m of history) out.push(toModelMessage(m));
  if (options.transient) out.push(...options.transient);
  return out;
}

/** The summary entry of a message, when it is a valid summary message. */
export function summaryOf(m: AgentMessage): SummaryEntry | null {
  if (m.role !== "system") return null;
  const s = (m as Record<string, unknown>)[SUMMARY_METADATA_KEY];
  if (typeof s !== "object" || s === null) return null;
  const e = s as Partial<SummaryEntry>;
  if (typeof e.content !== "string" || typeof e.source !== "string" || typeof e.summarized_message_count !== "number") return null;
  return e as SummaryEntry;
}

/** The summary system message for an entry. */
export function summaryMessage(entry: SummaryEntry): AgentMessage {
  return { role: "system", content: `${SUMMARY_HEADER}\n\n${entry.content}`, [SUMMARY_METADATA_KEY]: { ...entry } } as AgentMessage;
}
