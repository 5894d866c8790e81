/**
 * A stdio client transport for MCP: spawns the server (argv, no shell) and
 * exchanges newline-delimited JSON-RPC over its stdin and stdout.
 *
 * Compared with the SDK's own `StdioClientTransport` it is stricter and
 * easier to shut down:
 * - a line that is not a JSON-RPC message, or longer than `maxLineBytes`, is
 *   a protocol violation: `onerror` gets a {@link McpProtocolError} and the
 *   connection is closed (every byte from a server is untrusted);
 * - the child's stderr is kept as a bounded tail (for error messages) and
 *   never written to our stdout;
 * - the server runs in its own process group (POSIX): `close()` ends stdin,
 *   then sends SIGTERM, then SIGKILL to the group, and resolves once the
 *   server's main process has exited; when that process exits (on its own or
 *   not), what is left of its group is sent SIGKILL, so no process outlives
 *   it, even behind a wrapper such as `npx` or `sh -c`;
 * - the environment is a minimal inherited set (see {@link SAFE_ENV_VARS})
 *   plus the configured variables, never our whole environment.
 *
 * @module
 */
import { AgentcoreError } from "../core/errors.ts";
import { spawn, type ChildProcess } from "node:child_process";
import { statSync } from "node:fs";
import { deserializeMessage, serializeMessage, type JSONRPCMessage, type Transport } from "@modelcontextprotocol/client";

/** Variables inherited from our environment when present (POSIX and Windows basics). */
export const SAFE_ENV_VARS: readonly string[] = [
  "HOME",
  "LOGNAME",
  "PATH",
  "SHELL",
  "TERM",
  "USER",
  "LANG",
  "LC_ALL",
  "TMPDIR",
  "TZ",
  "SYSTEMROOT",
  "WINDIR",
  "APPDATA",
  "LOCALAPPDATA",
  "USERPROFILE",
  "TEMP",
  "TMP",
  "PATHEXT",
  "COMSPEC",
];

/** The environment a stdio server starts with: {@link SAFE_ENV_VARS} from ours, then `extra`. */
export function serverEnvironment(extra: Record<string, string> = {}): Record<string, string> {
  const ours = globalThis.process?.env ?? {};
  const env: Record<string, string> = {};
  for (const k of SAFE_ENV_VARS) {
    const v = ours[k];
    if (v !== undefined && !v.startsWith("()")) env[k] = v; // skip exported shell functions
  }
  return { ...env, ...extra };
}

/** The server broke the protocol (malformed or oversized message). */
export class McpProtocolError extends AgentcoreError {
  readonly code: string = "MCP_PROTOCOL_VIOLATION";
  override name = "McpProtocolError";
}

/** `send()` found the server gone (or the transport closed): nothing was written. */
export class McpNotConnectedError extends AgentcoreError {
  readonly code: string = "MCP_NOT_CONNECTED";
  override name = "McpNotConnectedError";
}

export interface StdioTransportOptions {
  command: string;
  args?: string[];
  env?: Record<string, string>;
  cwd?: string;
  /** Longest accepted line from the server. Default 64 MiB. */
  maxLineBytes?: number;
  /** How long `close()` waits after ending stdin, and again after SIGTERM. Default 1000 ms. */
  gracePeriodMs?: number;
}

/** The stderr tail kept: at most this many bytes' worth of text … */
const STDERR_TAIL = 4096;
/** … and this many lines. */
const STDERR_LINES = 20;

/** How a server process ended: its exit status, or the signal that ended it. */
export interface ServerExit {
  code: number | null;
  signal: string | null;
  /** True when it ended on its own, not because `close()` stopped it. */
  unprompted: boolean;
}

/** "status 3", "signal SIGKILL": how a process ended, in words. */
export function describeExit(exit: ServerExit): string {
  return exit.signal !== null ? `signal ${exit.signal}` : `status ${exit.code ?? "unknown"}`;
}

/**
 * Control characters (other than tab) escaped as `\\uXXXX`, so that what an
 * untrusted server writes cannot move a terminal's cursor, or forge lines, in
 * our messages.
 */
export function escapeControl(text: string): string {
  return text.replace(
    /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}
/** Servers get their own process group where that exists (not on Windows). */
const GROUPS = globalThis.process?.platform !== "win32";

/** See the module documentation. Single use: start once, close once. */
export class StdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  readonly #opts: StdioTransportOptions;
  #child: ChildProcess | undefined;
  #exited: Promise<void> = Promise.resolve();
  #chunks: Buffer[] = [];
  #buffered = 0;
  #stderr = "";
  #closed = false;
  #closeCalled = false;
  #stdinBroken = false;
  #exit: ServerExit | undefined;
  /** Resolves once the child's stdio streams have all closed (so its stderr has been read to the end). */
  #streamsClosed: Promise<void> = Promise.resolve();
  /** The server's process group id (its pid at start). */
  #pgid: number | undefined;

  constructor(opts: StdioTransportOptions) {
    this.#opts = opts;
  }

  /** The child's pid once started (also after it exited), else `undefined`. */
  pid: number | undefined;

  /** The last few KiB the server wrote to stderr (raw). */
  get stderrTail(): string {
    return this.#stderr;
  }

  /**
   * The last lines (at most `max`, 20 kept) the server wrote to stderr, each
   * with control characters escaped; blank lines are left out.
   */
  stderrLines(max = STDERR_LINES): string[] {
    const lines = this.#stderr.split(/\r?\n/).filter((l) => l.trim() !== "");
    return lines.slice(-Math.min(max, STDERR_LINES)).map(escapeControl);
  }

  /** How the server process ended, once it has (else `undefined`). */
  get exit(): ServerExit | undefined {
    return this.#exit;
  }

  start(): Promise<void> {
    if (this.#child !== undefined) return Promise.reject(new Error("StdioTransport already started"));
    const cwd = this.#opts.cwd;
    if (cwd !== undefined) {
      // spawn() reports a missing cwd as ENOENT naming the command, which
      // points at the wrong thing: say what is missing.
      let folder = false;
      try {
        folder = statSync(cwd).isDirectory();
      } catch {
        folder = false;
      }
      if (!folder) return Promise.reject(new Error(`the working directory (cwd) ${cwd} does not exist or is not a folder`));
    }
    return new Promise((resolveStart, rejectStart) => {
      let child: ChildProcess;
      try {
        child = spawn(this.#opts.command, this.#opts.args ?? [], {
          env: serverEnvironment(this.#opts.env),
          cwd: this.#opts.cwd,
          stdio: ["pipe", "pipe", "pipe"],
          shell: false,
          windowsHide: true,
          // Its own process group (POSIX), so that close() also reaches what
          // a wrapper (npx, sh) started; see #signal.
          detached: GROUPS,
        });
      } catch (e) {
        rejectStart(e);
        return;
      }
      this.#child = child;
      this.#exited = new Promise((r) =>
        child.once("exit", (code, signal) => {
          // Its stdin broken before we closed it: it had gone already (the exit event can come after our close()).
          this.#exit = { code, signal, unprompted: !this.#closeCalled || this.#stdinBroken };
          r();
        }),
      );
      this.#streamsClosed = new Promise((r) => child.once("close", () => r()));
      // The server is gone once its main process is: whatever it left behind
      // in its group (and holding our pipes open) goes too.
      child.once("exit", () => this.#signal(child, "SIGKILL"));
      let started = false;
      child.once("error", (e) => {
        if (!started) rejectStart(e);
        else this.onerror?.(e);
      });
      child.once("spawn", () => {
        started = true;
        this.pid = child.pid;
        this.#pgid = child.pid;
        resolveStart();
      });
      child.once("close", () => this.#finish());
      // EPIPE after the child died: reported through close
      child.stdin!.on("error", () => {
        if (!this.#closeCalled) this.#stdinBroken = true;
      });
      child.stdout!.on("data", (chunk: Buffer) => this.#onData(chunk));
      // A bounded tail: the last 4 KiB, of which the last 20 lines are quoted.
      child.stderr!.setEncoding("utf8");
      child.stderr!.on("data", (chunk: string) => {
        this.#stderr = (this.#stderr + chunk).slice(-STDERR_TAIL);
      });
    });
  }

  #onData(chunk: Buffer): void {
    if (this.#closed) return;
    const max = this.#opts.maxLineBytes ?? 64 << 20;
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(10, start);
      if (nl < 0) break;
      const part = chunk.subarray(start, nl);
      const line = this.#chunks.length === 0 ? part : Buffer.concat([...this.#chunks, part]);
      this.#chunks = [];
      this.#buffered = 0;
      start = nl + 1;
      if (line.length > max) {
        this.#violation(`a message longer than ${max} bytes`);
        return;
      }
      if (!this.#line(line)) return;
    }
    if (start < chunk.length) {
      this.#chunks.push(chunk.subarray(start));
      this.#buffered += chunk.length - start;
      if (this.#buffered > max) this.#violation(`a message longer than ${max} bytes`);
    }
  }

  /** Handle one line; false when the connection was closed because of it. */
  #line(bytes: Buffer): boolean {
    let text = bytes.toString("utf8");
    if (text.endsWith("\r")) text = text.slice(0, -1);
    if (text.trim() === "") return true;
    let msg: JSONRPCMessage;
    try {
      msg = deserializeMessage(text);
    } catch {
      const shown = text.length > 80 ? `${text.slice(0, 80)}…` : text;
      this.#violation(`a line that is not a JSON-RPC message: ${JSON.stringify(shown)}`);
      return false;
    }
    this.onmessage?.(msg);
    return true;
  }

  #violation(what: string): void {
    this.onerror?.(new McpProtocolError(`the server sent ${what}`));
    void this.close();
  }

  #finish(): void {
    if (this.#closed && this.#child === undefined) return;
    this.#closed = true;
    this.#child = undefined;
    this.onclose?.();
  }

  /** Signal the child's whole process group (POSIX), else the child alone. Never throws. */
  #signal(child: ChildProcess, sig: NodeJS.Signals): void {
    const pid = this.#pgid; // kept from the start: some runtimes clear child.pid on exit
    if (GROUPS && pid !== undefined) {
      try {
        process.kill(-pid, sig);
        return;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === "ESRCH") return; // the group is gone
      }
    }
    try {
      child.kill(sig);
    } catch {
      // already gone
    }
  }

  send(message: JSONRPCMessage): Promise<void> {
    const child = this.#child;
    if (child === undefined || this.#closed || child.stdin === null || child.stdin.destroyed) {
      return Promise.reject(new McpNotConnectedError("not connected: the server process is not running"));
    }
    return new Promise((res, rej) => {
      child.stdin!.write(serializeMessage(message), (err) => (err ? rej(err) : res()));
    });
  }

  /** End stdin, then SIGTERM, then SIGKILL; resolves once the child has exited. */
  async close(): Promise<void> {
    const child = this.#child;
    this.#closed = true;
    this.#closeCalled = true;
    if (child === undefined) return;
    const grace = this.#opts.gracePeriodMs ?? 1000;
    const exited = this.#exited;
    const wait = (ms: number) =>
      Promise.race([exited.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms).unref?.())]);
    try {
      child.stdin?.end();
    } catch {
      // already gone
    }
    if (child.exitCode === null && child.signalCode === null && !(await wait(grace))) {
      this.#signal(child, "SIGTERM");
      if (!(await wait(grace))) {
        this.#signal(child, "SIGKILL");
        await exited;
      }
    }
    await exited;
    this.#signal(child, "SIGKILL"); // anything left in its group
    // What it wrote to stderr just before it exited is still in the pipe: read it (briefly) before cutting the pipes.
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([this.#streamsClosed, new Promise<void>((r) => (timer = setTimeout(r, 250)))]);
    clearTimeout(timer);
    child.stdout?.destroy();
    child.stderr?.destroy();
    this.#finish();
  }
}
