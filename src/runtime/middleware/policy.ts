/**
 * The rule-based policy middleware (harness-contracts §6).
 *
 * Rules are checked in order; the first one whose `tools`, `effects` and
 * `when` all match decides (`allow`, `deny`, `require_approval`); no match →
 * `defaultAction` (default `deny`). `maxCallsPerRun` is reserved atomically
 * (the check and the increment happen with no `await` in between, so parallel
 * calls cannot overrun it); counts are kept per agent run (`ctx.run.runId`),
 * and calls without run info (CLI) share one count per middleware instance.
 *
 * A refusal short-circuits the call with a `DENIED` envelope (message = the
 * reason, `details.rule_id` when a rule decided) and control `reject`: the
 * agent run ends `rejected / tool_rejected` with the payload
 * `{"status":"rejected","tool":…,"reason":…[,"rule_id":…]}`. Arguments are
 * never part of it. Approval fails closed: no approver, an approver that
 * throws or answers something else than `{ approved: boolean }` → refused.
 *
 * @module
 */
import { raceSignal } from "../abort.ts";
import { failureEnvelope } from "../envelope_io.ts";
import { AWAITING_APPROVAL, type CallDecision, type ToolCallContext, type ToolCallOutcome, type ToolMiddleware } from "./types.ts";
import type { Logger } from "../../core/logger.ts";
import type { ToolEffect } from "../../tools/definition.ts";
import { frozenCopy, type ToolApprovalRequest, type ToolApprover } from "./approval.ts";
import { checkSettings, SettingsValueError, type SettingsSchema } from "../../tools/settings-check.ts";
import { validate as validatePolicy } from "./policy.validator.generated.ts";

export type PolicyAction = "allow" | "deny" | "require_approval";
const ACTIONS: readonly PolicyAction[] = ["allow", "deny", "require_approval"];

/** One policy rule. */
export interface ToolPolicyRule {
  /** Unique within the policy; reported as `rule:<id>` and `rule_id`. */
  id: string;
  action: PolicyAction;
  /** Tool names this rule applies to (absent = any). */
  tools?: readonly string[];
  /** Effects this rule applies to (absent = any). */
  effects?: readonly ToolEffect[];
  /** Extra predicate, sync or async (a throw refuses the call). */
  when?: (ctx: ToolCallContext) => boolean | Promise<boolean>;
  /** At most this many calls matched by this rule per run (not on `deny`). */
  maxCallsPerRun?: number;
  /** Reason given on refusal (or to the approver). */
  reason?: string;
}

/** The rules of {@link ruleBasedPolicy}: the first rule that matches a call decides; else `defaultAction`. */
export interface RuleBasedPolicyOptions {
  rules: readonly ToolPolicyRule[];
  defaultAction?: PolicyAction;
  defaultReason?: string;
  /** Answers `require_approval`; absent → such calls are refused. */
  approver?: ToolApprover;
  /** Where a throwing policy or approver is logged. */
  logger?: Logger;
}

export const REASONS = Object.freeze({
  policyFailed: "tool policy evaluation failed",
  invalidDecision: "tool policy returned an invalid decision",
  denied: "tool execution denied by policy",
  noApprover: "tool execution requires approval but no approver is configured",
  approverFailed: "tool approval failed",
  invalidApproval: "tool approver returned an invalid decision",
  approvalDenied: "tool execution approval was denied",
});

/** The limit-reached reason of a rule. */
export function limitReason(ruleId: string): string {
  return `tool call limit reached for policy rule '${ruleId}'`;
}

/** The agent-facing payload of a refusal. */
export function rejectionPayload(tool: string, reason: string, ruleId?: string | null): Record<string, unknown> {
  const p: Record<string, unknown> = { status: "rejected", tool, reason };
  if (typeof ruleId === "string") p.rule_id = ruleId;
  return p;
}

/** A refusal outcome: `DENIED` envelope, control `reject`. */
export function rejectOutcome(ctx: ToolCallContext, reason: string, ruleId?: string | null): ToolCallOutcome {
  const details: Record<string, unknown> = typeof ruleId === "string" ? { rule_id: ruleId } : {};
  return { envelope: failureEnvelope(ctx.toolCallId, ctx.tool, "DENIED", reason, details, performance.now()), control: "reject" };
}

function checkRules(rules: readonly ToolPolicyRule[], defaultAction: PolicyAction): ToolPolicyRule[] {
  if (!Array.isArray(rules)) throw new TypeError("ruleBasedPolicy: rules must be an array");
  if (!ACTIONS.includes(defaultAction)) throw new TypeError(`ruleBasedPolicy: defaultAction must be one of ${ACTIONS.join(", ")}`);
  const ids = new Set<string>();
  return rules.map((r, i) => {
    if (typeof r !== "object" || r === null) throw new TypeError(`ruleBasedPolicy: rule ${i} must be an object`);
    if (typeof r.id !== "string" || r.id.length === 0) throw new TypeError(`ruleBasedPolicy: rule ${i} needs a non-empty string id`);
    if (ids.has(r.id)) throw new TypeError(`ruleBasedPolicy: duplicate rule id '${r.id}'`);
    ids.add(r.id);
    if (!ACTIONS.includes(r.action)) throw new TypeError(`ruleBasedPolicy: rule '${r.id}': action must be one of ${ACTIONS.join(", ")}`);
    if (r.tools !== undefined && (!Array.isArray(r.tools) || (r.tools as unknown[]).some((t) => typeof t !== "string"))) {
      throw new TypeError(`ruleBasedPolicy: rule '${r.id}': tools must be an array of names`);
    }
    if (
      r.effects !== undefined &&
      (!Array.isArray(r.effects) || (r.effects as unknown[]).some((e) => e !== "read_only" && e !== "side_effecting"))
    ) {
      throw new TypeError(`ruleBasedPolicy: rule '${r.id}': effects must be an array of "read_only" / "side_effecting"`);
    }
    if (r.when !== undefined && typeof r.when !== "function")
      throw new TypeError(`ruleBasedPolicy: rule '${r.id}': when must be a function`);
    if (r.maxCallsPerRun !== undefined) {
      if (r.action === "deny") throw new TypeError(`ruleBasedPolicy: rule '${r.id}': maxCallsPerRun is not allowed on a deny rule`);
      if (!Number.isSafeInteger(r.maxCallsPerRun) || r.maxCallsPerRun < 1)
        throw new TypeError(`ruleBasedPolicy: rule '${r.id}': maxCallsPerRun must be a positive integer`);
    }
    if (r.reason !== undefined && typeof r.reason !== "string")
      throw new TypeError(`ruleBasedPolicy: rule '${r.id}': reason must be a string`);
    return { ...r, tools: r.tools && [...r.tools], effects: r.effects && [...r.effects] };
  });
}

const POLICY_BRAND: unique symbol = Symbol.for("agentcore.policyMiddleware");

/** Whether `m` was made by {@link ruleBasedPolicy} (the runtime puts the default validation before it). */
export function isPolicyMiddleware(m: unknown): boolean {
  return typeof m === "function" && (m as unknown as Record<symbol, unknown>)[POLICY_BRAND] === true;
}

/** How many runs' counts are kept (older runs are forgotten). */
const MAX_TRACKED_RUNS = 256;

/** The rule-based policy middleware. Throws `TypeError` at creation for an invalid rule set. */
export function ruleBasedPolicy(options: RuleBasedPolicyOptions): ToolMiddleware {
  const defaultAction = options.defaultAction ?? "deny";
  const rules = checkRules(options.rules, defaultAction);
  const defaultReason = options.defaultReason;
  const approver = options.approver;
  if (approver !== undefined && typeof approver !== "function") throw new TypeError("ruleBasedPolicy: approver must be a function");
  const logger = options.logger;
  const tools = rules.map((r) => (r.tools ? new Set(r.tools) : null));
  /** run id → rule id → calls reserved. */
  const counts = new Map<string, Map<string, number>>();

  const countsFor = (runId: string): Map<string, number> => {
    let m = counts.get(runId);
    if (m === undefined) {
      if (counts.size >= MAX_TRACKED_RUNS) counts.delete(counts.keys().next().value!);
      m = new Map();
      counts.set(runId, m);
    }
    return m;
  };

  const match = async (ctx: ToolCallContext): Promise<ToolPolicyRule | null> => {
    for (let i = 0; i < rules.length; i++) {
      const r = rules[i]!;
      const names = tools[i];
      if (names !== null && !names.has(ctx.tool)) continue;
      if (r.effects !== undefined && !r.effects.includes(ctx.definition.effect ?? "side_effecting")) continue;
      if (r.when !== undefined) {
        const ok = await r.when(ctx);
        if (ok !== true) continue;
      }
      return r;
    }
    return null;
  };

  const middleware: ToolMiddleware = async (ctx, next) => {
    let rule: ToolPolicyRule | null;
    try {
      rule = await match(ctx);
    } catch (err) {
      logger?.error("tool policy evaluation failed", { tool: ctx.tool, error: err instanceof Error ? err.message : String(err) });
      ctx.decision = { action: "deny", by: "policy", reason: REASONS.policyFailed };
      return rejectOutcome(ctx, REASONS.policyFailed);
    }
    const by = rule === null ? "default" : `rule:${rule.id}`;
    const ruleId = rule?.id ?? null;
    const action = rule?.action ?? defaultAction;
    const reason = rule === null ? defaultReason : rule.reason;
    const decide = (d: CallDecision) => {
      ctx.decision = d;
    };

    if (action === "deny") {
      const why = reason ?? REASONS.denied;
      decide({ action, by, reason: why });
      return rejectOutcome(ctx, why, ruleId);
    }
    // Reserve the rule's quota now: synchronous check-and-increment.
    if (rule !== null && rule.maxCallsPerRun !== undefined) {
      const m = countsFor(ctx.run?.runId ?? "");
      const used = m.get(rule.id) ?? 0;
      if (used >= rule.maxCallsPerRun) {
        const why = limitReason(rule.id);
        decide({ action: "deny", by, reason: why });
        return rejectOutcome(ctx, why, ruleId);
      }
      m.set(rule.id, used + 1);
    }
    if (action === "allow") {
      decide({ action, by, ...(reason !== undefined ? { reason } : {}) });
      return next(ctx);
    }
    // require_approval
    const hooks = ctx.approval;
    const request: ToolApprovalRequest = {
      tool: ctx.tool,
      effect: ctx.definition.effect ?? "side_effecting",
      arguments: frozenCopy(ctx.arguments),
      toolCallId: ctx.toolCallId,
      reason: reason ?? null,
      ruleId,
      ...(ctx.run !== undefined ? { run: ctx.run } : {}),
    };
    const suspend = hooks?.suspend === true && hooks.given === undefined;
    if (approver === undefined && hooks?.given === undefined && !suspend) {
      decide({ action, by, reason: REASONS.noApprover });
      return rejectOutcome(ctx, REASONS.noApprover, ruleId);
    }
    // The request is announced (journaled) before anyone is asked; an earlier answer is not asked again.
    if (hooks?.given === undefined && hooks?.requested !== undefined) {
      try {
        await hooks.requested(request, suspend);
      } catch (err) {
        logger?.error("tool approval request could not be recorded", {
          tool: ctx.tool,
          error: err instanceof Error ? err.message : String(err),
        });
        decide({ action, by, approved: false, reason: REASONS.approverFailed });
        return rejectOutcome(ctx, REASONS.approverFailed, ruleId);
      }
    }
    if (suspend) {
      decide({ action, by, reason: "awaiting approval" });
      const details: Record<string, unknown> = typeof ruleId === "string" ? { rule_id: ruleId } : {};
      return {
        envelope: failureEnvelope(ctx.toolCallId, ctx.tool, AWAITING_APPROVAL, "the call awaits an approval", details, performance.now()),
        control: "continue",
      };
    }
    const decided = async (approved: boolean, why: string | null, decidedBy: string): Promise<void> => {
      if (hooks?.given !== undefined || hooks?.decided === undefined) return;
      try {
        await hooks.decided(request, { approved, reason: why, decidedBy });
      } catch (err) {
        logger?.error("tool approval decision could not be recorded", {
          tool: ctx.tool,
          error: err instanceof Error ? err.message : String(err),
        });
      }
    };
    let answer: unknown;
    if (hooks?.given !== undefined) answer = hooks.given;
    else {
      try {
        answer = await raceSignal(approver!(request, ctx.signal), ctx.signal, () => ctx.signal.reason ?? new Error("aborted"));
      } catch (err) {
        if (ctx.signal.aborted) {
          // Interrupted by the call's cancel or timeout: the call is cancelled, not refused.
          decide({ action, by, reason: "approval interrupted" });
          return {
            envelope: failureEnvelope(
              ctx.toolCallId,
              ctx.tool,
              "CANCELLED",
              "call cancelled while waiting for approval",
              {},
              performance.now(),
            ),
            control: "continue",
          };
        }
        logger?.error("tool approval failed", { tool: ctx.tool, error: err instanceof Error ? err.message : String(err) });
        decide({ action, by, approved: false, reason: REASONS.approverFailed });
        await decided(false, REASONS.approverFailed, "policy");
        return rejectOutcome(ctx, REASONS.approverFailed, ruleId);
      }
    }
    if (typeof answer !== "object" || answer === null || typeof (answer as { approved?: unknown }).approved !== "boolean") {
      decide({ action, by, approved: false, reason: REASONS.invalidApproval });
      await decided(false, REASONS.invalidApproval, "policy");
      return rejectOutcome(ctx, REASONS.invalidApproval, ruleId);
    }
    const a = answer as { approved: boolean; reason?: unknown; decidedBy?: unknown };
    const aReason = typeof a.reason === "string" && a.reason.length > 0 ? a.reason : undefined;
    const decidedBy = typeof a.decidedBy === "string" && a.decidedBy.length > 0 ? a.decidedBy : "approver";
    if (!a.approved) {
      const why = aReason ?? reason ?? REASONS.approvalDenied;
      decide({ action, by, approved: false, reason: why });
      await decided(false, why, decidedBy);
      return rejectOutcome(ctx, why, ruleId);
    }
    decide({ action, by, approved: true, ...(aReason !== undefined ? { reason: aReason } : {}) });
    await decided(true, aReason ?? null, decidedBy);
    return next(ctx);
  };
  return Object.assign(middleware, { [POLICY_BRAND]: true });
}

/** The config file's `policy` section (rules without predicates). */
export interface PolicyConfig {
  default?: PolicyAction;
  default_reason?: string;
  rules?: {
    id: string;
    action: PolicyAction;
    tools?: string[];
    effects?: ToolEffect[];
    max_calls_per_run?: number;
    reason?: string;
  }[];
}

const NON_EMPTY = { type: "string", minLength: 1 } as const;

/**
 * The JSON Schema (draft-07) of a {@link PolicyConfig} as the config file
 * writes it (its `policy` section, which also holds the front ends'
 * `approval_timeout_ms` and `on_approval`); part of the config file's
 * published schema.
 */
export const POLICY_CONFIG_SCHEMA: SettingsSchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    default: { description: "The action when no rule matches.", enum: ACTIONS, default: "deny" },
    default_reason: { description: "The reason given when the default action refuses.", ...NON_EMPTY },
    approval_timeout_ms: {
      description: "How long the terminal approver waits for an answer before it denies.",
      type: "integer",
      minimum: 1,
      maximum: 2_147_483_647,
      "x-unit": "milliseconds",
    },
    on_approval: {
      description: 'What a run does when a call needs approval: "wait" for the answer, or "suspend" (journal the request and stop).',
      enum: ["wait", "suspend"],
      default: "wait",
    },
    rules: {
      description: "Ordered; the first rule that matches decides.",
      type: "array",
      items: {
        type: "object",
        additionalProperties: false,
        required: ["id", "action"],
        properties: {
          id: { description: "unique among the rules", ...NON_EMPTY },
          action: { description: "allow, deny or require_approval", enum: ACTIONS },
          tools: { description: "The tool names this rule matches (any tool when absent).", type: "array", items: NON_EMPTY },
          effects: {
            description: "The effects this rule matches (any when absent).",
            type: "array",
            items: { enum: ["read_only", "side_effecting"] },
          },
          max_calls_per_run: { description: "At most this many calls per run match (not on a deny rule).", type: "integer", minimum: 1 },
          reason: { description: "Shown with the decision.", ...NON_EMPTY },
        },
      },
    },
  },
};

/** A bad policy section; `path` leads from the section to the offending value. */
export class PolicyConfigError extends SettingsValueError {
  readonly code: string = "POLICY_CONFIG_INVALID";
  override name = "PolicyConfigError";
}

/**
 * Check a policy section (an untrusted JSON value) against
 * {@link POLICY_CONFIG_SCHEMA}, then the rules the schema can't say (rule ids
 * are unique; no `max_calls_per_run` on a deny rule). Returns a copy.
 */
export function parsePolicyConfig(
  value: unknown,
  where = "policy",
): PolicyConfig & { approval_timeout_ms?: number; on_approval?: "wait" | "suspend" } {
  const problem = checkSettings(validatePolicy, value, where);
  if (problem !== null) throw new PolicyConfigError(problem.message, problem.path, problem.atKey);
  const config = structuredClone(value) as PolicyConfig & { approval_timeout_ms?: number; on_approval?: "wait" | "suspend" };
  const ids = new Set<string>();
  (config.rules ?? []).forEach((r, i) => {
    if (ids.has(r.id)) throw new PolicyConfigError(`"${where}.rules[${i}].id": duplicate rule id "${r.id}"`, ["rules", i, "id"]);
    ids.add(r.id);
    if (r.max_calls_per_run !== undefined && r.action === "deny")
      throw new PolicyConfigError(`"${where}.rules[${i}].max_calls_per_run" is not allowed on a deny rule`, [
        "rules",
        i,
        "max_calls_per_run",
      ]);
  });
  return config;
}

/** Build the policy middleware from a config section. */
export function policyFromConfig(config: PolicyConfig, extra: { approver?: ToolApprover; logger?: Logger } = {}): ToolMiddleware {
  return ruleBasedPolicy({
    rules: (config.rules ?? []).map((r) => ({
      id: r.id,
      action: r.action,
      ...(r.tools !== undefined ? { tools: r.tools } : {}),
      ...(r.effects !== undefined ? { effects: r.effects } : {}),
      ...(r.max_calls_per_run !== undefined ? { maxCallsPerRun: r.max_calls_per_run } : {}),
      ...(r.reason !== undefined ? { reason: r.reason } : {}),
    })),
    ...(config.default !== undefined ? { defaultAction: config.default } : {}),
    ...(config.default_reason !== undefined ? { defaultReason: config.default_reason } : {}),
    ...extra,
  });
}
