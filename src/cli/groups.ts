/**
 * The command groups: the commands whose first argument is a subcommand
 * (`agentcore sessions list`, `agentcore store migrate`), and the one usage
 * error every group gives for a word that is none of its subcommands. Each
 * group checks its subcommand before `--help`, so `agentcore store bogus
 * --help` is refused (exit 2) rather than answered with the group's help.
 *
 * @module
 */
import { nearest, SESSIONS_SUBCOMMANDS, shown } from "./args.ts";

/** Each group's subcommands, in its help's order. */
export const GROUPS: Readonly<Record<"sessions" | "skills" | "store", readonly string[]>> = {
  sessions: Object.keys(SESSIONS_SUBCOMMANDS),
  skills: ["list"],
  store: ["migrate", "prune"],
};

/**
 * The message for `word` given where a subcommand of `known` was expected:
 * it names the word, suggests the nearest subcommand when one is close (by
 * edit distance), and lists them all.
 */
export function unknownSubcommand(word: string, known: readonly string[]): string {
  const guess = nearest(word, known);
  return `unknown subcommand '${shown(word)}'${guess !== undefined ? `; did you mean '${guess}'?` : ""} (subcommands: ${known.join(", ")})`;
}
