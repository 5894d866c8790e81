/**
 * Approvers: who answers a policy's `require_approval`.
 *
 * - {@link ToolApprover}: the programmatic interface (the daemon will bridge
 *   it over HTTP). It gets a request with a deep-frozen copy of the arguments
 *   and the call's abort signal, and resolves to `{ approved, reason? }`.
 * - {@link createTtyApprover}: the CLI's interactive approver. It prints the
 *   tool, its effect and a redacted argument preview to stderr, asks
 *   `[y]es / [n]o / [a]lways for this tool in this run`, and reads one line
 *   from stdin. It denies when stdin is not a TTY (unless told otherwise, for
 *   tests), on end of input, on timeout (default 60 s) and on abort.
 *
 * @module
 */
import type { ToolApprovalDecision, ToolApprovalRequest } from "./types.ts";

// The request and the answer live with the middleware contract (types.ts), which carries them in ApprovalHooks.
export type { ToolApprovalDecision, ToolApprovalRequest } from "./types.ts";

/** The programmatic approver. Must settle (or be interrupted by `signal`). */
export type ToolApprover = (request: ToolApprovalRequest, signal: AbortSignal) => Promise<ToolApprovalDecision>;

/** Deep copy + freeze (JSON-like values). */
export function frozenCopy<T>(value: T): T {
  const copy = structuredClone(value);
  const freeze = (v: unknown): void => {
    if (typeof v === "object" && v !== null && !Object.isFrozen(v)) {
      Object.freeze(v);
      for (const x of Object.values(v)) freeze(x);
    }
  };
  freeze(copy);
  return copy;
}

/** Keys whose values are likely secrets. */
export const SECRET_KEY_PATTERN: RegExp = /token|key|secret|password/i;

/** Options for {@link redactArguments}. */
export interface RedactOptions {
  /** Longest string kept whole; longer ones are clipped. Default 80. */
  maxStringLength?: number;
  /** Deepest nesting shown. Default 8. */
  maxDepth?: number;
  /** Most array items / object members shown per level. Default 20. */
  maxItems?: number;
}

export const REDACTED = "[redacted]";

/**
 * A preview of `value` safe to print: every member whose key matches
 * {@link SECRET_KEY_PATTERN} (at any depth) becomes `"[redacted]"`, long
 * strings are clipped, deep or wide structures are cut. Pure: `value` is
 * not modified.
 */
export function redactArguments(value: unknown, options: RedactOptions = {}): unknown {
  const maxLen = options.maxStringLength ?? 80;
  const maxDepth = options.maxDepth ?? 8;
  const maxItems = options.maxItems ?? 20;
  const walk = (v: unknown, depth: number): unknown => {
    if (typeof v === "string") return v.length > maxLen ? `${v.slice(0, maxLen)}… (${v.length} chars)` : v;
    if (typeof v !== "object" || v === null)
      return typeof v === "bigint" || typeof v === "function" || typeof v === "symbol" ? String(v) : v;
    if (depth >= maxDepth) return Array.isArray(v) ? "[…]" : "{…}";
    if (Array.isArray(v)) {
      const out: unknown[] = v.slice(0, maxItems).map((x) => walk(x, depth + 1));
      if (v.length > maxItems) out.push(`… ${v.length - maxItems} more`);
      return out;
    }
    const out: Record<string, unknown> = {};
    const keys = Object.keys(v);
    for (const k of keys.slice(0, maxItems)) {
      out[k] = SECRET_KEY_PATTERN.test(k) ? REDACTED : walk((v as Record<string, unknown>)[k], depth + 1);
    }
    if (keys.length > maxItems) out["…"] = `${keys.length - maxItems} more`;
    return out;
  };
  return walk(value, 0);
}

/** A readable stream the TTY approver reads lines from (process.stdin by default). */
export interface ApproverInput {
  isTTY?: boolean;
  // deno-lint-ignore no-explicit-any
  on(event: string, listener: (...args: any[]) => void): unknown;
  // deno-lint-ignore no-explicit-any
  off(event: string, listener: (...args: any[]) => void): unknown;
  resume?(): unknown;
  pause?(): unknown;
}

/** Options for {@link createTtyApprover}. */
export interface TtyApproverOptions {
  /** Default process.stdin. */
  input?: ApproverInput;
  /** Where the prompt goes. Default process.stderr. */
  output?: { write(s: string): unknown };
  /** Deny after this many ms without an answer. Default 60000. */
  timeoutMs?: number;
  /** Ask even when `input.isTTY` is not true (piped answers, tests). Default false: deny. */
  allowNonTty?: boolean;
}

export const DEFAULT_APPROVAL_TIMEOUT_MS = 60_000;

/**
 * The CLI's interactive approver. `always` approves the same tool for the
 * rest of the run (keyed by run id; calls without run info share one scope).
 * Calls are asked one at a time.
 */
export function createTtyApprover(options: TtyApproverOptions = {}): ToolApprover {
  const proc = (globalThis as { process?: { stdin: unknown; stderr: unknown } }).process;
  const input = (options.input ?? proc?.stdin) as ApproverInput;
  const output = (options.output ?? proc?.stderr) as { write(s: string): unknown };
  const timeoutMs = options.timeoutMs ?? DEFAULT_APPROVAL_TIMEOUT_MS;
  if (!(typeof timeoutMs === "number" && timeoutMs > 0)) throw new RangeError("timeoutMs must be a positive number");
  const always = new Set<string>();
  let queue: Promise<unknown> = Promise.resolve();
  let buffered = "";
  let ended = false;

  const ask = (request: ToolApprovalRequest, signal: AbortSignal): Promise<ToolApprovalDecision> => {
    const scope = `${request.run?.runId ?? ""}\u0000${request.tool}`;
    if (always.has(scope)) return Promise.resolve({ approved: true, reason: "approved for this tool in this run" });
    if (input === undefined || (input.isTTY !== true && options.allowNonTty !== true)) {
      return Promise.resolve({ approved: false, reason: "approval needs an interactive terminal (stdin is not a TTY)" });
    }
    if (signal.aborted) return Promise.resolve({ approved: false, reason: "approval interrupted" });
    let preview: string;
    try {
      preview = JSON.stringify(redactArguments(request.arguments));
    } catch {
      preview = "(arguments cannot be shown)";
    }
    output.write(
      `\nagentcore: tool "${request.tool}" (${request.effect}) needs approval` +
        (request.reason ? `: ${request.reason}` : "") +
        `\n  arguments: ${preview}\n  allow? [y]es / [n]o / [a]lways for this tool in this run: `,
    );
    return new Promise<ToolApprovalDecision>((resolve) => {
      let done = false;
      const finish = (d: ToolApprovalDecision, note?: string) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        signal.removeEventListener("abort", onAbort);
        input.off("data", onData);
        input.off("end", onEnd);
        input.off("close", onEnd);
        input.pause?.();
        if (note !== undefined) output.write(`\n  ${note}\n`);
        resolve(d);
      };
      const answer = (line: string) => {
        const a = line.trim().toLowerCase();
        if (a === "y" || a === "yes") finish({ approved: true, decidedBy: "terminal" });
        else if (a === "a" || a === "always") {
          always.add(scope);
          finish({ approved: true, reason: "approved for this tool in this run", decidedBy: "terminal" });
        } else finish({ approved: false, reason: "denied by the operator", decidedBy: "terminal" });
      };
      const takeLine = (): boolean => {
        const nl = buffered.indexOf("\n");
        if (nl < 0) return false;
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        answer(line);
        return true;
      };
      const onData = (chunk: string | Uint8Array) => {
        buffered += typeof chunk === "string" ? chunk : new TextDecoder().decode(chunk);
        takeLine();
      };
      const onEnd = () => {
        ended = true;
        finish({ approved: false, reason: "no answer (end of input)" }, "no answer: denied");
      };
      const onAbort = () => finish({ approved: false, reason: "approval interrupted" }, "interrupted: denied");
      const timer = setTimeout(
        () => finish({ approved: false, reason: `no answer within ${timeoutMs} ms` }, "timed out: denied"),
        timeoutMs,
      );
      signal.addEventListener("abort", onAbort, { once: true });
      if (takeLine()) return;
      if (ended) return onEnd();
      input.on("data", onData);
      input.on("end", onEnd);
      input.on("close", onEnd);
      input.resume?.();
    });
  };

  return (request, signal) => {
    const next = queue.then(() => ask(request, signal));
    queue = next.catch(() => {});
    return next;
  };
}
