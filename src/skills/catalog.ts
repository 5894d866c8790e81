/**
 * Skills: the {@link Skill} record, {@link SkillError}, bounded file reads
 * and the {@link SkillCatalog}. Discovery (which parses YAML front matter)
 * is in `discover.ts`, so that the agent can hold a catalog without loading
 * the YAML parser.
 *
 * @module
 */
import { AgentcoreError } from "../core/errors.ts";
import { readFileSync, statSync } from "node:fs";

/** Largest SKILL.md, template.md or examples/sample.md that is read (bytes). */
export const MAX_SKILL_FILE_BYTES = 256 * 1024;

/** What went wrong with a skills root or a skill. */
export type SkillErrorCode =
  /** The skills root does not exist. */
  | "root_not_found"
  /** The skills root exists but is not a folder. */
  | "root_not_a_folder"
  /** A skill file could not be read (permissions, not a regular file, too large, not UTF-8). */
  | "unreadable"
  /** The front matter is not closed, is not valid YAML, or is not a mapping. */
  | "invalid_front_matter"
  /** `name` or `description` has the wrong type or shape. */
  | "invalid_field"
  /** Two skills have the same name. */
  | "duplicate_name";

/** A problem with a skills root or one skill. `file` is absolute; `line`/`column` are 1-based positions in it. */
export class SkillError extends AgentcoreError {
  override name = "SkillError";
  constructor(
    readonly code: SkillErrorCode,
    message: string,
    readonly file: string,
    readonly line: number | null = null,
    readonly column: number | null = null,
  ) {
    super(message);
  }
}

/** One discovered skill. Paths are absolute. */
export interface Skill {
  /** Front matter `name` (trimmed), else the folder name. Unique in a catalog. */
  readonly name: string;
  /** Front matter `description` (trimmed); "" when absent. */
  readonly description: string;
  /** The skill's folder. */
  readonly dir: string;
  /** The resolved `SKILL.md`. */
  readonly path: string;
  /** `template.md` in the skill folder, or null. */
  readonly templatePath: string | null;
  /** `examples/sample.md` in the skill folder, or null. */
  readonly samplePath: string | null;
  /** The whole front matter (an empty object without one). */
  readonly metadata: Readonly<Record<string, unknown>>;
}

/** Read a skill file as UTF-8 (bounded). Throws {@link SkillError} `unreadable`. */
export function readSkillFile(file: string): string {
  let bytes: Uint8Array;
  try {
    const st = statSync(file);
    if (!st.isFile()) throw new SkillError("unreadable", `${file}: not a regular file`, file);
    if (st.size > MAX_SKILL_FILE_BYTES) {
      throw new SkillError(
        "unreadable",
        `${file}: ${st.size} bytes, more than the ${MAX_SKILL_FILE_BYTES}-byte limit for skill files`,
        file,
      );
    }
    bytes = readFileSync(file);
  } catch (e) {
    if (e instanceof SkillError) throw e;
    throw new SkillError("unreadable", `${file}: cannot read: ${(e as NodeJS.ErrnoException).code ?? String(e)}`, file);
  }
  if (bytes.length > MAX_SKILL_FILE_BYTES) {
    throw new SkillError("unreadable", `${file}: more than the ${MAX_SKILL_FILE_BYTES}-byte limit for skill files`, file);
  }
  try {
    const text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  } catch {
    throw new SkillError("unreadable", `${file}: not valid UTF-8`, file);
  }
}

/** The skills of one root, in discovery order, with their file contents read on demand and cached. */
export class SkillCatalog {
  readonly skills: readonly Skill[];
  readonly #byName: Map<string, Skill>;
  readonly #texts = new Map<string, string>();

  /** Usually built by `discoverSkills()` (discover.ts); `root` is absolute. Names must be unique. */
  constructor(
    readonly root: string,
    skills: readonly Skill[],
  ) {
    this.skills = Object.freeze([...skills]);
    this.#byName = new Map();
    for (const s of this.skills) {
      if (this.#byName.has(s.name)) throw new SkillError("duplicate_name", `duplicate skill name '${s.name}'`, s.path);
      this.#byName.set(s.name, s);
    }
  }

  get size(): number {
    return this.skills.length;
  }

  /** The skill with this exact name. */
  get(name: string): Skill | undefined {
    return this.#byName.get(name);
  }

  /** A skill file's text, trimmed; read once and cached. Throws {@link SkillError} `unreadable`. */
  text(file: string): string {
    let t = this.#texts.get(file);
    if (t === undefined) {
      t = readSkillFile(file).trim();
      this.#texts.set(file, t);
    }
    return t;
  }
}
