/**
 * The CLI's approval gate: which policy middleware a command gets, and who
 * answers its `require_approval` decisions.
 *
 * - A config `policy` section always wins: its rules decide, as written.
 * - `agent` and `chat` without a config policy get {@link DEFAULT_GATE_POLICY}:
 *   read-only tools run, side-effecting tools ask first.
 * - Other commands (`execute`, `run`) get no policy unless the config has one.
 * - The approver: `--approve-all` approves every call that asks (deny rules
 *   still deny); else the command's own approver (the `chat` REPL); else the
 *   TTY approver, which refuses when stdin is not a terminal; when stdin
 *   carries the command's input there is no one to ask and such calls are
 *   refused.
 *
 * @module
 */
import { createTtyApprover, frozenCopy, policyFromConfig, type PolicyConfig, type ToolApprover } from "../runtime/middleware/index.ts";
import type { ToolMiddleware } from "../runtime/middleware/types.ts";

/** The policy of `agent` and `chat` when the config has none (deep-frozen). */
export const DEFAULT_GATE_POLICY: Readonly<PolicyConfig> = frozenCopy<PolicyConfig>({
  default: "require_approval",
  default_reason: "side-effecting tools ask first",
  rules: [
    { id: "read-only", action: "allow", effects: ["read_only"] },
    { id: "side-effecting", action: "require_approval", effects: ["side_effecting"], reason: "side-effecting tools ask first" },
  ],
});

/** The one line `--approve-all` prints on stderr. */
export const APPROVE_ALL_WARNING =
  "agentcore: warning: --approve-all: every tool call that would ask for approval runs without asking (deny rules still apply)";

/** The reason recorded for calls approved by `--approve-all`. */
export const APPROVE_ALL_REASON = "approved by --approve-all";

/** An approver that approves everything (for `--approve-all`). */
export const approveAll: ToolApprover = () => Promise.resolve({ approved: true, reason: APPROVE_ALL_REASON, decidedBy: "approve_all" });

/** What {@link gateMiddleware} needs to know about the command. */
export interface GateSettings {
  /** The config file's `policy` section. */
  policy?: PolicyConfig & { approval_timeout_ms?: number };
  /** The command gates side-effecting tools even without a config policy (`agent`, `chat`). */
  defaultGate?: boolean;
  /** `--approve-all`. */
  approveAll?: boolean;
  /** The command's own approver (the chat REPL's). */
  approver?: ToolApprover;
  /** stdin is the command's input (`-`): nobody can answer a prompt. */
  stdinIsInput?: boolean;
}

/** The policy middleware for a command (an empty list when it has no policy). */
export function gateMiddleware(s: GateSettings): ToolMiddleware[] {
  const policy = s.policy ?? (s.defaultGate === true ? DEFAULT_GATE_POLICY : undefined);
  if (policy === undefined) return [];
  let approver: ToolApprover | undefined;
  if (s.approveAll === true) approver = approveAll;
  else if (s.approver !== undefined) approver = s.approver;
  else if (s.stdinIsInput !== true) approver = createTtyApprover({ timeoutMs: s.policy?.approval_timeout_ms });
  const middleware = policyFromConfig(policy as PolicyConfig, approver === undefined ? {} : { approver });
  return [s.approveAll === true ? labelApproveAll(middleware) : middleware];
}

/**
 * Wrap the policy middleware so that calls let through by `--approve-all`
 * carry the decision `by: "approve_all"` (what the history log records). The
 * wrapper keeps the policy brand, so the runtime still puts schema
 * validation before it.
 */
function labelApproveAll(policy: ToolMiddleware): ToolMiddleware {
  const labelled: ToolMiddleware = (ctx, next) =>
    policy(ctx, (c) => {
      const d = c.decision;
      if (d !== undefined && d.action === "require_approval" && d.approved === true && d.reason === APPROVE_ALL_REASON) {
        c.decision = { ...d, by: "approve_all" };
      }
      return next(c);
    });
  return Object.assign(labelled, { [Symbol.for("agentcore.policyMiddleware")]: true });
}
