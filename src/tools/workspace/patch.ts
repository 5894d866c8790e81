/**
 * Unified diffs and exact search/replace edits, in memory: parsing, and
 * applying to a file's text. No filesystem access here (see
 * `apply_patch.ts` for staging and the atomic commit).
 *
 * Unified diff rules:
 * - a file section starts with `--- OLD` then `+++ NEW` (anything before,
 *   such as `diff --git` or `index` lines, is ignored); `/dev/null` marks a
 *   created or deleted file; a leading `a/` (old) or `b/` (new) is dropped;
 *   a tab and whatever follows it (a timestamp) is dropped; a path in double
 *   quotes is unquoted as git writes it (C escapes, octal bytes of UTF-8);
 * - hunks `@@ -l[,n] +l[,n] @@` with lines starting ` ` (context), `-`, `+`,
 *   and `\ No newline at end of file`; an empty line counts as an empty
 *   context line; counts must agree with the header (a `' '`, `-` or `+` line
 *   right after the counted ones is an error, not dropped);
 * - renames (old and new paths differ), binary patches and the same file
 *   twice are refused (`PATCH_INVALID`);
 * - no fuzz: every context and removed line must match exactly. A hunk is
 *   tried at its stated line first; if the file moved, the nearest exact
 *   match after the previous hunk is used. A hunk with no context and no
 *   removed lines (a pure insertion) has nothing to match, so it goes exactly
 *   where it says, and a place past the end of the file is a mismatch.
 *
 * Errors are {@link ToolError}s: `PATCH_INVALID` (with the patch line) for
 * malformed input, `PATCH_MISMATCH` (with file, hunk and file line) when the
 * text does not match.
 *
 * @module
 */
import { ToolError } from "../definition.ts";

export interface HunkLine {
  op: " " | "-" | "+";
  text: string;
}

export interface Hunk {
  oldStart: number;
  oldCount: number;
  newStart: number;
  newCount: number;
  lines: HunkLine[];
  /** The old side's last line has no newline at end of file. */
  oldNoEol: boolean;
  newNoEol: boolean;
  /** 1-based line of the `@@` header in the patch. */
  patchLine: number;
  header: string;
}

export interface FilePatch {
  /** `null` for a created file. */
  oldPath: string | null;
  /** `null` for a deleted file. */
  newPath: string | null;
  hunks: Hunk[];
  patchLine: number;
}

function invalid(message: string, line: number): never {
  throw new ToolError("PATCH_INVALID", `patch line ${line}: ${message}`, { line });
}

const C_ESCAPES: Record<string, number> = { a: 7, b: 8, t: 9, n: 10, v: 11, f: 12, r: 13, '"': 34, "\\": 92 };
let utf8Fatal: TextDecoder | undefined;

/**
 * A path as git writes one with unusual characters: in double quotes, with C
 * escapes (`\t`, `\"`, `\\`, …) and other bytes as three octal digits
 * (`"a/caf\303\251.txt"` for `a/café.txt`, core.quotePath). Returns the
 * text inside the quotes; anything after the closing quote must be white
 * space (a tab and a timestamp).
 */
function unquoteC(quoted: string, line: number): string {
  const bytes: number[] = [];
  const enc = new TextEncoder();
  for (let k = 1; k < quoted.length; k++) {
    const c = String.fromCodePoint(quoted.codePointAt(k)!); // whole characters, not UTF-16 halves
    if (c === '"') {
      if (!/^\s*$/.test(quoted.slice(k + 1).split("\t")[0]!))
        invalid(`unexpected text after the quoted path ${JSON.stringify(quoted.slice(0, 80))}`, line);
      utf8Fatal ??= new TextDecoder("utf-8", { fatal: true });
      try {
        return utf8Fatal.decode(new Uint8Array(bytes));
      } catch {
        invalid(`the quoted path ${JSON.stringify(quoted.slice(0, 80))} is not UTF-8`, line);
      }
    }
    if (c !== "\\") {
      bytes.push(...enc.encode(c));
      k += c.length - 1;
      continue;
    }
    const e = quoted[++k] ?? "";
    const oct = /^[0-3][0-7]{2}$/.exec(quoted.slice(k, k + 3));
    if (oct !== null) {
      bytes.push(parseInt(oct[0], 8));
      k += 2;
    } else if (Object.hasOwn(C_ESCAPES, e)) bytes.push(C_ESCAPES[e]!);
    else invalid(`unknown escape \\${e} in the quoted path ${JSON.stringify(quoted.slice(0, 80))}`, line);
  }
  invalid(`the quoted path ${JSON.stringify(quoted.slice(0, 80))} has no closing quote`, line);
}

function cleanPath(raw: string, prefix: string, line: number): string | null {
  let p = raw;
  if (p.startsWith('"')) p = unquoteC(p, line);
  else {
    const tab = p.indexOf("\t");
    if (tab >= 0) p = p.slice(0, tab);
    p = p.replace(/\s+$/, "");
  }
  if (p === "/dev/null") return null;
  if (p.startsWith(prefix)) p = p.slice(prefix.length);
  return p;
}

const HUNK_RE = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)$/;

/** Parse a unified diff into file patches. Throws `PATCH_INVALID`. */
export function parseUnifiedDiff(text: string): FilePatch[] {
  const lines = text.split("\n");
  if (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
  const files: FilePatch[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i]!;
    if (line.startsWith("Binary files ") || line.startsWith("GIT binary patch")) invalid("binary patches are not supported", i + 1);
    if (!line.startsWith("--- ")) {
      if (line.startsWith("@@")) invalid("hunk without a '--- ' / '+++ ' file header", i + 1);
      i++;
      continue;
    }
    const start = i + 1;
    const next = lines[i + 1];
    if (next === undefined || !next.startsWith("+++ ")) invalid("'--- ' must be followed by a '+++ ' line", i + 2);
    const oldPath = cleanPath(line.slice(4), "a/", start);
    const newPath = cleanPath(next.slice(4), "b/", start + 1);
    if (oldPath === null && newPath === null) invalid("both sides are /dev/null", start);
    if (oldPath !== null && newPath !== null && oldPath !== newPath) {
      invalid(`renames are not supported (${oldPath} -> ${newPath})`, start);
    }
    i += 2;
    const fp: FilePatch = { oldPath, newPath, hunks: [], patchLine: start };
    while (i < lines.length && lines[i]!.startsWith("@@")) {
      const h = HUNK_RE.exec(lines[i]!);
      if (h === null) invalid(`malformed hunk header ${JSON.stringify(lines[i]!.slice(0, 80))}`, i + 1);
      const hunk: Hunk = {
        oldStart: Number(h[1]),
        oldCount: h[2] === undefined ? 1 : Number(h[2]),
        newStart: Number(h[3]),
        newCount: h[4] === undefined ? 1 : Number(h[4]),
        lines: [],
        oldNoEol: false,
        newNoEol: false,
        patchLine: i + 1,
        header: lines[i]!.slice(0, h[0].length - h[5]!.length),
      };
      i++;
      let olds = 0;
      let news = 0;
      while (olds < hunk.oldCount || news < hunk.newCount) {
        if (i >= lines.length) invalid(`hunk ${hunk.header} ends early: expected ${hunk.oldCount} old and ${hunk.newCount} new lines`, i);
        const l = lines[i]!;
        const op = l === "" ? " " : l[0];
        if (op === " " || op === "-" || op === "+") {
          if (op !== "+") olds++;
          if (op !== "-") news++;
          if (olds > hunk.oldCount || news > hunk.newCount) invalid(`hunk ${hunk.header} has more lines than its header says`, i + 1);
          hunk.lines.push({ op, text: l.slice(1) });
        } else if (l.startsWith("\\")) {
          markNoEol(hunk);
        } else invalid(`unexpected line in hunk ${hunk.header}: lines must start with ' ', '-', '+' or '\\'`, i + 1);
        i++;
      }
      while (i < lines.length && lines[i]!.startsWith("\\")) {
        markNoEol(hunk);
        i++;
      }
      fp.hunks.push(hunk);
    }
    // A hunk line right after the counted ones means the header's counts are
    // too small: dropping it would apply only part of what the patch says.
    const after = lines[i];
    const lastHunk = fp.hunks[fp.hunks.length - 1];
    if (lastHunk !== undefined && after !== undefined && /^[ +-]/.test(after) && !after.startsWith("--- ") && after !== "-- ") {
      invalid(
        `hunk ${lastHunk.header} has more lines than its header says (${lastHunk.oldCount} old, ${lastHunk.newCount} new); correct the counts`,
        i + 1,
      );
    }
    if (fp.hunks.length === 0) invalid(`no hunks for ${newPath ?? oldPath}`, start);
    const key = (newPath ?? oldPath)!;
    if (files.some((f) => (f.newPath ?? f.oldPath) === key)) invalid(`${key} appears twice in the patch`, start);
    files.push(fp);
  }
  if (files.length === 0) invalid("no file sections ('--- ' / '+++ ' lines) found", 1);
  return files;
}

function markNoEol(h: Hunk): void {
  const last = h.lines[h.lines.length - 1];
  if (last === undefined) return;
  if (last.op !== "+") h.oldNoEol = true;
  if (last.op !== "-") h.newNoEol = true;
}

/** A file's text as lines plus whether it ends with a newline. */
export interface TextLines {
  lines: string[];
  eol: boolean;
}

export function toLines(text: string): TextLines {
  if (text === "") return { lines: [], eol: true };
  const eol = text.endsWith("\n");
  const lines = (eol ? text.slice(0, -1) : text).split("\n");
  return { lines, eol };
}

export function fromLines(t: TextLines): string {
  if (t.lines.length === 0) return "";
  return t.lines.join("\n") + (t.eol ? "\n" : "");
}

function matchesAt(lines: string[], old: string[], at: number): boolean {
  if (at < 0 || at + old.length > lines.length) return false;
  for (let k = 0; k < old.length; k++) if (lines[at + k] !== old[k]) return false;
  return true;
}

function quote(s: string | undefined): string {
  if (s === undefined) return "end of file";
  return JSON.stringify(s.length > 120 ? s.slice(0, 120) + "…" : s);
}

/**
 * Apply the hunks of `fp` to `content` (`null` when the file does not
 * exist). Returns the new content, or `null` when the file is deleted.
 */
export function applyFilePatch(fp: FilePatch, content: string | null, path: string): string | null {
  const mismatch = (message: string, details: Record<string, unknown>): never => {
    throw new ToolError("PATCH_MISMATCH", `${path}: ${message}`, { path, ...details });
  };
  if (fp.oldPath === null && content !== null) mismatch("the patch creates this file, but it already exists", {});
  if (fp.oldPath !== null && content === null) mismatch("no such file to patch", {});
  const text = toLines(content ?? "");
  let cursor = 0;
  let offset = 0;
  fp.hunks.forEach((h, index) => {
    const hunkNo = index + 1;
    const old = h.lines.filter((l) => l.op !== "+").map((l) => l.text);
    const neu = h.lines.filter((l) => l.op !== "-").map((l) => l.text);
    const stated = (h.oldCount === 0 ? h.oldStart : h.oldStart - 1) + offset;
    let at = -1;
    if (old.length === 0) {
      // Nothing to match (a pure insertion, as diff -U0 makes): only the stated
      // place is right; there is no evidence to move the hunk anywhere else.
      if (stated < cursor || stated > text.lines.length) {
        mismatch(
          `hunk ${hunkNo} (${h.header}) inserts after line ${stated}, but ${stated > text.lines.length ? `the file has ${text.lines.length} line${text.lines.length === 1 ? "" : "s"}` : `the previous hunk ends at line ${cursor}`}`,
          {
            hunk: hunkNo,
            line: stated,
          },
        );
      }
      at = stated;
    } else if (stated >= cursor && matchesAt(text.lines, old, stated)) at = stated;
    else {
      let best = -1;
      for (let k = cursor; k + old.length <= text.lines.length; k++) {
        if (matchesAt(text.lines, old, k) && (best < 0 || Math.abs(k - stated) < Math.abs(best - stated))) best = k;
      }
      at = best;
    }
    if (at < 0) {
      // Say precisely where the stated position stops matching.
      const base = Math.max(stated, cursor);
      let k = 0;
      while (k < old.length && text.lines[base + k] === old[k]) k++;
      mismatch(
        `hunk ${hunkNo} (${h.header}) does not match: at line ${base + k + 1} expected ${quote(old[k])}, found ${quote(text.lines[base + k])}`,
        {
          hunk: hunkNo,
          line: base + k + 1,
        },
      );
    }
    if (h.oldNoEol && at + old.length === text.lines.length && text.eol && old.length > 0) {
      mismatch(`hunk ${hunkNo} (${h.header}) expects no newline at the end of the file, but the file has one`, {
        hunk: hunkNo,
        line: text.lines.length,
      });
    }
    text.lines.splice(at, old.length, ...neu);
    if (at + neu.length === text.lines.length) text.eol = !h.newNoEol;
    offset += at - stated + (neu.length - old.length);
    cursor = at + neu.length;
  });
  if (fp.newPath === null) {
    if (text.lines.length !== 0) mismatch("the patch deletes this file, but its hunks leave content in it", {});
    return null;
  }
  return fromLines(text);
}

/** One exact search/replace edit. */
export interface Edit {
  path: string;
  old: string;
  new: string;
}

function lineOf(text: string, index: number): number {
  let n = 1;
  for (let i = text.indexOf("\n"); i >= 0 && i < index; i = text.indexOf("\n", i + 1)) n++;
  return n;
}

/**
 * Apply one edit to `content`: `old` must occur exactly once. `label` names
 * the edit in messages (e.g. `edit 2`).
 */
export function applyEdit(content: string, edit: Edit, index: number): string {
  const label = `edit ${index + 1}`;
  if (edit.old === "")
    throw new ToolError("PATCH_INVALID", `${edit.path}: ${label}: "old" must not be empty`, { path: edit.path, edit: index + 1 });
  const hits: number[] = [];
  // Overlapping occurrences count ("aa" occurs twice in "aaa"): either could be meant.
  for (let i = content.indexOf(edit.old); i >= 0; i = content.indexOf(edit.old, i + 1)) {
    hits.push(i);
    if (hits.length > 10) break;
  }
  if (hits.length === 0) {
    const first = edit.old.split("\n")[0]!;
    const near: number[] = [];
    if (first.trim() !== "") {
      for (let i = content.indexOf(first); i >= 0 && near.length < 5; i = content.indexOf(first, i + 1)) near.push(lineOf(content, i));
    }
    const hint =
      near.length > 0 ? `; its first line occurs at line${near.length > 1 ? "s" : ""} ${near.join(", ")}, so a later line differs` : "";
    throw new ToolError("PATCH_MISMATCH", `${edit.path}: ${label}: "old" text not found${hint}`, {
      path: edit.path,
      edit: index + 1,
      occurrences: 0,
      ...(near.length > 0 ? { line: near[0] } : {}),
    });
  }
  if (hits.length > 1) {
    const at = hits.slice(0, 10).map((h) => lineOf(content, h));
    throw new ToolError(
      "PATCH_MISMATCH",
      `${edit.path}: ${label}: "old" text occurs ${hits.length > 10 ? "more than 10" : hits.length} times (lines ${at.join(", ")}); add surrounding text to make it unique`,
      {
        path: edit.path,
        edit: index + 1,
        occurrences: hits.length,
        line: at[0],
      },
    );
  }
  const i = hits[0]!;
  return content.slice(0, i) + edit.new + content.slice(i + edit.old.length);
}
