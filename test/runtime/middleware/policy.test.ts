import { describe, expect, test } from "bun:test";
import { createAgent } from "../../../src/agent/index.ts";
import { createRuntime } from "../../../src/runtime/index.ts";
import type { CallDecision, ToolMiddleware } from "../../../src/runtime/middleware/types.ts";
import { limitReason, REASONS, ruleBasedPolicy, type ToolApprover, type ToolPolicyRule } from "../../../src/runtime/middleware/index.ts";
import type { ToolDefinition } from "../../../src/tools/definition.ts";
import { call, calls, deferred, quietLogger, text } from "../../support/agent.ts";
import { ScriptedModel } from "../../../src/providers/scripted.ts";

function counting(name: string, effect: "read_only" | "side_effecting" = "side_effecting") {
  const ran: unknown[] = [];
  const def: ToolDefinition = {
    name,
    description: "",
    effect,
    parameters: { type: "object" },
    handler: (args) => (ran.push(args), "ok"),
  };
  return { def, ran };
}

const dc = (tool: string, args: Record<string, unknown> = {}, id = "c1") => ({ id, tool, arguments: args, shape: "agentcore" as const });

/** Records the decision the policy left on the context. */
function decisions(into: (CallDecision | undefined)[]): ToolMiddleware {
  return async (ctx, next) => {
    const out = await next(ctx);
    into.push(ctx.decision);
    return out;
  };
}

function rt(
  rules: ToolPolicyRule[],
  tools: ToolDefinition[],
  extra: Partial<Parameters<typeof ruleBasedPolicy>[0]> = {},
  seen?: (CallDecision | undefined)[],
) {
  const policy = ruleBasedPolicy({ rules, logger: quietLogger(), ...extra });
  return createRuntime({ builtins: false, tools, middleware: seen ? [decisions(seen), policy] : [policy], logger: quietLogger() });
}

describe("rule-based policy (issue 4 §3)", () => {
  test("default deny short-circuits the handler: DENIED with the reason, decision by default", async () => {
    const t = counting("wire");
    const seen: (CallDecision | undefined)[] = [];
    const env = await rt([], [t.def], {}, seen).dispatchCall(dc("wire", { token: "abc" }));
    expect(t.ran).toEqual([]);
    expect(env.error).toEqual({ code: "DENIED", message: REASONS.denied, details: {} });
    expect(seen).toEqual([{ action: "deny", by: "default", reason: REASONS.denied }]);
  });

  test("default deny ends an agent run rejected/tool_rejected; the payload names the tool, never the arguments", async () => {
    const t = counting("wire");
    const model = new ScriptedModel([call("c1", "wire", { password: "hunter2" }), text("never")]);
    const runtime = rt([], [t.def]);
    const agent = createAgent({ model, runtime });
    const res = await agent.run("go");
    expect([res.status, res.stop_reason, res.error]).toEqual(["rejected", "tool_rejected", "tool execution was rejected"]);
    const payload = JSON.parse(res.output!);
    expect(payload).toEqual({ status: "rejected", tool: "wire", reason: REASONS.denied });
    expect("arguments" in payload).toBe(false);
    expect(res.output).not.toContain("hunter2");
    expect(t.ran).toEqual([]);
    expect(model.requests.length).toBe(1);
  });

  test("a deny rule gives its reason and rule_id", async () => {
    const t = counting("rm");
    const model = new ScriptedModel([call("c1", "rm", {}), text("never")]);
    const agent = createAgent({ model, runtime: rt([{ id: "no-rm", action: "deny", tools: ["rm"], reason: "rm is off" }], [t.def]) });
    const res = await agent.run("go");
    expect(JSON.parse(res.output!)).toEqual({ status: "rejected", tool: "rm", reason: "rm is off", rule_id: "no-rm" });
  });

  test("rules are ordered: the first match wins", async () => {
    const t = counting("rm");
    const seen: (CallDecision | undefined)[] = [];
    const r = rt(
      [
        { id: "allow-rm", action: "allow", tools: ["rm"] },
        { id: "deny-all", action: "deny" },
      ],
      [t.def],
      {},
      seen,
    );
    expect((await r.dispatchCall(dc("rm"))).result).toBe("ok");
    expect(seen[0]).toEqual({ action: "allow", by: "rule:allow-rm" });
    const r2 = rt(
      [
        { id: "deny-all", action: "deny" },
        { id: "allow-rm", action: "allow", tools: ["rm"] },
      ],
      [t.def],
    );
    expect((await r2.dispatchCall(dc("rm"))).error?.details).toEqual({ rule_id: "deny-all" });
  });

  test("selection by effect and by sync and async predicates", async () => {
    const ro = counting("look", "read_only");
    const se = counting("touch", "side_effecting");
    const r = rt(
      [
        { id: "sync-when", action: "allow", when: (ctx) => ctx.arguments.safe === true },
        { id: "async-when", action: "allow", when: async (ctx) => (await Promise.resolve(ctx.arguments.ok)) === "yes" },
        { id: "reads", action: "allow", effects: ["read_only"] },
      ],
      [ro.def, se.def],
    );
    expect((await r.dispatchCall(dc("look"))).success).toBe(true);
    expect((await r.dispatchCall(dc("touch"))).error?.code).toBe("DENIED");
    expect((await r.dispatchCall(dc("touch", { safe: true }))).success).toBe(true);
    expect((await r.dispatchCall(dc("touch", { ok: "yes" }))).success).toBe(true);
    expect((await r.dispatchCall(dc("touch", { ok: "no" }))).error?.code).toBe("DENIED");
  });

  test("a throwing predicate fails closed with the policy-failed reason", async () => {
    const t = counting("x");
    const env = await rt(
      [
        {
          id: "bad",
          action: "allow",
          when: () => {
            throw new Error("boom");
          },
        },
      ],
      [t.def],
    ).dispatchCall(dc("x"));
    expect(env.error).toEqual({ code: "DENIED", message: REASONS.policyFailed, details: {} });
    expect(t.ran).toEqual([]);
  });

  test("invalid rule sets fail at creation", () => {
    expect(() =>
      ruleBasedPolicy({
        rules: [
          { id: "a", action: "allow" },
          { id: "a", action: "deny" },
        ],
      }),
    ).toThrow("duplicate rule id");
    expect(() => ruleBasedPolicy({ rules: [{ id: "d", action: "deny", maxCallsPerRun: 2 }] })).toThrow("not allowed on a deny rule");
    expect(() => ruleBasedPolicy({ rules: [{ id: "z", action: "maybe" as never }] })).toThrow("action must be one of");
  });

  test("maxCallsPerRun: the limit refuses with its reason, and counts reset with each agent run", async () => {
    const t = counting("ping");
    const runtime = rt([{ id: "two", action: "allow", tools: ["ping"], maxCallsPerRun: 2 }], [t.def]);
    const turn = (i: number) => call(`c${i}`, "ping", { i });
    const model = new ScriptedModel([turn(1), turn(2), turn(3), turn(4), turn(5), text("second run done")]);
    const agent = createAgent({ model, runtime });
    const first = await agent.run("one");
    expect([first.status, first.stop_reason]).toEqual(["rejected", "tool_rejected"]);
    expect(JSON.parse(first.output!)).toEqual({ status: "rejected", tool: "ping", reason: limitReason("two"), rule_id: "two" });
    expect(t.ran.length).toBe(2);
    const second = await agent.run("two");
    expect(second.output).toBe("second run done");
    expect(t.ran.length).toBe(4);
  });

  test("the same agent: a second run starts a fresh count", async () => {
    const t = counting("ping");
    const runtime = rt([{ id: "one", action: "allow", tools: ["ping"], maxCallsPerRun: 1 }], [t.def]);
    const model = new ScriptedModel([call("a", "ping", { n: 1 }), text("first"), call("b", "ping", { n: 2 }), text("second")]);
    const agent = createAgent({ model, runtime });
    expect((await agent.run("one")).output).toBe("first");
    expect((await agent.run("two")).output).toBe("second");
    expect(t.ran.length).toBe(2);
  });

  test("CLI calls (no run info) share one count per runtime", async () => {
    const t = counting("ping");
    const r = rt([{ id: "three", action: "allow", maxCallsPerRun: 3 }], [t.def]);
    const codes = [];
    for (let i = 0; i < 5; i++) codes.push((await r.dispatch(`{"tool":"ping","arguments":{}}`)).error?.code ?? "ok");
    expect(codes).toEqual(["ok", "ok", "ok", "DENIED", "DENIED"]);
  });

  test("50 parallel read-only calls against maxCallsPerRun 10: exactly 10 run", async () => {
    let running = 0;
    const release = deferred();
    const ran: number[] = [];
    const look: ToolDefinition<{ n: number }> = {
      name: "look",
      description: "",
      effect: "read_only",
      parameters: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] },
      handler: async ({ n }) => {
        running++;
        ran.push(n);
        await release.promise;
        running--;
        return n;
      },
    };
    // An async predicate: every call yields before the reservation, so all 50 interleave.
    const runtime = rt(
      [{ id: "ten", action: "allow", effects: ["read_only"], when: async () => true, maxCallsPerRun: 10 }],
      [look as never],
    );
    const batch = calls(Array.from({ length: 50 }, (_, i) => [`c${i}`, "look", { n: i }] as [string, string, unknown]));
    const model = new ScriptedModel([batch, text("never")]);
    const agent = createAgent({ model, runtime, policy: { parallelToolCalls: true } });
    const p = agent.run("go");
    while (running < 10) await new Promise((r) => setTimeout(r, 1));
    release.resolve();
    const res = await p;
    expect(ran.length).toBe(10);
    expect([res.status, res.stop_reason]).toEqual(["rejected", "tool_rejected"]);
    expect(JSON.parse(res.output!)).toMatchObject({ status: "rejected", tool: "look", reason: limitReason("ten"), rule_id: "ten" });
  });
});

describe("approval (issue 4 §3-4)", () => {
  const rules: ToolPolicyRule[] = [{ id: "ask", action: "require_approval", tools: ["wire"], reason: "money moves" }];

  test("no approver configured → refused", async () => {
    const t = counting("wire");
    const env = await rt(rules, [t.def]).dispatchCall(dc("wire"));
    expect(env.error).toEqual({ code: "DENIED", message: REASONS.noApprover, details: { rule_id: "ask" } });
  });

  test("the approver gets a deep-frozen copy and the rule; an approval runs the call", async () => {
    const t = counting("wire");
    const seen: (CallDecision | undefined)[] = [];
    let request: Parameters<ToolApprover>[0] | undefined;
    const approver: ToolApprover = async (req) => ((request = req), { approved: true, reason: "fine" });
    const env = await rt(rules, [t.def], { approver }, seen).dispatchCall(dc("wire", { to: { iban: "X" } }, "id9"));
    expect(env.result).toBe("ok");
    expect(request).toMatchObject({
      tool: "wire",
      effect: "side_effecting",
      toolCallId: "id9",
      reason: "money moves",
      ruleId: "ask",
      arguments: { to: { iban: "X" } },
    });
    expect(Object.isFrozen(request!.arguments)).toBe(true);
    expect(Object.isFrozen(request!.arguments.to)).toBe(true);
    expect(seen[0]).toEqual({ action: "require_approval", by: "rule:ask", approved: true, reason: "fine" });
  });

  test("denied → refused with the approver's reason, else the rule's, else the default", async () => {
    const t = counting("wire");
    const deny =
      (reason?: string): ToolApprover =>
      async () =>
        reason === undefined ? { approved: false } : { approved: false, reason };
    expect((await rt(rules, [t.def], { approver: deny("nope") }).dispatchCall(dc("wire"))).error?.message).toBe("nope");
    expect((await rt(rules, [t.def], { approver: deny() }).dispatchCall(dc("wire"))).error?.message).toBe("money moves");
    const bare: ToolPolicyRule[] = [{ id: "ask", action: "require_approval" }];
    expect((await rt(bare, [t.def], { approver: deny() }).dispatchCall(dc("wire"))).error?.message).toBe(REASONS.approvalDenied);
    expect(t.ran).toEqual([]);
  });

  test("an approver that throws, or returns garbage, fails closed with the right reason", async () => {
    const t = counting("wire");
    const throws: ToolApprover = async () => {
      throw new Error("approver down");
    };
    expect((await rt(rules, [t.def], { approver: throws }).dispatchCall(dc("wire"))).error?.message).toBe(REASONS.approverFailed);
    for (const garbage of [null, "yes", { approved: "true" }, {}, 1]) {
      const approver = (async () => garbage) as unknown as ToolApprover;
      const env = await rt(rules, [t.def], { approver }).dispatchCall(dc("wire"));
      expect(env.error).toEqual({ code: "DENIED", message: REASONS.invalidApproval, details: { rule_id: "ask" } });
    }
    expect(t.ran).toEqual([]);
  });

  test("an agent run with a denied approval ends rejected with the payload", async () => {
    const t = counting("wire");
    const model = new ScriptedModel([call("c1", "wire", { secret: "s3cr3t" }), text("never")]);
    const agent = createAgent({ model, runtime: rt(rules, [t.def], { approver: async () => ({ approved: false }) }) });
    const res = await agent.run("go");
    expect([res.status, res.stop_reason]).toEqual(["rejected", "tool_rejected"]);
    expect(JSON.parse(res.output!)).toEqual({ status: "rejected", tool: "wire", reason: "money moves", rule_id: "ask" });
  });

  test("a slow approver is interrupted by the call's abort: CANCELLED, the handler never runs", async () => {
    const t = counting("wire");
    const asked = deferred();
    let approverSignal: AbortSignal | undefined;
    const approver: ToolApprover = (_req, signal) => {
      approverSignal = signal;
      asked.resolve();
      return new Promise(() => {}); // never answers
    };
    const ac = new AbortController();
    const p = rt(rules, [t.def], { approver }).dispatchCall(dc("wire"), ac.signal);
    await asked.promise;
    ac.abort();
    const env = await p;
    expect(env.error?.code).toBe("CANCELLED");
    expect(approverSignal!.aborted).toBe(true);
    expect(t.ran).toEqual([]);
  });

  test("cancelling an agent run while an approval is pending settles the call and the run", async () => {
    const t = counting("wire");
    const asked = deferred();
    const approver: ToolApprover = () => (asked.resolve(), new Promise(() => {}));
    const model = new ScriptedModel([call("c1", "wire", {}), text("never")]);
    const agent = createAgent({ model, runtime: rt(rules, [t.def], { approver }) });
    const p = agent.run("go");
    await asked.promise;
    agent.abort("stop now");
    const res = await p;
    expect([res.status, res.stop_reason]).toEqual(["cancelled", "external_abort"]);
    expect(t.ran).toEqual([]);
  });
});
