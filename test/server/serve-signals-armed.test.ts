/**
 * `agentcore serve` stops gracefully on SIGTERM from the moment it says it
 * is ready. The SIGINT/SIGTERM handlers used to be installed only after the
 * "token file" line was written. A client that stopped the daemon as soon
 * as that line appeared could therefore meet the default action: exit 143,
 * nothing flushed, token files left behind. `npm test` saw this once under
 * load, in token-files.test.ts. Here the command runs in-process, and
 * stderr is watched. When the "token file" line is written, a SIGTERM
 * listener must already be there. The signal is then delivered to those
 * listeners.
 */
import { expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cmdServe } from "../../src/cli/serve.ts";
import { LineWriter } from "../../src/cli/output.ts";
import { eventually } from "../support/daemon.ts";

test("the SIGTERM handler is armed before the token file line; that SIGTERM stops it with exit 0 and its token files removed", async () => {
  const dir = mkdtempSync(join(tmpdir(), "agentcore-armed-"));
  const state = join(dir, "state");
  const before = new Set(process.listeners("SIGTERM"));
  let armedAtTokenLine = null as boolean | null;
  let tokenFile = "";
  let text = "";
  const write = process.stderr.write;
  process.stderr.write = ((chunk: string | Uint8Array) => {
    const s = typeof chunk === "string" ? chunk : new TextDecoder().decode(chunk);
    text += s;
    const m = /token file (.+)\n/.exec(s);
    if (m !== null) {
      tokenFile = m[1]!;
      armedAtTokenLine = process.listeners("SIGTERM").some((l) => !before.has(l));
    }
    return true;
  }) as typeof process.stderr.write;
  let status: number;
  try {
    const running = cmdServe(["--port", "0", "--state-dir", state, "--root", dir], { out: new LineWriter(1) });
    await eventually(() => (armedAtTokenLine !== null ? true : undefined));
    expect(armedAtTokenLine).toBe(true);
    expect(existsSync(tokenFile)).toBe(true);
    // The signal, as the runtime delivers it: to the listeners the command added.
    for (const l of process.listeners("SIGTERM")) if (!before.has(l)) (l as (s: string) => void)("SIGTERM");
    status = await running;
  } finally {
    process.stderr.write = write;
  }
  expect(status).toBe(0);
  expect(text).toContain("SIGTERM: stopping");
  expect(text).toContain("stopped");
  expect(readdirSync(state)).toEqual([]);
  // Nothing is left listening for signals.
  expect(process.listeners("SIGTERM").filter((l) => !before.has(l))).toEqual([]);
  rmSync(dir, { recursive: true, force: true });
});
