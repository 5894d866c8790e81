/**
 * The per-call {@link ToolContext}, built to cost almost nothing on the
 * synchronous path: the `AbortController` behind `signal` is only created when
 * a handler (or the dispatcher) actually needs it. Aborting before anyone has
 * read `signal` is remembered, so a signal created later starts aborted.
 *
 * @module
 */
import type { ToolContext, ToolControl } from "../tools/definition.ts";
import type { Logger } from "../core/logger.ts";
import type { ApprovalHooks, RunInfo } from "./middleware/types.ts";

/**
 * Optional per-call observers a lower-level caller (the agent loop) passes to
 * `runCall` / `Runtime.dispatchCall`. Plain dispatch passes none.
 */
export interface CallHooks {
  /** Receives `ctx.progress(message, data)` reports while the call is open. */
  onProgress?(message: string, data: unknown): void;
  /** Receives the control of a handler result made with `toolOutcome()`, before the envelope is returned. */
  onControl?(control: ToolControl): void;
  /** Where the call comes from (the agent loop passes its agent id, run id and turn); middleware see it as `ctx.run`. */
  run?: RunInfo;
  /** The caller's part in the call's approval; middleware see it as `ctx.approval`. */
  approval?: ApprovalHooks;
}

export class CallContext implements ToolContext {
  readonly callId: string | null;
  readonly tool: string;
  readonly logger: Logger;
  private controller: AbortController | undefined = undefined;
  private pendingAbort = false;
  private pendingReason: unknown = undefined;
  private readonly hooks: CallHooks | undefined;
  private closed = false;

  constructor(callId: string | null, tool: string, logger: Logger, hooks?: CallHooks) {
    this.callId = callId;
    this.tool = tool;
    this.logger = logger;
    this.hooks = hooks;
  }

  /**
   * Forward a progress report to the caller's hooks; a no-op without hooks,
   * after the call has settled, or for an empty message. Never throws.
   */
  progress(message: string, data?: unknown): void {
    if (this.closed || this.hooks?.onProgress === undefined) return;
    if (typeof message !== "string" || message.length === 0) {
      this.logger.debug("progress report without a message ignored", { tool: this.tool });
      return;
    }
    try {
      this.hooks.onProgress(message, data);
    } catch (err) {
      this.logger.warn("progress observer failed", { tool: this.tool, error: err instanceof Error ? err.message : String(err) });
    }
  }

  /** Mark the call settled: later progress reports are dropped. */
  close(): void {
    this.closed = true;
  }

  get signal(): AbortSignal {
    let c = this.controller;
    if (c === undefined) {
      c = this.controller = new AbortController();
      if (this.pendingAbort) c.abort(this.pendingReason);
    }
    return c.signal;
  }

  /** Whether `signal` has been materialised (for tests and diagnostics). */
  get signalCreated(): boolean {
    return this.controller !== undefined;
  }

  /** Abort the call's signal (now, or as soon as it is created). */
  abort(reason: unknown): void {
    if (this.controller !== undefined) {
      this.controller.abort(reason);
    } else if (!this.pendingAbort) {
      this.pendingAbort = true;
      this.pendingReason = reason;
    }
  }
}
