/**
 * Run requests: the `POST /v1/runs` body (and a resume's) checked into a
 * {@link RunRequest}, the {@link RunSpec} it builds an agent from, and the
 * lazily loaded run stack (`run-stack.ts`: the agent, the model adapters)
 * that the checks and the agent need. A daemon loads that stack on its first
 * run, not at start.
 *
 * @module
 */
import type { ImageAttachment } from "../providers/images.ts";
import { parseRunImages } from "./images.ts";
import type { ModelPresetName } from "../providers/config.ts";
import type { RunSpec } from "../host/agent.ts";
import type * as RunStack from "./run-stack.ts";
import { isPolicyPreset, POLICY_PRESETS, type PolicyPreset } from "../host/policy-presets.ts";
import { HttpError } from "./errors.ts";
import { Fields } from "./body.ts";

/** The model part of a run request. */
export interface RunModelSpec {
  preset?: ModelPresetName;
  model?: string;
  url?: string;
}

/** A parsed and checked `POST /v1/runs` body. */
export interface RunRequest {
  task: string;
  model?: RunModelSpec;
  /** Scripted model turns (see ScriptedModel): no network. */
  script?: unknown[];
  maxSteps?: number;
  maxRunTokens?: number;
  system?: string;
  session?: string;
  branch?: string;
  detached: boolean;
  compaction?: { contextWindow: number; reserveTokens: number; keepRecentTokens: number };
  /** A call that needs an approval is journaled and ends the run `awaiting_approval` instead of waiting in the queue (needs session). */
  suspendOnApproval?: boolean;
  /** `output_schema`: the task's final answer must match this JSON Schema (RunOptions.outputSchema). */
  outputSchema?: Record<string, unknown>;
  /** `images`: the task's images, checked (RunOptions.images; see `src/server/images.ts`). */
  images?: ImageAttachment[];
  /** `tools`: the daemon's tools this run may use (absent: all); checked against the registry by {@link RunManager.checkTools}. */
  tools?: string[];
  /** `policy`: a preset applied after the daemon's policy (`daemon`, the default, adds nothing). */
  policy?: PolicyPreset;
}

const RUN_KEYS = [
  "task",
  "model",
  "script",
  "max_steps",
  "max_run_tokens",
  "system",
  "session",
  "branch",
  "detached",
  "compaction",
  "suspend_on_approval",
  "output_schema",
  "images",
  "tools",
  "policy",
] as const;

let runStack: typeof RunStack | null = null;

/**
 * Load what runs need (the agent, the model adapters: `run-stack.ts`) once;
 * the run routes await it before {@link parseRunRequest}, so that a daemon
 * loads it on its first run, not at start.
 */
export async function loadRunStack(): Promise<typeof RunStack> {
  return (runStack ??= await import("./run-stack.ts"));
}

function stack(): typeof RunStack {
  if (runStack === null) throw new Error("the run stack is not loaded: await loadRunStack() first");
  return runStack;
}

/** Check a `POST /v1/runs` body; throws 400 naming the field. Needs {@link loadRunStack} to have resolved. */
export function parseRunRequest(body: unknown): RunRequest {
  const { isPresetName, PRESET_NAMES, compileOutputSchema, MAX_CONTEXT_WINDOW, budgetForContextWindow } = stack();
  const f = Fields.of(body, RUN_KEYS);
  const req: RunRequest = { task: f.string("task", { required: true, max: 1 << 20 })!, detached: f.bool("detached") ?? false };
  const m = f.object("model", ["preset", "model", "url"]);
  const script = f.array("script");
  if (m !== undefined && script !== undefined) f.fail("script", "replaces the model: send either model or script");
  if (m !== undefined) {
    const preset = m.string("preset");
    if (preset !== undefined && !isPresetName(preset)) m.fail("preset", `must be one of ${PRESET_NAMES.join(", ")}`);
    const url = m.string("url", { max: 2048 });
    if (url !== undefined && !/^https?:\/\//i.test(url)) m.fail("url", "must be an http(s) URL");
    req.model = { preset: preset as ModelPresetName | undefined, model: m.string("model", { max: 256 }), url };
  }
  if (script !== undefined) req.script = script;
  req.maxSteps = f.int("max_steps", 1, 10_000);
  req.maxRunTokens = f.int("max_run_tokens", 1, Number.MAX_SAFE_INTEGER);
  req.system = f.string("system", { max: 1 << 20 });
  req.session = f.string("session", { max: 200 });
  req.branch = f.string("branch", { max: 200 });
  if (req.branch !== undefined && req.session === undefined) f.fail("branch", "needs session");
  const suspend = f.bool("suspend_on_approval");
  if (suspend === true && req.session === undefined)
    f.fail("suspend_on_approval", "needs session: the approval request is journaled there, and answered there later");
  if (suspend === true) req.suspendOnApproval = true;
  const schema = f.body.output_schema;
  if (schema !== undefined) {
    if (typeof schema !== "object" || schema === null || Array.isArray(schema)) f.fail("output_schema", "must be a JSON Schema object");
    try {
      compileOutputSchema({ outputSchema: schema as Record<string, unknown> });
    } catch (e) {
      f.fail("output_schema", `is not a usable JSON Schema: ${(e as Error).message.replace(/^outputSchema: /, "")}`);
    }
    req.outputSchema = schema as Record<string, unknown>;
  }
  const tools = f.array("tools");
  if (tools !== undefined) {
    if (tools.length > 1000) f.fail("tools", `holds ${tools.length} names; at most 1000`);
    tools.forEach((t, i) => {
      if (typeof t !== "string" || t === "") f.fail(`tools/${i}`, "must be a tool name (a non-empty string; see GET /v1/tools)");
    });
    req.tools = [...new Set(tools as string[])];
  }
  const policy = f.string("policy", { max: 100 });
  if (policy !== undefined && !isPolicyPreset(policy))
    f.fail(
      "policy",
      `must be one of ${POLICY_PRESETS.join(", ")} (a preset only narrows the daemon's policy), got ${JSON.stringify(policy)}`,
    );
  if (policy !== undefined) req.policy = policy as PolicyPreset;
  const images = parseRunImages(f.body.images);
  if (images !== undefined && images.length > 0) req.images = images;
  const rawCompaction = f.body.compaction;
  if (typeof rawCompaction === "number") f.fail("compaction", `must be an object, such as {"context_window": ${rawCompaction}}`);
  const c = f.object("compaction", ["context_window", "reserve_tokens", "keep_recent_tokens"]);
  if (c !== undefined) {
    const w = c.int("context_window", 1, MAX_CONTEXT_WINDOW);
    const r = c.int("reserve_tokens", 0, MAX_CONTEXT_WINDOW);
    const k = c.int("keep_recent_tokens", 1, MAX_CONTEXT_WINDOW);
    if (w === undefined) c.fail("context_window", "is required");
    if (r !== undefined && k !== undefined) req.compaction = { contextWindow: w!, reserveTokens: r, keepRecentTokens: k };
    else {
      // The short form: what is left out comes from the window, by the CLI's
      // --context-window rule (a quarter kept free, every turn but the latest summarised).
      const derived = (() => {
        try {
          return budgetForContextWindow(w!);
        } catch (e) {
          return c.fail(
            "context_window",
            `${(e as Error).message} (reserve_tokens and keep_recent_tokens are derived from it when left out; send all three for a smaller window)`,
          );
        }
      })();
      req.compaction = { contextWindow: w!, reserveTokens: r ?? derived.reserveTokens, keepRecentTokens: k ?? derived.keepRecentTokens };
    }
    const { contextWindow, reserveTokens, keepRecentTokens } = req.compaction;
    if (reserveTokens >= contextWindow)
      c.fail("reserve_tokens", `must be less than context_window (${contextWindow}), got ${reserveTokens}`);
    if (keepRecentTokens > contextWindow - reserveTokens) {
      c.fail(
        "keep_recent_tokens",
        `must be at most context_window - reserve_tokens (${contextWindow - reserveTokens}), got ${keepRecentTokens}`,
      );
    }
  }
  return req;
}

/**
 * The run spec of a request: the daemon's words for what `agent` and `chat`
 * take as flags, so the same settings build the same agent
 * (`buildAgent` in `src/host/agent.ts`). A daemon run registers no plan tool,
 * and compacts only when asked (`POST /v1/runs/{id}/compact`).
 */
export function runSpecOfRequest(req: RunRequest): RunSpec {
  const spec: RunSpec = { plan: false };
  if (req.script !== undefined) spec.model = { script: { turns: req.script } };
  else {
    spec.model = {};
    if (req.model?.preset !== undefined) spec.model.preset = req.model.preset;
    if (req.model?.model !== undefined) spec.model.model = req.model.model;
    if (req.model?.url !== undefined) spec.model.url = req.model.url;
  }
  if (req.system !== undefined) spec.system = req.system;
  if (req.maxSteps !== undefined) spec.maxSteps = req.maxSteps;
  if (req.maxRunTokens !== undefined) spec.maxRunTokens = req.maxRunTokens;
  if (req.compaction !== undefined) spec.compaction = { ...req.compaction, auto: false };
  if (req.session !== undefined) spec.session = { id: req.session, branch: req.branch ?? "main" };
  if (req.suspendOnApproval === true) spec.suspendOnApproval = true;
  if (req.tools !== undefined) spec.tools = req.tools;
  if (req.policy !== undefined) spec.policy = req.policy;
  return spec;
}

/**
 * Check a `POST /v1/sessions/{id}/resume` body: a run request without `task`
 * and `session` (the session is the path's), `branch` included.
 */
export function parseResumeRequest(body: unknown, sessionId: string): RunRequest {
  const b = body === null || body === undefined ? {} : body;
  if (typeof b === "object" && !Array.isArray(b)) {
    for (const k of ["task", "session"]) {
      if (Object.hasOwn(b, k))
        throw new HttpError(400, "INVALID_REQUEST", `${k} is not taken here: resume goes on with the session's suspended run`, {
          location: `/${k}`,
        });
    }
    if (Object.hasOwn(b, "images"))
      throw new HttpError(400, "INVALID_REQUEST", "/images: is not taken by resume: images go with a new task (POST /v1/runs)", {
        location: "/images",
      });
    if (Object.hasOwn(b, "output_schema"))
      throw new HttpError(
        400,
        "INVALID_REQUEST",
        "/output_schema: is not taken by resume: an output schema applies to the run started with it (POST /v1/runs)",
        { location: "/output_schema" },
      );
  }
  return parseRunRequest(typeof b === "object" && !Array.isArray(b) ? { ...b, task: "(resume)", session: sessionId } : b);
}

/**
 * A model-config error in the words of a daemon client: the library names its
 * own options (`apiKey`, `model`), which no request body has.
 */
export function daemonModelMessage(e: Error | null, message: string, ownUrl: boolean): string {
  if (e === null) return message;
  if (runStack === null || !(e instanceof runStack.ModelConfigError) || e.problem !== "missing") return e.message;
  if (e.setting === "model") return "no model configured: send model.model (or a script), or start the daemon with CHAT_MODEL set";
  if (e.setting === "apiKey") {
    const who = e.message.slice(0, e.message.indexOf(" needs an API key"));
    return ownUrl
      ? `${who} needs an API key, and MODEL_API_KEY goes only to the daemon's MODEL_URL: leave model.url out, or start the daemon with MODEL_URL set to it`
      : `${who} needs an API key: start the daemon with MODEL_API_KEY set (a local server needs none: model.preset ollama or lmstudio, or model.url)`;
  }
  return e.message;
}
