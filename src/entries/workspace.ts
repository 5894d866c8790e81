/**
 * `agentcore/workspace`: the opt-in workspace tools, rooted in a folder the
 * operator chooses: `list_dir`, `glob`, `grep`, `git_diff`, `write_file`,
 * `apply_patch` and `exec` (argv only, allowlist, timeouts, output caps, a
 * scrubbed environment, bubblewrap isolation when present).
 * `workspaceTools(options, root)` builds the chosen ones; `selectTools` and
 * `parseToolsConfig` pick them from a config; the `create*Tool` factories build
 * one each.
 *
 * @example
 * ```ts
 * import { createRuntime } from "agentcore";
 * import { workspaceTools } from "agentcore/workspace";
 *
 * // list_dir, glob and grep, rooted in the current folder
 * const runtime = createRuntime({ root: ".", tools: workspaceTools({ list_dir: true, glob: true, grep: true }, ".") });
 * ```
 *
 * @module
 */
export { AgentcoreError, isAgentcoreError } from "../core/errors.ts";
export * from "../tools/workspace/index.ts";
