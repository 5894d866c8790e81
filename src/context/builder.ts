/**
 * Projecting the agent's history into what a model sees. The history itself
 * is never changed: `usage` and every `_agentcore_` key stay on the stored
 * messages and are dropped from the request copies.
 *
 * @module
 */
import { type ImageAttachment, imageContentPart } from "../providers/images.ts";
import type { AgentMessage } from "../providers/messages.ts";
import type { ChatMessage } from "../providers/types.ts";
import { isInternalKey } from "./estimate.ts";
import { SUMMARY_HEADER, SUMMARY_METADATA_KEY, type SummaryEntry } from "./types.ts";

/** The images of request tool messages (a tool message's content takes only text: they follow as a user message). */
const toolImages = new WeakMap<object, readonly ImageAttachment[]>();

/**
 * A frozen request-shaped copy of one message, without `usage` and internal
 * keys. A user message's `images` become content parts after its text; a
 * tool message's are remembered for {@link withToolImages}.
 */
export function toModelMessage(m: AgentMessage): ChatMessage {
  const out: Record<string, unknown> = {};
  const src = m as unknown as Record<string, unknown>;
  // Once per message added to the history: a plain key loop (no entry pairs).
  for (const k of Object.keys(src)) {
    if (k === "images" || isInternalKey(k)) continue;
    const v = src[k];
    if (k === "tool_calls" && Array.isArray(v)) out[k] = v.map(frozenCall);
    else out[k] = v;
  }
  const images = (m as { images?: ImageAttachment[] }).images;
  if (Array.isArray(images) && images.length > 0) {
    if (m.role === "user") {
      out.content = Object.freeze([
        Object.freeze({ type: "text", text: m.content }),
        ...images.map((a) => Object.freeze(imageContentPart(a))),
      ]);
    } else if (m.role === "tool") {
      images.forEach(imageContentPart); // the bytes must be there now, not at the next request
      const frozen = Object.freeze(out) as ChatMessage;
      toolImages.set(frozen, images);
      return frozen;
    }
  }
  return Object.freeze(out) as ChatMessage;
}

/** A frozen copy of a request tool call (its `function` too); a call that is frozen already, itself. */
function frozenCall(c: { function?: unknown }): unknown {
  if (Object.isFrozen(c) && Object.isFrozen(c.function)) return c;
  return Object.freeze({ ...c, function: Object.freeze({ ...(c.function as object) }) });
}

/**
 * `context` with the images of its tool messages put where a model takes
 * them: one user message of content parts after each run of tool messages
 * (tool messages must follow their assistant message unbroken), a text part
 * naming the call before each call's images. Returns `context` itself when
 * no tool message has images.
 */
export function withToolImages(context: ChatMessage[]): ChatMessage[] {
  let out: ChatMessage[] | null = null;
  let parts: ({ type: "text"; text: string } | { type: "image_url"; image_url: { url: string } })[] = [];
  for (let i = 0; i < context.length; i++) {
    const m = context[i]!;
    const images = m.role === "tool" ? toolImages.get(m) : undefined;
    if (images !== undefined) {
      out ??= context.slice(0, i);
      parts.push({
        type: "text",
        text: `The result of tool call ${(m as { tool_call_id: string }).tool_call_id} holds ${images.length} image(s):`,
      });
      for (const a of images) parts.push(imageContentPart(a));
    }
    if (out !== null) out.push(m);
    if (parts.length > 0 && context[i + 1]?.role !== "tool") {
      out!.push({ role: "user", content: parts });
      parts = [];
    }
  }
  return out ?? context;
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
  return withToolImages(out);
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
