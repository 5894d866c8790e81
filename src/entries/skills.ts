/**
 * `agentcore/skills`: skills as folders with a `SKILL.md` (YAML front matter
 * and instructions). `discoverSkills(dir)` gives the `SkillCatalog` that
 * `createAgent({ skills })` takes; the index and active-skill messages are
 * built from it. Loads `yaml`.
 *
 * @module
 */
export { AgentcoreError, isAgentcoreError } from "../core/errors.ts";
export * from "../skills/index.ts";
