/**
 * Shared set-up for the workspace tool tests: a temp folder holding `root`
 * (the workspace) next to `outside` (content that must never change or leak),
 * and a real runtime with the chosen workspace tools registered.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { createRuntime, type Runtime } from "../../src/runtime/index.ts";
import type { Envelope } from "../../src/core/envelope.ts";
import { workspaceTools, type WorkspaceHostOptions, type WorkspaceToolsOptions } from "../../src/tools/workspace/index.ts";
import { createLogger } from "../../src/core/logger.ts";
import { tmp } from "./tmp.ts";

export const OUTSIDE = "OUTSIDE-THE-ROOT-must-stay-unchanged";

export interface Sandbox {
  base: string;
  root: string;
  outside: string;
  rt: Runtime;
  call(tool: string, args: Record<string, unknown>, signal?: AbortSignal): Promise<Envelope>;
  cleanup(): void;
}

export function sandbox(options: WorkspaceToolsOptions, prefix = "agentcore-ws-", host: WorkspaceHostOptions = {}): Sandbox {
  const base = tmp(prefix);
  const root = path.join(base, "root");
  const outside = path.join(base, "outside");
  fs.mkdirSync(root);
  fs.mkdirSync(outside);
  fs.writeFileSync(path.join(outside, "secret.txt"), OUTSIDE);
  const rt = createRuntime({
    root,
    tools: workspaceTools(options, root, host),
    defaultTimeoutMs: 60_000,
    logger: createLogger({ level: "error", sink: () => {} }),
  });
  let n = 0;
  return {
    base,
    root,
    outside,
    rt,
    async call(tool, args, signal) {
      return await rt.dispatchCall({ id: `c${++n}`, tool, arguments: args, shape: "agentcore" } as never, signal);
    },
    cleanup() {
      fs.rmSync(base, { recursive: true, force: true });
    },
  };
}

/** The outside folder's files and contents (to prove nothing changed there). */
export function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string, rel: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      const r = rel === "" ? e.name : `${rel}/${e.name}`;
      if (e.isDirectory()) walk(p, r);
      else if (e.isSymbolicLink()) out[r] = `-> ${fs.readlinkSync(p)}`;
      else out[r] = fs.readFileSync(p, "utf8");
    }
  };
  walk(dir, "");
  return out;
}

export function code(env: Envelope): string | null {
  return env.error?.code ?? null;
}
