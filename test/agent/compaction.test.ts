import { describe, expect, test } from "bun:test";
import { createAgent, type AgentEvent } from "../../src/agent/index.ts";
import { CompactionPolicy, type CompactionRequest, type Compactor, type TokenEstimator } from "../../src/context/index.ts";
import { ScriptedModel } from "../../src/providers/scripted.ts";
import { ModelProviderError, type ModelAdapter, type ModelRequest, type ModelStreamEvent } from "../../src/providers/types.ts";
import { OpenAIModelAdapter } from "../../src/providers/openai.ts";
import { startOpenAIServer, textReply } from "../support/openai-server.ts";
import { Recorder } from "../support/agent.ts";

/** Content length for conversation messages, 1 for system messages (prompt, summaries), no tools. */
const lengthEstimator: TokenEstimator = {
  estimateMessage: (m) =>
    m.role === "system" ? 1 : typeof (m as { content?: unknown }).content === "string" ? (m as { content: string }).content.length : 1,
  estimateTools: () => 0,
};

function policy(contextWindow: number, keepRecentTokens = 10) {
  return new CompactionPolicy({ contextWindow, reserveTokens: 0, keepRecentTokens }, true, lengthEstimator);
}

class StubCompactor implements Compactor {
  readonly requests: CompactionRequest[] = [];
  constructor(
    private readonly answer: (req: CompactionRequest, signal: AbortSignal) => Promise<{ content: string; source: string }> = async () => ({
      content: "SUMMARY",
      source: "stub",
    }),
  ) {}
  compact(request: CompactionRequest, signal: AbortSignal) {
    this.requests.push(request);
    return this.answer(request, signal);
  }
}

function setup(turns: unknown[], opts: { window?: number; keep?: number; compactor?: Compactor; auto?: Record<string, unknown> } = {}) {
  const model = new ScriptedModel(turns);
  const rec = new Recorder();
  const compactor = opts.compactor ?? new StubCompactor();
  const agent = createAgent({
    model,
    systemPrompt: "sys",
    sinks: [rec.sink],
    compaction: { policy: policy(opts.window ?? 100_000, opts.keep ?? 10), compactor, auto: opts.auto },
  });
  return { model, rec, agent, compactor };
}

const y30 = "y".repeat(30);
const overflow = { error: { kind: "context_overflow", message: "maximum context length exceeded" } };

describe("explicit compact()", () => {
  test("summarises the older turns in its own event run; the next request sees the summary first after the system prompt", async () => {
    const { model, rec, agent, compactor } = setup([
      { content: "first answer", usage: { input_tokens: 5, output_tokens: 2 } },
      { content: "second answer" },
      { content: "third" },
    ]);
    await agent.run("task one");
    await agent.run("task two");
    const before = rec.events.length;
    const r = await agent.compact();
    expect(r).toMatchObject({ status: "completed", trigger: "explicit", messages_before: 4, messages_after: 3, error: null });
    expect(r.summary).toEqual({
      content: "SUMMARY",
      source: "stub",
      history_start_index: 0,
      first_kept_index: 2,
      summarized_message_count: 2,
      tokens_before: 4 * 0 + "task one".length + "first answer".length + "task two".length + "second answer".length,
    });
    const evs = rec.events.slice(before);
    expect(evs.map((e) => e.kind)).toEqual(["compaction_started", "compaction_completed"]);
    expect(evs.map((e) => e.sequence)).toEqual([1, 2]);
    expect(evs[0].run_id).not.toBe(rec.events[0].run_id);
    const started = evs[0] as Extract<AgentEvent, { kind: "compaction_started" }>;
    expect(started.request.trigger).toBe("explicit");
    expect(started.request.previous_summary).toBeNull();
    expect(started.request.preparation.messages_to_summarize.map((m) => m.content)).toEqual(["task one", "first answer"]);
    expect(compactor instanceof StubCompactor && compactor.requests.length).toBe(1);
    const msgs = agent.messages;
    expect(msgs.map((m) => m.role)).toEqual(["system", "user", "assistant"]);
    expect(msgs[0]).toEqual({
      role: "system",
      content: expect.stringMatching(/\n\nSUMMARY$/),
      _agentcore_summary: r.summary!,
    });
    expect(msgs.slice(1).map((m) => m.content)).toEqual(["task two", "second answer"]);

    await agent.run("task three");
    const req = model.requests[2];
    expect(req.messages).toEqual([
      { role: "system", content: "sys" },
      { role: "system", content: msgs[0].content as string },
      { role: "user", content: "task two" },
      { role: "assistant", content: "second answer" },
      { role: "user", content: "task three" },
    ]);
    expect(JSON.stringify(model.requests)).not.toContain("_agentcore_");
    expect(JSON.stringify(model.requests)).not.toContain("usage");
  });

  test("a second compaction folds the previous summary (counted) and replaces it", async () => {
    const { agent, compactor } = setup([{ content: "a1" }, { content: "a2" }, { content: "a3" }], { keep: 1 });
    await agent.run("t1");
    await agent.run("t2");
    await agent.compact();
    await agent.run("t3");
    const r = await agent.compact();
    expect(r.status).toBe("completed");
    const req = (compactor as StubCompactor).requests[1];
    expect(req.previous_summary?.summarized_message_count).toBe(2);
    expect(req.preparation.history_start_index).toBe(1);
    expect(r.summary!.summarized_message_count).toBe(4);
    expect(agent.messages.filter((m) => m.role === "system").length).toBe(1);
    expect(agent.messages.map((m) => m.content).slice(1)).toEqual(["t3", "a3"]);
  });

  test("skipped when nothing can be summarised; needs a compactor", async () => {
    const { rec, agent } = setup([{ content: "only" }]);
    await agent.run("one turn");
    const before = agent.messages;
    const r = await agent.compact();
    expect(r).toMatchObject({ status: "skipped", summary: null, messages_before: 2, messages_after: 2 });
    expect(rec.kinds().slice(-2)).toEqual(["compaction_started", "compaction_completed"]);
    expect(agent.messages).toEqual(before);
    const plain = createAgent({ model: new ScriptedModel([]), compaction: { policy: policy(1000) } });
    await expect(plain.compact()).rejects.toThrow(/compactor/);
    await expect(createAgent({ model: new ScriptedModel([]) }).compact()).rejects.toThrow(/compactor/);
  });

  test("options are validated", () => {
    const model = new ScriptedModel([]);
    expect(() => createAgent({ model, compaction: { policy: policy(1000), auto: { enabled: true } } })).toThrow(/compactor/);
    expect(() =>
      createAgent({ model, compaction: { policy: policy(1000), compactor: new StubCompactor(), auto: { maxOverflowRetries: 2 } } }),
    ).toThrow(RangeError);
    expect(() => createAgent({ model, compaction: { policy: {} as never } })).toThrow(TypeError);
  });

  test("abort() cancels an explicit compaction; the history is unchanged", async () => {
    const compactor = new StubCompactor(
      (_r, signal) => new Promise((_res, rej) => signal.addEventListener("abort", () => rej(signal.reason))),
    );
    const { rec, agent } = setup([{ content: "a1" }, { content: "a2" }], { compactor, keep: 1 });
    await agent.run("t1");
    await agent.run("t2");
    const before = agent.messages;
    const p = agent.compact();
    await rec.waitFor("compaction_started");
    expect(agent.steer("hello").status).toBe("agent_idle");
    expect(agent.abort("stop now")).toBe(true);
    const r = await p;
    expect(r).toMatchObject({ status: "cancelled", error: "stop now" });
    const failed = rec.of("compaction_failed");
    expect(failed.length).toBe(1);
    expect(failed[0].result.status).toBe("cancelled");
    expect(agent.messages).toEqual(before);
  });
});

describe("pressure", () => {
  test("context_pressure_evaluated at every evaluation; observation only without auto-compaction", async () => {
    const model = new ScriptedModel([{ content: y30 }]);
    const rec = new Recorder();
    const agent = createAgent({ model, sinks: [rec.sink], compaction: { policy: policy(20) } });
    const r = await agent.run("x".repeat(30));
    expect(r.status).toBe("completed");
    const ev = rec.of("context_pressure_evaluated");
    expect(ev.length).toBe(1);
    expect(ev[0].turn).toBe(1);
    expect(ev[0].decision).toMatchObject({
      should_compact: true,
      reason: "threshold_reached",
      total_tokens: 30,
      threshold_tokens: 20,
      pressure_ratio: 1.5,
      source: "estimated",
    });
    expect(ev[0].preparation).toMatchObject({ can_compact: false, first_kept_index: 0 });
    expect(rec.of("compaction_started").length).toBe(0);
  });

  test("automatic compaction when pressure crosses the threshold; the model sees the summary, never the metadata", async () => {
    const { model, rec, agent } = setup([{ content: y30, usage: { input_tokens: 10, output_tokens: 20 } }, { content: "done" }], {
      window: 100,
    });
    await agent.run("x".repeat(30));
    expect(rec.of("context_pressure_evaluated")[0].decision).toMatchObject({
      should_compact: false,
      reason: "below_threshold",
      total_tokens: 31,
    });
    const from = rec.events.length;
    const r = await agent.run("z".repeat(50));
    expect(r).toMatchObject({ status: "completed", output: "done" });
    const evs = rec.events.slice(from);
    expect(evs.map((e) => e.kind).filter((k) => k !== "assistant_text_delta")).toEqual([
      "agent_started",
      "turn_started",
      "context_pressure_evaluated",
      "compaction_started",
      "compaction_completed",
      "context_pressure_evaluated",
      "message_completed",
      "turn_completed",
      "agent_finished",
    ]);
    const [first, second] = rec.of("context_pressure_evaluated").slice(1);
    // the last reported usage (30) + the trailing user message (50) vs the heuristic 111
    expect(first.decision).toMatchObject({
      should_compact: true,
      reason: "threshold_reached",
      total_tokens: 111,
      source: "mixed",
      last_usage_index: 2,
    });
    expect(first.preparation).toMatchObject({ history_start_index: 0, first_kept_index: 2, can_compact: true });
    expect(second.decision.should_compact).toBe(false);
    expect(second.preparation).toBeNull();
    const started = rec.of("compaction_started")[0];
    expect(started.request.trigger).toBe("pressure");
    const completed = rec.of("compaction_completed")[0];
    expect(completed.result).toMatchObject({ status: "completed", trigger: "pressure", operation_id: started.request.operation_id });
    // all events of the run share one run id
    expect(new Set(evs.map((e) => e.run_id)).size).toBe(1);
    const req = model.requests[1];
    expect(req.messages.map((m) => m.role)).toEqual(["system", "system", "user"]);
    expect(req.messages[1].content).toMatch(/\n\nSUMMARY$/);
    expect(req.messages[2].content).toBe("z".repeat(50));
    expect(JSON.stringify(model.requests)).not.toContain("_agentcore_");
    expect((agent.messages[0] as { _agentcore_summary?: { content: string } })._agentcore_summary?.content).toBe("SUMMARY");
  });

  test("compactOnPressure false: pressure is only observed", async () => {
    const { model, rec, agent } = setup([{ content: y30 }, { content: "done" }], { window: 100, auto: { compactOnPressure: false } });
    await agent.run("x".repeat(30));
    const r = await agent.run("z".repeat(50));
    expect(r.status).toBe("completed");
    expect(rec.of("compaction_started").length).toBe(0);
    expect(model.requests[1].messages.length).toBe(4);
  });

  test("a compactor failure during automatic compaction ends the run failed / compaction_failed, history unchanged", async () => {
    const compactor = new StubCompactor(async () => {
      throw new Error("summariser is down");
    });
    const { model, rec, agent } = setup([{ content: y30 }, { content: "never" }], { window: 100, compactor });
    await agent.run("x".repeat(30));
    const r = await agent.run("z".repeat(50));
    expect(r).toMatchObject({ status: "failed", stop_reason: "compaction_failed", error: "summariser is down", turns: 1 });
    expect(r.usage.request_count).toBe(0);
    const failed = rec.of("compaction_failed");
    expect(failed.length).toBe(1);
    expect(failed[0].result).toMatchObject({ status: "failed", trigger: "pressure", error: "summariser is down" });
    expect(agent.messages.map((m) => m.content)).toEqual(["x".repeat(30), y30, "z".repeat(50)]);
    expect(model.requests.length).toBe(1);
    expect(agent.canContinue).toBe(false);
  });

  test("empty compactor content is a failure", async () => {
    const compactor = new StubCompactor(async () => ({ content: "  ", source: "stub" }));
    const { agent } = setup([{ content: y30 }], { window: 100, compactor });
    await agent.run("x".repeat(30));
    const r = await agent.run("z".repeat(50));
    expect(r).toMatchObject({ status: "failed", stop_reason: "compaction_failed" });
    expect(r.error).toMatch(/empty content/);
  });

  test("abort during automatic compaction cancels it and the run", async () => {
    const compactor = new StubCompactor(
      (_r, signal) => new Promise((_res, rej) => signal.addEventListener("abort", () => rej(signal.reason))),
    );
    const { rec, agent } = setup([{ content: y30 }, { content: "never" }], { window: 100, compactor });
    await agent.run("x".repeat(30));
    const p = agent.run("z".repeat(50));
    await rec.waitFor("compaction_started");
    agent.abort("user stop");
    const r = await p;
    expect(r).toMatchObject({ status: "cancelled", stop_reason: "external_abort", error: "user stop" });
    expect(rec.of("compaction_failed")[0].result).toMatchObject({ status: "cancelled", error: "user stop" });
    expect(agent.messages.length).toBe(3);
  });
});

describe("context overflow", () => {
  test("compacts (trigger overflow) and retries once", async () => {
    const { model, rec, agent } = setup([{ content: y30 }, overflow, { content: "recovered" }]);
    await agent.run("x".repeat(30));
    const r = await agent.run("z".repeat(50));
    expect(r).toMatchObject({ status: "completed", stop_reason: "text_response", output: "recovered", turns: 1 });
    expect(r.usage.request_count).toBe(2);
    const started = rec.of("compaction_started");
    expect(started.length).toBe(1);
    expect(started[0].request.trigger).toBe("overflow");
    expect(rec.of("compaction_completed")[0].result.status).toBe("completed");
    expect(model.requests[2].messages.map((m) => m.role)).toEqual(["system", "system", "user"]);
    expect(JSON.stringify(model.requests[2])).not.toContain("_agentcore_");
  });

  test("LM Studio's overflow answer over real HTTP (the openai SDK) is recovered: compacted and retried once", async () => {
    const server = await startOpenAIServer([
      textReply(y30, [40, 30]),
      {
        kind: "error",
        status: 400,
        body: {
          error:
            "Trying to keep the first 9000 tokens when context the overflows. However, the model is loaded with context length of only 4096 tokens, which is not enough. Try to load the model with a larger context length, or provide a shorter input",
        },
      },
      textReply("recovered"),
    ]);
    try {
      const model = new OpenAIModelAdapter(
        { model: "local", baseURL: server.baseURL, timeoutMs: 10_000 },
        { retry: { sleep: async () => {} } },
      );
      const rec = new Recorder();
      const agent = createAgent({
        model,
        systemPrompt: "sys",
        sinks: [rec.sink],
        compaction: { policy: policy(100_000), compactor: new StubCompactor() },
      });
      await agent.run("x".repeat(30));
      const r = await agent.run("z".repeat(50));
      expect(r).toMatchObject({ status: "completed", stop_reason: "text_response", output: "recovered" });
      expect(r.usage.request_count).toBe(2);
      expect(rec.of("compaction_started").map((e) => e.request.trigger)).toEqual(["overflow"]);
      expect(server.requests).toHaveLength(3);
      expect(server.requests[2]!.body.messages.map((m: { role: string }) => m.role)).toEqual(["system", "system", "user"]);
      await agent.shutdown();
    } finally {
      await server.close();
    }
  });

  test("a second overflow ends the run failed / context_overflow", async () => {
    const { rec, agent } = setup([{ content: y30 }, overflow, overflow]);
    await agent.run("x".repeat(30));
    const r = await agent.run("z".repeat(50));
    expect(r).toMatchObject({ status: "failed", stop_reason: "context_overflow", error: "maximum context length exceeded" });
    expect(r.usage.request_count).toBe(2);
    expect(rec.of("compaction_started").length).toBe(1);
  });

  test("nothing to summarise: skipped, then context_overflow", async () => {
    const { rec, agent } = setup([overflow]);
    const r = await agent.run("only turn");
    expect(r).toMatchObject({ status: "failed", stop_reason: "context_overflow" });
    expect(rec.of("compaction_completed")[0].result.status).toBe("skipped");
    expect(r.usage.request_count).toBe(1);
  });

  test("recoverOnOverflow false (or maxOverflowRetries 0): no compaction", async () => {
    for (const auto of [{ recoverOnOverflow: false }, { maxOverflowRetries: 0 }]) {
      const { rec, agent } = setup([{ content: y30 }, overflow], { auto });
      await agent.run("x".repeat(30));
      const r = await agent.run("z");
      expect(r.stop_reason).toBe("context_overflow");
      expect(rec.of("compaction_started").length).toBe(0);
    }
  });

  test("an overflow after deltas were shown is never retried", async () => {
    for (const flagged of [true, false]) {
      let calls = 0;
      const model: ModelAdapter = {
        complete: () => Promise.reject(new Error("unused")),
        async *stream(_req: ModelRequest): AsyncGenerator<ModelStreamEvent> {
          calls++;
          if (calls === 1) {
            yield { type: "completed", message: { content: y30, tool_calls: [] } };
            return;
          }
          yield { type: "text_delta", delta: "partial" };
          throw new ModelProviderError("context_overflow", "too many tokens", { responseStarted: flagged });
        },
      };
      const rec = new Recorder();
      const agent = createAgent({ model, sinks: [rec.sink], compaction: { policy: policy(100_000), compactor: new StubCompactor() } });
      await agent.run("x".repeat(30));
      const r = await agent.run("z");
      expect(r).toMatchObject({ status: "failed", stop_reason: "context_overflow", error: "too many tokens" });
      expect(r.usage.request_count).toBe(1);
      expect(calls).toBe(2);
      expect(rec.of("assistant_text_delta").map((e) => e.delta)).toContain("partial");
      expect(rec.of("compaction_started").length).toBe(0);
    }
  });

  test("without compaction options an overflow fails the run as before", async () => {
    const agent = createAgent({ model: new ScriptedModel([overflow]) });
    const r = await agent.run("t");
    expect(r).toMatchObject({ status: "failed", stop_reason: "context_overflow" });
  });
});

describe("projection", () => {
  test("restored internal metadata and usage never reach the model", async () => {
    const model = new ScriptedModel([{ content: "ok" }]);
    const agent = createAgent({ model });
    agent.reset([
      {
        role: "system",
        content: "Summary: earlier",
        _agentcore_summary: {
          content: "earlier",
          source: "s",
          history_start_index: 0,
          first_kept_index: 2,
          summarized_message_count: 2,
          tokens_before: 9,
        },
      },
      { role: "user", content: "q" },
      { role: "assistant", content: "a", usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 } },
    ]);
    await agent.run("next");
    expect(model.requests[0].messages).toEqual([
      { role: "system", content: "Summary: earlier" },
      { role: "user", content: "q" },
      { role: "assistant", content: "a" },
      { role: "user", content: "next" },
    ]);
    expect(agent.messages[0]).toHaveProperty("_agentcore_summary");
  });
});

describe("default heuristic estimator", () => {
  test("pressure from the §5 heuristic (system prompt and tools counted) triggers an automatic compaction", async () => {
    const model = new ScriptedModel([{ content: "a".repeat(200) }, { content: "done" }]);
    const rec = new Recorder();
    const agent = createAgent({
      model,
      systemPrompt: "You are terse.",
      sinks: [rec.sink],
      compaction: {
        policy: new CompactionPolicy({ contextWindow: 120, reserveTokens: 20, keepRecentTokens: 10 }),
        compactor: new StubCompactor(),
      },
    });
    await agent.run("first task");
    const r = await agent.run("second task " + "b".repeat(200));
    expect(r.status).toBe("completed");
    const evals = rec.of("context_pressure_evaluated");
    expect(evals[0].decision).toMatchObject({ should_compact: false, source: "estimated", threshold_tokens: 100 });
    expect(evals[1].decision).toMatchObject({ should_compact: true, source: "estimated" });
    expect(rec.of("compaction_completed")[0].result).toMatchObject({ status: "completed", trigger: "pressure" });
    expect(agent.messages.map((m) => m.role)).toEqual(["system", "user", "assistant"]);
  });
});
