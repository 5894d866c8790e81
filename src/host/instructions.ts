/**
 * Project instructions: the `AGENTS.md` files of a run's workspace, read into
 * its system prompt. The files come from the workspace root and from each
 * folder between it and the working folder (when that is inside the root),
 * root first and nearest last, each marked with its path relative to the
 * root. Together they hold at most {@link MAX_INSTRUCTIONS_BYTES}; past that
 * the text is cut (on a character boundary) with a note saying so, and the
 * files after the cut are named but left out.
 *
 * A file comes from the repository, so it is untrusted input: it is read
 * with the rooted rules of `read_file` (see `../tools/fs/rooted.ts`: no
 * symlink component, a regular file only, a bounded read, strict UTF-8). An
 * `AGENTS.md` that is a symlink is followed only to a file inside the root,
 * read by its own path under the same rules. A file that breaks a rule is an
 * {@link InstructionsError} naming it and what is wrong: the run does not
 * start with instructions it could not read as they are. The text only goes
 * into the system prompt; nothing in it reaches the policy or the tools.
 *
 * @module
 */
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import { isAbsolute, relative, sep } from "node:path";
import { AgentcoreError } from "../core/errors.ts";
import type { InstructionFile } from "../context/events.ts";
import { ToolError } from "../tools/definition.ts";
import { readRootedFile } from "../tools/fs/rooted.ts";

/** The file name looked for in each folder. */
export const INSTRUCTIONS_FILE = "AGENTS.md";
/** The most text the files put into the system prompt together: 32 KiB. */
export const MAX_INSTRUCTIONS_BYTES = 32 * 1024;
/** The largest file read at all (a larger one is refused): 1 MiB. */
export const MAX_INSTRUCTIONS_FILE_BYTES = 1024 * 1024;

/** A project instructions file that can't be read as it is. */
export class InstructionsError extends AgentcoreError {
  readonly code: string = "INSTRUCTIONS_INVALID";
  override name = "InstructionsError";
  constructor(
    message: string,
    /** The file, relative to the workspace root. */
    readonly path: string,
    /** What is wrong: the rooted read's code (`PATH_SYMLINK`, `NOT_A_FILE`, `FILE_TOO_LARGE`, `FILE_NOT_UTF8`, `IO_ERROR`) or `OUTSIDE_ROOT`. */
    readonly reason: string,
  ) {
    super(message);
  }
}

/** What the workspace's instructions files give a run. */
export interface ProjectInstructions {
  /** The system prompt's part (empty when there are no files). */
  text: string;
  /** The files read, root first (what the run's first event and the journal name). */
  files: InstructionFile[];
}

/**
 * The folders looked in, relative to `root` ("" is the root itself): the
 * root, then each folder down to `cwd` when `cwd` is inside the root.
 */
export function instructionFolders(root: string, cwd?: string): string[] {
  const folders = [""];
  if (cwd === undefined) return folders;
  let real: string;
  try {
    real = fs.realpathSync(cwd);
  } catch {
    return folders;
  }
  const rel = relative(root, real);
  if (rel === "" || rel.startsWith("..") || isAbsolute(rel)) return folders;
  const parts = rel.split(sep);
  for (let i = 1; i <= parts.length; i++) folders.push(parts.slice(0, i).join("/"));
  return folders;
}

/**
 * Read the `AGENTS.md` files of `root` (a canonical root, as a runtime's
 * `root`) and the folders down to `cwd`. Throws {@link InstructionsError}.
 */
export function loadProjectInstructions(root: string, cwd?: string, limit = MAX_INSTRUCTIONS_BYTES): ProjectInstructions {
  const found: { path: string; content: string }[] = [];
  for (const folder of instructionFolders(root, cwd)) {
    const path = folder === "" ? INSTRUCTIONS_FILE : `${folder}/${INSTRUCTIONS_FILE}`;
    const content = readInstructionsFile(root, path);
    if (content !== null) found.push({ path, content });
  }
  if (found.length === 0) return { text: "", files: [] };
  const files: InstructionFile[] = [];
  const sections: string[] = [];
  let left = limit;
  for (const { path, content } of found) {
    const bytes = Buffer.from(content, "utf8");
    const file: InstructionFile = { path, bytes: bytes.length, sha256: createHash("sha256").update(bytes).digest("hex") };
    if (bytes.length <= left) {
      sections.push(`==> ${path} <==\n${content}`);
      left -= bytes.length;
    } else {
      file.truncated = true;
      const shown = cutUtf8(bytes, left);
      const note =
        shown.length === 0
          ? `[left out: the project instructions' limit of ${limit} bytes was reached before this file]`
          : `[truncated: the project instructions' limit of ${limit} bytes was reached; ${shown.length} of ${bytes.length} bytes of this file shown]`;
      sections.push(`==> ${path} <==\n${shown.toString("utf8")}${shown.length === 0 ? "" : "\n"}${note}`);
      left = 0; // the files after a cut are left out, not cut again
    }
    files.push(file);
  }
  const text =
    `Project instructions: the ${INSTRUCTIONS_FILE} files of the workspace, root first and the nearest folder last ` +
    `(a nearer file refines the ones before it). Each begins with a ==> PATH <== line.\n\n${sections.join("\n\n")}`;
  return { text, files };
}

/** The system prompt with the instructions after the front end's own prompt. */
export function withInstructions(system: string | undefined, instructions: ProjectInstructions): string | undefined {
  if (instructions.text === "") return system;
  return system === undefined ? instructions.text : `${system}\n\n${instructions.text}`;
}

/** The first `max` bytes of `bytes`, cut back to a character boundary. */
function cutUtf8(bytes: Buffer, max: number): Buffer {
  let end = Math.max(0, Math.min(max, bytes.length));
  while (end > 0 && end < bytes.length && (bytes[end]! & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end);
}

/** One file's text, or null when there is none; a symlink is followed only inside the root. */
function readInstructionsFile(root: string, path: string): string | null {
  const abs = `${root}/${path}`;
  let st: fs.Stats;
  try {
    st = fs.lstatSync(abs);
  } catch (e) {
    const code = (e as { code?: string }).code;
    if (code === "ENOENT" || code === "ENOTDIR") return null;
    throw new InstructionsError(`${path}: cannot be read (${code ?? (e as Error).message})`, path, "IO_ERROR");
  }
  let target = path;
  if (st.isSymbolicLink()) {
    let real: string;
    try {
      real = fs.realpathSync(abs);
    } catch (e) {
      const code = (e as { code?: string }).code ?? "IO_ERROR";
      throw new InstructionsError(`${path}: a symlink that does not resolve (${code})`, path, "PATH_SYMLINK");
    }
    const rel = relative(root, real);
    if (rel === "" || rel.startsWith("..") || isAbsolute(rel))
      throw new InstructionsError(`${path}: a symlink to a file outside the workspace root (${real}); refused`, path, "OUTSIDE_ROOT");
    target = rel.split(sep).join("/");
  }
  try {
    return readRootedFile(root, target, MAX_INSTRUCTIONS_FILE_BYTES).content;
  } catch (e) {
    if (!(e instanceof ToolError)) throw e;
    const via = target === path ? "" : ` (through the symlink to ${target})`;
    const what: Record<string, string> = {
      PATH_SYMLINK: "its path has a symlink in it",
      NOT_A_FILE: "not a regular file",
      FILE_TOO_LARGE: `larger than ${MAX_INSTRUCTIONS_FILE_BYTES} bytes`,
      FILE_NOT_UTF8: "not valid UTF-8",
      NOT_FOUND: "not found",
    };
    throw new InstructionsError(`${path}${via}: ${what[e.code] ?? e.message}`, path, e.code);
  }
}
