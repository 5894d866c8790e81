/** Temporary skills roots for the skills tests. */
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { tmp } from "./tmp.ts";

const roots: string[] = [];

/** A fresh temporary folder; removed by {@link cleanupRoots}. */
export function tempRoot(prefix = "agentcore-skills-"): string {
  const r = tmp(prefix);
  roots.push(r);
  return r;
}

/** Write files (relative path → text or bytes) under `root`, creating folders. Returns `root`. */
export function writeTree(root: string, files: Record<string, string | Uint8Array>): string {
  for (const [rel, content] of Object.entries(files)) {
    const p = join(root, rel);
    mkdirSync(dirname(p), { recursive: true });
    writeFileSync(p, content);
  }
  return root;
}

/** A new root holding `files`. */
export function skillsRoot(files: Record<string, string | Uint8Array>): string {
  return writeTree(tempRoot(), files);
}

export function cleanupRoots(): void {
  for (const r of roots.splice(0)) rmSync(r, { recursive: true, force: true });
}
