/**
 * The per-call {@link ToolContext}, built to cost almost nothing on the
 * synchronous path: the `AbortController` behind `signal` is only created when
 * a handler (or the dispatcher) actually needs it. Aborting before anyone has
 * read `signal` is remembered, so a signal created later starts aborted.
 *
 * @module
 */
import type { ToolContext } from "../tools/definition.ts";
import type { Logger } from "./logger.ts";

export class CallContext implements ToolContext {
  readonly callId: string | null;
  readonly tool: string;
  readonly logger: Logger;
  private controller: AbortController | undefined = undefined;
  private pendingAbort = false;
  private pendingReason: unknown = undefined;

  constructor(callId: string | null, tool: string, logger: Logger) {
    this.callId = callId;
    this.tool = tool;
    this.logger = logger;
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
