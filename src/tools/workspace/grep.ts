/**
 * `grep`: search file contents under the root with a regular expression.
 *
 * Arguments: `{"pattern": string, "path"?: string (file or folder, default
 * "."), "glob"?: string (only paths matching it), "ignore_case"?: boolean,
 * "literal"?: boolean (pattern is plain text), "max_results"?: integer}`.
 * Result: `{"matches": [{"path", "line", "text"}], "files_searched",
 * "files_skipped", "truncated"}`; `line` is 1-based, `text` is the line cut
 * to 300 characters; `files_skipped` counts binary (a NUL byte or invalid
 * UTF-8), over-size and unreadable files.
 *
 * Patterns are JavaScript regular expressions (no flags but `i`), at most
 * 1000 characters. JavaScript regexes backtrack, and a pattern like
 * `(a+)+$` can take exponential time, which a synchronous loop could never
 * interrupt. So the matching runs in a Web Worker (Bun and Deno both have
 * them; the worker's code is inline, so it also works in the compiled
 * binary; under Node the same code runs in a `node:worker_threads` worker):
 * the main thread walks and reads files (the rooted rules: no
 * symlinks followed, `.git` skipped) and sends their text in batches; when
 * the call's time budget runs out or its signal fires, the worker is
 * terminated and the call fails with `TIMEOUT` (or the signal's reason).
 * A short pattern (at most 100 characters) without any quantifier and with
 * at most one group of alternatives (a plain word, `foo|bar`, or
 * `literal:true`) can't backtrack beyond its own length, so it is
 * matched on the calling thread, with the budget checked between batches,
 * and skips the worker's start-up cost.
 *
 * @module
 */
import * as fs from "node:fs";
import type { ToolContext, ToolDefinition } from "../definition.ts";
import { resolveRoot, splitRelativePath } from "../fs/rooted.ts";
import { markTrustedSchema } from "../schema.ts";
import { at, closeQuietly, fail, lstatAt, openParent, type DirHandle } from "./dirfd.ts";
import { compileGlob, worthEntering } from "./glob.ts";
import { checkTimeoutMs, deepFreeze } from "./util.ts";
import { walkTree } from "./walk.ts";

export const DEFAULT_GREP_MAX_RESULTS = 500;
export const DEFAULT_GREP_MAX_FILE_BYTES = 1024 * 1024;
export const DEFAULT_GREP_TIMEOUT_MS = 10_000;
export const GREP_MAX_PATTERN = 1000;
export const GREP_MAX_TEXT = 300;
const GREP_MAX_VISITED = 100_000;
const BATCH_BYTES = 4 * 1024 * 1024;

export interface GrepArgs {
  pattern: string;
  path?: string;
  glob?: string;
  ignore_case?: boolean;
  literal?: boolean;
  max_results?: number;
}

export interface GrepMatch {
  path: string;
  line: number;
  text: string;
}

export interface GrepResult {
  matches: GrepMatch[];
  files_searched: number;
  files_skipped: number;
  truncated: boolean;
}

export interface GrepToolOptions {
  root: string;
  maxResults?: number;
  maxFileBytes?: number;
  /** Time budget of one call (default 10 s). */
  timeoutMs?: number;
}

export const GREP_PARAMETERS = deepFreeze({
  $schema: "https://json-schema.org/draft/2020-12/schema",
  type: "object",
  properties: {
    pattern: {
      type: "string",
      minLength: 1,
      maxLength: GREP_MAX_PATTERN,
      description: "JavaScript regular expression (or plain text with literal:true).",
    },
    path: { type: "string", maxLength: 4096, description: "File or folder to search, relative to the root (default: the root)." },
    glob: { type: "string", minLength: 1, maxLength: 1024, description: "Only search files whose relative path matches this glob." },
    ignore_case: { type: "boolean" },
    literal: { type: "boolean", description: "Treat the pattern as plain text." },
    max_results: { type: "integer", minimum: 1, description: "Return at most this many matching lines." },
  },
  required: ["pattern"],
  additionalProperties: false,
} as const);
markTrustedSchema(GREP_PARAMETERS);

/**
 * Scan files line by line; at most `limit` matches. Self-contained (it is
 * also the worker's code, through `Function.prototype.toString`).
 */
function scanFiles(
  re: RegExp,
  files: { path: string; text: string }[],
  limit: number,
  maxText: number,
): { matches: GrepMatch[]; full: boolean } {
  const out: GrepMatch[] = [];
  let full = false;
  for (const f of files) {
    const lines = f.text.split("\n");
    for (let i = 0; i < lines.length; i++) {
      let line = lines[i]!;
      if (i === lines.length - 1 && line === "") break;
      if (line.endsWith("\r")) line = line.slice(0, -1);
      if (re.test(line)) {
        if (out.length >= limit) {
          full = true;
          break;
        }
        let text = line.length > maxText ? line.slice(0, maxText) : line;
        const last = text.charCodeAt(text.length - 1);
        if (text.length < line.length && last >= 0xd800 && last <= 0xdbff) text = text.slice(0, -1);
        out.push({ path: f.path, line: i + 1, text });
      }
    }
    if (full) break;
  }
  return { matches: out, full };
}

/** The worker: compiles the pattern once, then scans batches of files. */
const WORKER_SOURCE = `const scanFiles = ${scanFiles.toString()};
let re = null, limit = 0, maxText = 0;
self.onmessage = (e) => {
  const m = e.data;
  if (m.type === "init") { re = new RegExp(m.pattern, m.flags); limit = m.limit; maxText = m.maxText; return; }
  const r = scanFiles(re, m.files, limit, maxText);
  limit -= r.matches.length;
  self.postMessage(r);
};
`;

/**
 * Whether a pattern can be matched on the calling thread: without any
 * quantifier (`*`, `+`, `?`, `{`) and with at most one group of
 * alternatives, a JavaScript regex can't backtrack more than its own length
 * per position, so the cost is linear in the input. Several groups of
 * alternatives are not: `(a|a)(a|a)…b` tries 2^n combinations at each
 * position (V8, so Deno, takes seconds per line of a few thousand
 * characters), so such a pattern goes to the worker. Top-level `foo|bar`
 * and one group such as `^(foo|bar)\b` stay inline.
 */
export function isLinearPattern(source: string): boolean {
  return source.length <= LINEAR_MAX_PATTERN && !/[*+?{]/.test(source) && groupsWithAlternatives(source) <= 1;
}

/** How many groups of `source` hold a `|` of their own (escapes and character classes skipped). */
function groupsWithAlternatives(source: string): number {
  const open: boolean[] = [];
  let count = 0;
  for (let i = 0; i < source.length; i++) {
    const c = source[i];
    if (c === "\\") i++;
    else if (c === "[") {
      // skip the class, up to its first unescaped ']' (in JavaScript `[]` is an empty class)
      for (i++; i < source.length && source[i] !== "]"; i++) if (source[i] === "\\") i++;
    } else if (c === "(") open.push(false);
    else if (c === ")") {
      if (open.pop() === true) count++;
    } else if (c === "|" && open.length > 0) open[open.length - 1] = true;
  }
  return count + open.filter((x) => x).length;
}

/** Longest pattern matched inline (its length bounds the work per position). */
const LINEAR_MAX_PATTERN = 100;

/** Matching on the calling thread, for {@link isLinearPattern} patterns. */
class InlineMatcher {
  #limit: number;
  readonly #re: RegExp;
  readonly #deadline: number;
  readonly #timeoutMs: number;
  constructor(pattern: string, flags: string, limit: number, timeoutMs: number) {
    this.#re = new RegExp(pattern, flags);
    this.#limit = limit;
    this.#timeoutMs = timeoutMs;
    this.#deadline = performance.now() + timeoutMs;
  }
  scan(files: { path: string; text: string }[]): Promise<{ matches: GrepMatch[]; full: boolean }> {
    // The budget is checked between batches (each at most 4 MiB of text).
    if (performance.now() > this.#deadline) {
      return Promise.reject(
        Object.assign(new Error("grep ran out of its time budget"), { toolCode: "TIMEOUT", details: { timeout_ms: this.#timeoutMs } }),
      );
    }
    const r = scanFiles(this.#re, files, this.#limit, GREP_MAX_TEXT);
    this.#limit -= r.matches.length;
    return Promise.resolve(r);
  }
  close(): void {}
}

let workerUrl: string | undefined;

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
}

/** The few worker operations grep needs, over a Web Worker or a `node:worker_threads` one. */
interface MatchWorker {
  post(message: unknown): void;
  terminate(): void;
}

type NodeWorkerModule = {
  Worker: new (
    code: string,
    options: { eval: true },
  ) => {
    on(event: "message", f: (d: unknown) => void): void;
    on(event: "error", f: (e: Error) => void): void;
    postMessage(m: unknown): void;
    terminate(): unknown;
  };
};

/** Node has no global `Worker`: the same source runs as an eval'd worker thread with a `self` shim. */
const NODE_PRELUDE = `const { parentPort } = require("node:worker_threads");
const self = { set onmessage(f) { parentPort.on("message", (data) => f({ data })); }, postMessage: (m) => parentPort.postMessage(m) };
`;

let nodeWorkers: NodeWorkerModule | undefined;

/**
 * Deno's Web Worker `terminate()` does not stop a worker busy in a match, and
 * the stuck worker keeps the process from exiting (denoland/deno#35657):
 * under Deno a `node:worker_threads` worker is used instead, which does not
 * hold the process open once terminated.
 */
const IS_DENO = typeof (globalThis as { Deno?: unknown }).Deno === "object";

function useWebWorker(): boolean {
  return typeof Worker === "function" && !IS_DENO;
}

function startWorker(onMessage: (data: unknown) => void, onError: (message: string) => void): MatchWorker {
  if (useWebWorker()) {
    workerUrl ??= URL.createObjectURL(new Blob([WORKER_SOURCE], { type: "application/javascript" }));
    const w = new Worker(workerUrl, { type: "module" });
    w.onmessage = (e: MessageEvent) => onMessage(e.data);
    w.onerror = (e: Event) => {
      e.preventDefault?.();
      onError((e as ErrorEvent).message ?? "unknown error");
    };
    return { post: (m) => w.postMessage(m), terminate: () => w.terminate() };
  }
  if (nodeWorkers === undefined) throw new Error("grep needs Web Workers or node:worker_threads");
  const w = new nodeWorkers.Worker(NODE_PRELUDE + WORKER_SOURCE, { eval: true });
  w.on("message", onMessage);
  w.on("error", (e) => onError(e.message));
  return { post: (m) => w.postMessage(m), terminate: () => void w.terminate() };
}

/** Load `node:worker_threads` when there is no global `Worker` (Node), or under Deno. */
async function ensureWorkers(): Promise<void> {
  if (useWebWorker() || nodeWorkers !== undefined) return;
  nodeWorkers = (await import("node:worker_threads")) as unknown as NodeWorkerModule;
}

/** A running match worker with a deadline. */
class Matcher {
  readonly #worker: MatchWorker;
  #pending: { resolve: (v: { matches: GrepMatch[]; full: boolean }) => void; reject: (e: unknown) => void } | null = null;
  #failure: unknown = null;
  readonly #timer: ReturnType<typeof setTimeout>;
  readonly #onAbort: () => void;
  readonly #signal: AbortSignal;

  constructor(pattern: string, flags: string, limit: number, timeoutMs: number, signal: AbortSignal) {
    this.#signal = signal;
    this.#worker = startWorker(
      (data) => {
        const p = this.#pending;
        this.#pending = null;
        p?.resolve(data as { matches: GrepMatch[]; full: boolean });
      },
      (message) => this.#stop(new Error(`grep worker failed: ${message}`)),
    );
    this.#timer = setTimeout(() => {
      this.#stop(
        Object.assign(new Error("grep ran out of its time budget"), {
          toolCode: "TIMEOUT",
          details: { timeout_ms: timeoutMs },
        }),
      );
    }, timeoutMs);
    this.#onAbort = () => this.#stop(signal.reason);
    signal.addEventListener("abort", this.#onAbort, { once: true });
    this.#worker.post({ type: "init", pattern, flags, limit, maxText: GREP_MAX_TEXT });
  }

  #stop(err: unknown): void {
    if (this.#failure === null) this.#failure = err ?? new Error("stopped");
    this.close();
    const p = this.#pending;
    this.#pending = null;
    p?.reject(this.#failure);
  }

  scan(files: { path: string; text: string }[]): Promise<{ matches: GrepMatch[]; full: boolean }> {
    if (this.#failure !== null) return Promise.reject(this.#failure);
    return new Promise((resolve, reject) => {
      this.#pending = { resolve, reject };
      this.#worker.post({ type: "scan", files });
    });
  }

  close(): void {
    clearTimeout(this.#timer);
    this.#signal.removeEventListener("abort", this.#onAbort);
    this.#worker.terminate();
  }
}

const READ_FLAGS = fs.constants.O_RDONLY | (fs.constants.O_NOFOLLOW ?? 0) | (fs.constants.O_NONBLOCK ?? 0) | (fs.constants.O_NOCTTY ?? 0);
let strictUtf8: TextDecoder | undefined;

/** Read a regular file named in `dir` as text, or `null` when it must be skipped. */
function readText(dir: DirHandle, name: string, maxBytes: number): string | null {
  let fd: number;
  try {
    fd = fs.openSync(at(dir, name), READ_FLAGS);
  } catch {
    return null; // a symlink (O_NOFOLLOW), gone, or unreadable
  }
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile() || st.size > maxBytes) return null;
    const buf = Buffer.allocUnsafe(st.size + 1);
    let total = 0;
    for (;;) {
      const n = fs.readSync(fd, buf, total, buf.length - total, null);
      if (n === 0) break;
      total += n;
      if (total === buf.length) return null; // grew while read
    }
    const bytes = buf.subarray(0, total);
    if (bytes.subarray(0, 8192).includes(0)) return null;
    strictUtf8 ??= new TextDecoder("utf-8", { fatal: true });
    try {
      return strictUtf8.decode(bytes);
    } catch {
      return null;
    }
  } catch {
    return null;
  } finally {
    closeQuietly(fd);
  }
}

/** Create a `grep` tool. */
export function createGrepTool(options: GrepToolOptions): ToolDefinition<GrepArgs> {
  const realRoot = resolveRoot(options.root);
  const cap = options.maxResults ?? DEFAULT_GREP_MAX_RESULTS;
  const maxFileBytes = options.maxFileBytes ?? DEFAULT_GREP_MAX_FILE_BYTES;
  const timeoutMs = checkTimeoutMs(options.timeoutMs ?? DEFAULT_GREP_TIMEOUT_MS, "grep timeout_ms");
  return {
    name: "grep",
    description: `Search file contents under the root with a JavaScript regular expression; reports path, line number and line text (at most ${cap} matches). Skips binary files, files over ${maxFileBytes} bytes and .git; never follows symlinks.`,
    parameters: GREP_PARAMETERS as unknown as Record<string, unknown>,
    effect: "read_only",
    timeoutMs: timeoutMs + 5000,
    async handler(args: GrepArgs, ctx: ToolContext): Promise<GrepResult> {
      const flags = args.ignore_case === true ? "i" : "";
      const source = args.literal === true ? escapeRegExp(args.pattern) : args.pattern;
      try {
        new RegExp(source, flags);
      } catch (e) {
        const why = (e as Error).message;
        fail("INVALID_ARGUMENTS", `pattern is not a valid regular expression: ${why}`, {
          errors: [{ path: "/pattern", keyword: "regex", message: why }],
        });
      }
      const filter = args.glob === undefined ? null : compileGlob(args.glob, "glob");
      const limit = Math.min(args.max_results ?? cap, cap);
      const start = args.path ?? ".";
      const parts = splitRelativePath(start === "" ? "." : start);

      // Collect the files first (synchronous, bounded walk), then scan them in batches.
      const files: string[] = [];
      let truncated = false;
      let skipped = 0;
      let searched = 0;
      const result: GrepMatch[] = [];
      // Quantifier-free patterns (plain words, the literal mode) are linear: no worker needed.
      const linear = isLinearPattern(source);
      if (!linear) await ensureWorkers();
      const matcher = linear
        ? new InlineMatcher(source, flags, limit, timeoutMs)
        : new Matcher(source, flags, limit, timeoutMs, ctx.signal);
      try {
        let single: { dir: DirHandle; name: string } | null = null;
        if (parts.length > 0) {
          const dir = openParent(realRoot, parts, false);
          const st = lstatAt(dir, parts[parts.length - 1]!);
          if (st?.isFile()) single = { dir, name: parts[parts.length - 1]! };
          else closeQuietly(dir.fd);
        }
        let batch: { path: string; text: string }[] = [];
        let batchBytes = 0;
        let full = false;
        const flush = async () => {
          if (batch.length === 0 || full) return;
          const r = await matcher.scan(batch);
          result.push(...r.matches);
          full = r.full; // more matches than the limit were seen (exactly `limit` is not truncation)
          batch = [];
          batchBytes = 0;
        };
        const add = async (dir: DirHandle, name: string, rel: string) => {
          const text = readText(dir, name, maxFileBytes);
          if (text === null) {
            skipped++;
            return;
          }
          searched++;
          batch.push({ path: rel, text });
          batchBytes += text.length;
          if (batchBytes >= BATCH_BYTES) await flush();
        };
        if (single !== null) {
          try {
            await add(single.dir, single.name, parts.join("/"));
          } finally {
            closeQuietly(single.dir.fd);
          }
        } else {
          // The walk is synchronous: gather the paths first, then reach each
          // file again by a descriptor walk from the root, read and scan it.
          const walk = walkTree(realRoot, start, { maxEntries: GREP_MAX_VISITED, signal: ctx.signal }, (e) => {
            if (e.kind === "dir") return filter !== null && !worthEntering(filter, e.rel) ? "skip" : undefined;
            if (e.kind !== "file") return;
            if (filter !== null && !filter.matches(e.rel)) return;
            files.push(e.rel);
          });
          truncated = walk.truncated;
          for (const rel of files) {
            if (full) break;
            ctx.signal.throwIfAborted();
            const fparts = rel.split("/");
            let dir: DirHandle;
            try {
              dir = openParent(realRoot, fparts, false);
            } catch {
              skipped++; // its folder was removed or replaced meanwhile
              continue;
            }
            try {
              await add(dir, fparts[fparts.length - 1]!, rel);
            } finally {
              closeQuietly(dir.fd);
            }
          }
        }
        await flush();
        if (full) truncated = true;
      } catch (e) {
        const code = (e as { toolCode?: string } | null)?.toolCode;
        if (code === "TIMEOUT") fail("TIMEOUT", (e as Error).message, (e as { details: Record<string, unknown> }).details);
        throw e;
      } finally {
        matcher.close();
      }
      return { matches: result.slice(0, limit), files_searched: searched, files_skipped: skipped, truncated };
    },
  };
}
