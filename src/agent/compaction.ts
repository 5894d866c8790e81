/**
 * Compaction for the agent: the `compaction` option, and one compaction over
 * a history the caller owns (the Agent passes its own through
 * {@link CompactionHistory}). The run loop reaches this only through the
 * `compact` hook.
 *
 * @module
 */
import { AgentcoreError } from "../core/errors.ts";
import { summaryMessage, summaryOf } from "../context/builder.ts";
import type { Compactor } from "../context/compactor.ts";
import type { CompactionPolicy } from "../context/policy.ts";
import type { CompactionPreparation, CompactionRequest, CompactionResult, CompactionTrigger, SummaryEntry } from "../context/types.ts";
import { type EventEmitter, randomHex } from "./events.ts";
import { raceAbort } from "./loop.ts";
import { AgentCancelledError } from "./tools.ts";
import type { AgentMessage } from "./types.ts";

/** The history a compaction reads and replaces. */
export interface CompactionHistory {
  messages(): readonly AgentMessage[];
  /** Bumped on every change (a change during the compaction makes it fail). */
  version(): number;
  /** Replace the whole history at once. */
  replace(messages: AgentMessage[]): void;
  emit: EventEmitter["emit"];
}

/** Automatic compaction during runs (all default to on; `maxOverflowRetries` is 0 or 1, default 1). */
export interface AutoCompactionOptions {
  enabled?: boolean;
  /** Compact before a model request when the policy reports pressure. */
  compactOnPressure?: boolean;
  /** Compact and retry once when the model reports a context overflow before any delta. */
  recoverOnOverflow?: boolean;
  maxOverflowRetries?: number;
}

/**
 * Context pressure and compaction. With a policy alone, pressure is only
 * observed (`context_pressure_evaluated` events). With a compactor too,
 * `compact()` works and automatic compaction is on unless `auto.enabled` is false.
 */
export interface CompactionOptions {
  policy: CompactionPolicy;
  compactor?: Compactor;
  auto?: AutoCompactionOptions;
}

/** Compaction options after checking. */
export interface ResolvedCompaction {
  policy: CompactionPolicy;
  compactor: Compactor | undefined;
  auto: Readonly<Required<AutoCompactionOptions>>;
}

/** Check the `compaction` option of `createAgent` (null when absent). */
export function resolveCompaction(c: CompactionOptions | undefined): ResolvedCompaction | null {
  if (c === undefined) return null;
  if (typeof c !== "object" || c === null) throw new TypeError("createAgent: compaction must be an object");
  const policy = c.policy;
  if (typeof policy?.evaluate !== "function" || typeof policy.prepare !== "function")
    throw new TypeError("createAgent: compaction.policy must be a CompactionPolicy");
  if (c.compactor !== undefined && typeof c.compactor?.compact !== "function")
    throw new TypeError("createAgent: compaction.compactor must have a compact() method");
  const a = c.auto ?? {};
  for (const k of ["enabled", "compactOnPressure", "recoverOnOverflow"] as const) {
    if (a[k] !== undefined && typeof a[k] !== "boolean") throw new TypeError(`createAgent: compaction.auto.${k} must be a boolean`);
  }
  if (a.enabled === true && c.compactor === undefined)
    throw new TypeError("createAgent: compaction.auto.enabled needs compaction.compactor");
  const retries = a.maxOverflowRetries ?? 1;
  if (retries !== 0 && retries !== 1)
    throw new RangeError(`createAgent: compaction.auto.maxOverflowRetries must be 0 or 1, got ${retries}`);
  return {
    policy,
    compactor: c.compactor,
    auto: Object.freeze({
      enabled: (a.enabled ?? true) && c.compactor !== undefined,
      compactOnPressure: a.compactOnPressure ?? true,
      recoverOnOverflow: a.recoverOnOverflow ?? true,
      maxOverflowRetries: retries,
    }),
  };
}

/** An automatic compaction failed: the run ends `failed` / `compaction_failed`. */
export class CompactionFailedError extends AgentcoreError {
  readonly code: string = "COMPACTION_FAILED";
  override name = "CompactionFailedError";
}

/**
 * One compaction: `compaction_started`, then skipped when nothing would be
 * summarised, else the compactor's summary replaces the summarised turns
 * (protected + summary + kept, atomically). Failures and aborts leave the
 * history unchanged and emit `compaction_failed`.
 */
export async function runCompaction(
  c: ResolvedCompaction,
  trigger: CompactionTrigger,
  given: CompactionPreparation | null,
  signal: AbortSignal,
  abortReason: () => string,
  history: CompactionHistory,
): Promise<CompactionResult> {
  const version = history.version();
  const before = history.messages().length;
  const preparation = given ?? c.policy.prepare(history.messages());
  let previous: SummaryEntry | null = null;
  for (const m of preparation.protected_messages) previous = summaryOf(m) ?? previous;
  const request: CompactionRequest = {
    operation_id: randomHex(16),
    trigger,
    preparation,
    previous_summary: previous === null ? null : { ...previous },
  };
  const base = { operation_id: request.operation_id, trigger, summary: null, messages_before: before, messages_after: before, error: null };
  await history.emit({ kind: "compaction_started", request });
  if (!preparation.can_compact) {
    const r: CompactionResult = { ...base, status: "skipped" };
    await history.emit({ kind: "compaction_completed", result: r });
    return r;
  }
  let r: CompactionResult;
  try {
    if (c.compactor === undefined) throw new Error("no compactor is configured");
    if (signal.aborted) throw new AgentCancelledError(abortReason());
    const compactor = c.compactor;
    const out = await raceAbort(
      Promise.resolve().then(() => compactor.compact(request, signal)),
      signal,
      abortReason,
    );
    const content = typeof out?.content === "string" ? out.content.trim() : "";
    const source = typeof out?.source === "string" ? out.source.trim() : "";
    if (content === "") throw new Error("the compactor returned empty content");
    if (source === "") throw new Error("the compactor returned an empty source");
    if (signal.aborted) throw new AgentCancelledError(abortReason());
    if (history.version() !== version) throw new Error("agent history changed during compaction");
    const entry: SummaryEntry = {
      content,
      source,
      history_start_index: preparation.history_start_index,
      first_kept_index: preparation.first_kept_index,
      summarized_message_count: (previous?.summarized_message_count ?? 0) + preparation.messages_to_summarize.length,
      tokens_before: preparation.estimated_history_tokens,
    };
    const kept = history.messages().slice(preparation.first_kept_index);
    const protectedNow = history
      .messages()
      .slice(0, preparation.history_start_index)
      .filter((m) => summaryOf(m) === null);
    history.replace([...protectedNow, summaryMessage(entry), ...kept]);
    r = { ...base, status: "completed", summary: { ...entry }, messages_after: history.messages().length };
  } catch (err) {
    const cancelled = err instanceof AgentCancelledError || signal.aborted;
    r = {
      ...base,
      status: cancelled ? "cancelled" : "failed",
      error: cancelled ? abortReason() : err instanceof Error ? err.message : String(err),
    };
    await history.emit({ kind: "compaction_failed", result: r });
    return r;
  }
  await history.emit({ kind: "compaction_completed", result: r });
  return r;
}
