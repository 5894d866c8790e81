/**
 * Skills: folders of instructions (`SKILL.md` with YAML front matter, plus an
 * optional `template.md` and `examples/sample.md`) that a user turns on by
 * writing `$name` or `skill:name`.
 *
 * ```ts
 * import { createAgent, discoverSkills, ScriptedModel } from "./src/mod.ts";
 * const agent = createAgent({ model: new ScriptedModel([{ content: "ok" }]), skills: discoverSkills("examples/skills") });
 * await agent.run("$release-notes for 1.2: fixed the parser");
 * agent.activeSkill; // "release-notes"
 * ```
 *
 * The agent adds an index of the skills (one system message) to every model
 * request, and while a skill is active a second system message with its
 * files; neither is ever stored in the history or a session. No skill tool
 * is registered. See docs/skills.md.
 *
 * @module
 */
export { MAX_SKILL_FILE_BYTES, readSkillFile, SkillCatalog, SkillError } from "./catalog.ts";
export type { Skill, SkillErrorCode } from "./catalog.ts";
export { discoverSkills, loadSkill, parseSkillFile } from "./discover.ts";
export type { ParsedSkillFile } from "./discover.ts";
export {
  activeSkillMessage,
  findSkillMention,
  latestUserText,
  mentionsSkill,
  NO_DESCRIPTION,
  skillIndexMessage,
  withSkillMessages,
} from "./context.ts";
