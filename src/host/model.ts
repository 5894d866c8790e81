/**
 * The model of a run spec, for every front end: a scripted model (a file, or
 * turns given inline), else the OpenAI-compatible adapter over the
 * environment with the spec's preset, model and URL on top. The presets are
 * the one table in `providers/config.ts` ({@link MODEL_PRESETS}); their names
 * here are read from it.
 *
 * Errors are {@link ModelSpecError}s saying which part of the spec is wrong;
 * each front end words them for its users (flags and variables for the CLI,
 * body fields for the daemon).
 *
 * @module
 */
import { AgentcoreError } from "../core/errors.ts";
import {
  MODEL_PRESETS,
  ModelConfigError,
  modelConfigFromEnv,
  type ModelConfigOverrides,
  type ModelPresetName,
} from "../providers/config.ts";
import { OpenAIModelAdapter } from "../providers/openai.ts";
import type { RetryOptions } from "../providers/retry.ts";
import { ScriptedModel } from "../providers/scripted.ts";
import type { ModelAdapter } from "../providers/types.ts";

/** The preset names, in the table's order. */
export const PRESET_NAMES: readonly ModelPresetName[] = Object.freeze(Object.keys(MODEL_PRESETS) as ModelPresetName[]);

/** Whether `name` is one of {@link PRESET_NAMES}. */
export function isPresetName(name: unknown): name is ModelPresetName {
  return typeof name === "string" && (PRESET_NAMES as readonly string[]).includes(name);
}

/** The model part of a run spec. */
export interface ModelSpec {
  preset?: string;
  model?: string;
  url?: string;
  /** A script replaces the model: a file of turns, or the turns themselves. */
  script?: { file: string } | { turns: unknown[] };
}

/** What is wrong with a model spec: `part` names it; `config` is the library's error for a model setting. */
export class ModelSpecError extends AgentcoreError {
  readonly code: string = "MODEL_SPEC_INVALID";
  override name = "ModelSpecError";
  constructor(
    message: string,
    readonly part: "script" | "preset" | "conflict" | "config",
    readonly config: ModelConfigError | null = null,
    /** True when MODEL_API_KEY was held back because the spec's URL is not the configured MODEL_URL. */
    readonly keyWithheld = false,
  ) {
    super(message);
  }
}

export interface ModelOptions {
  /** The environment read for CHAT_MODEL, MODEL_URL, MODEL_API_KEY, …; default process.env. */
  env?: Readonly<Record<string, string | undefined>>;
  /** Hears of each retry the adapter waits for. */
  onRetry?: RetryOptions["onRetry"];
  /**
   * Send MODEL_API_KEY only to MODEL_URL: a spec URL other than the
   * configured one gets no key (the daemon, whose URL comes from a request).
   */
  keyOnlyToConfiguredUrl?: boolean;
}

/** The model of `spec`. Throws {@link ModelSpecError}. */
export async function makeModel(spec: ModelSpec, options: ModelOptions = {}): Promise<ModelAdapter> {
  if (spec.script !== undefined) {
    if (spec.preset !== undefined || spec.model !== undefined || spec.url !== undefined) {
      throw new ModelSpecError("a script replaces the model: give either a script or a model", "conflict");
    }
    try {
      return "file" in spec.script ? await ScriptedModel.fromFile(spec.script.file) : new ScriptedModel(spec.script.turns);
    } catch (e) {
      throw new ModelSpecError((e as Error).message, "script");
    }
  }
  if (spec.preset !== undefined && !isPresetName(spec.preset)) {
    throw new ModelSpecError(`the preset must be one of ${PRESET_NAMES.join(", ")}, got '${spec.preset}'`, "preset");
  }
  const env = options.env;
  const overrides: ModelConfigOverrides = {};
  if (spec.preset !== undefined) overrides.preset = spec.preset;
  if (spec.model !== undefined) overrides.model = spec.model;
  let source = env;
  if (spec.url !== undefined) {
    overrides.baseURL = spec.url;
    const seen = env ?? process.env;
    if (options.keyOnlyToConfiguredUrl === true && spec.url.replace(/\/+$/, "") !== (seen.MODEL_URL ?? "").replace(/\/+$/, ""))
      source = { ...seen, MODEL_API_KEY: undefined };
  }
  // An authentication error names the variable that holds the key, and why none was sent.
  const keyless = spec.preset !== undefined && !MODEL_PRESETS[spec.preset as ModelPresetName].requiresKey;
  const whyNone = keyless
    ? `the ${spec.preset} preset sends none; for a server that wants a key, give its URL without the preset and the key in MODEL_API_KEY`
    : source !== env
      ? "MODEL_API_KEY goes only to MODEL_URL, and this is another URL"
      : undefined;
  try {
    return new OpenAIModelAdapter(modelConfigFromEnv(source, overrides), {
      key: { name: "MODEL_API_KEY", ...(whyNone !== undefined ? { whyNone } : {}) },
      ...(options.onRetry === undefined ? {} : { retry: { onRetry: options.onRetry } }),
    });
  } catch (e) {
    throw new ModelSpecError((e as Error).message, "config", e instanceof ModelConfigError ? e : null, source !== env);
  }
}
