/**
 * agentcore's state folder in a project, `.agentcore/` (sessions, skills).
 * When agentcore creates that folder itself, it writes `.agentcore/.gitignore`
 * holding `*`, so the folder never shows in `git status` (as Python's venv and
 * pytest's cache do). A `.agentcore/` that already exists is left as it is:
 * an existing `.gitignore` there is never overwritten, and none is added to a
 * folder the user made (they may mean to commit its skills).
 *
 * @module
 */
import * as fs from "node:fs";
import * as path from "node:path";

/** The state folder's name under a root. */
export const STATE_DIR_NAME = ".agentcore";
/** What `.agentcore/.gitignore` holds when agentcore writes it: everything inside is ignored (the file too). */
export const STATE_DIR_GITIGNORE = "*\n";

/**
 * Create `dir` and its missing parents (`mode` for each, as `mkdir -p`). Each
 * `.agentcore` folder this brings into being gets a `.gitignore` holding `*`.
 * Throws what `mkdirSync` throws; the `.gitignore` is best effort (a folder
 * that refuses it still works).
 */
export function makeStateDir(dir: string, mode = 0o700): void {
  const abs = path.resolve(dir);
  const fresh: string[] = [];
  const parts = abs.split(path.sep);
  for (let i = 1; i <= parts.length; i++) {
    if (parts[i - 1] !== STATE_DIR_NAME) continue;
    const folder = parts.slice(0, i).join(path.sep);
    if (!fs.existsSync(folder)) fresh.push(folder);
  }
  fs.mkdirSync(abs, { recursive: true, mode });
  for (const folder of fresh) writeStateGitignore(folder);
}

/** Write `folder/.gitignore` (`*`) unless one exists; false when none was written. */
export function writeStateGitignore(folder: string): boolean {
  try {
    // "wx": never replaces a file (another process may have written it meanwhile)
    fs.writeFileSync(path.join(folder, ".gitignore"), STATE_DIR_GITIGNORE, { flag: "wx", mode: 0o644 });
    return true;
  } catch {
    return false;
  }
}
