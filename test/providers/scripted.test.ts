import { describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  ModelProviderError,
  RetryingModelAdapter,
  ScriptedModel,
  ScriptError,
  streamModel,
  type ModelRequest,
  type ModelStreamEvent,
} from "../../src/providers/index.ts";
import { collect, failure } from "../support/providers.ts";

const req = (content = "hi", signal?: AbortSignal): ModelRequest => ({
  messages: [{ role: "user", content }],
  tools: [{ name: "echo", description: "Echo", parameters: { type: "object" } }],
  signal,
});

function scriptError(text: string): string {
  try {
    ScriptedModel.fromJsonl(text);
  } catch (e) {
    expect(e).toBeInstanceOf(ScriptError);
    return (e as Error).message;
  }
  throw new Error("expected a ScriptError");
}

describe("ScriptedModel: JSONL", () => {
  test("plays turns in order, skipping blank lines; raw (even malformed) arguments kept", async () => {
    const m = ScriptedModel.fromJsonl(
      [
        '{"content": null, "tool_calls": [{"id": "c1", "name": "echo", "arguments": "{\\"text\\":\\"hi\\"}"}, {"id": "c2", "name": "echo", "arguments": "{bad"}], "usage": {"input_tokens": 10, "output_tokens": 4}}',
        "",
        "   ",
        '{"content": "done", "usage": {"input_tokens": 20, "output_tokens": 2, "cache_read_tokens": 8}}\r',
        "",
      ].join("\n"),
    );
    expect(m.remaining).toBe(2);
    const first = await m.complete(req());
    expect(first).toEqual({
      message: {
        content: null,
        tool_calls: [
          { id: "c1", name: "echo", arguments: '{"text":"hi"}', parsed: { ok: true, value: { text: "hi" } } },
          {
            id: "c2",
            name: "echo",
            arguments: "{bad",
            parsed: { ok: false, error: expect.objectContaining({ code: "JSON_PARSE", offset: 1 }) },
            arguments_error: expect.objectContaining({ code: "JSON_PARSE", offset: 1 }),
          },
        ],
      },
      usage: { input_tokens: 10, output_tokens: 4, total_tokens: 14 },
    });
    const second = await m.complete(req());
    expect(second).toEqual({
      message: { content: "done", tool_calls: [] },
      usage: { input_tokens: 20, output_tokens: 2, cache_read_tokens: 8, total_tokens: 22 },
    });
    expect(m.remaining).toBe(0);
  });

  test("invalid JSON names the line and the strict parser's message", () => {
    expect(scriptError('{"content": "a"}\n\n{"content": "b",}')).toBe(
      "scripted model: line 3: invalid JSON: unexpected character '}' (column 17)",
    );
    expect(scriptError('{"content": "a", "content": "b"}')).toMatch(/^scripted model: line 1: invalid JSON: duplicate key "content"/);
  });

  test("shape errors name the line and the problem", () => {
    expect(scriptError('{"content": "a"}\n{"content": "b", "colour": 1}')).toMatch(
      /^scripted model: line 2: unknown key "colour" in a turn/,
    );
    expect(scriptError('{"thinking": "x"}')).toMatch(/line 1: a turn needs "content"/);
    expect(scriptError('{"content": 5}')).toBe('scripted model: line 1: "content" must be a string or null, got number');
    expect(scriptError("[1]")).toBe("scripted model: line 1: a turn must be a JSON object, got array");
    expect(scriptError('{"content": "", "tool_calls": [{"id": "c", "name": "echo", "arguments": {}}]}')).toBe(
      'scripted model: line 1: "tool_calls[0]".arguments must be a string, got object',
    );
    expect(scriptError('{"content": "", "tool_calls": [{"id": "", "name": "echo", "arguments": ""}]}')).toMatch(/id must not be empty/);
    expect(scriptError('{"content": "", "usage": {"input_tokens": 1}}')).toMatch(/"usage.output_tokens" must be an integer >= 0/);
    expect(scriptError('{"content": "", "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}}')).toMatch(
      /unknown key "total_tokens" in "usage"/,
    );
    expect(scriptError('{"content": "", "chunk_size": 0}')).toMatch(/"chunk_size" must be an integer >= 1/);
    expect(scriptError('{"content": "", "delay_ms": -1}')).toMatch(/"delay_ms" must be a number >= 0/);
    expect(scriptError('{"error": {"kind": "overloaded", "message": "x"}}')).toMatch(
      /"error.kind" must be one of context_overflow, rate_limit, timeout, authentication, provider_error/,
    );
    expect(scriptError('{"error": {"kind": "timeout", "message": "x"}, "content": "y"}')).toMatch(/unknown key "content" in an error turn/);
    expect(scriptError('{"error": {"kind": "timeout"}}')).toMatch(/"error.message" must be a string/);
  });

  test("the constructor validates turns too, naming the turn", () => {
    expect(() => new ScriptedModel([{ content: "a" }, { content: "b", extra: true }])).toThrow(
      'scripted model: turn 2: unknown key "extra"',
    );
  });

  test("fromFile reads a script, errors name the file and line", async () => {
    const dir = mkdtempSync(join(tmpdir(), "agentcore-scripted-"));
    const good = join(dir, "good.jsonl");
    writeFileSync(good, '{"content": "from a file"}\n');
    const m = await ScriptedModel.fromFile(good);
    expect((await m.complete(req())).message.content).toBe("from a file");
    const bad = join(dir, "bad.jsonl");
    writeFileSync(bad, '{"content": "ok"}\n{"content": "x" "y"}\n');
    const err = (await failure(ScriptedModel.fromFile(bad))) as Error;
    expect(err).toBeInstanceOf(ScriptError);
    expect(err.message).toStartWith(`scripted model: ${bad}: line 2: invalid JSON:`);
  });

  test("fromFile: bytes that are not UTF-8 name their line (inside a string they were played as U+FFFD); an unreadable path names itself", async () => {
    const dir = mkdtempSync(join(tmpdir(), "agentcore-scripted-"));
    const latin1 = join(dir, "latin1.jsonl");
    writeFileSync(latin1, Buffer.concat([Buffer.from('{"content": "ok"}\n{"content": "caf'), Buffer.from([0xe9]), Buffer.from('"}\n')]));
    const err = (await failure(ScriptedModel.fromFile(latin1))) as Error;
    expect(err).toBeInstanceOf(ScriptError);
    expect(err.message).toBe(`scripted model: ${latin1}: line 2: not valid UTF-8`);
    const bare = join(dir, "bare.jsonl");
    writeFileSync(bare, Buffer.from([0x0a, 0x0a, 0xff, 0x0a]));
    expect(((await failure(ScriptedModel.fromFile(bare))) as Error).message).toBe(`scripted model: ${bare}: line 3: not valid UTF-8`);
    const folder = (await failure(ScriptedModel.fromFile(dir))) as Error;
    expect(folder).toBeInstanceOf(ScriptError);
    expect(folder.message).toBe(`scripted model: ${dir}: cannot read the file (EISDIR)`);
  });
});

describe("ScriptedModel: streaming", () => {
  test("thinking then text in chunk_size pieces (by code point), then completed", async () => {
    const m = new ScriptedModel([{ content: "héllo 😀!", thinking: "hmm?", chunk_size: 3 }]);
    const events = await collect(m.stream(req()));
    expect(events).toEqual([
      { type: "thinking_delta", delta: "hmm" },
      { type: "thinking_delta", delta: "?" },
      { type: "text_delta", delta: "hél" },
      { type: "text_delta", delta: "lo " },
      { type: "text_delta", delta: "😀!" },
      { type: "completed", message: { content: "héllo 😀!", tool_calls: [] } },
    ]);
  });

  test("without chunk_size the text comes whole; no usage when none scripted", async () => {
    const m = new ScriptedModel([{ content: "whole text" }]);
    expect(await collect(streamModel(m, req()))).toEqual([
      { type: "text_delta", delta: "whole text" },
      { type: "completed", message: { content: "whole text", tool_calls: [] } },
    ]);
  });

  test("error turns throw ModelProviderError of the scripted kind", async () => {
    const m = ScriptedModel.fromJsonl('{"error": {"kind": "context_overflow", "message": "too big"}}\n{"content": "ok"}');
    const err = (await failure(m.complete(req()))) as ModelProviderError;
    expect(err).toBeInstanceOf(ModelProviderError);
    expect(err.kind).toBe("context_overflow");
    expect(err.message).toBe("too big");
    expect(err.responseStarted).toBe(false);
    expect((await m.complete(req())).message.content).toBe("ok");
  });

  test("running past the end → provider_error", async () => {
    const m = new ScriptedModel([]);
    const err = (await failure(m.complete(req()))) as ModelProviderError;
    expect(err.kind).toBe("provider_error");
    expect(err.message).toBe("scripted model has no more turns");
  });

  test("delay_ms is abortable: the abort reason is thrown, the turn is consumed", async () => {
    const m = new ScriptedModel([{ content: "late", delay_ms: 60_000 }, { content: "next" }]);
    const ctrl = new AbortController();
    const p = m.complete(req("hi", ctrl.signal));
    setTimeout(() => ctrl.abort(), 10);
    const err = await failure(p);
    expect(err).not.toBeInstanceOf(ModelProviderError);
    expect((err as Error).name).toBe("AbortError");
    expect((await m.complete(req())).message.content).toBe("next");
  });

  test("a delay longer than a timer holds (over 2^31 - 1 ms) still waits (it fired at once), until aborted", async () => {
    for (const delay_ms of [2 ** 31, 1e12]) {
      const m = new ScriptedModel([{ content: "far in the future", delay_ms }]);
      const ctrl = new AbortController();
      const p = m.complete(req("hi", ctrl.signal));
      // Long after an overflowed timer (1 ms) would have fired, the answer has not come.
      const outcome = await Promise.race([
        p.then(
          () => "answered",
          () => "failed",
        ),
        new Promise((r) => setTimeout(() => r("still waiting"), 100)),
      ]);
      expect(outcome).toBe("still waiting");
      ctrl.abort();
      expect(((await failure(p)) as Error).name).toBe("AbortError");
    }
  });

  test("a short delay is waited for", async () => {
    const m = new ScriptedModel([{ content: "after a pause", delay_ms: 5 }]);
    expect((await m.complete(req())).message.content).toBe("after a pause");
  });

  test("abort between chunks stops the stream", async () => {
    const m = new ScriptedModel([{ content: "abcdef", chunk_size: 1 }]);
    const ctrl = new AbortController();
    const seen: string[] = [];
    const err = await failure(
      (async () => {
        for await (const ev of m.stream(req("hi", ctrl.signal))) {
          if (ev.type === "text_delta") seen.push(ev.delta);
          if (seen.length === 2) ctrl.abort(new Error("stop"));
        }
      })(),
    );
    expect(seen).toEqual(["a", "b"]);
    expect((err as Error).message).toBe("stop");
  });

  test("requests are recorded as deep copies without the signal", async () => {
    const m = new ScriptedModel([{ content: "a" }, { content: "b" }]);
    const r = req("first", new AbortController().signal);
    await m.complete(r);
    (r.messages[0] as { content: string }).content = "mutated later";
    await m.complete({ messages: [...r.messages, { role: "assistant", content: "a" }], tools: [] });
    expect(m.requests).toEqual([
      { messages: [{ role: "user", content: "first" }], tools: r.tools },
      {
        messages: [
          { role: "user", content: "mutated later" },
          { role: "assistant", content: "a" },
        ],
        tools: [],
      },
    ]);
  });

  test("recordRequests: false keeps nothing (for long benchmark runs)", async () => {
    const m = ScriptedModel.fromJsonl('{"content": "a"}', { recordRequests: false });
    await m.complete(req());
    expect(m.requests).toEqual([]);
  });

  test("RetryingModelAdapter retries a scripted rate limit, not an authentication error", async () => {
    const sleeps: number[] = [];
    const m = ScriptedModel.fromJsonl(
      '{"error": {"kind": "rate_limit", "message": "slow"}}\n{"content": "ok"}\n{"error": {"kind": "authentication", "message": "no"}}\n{"content": "unused"}',
    );
    const r = new RetryingModelAdapter(m, { sleep: async (ms) => void sleeps.push(ms), random: () => 0, baseDelayMs: 200 });
    expect((await r.complete(req())).message.content).toBe("ok");
    expect(sleeps).toEqual([100]);
    const err = (await failure(r.complete(req()))) as ModelProviderError;
    expect(err.kind).toBe("authentication");
    expect(m.remaining).toBe(1);
  });
});

describe("ScriptedModel: step functions", () => {
  test("a step gets the live request (its signal too), is recorded first, and may hold its turn behind a gate", async () => {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const seen: ModelRequest[] = [];
    const m = new ScriptedModel([
      { content: "first" },
      async (request: ModelRequest) => {
        seen.push(request);
        await gate;
        return { content: `you said ${request.messages.length} things`, chunk_size: 4, usage: { input_tokens: 2, output_tokens: 3 } };
      },
      { content: "third" },
    ]);
    expect(m.remaining).toBe(3);
    expect((await m.complete(req("one"))).message.content).toBe("first");
    const signal = new AbortController().signal;
    const r = req("two", signal);
    const events: ModelStreamEvent[] = [];
    const playing = (async () => {
      for await (const ev of m.stream(r)) events.push(ev);
    })();
    await Bun.sleep(0);
    // Recorded before the step decided; nothing played while the gate is shut.
    expect(m.requests.length).toBe(2);
    expect(seen).toEqual([r]);
    expect(seen[0]!.signal).toBe(signal);
    expect(events).toEqual([]);
    open();
    await playing;
    expect(events).toEqual([
      { type: "text_delta", delta: "you " },
      { type: "text_delta", delta: "said" },
      { type: "text_delta", delta: " 1 t" },
      { type: "text_delta", delta: "hing" },
      { type: "text_delta", delta: "s" },
      {
        type: "completed",
        message: { content: "you said 1 things", tool_calls: [] },
        usage: { input_tokens: 2, output_tokens: 3, total_tokens: 5 },
      },
    ]);
    expect((await m.complete(req("three"))).message.content).toBe("third");
    expect(m.remaining).toBe(0);
  });

  test("a step's tool calls and error turns play like written ones", async () => {
    const m = new ScriptedModel([
      () => ({ content: null, tool_calls: [{ id: "c1", name: "echo", arguments: '{"a":1,"a":2}' }] }),
      () => Promise.resolve({ error: { kind: "rate_limit" as const, message: "slow down" } }),
    ]);
    const call = (await m.complete(req())).message.tool_calls[0]!;
    expect(call).toMatchObject({ id: "c1", name: "echo", arguments: '{"a":1,"a":2}' });
    expect(call.parsed).toMatchObject({ ok: false, error: { code: "JSON_DUPLICATE_KEY" } });
    const err = (await failure(m.complete(req()))) as ModelProviderError;
    expect(err).toBeInstanceOf(ModelProviderError);
    expect([err.kind, err.message]).toEqual(["rate_limit", "slow down"]);
  });

  test("a step that gives a bad turn fails that request with a ScriptError naming the turn; the next turn still plays", async () => {
    const m = new ScriptedModel([{ content: "ok" }, () => ({ content: 42 }) as never, async () => "nope" as never, { content: "after" }]);
    await m.complete(req());
    const bad = await failure(m.complete(req()));
    expect(bad).toBeInstanceOf(ScriptError);
    expect((bad as Error).message).toBe('scripted model: turn 2 (from its step function): "content" must be a string or null, got number');
    expect(((await failure(m.complete(req()))) as Error).message).toBe(
      "scripted model: turn 3 (from its step function): a turn must be a JSON object, got string",
    );
    expect((await m.complete(req())).message.content).toBe("after");
  });

  test("a step that throws or rejects fails the request with its own error, unwrapped", async () => {
    const boom = new Error("boom");
    const m = new ScriptedModel([
      () => {
        throw boom;
      },
      (request: ModelRequest) =>
        new Promise<never>((_resolve, reject) => request.signal!.addEventListener("abort", () => reject(new Error("gave up")))),
    ]);
    expect(await failure(m.complete(req()))).toBe(boom);
    const ctrl = new AbortController();
    const p = m.complete(req("hi", ctrl.signal));
    ctrl.abort();
    expect(((await failure(p)) as Error).message).toBe("gave up");
  });

  test("a written turn is still checked when the model is made, beside step functions", () => {
    expect(() => new ScriptedModel([() => ({ content: "fine" }), { content: "x", bogus: 1 }])).toThrow(
      'scripted model: turn 2: unknown key "bogus" in a turn',
    );
  });
});
