/**
 * A small tmpfs to fill up for real (ENOSPC): mounted when the tests run as
 * root (CI does), on a fresh folder; `null` with the reason why not
 * otherwise. Under CI=true a mount that fails is an error, not a skip.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface SmallTmpfs {
  dir: string;
  /** Unmount it and remove the folder (idempotent). */
  unmount(): void;
}

/** Mount a tmpfs of `size` (e.g. `2m`), or say why it cannot be done here. */
export function mountSmallTmpfs(size: string): { fs: SmallTmpfs } | { skip: string } {
  if (typeof process.getuid !== "function" || process.getuid() !== 0) {
    const why = "not running as root: a real ENOSPC needs a tmpfs mount (CI runs these tests as root)";
    if (process.env.CI === "true") throw new Error(`CI=true but ${why}`);
    return { skip: why };
  }
  const dir = mkdtempSync(join(tmpdir(), "agentcore-tmpfs-"));
  const r = spawnSync("mount", ["-t", "tmpfs", "-o", `size=${size},mode=0700`, "tmpfs", dir], { encoding: "utf8" });
  if (r.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    const why = `mount -t tmpfs failed: ${(r.stderr || r.error?.message || "").trim()}`;
    if (process.env.CI === "true") throw new Error(why);
    return { skip: why };
  }
  let mounted = true;
  return {
    fs: {
      dir,
      unmount() {
        if (!mounted) return;
        mounted = false;
        spawnSync("umount", ["-l", dir]);
        rmSync(dir, { recursive: true, force: true });
      },
    },
  };
}
