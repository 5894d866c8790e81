/**
 * `agentcore skills list [--json] [--dir DIR]`: the skills an agent would see,
 * and the skills folder rule shared by `agent` (and `chat`).
 *
 * Which folder: `--dir DIR` (agent: `--skills DIR`), else the config's
 * `skills_dir`, else `.agentcore/skills` under the root (`--root`, the
 * config's `root`, or the current directory). A folder given explicitly must
 * exist; the default one is used only when it exists.
 *
 * @module
 */
import { statSync } from "node:fs";
import * as path from "node:path";
import { type SkillCatalog, SkillError } from "../skills/catalog.ts";
import { NO_DESCRIPTION } from "../skills/context.ts";
import { ConfigError, loadConfig } from "../host/settings.ts";
import { type LineWriter, PIPE_HELP } from "./output.ts";
import { parseCommandLine, renderHelp, shown, SKILLS_OPTIONS, usageText } from "./args.ts";
import { GROUPS, unknownSubcommand } from "./groups.ts";

export const SKILLS_HELP = renderHelp({
  name: "skills",
  summary: "list the skills a task can activate",
  usage: ["skills list [--json] [--dir DIR]   the skills in DIR, in discovery order"],
  description: `A skill is a folder holding SKILL.md (optional YAML front matter: name, description), and
optionally template.md and examples/sample.md. Writing $name or skill:name in a task (or in a
steering message) activates it in 'agentcore agent', 'agentcore chat' and runs of 'agentcore serve'.`,
  options: SKILLS_OPTIONS,
  examples: ["agentcore skills list", "agentcore skills list --dir ./skills --json"],
  exit: [
    "0  listed (also when the default folder does not exist: no skills)",
    "2  usage error, a missing --dir folder or a bad skill (the message names the file, line and column)",
    PIPE_HELP,
  ],
});

/** `.agentcore/skills` under `root` (default: the current directory), absolute. */
export function defaultSkillsDir(root?: string): string {
  return path.join(path.resolve(root ?? "."), ".agentcore", "skills");
}

/**
 * The catalog for a command: `dir` when given (it must exist; rejects with
 * `SkillError`), else the default folder under `root` when it exists, else
 * null. Bad skills reject with `SkillError`. The YAML parser is loaded only
 * when there is a folder to read.
 */
export async function loadCliSkills(dir: string | undefined, root: string | undefined): Promise<SkillCatalog | null> {
  let folder = dir;
  if (folder === undefined) {
    const fallback = defaultSkillsDir(root);
    let exists = false;
    try {
      exists = statSync(fallback).isDirectory();
    } catch {
      exists = false;
    }
    if (!exists) return null;
    folder = fallback;
  }
  const { discoverSkills } = await import("../skills/discover.ts");
  return discoverSkills(folder);
}

/** A usage error: the message and the pointer to the help. Exit 2. */
function fail(message: string): number {
  process.stderr.write(usageText(message, "skills"));
  return 2;
}

function env(name: string): string | undefined {
  return (globalThis as { process?: { env: Record<string, string | undefined> } }).process?.env[name];
}

/**
 * Text for one table cell: white space runs become one space, and the other
 * C0/C1 control characters show as `\xNN`, so a SKILL.md (a cloned
 * repository's `.agentcore/skills`) can't send escape sequences to the
 * terminal or break the table.
 */
function cell(text: string): string {
  return text
    .replace(/\s+/g, " ")
    .replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`)
    .trim();
}

/** Run `agentcore skills …`; resolves to the exit status. */
export async function cmdSkills(argv: string[], io: { out: LineWriter }): Promise<number> {
  const { out } = io;
  let parsed;
  try {
    parsed = parseCommandLine("skills", SKILLS_OPTIONS, argv);
  } catch (e) {
    return fail((e as Error).message);
  }
  const { values: v, positionals } = parsed;
  const [sub, ...extra] = positionals;
  // the subcommand first: `skills bogus --help` is a mistake, not a request for help
  if (sub !== undefined && !GROUPS.skills.includes(sub)) return fail(unknownSubcommand(sub, GROUPS.skills));
  if (v.help) {
    out.line(SKILLS_HELP.trimEnd());
    out.flush();
    return 0;
  }
  if (sub === undefined) return fail(`missing subcommand: ${GROUPS.skills.join(", ")}`);
  if (extra.length > 0) return fail(`unexpected argument '${shown(extra[0]!)}': skills list takes no arguments`);
  if (v.dir === "") return fail("--dir must not be empty");

  let dir = v.dir;
  let root = v.root;
  const configPath = v.config ?? env("AGENTCORE_CONFIG");
  if (configPath !== undefined && configPath !== "") {
    try {
      const file = loadConfig(configPath);
      dir ??= file.skills_dir;
      root ??= file.root;
    } catch (e) {
      if (e instanceof ConfigError) {
        process.stderr.write(`agentcore skills: ${e.message}\n`);
        return 2;
      }
      throw e;
    }
  }

  let catalog: SkillCatalog | null;
  try {
    catalog = await loadCliSkills(dir, root);
  } catch (e) {
    if (e instanceof SkillError) {
      process.stderr.write(`agentcore skills: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
  const rootShown = catalog?.root ?? (dir !== undefined ? path.resolve(dir) : defaultSkillsDir(root));
  const skills = catalog?.skills ?? [];
  if (v.json) {
    const list = skills.map((s) => ({
      name: s.name,
      description: s.description,
      path: s.path,
      template: s.templatePath,
      sample: s.samplePath,
    }));
    out.line(JSON.stringify({ root: rootShown, skills: list }, null, 2));
    out.flush();
    return 0;
  }
  if (catalog === null) {
    out.line(`no skills: ${rootShown} does not exist (create it, or pass --dir DIR)`);
    out.flush();
    return 0;
  }
  if (skills.length === 0) {
    out.line(`no skills in ${rootShown} (a skill is a folder holding SKILL.md)`);
    out.flush();
    return 0;
  }
  const rows = skills.map((s) => {
    const extras = [s.templatePath !== null ? "template" : null, s.samplePath !== null ? "sample" : null]
      .filter((x) => x !== null)
      .join(",");
    return [cell(s.name), extras || "-", cell(s.description) || NO_DESCRIPTION];
  });
  const w0 = Math.max(4, ...rows.map((r) => r[0]!.length));
  const w1 = Math.max(6, ...rows.map((r) => r[1]!.length));
  out.line(`${"NAME".padEnd(w0)}  ${"EXTRAS".padEnd(w1)}  DESCRIPTION`);
  for (const r of rows) out.line(`${r[0]!.padEnd(w0)}  ${r[1]!.padEnd(w1)}  ${r[2]}`);
  out.line("");
  out.line(`${skills.length} skill${skills.length === 1 ? "" : "s"} in ${rootShown}; activate one with $name or skill:name in a task`);
  out.flush();
  return 0;
}
