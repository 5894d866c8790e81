/**
 * The pieces of the command line that know no command: option and command
 * specs, usage errors that point at the command's own `--help`, the "did you
 * mean" suggestions, argument-count and number checks, and `--help` rendered
 * from a table. `args.ts` holds the tables and the parser, and re-exports
 * these, so a command imports one module.
 *
 * @module
 */

import { AgentcoreError } from "../core/errors.ts";

/** One option of a command. */
export interface OptionSpec {
  readonly type: "string" | "boolean";
  /** One-letter alias (`-h`). */
  readonly short?: string;
  /** May be given more than once (the values are collected). */
  readonly multiple?: boolean;
  /** Placeholder of the value in the help (`N`, `FILE`). */
  readonly arg?: string;
  /** Help text, default included; `\n` starts a continuation line. */
  readonly help: string;
  /** Heading the option is listed under in the help (default "Options"). */
  readonly section?: string;
}

export type OptionTable = Readonly<Record<string, OptionSpec>>;

/** The parsed values of a table: strings, booleans, or string lists for `multiple`. */
export type OptionValues<T extends OptionTable> = {
  -readonly [K in keyof T]?: T[K] extends { readonly type: "boolean" }
    ? boolean
    : T[K] extends { readonly multiple: true }
      ? string[]
      : string;
};

/** What `agentcore CMD --help` shows, besides the options. */
export interface CommandSpec {
  /** `agent`, or `sessions show` for a subcommand. */
  readonly name: string;
  /** One line for the overview (`agentcore --help`). */
  readonly summary: string;
  /** Usage lines after `agentcore `, e.g. `agent [options] "TASK"`. */
  readonly usage: readonly string[];
  /** Paragraphs between the usage and the options. */
  readonly description?: string;
  readonly options: OptionTable;
  readonly examples?: readonly string[];
  /** Exit status lines (`0  …`). */
  readonly exit?: readonly string[];
  /** Text after everything else (environment, output format). */
  readonly notes?: string;
}

/**
 * A usage problem (a flag the command does not take, a missing or bad value,
 * a missing argument, an unknown command): printed with a pointer to the
 * command's help, exit status 2. Every other error is printed without it.
 */
export class UsageError extends AgentcoreError {
  readonly code: string = "USAGE";
  override name = "UsageError";
  /** The command whose help the hint names (`agent`, `sessions show`); empty for the overview. */
  readonly command: string;
  constructor(message: string, command = "") {
    super(message);
    this.command = command;
  }
}

/** The stderr text of a usage error: the message, then where to read the usage. */
export function usageText(message: string, command = ""): string {
  const who = command === "" ? "agentcore" : `agentcore ${command}`;
  return `${who}: ${message}\nRun '${who} --help' for usage.\n`;
}

// ---------------------------------------------------------------- suggestions

/**
 * Optimal-string-alignment distance (Levenshtein plus adjacent
 * transpositions, so `scirpt` is one edit from `script`). Written out rather
 * than taken from a package: it is twenty lines, runs on a handful of short
 * words, and the CLI loads nothing it does not need at start-up.
 */
export function editDistance(a: string, b: string): number {
  const m = a.length;
  const n = b.length;
  const d: number[][] = Array.from({ length: m + 1 }, (_, i) => {
    const row = new Array<number>(n + 1).fill(0);
    row[0] = i;
    return row;
  });
  for (let j = 0; j <= n; j++) d[0]![j] = j;
  for (let i = 1; i <= m; i++) {
    for (let j = 1; j <= n; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, d[i - 2]![j - 2]! + 1);
      d[i]![j] = v;
    }
  }
  return d[m]![n]!;
}

/**
 * The candidate nearest to `word`, when it is near enough to be a typo: at
 * most one edit for words of up to 4 characters, two up to 8, three beyond
 * (so `--js` does not suggest `--root`). Case is ignored; ties go to the
 * first candidate (the tables list the common flags first).
 */
export function nearest(word: string, candidates: Iterable<string>): string | undefined {
  const w = word.toLowerCase();
  const limit = w.length <= 4 ? 1 : w.length <= 8 ? 2 : 3;
  let best: string | undefined;
  let bestD = Infinity;
  for (const c of candidates) {
    const dist = editDistance(w, c.toLowerCase());
    if (dist < bestD) {
      best = c;
      bestD = dist;
    }
  }
  return bestD <= limit ? best : undefined;
}

/** `'a'`, `'a' and 'b'`, `'a', 'b' and 'c'`. */
export function quotedList(items: readonly string[]): string {
  const q = items.map((x) => `'${x}'`);
  return q.length <= 1 ? q.join("") : `${q.slice(0, -1).join(", ")} and ${q[q.length - 1]}`;
}

/** An argument as it can be shown in one line of a message (control characters as \xNN, clipped). */
export function shown(text: string): string {
  // deno-lint-ignore no-control-regex
  const safe = text.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`);
  return safe.length > 60 ? `${safe.slice(0, 59)}…` : safe;
}

/** Check that a command line has between `min` and `max` arguments; `what` says which. */
export function expectArguments(command: string, positionals: readonly string[], min: number, max: number, what: string): void {
  if (positionals.length > max) {
    const extra = positionals[max]!;
    throw new UsageError(
      max === 0
        ? `unexpected argument '${shown(extra)}': ${command} takes no arguments${what !== "" ? ` (${what})` : ""}`
        : `unexpected argument '${shown(extra)}': ${command} takes ${what}`,
      command,
    );
  }
  if (positionals.length < min) throw new UsageError(`missing argument: ${command} needs ${what}`, command);
}

/** A flag's value as a whole number from `min` to `max`. Throws {@link UsageError}. */
export function intOption(command: string, flag: string, raw: string, min: number, max: number): number {
  if (!/^[0-9]+$/.test(raw)) {
    throw new UsageError(`${flag} expects ${min >= 1 ? "a positive integer" : "an integer"}, got '${shown(raw)}'`, command);
  }
  const n = Number(raw);
  if (n < min || n > max) throw new UsageError(`${flag} must be between ${min} and ${max}, got ${raw}`, command);
  return n;
}

// ---------------------------------------------------------------- help

/** The `--help` text of a command: usage, description, options by section, examples, exit status. */
export function renderHelp(spec: CommandSpec): string {
  const lines: string[] = [];
  spec.usage.forEach((u, i) => lines.push(`${i === 0 ? "Usage: " : "       "}agentcore ${u}`));
  lines.push("");
  if (spec.description !== undefined) lines.push(spec.description.trimEnd(), "");
  const sections = new Map<string, [string, OptionSpec][]>();
  for (const [name, o] of Object.entries(spec.options)) {
    const s = o.section ?? "Options";
    if (!sections.has(s)) sections.set(s, []);
    sections.get(s)!.push([name, o]);
  }
  const heads = [...sections.values()].flat().map(([name, o]) => optionHead(name, o));
  const width = Math.min(26, Math.max(...heads.map((h) => h.length)) + 2);
  for (const [section, opts] of sections) {
    lines.push(`${section}:`);
    for (const [name, o] of opts) {
      const head = optionHead(name, o);
      const [first, ...more] = o.help.split("\n");
      if (head.length + 2 > width) lines.push(`  ${head}`, `  ${" ".repeat(width)}${first}`);
      else lines.push(`  ${head.padEnd(width)}${first}`);
      for (const m of more) lines.push(`  ${" ".repeat(width)}${m}`);
    }
    lines.push("");
  }
  if (spec.examples !== undefined && spec.examples.length > 0) {
    lines.push("Examples:", ...spec.examples.map((e) => `  ${e}`), "");
  }
  if (spec.exit !== undefined && spec.exit.length > 0)
    lines.push("Exit status:", ...spec.exit.flatMap((e) => e.split("\n").map((l) => `  ${l}`)), "");
  if (spec.notes !== undefined) lines.push(spec.notes.trimEnd(), "");
  return lines.join("\n").trimEnd() + "\n";
}

function optionHead(name: string, o: OptionSpec): string {
  const short = o.short !== undefined ? `-${o.short}, ` : "";
  return `${short}--${name}${o.type === "string" ? ` ${o.arg ?? "VALUE"}` : ""}`;
}
