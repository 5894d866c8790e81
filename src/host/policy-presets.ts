/**
 * Policy presets of one run (`POST /v1/runs` `policy`): a name for a rule
 * added to the runtime's own policy that only narrows what the runtime
 * allows, never widens it (a deny of the runtime stays a deny). `read_only`
 * refuses before the runtime's policy (nobody is asked to approve a call
 * that cannot run); `ask` asks after it (a deny of the runtime is not put to
 * a person, and a call the runtime already had approved is asked once, not
 * twice).
 *
 * | preset | read-only tools | side-effecting tools |
 * |---|---|---|
 * | `daemon` (default) | as the runtime's policy says | as the runtime's policy says |
 * | `read_only` | as the runtime's policy says | refused (`DENIED`, rule `preset:read_only`) |
 * | `ask` | as the runtime's policy says | need an approval (rule `preset:ask`), unless already approved |
 *
 * @module
 */
import type { ToolApprover } from "../runtime/middleware/approval.ts";
import { ruleBasedPolicy } from "../runtime/middleware/policy.ts";
import type { ToolMiddleware } from "../runtime/middleware/types.ts";

/** The preset names, the default first. */
export const POLICY_PRESETS = ["daemon", "read_only", "ask"] as const;
export type PolicyPreset = (typeof POLICY_PRESETS)[number];

/** Whether `name` is a preset name. */
export function isPolicyPreset(name: unknown): name is PolicyPreset {
  return typeof name === "string" && (POLICY_PRESETS as readonly string[]).includes(name);
}

/** Where a preset's middleware goes in the chain (see `runtimeView`). */
export interface PresetMiddleware {
  middleware: ToolMiddleware;
  /** `before`: right before the runtime's policy; `after`: after its whole chain. */
  at: "before" | "after";
}

/**
 * The middleware of a preset (null for `daemon`: nothing added). `approver`
 * answers the `ask` preset's approvals (the daemon's approval queue);
 * without it those calls are refused, as the rule-based policy refuses them.
 */
export function presetMiddleware(preset: PolicyPreset, approver?: ToolApprover): PresetMiddleware | null {
  if (preset === "daemon") return null;
  const rule =
    preset === "read_only"
      ? ({
          id: "preset:read_only",
          action: "deny",
          effects: ["side_effecting"],
          reason: 'the run\'s policy preset "read_only" refuses side-effecting tools',
        } as const)
      : ({
          id: "preset:ask",
          action: "require_approval",
          effects: ["side_effecting"],
          reason: 'the run\'s policy preset "ask" needs an approval for side-effecting tools',
        } as const);
  const inner = ruleBasedPolicy({ rules: [rule], defaultAction: "allow", ...(approver !== undefined ? { approver } : {}) });
  // A read-only tool, or a call a person already approved under the runtime's own policy, goes on
  // with the runtime's decision as it is (the history keeps the rule that decided).
  const middleware: ToolMiddleware = (ctx, next) => {
    if ((ctx.definition.effect ?? "side_effecting") === "read_only") return next(ctx);
    if (preset === "ask" && ctx.decision?.action === "require_approval" && ctx.decision.approved === true) return next(ctx);
    return inner(ctx, next);
  };
  return { middleware, at: preset === "read_only" ? "before" : "after" };
}
