/**
 * Context pressure and compaction (harness-contracts §5): token estimates,
 * the budget and policy, compaction preparation, compactors and the request
 * projection that keeps internal metadata away from models.
 *
 * ```ts
 * const policy = new CompactionPolicy(new ContextBudget({ contextWindow: 128_000, reserveTokens: 16_000, keepRecentTokens: 20_000 }));
 * const compactor = new ModelCompactor(model, (req) => [{ role: "user", content: "Summarise: " + JSON.stringify(req.preparation.messages_to_summarize) }]);
 * const agent = createAgent({ model, compaction: { policy, compactor } });
 * ```
 *
 * @module
 */
export * from "./types.ts";
export { estimateContextUsage, estimateTextTokens, heuristicEstimator, isInternalKey, toolsForEstimate } from "./estimate.ts";
export type { EstimatedMessage, TokenEstimator } from "./estimate.ts";
export { CompactionPolicy, ContextBudget, prepareCompaction } from "./policy.ts";
export type { ContextBudgetOptions } from "./policy.ts";
export { budgetForContextWindow, DERIVED_KEEP_RECENT_TOKENS, MAX_CONTEXT_WINDOW, MIN_CONTEXT_WINDOW, reserveTokensFor } from "./window.ts";
export { ModelCompactor } from "./compactor.ts";
export type { CompactionPromptBuilder, Compactor, CompactorOutput } from "./compactor.ts";
export { buildModelContext, summaryMessage, summaryOf, toModelMessage } from "./builder.ts";
