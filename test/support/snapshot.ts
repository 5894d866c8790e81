/**
 * Snapshots of a store, to show that an operation left it as it was: every
 * file of a folder (a JSONL store, a daemon's folder) byte for byte, or every
 * record and branch of every session of any store (PostgreSQL too).
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import type { JournalStorage } from "../../src/session/journal.ts";

/** Every file under `dir` (recursively) by relative path, with its bytes (base64); a missing folder is empty. */
export function folderSnapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    let entries;
    try {
      entries = readdirSync(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out[relative(dir, p)] = readFileSync(p).toString("base64");
    }
  };
  walk(dir);
  return out;
}

/** Every branch and record of every session of `s`, by session id. */
export async function storeSnapshot(s: JournalStorage): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const id of (await s.listSessions()).sort()) out[id] = { branches: await s.listBranches(id), records: await s.records(id) };
  return out;
}
