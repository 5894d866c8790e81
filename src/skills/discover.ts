/**
 * Skill discovery: a skills root holds one folder per skill, each with a
 * `SKILL.md` that may open with YAML front matter.
 *
 * ```
 * skills/
 *   release-notes/
 *     SKILL.md            required; front matter `name`, `description` (both optional)
 *     template.md         optional
 *     examples/sample.md  optional
 * ```
 *
 * @example
 * ```ts
 * import { discoverSkills } from "./src/skills/index.ts";
 * const catalog = discoverSkills("examples/skills");
 * for (const s of catalog.skills) console.log(s.name, s.description, s.path);
 * ```
 *
 * Discovery is synchronous and happens once (no refresh): the direct child
 * folders of the root are visited in name order; a folder without `SKILL.md`
 * is skipped, and so is any entry that is not a folder. Every problem with a
 * skill is a {@link SkillError} that names the file and, for front matter,
 * the line and column.
 *
 * @module
 */
import { readdirSync, realpathSync, statSync } from "node:fs";
import * as path from "node:path";
import { isMap, isScalar, parseDocument } from "yaml";
import { readSkillFile, type Skill, SkillCatalog, SkillError } from "./catalog.ts";

/** A SKILL.md split into its front matter and the rest. */
export interface ParsedSkillFile {
  metadata: Record<string, unknown>;
  /** Line (1-based) of the first front matter line; 0 without front matter. */
  frontMatterLine: number;
}

function isFolder(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

function isFile(p: string): boolean {
  try {
    return statSync(p).isFile();
  } catch {
    return false;
  }
}

/** 1-based line and column of `offset` in `text`. */
function position(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let last = -1;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      last = i;
    }
  }
  return { line, column: offset - last };
}

const OPENING = /^---[ \t]*$/;

function kindOf(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "a list";
  return typeof v === "object" ? "a mapping" : `a ${typeof v}`;
}

/**
 * Parse the front matter of a SKILL.md: a `---` line at the very start, YAML,
 * and a closing `---` line. No front matter gives an empty mapping. Throws
 * {@link SkillError} `invalid_front_matter` (with the file's line and column)
 * when it is not closed, not valid YAML, or not a mapping; and
 * `invalid_field` when `name` or `description` has the wrong shape (checked
 * by {@link discoverSkills}, which needs the positions kept here).
 */
export function parseSkillFile(text: string, file: string): ParsedSkillFile & { positions: Map<string, { line: number; column: number }> } {
  const positions = new Map<string, { line: number; column: number }>();
  const lines = text.split("\n");
  if (!OPENING.test(lines[0]!.replace(/\r$/, ""))) return { metadata: {}, frontMatterLine: 0, positions };
  let close = -1;
  for (let i = 1; i < lines.length; i++) {
    if (OPENING.test(lines[i]!.replace(/\r$/, ""))) {
      close = i;
      break;
    }
  }
  if (close < 0) {
    throw new SkillError(
      "invalid_front_matter",
      `${file}:1:1: the front matter opened by '---' on line 1 is never closed by a '---' line`,
      file,
      1,
      1,
    );
  }
  const yamlText = lines.slice(1, close).join("\n");
  const doc = parseDocument(yamlText, { prettyErrors: false, uniqueKeys: true });
  // Front matter starts on line 2 of the file.
  const at = (offset: number) => {
    const p = position(yamlText, offset);
    return { line: p.line + 1, column: p.column };
  };
  if (doc.errors.length > 0) {
    const e = doc.errors[0]!;
    const p = at(e.pos[0]);
    throw new SkillError(
      "invalid_front_matter",
      `${file}:${p.line}:${p.column}: invalid YAML in the front matter: ${e.message} (${e.code})`,
      file,
      p.line,
      p.column,
    );
  }
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: 100 });
  } catch (e) {
    throw new SkillError("invalid_front_matter", `${file}:2:1: the front matter cannot be read: ${(e as Error).message}`, file, 2, 1);
  }
  if (value === null || value === undefined) return { metadata: {}, frontMatterLine: 2, positions };
  if (typeof value !== "object" || Array.isArray(value) || value instanceof Map || value instanceof Set) {
    const p = at(doc.contents?.range?.[0] ?? 0);
    throw new SkillError(
      "invalid_front_matter",
      `${file}:${p.line}:${p.column}: the front matter must be a YAML mapping (key: value lines), got ${kindOf(value)}`,
      file,
      p.line,
      p.column,
    );
  }
  if (isMap(doc.contents)) {
    for (const pair of doc.contents.items) {
      const key = isScalar(pair.key) ? pair.key.value : pair.key;
      if (typeof key === "string" && isScalar(pair.key) && pair.key.range) positions.set(key, at(pair.key.range[0]));
    }
  }
  return { metadata: value as Record<string, unknown>, frontMatterLine: 2, positions };
}

// Line breaks and other control characters would break the index message.
const CONTROL = /[\u0000-\u001f\u007f]/;

function fieldError(file: string, positions: Map<string, { line: number; column: number }>, key: string, what: string): SkillError {
  const p = positions.get(key) ?? { line: 2, column: 1 };
  return new SkillError("invalid_field", `${file}:${p.line}:${p.column}: front matter "${key}" ${what}`, file, p.line, p.column);
}

/** Read one skill folder (which must hold SKILL.md). Throws {@link SkillError}. */
export function loadSkill(dir: string): Skill {
  const folder = path.basename(dir);
  let file = path.join(dir, "SKILL.md");
  try {
    file = realpathSync(file);
  } catch {
    // reported by readSkillFile below
  }
  const text = readSkillFile(file);
  const { metadata, positions } = parseSkillFile(text, file);
  let name = folder;
  const rawName = metadata.name;
  const namedInFile = rawName !== undefined && rawName !== null && rawName !== "";
  if (namedInFile) {
    if (typeof rawName !== "string") throw fieldError(file, positions, "name", `must be a string, got ${kindOf(rawName)}`);
    name = rawName.trim();
    if (name === "") throw fieldError(file, positions, "name", "must not be blank");
  }
  if (CONTROL.test(name)) {
    if (!namedInFile) {
      // no front matter name: the folder's own name is the problem, not a line of the file
      throw new SkillError(
        "invalid_field",
        `${file}: the folder name ${JSON.stringify(folder)} cannot be a skill name (it has line breaks or control characters); set "name" in the front matter`,
        file,
      );
    }
    throw fieldError(file, positions, "name", "must not contain line breaks or control characters");
  }
  const rawDesc = metadata.description;
  let description: string;
  if (rawDesc === undefined || rawDesc === null) description = "";
  else if (typeof rawDesc === "string" || typeof rawDesc === "number" || typeof rawDesc === "boolean") description = String(rawDesc).trim();
  else throw fieldError(file, positions, "description", `must be text, got ${kindOf(rawDesc)}`);
  const template = path.join(dir, "template.md");
  const sample = path.join(dir, "examples", "sample.md");
  const templatePath = isFile(template) ? template : null;
  const samplePath = isFile(sample) ? sample : null;
  // Checked now (size, UTF-8), so that a bad one is reported by discovery
  // rather than in the middle of the run that first activates the skill.
  for (const extra of [templatePath, samplePath]) if (extra !== null) readSkillFile(extra);
  return Object.freeze({
    name,
    description,
    dir,
    path: file,
    templatePath,
    samplePath,
    metadata: Object.freeze(metadata),
  });
}

/**
 * Discover the skills under `root`: its direct child folders, in name order,
 * that hold a `SKILL.md`. Returns a {@link SkillCatalog} (possibly empty).
 * Throws {@link SkillError}: `root_not_found`, `root_not_a_folder`, or the
 * first bad skill's error (`unreadable`, `invalid_front_matter`,
 * `invalid_field`, `duplicate_name`).
 */
export function discoverSkills(root: string): SkillCatalog {
  if (typeof root !== "string" || root.length === 0) throw new TypeError("discoverSkills: root must be a non-empty path");
  const abs = path.resolve(root);
  let resolved: string;
  try {
    resolved = realpathSync(abs);
  } catch {
    throw new SkillError("root_not_found", `skills root not found: ${abs}`, abs);
  }
  if (!isFolder(resolved)) throw new SkillError("root_not_a_folder", `skills root is not a folder: ${abs}`, abs);
  let names: string[];
  try {
    names = readdirSync(resolved);
  } catch (e) {
    throw new SkillError("unreadable", `skills root ${abs}: cannot list: ${(e as NodeJS.ErrnoException).code ?? String(e)}`, abs);
  }
  names.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const skills: Skill[] = [];
  const byName = new Map<string, Skill>();
  for (const entry of names) {
    const dir = path.join(resolved, entry);
    if (!isFolder(dir)) continue;
    const md = path.join(dir, "SKILL.md");
    let exists = true;
    try {
      statSync(md);
    } catch {
      exists = false;
    }
    if (!exists) continue;
    const skill = loadSkill(dir);
    const prior = byName.get(skill.name);
    if (prior !== undefined) {
      throw new SkillError("duplicate_name", `duplicate skill name '${skill.name}': ${skill.path} and ${prior.path}`, skill.path);
    }
    byName.set(skill.name, skill);
    skills.push(skill);
  }
  return new SkillCatalog(resolved, skills);
}
