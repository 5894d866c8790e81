/**
 * The agent's conversation: the history, and its request-shaped twin that
 * each model request carries, kept in step as the history grows; with what
 * the agent reads from a history (the calls a suspended turn left without an
 * answer, whether every call has its answer) and the notes of explicit-finish
 * mode.
 *
 * @module
 */
import { toModelMessage } from "../context/builder.ts";
import type { EstimatedMessage } from "../context/estimate.ts";
import type { ChatMessage } from "../providers/types.ts";
import type { AgentMessage } from "./types.ts";

/**
 * The history and its request context: the system message (when there is
 * one) followed by each history message in request shape (frozen, no
 * `usage`). The request grows in place, and a request without request-only
 * additions carries that array itself (see `request()`).
 */
export class Conversation {
  #messages: AgentMessage[] = [];
  #request: ChatMessage[];
  /** Messages before the history in `#request`: 1 with a system message, else 0. */
  #base = 0;
  /** Tool messages of the history with images (requests then carry them as a user message after the tool messages). */
  #toolImages = 0;
  /** Bumped on every history change (to detect changes during a compaction). */
  #version = 0;

  constructor(readonly system: ChatMessage | null) {
    this.#request = this.#emptyRequest();
  }

  /** The history itself (not a copy). */
  get messages(): AgentMessage[] {
    return this.#messages;
  }

  get version(): number {
    return this.#version;
  }

  /** How many tool messages of the history carry images. */
  get toolImages(): number {
    return this.#toolImages;
  }

  /** Empty the history. */
  clear(): void {
    this.#messages = [];
    this.#request = this.#emptyRequest();
    this.#toolImages = 0;
    this.#version++;
  }

  /** Add a message to the conversation (and its frozen request-shaped twin). */
  append(m: AgentMessage): void {
    if (m.role === "tool" && m.images !== undefined && m.images.length > 0) this.#toolImages++;
    this.#checkRequest();
    this.#messages.push(m);
    this.#request.push(toModelMessage(m));
    this.#version++;
  }

  /** Replace the whole history at once (a completed compaction). */
  replace(messages: AgentMessage[]): void {
    this.#toolImages = messages.filter((m) => m.role === "tool" && m.images !== undefined && m.images.length > 0).length;
    this.#messages = messages;
    this.#request = this.#emptyRequest();
    for (const m of messages) this.#request.push(toModelMessage(m));
    this.#version++;
  }

  /** The request context in step with the history: the array itself, not a copy (see the class). */
  request(): ChatMessage[] {
    this.#checkRequest();
    return this.#request;
  }

  /**
   * A request context with each of the history's request copies (the
   * `request()` objects themselves, in order; other messages, such as the
   * skill messages, may sit between them) replaced by its stored message,
   * whose reported usage counts for an estimate.
   */
  estimated(messages: readonly ChatMessage[]): EstimatedMessage[] {
    const estimated: EstimatedMessage[] = messages.slice();
    const wire = this.#request;
    const base = this.#base;
    for (let i = 0, j = 0; i < estimated.length && base + j < wire.length; i++) {
      if (estimated[i] === wire[base + j]) estimated[i] = this.#messages[j++];
    }
    return estimated;
  }

  /** A request context with no history: the system message, if any. */
  #emptyRequest(): ChatMessage[] {
    const out = this.system === null ? [] : [this.system];
    this.#base = out.length;
    return out;
  }

  /**
   * The request array goes to the model as it is, and an adapter must not
   * change it (ModelRequest.messages). Should one have added or removed
   * messages anyway, the next request is rebuilt from the history, which the
   * adapter never sees.
   */
  #checkRequest(): void {
    const r = this.#request;
    if (r.length === this.#base + this.#messages.length && (this.#base === 0 || r[0] === this.system)) return;
    this.#request = this.#emptyRequest();
    for (const m of this.#messages) this.#request.push(toModelMessage(m));
  }
}

/** The system note of explicit-finish mode. */
export const EXPLICIT_FINISH_NOTE = "This run ends only when you call a tool that finishes it. A reply in plain text does not end the run.";

/** The request-only note after a plain-text reply in explicit-finish mode (`attempt` of `max`). */
export function retryNote(attempt: number, max: number): string {
  const base = "Your previous reply was plain text, which does not finish this run. Call the tool that completes the task.";
  return attempt >= 2 ? `Retry ${attempt}/${max}: ${base}` : base;
}

/** The calls of the last assistant message with tool calls that no later tool message answers. */
export function unansweredCalls(messages: readonly AgentMessage[]): { id: string; name: string; arguments: string }[] {
  let last = -1;
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role === "assistant" && Array.isArray(m.tool_calls) && m.tool_calls.length > 0) {
      last = i;
      break;
    }
  }
  if (last < 0) return [];
  const answered = new Set<string>();
  for (const m of messages.slice(last + 1)) if (m.role === "tool") answered.add(m.tool_call_id);
  const calls = (messages[last] as { tool_calls: { id: string; function: { name: string; arguments: string } }[] }).tool_calls;
  return calls
    .filter((c) => typeof c?.id === "string" && !answered.has(c.id))
    .map((c) => ({ id: c.id, name: String(c.function?.name ?? ""), arguments: String(c.function?.arguments ?? "") }));
}

/** Every assistant tool call id has a later tool message. */
export function toolStateComplete(messages: readonly AgentMessage[]): boolean {
  const open = new Set<string>();
  for (const m of messages) {
    if (m.role === "assistant" && m.tool_calls !== undefined) {
      if (!Array.isArray(m.tool_calls)) return false;
      for (const c of m.tool_calls) {
        if (typeof c?.id !== "string") return false;
        open.add(c.id);
      }
    } else if (m.role === "tool") {
      open.delete(m.tool_call_id);
    }
  }
  return open.size === 0;
}
