/**
 * `agentcore/tools`: tool definitions and their registry, argument schemas
 * (ajv), tool outcomes and controls, the built-in `echo` and `read_file`, and
 * rooted file access (paths inside a root: no absolute paths, `..` or
 * symlinks).
 *
 * @module
 */
export { AgentcoreError, isAgentcoreError } from "../core/errors.ts";
export * from "../tools/index.ts";
