/**
 * The one temporary-folder helper for tests: `tmp(prefix)` makes a fresh
 * folder under the system's temp folder and gives its real path (symlinks
 * resolved, so paths compare equal with what the code under test reports).
 * Every folder made here is removed when the test process exits, even if the
 * test that made it failed before its own clean-up; `removeTmp(dir)` removes
 * one sooner (an afterEach that wants a clean slate).
 */
import { afterEach } from "bun:test";
import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const made = new Set<string>();
let hooked = false;

/** A fresh folder `<tmp>/<prefix>XXXXXX`, real path; removed at process exit. */
export function tmp(prefix = "agentcore-test-"): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  made.add(dir);
  if (!hooked) {
    hooked = true;
    process.on("exit", () => {
      for (const d of made) rmSync(d, { recursive: true, force: true });
    });
  }
  return dir;
}

/** Remove a folder made by tmp() now (and forget it). */
export function removeTmp(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  made.delete(dir);
}

/**
 * For a file whose folders last one test: `const tmp = tmpPerTest("p-")` at
 * the top of the file registers an afterEach that removes the folders made
 * by that test.
 */
export function tmpPerTest(prefix: string): () => string {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) removeTmp(d);
  });
  return () => {
    const d = tmp(prefix);
    dirs.push(d);
    return d;
  };
}
