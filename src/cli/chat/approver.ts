/**
 * The chat REPL's approver. The REPL owns the only reader of stdin, so an
 * approval cannot read the terminal itself: it shows its question and waits,
 * and the REPL routes the next typed line to {@link ReplApprover.answer}.
 *
 * Requests are asked one at a time, oldest first. Answers: `y`/`yes`
 * approve, `a`/`always` approve this tool for the rest of the run, `n`/`no`
 * or an empty line deny; anything else asks again (the REPL keeps `/abort`
 * and `/exit` for itself: they end the run, which denies). It fails closed: when
 * stdin is not a terminal, on abort of the call, on timeout (when one is
 * set) and after {@link ReplApprover.close}, the call is denied.
 *
 * @module
 */
import { redactArguments, type ToolApprovalDecision, type ToolApprovalRequest, type ToolApprover } from "../../runtime/middleware/index.ts";

/** Where the approver shows its question. */
export interface ApprovalView {
  /** Show a question (several lines); the REPL then shows `prompt` as its input prompt. */
  ask(question: string, prompt: string): void;
  /** A one-line note (an answer taken, an interruption). */
  note(text: string): void;
  /** The question is answered or dropped: the REPL restores its usual prompt. */
  done(): void;
}

interface Pending {
  request: ToolApprovalRequest;
  scope: string;
  signal: AbortSignal;
  resolve(d: ToolApprovalDecision): void;
  cleanup(): void;
}

export const APPROVAL_PROMPT = "allow? [y]es / [N]o / [a]lways for this tool in this run: ";

/** The REPL's approver; create it before the runtime (the policy middleware needs `approver`). */
export class ReplApprover {
  #view: ApprovalView | null = null;
  #interactive = false;
  #timeoutMs: number | undefined;
  #closed = false;
  readonly #queue: Pending[] = [];
  readonly #always = new Set<string>();

  /** The function to give the policy middleware. */
  readonly approver: ToolApprover = (request, signal) => this.#request(request, signal);

  /**
   * Connect the REPL. `interactive` false (stdin is not a terminal) makes
   * every request a denial. `timeoutMs` denies a question left unanswered
   * that long (default: wait).
   */
  attach(view: ApprovalView, options: { interactive: boolean; timeoutMs?: number }): void {
    if (options.timeoutMs !== undefined && !(Number.isSafeInteger(options.timeoutMs) && options.timeoutMs > 0)) {
      throw new RangeError("timeoutMs must be a positive integer");
    }
    this.#view = view;
    this.#interactive = options.interactive;
    this.#timeoutMs = options.timeoutMs;
  }

  /** Whether a question is waiting for the next typed line. */
  get waiting(): boolean {
    return this.#queue.length > 0;
  }

  /** The tool of the question on screen, if any. */
  get waitingFor(): string | null {
    return this.#queue[0]?.request.tool ?? null;
  }

  /** Answer the question on screen with a typed line. Returns false when no question was waiting. */
  answer(line: string): boolean {
    const head = this.#queue[0];
    if (head === undefined) return false;
    const a = line.trim().toLowerCase();
    if (a === "y" || a === "yes") this.#settle(head, { approved: true }, "approved");
    else if (a === "a" || a === "always") {
      this.#always.add(head.scope);
      this.#settle(
        head,
        { approved: true, reason: "approved for this tool in this run" },
        `approved; ${head.request.tool} will not ask again in this run`,
      );
    } else if (a === "" || a === "n" || a === "no") this.#settle(head, { approved: false, reason: "denied by the operator" }, "denied");
    else this.#view?.ask(`  please answer y, n or a (or /abort the run)`, APPROVAL_PROMPT);
    return true;
  }

  /** Deny every waiting question and every later request (the REPL is exiting). */
  close(): void {
    this.#closed = true;
    for (const p of [...this.#queue]) this.#settle(p, { approved: false, reason: "the chat is closing" }, "denied: the chat is closing");
  }

  #request(request: ToolApprovalRequest, signal: AbortSignal): Promise<ToolApprovalDecision> {
    const scope = `${request.run?.runId ?? ""}\u0000${request.tool}`;
    if (this.#always.has(scope)) return Promise.resolve({ approved: true, reason: "approved for this tool in this run" });
    if (this.#closed) return Promise.resolve({ approved: false, reason: "the chat is closing" });
    if (this.#view === null || !this.#interactive) {
      return Promise.resolve({
        approved: false,
        reason: "approval needs an interactive terminal (stdin is not a TTY); use a config policy or --approve-all",
      });
    }
    if (signal.aborted) return Promise.resolve({ approved: false, reason: "approval interrupted" });
    return new Promise<ToolApprovalDecision>((resolve) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const onAbort = () => this.#settle(pending, { approved: false, reason: "approval interrupted" }, "interrupted: denied");
      const pending: Pending = {
        request,
        scope,
        signal,
        resolve,
        cleanup: () => {
          if (timer !== undefined) clearTimeout(timer);
          signal.removeEventListener("abort", onAbort);
        },
      };
      signal.addEventListener("abort", onAbort, { once: true });
      if (this.#timeoutMs !== undefined) {
        const ms = this.#timeoutMs;
        timer = setTimeout(() => this.#settle(pending, { approved: false, reason: `no answer within ${ms} ms` }, "timed out: denied"), ms);
      }
      this.#queue.push(pending);
      if (this.#queue.length === 1) this.#show(pending);
    });
  }

  #show(p: Pending): void {
    let preview: string;
    try {
      preview = JSON.stringify(redactArguments(p.request.arguments));
    } catch {
      preview = "(arguments cannot be shown)";
    }
    const why = p.request.reason ? ` (${p.request.reason})` : "";
    this.#view?.ask(`? ${p.request.tool} [${p.request.effect}] needs approval${why}\n  arguments: ${preview}`, APPROVAL_PROMPT);
  }

  #settle(p: Pending, decision: ToolApprovalDecision, note: string): void {
    const i = this.#queue.indexOf(p);
    if (i < 0) return;
    this.#queue.splice(i, 1);
    p.cleanup();
    this.#view?.note(`  ${note}`);
    p.resolve(decision);
    const next = this.#queue[0];
    if (i === 0 && next !== undefined) this.#show(next);
    else if (next === undefined) this.#view?.done();
  }
}
