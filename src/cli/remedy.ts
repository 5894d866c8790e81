/**
 * The CLI's wording of session remedies (`src/session/remedy.ts`): the
 * `agentcore sessions …` command that carries each one out. `main` installs
 * it, so session errors read as they always did on the command line.
 *
 * @module
 */
import type { RemedyWording } from "../session/remedy.ts";

/** `s` as one shell word (quoted when it needs to be). */
const shellWord = (s: string): string => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

export const CLI_REMEDY_WORDING: RemedyWording = (r) => {
  switch (r.action) {
    case "recover":
      return `agentcore sessions recover ${shellWord(r.session_id)}${r.branch_id !== "main" ? ` --branch ${shellWord(r.branch_id)}` : ""}${r.force ? " --force" : ""}`;
    case "tree":
      return `agentcore sessions tree ${shellWord(r.session_id)}`;
    case "show":
      return `agentcore sessions show ${shellWord(r.session_id)} (--branch B for another branch)`;
    case "list":
      return "agentcore sessions list";
  }
};
