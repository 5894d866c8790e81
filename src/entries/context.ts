/**
 * `agentcore/context`: context pressure and compaction: token estimates,
 * the budget of a context window, `CompactionPolicy`, `ModelCompactor`, and
 * the summary messages a compaction leaves in the history.
 *
 * @module
 */
export * from "../context/index.ts";
