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
import { AgentcoreError } from "../../core/errors.ts";
import type { WorkspaceToolsOptions } from "./options.ts";
import { envDenial } from "./rules.ts";

/** A bad `tools` section or `--tools` list; the message names the key. */
export class ToolsConfigError extends AgentcoreError {
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

function checkLimits(x: unknown, at: string): void {
  if (!isObject(x)) throw new ToolsConfigError(`"${at}" must be an object with any of ${Object.keys(EXEC_LIMIT_RANGES).join(", ")}`);
  for (const key of Object.keys(x)) {
    const range = Object.hasOwn(EXEC_LIMIT_RANGES, key) ? EXEC_LIMIT_RANGES[key] : undefined;
    if (range === undefined) throw new ToolsConfigError(`unknown key "${at}.${key}" (known: ${Object.keys(EXEC_LIMIT_RANGES).join(", ")})`);
    const v = x[key];
    const [min, max, unit] = range;
    if (typeof v !== "number" || !Number.isSafeInteger(v) || v < min || v > max) {
      throw new ToolsConfigError(`"${at}.${key}" must be an integer from ${min} to ${max} (${unit})`);
    }
  }
}

/** Check a `tools` section (an untrusted JSON value). */
export function parseToolsConfig(value: unknown, where = "tools"): WorkspaceToolsOptions {
  if (!isObject(value)) throw new ToolsConfigError(`"${where}" must be an object`);
  const out: Record<string, unknown> = {};
  for (const tool of Object.keys(value)) {
    const spec = SPEC[tool];
    if (!Object.hasOwn(SPEC, tool) || spec === undefined) {
      throw new ToolsConfigError(`unknown key "${where}.${tool}" (known: ${Object.keys(SPEC).join(", ")})`);
    }
    const v = value[tool];
    if (typeof v === "boolean") {
      if (tool === "exec" && v) throw new ToolsConfigError(`"${where}.exec" needs an object with an "allow" list of program names`);
      out[tool] = v;
      continue;
    }
    if (!isObject(v)) throw new ToolsConfigError(`"${where}.${tool}" must be true, false or an object`);
    const settings: Record<string, unknown> = {};
    for (const key of Object.keys(v)) {
      const kind = Object.hasOwn(spec, key) ? spec[key] : undefined;
      const at = `${where}.${tool}.${key}`;
      if (kind === undefined) throw new ToolsConfigError(`unknown key "${at}" (known: ${Object.keys(spec).join(", ")})`);
      const x = v[key];
      if (kind === "posint") {
        if (typeof x !== "number" || !Number.isSafeInteger(x) || x < 1) throw new ToolsConfigError(`"${at}" must be a positive integer`);
      } else if (kind === "timeout") {
        if (typeof x !== "number" || !Number.isSafeInteger(x) || x < 1 || x > MAX_TIMEOUT_MS) {
          throw new ToolsConfigError(`"${at}" must be a positive integer of at most ${MAX_TIMEOUT_MS} (milliseconds)`);
        }
      } else if (kind === "strings") {
        if (!Array.isArray(x)) throw new ToolsConfigError(`"${at}" must be an array of strings`);
        x.forEach((s, i) => {
          if (typeof s !== "string" || s.length === 0) throw new ToolsConfigError(`"${at}[${i}]" must be a non-empty string`);
        });
      } else if (kind === "limits") {
        checkLimits(x, at);
      } else if (x !== "auto" && x !== "required" && x !== "off") {
        throw new ToolsConfigError(`"${at}" must be "auto", "required" or "off"`);
      }
      settings[key] = x;
    }
    if (tool === "exec" && Array.isArray(settings.env)) {
      (settings.env as string[]).forEach((name, i) => {
        const why = envDenial(name);
        if (why !== null)
          throw new ToolsConfigError(
            `"${where}.exec.env[${i}]": environment variable "${name}" can't be allowlisted: ${why} (remove it from the list)`,
          );
        if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
          throw new ToolsConfigError(
            `"${where}.exec.env[${i}]" must be an environment variable name (letters, digits, _; not starting with a digit)`,
          );
      });
    }
    if (tool === "exec" && settings.allow === undefined)
      throw new ToolsConfigError(`"${where}.exec.allow" is required (the programs exec may run)`);
    out[tool] = settings;
  }
  return out as WorkspaceToolsOptions;
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
