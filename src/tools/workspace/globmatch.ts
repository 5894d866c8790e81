/**
 * A small, portable glob matcher over `/`-separated relative paths (no
 * regular expressions, so no pattern can backtrack catastrophically).
 *
 * Syntax: `*` any run of characters within one path segment, `?` one
 * character, `[abc]`, `[a-z]`, `[!x]` / `[^x]` a character class, `{a,b}`
 * alternatives (nested braces allowed, at most {@link MAX_ALTERNATIVES}
 * expansions), `**` as a whole segment any number of segments (including
 * none), `\` escapes the next character. Names starting with `.` are matched
 * like any other name.
 *
 * Cost: a segment is matched with the classic two-pointer wildcard algorithm
 * (O(pattern × name)); `**` segments with a memo over (pattern segment, path
 * segment) pairs.
 *
 * @module
 */
import { AgentcoreError } from "../../core/errors.ts";

export const MAX_GLOB_LENGTH = 1024;
export const MAX_ALTERNATIVES = 64;

type Tok = { t: "lit"; c: string } | { t: "any" } | { t: "star" } | { t: "class"; neg: boolean; items: [string, string][] };
type Seg = "**" | Tok[];

/** A pattern problem; `message` says what and where. */
export class GlobSyntaxError extends AgentcoreError {
  readonly code: string = "GLOB_PATTERN_INVALID";
  override name = "GlobSyntaxError";
}

/** Expand `{a,b}` alternatives (outermost first, recursively). */
export function expandBraces(pattern: string): string[] {
  let out: string[] = [pattern];
  for (let round = 0; round < 32; round++) {
    const next: string[] = [];
    let changed = false;
    for (const p of out) {
      const m = findBrace(p);
      if (m === null) {
        next.push(p);
        continue;
      }
      changed = true;
      const [open, close, parts] = m;
      for (const alt of parts) next.push(p.slice(0, open) + alt + p.slice(close + 1));
      if (next.length > MAX_ALTERNATIVES) throw new GlobSyntaxError(`pattern expands to more than ${MAX_ALTERNATIVES} alternatives`);
    }
    out = next;
    if (!changed) return out;
  }
  throw new GlobSyntaxError("braces nested too deeply");
}

/** The first top-level `{…}` containing a comma: [open, close, alternatives]. */
function findBrace(p: string): [number, number, string[]] | null {
  for (let i = 0; i < p.length; i++) {
    const c = p[i];
    if (c === "\\") {
      i++;
      continue;
    }
    if (c === "[") {
      const end = classEnd(p, i);
      if (end > 0) i = end;
      continue;
    }
    if (c !== "{") continue;
    let depth = 0;
    const parts: string[] = [];
    let start = i + 1;
    for (let j = i; j < p.length; j++) {
      const d = p[j];
      if (d === "\\") {
        j++;
        continue;
      }
      if (d === "{") depth++;
      else if (d === "}") {
        depth--;
        if (depth === 0) {
          parts.push(p.slice(start, j));
          if (parts.length < 2) break; // `{x}` is literal
          return [i, j, parts];
        }
      } else if (d === "," && depth === 1) {
        parts.push(p.slice(start, j));
        start = j + 1;
      }
    }
    if (depth > 0) throw new GlobSyntaxError(`unclosed '{' at offset ${i}`);
  }
  return null;
}

/** Index of the `]` closing a class opened at `i`, or -1. */
function classEnd(p: string, i: number): number {
  let j = i + 1;
  if (p[j] === "!" || p[j] === "^") j++;
  if (p[j] === "]") j++;
  for (; j < p.length; j++) {
    if (p[j] === "\\") j++;
    else if (p[j] === "]") return j;
    else if (p[j] === "/") return -1;
  }
  return -1;
}

function parseSegment(s: string, offset: number): Tok[] {
  const toks: Tok[] = [];
  const chars = [...s];
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i]!;
    if (c === "\\") {
      if (i + 1 >= chars.length) throw new GlobSyntaxError(`trailing '\\' in segment at offset ${offset}`);
      toks.push({ t: "lit", c: chars[++i]! });
    } else if (c === "*") {
      if (toks.at(-1)?.t !== "star") toks.push({ t: "star" });
    } else if (c === "?") toks.push({ t: "any" });
    else if (c === "[") {
      let j = i + 1;
      let neg = false;
      if (chars[j] === "!" || chars[j] === "^") {
        neg = true;
        j++;
      }
      const items: [string, string][] = [];
      let first = true;
      for (; j < chars.length && (chars[j] !== "]" || first); j++) {
        first = false;
        let lo = chars[j]!;
        if (lo === "\\" && j + 1 < chars.length) lo = chars[++j]!;
        let hi = lo;
        if (chars[j + 1] === "-" && j + 2 < chars.length && chars[j + 2] !== "]") {
          hi = chars[j + 2]!;
          if (hi === "\\" && j + 3 < chars.length) {
            hi = chars[j + 3]!;
            j++;
          }
          j += 2;
          if (hi < lo) throw new GlobSyntaxError(`bad range ${lo}-${hi} in a character class at offset ${offset}`);
        }
        items.push([lo, hi]);
      }
      if (j >= chars.length) throw new GlobSyntaxError(`unclosed '[' in segment at offset ${offset}`);
      toks.push({ t: "class", neg, items });
      i = j;
    } else toks.push({ t: "lit", c });
  }
  return toks;
}

function tokMatches(tok: Tok, ch: string): boolean {
  if (tok.t === "any") return true;
  if (tok.t === "lit") return tok.c === ch;
  if (tok.t === "class") {
    const hit = tok.items.some(([lo, hi]) => ch >= lo && ch <= hi);
    return tok.neg ? !hit : hit;
  }
  return false;
}

/** Two-pointer wildcard match of one segment (O(tokens × chars)). */
function matchSegment(toks: Tok[], name: string): boolean {
  const s = [...name];
  let p = 0;
  let i = 0;
  let starP = -1;
  let starI = 0;
  while (i < s.length) {
    const tok = toks[p];
    if (tok !== undefined && tok.t !== "star" && tokMatches(tok, s[i]!)) {
      p++;
      i++;
    } else if (tok !== undefined && tok.t === "star") {
      starP = p++;
      starI = i;
    } else if (starP >= 0) {
      p = starP + 1;
      i = ++starI;
    } else return false;
  }
  while (toks[p]?.t === "star") p++;
  return p === toks.length;
}

/** A compiled glob: call {@link Glob.matches} with a relative path. */
export class Glob {
  readonly #alternatives: Seg[][];
  readonly #prefix: string;
  readonly #maxSegments: number;

  /** Throws {@link GlobSyntaxError} for a malformed pattern. */
  constructor(pattern: string) {
    if (pattern.length === 0) throw new GlobSyntaxError("pattern is empty");
    if (pattern.length > MAX_GLOB_LENGTH) throw new GlobSyntaxError(`pattern is longer than ${MAX_GLOB_LENGTH} characters`);
    this.#alternatives = expandBraces(pattern).map((alt) => {
      const segs: Seg[] = [];
      let offset = 0;
      for (const part of alt.split("/")) {
        if (part === "**") {
          if (segs.at(-1) !== "**") segs.push("**");
        } else if (part !== "" && part !== ".") segs.push(parseSegment(part, offset));
        offset += part.length + 1;
      }
      return segs;
    });
    const lits: string[] = [];
    for (const part of pattern.split("/")) {
      if (part === "" || part === "." || /[*?[\]{}\\]/.test(part)) break;
      lits.push(part);
    }
    // the last segment names the match itself, not a folder to start from
    if (lits.length === pattern.split("/").filter((p) => p !== "" && p !== ".").length) lits.pop();
    this.#prefix = lits.join("/");
    this.#maxSegments = this.#alternatives.some((a) => a.includes("**"))
      ? Infinity
      : Math.max(0, ...this.#alternatives.map((a) => a.length));
  }

  /**
   * The leading segments of the pattern that contain no special character
   * (`src/lib` for `src/lib/**\/*.ts`), joined with `/`; `""` when the first
   * segment already has one. Every match lies below this folder.
   */
  get literalPrefix(): string {
    return this.#prefix;
  }

  /**
   * The most path segments a match can have, or `Infinity` when a `**`
   * appears (a walk need not descend deeper than this).
   */
  get maxSegments(): number {
    return this.#maxSegments;
  }

  /** Whether `path` (relative, `/`-separated) matches. */
  matches(path: string): boolean {
    const names = path.split("/").filter((p) => p !== "");
    return this.#alternatives.some((segs) => matchPath(segs, names));
  }
}

function matchPath(segs: Seg[], names: string[]): boolean {
  const memo = new Map<number, boolean>();
  const go = (pi: number, si: number): boolean => {
    const key = pi * (names.length + 1) + si;
    const hit = memo.get(key);
    if (hit !== undefined) return hit;
    let r: boolean;
    if (pi === segs.length) r = si === names.length;
    else {
      const seg = segs[pi]!;
      if (seg === "**") r = go(pi + 1, si) || (si < names.length && go(pi, si + 1));
      else r = si < names.length && matchSegment(seg, names[si]!) && go(pi + 1, si + 1);
    }
    memo.set(key, r);
    return r;
  };
  return go(0, 0);
}
