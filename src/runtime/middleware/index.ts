/**
 * Tool middleware: composition, schema validation, the rule-based policy and
 * approvers.
 *
 * @module
 */
export { composeMiddleware } from "./compose.ts";
export type { ToolCallTerminal } from "./compose.ts";
export {
  INVALID_TOOL_ARGUMENTS,
  invalidArgumentsPayload,
  isSchemaValidation,
  schemaValidation,
  validateArguments,
  validationMessage,
  VALIDATION_MESSAGES,
} from "./validation.ts";
export {
  isPolicyMiddleware,
  limitReason,
  parsePolicyConfig,
  POLICY_CONFIG_SCHEMA,
  PolicyConfigError,
  policyFromConfig,
  REASONS,
  rejectionPayload,
  rejectOutcome,
  ruleBasedPolicy,
} from "./policy.ts";
export type { PolicyAction, PolicyConfig, RuleBasedPolicyOptions, ToolPolicyRule } from "./policy.ts";
export { createTtyApprover, DEFAULT_APPROVAL_TIMEOUT_MS, frozenCopy, REDACTED, redactArguments, SECRET_KEY_PATTERN } from "./approval.ts";
export type {
  ApproverInput,
  RedactOptions,
  ToolApprovalDecision,
  ToolApprovalRequest,
  ToolApprover,
  TtyApproverOptions,
} from "./approval.ts";
export type { ApprovalHooks, CallDecision, RunInfo, ToolCallContext, ToolCallOutcome, ToolMiddleware } from "./types.ts";
export { AWAITING_APPROVAL } from "./types.ts";
