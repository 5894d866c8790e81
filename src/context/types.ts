/**
 * Wire enums and records of context pressure and compaction
 * (harness-contracts §2 and §5).
 *
 * @module
 */
import type { AgentMessage, SummaryEntry } from "../providers/messages.ts";

export type { SummaryEntry } from "../providers/messages.ts";

/** Prefix of metadata keys the agent keeps on messages but never sends to a model. */
export const INTERNAL_METADATA_PREFIX = "_agentcore_";
/** Key of the summary metadata on a compaction summary message. */
export const SUMMARY_METADATA_KEY = "_agentcore_summary";
/** First line of every compaction summary message (followed by a blank line and the summary). */
export const SUMMARY_HEADER = "Summary of the earlier conversation, written when it was compacted:";

export type CompactionStatus = "completed" | "skipped" | "failed" | "cancelled";
export const COMPACTION_STATUSES: readonly CompactionStatus[] = ["completed", "skipped", "failed", "cancelled"];
export type CompactionTrigger = "explicit" | "pressure" | "overflow";
export const COMPACTION_TRIGGERS: readonly CompactionTrigger[] = ["explicit", "pressure", "overflow"];
export type CompactionDecisionReason = "disabled" | "below_threshold" | "threshold_reached";
export const COMPACTION_DECISION_REASONS: readonly CompactionDecisionReason[] = ["disabled", "below_threshold", "threshold_reached"];
export type ContextUsageSource = "estimated" | "reported" | "mixed";
export const CONTEXT_USAGE_SOURCES: readonly ContextUsageSource[] = ["estimated", "reported", "mixed"];

/** How full a context is, from reported usage and/or the estimator. */
export interface ContextUsageEstimate {
  /** max(reported + trailing, heuristic). */
  total_tokens: number;
  /** The last reported request's total_tokens (0 when none). */
  reported_tokens: number;
  /** Estimated tokens of the messages after the last reported usage. */
  trailing_tokens: number;
  /** Estimate of the whole context (messages + tools). */
  heuristic_tokens: number;
  /** Index of the assistant message whose usage was used, or null. */
  last_usage_index: number | null;
  source: ContextUsageSource;
}

/** What {@link CompactionPolicy.evaluate} decides. */
export interface CompactionDecision {
  should_compact: boolean;
  reason: CompactionDecisionReason;
  total_tokens: number;
  threshold_tokens: number;
  context_window: number;
  /** total_tokens / threshold_tokens. */
  pressure_ratio: number;
  source: ContextUsageSource;
  reported_tokens: number;
  trailing_tokens: number;
  heuristic_tokens: number;
  last_usage_index: number | null;
}

/** The history split into protected / summarised / kept messages (deep copies). */
export interface CompactionPreparation {
  protected_messages: AgentMessage[];
  messages_to_summarize: AgentMessage[];
  messages_to_keep: AgentMessage[];
  history_start_index: number;
  first_kept_index: number;
  estimated_history_tokens: number;
  estimated_summarized_tokens: number;
  estimated_kept_tokens: number;
  /** Whether anything would be summarised. */
  can_compact: boolean;
}

/** What a compactor is asked to summarise. */
export interface CompactionRequest {
  operation_id: string;
  trigger: CompactionTrigger;
  preparation: CompactionPreparation;
  /** The summary already in the protected messages, if any (to fold into the new one). */
  previous_summary: SummaryEntry | null;
}

/** The outcome of one compaction. */
export interface CompactionResult {
  operation_id: string;
  trigger: CompactionTrigger;
  status: CompactionStatus;
  /** The new summary (completed only). */
  summary: SummaryEntry | null;
  /** Messages in the history before and after (after = before unless completed). */
  messages_before: number;
  messages_after: number;
  /** Why it failed or was cancelled. */
  error: string | null;
}
