/**
 * The workspace tools, opt-in and rooted: `list_dir`, `glob`, `grep`,
 * `git_diff` (read-only) and `write_file`, `apply_patch`, `exec`
 * (side-effecting).
 *
 * {@link workspaceTools} turns a `tools` configuration (the config file's
 * section, same snake_case keys) into tool definitions for
 * `createRuntime({ tools })`. A tool that is absent or `false` is not
 * created. {@link parseToolsConfig} checks an untrusted configuration value
 * strictly: unknown keys and wrong types throw an error naming the key.
 *
 * @example
 * ```ts
 * import { createRuntime, workspaceTools } from "agentcore";
 * const root = "/srv/project";
 * const rt = createRuntime({ root, tools: workspaceTools({ list_dir: true, write_file: { max_bytes: 65536 } }, root) });
 * ```
 *
 * @module
 */
import type { AnyToolDefinition } from "../definition.ts";
import { createWriteFileTool, DEFAULT_WRITE_MAX_BYTES } from "./write_file.ts";
import { createListDirTool } from "./list_dir.ts";
import { createGlobTool } from "./glob.ts";
import { createGrepTool } from "./grep.ts";
import { createApplyPatchTool } from "./apply_patch.ts";
import { createGitDiffTool } from "./git_diff.ts";
import { createExecTool } from "./exec.ts";
import type { WorkspaceHostOptions, WorkspaceToolsOptions } from "./options.ts";
export { parseToolsConfig, selectTools, ToolsConfigError, READ_ONLY_TOOLS, NON_EXEC_TOOLS } from "./config.ts";
export { createListDirTool, LIST_DIR_PARAMETERS } from "./list_dir.ts";
export type { ListDirArgs, ListDirEntry, ListDirResult } from "./list_dir.ts";
export { createGlobTool, GLOB_PARAMETERS } from "./glob.ts";
export type { GlobArgs, GlobResult } from "./glob.ts";
export { Glob, GlobSyntaxError } from "./globmatch.ts";
export { createGrepTool, GREP_PARAMETERS } from "./grep.ts";
export type { GrepArgs, GrepMatch, GrepResult, GrepToolOptions } from "./grep.ts";
export { createWriteFileTool, writeRootedFile, WRITE_FILE_PARAMETERS, DEFAULT_WRITE_MAX_BYTES } from "./write_file.ts";
export { applyRootedPatch, createApplyPatchTool, APPLY_PATCH_PARAMETERS } from "./apply_patch.ts";
export type { ApplyPatchArgs, ApplyPatchResult, PatchAction } from "./apply_patch.ts";
export { createGitDiffTool, GIT_DIFF_PARAMETERS, REF_PATTERN } from "./git_diff.ts";
export type { GitDiffArgs, GitDiffMode, GitDiffResult, GitDiffToolOptions } from "./git_diff.ts";
export { createExecTool, EXEC_PARAMETERS, DEFAULT_EXEC_TIMEOUT_MS, DEFAULT_EXEC_MAX_OUTPUT, DEFAULT_EXEC_LIMITS } from "./exec.ts";
export type { ExecArgs, ExecLimits, ExecResult, ExecToolOptions } from "./exec.ts";
export {
  checkArguments,
  checkProgram,
  envDenial,
  envNameAllowed,
  ENV_DENYLIST,
  FORBIDDEN_ENV,
  GIT_SUBCOMMANDS,
  RUNS_PROGRAMS,
} from "./rules.ts";
export type { EnvDenial } from "./rules.ts";
export { bwrapArgs, detectBwrap, removeLiveCgroups } from "./sandbox.ts";
export { killLiveGroups, liveGroupIds, runProcess } from "./process.ts";
export type { GroupLimits, LimitHit, RunOptions, RunResult } from "./process.ts";
export { applyEdit, applyFilePatch, parseUnifiedDiff } from "./patch.ts";
export type { Edit, FilePatch, Hunk, HunkLine } from "./patch.ts";
export type { WriteFileArgs, WriteFileResult, WriteFileToolOptions } from "./write_file.ts";
export { WORKSPACE_TOOL_NAMES } from "./options.ts";
export type { ExecSettings, WorkspaceHostOptions, WorkspaceToolName, WorkspaceToolsOptions } from "./options.ts";

function settings<T extends object>(v: boolean | T | undefined): T | null {
  if (v === undefined || v === false) return null;
  return v === true ? ({} as T) : v;
}

/**
 * Create the enabled workspace tools, rooted at `root` (resolved with
 * `realpath` once, now). Throws when the root is not a folder or an option
 * is out of range.
 */
export function workspaceTools(options: WorkspaceToolsOptions, root: string, host: WorkspaceHostOptions = {}): AnyToolDefinition[] {
  const out: AnyToolDefinition[] = [];
  const ld = settings(options.list_dir);
  if (ld !== null) out.push(createListDirTool({ root, maxEntries: ld.max_entries }) as unknown as AnyToolDefinition);
  const gl = settings(options.glob);
  if (gl !== null) out.push(createGlobTool({ root, maxResults: gl.max_results }) as unknown as AnyToolDefinition);
  const gr = settings(options.grep);
  if (gr !== null) {
    out.push(
      createGrepTool({
        root,
        maxResults: gr.max_results,
        maxFileBytes: gr.max_file_bytes,
        timeoutMs: gr.timeout_ms,
      }) as unknown as AnyToolDefinition,
    );
  }
  const gd = settings(options.git_diff);
  if (gd !== null) {
    out.push(
      createGitDiffTool({
        root,
        maxBytes: gd.max_bytes,
        timeoutMs: gd.timeout_ms,
        searchPath: host.searchPath,
      }) as unknown as AnyToolDefinition,
    );
  }
  const wf = settings(options.write_file);
  if (wf !== null)
    out.push(
      createWriteFileTool({
        root,
        maxBytes: wf.max_bytes ?? DEFAULT_WRITE_MAX_BYTES,
        protect: host.protect,
      }) as unknown as AnyToolDefinition,
    );
  const ap = settings(options.apply_patch);
  if (ap !== null) out.push(createApplyPatchTool({ root, maxBytes: ap.max_bytes, protect: host.protect }) as unknown as AnyToolDefinition);
  const ex = options.exec;
  if (ex !== undefined && ex !== false) {
    out.push(
      createExecTool({
        root,
        allow: ex.allow,
        env: ex.env,
        timeoutMs: ex.timeout_ms,
        maxOutputBytes: ex.max_output_bytes,
        isolation: ex.isolation,
        limits: ex.limits && {
          processes: ex.limits.processes,
          memoryBytes: ex.limits.memory_bytes,
          fileSizeBytes: ex.limits.file_size_bytes,
          cpuSeconds: ex.limits.cpu_seconds,
        },
        searchPath: host.searchPath,
        warn: host.warn,
        protect: host.protect,
      }) as unknown as AnyToolDefinition,
    );
  }
  return out;
}
