import { describe, expect, test } from "bun:test";
import {
  MODEL_PRESETS,
  ModelConfigError,
  modelConfigFromEnv,
  modelConfigFromPreset,
  resolveModelConfig,
} from "../../src/providers/index.ts";

function configError(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ModelConfigError);
    return (e as Error).message;
  }
  throw new Error("expected a ModelConfigError");
}

describe("modelConfigFromEnv", () => {
  test("reads every variable", () => {
    const cfg = modelConfigFromEnv({
      CHAT_MODEL: "qwen3",
      MODEL_URL: "http://10.0.0.5:8000/v1",
      MODEL_API_KEY: "sk-secret",
      LLM_TIMEOUT: "2.5",
      LLM_TEMPERATURE: "0",
      LLM_INCLUDE_USAGE: "false",
    });
    expect(cfg).toEqual({
      model: "qwen3",
      baseURL: "http://10.0.0.5:8000/v1",
      apiKey: "sk-secret",
      timeoutMs: 2500,
      temperature: 0,
      includeUsage: false,
    });
  });

  test("defaults: 60 s, 0.7, include usage", () => {
    const cfg = modelConfigFromEnv({ CHAT_MODEL: "gpt-4o-mini", MODEL_API_KEY: "k" });
    expect(cfg).toEqual({ model: "gpt-4o-mini", apiKey: "k", timeoutMs: 60_000, temperature: 0.7, includeUsage: true });
  });

  test("a lookup function works as the environment", () => {
    const env: Record<string, string> = { CHAT_MODEL: "m", MODEL_URL: "http://localhost:1/v1" };
    expect(modelConfigFromEnv((n) => env[n]).model).toBe("m");
  });

  test("a missing model is a clear error", () => {
    expect(configError(() => modelConfigFromEnv({ MODEL_API_KEY: "k" }))).toMatch(/no model configured: set CHAT_MODEL/);
    expect(configError(() => modelConfigFromEnv({ CHAT_MODEL: "   ", MODEL_API_KEY: "k" }))).toMatch(/no model configured/);
  });

  test("bad values name the variable and never echo the key", () => {
    const base = { CHAT_MODEL: "m", MODEL_API_KEY: "sk-do-not-print" };
    for (const [name, value, pattern] of [
      ["LLM_TIMEOUT", "0", /LLM_TIMEOUT must be a positive number of seconds, got "0"/],
      ["LLM_TIMEOUT", "-3", /LLM_TIMEOUT must be a positive number/],
      ["LLM_TIMEOUT", "10s", /LLM_TIMEOUT must be a positive number of seconds, got "10s"/],
      ["LLM_TIMEOUT", "Infinity", /LLM_TIMEOUT/],
      ["LLM_TEMPERATURE", "2.5", /LLM_TEMPERATURE must be a number from 0 to 2, got "2.5"/],
      ["LLM_TEMPERATURE", "-0.1", /LLM_TEMPERATURE/],
      ["LLM_TEMPERATURE", "warm", /LLM_TEMPERATURE/],
      ["LLM_INCLUDE_USAGE", "yes", /LLM_INCLUDE_USAGE must be "true" or "false", got "yes"/],
      ["MODEL_URL", "not a url", /MODEL_URL is not a valid URL/],
      ["MODEL_URL", "ftp://x/v1", /MODEL_URL must be an http or https URL/],
    ] as const) {
      const msg = configError(() => modelConfigFromEnv({ ...base, [name]: value }));
      expect(msg).toMatch(pattern);
      expect(msg).not.toContain("sk-do-not-print");
    }
  });

  test("a timeout longer than a timer can hold (2^31 - 1 ms) is refused; it fired at once and timed out every request", () => {
    const base = { CHAT_MODEL: "m", MODEL_API_KEY: "k" };
    expect(modelConfigFromEnv({ ...base, LLM_TIMEOUT: "2147483" }).timeoutMs).toBe(2_147_483_000);
    for (const v of ["2147484", "99999999", "1e10"]) {
      expect(configError(() => modelConfigFromEnv({ ...base, LLM_TIMEOUT: v }))).toBe(
        `LLM_TIMEOUT must be at most 2147483 seconds (about 24 days), got "${v}"`,
      );
    }
    expect(resolveModelConfig({ model: "m", timeoutMs: 2_147_483_647 }).timeoutMs).toBe(2_147_483_647);
    expect(configError(() => resolveModelConfig({ model: "m", timeoutMs: 2_147_483_648 }))).toMatch(
      /timeoutMs must be a positive number of milliseconds, at most 2147483647, got 2147483648/,
    );
  });

  test("LLM_INCLUDE_USAGE accepts TRUE/False in any case; empty variables count as unset", () => {
    expect(modelConfigFromEnv({ CHAT_MODEL: "m", MODEL_API_KEY: "k", LLM_INCLUDE_USAGE: "FALSE" }).includeUsage).toBe(false);
    expect(modelConfigFromEnv({ CHAT_MODEL: "m", MODEL_API_KEY: "k", LLM_TIMEOUT: "", LLM_TEMPERATURE: " " }).timeoutMs).toBe(60_000);
  });

  test("the default OpenAI endpoint needs a key; a custom URL does not", () => {
    expect(configError(() => modelConfigFromEnv({ CHAT_MODEL: "m" }))).toMatch(/needs an API key: set MODEL_API_KEY/);
    expect(modelConfigFromEnv({ CHAT_MODEL: "m", MODEL_URL: "http://127.0.0.1:9/v1" }).apiKey).toBeUndefined();
  });

  test("presets: lmstudio and ollama set the URL and ignore MODEL_API_KEY; openai requires a key", () => {
    const env = { CHAT_MODEL: "llama3", MODEL_API_KEY: "sk-cloud", MODEL_URL: "https://example.com/v1" };
    expect(modelConfigFromEnv(env, { preset: "lmstudio" })).toEqual({
      model: "llama3",
      baseURL: "http://localhost:1234/v1",
      timeoutMs: 60_000,
      temperature: 0.7,
      includeUsage: true,
    });
    expect(modelConfigFromEnv(env, { preset: "ollama" }).baseURL).toBe("http://localhost:11434/v1");
    expect(modelConfigFromEnv(env, { preset: "ollama" }).apiKey).toBeUndefined();
    const openai = modelConfigFromEnv(env, { preset: "openai" });
    expect(openai.baseURL).toBeUndefined();
    expect(openai.apiKey).toBe("sk-cloud");
    expect(configError(() => modelConfigFromEnv({ CHAT_MODEL: "m" }, { preset: "openai" }))).toMatch(/the openai preset needs an API key/);
    expect(configError(() => modelConfigFromEnv({ CHAT_MODEL: "m" }, { preset: "vllm" as never }))).toMatch(/unknown preset "vllm"/);
    expect(MODEL_PRESETS.lmstudio.requiresKey).toBe(false);
  });

  test("explicit overrides win over the environment and the preset", () => {
    const cfg = modelConfigFromEnv(
      { CHAT_MODEL: "from-env", LLM_TEMPERATURE: "1.5" },
      { preset: "ollama", model: "from-flag", baseURL: "http://gpu-box:11434/v1", temperature: 0.2 },
    );
    expect(cfg).toMatchObject({ model: "from-flag", baseURL: "http://gpu-box:11434/v1", temperature: 0.2 });
  });
});

describe("resolveModelConfig / modelConfigFromPreset", () => {
  test("fills defaults and checks values", () => {
    expect(resolveModelConfig({ model: "m" })).toEqual({ model: "m", timeoutMs: 60_000, temperature: 0.7, includeUsage: true });
    expect(configError(() => resolveModelConfig({ model: "" }))).toMatch(/no model configured/);
    expect(configError(() => resolveModelConfig({ model: "m", timeoutMs: 0 }))).toMatch(/timeoutMs must be a positive number/);
    expect(configError(() => resolveModelConfig({ model: "m", temperature: 3 }))).toMatch(/temperature must be a number from 0 to 2/);
  });

  test("presets in code", () => {
    expect(modelConfigFromPreset("lmstudio", { model: "m" }).baseURL).toBe("http://localhost:1234/v1");
    expect(configError(() => modelConfigFromPreset("openai", { model: "m" }))).toMatch(/openai preset needs an API key/);
    expect(modelConfigFromPreset("openai", { model: "m", apiKey: "k" }).apiKey).toBe("k");
  });
});
