/**
 * The planning loop's tool: `update_plan`.
 *
 * The model keeps a short checklist of the task: it writes the whole plan
 * first, then calls `update_plan` again with the same steps as each one moves
 * from `pending` to `in_progress` to `done`. Every call replaces the plan. The
 * tool only changes agent-side state, so its effect is `read_only` (a
 * policy's approval gate never asks about it).
 *
 * Each accepted update is reported through `ctx.progress("plan updated",
 * { plan })`, which the agent turns into a `tool_progressed` event: UIs (the
 * `chat` REPL, `agent --events jsonl` consumers) render the checklist from
 * it. {@link PlanTracker.plan} holds the latest plan, and
 * {@link planFromMessages} recovers it from a restored conversation.
 *
 * @example
 * ```ts
 * const planner = createPlanTool({ onChange: (plan) => console.log(renderPlan(plan).join("\n")) });
 * const runtime = createRuntime();
 * runtime.registry.register(planner.tool);
 * const agent = createAgent({ model, runtime, systemPrompt: PLAN_PROMPT });
 * ```
 *
 * @module
 */
import { ToolError, type ToolContext, type ToolDefinition } from "../tools/definition.ts";
import type { AgentMessage } from "./types.ts";

export const PLAN_TOOL_NAME = "update_plan";

export type PlanStepStatus = "pending" | "in_progress" | "done";
export const PLAN_STEP_STATUSES: readonly PlanStepStatus[] = ["pending", "in_progress", "done"];

/** One checklist item. */
export interface PlanStep {
  title: string;
  status: PlanStepStatus;
}

/** The whole plan, as the model sends it. */
export interface Plan {
  steps: PlanStep[];
}

/** Most steps a plan may have. */
export const MAX_PLAN_STEPS = 30;
/** Longest step title, in characters. */
export const MAX_PLAN_TITLE = 200;

/**
 * The arguments schema of `update_plan`. The tool is `strict`, so the schema
 * keeps to the keywords OpenAI's strict mode accepts: it refuses a function
 * whose schema has `minLength` or `maxLength` ("'minLength' is not
 * permitted"), so the title's bounds are checked by {@link checkPlan} in the
 * handler instead.
 */
export const PLAN_PARAMETERS: Readonly<Record<string, unknown>> = Object.freeze({
  type: "object",
  properties: {
    steps: {
      type: "array",
      minItems: 1,
      maxItems: MAX_PLAN_STEPS,
      items: {
        type: "object",
        properties: {
          title: { type: "string", description: `at most ${MAX_PLAN_TITLE} characters, not blank` },
          status: { enum: [...PLAN_STEP_STATUSES] },
        },
        required: ["title", "status"],
        additionalProperties: false,
      },
    },
  },
  required: ["steps"],
  additionalProperties: false,
});

/** System-prompt note that asks the model to plan first. */
export const PLAN_PROMPT =
  `When a task needs more than one step, call ${PLAN_TOOL_NAME} before anything else with the whole plan ` +
  `(every step "pending", or the first "in_progress"). Then work through the steps in order and call ` +
  `${PLAN_TOOL_NAME} again with the full list each time a step starts ("in_progress") or ends ("done"). ` +
  `At most one step is "in_progress" at a time. Finish with every step "done".`;

/** Counts of a plan's steps by status. */
export interface PlanSummary {
  total: number;
  done: number;
  in_progress: number;
  pending: number;
}

/** Count a plan's steps by status. */
export function planSummary(plan: Plan): PlanSummary {
  const s: PlanSummary = { total: plan.steps.length, done: 0, in_progress: 0, pending: 0 };
  for (const step of plan.steps) s[step.status]++;
  return s;
}

/** A problem with a plan: `pointer` is the JSON Pointer of the offending member. */
export interface PlanProblem {
  pointer: string;
  message: string;
}

/**
 * Check a value against the plan's shape and rules (the schema above plus:
 * at most one step `in_progress`, titles not blank). Returns a private copy,
 * or the first problem found. Never throws.
 */
export function checkPlan(value: unknown): { ok: true; plan: Plan } | { ok: false; problem: PlanProblem } {
  const bad = (pointer: string, message: string) => ({ ok: false as const, problem: { pointer, message } });
  if (typeof value !== "object" || value === null || Array.isArray(value)) return bad("", "the plan must be an object with a steps array");
  const extra = Object.keys(value).find((k) => k !== "steps");
  if (extra !== undefined) return bad(`/${extra.replace(/~/g, "~0").replace(/\//g, "~1")}`, "unexpected property");
  const steps = (value as { steps?: unknown }).steps;
  if (!Array.isArray(steps)) return bad("/steps", "steps must be an array");
  if (steps.length === 0) return bad("/steps", "the plan needs at least one step");
  if (steps.length > MAX_PLAN_STEPS) return bad("/steps", `the plan has ${steps.length} steps, at most ${MAX_PLAN_STEPS} are allowed`);
  const out: PlanStep[] = [];
  let active = -1;
  for (let i = 0; i < steps.length; i++) {
    const s = steps[i] as unknown;
    const at = `/steps/${i}`;
    if (typeof s !== "object" || s === null || Array.isArray(s)) return bad(at, "a step must be an object with title and status");
    const o = s as Record<string, unknown>;
    const unknownKey = Object.keys(o).find((k) => k !== "title" && k !== "status");
    if (unknownKey !== undefined) return bad(`${at}/${unknownKey.replace(/~/g, "~0").replace(/\//g, "~1")}`, "unexpected property");
    if (typeof o.title !== "string") return bad(`${at}/title`, "title must be a string");
    const title = o.title.trim();
    if (title === "") return bad(`${at}/title`, "title must not be blank");
    if (o.title.length > MAX_PLAN_TITLE) return bad(`${at}/title`, `title is longer than ${MAX_PLAN_TITLE} characters`);
    if (typeof o.status !== "string" || !(PLAN_STEP_STATUSES as readonly string[]).includes(o.status)) {
      return bad(`${at}/status`, `status must be one of ${PLAN_STEP_STATUSES.join(", ")}`);
    }
    if (o.status === "in_progress") {
      if (active >= 0) return bad(`${at}/status`, `at most one step may be in_progress (step ${active + 1} already is)`);
      active = i;
    }
    out.push({ title, status: o.status as PlanStepStatus });
  }
  return { ok: true, plan: { steps: out } };
}

/** Options of {@link createPlanTool}. */
export interface PlanToolOptions {
  /** Called with a copy of every accepted plan (after it became current). A throw is ignored. */
  onChange?: (plan: Plan) => void;
}

/** The tool plus the plan it keeps. */
export interface PlanTracker {
  /** Register this on the agent's runtime. */
  readonly tool: ToolDefinition<Plan>;
  /** A copy of the latest accepted plan, or null before the first one. */
  readonly plan: Plan | null;
  /** Replace the current plan (e.g. with {@link planFromMessages} after restoring a session); null clears it. */
  set(plan: Plan | null): void;
}

/**
 * Make an `update_plan` tool with its own plan state (one per agent). A plan
 * that breaks a rule the schema cannot express (two steps `in_progress`, a
 * blank title) fails with `INVALID_ARGUMENTS` and `details.pointer`, and the
 * current plan stays as it was.
 */
export function createPlanTool(options: PlanToolOptions = {}): PlanTracker {
  let current: Plan | null = null;
  const onChange = options.onChange;
  if (onChange !== undefined && typeof onChange !== "function") throw new TypeError("createPlanTool: onChange must be a function");
  const copy = (p: Plan): Plan => ({ steps: p.steps.map((s) => ({ title: s.title, status: s.status })) });

  const tool: ToolDefinition<Plan> = {
    name: PLAN_TOOL_NAME,
    description:
      "Write or update your plan for the task: the full list of steps, each with a status " +
      "(pending, in_progress, done). Call it first with the whole plan, then again whenever a step starts or ends.",
    parameters: PLAN_PARAMETERS as Record<string, unknown>,
    effect: "read_only",
    strict: true,
    handler(args: Plan, ctx: ToolContext) {
      const checked = checkPlan(args);
      if (!checked.ok) {
        throw new ToolError("INVALID_ARGUMENTS", `invalid plan at ${checked.problem.pointer || "/"}: ${checked.problem.message}`, {
          pointer: checked.problem.pointer,
        });
      }
      current = checked.plan;
      ctx.progress("plan updated", { plan: copy(current) });
      if (onChange !== undefined) {
        try {
          onChange(copy(current));
        } catch {
          // a UI callback must not fail the model's call
        }
      }
      return { updated: true, ...planSummary(current) };
    },
  };

  return {
    tool,
    get plan() {
      return current === null ? null : copy(current);
    },
    set(plan: Plan | null) {
      if (plan === null) {
        current = null;
        return;
      }
      const checked = checkPlan(plan);
      if (!checked.ok)
        throw new TypeError(`PlanTracker.set: invalid plan at ${checked.problem.pointer || "/"}: ${checked.problem.message}`);
      current = checked.plan;
    },
  };
}

/**
 * The latest plan in a conversation: the arguments of the last `update_plan`
 * call whose tool message reports success (`"updated":true`). Null when there
 * is none. Never throws.
 */
export function planFromMessages(messages: readonly AgentMessage[]): Plan | null {
  const succeeded = new Set<string>();
  for (const m of messages) {
    if (m.role !== "tool") continue;
    try {
      const v = JSON.parse(m.content) as unknown;
      if (typeof v === "object" && v !== null && (v as { updated?: unknown }).updated === true) succeeded.add(m.tool_call_id);
    } catch {
      // not a plan result
    }
  }
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role !== "assistant" || m.tool_calls === undefined) continue;
    for (let j = m.tool_calls.length - 1; j >= 0; j--) {
      const c = m.tool_calls[j]!;
      if (c.function.name !== PLAN_TOOL_NAME || !succeeded.has(c.id)) continue;
      try {
        const checked = checkPlan(JSON.parse(c.function.arguments));
        if (checked.ok) return checked.plan;
      } catch {
        // malformed arguments: look further back
      }
    }
  }
  return null;
}

/** Markers of {@link renderPlan}. */
export const PLAN_MARKS: Readonly<Record<PlanStepStatus, string>> = Object.freeze({ pending: "[ ]", in_progress: "[~]", done: "[x]" });

/**
 * The plan as terminal lines: a header with the count of done steps, then
 * one `[x]` / `[~]` / `[ ]` line per step. Titles are kept on one line
 * (control characters become spaces).
 */
export function renderPlan(plan: Plan): string[] {
  const s = planSummary(plan);
  // deno-lint-ignore no-control-regex
  const oneLine = (t: string) => t.replace(/[\u0000-\u001f\u007f-\u009f]+/g, " ");
  return [`Plan (${s.done}/${s.total} done)`, ...plan.steps.map((step) => `  ${PLAN_MARKS[step.status]} ${oneLine(step.title)}`)];
}
