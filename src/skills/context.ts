/**
 * Skills in the model context: the index message, activation by `$name` or
 * `skill:name`, and the active skill's message.
 *
 * Both messages are request-only: the agent adds them to each model request
 * it builds and never to its history, so they never reach a session journal.
 *
 * @example
 * ```ts
 * import { discoverSkills, findSkillMention, skillIndexMessage, activeSkillMessage } from "./src/skills/index.ts";
 * const catalog = discoverSkills("examples/skills");
 * const skill = findSkillMention(catalog, "Write $release-notes for v2");  // the release-notes skill
 * const messages = [skillIndexMessage(catalog), skill && activeSkillMessage(catalog, skill)];
 * ```
 *
 * @module
 */
import type { ChatMessage } from "../providers/types.ts";
import type { Skill, SkillCatalog } from "./catalog.ts";

/** Shown for a skill whose front matter has no description. */
export const NO_DESCRIPTION = "No description provided.";

// A "word character" as Python's Unicode-aware `\w` sees it: letters, numbers, underscore.
const WORD = "[\\p{L}\\p{N}_]";

function escapeRegExp(s: string): string {
  return s.replace(/[\\^$.*+?()[\]{}|/]/g, "\\$&");
}

const patterns = new WeakMap<Skill, { dollar: RegExp; prefixed: RegExp }>();

function patternsOf(skill: Skill): { dollar: RegExp; prefixed: RegExp } {
  let p = patterns.get(skill);
  if (p === undefined) {
    const name = escapeRegExp(skill.name);
    p = {
      // `$name`: case-sensitive.
      dollar: new RegExp(`(?<!${WORD})\\$${name}(?!${WORD})`, "u"),
      // `skill:name`: case-insensitive (the prefix too).
      prefixed: new RegExp(`(?<!${WORD})skill:${name}(?!${WORD})`, "iu"),
    };
    patterns.set(skill, p);
  }
  return p;
}

/**
 * Whether `text` mentions `skill` as `$name` (case-sensitive) or `skill:name`
 * (case-insensitive), with no letter, digit or underscore right before or
 * right after the mention. `$name.` and `($name)` mention it; `x$name` and
 * `$names` do not.
 */
export function mentionsSkill(text: string, skill: Skill): boolean {
  const p = patternsOf(skill);
  return p.dollar.test(text) || p.prefixed.test(text);
}

/**
 * The first skill, in discovery order, that `text` mentions; null when none.
 * (So with skills `release` and `release-notes`, "$release-notes" picks
 * whichever comes first by folder name: `-` is not a word character.)
 */
export function findSkillMention(catalog: SkillCatalog, text: string): Skill | null {
  for (const s of catalog.skills) if (mentionsSkill(text, s)) return s;
  return null;
}

const indexCache = new WeakMap<SkillCatalog, ChatMessage | null>();

/**
 * The index system message: how skills are used, then each skill's name,
 * description ({@link NO_DESCRIPTION} when empty) and the absolute path of its
 * SKILL.md. Null when the catalog is empty. Built once per catalog.
 */
export function skillIndexMessage(catalog: SkillCatalog): ChatMessage | null {
  if (indexCache.has(catalog)) return indexCache.get(catalog)!;
  let msg: ChatMessage | null = null;
  if (catalog.size > 0) {
    const lines = [
      "Skills are folders of instructions for particular kinds of work. The user turns one on by writing $name or skill:name in a message; the instructions of the active skill then follow in a separate system message.",
      "A skill that is not active is only listed here. If you have a tool that reads files, you may open its SKILL.md at the location shown when the task clearly calls for it.",
      "",
      "Available skills:",
    ];
    for (const s of catalog.skills) {
      lines.push(`- name: ${s.name}`, `  description: ${oneLine(s.description) || NO_DESCRIPTION}`, `  location: ${s.path}`);
    }
    msg = Object.freeze({ role: "system" as const, content: lines.join("\n") });
  }
  indexCache.set(catalog, msg);
  return msg;
}

function oneLine(s: string): string {
  return s.replace(/\s+/g, " ").trim();
}

const activeCache = new WeakMap<SkillCatalog, Map<string, ChatMessage>>();

/**
 * The active skill's system message: a line naming the skill, then sections
 * `[SKILL.md]`, `[template.md]` and `[examples/sample.md]` with each file's
 * trimmed text (the last two only when the files exist). Files are read on
 * first use and cached per catalog. Throws `SkillError` (`unreadable`) when a
 * file can no longer be read.
 */
export function activeSkillMessage(catalog: SkillCatalog, skill: Skill): ChatMessage {
  let perCatalog = activeCache.get(catalog);
  if (perCatalog === undefined) activeCache.set(catalog, (perCatalog = new Map()));
  const cached = perCatalog.get(skill.name);
  if (cached !== undefined) return cached;
  const parts = [
    `Active skill: ${skill.name}. The user asked for this skill; follow its instructions below for this task${skill.templatePath || skill.samplePath ? ", and shape the result after its template and example" : ""}.`,
    `[SKILL.md]\n${catalog.text(skill.path)}`,
  ];
  if (skill.templatePath !== null) parts.push(`[template.md]\n${catalog.text(skill.templatePath)}`);
  if (skill.samplePath !== null) parts.push(`[examples/sample.md]\n${catalog.text(skill.samplePath)}`);
  const msg: ChatMessage = Object.freeze({ role: "system" as const, content: parts.join("\n\n") });
  perCatalog.set(skill.name, msg);
  return msg;
}

/** The latest `user` message's text in a list of messages, or null. */
export function latestUserText(messages: readonly { role: string; content?: unknown }[]): string | null {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role === "user") return typeof m.content === "string" ? m.content : null;
  }
  return null;
}

/**
 * Insert the skill messages into a request context right after its leading
 * system messages. Returns a new array; `context` is not changed.
 */
export function withSkillMessages(context: readonly ChatMessage[], skillMessages: readonly ChatMessage[]): ChatMessage[] {
  if (skillMessages.length === 0) return context.slice();
  let k = 0;
  while (k < context.length && context[k]!.role === "system") k++;
  return [...context.slice(0, k), ...skillMessages, ...context.slice(k)];
}
