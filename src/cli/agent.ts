/**
 * `agentcore agent "task"`: one agent run with the built-in tools.
 *
 * The model comes from `--script FILE` (a {@link ScriptedModel}, no network),
 * or from `--preset`, `--model` and `--model-url` over the environment
 * (`CHAT_MODEL`, `MODEL_URL`, `MODEL_API_KEY`, `LLM_TIMEOUT`,
 * `LLM_TEMPERATURE`, `LLM_INCLUDE_USAGE`).
 *
 * Output: by default the assistant's text streams to stdout; when stderr is a
 * terminal, the live view goes there (src/cli/live.ts): a spinner while the
 * model is silent or tools run, each tool call as one line as chat draws it,
 * and the run's summary line; `--show-thinking` adds the thinking. With `--events jsonl`
 * every event is one JSON line on stdout instead, ending with
 * `agent_finished`, which carries the result. Exit status 0 when the run
 * completed, 3 when it suspended awaiting an approval (`--suspend-on-approval`;
 * answered with `sessions approve|deny`, resumed with `--resume`), 1 otherwise; Ctrl-C aborts the run (`cancelled` /
 * `external_abort`). SIGTERM and SIGHUP abort it the same way (so a session
 * journals its `run_finished`), then the command exits 143 / 129; a second
 * signal while stopping exits at once (130 for a second Ctrl-C).
 *
 * @module
 */
import { type ImageAttachment, ImageInputError } from "../providers/images.ts";
import { loadImageFiles } from "./images.ts";
import { type Agent, type AgentEvent, compileOutputSchema } from "../agent/index.ts";
import type { ToolCallResult } from "../agent/types.ts";
import { parseStrict } from "../core/parse.ts";
import { ModelConfigError } from "../providers/config.ts";
import { DEFAULT_MAX_RETRIES, type RetryOptions } from "../providers/retry.ts";
import type { ModelAdapter } from "../providers/types.ts";
import type { Runtime } from "../runtime/index.ts";
import type { OpenedStore } from "../host/store.ts";
import { redactUrl } from "../session/postgres/errors.ts";
import type { BranchClaim, JournalStorage } from "../session/journal.ts";
import { shellWord } from "../session/manage.ts";
import { pendingApprovals, type SessionCheckout, SessionError, SessionUnfinishedRunError } from "../session/types.ts";
import { resumeDecisions } from "../session/approvals.ts";
import { OutputError, type LineWriter } from "./output.ts";
import { loadCliSkills } from "./skills.ts";
import { SkillError, type SkillCatalog } from "../skills/catalog.ts";
import { checkPlan, PLAN_TOOL_NAME, renderPlan, type Plan, type PlanTracker } from "../agent/plan.ts";
import {
  buildAgent,
  RunSpecError,
  setupPlan as hostSetupPlan,
  type BuildAgentOptions,
  type BuiltAgent,
  type RunSpec,
} from "../host/agent.ts";
import { makeModel as hostMakeModel, ModelSpecError, PRESET_NAMES } from "../host/model.ts";
import { argsSummary, outcomeText } from "./chat/render.ts";
import { dim, Spinner, summaryLine, terminalLook, ThinkingView } from "./live.ts";
import {
  AgentSetupError,
  AgentUsageError,
  approvalLines,
  checkResume,
  claimSessionBranch,
  missingBranchMessage,
  openSessionStore,
  recoverForResume,
  reportRepair,
  terminalLine,
  unfinishedRunError,
} from "./agent-session.ts";

/** Flags of the `agent` command, as parsed by the CLI. */
export interface AgentFlags {
  task: string;
  script?: string;
  preset?: string;
  model?: string;
  modelUrl?: string;
  events?: string;
  maxSteps?: number;
  maxRunTokens?: number;
  system?: string;
  /** Record the run in this session (resuming its messages first). */
  session?: string;
  branch?: string;
  sessionsDir?: string;
  /** The store of the settings (`--store`, else AGENTCORE_STORE, else the config's store): a JSONL folder or a postgres:// URL; --sessions-dir wins over it. */
  store?: string;
  /** `--store` itself, as given (printed commands repeat it). */
  storeFlag?: string;
  /** continueRun() after restoring the session, instead of a new task. */
  continue?: boolean;
  /** resumeRun() a run that ended awaiting_approval, with the answers journaled since (--resume). */
  resume?: boolean;
  /** --suspend-on-approval: a call that needs approval ends the run awaiting_approval instead of asking (needs --session). */
  suspendOnApproval?: boolean;
  /** The config's policy.on_approval is "suspend" (applies to runs with a session). */
  suspendByConfig?: boolean;
  /** Register the update_plan tool and ask the model to plan first (default true; --no-plan). */
  plan?: boolean;
  /** Read AGENTS.md into the system prompt (default true; --no-project-instructions, or the config's project_instructions: false). */
  projectInstructions?: boolean;
  /** Skills folder (--skills, else the config's skills_dir); default: .agentcore/skills under the root when it exists. */
  skills?: string;
  /** The model's context window in tokens: turns on automatic compaction (--context-window). */
  contextWindow?: number;
  /** --output-schema FILE: a JSON Schema the final answer must match; the value is printed as JSON on stdout. */
  outputSchema?: string;
  /** --show-thinking: the model's thinking as it streams, on stderr. */
  showThinking?: boolean;
  /** --image FILE (repeatable): the task's images. */
  images?: string[];
}

/** The most an --output-schema file may hold. */
const MAX_SCHEMA_FILE = 1 << 20;

/**
 * Read and check an --output-schema file: one JSON object (read by the
 * strict core) that compiles as a JSON Schema. Errors name the file and
 * what is wrong (exit 2).
 */
export async function loadOutputSchema(file: string): Promise<Record<string, unknown>> {
  const where = `--output-schema ${file}`;
  if (file.trim() === "") throw new AgentUsageError("--output-schema needs a file: a JSON Schema the final answer must match");
  let bytes: Uint8Array;
  try {
    const { readFile, stat } = await import("node:fs/promises");
    const st = await stat(file);
    if (!st.isFile()) throw new AgentSetupError(`${where}: not a file`);
    if (st.size > MAX_SCHEMA_FILE) throw new AgentSetupError(`${where}: the file is larger than 1 MiB`);
    bytes = await readFile(file);
  } catch (e) {
    if (e instanceof AgentSetupError) throw e;
    const code = (e as { code?: unknown }).code;
    throw new AgentSetupError(`${where}: cannot read the file (${typeof code === "string" ? code : (e as Error).message})`);
  }
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new AgentSetupError(`${where}: not valid UTF-8`);
  }
  const parsed = parseStrict(text);
  if (!parsed.ok) {
    const e = parsed.error;
    throw new AgentSetupError(`${where}: not valid JSON: ${e.message} at line ${e.line}, column ${e.column}`);
  }
  const v = parsed.value;
  if (typeof v !== "object" || v === null || Array.isArray(v))
    throw new AgentSetupError(
      `${where}: a JSON Schema must be a JSON object, got ${v === null ? "null" : Array.isArray(v) ? "an array" : typeof v}`,
    );
  const schema = v as Record<string, unknown>;
  try {
    compileOutputSchema({ outputSchema: schema });
  } catch (e) {
    const msg = (e as Error).message.replace(/^outputSchema: /, "");
    throw new AgentSetupError(`${where}: not a usable JSON Schema: ${msg}`);
  }
  return schema;
}

/** The --image files as the task's images; a bad one is a setup error (exit 2) naming it. */
async function cliImages(files: string[]): Promise<ImageAttachment[]> {
  try {
    return await loadImageFiles(files);
  } catch (e) {
    if (e instanceof ImageInputError) throw new AgentSetupError(e.message);
    throw e;
  }
}

/** Exit status of a run that suspended awaiting an approval (neither success, 0, nor failure, 1). */
export const SUSPENDED_STATUS = 3;

/** Signals that end the agent command after aborting the run, with their exit status (128 + n). */
const ENDING_SIGNALS = [
  ["SIGTERM", 143],
  ["SIGHUP", 129],
] as const;

/**
 * The model of the flags: a ScriptedModel for --script, else the
 * OpenAI-compatible adapter; `onRetry` hears of each retry it waits for (a
 * rate limit's Retry-After can hold a request for up to 30 s).
 */
export async function makeModel(flags: AgentFlags, onRetry?: RetryOptions["onRetry"]): Promise<ModelAdapter> {
  try {
    return await hostMakeModel(runSpecOf(flags).model!, onRetry === undefined ? {} : { onRetry });
  } catch (e) {
    if (!(e instanceof ModelSpecError)) throw e;
    if (e.part === "conflict") throw new AgentUsageError("--script replaces the model: drop --preset, --model and --model-url");
    if (e.part === "preset") throw new AgentUsageError(`--preset must be one of ${PRESET_NAMES.join(", ")}, got '${flags.preset}'`);
    if (e.config !== null) throw new AgentSetupError(cliModelMessage(e.config, flags));
    throw new AgentSetupError(e.message);
  }
}

/**
 * The run spec of the flags agent and chat share: the CLI's words for what
 * `POST /v1/runs` takes as a body, so the same settings build the same agent
 * (`buildAgent` in `src/host/agent.ts`).
 */
export function runSpecOf(flags: Omit<AgentFlags, "task">): RunSpec {
  const spec: RunSpec = {};
  spec.model = flags.script !== undefined ? { script: { file: flags.script } } : {};
  if (flags.preset !== undefined) spec.model.preset = flags.preset;
  if (flags.model !== undefined) spec.model.model = flags.model;
  if (flags.modelUrl !== undefined) spec.model.url = flags.modelUrl;
  if (flags.system !== undefined) spec.system = flags.system;
  if (flags.plan !== undefined) spec.plan = flags.plan;
  if (flags.projectInstructions === false) spec.projectInstructions = false;
  if (flags.maxSteps !== undefined) spec.maxSteps = flags.maxSteps;
  if (flags.maxRunTokens !== undefined) spec.maxRunTokens = flags.maxRunTokens;
  // The rule of budgetForContextWindow: a quarter stays free for the answer,
  // every turn but the latest is summarised, on its own under pressure.
  if (flags.contextWindow !== undefined) spec.compaction = { contextWindow: flags.contextWindow };
  if (flags.session !== undefined) spec.session = { id: flags.session, branch: flags.branch ?? "main" };
  return spec;
}

/**
 * buildAgent for agent and chat: a setup problem (a plan tool already
 * there, a bad compaction budget, a failed restore) in the CLI's words.
 */
export async function buildCliAgent(
  spec: RunSpec,
  runtime: Runtime,
  options: BuildAgentOptions,
  storage: JournalStorage | null,
): Promise<BuiltAgent> {
  try {
    // AGENTS.md files are read from the root down to the current folder
    return await buildAgent(spec, runtime, { cwd: process.cwd(), ...options });
  } catch (e) {
    if (e instanceof SessionUnfinishedRunError && storage !== null) throw await unfinishedRunError(storage, e);
    if (e instanceof RunSpecError && e.part === "plan") throw new AgentSetupError(`${e.message}; pass --no-plan`);
    if (e instanceof RunSpecError && e.part === "instructions")
      throw new AgentSetupError(`${e.message}; fix or remove the file, or pass --no-project-instructions`);
    throw new AgentSetupError((e as Error).message);
  }
}

/** What the shell sets for each model setting the library names. */
const MODEL_SETTING_NAMES: Readonly<Record<string, string>> = {
  model: "--model (or CHAT_MODEL)",
  baseURL: "--model-url",
  apiKey: "MODEL_API_KEY",
  timeoutMs: "LLM_TIMEOUT",
  temperature: "LLM_TEMPERATURE",
  includeUsage: "LLM_INCLUDE_USAGE",
};

/**
 * A model-config error in the shell's words: the library names its own
 * fields (`baseURL`, `apiKey`), the user sets a flag or a variable.
 */
export function cliModelMessage(e: ModelConfigError, flags: Pick<AgentFlags, "preset">): string {
  if (e.setting === "model" && e.problem === "missing")
    return "no model configured: pass --model NAME or set CHAT_MODEL (or play a script with --script FILE)";
  if (e.setting === "apiKey" && e.problem === "missing") {
    const who =
      flags.preset !== undefined ? `the ${flags.preset} preset` : "the default OpenAI endpoint (no --model-url or MODEL_URL given)";
    return `${who} needs an API key: set MODEL_API_KEY (a local server needs none: --preset ollama, --preset lmstudio or --model-url URL)`;
  }
  if (e.setting !== undefined && e.problem !== undefined) return `${MODEL_SETTING_NAMES[e.setting] ?? e.setting} ${e.problem}`;
  return e.message;
}

const isTTY = (stream: { isTTY?: boolean } | undefined) => stream?.isTTY === true;

function clip(text: string, max: number): string {
  const one = terminalLine(text);
  return one.length > max ? one.slice(0, max - 1) + "…" : one;
}

/**
 * The one terminal line shown for a finished tool call, as chat draws it
 * (src/cli/chat/render.ts): `→ read_file path="a.txt" ✓ 3 ms`, `→ exec
 * argv=["false"] ✗ exit status 1 12 ms`; a call that ended the run says its
 * control (`✓ complete 2 ms`).
 */
export function toolLine(name: string, args: string, r: ToolCallResult, ms: number | null = null): string {
  let status = outcomeText(r, ms);
  if (!r.cancelled && r.error === null && r.control !== "continue") status = status.replace(/^✓/, `✓ ${r.control}`);
  return `→ ${clip(name, 60)} ${argsSummary(args, 60)}`.trimEnd() + ` ${status}`;
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
  try {
    return hostSetupPlan(runtime, system, enabled, onChange);
  } catch (e) {
    if (e instanceof RunSpecError) throw new AgentSetupError(`${e.message}; pass --no-plan`);
    throw e;
  }
}

/**
 * The skills for `flags.skills` (which must exist), else `.agentcore/skills`
 * under the runtime's root when that folder exists; null for none. A missing
 * folder or a bad skill is an {@link AgentSetupError} naming the file.
 */
export async function setupSkills(runtime: Runtime, flags: Pick<AgentFlags, "skills">): Promise<SkillCatalog | null> {
  if (flags.skills !== undefined && flags.skills.trim() === "") throw new AgentUsageError("--skills must not be empty");
  try {
    return await loadCliSkills(flags.skills, runtime.root);
  } catch (e) {
    if (e instanceof SkillError) throw new AgentSetupError(e.message);
    throw e;
  }
}

/** What to do about a run whose answer was cut off (exit status 1, as for any run that did not complete). */
export const CUT_OFF_NOTES: Readonly<Record<string, string>> = {
  max_tokens:
    "agentcore: the model stopped at its output limit before its answer was done; raise the server's output-token limit for this model (max_tokens, num_predict, …), ask for a shorter answer, or go on with --session ID --continue",
  content_filter: "agentcore: the provider's content filter stopped the answer; rephrase the task, or use another model",
};

/** The stderr explanation of a run that ended on a refused tool call. */
export function rejectionNote(output: string | null): string {
  let tool = "a tool call";
  let reason = "refused";
  let gate = false;
  try {
    const p = JSON.parse(output ?? "") as { tool?: unknown; reason?: unknown; rule_id?: unknown };
    if (typeof p.tool === "string") tool = p.tool;
    if (typeof p.reason === "string") reason = p.reason;
    // The default gate's rule (src/cli/gate.ts): say how to let such calls through.
    gate = p.rule_id === "side-effecting";
  } catch {
    // not the policy's payload: keep the generic words
  }
  const hint = gate
    ? ` Side-effecting tools ask first: answer the prompt on a terminal, allow them in the config's "policy", or pass --approve-all.`
    : "";
  return `agentcore: ${terminalLine(tool)} was refused: ${terminalLine(reason)}.${hint}`;
}

/** The --sessions-dir of the flags as printed commands repeat it (empty for the default). */
function dirArgsOf(flags: Pick<AgentFlags, "sessionsDir" | "storeFlag">): string {
  const store = flags.storeFlag !== undefined ? ` --store ${shellWord(redactUrl(flags.storeFlag))}` : "";
  return (flags.sessionsDir !== undefined ? ` --sessions-dir ${shellWord(flags.sessionsDir)}` : "") + store;
}

/** Run the agent command; resolves to the exit status. */
export async function cmdAgent(runtime: Runtime, flags: AgentFlags, out: LineWriter): Promise<number> {
  const claims: BranchClaim[] = [];
  const stores: OpenedStore[] = [];
  try {
    return await agentCommand(runtime, flags, out, claims, stores);
  } finally {
    // The session branch is free again however the command ends (a signal's exit too: see claimBranch).
    for (const c of claims) c.release();
    for (const s of stores) await s.close();
  }
}

async function agentCommand(
  runtime: Runtime,
  flags: AgentFlags,
  out: LineWriter,
  claims: BranchClaim[],
  stores: OpenedStore[],
): Promise<number> {
  if (flags.events !== undefined && flags.events !== "jsonl") {
    throw new AgentUsageError(`--events takes 'jsonl', got '${flags.events}'`);
  }
  if (flags.continue === true && flags.resume === true)
    throw new AgentUsageError(
      "--continue and --resume do not go together: --resume goes on with a suspended run, --continue after a finished one",
    );
  if (flags.continue === true || flags.resume === true) {
    if (flags.session === undefined) throw new AgentUsageError(`${flags.resume === true ? "--resume" : "--continue"} needs --session ID`);
  } else if (flags.task.trim() === "") throw new AgentUsageError("the task must not be empty");
  if (flags.images !== undefined && (flags.continue === true || flags.resume === true))
    throw new AgentUsageError(`--image goes with a new task, not with ${flags.resume === true ? "--resume" : "--continue"}`);
  if (flags.suspendOnApproval === true && flags.session === undefined)
    throw new AgentUsageError(
      "--suspend-on-approval needs --session ID: the approval request is journaled there, and answered there later",
    );
  if (flags.session === undefined && (flags.branch !== undefined || flags.sessionsDir !== undefined)) {
    throw new AgentUsageError("--branch and --sessions-dir need --session ID");
  }
  if (flags.session === undefined && flags.storeFlag !== undefined)
    throw new AgentUsageError("--store needs --session ID: it says where the session is recorded");
  // The session first: a bad journal or branch is reported before the model starts.
  let storage: JournalStorage | null = null;
  let checkout: SessionCheckout | null = null;
  let recoverFirst = false;
  const branch = flags.branch ?? "main";
  /** Before the first model request: a second agent on this branch stops here, having done nothing. */
  const takeBranch = async (s: JournalStorage, id: string): Promise<SessionCheckout | null> => {
    claims.push(await claimSessionBranch(s, id, branch, "agentcore agent"));
    let c: SessionCheckout | null;
    try {
      await s.repair(id); // a torn last line (the first one too) is cut off and reported
      c = await s.checkout(id, branch);
    } catch (e) {
      if (e instanceof SessionError) throw new AgentSetupError(e.message);
      throw e;
    }
    if (c === null && branch !== "main") throw new AgentSetupError(await missingBranchMessage(s, id, branch));
    if (c === null && flags.continue === true) throw new AgentSetupError(`session '${id}' has no run to continue`);
    // the branch as this process holds it (another may have resumed it since it was first read)
    if (flags.resume === true) await checkResume(s, runtime, id, branch, dirArgsOf(flags));
    return c;
  };
  if (flags.session !== undefined) {
    if (flags.session.trim() === "") throw new AgentUsageError("--session must not be empty");
    const opened = await openSessionStore(runtime, flags, reportRepair("agentcore"));
    stores.push(opened);
    storage = opened.sessions;
    // --resume is decided before anything is written, on the branch as the crash rules would leave a run a
    // crash left open; that run is recovered only for a resume accepted (below, once the model is set up).
    recoverFirst = flags.resume === true && (await checkResume(storage, runtime, flags.session, branch, dirArgsOf(flags)));
    if (!recoverFirst) checkout = await takeBranch(storage, flags.session);
  }
  const suspendOnApproval = flags.session !== undefined && (flags.suspendOnApproval === true || flags.suspendByConfig === true);
  const outputSchema = flags.outputSchema === undefined ? undefined : await loadOutputSchema(flags.outputSchema);
  const images = flags.images === undefined ? undefined : await cliImages(flags.images);
  const skills = await setupSkills(runtime, flags);
  const stderr = process.stderr;
  const showTools = flags.events === undefined && isTTY(stderr);
  // The live view on a terminal (src/cli/live.ts): a spinner while nothing else is drawn, thinking on request.
  const look = terminalLook(stderr);
  const spinner = new Spinner(stderr, showTools ? look : { ...look, redraw: false });
  const thinking = flags.showThinking === true ? new ThinkingView(stderr, look) : null;
  /** Before anything else is written to the terminal: the spinner erased, a thinking block ended. */
  const settle = () => {
    spinner.clear();
    thinking?.end();
  };
  const note = (text: string) => {
    settle();
    stderr.write(text);
  };
  // Say why nothing happens while a failed request waits for its retry.
  const model = await makeModel(flags, ({ attempt, delayMs, error }) => {
    settle();
    process.stderr.write(
      `agentcore: ${terminalLine(error.message)}; retry ${attempt} of ${DEFAULT_MAX_RETRIES} in ${delayMs >= 1000 ? `${Math.round(delayMs / 100) / 10} s` : `${delayMs} ms`}\n`,
    );
  });
  // --resume accepted: the run a crash left open is closed under the crash rules, then the branch is taken.
  if (recoverFirst) {
    await recoverForResume(storage!, runtime, flags.session!, branch);
    checkout = await takeBranch(storage!, flags.session!);
  }
  let textOpen = false;
  /** The tool calls running now (for the spinner's label and each call's duration). */
  const running = new Map<string, { label: string; started: number }>();
  let asking = 0;
  /** Spin while tools run (not while an approval question waits on the terminal). */
  const spinTools = () => {
    const first = running.values().next();
    if (first.done === true || asking > 0) return spinner.stop();
    const label = running.size === 1 ? first.value.label : `${running.size} tool calls running`;
    spinner.start(label, Math.min(...[...running.values()].map((r) => r.started)));
  };
  // stdout carries the product (events, or the streamed text): once writing it
  // fails (EPIPE, ENOSPC), the run is aborted and the command exits 2 as
  // execute and run do.
  let outputError: OutputError | null = null;
  const output = (text: string, newline: boolean): void => {
    if (outputError !== null) return;
    if (flags.events === undefined) settle();
    try {
      if (newline) out.line(text);
      else out.write(text);
      out.flush();
    } catch (e) {
      if (!(e instanceof OutputError)) throw e;
      outputError = e;
      agent?.abort(`agentcore stopped the run: ${e.message}`);
    }
  };
  const sink = (event: AgentEvent): void => {
    if (thinking !== null && event.kind === "assistant_thinking_delta") {
      spinner.stop();
      thinking.write(event.delta);
    } else if (event.kind === "message_completed") thinking?.end(); // each turn's thinking is a block of its own
    if (flags.events === "jsonl") {
      output(JSON.stringify(event), true);
      return;
    }
    switch (event.kind) {
      case "turn_started":
        if (showTools) spinner.start("waiting for the model");
        break;
      case "assistant_thinking_delta":
      case "tool_call_arguments_delta":
        spinner.stop(); // the model is no longer silent
        break;
      case "assistant_text_delta":
        spinner.stop();
        // With --output-schema, stdout carries the value alone (printed at the end).
        if (outputSchema !== undefined) break;
        output(event.delta, false);
        textOpen = true;
        break;
      case "output_repair_requested":
        if (showTools)
          note(`the answer does not match --output-schema; asking once more:\n${event.message.split("\n").slice(1, -1).join("\n")}\n`);
        break;
      case "message_completed":
        spinner.stop();
        thinking?.end();
        if (textOpen) output("", true);
        textOpen = false;
        break;
      case "tool_started":
        if (!showTools) break;
        running.set(event.tool_call.id, {
          label: `→ ${clip(event.tool_call.name, 40)} ${argsSummary(event.tool_call.arguments, 40)}`.trimEnd(),
          started: performance.now(),
        });
        spinTools();
        break;
      case "tool_approval_requested":
        asking++;
        spinner.stop(); // the question is asked on the terminal
        break;
      case "tool_approval_decided":
        asking = Math.max(0, asking - 1);
        if (showTools) spinTools();
        break;
      case "agent_finished":
        spinner.stop();
        thinking?.end();
        break;
      case "tool_progressed": {
        if (!showTools) break;
        // A plan update is drawn as its checklist (the terminal watches it advance).
        const plan = event.tool_call.name === PLAN_TOOL_NAME ? checkPlan((event.update.data as { plan?: unknown } | null)?.plan) : null;
        if (plan?.ok) note(`${renderPlan(plan.plan).join("\n")}\n`);
        else note(`  … ${clip(event.tool_call.name, 60)}: ${clip(event.update.message, 100)}\n`);
        break;
      }
      case "skill_activated":
        if (showTools) note(`skill ${event.name} is active\n`);
        break;
      case "tool_completed": {
        if (!showTools) break;
        const started = running.get(event.tool_call.id)?.started;
        running.delete(event.tool_call.id);
        note(
          `${toolLine(event.tool_call.name, event.tool_call.arguments, event.result, started === undefined ? null : performance.now() - started)}\n`,
        );
        spinTools();
        break;
      }
      default:
        break;
    }
  };

  let agent: Agent | undefined;
  const built = await buildCliAgent(
    runSpecOf(flags),
    runtime,
    {
      model,
      skills,
      ...(storage !== null ? { storage } : {}),
      checkout,
      sinks: [sink],
      recordFirst: false,
      // A session belongs to one agent id: keep it across processes.
      ...(flags.session !== undefined ? { agentId: "agentcore-cli" } : {}),
      source: "agent",
    },
    storage,
  );
  agent = built.agent;
  const recorder = built.recorder;
  if (flags.continue === true && !agent.canContinue) {
    const reason = agent.continueRejectionReason;
    await agent.shutdown();
    const suspended = agent.lastResult?.stop_reason === "awaiting_approval";
    throw new AgentSetupError(
      `cannot continue session '${flags.session}': ${reason}${suspended ? " (its last run waits for approval: answer it with agentcore sessions approve|deny, then use --resume)" : ""}`,
    );
  }
  // SIGTERM / SIGHUP: abort like Ctrl-C, so the run ends `cancelled` and its
  // run_finished is journaled, then exit 128 + n. Any second signal (Ctrl-C
  // too) while stopping exits at once. These listeners make the command the
  // one that handles those signals: the host (src/host/process.ts) stands
  // aside, and the run's abort releases the clean-ups it held.
  let endedBy: { name: string; status: number } | null = null;
  let interrupted = false;
  const onSigint = () => {
    if (interrupted || endedBy !== null) process.exit(130);
    interrupted = true;
    agent.abort("interrupted by the user (Ctrl-C)");
  };
  process.on("SIGINT", onSigint);
  const onEnding = (name: string, status: number) => {
    if (interrupted || endedBy !== null) process.exit(status);
    endedBy = { name, status };
    agent.abort(`interrupted by ${name}: agentcore was asked to stop`);
  };
  const endingListeners = ENDING_SIGNALS.map(([name, status]) => [name, () => onEnding(name, status)] as const);
  for (const [name, listener] of endingListeners) process.on(name, listener);
  try {
    const runOptions = {
      suspendOnApproval,
      ...(outputSchema !== undefined ? { outputSchema } : {}),
      ...(images !== undefined ? { images } : {}),
    };
    const runStarted = performance.now();
    const result =
      flags.resume === true
        ? await agent.resumeRun(resumeDecisions(checkout!.session), runOptions)
        : flags.continue === true
          ? await agent.continueRun(runOptions)
          : await agent.run(flags.task, runOptions);
    const took = performance.now() - runStarted;
    spinner.stop();
    thinking?.end();
    /** On a terminal, the run's last line: stop reason, turns, tokens and time. */
    const finish = (status: number): number => {
      if (showTools) note(`${dim(look, summaryLine(result, took))}\n`);
      return status;
    };
    // Text cut short (an abort mid-answer) still ends its line.
    if (textOpen) output("", true);
    if (outputSchema !== undefined && flags.events === undefined && result.status === "completed" && "output_value" in result)
      output(JSON.stringify(result.output_value), true);
    if (outputError !== null) throw outputError;
    out.flush();
    if (recorder !== null && recorder.errors.length > 0) {
      // `sessions delete --force` while the run went on: its later records have no journal to join.
      const deleted = storage !== null && !(await storage.exists(flags.session!).catch(() => true));
      stderr.write(
        deleted
          ? `agentcore: session '${flags.session}' was deleted while this run was going (agentcore sessions delete --force), so the rest of the run was not journaled\n`
          : `agentcore: the session journal was not fully written: ${recorder.errors[0]!.message}\n`,
      );
      return finish(2);
    }
    if (result.status === "suspended") {
      // Not a failure: the run waits in the journal for its answers (and the process may go).
      const c = storage === null ? null : await storage.checkout(flags.session!, branch).catch(() => null);
      const pending = c === null ? [] : pendingApprovals(c.session);
      stderr.write(
        [
          `agentcore: run suspended (awaiting_approval): ${pending.length} tool call(s) wait for approval in session '${flags.session}'${branch !== "main" ? ` branch '${branch}'` : ""}`,
          ...approvalLines(flags.session!, branch, pending, dirArgsOf(flags)),
          `  then go on with: agentcore agent --session ${shellWord(flags.session!)}${branch !== "main" ? ` --branch ${shellWord(branch)}` : ""}${dirArgsOf(flags)} --resume`,
        ].join("\n") + "\n",
      );
      const endedS = endedBy as { status: number } | null;
      return finish(endedS !== null ? endedS.status : SUSPENDED_STATUS);
    }
    if (flags.events === undefined && result.status !== "completed") {
      stderr.write(`agentcore: run ${result.status} (${result.stop_reason})${result.error ? `: ${terminalLine(result.error)}` : ""}\n`);
      if (result.stop_reason === "tool_rejected") stderr.write(`${rejectionNote(result.output)}\n`);
      const cut = CUT_OFF_NOTES[result.stop_reason];
      if (cut !== undefined) stderr.write(`${cut}\n`);
    }
    const ended = endedBy as { status: number } | null;
    if (ended !== null) return finish(ended.status);
    return finish(result.status === "completed" ? 0 : 1);
  } finally {
    spinner.stop();
    process.off("SIGINT", onSigint);
    await agent.shutdown();
    // Still listening during the shutdown: a second signal there exits at once.
    for (const [name, listener] of endingListeners) process.off(name, listener);
  }
}
