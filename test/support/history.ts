/** Shared helpers of the history tests: temp folders, fake call contexts, envelopes. */
import { rmSync } from "node:fs";
import { ToolRegistry, type RegisteredTool } from "../../src/tools/registry.ts";
import type { CallDecision, RunInfo, ToolCallContext, ToolCallOutcome } from "../../src/runtime/middleware/types.ts";
import { failureEnvelope, successEnvelope } from "../../src/runtime/envelope_io.ts";
import type { ErrorCode } from "../../src/core/envelope.ts";
import type { HistoryRecord } from "../../src/runtime/history.ts";
import { tmp } from "./tmp.ts";

/** A fresh temp folder, removed by the returned cleanup. */
export function tempDir(prefix = "agentcore-history-"): { dir: string; cleanup: () => void } {
  const dir = tmp(prefix);
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

const registry = new ToolRegistry();
export const ECHO: RegisteredTool = registry.register({
  name: "echo",
  description: "echo",
  parameters: { type: "object" },
  effect: "read_only",
  handler: (a) => a,
});
export const WRITE: RegisteredTool = registry.register({
  name: "write_file",
  description: "write",
  parameters: { type: "object" },
  handler: () => null,
});

export function ctxFor(
  tool: RegisteredTool,
  args: Record<string, unknown>,
  opts: { id?: string | null; decision?: CallDecision; run?: RunInfo } = {},
): ToolCallContext {
  const ctx: ToolCallContext = {
    tool: tool.name,
    definition: tool,
    arguments: args,
    toolCallId: opts.id === undefined ? "c1" : opts.id,
    signal: new AbortController().signal,
    progress() {},
  };
  if (opts.decision) ctx.decision = opts.decision;
  if (opts.run) (ctx as { run?: RunInfo }).run = opts.run;
  return ctx;
}

export function ok(ctx: ToolCallContext, result: unknown = null): ToolCallOutcome {
  return { envelope: successEnvelope(ctx.toolCallId, ctx.tool, result, performance.now()), control: "continue" };
}

export function fail(ctx: ToolCallContext, code: ErrorCode): ToolCallOutcome {
  return { envelope: failureEnvelope(ctx.toolCallId, ctx.tool, code, "failed", {}, performance.now()), control: "continue" };
}

let seq = 0;
/** A well-formed record; fields overridable. */
export function record(over: Partial<HistoryRecord> = {}): HistoryRecord {
  seq++;
  return {
    v: 1,
    time: new Date().toISOString(),
    tool: "echo",
    call_id: `r${seq}`,
    effect: "read_only",
    decision: null,
    duration_ms: 1.25,
    success: true,
    code: null,
    args_sha256: "0".repeat(64),
    ...over,
  };
}
