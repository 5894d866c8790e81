/**
 * The context budget, the compaction policy and {@link prepareCompaction}
 * (harness-contracts §5).
 *
 * @module
 */
import type { AgentMessage } from "../providers/messages.ts";
import { heuristicEstimator, type TokenEstimator } from "./estimate.ts";
import type { CompactionDecision, CompactionPreparation, ContextUsageEstimate } from "./types.ts";

/** Options of {@link ContextBudget}. */
export interface ContextBudgetOptions {
  /** The model's context window, in tokens (> 0). */
  contextWindow: number;
  /** Tokens kept free for the answer (>= 0, < contextWindow). Compaction starts at `contextWindow - reserveTokens`. */
  reserveTokens: number;
  /** Recent history (whole turns) kept verbatim by a compaction (> 0, <= the threshold). */
  keepRecentTokens: number;
}

function int(name: string, v: unknown): number {
  if (typeof v !== "number") throw new TypeError(`ContextBudget: ${name} must be an integer, got ${v === null ? "null" : typeof v}`);
  if (!Number.isSafeInteger(v)) throw new RangeError(`ContextBudget: ${name} must be an integer, got ${v}`);
  return v;
}

/** A validated, immutable token budget. Throws TypeError/RangeError naming the field. */
export class ContextBudget {
  readonly contextWindow: number;
  readonly reserveTokens: number;
  readonly keepRecentTokens: number;

  constructor(options: ContextBudgetOptions) {
    if (typeof options !== "object" || options === null) throw new TypeError("ContextBudget: options must be an object");
    const w = int("contextWindow", options.contextWindow);
    const r = int("reserveTokens", options.reserveTokens);
    const k = int("keepRecentTokens", options.keepRecentTokens);
    if (w <= 0) throw new RangeError(`ContextBudget: contextWindow must be > 0, got ${w}`);
    if (r < 0 || r >= w) throw new RangeError(`ContextBudget: reserveTokens must be >= 0 and < contextWindow (${w}), got ${r}`);
    if (k <= 0 || k > w - r) throw new RangeError(`ContextBudget: keepRecentTokens must be > 0 and <= the threshold (${w - r}), got ${k}`);
    this.contextWindow = w;
    this.reserveTokens = r;
    this.keepRecentTokens = k;
    Object.freeze(this);
  }

  /** `contextWindow - reserveTokens`: the total at which compaction is due. */
  get thresholdTokens(): number {
    return this.contextWindow - this.reserveTokens;
  }
}

/** Decides when the context is under pressure, and prepares compactions. */
export class CompactionPolicy {
  readonly budget: ContextBudget;
  readonly enabled: boolean;
  readonly estimator: TokenEstimator;

  constructor(budget: ContextBudget | ContextBudgetOptions, enabled = true, estimator: TokenEstimator = heuristicEstimator) {
    this.budget = budget instanceof ContextBudget ? budget : new ContextBudget(budget);
    if (typeof enabled !== "boolean") throw new TypeError("CompactionPolicy: enabled must be a boolean");
    if (typeof estimator?.estimateMessage !== "function" || typeof estimator.estimateTools !== "function") {
      throw new TypeError("CompactionPolicy: estimator must have estimateMessage() and estimateTools()");
    }
    this.enabled = enabled;
    this.estimator = estimator;
  }

  evaluate(estimate: ContextUsageEstimate): CompactionDecision {
    const threshold = this.budget.thresholdTokens;
    const total = estimate.total_tokens;
    const should = this.enabled && total >= threshold;
    return {
      should_compact: should,
      reason: !this.enabled ? "disabled" : should ? "threshold_reached" : "below_threshold",
      total_tokens: total,
      threshold_tokens: threshold,
      context_window: this.budget.contextWindow,
      pressure_ratio: total / threshold,
      source: estimate.source,
      reported_tokens: estimate.reported_tokens,
      trailing_tokens: estimate.trailing_tokens,
      heuristic_tokens: estimate.heuristic_tokens,
      last_usage_index: estimate.last_usage_index,
    };
  }

  /** {@link prepareCompaction} with this budget's `keepRecentTokens` and this estimator. */
  prepare(messages: readonly AgentMessage[]): CompactionPreparation {
    return prepareCompaction(messages, this.budget.keepRecentTokens, this.estimator);
  }
}

const CONVERSATION_ROLES = new Set(["user", "assistant", "tool"]);

/**
 * Split a history into protected / summarise / keep (deep copies), cutting
 * only before user messages so tool calls never lose their results:
 * protected = the leading system messages (and everything up to the last
 * later non-conversation message); kept = whole turns from the end until
 * `keepRecentTokens` is reached (the last turn always); the rest is summarised.
 */
export function prepareCompaction(
  messages: readonly AgentMessage[],
  keepRecentTokens: number,
  estimator: TokenEstimator = heuristicEstimator,
): CompactionPreparation {
  const msgs = structuredClone([...messages]) as AgentMessage[];
  let start = 0;
  while (start < msgs.length && msgs[start].role === "system") start++;
  for (let i = start; i < msgs.length; i++) if (!CONVERSATION_ROLES.has(msgs[i].role)) start = i + 1;
  const starts: number[] = [];
  if (start < msgs.length) {
    starts.push(start);
    for (let i = start + 1; i < msgs.length; i++) if (msgs[i].role === "user") starts.push(i);
  }
  if (starts.length === 0) {
    return {
      protected_messages: msgs,
      messages_to_summarize: [],
      messages_to_keep: [],
      history_start_index: msgs.length,
      first_kept_index: msgs.length,
      estimated_history_tokens: 0,
      estimated_summarized_tokens: 0,
      estimated_kept_tokens: 0,
      can_compact: false,
    };
  }
  const turnTokens = starts.map((s, k) => {
    const end = k + 1 < starts.length ? starts[k + 1] : msgs.length;
    let t = 0;
    for (let i = s; i < end; i++) t += estimator.estimateMessage(msgs[i]);
    return t;
  });
  let kept = starts.length - 1;
  let tokens = turnTokens[kept];
  while (kept > 0 && tokens < keepRecentTokens) {
    kept--;
    tokens += turnTokens[kept];
  }
  const firstKept = starts[kept];
  const history = turnTokens.reduce((a, b) => a + b, 0);
  const summarized = turnTokens.slice(0, kept).reduce((a, b) => a + b, 0);
  const toSummarize = msgs.slice(start, firstKept);
  return {
    protected_messages: msgs.slice(0, start),
    messages_to_summarize: toSummarize,
    messages_to_keep: msgs.slice(firstKept),
    history_start_index: start,
    first_kept_index: firstKept,
    estimated_history_tokens: history,
    estimated_summarized_tokens: summarized,
    estimated_kept_tokens: history - summarized,
    can_compact: toSummarize.length > 0,
  };
}
