/**
 * Model configuration: set in code, or read from the environment, with
 * presets for OpenAI, LM Studio and Ollama.
 *
 * Precedence, lowest first: built-in defaults, the environment, the preset's
 * URL, explicit overrides. A keyless preset (`lmstudio`, `ollama`) ignores
 * `MODEL_API_KEY`, so a cloud key is never sent to a local server; pass
 * `apiKey` explicitly if your local server wants one.
 *
 * @module
 */
import { AgentcoreError } from "../core/errors.ts";
import { readEnv } from "../core/logger.ts";

/** Settings of one OpenAI-compatible chat model. */
export interface ModelConfig {
  /** Model name sent with every request (`CHAT_MODEL`). */
  model: string;
  /** Base URL of the API, ending in `/v1` (`MODEL_URL`). Absent: OpenAI's own. */
  baseURL?: string;
  /** API key (`MODEL_API_KEY`). Never printed in error messages. */
  apiKey?: string;
  /** Request timeout in ms; while streaming, the longest wait for the next chunk. Default 60000. */
  timeoutMs: number;
  /** Sampling temperature, 0..2. Default 0.7. */
  temperature: number;
  /** Ask for usage in the final stream chunk (`stream_options.include_usage`). Default true. */
  includeUsage: boolean;
}

/** A config as written by hand: everything but `model` has a default. */
export type ModelConfigInput = Pick<ModelConfig, "model"> & Partial<Omit<ModelConfig, "model">>;

export const DEFAULT_MODEL_TIMEOUT_MS = 60_000;
/** Longest timeout a timer can hold (2^31 - 1 ms, about 24.8 days); a longer one would fire at once. */
export const MAX_MODEL_TIMEOUT_MS = 2_147_483_647;
export const DEFAULT_TEMPERATURE = 0.7;
export const DEFAULT_INCLUDE_USAGE = true;

/** Names of the presets. */
export type ModelPresetName = "openai" | "lmstudio" | "ollama";

/** What a preset fixes: the URL, and whether a key is required. */
export interface ModelPreset {
  /** Base URL; `undefined` means OpenAI's default. */
  baseURL?: string;
  /** True when requests cannot work without an API key. */
  requiresKey: boolean;
}

export const MODEL_PRESETS: Readonly<Record<ModelPresetName, ModelPreset>> = Object.freeze({
  openai: Object.freeze({ baseURL: undefined, requiresKey: true }),
  lmstudio: Object.freeze({ baseURL: "http://localhost:1234/v1", requiresKey: false }),
  ollama: Object.freeze({ baseURL: "http://localhost:11434/v1", requiresKey: false }),
});

/** The environment variables {@link modelConfigFromEnv} reads. */
export const MODEL_ENV_VARS = ["MODEL_API_KEY", "MODEL_URL", "CHAT_MODEL", "LLM_TIMEOUT", "LLM_TEMPERATURE", "LLM_INCLUDE_USAGE"] as const;

/** An environment: a record of variables, or a lookup function. */
export type EnvSource = Readonly<Record<string, string | undefined>> | ((name: string) => string | undefined);

/** Overrides for {@link modelConfigFromEnv}: explicit values win over the environment. */
export interface ModelConfigOverrides extends Partial<ModelConfig> {
  preset?: ModelPresetName;
}

/** A configuration problem; the message names the setting and what is wrong, never a key's value. */
export class ModelConfigError extends AgentcoreError {
  readonly code: string = "MODEL_CONFIG_INVALID";
  override name = "ModelConfigError";
  /**
   * The setting at fault, as this module names it: a {@link ModelConfig}
   * field (`model`, `baseURL`, `apiKey`, `timeoutMs`, `temperature`,
   * `includeUsage`) or the environment variable it was read from
   * (`MODEL_URL`, `LLM_TIMEOUT`, …). A command line maps it to its own flag.
   */
  readonly setting: string | undefined;
  /** What is wrong with it, without its name (`is not a valid URL: "x"`), or `missing`. */
  readonly problem: string | undefined;
  constructor(message: string, setting?: string, problem?: string) {
    super(message);
    this.setting = setting;
    this.problem = problem;
  }
}

/** An error about one setting: its message is the setting's name, then the problem. */
function settingError(setting: string, problem: string): ModelConfigError {
  return new ModelConfigError(`${setting} ${problem}`, setting, problem);
}

function isPresetName(v: unknown): v is ModelPresetName {
  return typeof v === "string" && Object.hasOwn(MODEL_PRESETS, v);
}

function lookup(env: EnvSource, name: string): string | undefined {
  const v = typeof env === "function" ? env(name) : env[name];
  if (v === undefined) return undefined;
  const t = v.trim();
  return t === "" ? undefined : t;
}

function parseTimeout(raw: string, what: string): number {
  const n = Number(raw);
  if (!/^[0-9]*\.?[0-9]+(e[+-]?[0-9]+)?$/i.test(raw) || !Number.isFinite(n) || n <= 0) {
    throw settingError(what, `must be a positive number of seconds, got ${JSON.stringify(raw)}`);
  }
  if (n * 1000 > MAX_MODEL_TIMEOUT_MS) {
    throw settingError(
      what,
      `must be at most ${Math.floor(MAX_MODEL_TIMEOUT_MS / 1000)} seconds (about 24 days), got ${JSON.stringify(raw)}`,
    );
  }
  return Math.max(1, Math.round(n * 1000));
}

function parseTemperature(raw: string, what: string): number {
  const n = Number(raw);
  if (!/^[+-]?[0-9]*\.?[0-9]+(e[+-]?[0-9]+)?$/i.test(raw) || !Number.isFinite(n) || n < 0 || n > 2) {
    throw settingError(what, `must be a number from 0 to 2, got ${JSON.stringify(raw)}`);
  }
  return n;
}

function parseBool(raw: string, what: string): boolean {
  const v = raw.toLowerCase();
  if (v === "true") return true;
  if (v === "false") return false;
  throw settingError(what, `must be "true" or "false", got ${JSON.stringify(raw)}`);
}

function checkURL(url: string, what: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw settingError(what, `is not a valid URL: ${JSON.stringify(url)}`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw settingError(what, `must be an http or https URL, got ${JSON.stringify(url)}`);
  }
  return url;
}

/**
 * Check a hand-written config and fill in the defaults. Throws
 * {@link ModelConfigError} on a missing model or an out-of-range value.
 */
export function resolveModelConfig(input: ModelConfigInput): ModelConfig {
  if (input === null || typeof input !== "object") throw new ModelConfigError("model config must be an object");
  const model = typeof input.model === "string" ? input.model.trim() : "";
  if (model === "") {
    throw new ModelConfigError('no model configured: set CHAT_MODEL or pass `model` (for example "gpt-4o-mini")', "model", "missing");
  }
  const timeoutMs = input.timeoutMs ?? DEFAULT_MODEL_TIMEOUT_MS;
  if (typeof timeoutMs !== "number" || !Number.isFinite(timeoutMs) || timeoutMs <= 0 || timeoutMs > MAX_MODEL_TIMEOUT_MS) {
    throw settingError("timeoutMs", `must be a positive number of milliseconds, at most ${MAX_MODEL_TIMEOUT_MS}, got ${String(timeoutMs)}`);
  }
  const temperature = input.temperature ?? DEFAULT_TEMPERATURE;
  if (typeof temperature !== "number" || !Number.isFinite(temperature) || temperature < 0 || temperature > 2) {
    throw settingError("temperature", `must be a number from 0 to 2, got ${String(temperature)}`);
  }
  const includeUsage = input.includeUsage ?? DEFAULT_INCLUDE_USAGE;
  if (typeof includeUsage !== "boolean") {
    throw settingError("includeUsage", `must be a boolean, got ${typeof includeUsage}`);
  }
  const out: ModelConfig = { model, timeoutMs, temperature, includeUsage };
  if (input.baseURL !== undefined) out.baseURL = checkURL(input.baseURL, "baseURL");
  if (input.apiKey !== undefined) {
    if (typeof input.apiKey !== "string") throw settingError("apiKey", "must be a string");
    if (input.apiKey !== "") out.apiKey = input.apiKey;
  }
  return out;
}

/** A config for a preset: its URL and key policy, plus the given fields. */
export function modelConfigFromPreset(preset: ModelPresetName, input: ModelConfigInput): ModelConfig {
  if (!isPresetName(preset)) {
    throw new ModelConfigError(`unknown preset ${JSON.stringify(preset)}; expected one of: ${Object.keys(MODEL_PRESETS).join(", ")}`);
  }
  const p = MODEL_PRESETS[preset];
  const cfg = resolveModelConfig({ ...input, baseURL: input.baseURL ?? p.baseURL });
  if (p.requiresKey && cfg.apiKey === undefined) {
    throw new ModelConfigError(`the ${preset} preset needs an API key: set MODEL_API_KEY or pass apiKey`, "apiKey", "missing");
  }
  return cfg;
}

function defaultEnv(name: string): string | undefined {
  return readEnv(name);
}

/**
 * Build a config from the environment (`CHAT_MODEL`, `MODEL_URL`,
 * `MODEL_API_KEY`, `LLM_TIMEOUT` in seconds, `LLM_TEMPERATURE`,
 * `LLM_INCLUDE_USAGE`), then apply `overrides`. Works on Bun, Node and Deno
 * (only the six variables are read, so `--allow-env=<names>` is enough).
 *
 * Without a preset and without a URL the target is OpenAI, and a key is
 * required.
 */
export function modelConfigFromEnv(env: EnvSource = defaultEnv, overrides: ModelConfigOverrides = {}): ModelConfig {
  const { preset, ...explicit } = overrides;
  if (preset !== undefined && !isPresetName(preset)) {
    throw new ModelConfigError(`unknown preset ${JSON.stringify(preset)}; expected one of: ${Object.keys(MODEL_PRESETS).join(", ")}`);
  }
  const p = preset === undefined ? undefined : MODEL_PRESETS[preset];

  const model = lookup(env, "CHAT_MODEL");
  const url = lookup(env, "MODEL_URL");
  const key = lookup(env, "MODEL_API_KEY");
  const timeout = lookup(env, "LLM_TIMEOUT");
  const temperature = lookup(env, "LLM_TEMPERATURE");
  const includeUsage = lookup(env, "LLM_INCLUDE_USAGE");

  const input: Partial<ModelConfig> = {};
  if (model !== undefined) input.model = model;
  if (url !== undefined) input.baseURL = checkURL(url, "MODEL_URL");
  if (key !== undefined && (p === undefined || p.requiresKey)) input.apiKey = key;
  if (timeout !== undefined) input.timeoutMs = parseTimeout(timeout, "LLM_TIMEOUT");
  if (temperature !== undefined) input.temperature = parseTemperature(temperature, "LLM_TEMPERATURE");
  if (includeUsage !== undefined) input.includeUsage = parseBool(includeUsage, "LLM_INCLUDE_USAGE");
  if (p !== undefined) {
    if (p.baseURL !== undefined) input.baseURL = p.baseURL;
    else if (preset === "openai") delete input.baseURL;
  }
  for (const [k, v] of Object.entries(explicit)) {
    if (v !== undefined) (input as Record<string, unknown>)[k] = v;
  }
  const cfg = resolveModelConfig(input as ModelConfigInput);
  const needsKey = p !== undefined ? p.requiresKey : cfg.baseURL === undefined;
  if (needsKey && cfg.apiKey === undefined) {
    const who = preset !== undefined ? `the ${preset} preset` : "the default OpenAI endpoint (no MODEL_URL set)";
    throw new ModelConfigError(`${who} needs an API key: set MODEL_API_KEY or pass apiKey`, "apiKey", "missing");
  }
  return cfg;
}
