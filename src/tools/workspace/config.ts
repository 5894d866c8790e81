/**
 * Strict checking of the `tools` configuration section, and the `--tools`
 * flag's list.
 *
 * The section maps tool names to `true`, `false` or an object of settings:
 *
 * ```jsonc
 * "tools": {
 *   "list_dir": true, "glob": true, "grep": { "max_results": 200 }, "git_diff": true,
 *   "write_file": { "max_bytes": 1048576 }, "apply_patch": true,
 *   "exec": { "allow": ["git", "ls", "cat"], "env": ["PATH", "HOME", "LANG"],
 *             "timeout_ms": 30000, "max_output_bytes": 65536, "isolation": "auto",
             "limits": { "processes": 256, "memory_bytes": 2147483648,
                         "file_size_bytes": 1073741824, "cpu_seconds": 600 } }
 * }
 * ```
 *
 * Unknown tool names, unknown settings and wrong types throw
 * {@link ToolsConfigError} naming the key (e.g. `tools.exec.allow[2]`).
 *
 * @module
 */
import type { WorkspaceToolsOptions } from "./options.ts";
import { envDenial } from "./rules.ts";
import { checkSettings, SettingsValueError, type SettingsSchema } from "../settings-check.ts";
import { validate as validateTools } from "./config.validator.generated.ts";

/** A bad `tools` section or `--tools` list; the message names the key. */
export class ToolsConfigError extends SettingsValueError {
  readonly code: string = "TOOLS_CONFIG_INVALID";
  override name = "ToolsConfigError";
}

type Kind = "posint" | "timeout" | "strings" | "isolation" | "limits";

/** Longest timer a runtime can set (ms); a larger one fires at once. */
export const MAX_TIMEOUT_MS = 2_147_483_647;
const SPEC: Record<string, Record<string, Kind>> = {
  list_dir: { max_entries: "posint" },
  glob: { max_results: "posint" },
  grep: { max_results: "posint", max_file_bytes: "posint", timeout_ms: "timeout" },
  git_diff: { max_bytes: "posint", timeout_ms: "timeout" },
  write_file: { max_bytes: "posint" },
  apply_patch: { max_bytes: "posint" },
  exec: { allow: "strings", env: "strings", timeout_ms: "timeout", max_output_bytes: "posint", isolation: "isolation", limits: "limits" },
};

/** The tools `read` selects in `--tools`. */
export const READ_ONLY_TOOLS = ["list_dir", "glob", "grep", "git_diff"] as const;
/** The tools `workspace` selects in `--tools` (all but exec). */
export const NON_EXEC_TOOLS = [...READ_ONLY_TOOLS, "write_file", "apply_patch"] as const;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * `tools.exec.limits`: each key optional, each an integer in its range.
 * Documented (with the defaults) in docs/workspace-tools.md.
 */
export const EXEC_LIMIT_RANGES: Readonly<Record<string, readonly [number, number, string]>> = {
  processes: [1, 1_000_000, "processes"],
  memory_bytes: [1024 * 1024, Number.MAX_SAFE_INTEGER, "bytes"],
  file_size_bytes: [1, Number.MAX_SAFE_INTEGER, "bytes"],
  cpu_seconds: [1, 2 ** 31 - 1, "seconds"],
};

const ENV_NAME_WORDS = "must be an environment variable name (letters, digits, _; not starting with a digit)";

const KIND_SCHEMA: Record<Kind, SettingsSchema> = {
  posint: { type: "integer", minimum: 1 },
  timeout: { type: "integer", minimum: 1, maximum: MAX_TIMEOUT_MS, "x-unit": "milliseconds" },
  strings: { type: "array", items: { type: "string", minLength: 1 } },
  isolation: { enum: ["auto", "required", "off"] },
  limits: {
    type: "object",
    additionalProperties: false,
    properties: Object.fromEntries(
      Object.entries(EXEC_LIMIT_RANGES).map(([key, [min, max, unit]]) => [
        key,
        { type: "integer", minimum: min, maximum: max, "x-unit": unit },
      ]),
    ),
  },
};

const DESCRIPTIONS: Record<string, string> = {
  list_dir: "List a folder under the root.",
  glob: "Find files by glob pattern.",
  grep: "Search file contents with a regular expression.",
  git_diff: "Show the repository's changes (git runs in a private git directory; see docs/workspace-tools.md).",
  write_file: "Create or replace a file under the root.",
  apply_patch: "Apply a unified diff under the root.",
  exec: "Run an allowlisted program (no shell), under bubblewrap when available.",
  allow: "the programs exec may run",
  env: "environment variables passed through to the program",
};

/**
 * The JSON Schema (draft-07) of the `tools` section, built from the same
 * table the tools read; part of the config file's published schema.
 */
export const TOOLS_CONFIG_SCHEMA: SettingsSchema = {
  type: "object",
  additionalProperties: false,
  properties: Object.fromEntries(
    Object.entries(SPEC).map(([tool, spec]) => {
      const settings: Record<string, unknown> = {
        type: "object",
        additionalProperties: false,
        properties: Object.fromEntries(
          Object.entries(spec).map(([key, kind]) => {
            const s: Record<string, unknown> = { ...KIND_SCHEMA[kind] };
            if (DESCRIPTIONS[key] !== undefined) s.description = DESCRIPTIONS[key];
            if (key === "env") s.items = { type: "string", minLength: 1, pattern: "^[A-Za-z_][A-Za-z0-9_]*$", "x-message": ENV_NAME_WORDS };
            return [key, s];
          }),
        ),
      };
      const entry: Record<string, unknown> = { description: DESCRIPTIONS[tool], ...settings, type: ["boolean", "object"] };
      if (tool === "exec") {
        entry.required = ["allow"];
        entry.not = { const: true };
        entry["x-message"] = 'needs an object with an "allow" list of program names';
      } else entry["x-message"] = "must be true, false or an object";
      return [tool, entry];
    }),
  ),
};

/** Check a `tools` section (an untrusted JSON value). The error's `path` leads to the offending key. */
export function parseToolsConfig(value: unknown, where = "tools"): WorkspaceToolsOptions {
  const problem = checkSettings(validateTools, value, where);
  if (problem !== null) throw new ToolsConfigError(problem.message, problem.path, problem.atKey);
  const v = value as Record<string, unknown>;
  const exec = v.exec as Record<string, unknown> | boolean | undefined;
  if (isObject(exec) && Array.isArray(exec.env)) {
    (exec.env as string[]).forEach((name, i) => {
      const why = envDenial(name);
      if (why !== null)
        throw new ToolsConfigError(
          `"${where}.exec.env[${i}]": environment variable "${name}" can't be allowlisted: ${why} (remove it from the list)`,
          ["exec", "env", i],
        );
    });
  }
  // a copy, so the caller's object can't change the checked settings later
  return structuredClone(value) as WorkspaceToolsOptions;
}

/**
 * Apply a `--tools` list (comma-separated names; `read` = list_dir, glob,
 * grep, git_diff; `workspace` = all but exec) to the configured section:
 * exactly the listed tools are enabled, each with its configured settings
 * when the section has them. `exec` needs the section's `exec` settings (its
 * allowlist). Throws {@link ToolsConfigError}.
 */
export function selectTools(list: string, configured: WorkspaceToolsOptions = {}): WorkspaceToolsOptions {
  const names = new Set<string>();
  for (const raw of list.split(",")) {
    const name = raw.trim();
    if (name === "") continue;
    if (name === "read") for (const t of READ_ONLY_TOOLS) names.add(t);
    else if (name === "workspace") for (const t of NON_EXEC_TOOLS) names.add(t);
    else if (Object.hasOwn(SPEC, name)) names.add(name);
    else throw new ToolsConfigError(`--tools: unknown tool "${name}" (known: read, workspace, ${Object.keys(SPEC).join(", ")})`);
  }
  if (names.size === 0) throw new ToolsConfigError("--tools needs at least one tool name");
  const conf = configured as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const name of names) {
    const c = conf[name];
    if (name === "exec" && !isObject(c)) {
      throw new ToolsConfigError('--tools exec needs a config file with a "tools.exec" section (its "allow" list of programs)');
    }
    out[name] = isObject(c) ? c : true;
  }
  return out as WorkspaceToolsOptions;
}
