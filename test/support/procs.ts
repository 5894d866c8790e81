/** Process helpers for the exec tests: find live processes by a marker in their command line. */
import * as fs from "node:fs";
import * as path from "node:path";

export const REPO = path.resolve(import.meta.dir, "../..");
/** Programs are looked up here in the exec tests (`bun` comes from node_modules/.bin). */
export const SEARCH_PATH = [path.join(REPO, "node_modules", ".bin"), "/usr/local/bin", "/usr/bin", "/bin"];

/** Pids of live (non-zombie) processes whose command line contains `marker`. */
export function livePidsWith(marker: string): number[] {
  const out: number[] = [];
  for (const name of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const cmd = fs.readFileSync(`/proc/${name}/cmdline`, "utf8");
      if (!cmd.includes(marker)) continue;
      const stat = fs.readFileSync(`/proc/${name}/stat`, "utf8");
      const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
      if (state !== "Z" && state !== "X") out.push(Number(name));
    } catch {
      // exited while we looked
    }
  }
  return out;
}

/** Wait (bounded: up to `tries` × 100 ms) until no live process carries `marker`; returns the survivors. */
export async function waitGone(marker: string, tries = 50): Promise<number[]> {
  let live = livePidsWith(marker);
  for (let i = 0; i < tries && live.length > 0; i++) {
    await new Promise((r) => setTimeout(r, 100));
    live = livePidsWith(marker);
  }
  return live;
}

/**
 * A bun script (for `bun -e`) that starts a grandchild carrying `marker` in
 * its command line, prints "started", and then idles forever. The marker is
 * assembled at run time, so only the grandchild's command line contains it.
 */
export function forkingScript(marker: string): string {
  const half = Math.floor(marker.length / 2);
  return [
    `const { spawn } = require("node:child_process");`,
    `const m = ${JSON.stringify(marker.slice(0, half))} + ${JSON.stringify(marker.slice(half))};`,
    `const g = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000) // " + m], { stdio: "ignore" });`,
    `g.on("spawn", () => console.log("started"));`,
    `setInterval(() => {}, 1000);`,
  ].join("\n");
}
