/**
 * Token estimates: the replaceable {@link TokenEstimator} with its §5 heuristic,
 * and {@link estimateContextUsage}, which combines the last reported usage with
 * estimates of the messages after it.
 *
 * @module
 */
import type { AgentMessage } from "../providers/messages.ts";
import type { ModelToolSpec } from "../providers/types.ts";
import { INTERNAL_METADATA_PREFIX, type ContextUsageEstimate } from "./types.ts";

/** A message as estimated: an agent message or a request message. */
export type EstimatedMessage = AgentMessage | { readonly role: string; readonly [key: string]: unknown };

/** Estimates tokens of messages and tool lists. Replace it for a real tokenizer. */
export interface TokenEstimator {
  estimateMessage(message: EstimatedMessage): number;
  /** Tools in the OpenAI request shape (see {@link toolsForEstimate}). */
  estimateTools(tools: readonly unknown[]): number;
}

/** Whether a message key is internal (never sent to the model, not counted). */
export function isInternalKey(key: string): boolean {
  return key === "usage" || key.startsWith(INTERNAL_METADATA_PREFIX);
}

/** ceil(ascii / 4 + non_ascii) over code points. */
export function estimateTextTokens(text: string): number {
  let ascii = 0;
  let other = 0;
  for (const ch of text) {
    if (ch.codePointAt(0)! < 128) ascii++;
    else other++;
  }
  return Math.ceil(ascii / 4 + other);
}

/**
 * Tokens counted for one image (its base64 is not text the model reads):
 * OpenAI's figure for a 1024×1024 image at high detail.
 */
export const IMAGE_TOKEN_ESTIMATE = 765;

/** The counted part of a message, and how many images it holds (`images`, or image content parts). */
function visible(message: EstimatedMessage): { value: Record<string, unknown>; images: number } {
  const out: Record<string, unknown> = {};
  let images = 0;
  for (const [k, v] of Object.entries(message)) {
    if (isInternalKey(k)) continue;
    if (k === "images" && Array.isArray(v)) images += v.length;
    else if (k === "content" && Array.isArray(v)) {
      out[k] = v.map((p) => {
        if (typeof p !== "object" || p === null || (p as { type?: unknown }).type !== "image_url") return p;
        images++;
        return { type: "image_url" };
      });
    } else out[k] = v;
  }
  return { value: out, images };
}

/**
 * The §5 heuristic: a message is `4 + ceil(ascii/4 + non_ascii)` over its
 * compact JSON without `usage` and internal keys, plus
 * {@link IMAGE_TOKEN_ESTIMATE} per image (instead of its base64); tools are
 * `8 + estimate(JSON of the list)`, or 0 when there are none.
 */
export const heuristicEstimator: TokenEstimator = Object.freeze({
  estimateMessage(message: EstimatedMessage): number {
    const { value, images } = visible(message);
    return 4 + estimateTextTokens(JSON.stringify(value)) + images * IMAGE_TOKEN_ESTIMATE;
  },
  estimateTools(tools: readonly unknown[]): number {
    if (tools.length === 0) return 0;
    return 8 + estimateTextTokens(JSON.stringify(tools));
  },
});

/** Tool specs in the OpenAI request shape the heuristic counts. */
export function toolsForEstimate(specs: readonly ModelToolSpec[]): unknown[] {
  return specs.map((s) => ({
    type: "function",
    function: { name: s.name, description: s.description, parameters: s.parameters, ...(s.strict ? { strict: true } : {}) },
  }));
}

function reportedTotal(message: EstimatedMessage): number | null {
  if (message.role !== "assistant") return null;
  const usage = (message as { usage?: unknown }).usage;
  if (typeof usage !== "object" || usage === null) return null;
  const t = (usage as { total_tokens?: unknown }).total_tokens;
  return typeof t === "number" && Number.isSafeInteger(t) && t >= 0 ? t : null;
}

/**
 * How full a context is: the last assistant message with reported usage
 * gives `reported`, the messages after it are estimated (`trailing`), and the
 * total is never below the heuristic estimate of the whole context.
 */
export function estimateContextUsage(
  messages: readonly EstimatedMessage[],
  tools: readonly unknown[] = [],
  estimator: TokenEstimator = heuristicEstimator,
): ContextUsageEstimate {
  const per = messages.map((m) => estimator.estimateMessage(m));
  const heuristic = per.reduce((a, b) => a + b, 0) + estimator.estimateTools(tools);
  let last = -1;
  let reported = 0;
  for (let i = messages.length - 1; i >= 0; i--) {
    const r = reportedTotal(messages[i]);
    if (r !== null) {
      last = i;
      reported = r;
      break;
    }
  }
  if (last < 0) {
    return {
      total_tokens: heuristic,
      reported_tokens: 0,
      trailing_tokens: heuristic,
      heuristic_tokens: heuristic,
      last_usage_index: null,
      source: "estimated",
    };
  }
  let trailing = 0;
  for (let i = last + 1; i < per.length; i++) trailing += per[i];
  const total = Math.max(reported + trailing, heuristic);
  const source = trailing === 0 && total === reported ? "reported" : "mixed";
  return {
    total_tokens: total,
    reported_tokens: reported,
    trailing_tokens: trailing,
    heuristic_tokens: heuristic,
    last_usage_index: last,
    source,
  };
}
