/**
 * Settings of the workspace tools: what the configuration file's `tools`
 * section holds, and what the host program adds. Kept apart from `index.ts`
 * so `config.ts` (which parses them) and `index.ts` (which builds the tools
 * from them) both take them from below, without importing each other.
 *
 * @module
 */

/** `exec` settings: the allowlist is required. */
export interface ExecSettings {
  /** Program names (bare, no `/`), resolved through PATH once, at creation. */
  allow: string[];
  /** Environment variables passed through (default PATH, HOME, LANG, LC_ALL, TERM, TZ). */
  env?: string[];
  /** Per-command timeout, the default and the most a call may ask for (default 30000). */
  timeout_ms?: number;
  /** Cap on each of stdout and stderr, in bytes (default 65536). */
  max_output_bytes?: number;
  /** `auto` (bubblewrap when present, default), `required` (fail at creation without it) or `off`. */
  isolation?: "auto" | "required" | "off";
  /** Resource limits of every command (defaults: 256 processes, 2 GiB, 1 GiB files, 600 s CPU). */
  limits?: { processes?: number; memory_bytes?: number; file_size_bytes?: number; cpu_seconds?: number };
}

/** Per-tool settings; `true` means defaults, absent or `false` means off. */
export interface WorkspaceToolsOptions {
  list_dir?: boolean | { max_entries?: number };
  glob?: boolean | { max_results?: number };
  grep?: boolean | { max_results?: number; max_file_bytes?: number; timeout_ms?: number };
  git_diff?: boolean | { max_bytes?: number; timeout_ms?: number };
  write_file?: boolean | { max_bytes?: number };
  apply_patch?: boolean | { max_bytes?: number };
  exec?: false | ExecSettings;
}

/** Settings that come from the host program, not from the configuration file. */
export interface WorkspaceHostOptions {
  /** Where exec's programs, bwrap and git are looked up (default: `$PATH`). */
  searchPath?: readonly string[];
  /** Creation-time warnings (default: a line on stderr). */
  warn?: (message: string) => void;
  /**
   * Files no tool may change (agentcore's config file, its history log):
   * write_file and apply_patch refuse them (`PATH_PROTECTED`) and exec's
   * sandbox binds them read-only, when they lie inside the root.
   */
  protect?: readonly string[];
}

/** Names of every workspace tool, in registration order. */
export const WORKSPACE_TOOL_NAMES = ["list_dir", "glob", "grep", "git_diff", "write_file", "apply_patch", "exec"] as const;
export type WorkspaceToolName = (typeof WORKSPACE_TOOL_NAMES)[number];
