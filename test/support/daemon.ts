/**
 * Helpers for the daemon tests: an in-process daemon on a real loopback
 * socket, raw HTTP/1.1 over node:net (to send exact Host headers), and an
 * SSE reader.
 */
import * as net from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startDaemon, type RunningDaemon, type StartOptions } from "../../src/server/serve.ts";
import type { AppOptions } from "../../src/server/app.ts";
import type { AnyToolDefinition, ToolDefinition } from "../../src/tools/definition.ts";
import { generateToken } from "../../src/server/token.ts";

export interface TestDaemon {
  running: RunningDaemon;
  url: string;
  port: number;
  token: string;
  dir: string;
  auth: Record<string, string>;
  /** fetch with the token (unless headers say otherwise). */
  req(path: string, init?: RequestInit & { json?: unknown }): Promise<Response>;
  stop(): Promise<void>;
}

/** A tool that waits `ms` (abortable) and reports progress first: for mid-run aborts and timeouts. */
export const sleepTool: AnyToolDefinition = {
  name: "sleep",
  description: "wait ms milliseconds",
  effect: "read_only",
  parameters: { type: "object", properties: { ms: { type: "integer", minimum: 0 } }, required: ["ms"], additionalProperties: false },
  timeoutMs: 600_000,
  handler: async (args: { ms: number }, ctx) => {
    ctx.progress("sleeping");
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(resolve, args.ms);
      ctx.signal.addEventListener(
        "abort",
        () => {
          clearTimeout(t);
          reject(ctx.signal.reason ?? new Error("aborted"));
        },
        { once: true },
      );
    });
    return { slept: args.ms };
  },
} satisfies ToolDefinition<{ ms: number }> as unknown as AnyToolDefinition;

export async function startTestDaemon(app: Partial<Omit<AppOptions, "port">> = {}, extra: Partial<StartOptions> = {}): Promise<TestDaemon> {
  const dir = mkdtempSync(join(tmpdir(), "agentcore-serve-"));
  const token = app.token ?? generateToken();
  const running = await startDaemon({
    app: {
      token,
      sessionsDir: join(dir, "sessions"),
      heartbeatMs: 50,
      ...app,
      runtimeOptions: { root: dir, tools: [sleepTool], ...app.runtimeOptions },
    },
    listen: { hostname: "127.0.0.1", port: 0 },
    ...extra,
  });
  const auth = { authorization: `Bearer ${token}` };
  const url = running.url;
  return {
    running,
    url,
    port: running.listening.port!,
    token,
    dir,
    auth,
    req(path, init = {}) {
      const headers: Record<string, string> = { ...auth, ...(init.headers as Record<string, string> | undefined) };
      let body = init.body;
      if (init.json !== undefined) {
        body = JSON.stringify(init.json);
        headers["content-type"] ??= "application/json";
      }
      return fetch(url + path, { ...init, headers, body });
    },
    async stop() {
      await running.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A raw HTTP/1.1 exchange: full control over the request head. Returns status, headers and body. */
export function rawRequest(
  port: number,
  head: string,
  body: Uint8Array | string = "",
  host = "127.0.0.1",
): Promise<{ status: number; headers: Record<string, string>; body: string }> {
  return new Promise((resolve, reject) => {
    const sock = net.connect({ host, port });
    const chunks: Buffer[] = [];
    sock.on("data", (d: Buffer) => chunks.push(d));
    sock.on("error", reject);
    sock.on("close", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      const at = text.indexOf("\r\n\r\n");
      if (at < 0) return reject(new Error(`no HTTP response: ${JSON.stringify(text.slice(0, 200))}`));
      const lines = text.slice(0, at).split("\r\n");
      const status = Number(lines[0]!.split(" ")[1]);
      const headers: Record<string, string> = {};
      for (const l of lines.slice(1)) {
        const i = l.indexOf(":");
        headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim();
      }
      let rest = text.slice(at + 4);
      if (headers["transfer-encoding"] === "chunked") {
        let out = "";
        for (;;) {
          const nl = rest.indexOf("\r\n");
          const size = parseInt(rest.slice(0, nl), 16);
          if (!(size > 0)) break;
          out += rest.slice(nl + 2, nl + 2 + size);
          rest = rest.slice(nl + 2 + size + 2);
        }
        rest = out;
      }
      resolve({ status, headers, body: rest });
    });
    sock.write(head.endsWith("\r\n\r\n") ? head : head + "\r\n\r\n");
    if (typeof body === "string" ? body.length > 0 : body.byteLength > 0) sock.write(body);
  });
}

/** One parsed SSE message. */
export interface SseMessage {
  event: string;
  data: any;
  id?: string;
}

/**
 * Read SSE messages from a response until `until` returns true for one (or
 * the stream ends). Also counts heartbeat comments.
 */
export class SseReader {
  readonly messages: SseMessage[] = [];
  heartbeats = 0;
  #buf = "";
  #reader: ReadableStreamDefaultReader<Uint8Array>;
  #dec = new TextDecoder();
  ended = false;

  constructor(res: Response) {
    this.#reader = res.body!.getReader();
  }

  /** Read until a message satisfies `pred` (returned), or the stream ends (null). */
  async until(pred: (m: SseMessage) => boolean): Promise<SseMessage | null> {
    for (;;) {
      const at = this.#buf.indexOf("\n\n");
      if (at >= 0) {
        const block = this.#buf.slice(0, at);
        this.#buf = this.#buf.slice(at + 2);
        const m: Partial<SseMessage> = {};
        let data = "";
        for (const line of block.split("\n")) {
          if (line.startsWith(":")) {
            if (line.includes("heartbeat")) this.heartbeats++;
            continue;
          }
          const i = line.indexOf(":");
          const k = line.slice(0, i);
          const v = line.slice(i + 1).replace(/^ /, "");
          if (k === "event") m.event = v;
          else if (k === "data") data += v;
          else if (k === "id") m.id = v;
        }
        if (m.event !== undefined) {
          const msg = { event: m.event, data: JSON.parse(data), id: m.id } as SseMessage;
          this.messages.push(msg);
          if (pred(msg)) return msg;
        }
        continue;
      }
      const { done, value } = await this.#reader.read();
      if (done) {
        this.ended = true;
        return null;
      }
      this.#buf += this.#dec.decode(value, { stream: true });
    }
  }

  /** Read to the end; returns every message. */
  async all(): Promise<SseMessage[]> {
    await this.until(() => false);
    return this.messages;
  }

  async cancel(): Promise<void> {
    await this.#reader.cancel().catch(() => {});
  }
}

/** Poll `fn` until it returns a non-undefined value (no timing assertions: the test's own timeout bounds it). */
export async function eventually<T>(fn: () => T | undefined | Promise<T | undefined>, everyMs = 10): Promise<T> {
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/**
 * A child process's stderr collected as it arrives: `text()` is what came so
 * far; `ready(re)` waits until it matches (throwing if the child exits
 * first); `exited` resolves to the exit code once all of stderr is read.
 */
export function collectStderr(proc: { stderr: unknown; exitCode: number | null; exited: Promise<number> }): {
  text(): string;
  ready(re: RegExp): Promise<string>;
  exited: Promise<number>;
} {
  let text = "";
  const reader = (proc.stderr as ReadableStream<Uint8Array>).getReader();
  const dec = new TextDecoder();
  const pump = (async () => {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      text += dec.decode(value, { stream: true });
    }
  })();
  return {
    text: () => text,
    async ready(re: RegExp): Promise<string> {
      while (!re.test(text)) {
        if (proc.exitCode !== null) throw new Error(`serve exited ${proc.exitCode}: ${text}`);
        await new Promise((r) => setTimeout(r, 20));
      }
      return text;
    },
    exited: proc.exited.then(async (c) => (await pump, c)),
  };
}
