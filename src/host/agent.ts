/**
 * A ready agent from a run spec: the one place where agentcore's front ends
 * (`agentcore agent`, `chat`, `POST /v1/runs`) put an agent together. The
 * same spec builds the same agent whichever front end gives it: the same
 * policy, system prompt and plan tool, the same compaction (one summary
 * prompt, `prompts.ts`), the session recorder among the sinks, and the
 * session's messages restored.
 *
 * The front end keeps what is its own: parsing its input, taking the session
 * branch (the CLI for the whole command, the daemon per operation), wording
 * errors for its users, and rendering events.
 *
 * @module
 */
import { AgentcoreError } from "../core/errors.ts";
import { createAgent, type Agent, type AgentEventSink } from "../agent/index.ts";
import { createPlanTool, PLAN_PROMPT, PLAN_TOOL_NAME, planFromMessages, type Plan, type PlanTracker } from "../agent/plan.ts";
import type { RuntimePolicyOptions } from "../agent/types.ts";
import type { ToolApprover } from "../runtime/middleware/approval.ts";
import { runtimeView } from "../runtime/view.ts";
import { budgetForContextWindow, CompactionPolicy, ModelCompactor } from "../context/index.ts";
import type { ModelAdapter } from "../providers/types.ts";
import type { Runtime } from "../runtime/runtime.ts";
import type { JournalStorage } from "../session/journal.ts";
import { loadSessionImages } from "../session/blobs.ts";
import { SessionRecorder } from "../session/recorder.ts";
import { restoreSession } from "../session/restore.ts";
import { sessionMessages, type SessionCheckout } from "../session/types.ts";
import type { SkillCatalog } from "../skills/catalog.ts";
import type { ModelSpec } from "./model.ts";
import { type PolicyPreset, presetMiddleware } from "./policy-presets.ts";
import { summaryPrompt } from "./prompts.ts";
import { InstructionsError, loadProjectInstructions, withInstructions } from "./instructions.ts";

/** Compaction of a run spec: the model's context window, and optionally the budget's other two numbers. */
export interface CompactionSpec {
  contextWindow: number;
  /** Tokens kept free for the answer; default a quarter of the window (`budgetForContextWindow`). */
  reserveTokens?: number;
  /** Recent tokens never summarised; default by the same rule. */
  keepRecentTokens?: number;
  /** Compact on its own under pressure and on an overflow (default true); false: only when asked. */
  auto?: boolean;
}

/** What a run is, whichever front end asks for it. */
export interface RunSpec {
  model?: ModelSpec;
  system?: string;
  /** Register update_plan and ask the model to plan first (default true). */
  plan?: boolean;
  maxSteps?: number;
  maxRunTokens?: number;
  compaction?: CompactionSpec;
  /** Record the run in this session branch (default branch main). */
  session?: { id: string; branch?: string };
  /** A call that needs an approval journals its request and ends the run `awaiting_approval` (see `AgentOptions.suspendOnApproval`). */
  suspendOnApproval?: boolean;
  /** The runtime's tools the run may use (absent: all); the others are not offered, and a call to one is `UNKNOWN_TOOL`. */
  tools?: readonly string[];
  /** A policy preset applied after the runtime's own policy (it only narrows it; default `daemon`: nothing added). */
  policy?: PolicyPreset;
  /** Read the workspace's AGENTS.md files into the system prompt (default true; see instructions.ts). */
  projectInstructions?: boolean;
}

/** A setup problem of the spec the front end words for its users (a plan tool already registered). */
export class RunSpecError extends AgentcoreError {
  readonly code: string = "RUN_SPEC_INVALID";
  override name = "RunSpecError";
  constructor(
    message: string,
    readonly part: "plan" | "compaction" | "agent" | "instructions",
  ) {
    super(message);
  }
}

/** What {@link buildAgent} needs besides the spec. */
export interface BuildAgentOptions {
  model: ModelAdapter;
  skills?: SkillCatalog | null;
  /** The session's storage and checkout (null: a new session); needed when the spec has a session. */
  storage?: JournalStorage;
  checkout?: SessionCheckout | null;
  /**
   * The recording sink instead of a {@link SessionRecorder} made here (chat
   * swaps its recorder on /fork); it goes first among the sinks too.
   */
  recordSink?: AgentEventSink;
  /** The front end's sinks (rendering, streaming), after the recorder unless `recordFirst` is false. */
  sinks?: AgentEventSink[];
  /**
   * The recorder before the front end's sinks (default: an event reaches a
   * stream only once its record is written: the daemon); false puts it after
   * them (the CLI shows an event at once, then journals it).
   */
  recordFirst?: boolean;
  /** The agent id when the session has none yet (a session keeps its agent id across processes). */
  agentId?: string;
  /** The label of compaction summaries (`agent`, `chat`, …). */
  source?: string;
  /** Hears every plan update. */
  onPlanChange?: (plan: Plan) => void;
  /** Answers the approvals of the `ask` policy preset (the daemon's approval queue). */
  approver?: ToolApprover;
  /**
   * The working folder: AGENTS.md files are read from the runtime's root
   * down to it when it is inside the root (the CLI's current folder; the
   * daemon gives none, so only the root's file is read).
   */
  cwd?: string;
}

/** An agent ready to run, and what the front end keeps of its making. */
export interface BuiltAgent {
  agent: Agent;
  /** The session recorder made here (null without a session, or when `recordSink` was given). */
  recorder: SessionRecorder | null;
  /** The plan tool (null with `plan: false`). */
  planner: PlanTracker | null;
  /** Whether the agent can compact (`compact()`). */
  compaction: boolean;
}

/** The compaction options of `spec` for `model`. */
export function compactionOptions(model: ModelAdapter, spec: CompactionSpec, source?: string) {
  const derived =
    spec.reserveTokens === undefined || spec.keepRecentTokens === undefined ? budgetForContextWindow(spec.contextWindow) : null;
  return {
    policy: new CompactionPolicy({
      contextWindow: spec.contextWindow,
      reserveTokens: spec.reserveTokens ?? derived!.reserveTokens,
      keepRecentTokens: spec.keepRecentTokens ?? derived!.keepRecentTokens,
    }),
    compactor: source === undefined ? new ModelCompactor(model, summaryPrompt) : new ModelCompactor(model, summaryPrompt, source),
    auto: { enabled: spec.auto !== false },
  };
}

/**
 * Register the update_plan tool on `runtime` (unless `enabled` is false) and
 * return it with the system prompt to use (the plan note appended).
 */
export function setupPlan(
  runtime: Runtime,
  system: string | undefined,
  enabled: boolean | undefined,
  onChange?: (plan: Plan) => void,
): { planner: PlanTracker | null; systemPrompt: string | undefined } {
  if (enabled === false) return { planner: null, systemPrompt: system };
  if (runtime.registry.has(PLAN_TOOL_NAME)) throw new RunSpecError(`a tool named ${PLAN_TOOL_NAME} is already registered`, "plan");
  const planner = createPlanTool(onChange === undefined ? {} : { onChange });
  runtime.registry.register(planner.tool);
  return { planner, systemPrompt: system === undefined ? PLAN_PROMPT : `${system}\n\n${PLAN_PROMPT}` };
}

/**
 * The agent of `spec` on `runtime`, its session restored. A session error
 * of the restore (`SessionUnfinishedRunError`, …) is thrown as it is, after
 * the agent is shut down; a bad compaction budget is a {@link RunSpecError}.
 */
export async function buildAgent(spec: RunSpec, runtime: Runtime, options: BuildAgentOptions): Promise<BuiltAgent> {
  const { model } = options;
  const policy: RuntimePolicyOptions = {};
  if (spec.maxSteps !== undefined) policy.maxSteps = spec.maxSteps;
  if (spec.maxRunTokens !== undefined) policy.maxRunTokens = spec.maxRunTokens;
  let instructions = { text: "", files: [] } as ReturnType<typeof loadProjectInstructions>;
  if (spec.projectInstructions !== false) {
    try {
      instructions = loadProjectInstructions(runtime.root, options.cwd);
    } catch (e) {
      if (e instanceof InstructionsError) throw new RunSpecError(`project instructions: ${e.message}`, "instructions");
      throw e;
    }
  }
  const system = withInstructions(spec.system, instructions);
  const { planner, systemPrompt } = setupPlan(runtime, system, spec.plan, options.onPlanChange);
  // The run's own tools and preset: a view of the runtime (the runtime itself is shared by every run).
  const preset = spec.policy === undefined ? null : presetMiddleware(spec.policy, options.approver);
  if (spec.tools !== undefined || preset !== null) {
    runtime = runtimeView(runtime, {
      ...(spec.tools !== undefined ? { tools: planner === null ? spec.tools : [...spec.tools, PLAN_TOOL_NAME] } : {}),
      ...(preset !== null ? (preset.at === "before" ? { beforePolicy: [preset.middleware] } : { middleware: [preset.middleware] }) : {}),
    });
  }
  let compaction;
  try {
    compaction = spec.compaction === undefined ? undefined : compactionOptions(model, spec.compaction, options.source);
  } catch (e) {
    throw new RunSpecError((e as Error).message, "compaction");
  }
  const checkout = options.checkout ?? null;
  let recorder: SessionRecorder | null = null;
  let recordSink: AgentEventSink | null = options.recordSink ?? null;
  if (spec.session !== undefined && recordSink === null) {
    if (options.storage === undefined) throw new TypeError("buildAgent: a session needs its storage");
    recorder = new SessionRecorder(spec.session.id, options.storage, spec.session.branch ?? "main");
    recordSink = recorder;
  }
  const own = recordSink === null ? [] : [recordSink];
  const sinks = options.recordFirst === false ? [...(options.sinks ?? []), ...own] : [...own, ...(options.sinks ?? [])];
  const agentId = checkout?.session.agent_id ?? options.agentId;
  let agent: Agent;
  try {
    agent = createAgent({
      model,
      runtime,
      policy,
      sinks,
      systemPrompt,
      ...(options.skills != null ? { skills: options.skills } : {}),
      ...(compaction !== undefined ? { compaction } : {}),
      ...(agentId !== undefined ? { agentId } : {}),
      ...(spec.suspendOnApproval === true ? { suspendOnApproval: true } : {}),
      ...(instructions.files.length > 0 ? { instructions: instructions.files } : {}),
      // The session is the conversation of the run's spans (gen_ai.conversation.id).
      ...(spec.session !== undefined ? { tracing: { conversationId: spec.session.id } } : {}),
    });
  } catch (e) {
    throw new RunSpecError((e as Error).message, spec.compaction !== undefined ? "compaction" : "agent");
  }
  if (checkout !== null) {
    try {
      // The images' bytes come back from the store's blobs, each checked against its hash.
      if (options.storage !== undefined) await loadSessionImages(options.storage, checkout.session);
      restoreSession(agent, checkout);
      planner?.set(planFromMessages(sessionMessages(checkout.session)));
    } catch (e) {
      await agent.shutdown();
      throw e;
    }
  }
  return { agent, recorder, planner, compaction: compaction !== undefined };
}
