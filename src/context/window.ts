/**
 * The budget derived from a model's context window alone: the rule behind
 * `agentcore agent --context-window N`, `chat --context-window N` and the
 * daemon's short `compaction: {context_window: N}`.
 *
 * @module
 */
import type { ContextBudgetOptions } from "./policy.ts";

/** The smallest context window the derived budget accepts, in tokens. */
export const MIN_CONTEXT_WINDOW = 1024;

/** The largest context window accepted, in tokens. */
export const MAX_CONTEXT_WINDOW = 100_000_000;

/** The tokens kept free for the answer in a window of `contextWindow`: a quarter of it. */
export function reserveTokensFor(contextWindow: number): number {
  return Math.floor(contextWindow / 4);
}

/**
 * Tokens of recent history a derived budget keeps verbatim: 1, so a
 * compaction summarises every turn but the latest (whole turns are kept, and
 * the latest one always is).
 */
export const DERIVED_KEEP_RECENT_TOKENS = 1;

/**
 * The budget for a model with a `contextWindow`-token window: a quarter kept
 * free for the answer (so compaction is due at three quarters), and every turn
 * but the latest summarised when it is. Throws RangeError (the message says
 * what is wrong, without a field name, for callers to prefix) for a window
 * that is not an integer from {@link MIN_CONTEXT_WINDOW} to
 * {@link MAX_CONTEXT_WINDOW}.
 */
export function budgetForContextWindow(contextWindow: number): ContextBudgetOptions {
  if (typeof contextWindow !== "number" || !Number.isSafeInteger(contextWindow)) {
    throw new RangeError(`must be an integer number of tokens, got ${String(contextWindow)}`);
  }
  if (contextWindow < MIN_CONTEXT_WINDOW) throw new RangeError(`must be at least ${MIN_CONTEXT_WINDOW} tokens, got ${contextWindow}`);
  if (contextWindow > MAX_CONTEXT_WINDOW) throw new RangeError(`must be at most ${MAX_CONTEXT_WINDOW} tokens, got ${contextWindow}`);
  return { contextWindow, reserveTokens: reserveTokensFor(contextWindow), keepRecentTokens: DERIVED_KEEP_RECENT_TOKENS };
}
