import { describe, expect, test } from "bun:test";
import type { AgentMessage } from "../../src/agent/types.ts";
import {
  buildModelContext,
  CompactionPolicy,
  ContextBudget,
  estimateContextUsage,
  estimateTextTokens,
  heuristicEstimator,
  ModelCompactor,
  prepareCompaction,
  summaryMessage,
  toModelMessage,
  type CompactionRequest,
  type TokenEstimator,
} from "../../src/context/index.ts";
import { ScriptedModel } from "../../src/providers/scripted.ts";

/** Test estimator: a message costs its `tokens` marker; tools cost 40. */
const marker: TokenEstimator = {
  estimateMessage: (m) => (m as { tokens?: number }).tokens ?? 0,
  estimateTools: (t) => (t.length ? 40 : 0),
};
const msg = (role: string, tokens: number, extra: Record<string, unknown> = {}) =>
  ({ role, content: `${role}${tokens}`, tokens, ...extra }) as unknown as AgentMessage;

describe("heuristic estimator", () => {
  test("4 + ceil(ascii/4 + non_ascii) over compact JSON without usage and internal keys", () => {
    expect(estimateTextTokens("")).toBe(0);
    expect(estimateTextTokens("abcd")).toBe(1);
    expect(estimateTextTokens("abcde")).toBe(2);
    expect(estimateTextTokens("éé")).toBe(2);
    expect(estimateTextTokens("😀")).toBe(1); // one code point
    const m = { role: "user", content: "hi" } as AgentMessage;
    // {"role":"user","content":"hi"} = 30 chars -> ceil(7.5) = 8
    expect(heuristicEstimator.estimateMessage(m)).toBe(4 + 8);
    const withMeta = {
      role: "assistant",
      content: "hi",
      usage: { input_tokens: 1, output_tokens: 2, total_tokens: 3 },
      _agentcore_x: 1,
    } as unknown as AgentMessage;
    // {"role":"assistant","content":"hi"} = 35 chars -> 9
    expect(heuristicEstimator.estimateMessage(withMeta)).toBe(4 + 9);
    expect(heuristicEstimator.estimateMessage({ role: "user", content: "日本" } as AgentMessage)).toBe(4 + Math.ceil(27 / 4 + 2));
    expect(heuristicEstimator.estimateTools([])).toBe(0);
    const tools = [{ type: "function", function: { name: "x" } }];
    expect(heuristicEstimator.estimateTools(tools)).toBe(8 + estimateTextTokens(JSON.stringify(tools)));
  });
});

describe("estimateContextUsage", () => {
  test("§5: reported 500 + trailing 50 vs heuristic 110 -> 550, mixed", () => {
    const messages = [
      msg("system", 10),
      msg("assistant", 10, { usage: { input_tokens: 400, output_tokens: 100, total_tokens: 500 } }),
      msg("tool", 30),
      msg("user", 20),
    ];
    const e = estimateContextUsage(messages, [{}], marker);
    expect(e).toEqual({
      total_tokens: 550,
      reported_tokens: 500,
      trailing_tokens: 50,
      heuristic_tokens: 110,
      last_usage_index: 1,
      source: "mixed",
    });
  });
  test("no usage -> estimated; usage last -> reported; heuristic wins when larger", () => {
    expect(estimateContextUsage([msg("user", 20)], [], marker)).toMatchObject({
      total_tokens: 20,
      source: "estimated",
      last_usage_index: null,
      reported_tokens: 0,
    });
    const rep = [msg("user", 20), msg("assistant", 10, { usage: { total_tokens: 300 } })];
    expect(estimateContextUsage(rep, [], marker)).toMatchObject({ total_tokens: 300, source: "reported", last_usage_index: 1 });
    const small = [msg("user", 200), msg("assistant", 10, { usage: { total_tokens: 5 } })];
    expect(estimateContextUsage(small, [], marker)).toMatchObject({ total_tokens: 210, source: "mixed" });
    // invalid usage is ignored
    const bad = [msg("assistant", 10, { usage: { total_tokens: -1 } }), msg("assistant", 10, { usage: { total_tokens: true } })];
    expect(estimateContextUsage(bad, [], marker).source).toBe("estimated");
  });
});

describe("budget and policy", () => {
  test("validation", () => {
    expect(() => new ContextBudget({ contextWindow: 0, reserveTokens: 0, keepRecentTokens: 1 })).toThrow(RangeError);
    expect(() => new ContextBudget({ contextWindow: 100, reserveTokens: 100, keepRecentTokens: 1 })).toThrow(/reserveTokens/);
    expect(() => new ContextBudget({ contextWindow: 100, reserveTokens: -1, keepRecentTokens: 1 })).toThrow(/reserveTokens/);
    expect(() => new ContextBudget({ contextWindow: 100, reserveTokens: 20, keepRecentTokens: 81 })).toThrow(/keepRecentTokens/);
    expect(() => new ContextBudget({ contextWindow: 100, reserveTokens: 20, keepRecentTokens: 0 })).toThrow(/keepRecentTokens/);
    expect(() => new ContextBudget({ contextWindow: "100" as never, reserveTokens: 20, keepRecentTokens: 1 })).toThrow(TypeError);
    expect(() => new ContextBudget({ contextWindow: 1.5, reserveTokens: 0, keepRecentTokens: 1 })).toThrow(RangeError);
    const b = new ContextBudget({ contextWindow: 100, reserveTokens: 20, keepRecentTokens: 80 });
    expect(b.thresholdTokens).toBe(80);
    expect(Object.isFrozen(b)).toBe(true);
  });
  test("decisions", () => {
    const budget = { contextWindow: 1000, reserveTokens: 200, keepRecentTokens: 100 };
    const est = (total: number) => ({
      total_tokens: total,
      reported_tokens: 0,
      trailing_tokens: total,
      heuristic_tokens: total,
      last_usage_index: null,
      source: "estimated" as const,
    });
    const p = new CompactionPolicy(budget);
    expect(p.evaluate(est(799))).toMatchObject({
      should_compact: false,
      reason: "below_threshold",
      threshold_tokens: 800,
      total_tokens: 799,
      source: "estimated",
    });
    const d = p.evaluate(est(800));
    expect(d).toMatchObject({ should_compact: true, reason: "threshold_reached", pressure_ratio: 1, context_window: 1000 });
    expect(new CompactionPolicy(budget, false).evaluate(est(5000))).toMatchObject({
      should_compact: false,
      reason: "disabled",
      pressure_ratio: 6.25,
    });
  });
});

describe("prepareCompaction", () => {
  test("§5 numbers: history_start 1, first_kept 5, tokens 200/120/80, deep copies", () => {
    const messages = [
      msg("system", 1),
      msg("user", 10),
      msg("assistant", 5, { tool_calls: [{ id: "c1", type: "function", function: { name: "t", arguments: "{}" } }] }),
      msg("tool", 100, { tool_call_id: "c1" }),
      msg("assistant", 5),
      msg("user", 20),
      msg("assistant", 10),
      msg("user", 30),
      msg("assistant", 20),
    ];
    const p = prepareCompaction(messages, 60, marker);
    expect(p.history_start_index).toBe(1);
    expect(p.first_kept_index).toBe(5);
    expect(p.estimated_history_tokens).toBe(200);
    expect(p.estimated_summarized_tokens).toBe(120);
    expect(p.estimated_kept_tokens).toBe(80);
    expect(p.can_compact).toBe(true);
    expect(p.protected_messages).toEqual([messages[0]]);
    expect(p.messages_to_summarize).toEqual(messages.slice(1, 5));
    expect(p.messages_to_keep).toEqual(messages.slice(5));
    expect(p.messages_to_summarize[1]).not.toBe(messages[2]);
    (p.messages_to_summarize[1] as { content: string }).content = "changed";
    expect((messages[2] as { content: string }).content).toBe("assistant5");
    // a policy prepares with its budget's keepRecentTokens
    const policy = new CompactionPolicy({ contextWindow: 1000, reserveTokens: 0, keepRecentTokens: 60 }, true, marker);
    expect(policy.prepare(messages).first_kept_index).toBe(5);
  });
  test("one turn: nothing to summarise; no turns: everything protected; late system message is a barrier", () => {
    const one = prepareCompaction([msg("user", 500), msg("assistant", 500)], 10, marker);
    expect(one.can_compact).toBe(false);
    expect(one.first_kept_index).toBe(0);
    expect(one.estimated_history_tokens).toBe(1000);
    const none = prepareCompaction([msg("system", 1)], 10, marker);
    expect(none).toMatchObject({ can_compact: false, history_start_index: 1, first_kept_index: 1, estimated_history_tokens: 0 });
    const late = prepareCompaction(
      [msg("user", 10), msg("assistant", 10), msg("system", 5), msg("user", 10), msg("assistant", 10), msg("user", 10)],
      5,
      marker,
    );
    expect(late.history_start_index).toBe(3);
    expect(late.first_kept_index).toBe(5);
    expect(late.protected_messages.length).toBe(3);
  });
});

describe("builder", () => {
  test("projects without usage and _agentcore_ keys, and never changes the history", () => {
    const summary = summaryMessage({
      content: "S",
      source: "test",
      history_start_index: 0,
      first_kept_index: 2,
      summarized_message_count: 2,
      tokens_before: 9,
    });
    const history = [
      summary,
      { role: "assistant", content: "a", usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 } } as AgentMessage,
    ];
    const before = structuredClone(history);
    const out = buildModelContext(history, {
      system: { role: "system", content: "sys" },
      transient: [{ role: "system", content: "note" }],
    });
    expect(out).toEqual([
      { role: "system", content: "sys" },
      { role: "system", content: (summary as { content: string }).content },
      { role: "assistant", content: "a" },
      { role: "system", content: "note" },
    ]);
    expect(history).toEqual(before);
    expect(Object.isFrozen(toModelMessage(history[1]))).toBe(true);
    expect(JSON.stringify(out)).not.toContain("_agentcore_");
  });
});

describe("ModelCompactor", () => {
  const request: CompactionRequest = {
    operation_id: "op",
    trigger: "explicit",
    previous_summary: null,
    preparation: prepareCompaction(
      [
        { role: "user", content: "a" },
        { role: "assistant", content: "b" },
        { role: "user", content: "c" },
      ],
      1,
    ),
  };
  const prompt = (r: CompactionRequest) => [{ role: "user" as const, content: `summarise ${r.preparation.messages_to_summarize.length}` }];
  test("asks the model with the application's prompt and no tools", async () => {
    const model = new ScriptedModel([{ content: "  the summary  " }]);
    const out = await new ModelCompactor(model, prompt, "gpt").compact(request, new AbortController().signal);
    expect(out).toEqual({ content: "the summary", source: "gpt" });
    expect(model.requests).toEqual([{ messages: [{ role: "user", content: "summarise 2" }], tools: [] }]);
  });
  test("rejects empty content and propagates model errors", async () => {
    await expect(
      new ModelCompactor(new ScriptedModel([{ content: "  " }]), prompt).compact(request, new AbortController().signal),
    ).rejects.toThrow("compaction model returned empty content");
    await expect(
      new ModelCompactor(new ScriptedModel([{ content: null }]), prompt).compact(request, new AbortController().signal),
    ).rejects.toThrow("empty content");
    await expect(
      new ModelCompactor(new ScriptedModel([{ error: { kind: "timeout", message: "slow" } }]), prompt).compact(
        request,
        new AbortController().signal,
      ),
    ).rejects.toThrow("slow");
    expect(() => new ModelCompactor({} as never, prompt)).toThrow(TypeError);
  });
});
