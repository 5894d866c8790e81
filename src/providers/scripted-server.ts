/**
 * A scripted OpenAI-compatible server, to test agents and adapters without a
 * network: real HTTP on 127.0.0.1 (port 0), speaking the wire format of
 * `POST /v1/chat/completions`, with server-sent events for streamed requests.
 * Each request takes the next scripted reply; every request is recorded.
 * Public as `agentcore/testing` (`startOpenAIServer`).
 *
 * @module
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";

/** A chunk object as sent in one `data:` line (a `chat.completion.chunk`). */
export type Chunk = Record<string, unknown>;

/** Write these exact bytes/strings to the socket, one write each, in order. */
export interface RawPiece {
  raw: string | Uint8Array;
}

export type Reply =
  /** SSE: each chunk as `data: {json}\n\n`, then `data: [DONE]\n\n` (unless `end` says otherwise). */
  | {
      kind: "stream";
      chunks: Array<Chunk | RawPiece>;
      /** What happens after the chunks: `done` (default) sends [DONE] and ends; `stall` keeps the connection open silently; `destroy` cuts the connection; `end` ends without [DONE]. */
      end?: "done" | "stall" | "destroy" | "end";
      /** Pause between writes, in ms (default 0: next macrotask). */
      gapMs?: number;
      headers?: Record<string, string>;
    }
  /** A plain JSON body (non-stream completion). */
  | { kind: "json"; body: unknown; status?: number; headers?: Record<string, string> }
  /** An error status with a JSON (or text) body and headers such as Retry-After. */
  | { kind: "error"; status: number; body?: unknown; headers?: Record<string, string> }
  /** Never answer. */
  | { kind: "hang" };

export type ScriptedReply = Reply & { delayMs?: number };

/** One message of a recorded chat-completions request, as the client sent it. */
export interface RecordedMessage {
  role: string;
  content?: unknown;
  tool_calls?: { id: string; type: string; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
  [key: string]: unknown;
}

/** A recorded request's JSON body: the chat-completions fields tests read, and whatever else was sent. */
export interface RecordedBody {
  model?: string;
  messages: RecordedMessage[];
  tools?: { type: string; function: { name: string; description?: string; parameters?: unknown; [key: string]: unknown } }[];
  stream?: boolean;
  stream_options?: unknown;
  [key: string]: unknown;
}

/** One request the server received. */
export interface RecordedHttpRequest {
  method: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
  /** The JSON body; a body that was not a JSON object is `{ messages: [] }` here and whole in `text`. */
  body: RecordedBody;
  /** The body as received. */
  text: string;
}

/** A running scripted server (see {@link startOpenAIServer}). */
export interface ScriptedOpenAIServer {
  /** Base URL to give the SDK, ending in `/v1`. */
  readonly baseURL: string;
  readonly requests: RecordedHttpRequest[];
  /** Queue more replies. */
  push(...replies: ScriptedReply[]): void;
  /** Replies not consumed yet. */
  readonly pending: number;
  /** Streamed responses whose client went away before the response ended. */
  readonly disconnects: number;
  close(): Promise<void>;
}

/** A `chat.completion.chunk` with one choice and the given delta. */
export function chunk(delta: Record<string, unknown>, finish_reason: string | null = null, extra: Record<string, unknown> = {}): Chunk {
  return {
    id: "chatcmpl-test",
    object: "chat.completion.chunk",
    created: 1_700_000_000,
    model: "test-model",
    choices: [{ index: 0, delta, logprobs: null, finish_reason }],
    ...extra,
  };
}

/** The final usage chunk (empty choices), as sent with include_usage. */
export function usageChunk(prompt: number, completion: number, details: Record<string, unknown> = {}): Chunk {
  return {
    id: "chatcmpl-test",
    object: "chat.completion.chunk",
    created: 1_700_000_000,
    model: "test-model",
    choices: [],
    usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion, ...details },
  };
}

/** One tool-call fragment chunk. */
export function toolChunk(index: number, fields: { id?: string; name?: string; args?: string }): Chunk {
  const frag: Record<string, unknown> = { index };
  if (fields.id !== undefined) {
    frag.id = fields.id;
    frag.type = "function";
  }
  const fn: Record<string, unknown> = {};
  if (fields.name !== undefined) fn.name = fields.name;
  if (fields.args !== undefined) fn.arguments = fields.args;
  frag.function = fn;
  return chunk({ tool_calls: [frag] });
}

/** A plain streamed text answer. */
export function textReply(text: string, usage?: [number, number]): ScriptedReply {
  const chunks: Chunk[] = [chunk({ role: "assistant", content: "" }), chunk({ content: text }), chunk({}, "stop")];
  if (usage) chunks.push(usageChunk(usage[0], usage[1]));
  return { kind: "stream", chunks };
}

/** An OpenAI-style error body. */
export function errorBody(message: string, type: string, code: string | null = null): unknown {
  return { error: { message, type, param: null, code } };
}

function isRaw(p: Chunk | RawPiece): p is RawPiece {
  return "raw" in p && Object.keys(p).length === 1;
}

const pause = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Start a scripted OpenAI-compatible server on 127.0.0.1 (a free port). Each
 * request takes the next reply of `replies` (more with `push`); a request with
 * none left is answered 500. Give `baseURL` to `OpenAIModelAdapter`; `close()`
 * when done.
 *
 * @example
 * ```ts
 * const server = await startOpenAIServer([textReply("hello")]);
 * const model = new OpenAIModelAdapter({ baseURL: server.baseURL, model: "test" });
 * ```
 */
export async function startOpenAIServer(replies: ScriptedReply[] = []): Promise<ScriptedOpenAIServer> {
  const queue = [...replies];
  const requests: RecordedHttpRequest[] = [];
  const sockets = new Set<Socket>();
  const open = new Set<ServerResponse>();
  let closed = false;
  let disconnects = 0;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const parts: Buffer[] = [];
    for await (const p of req) parts.push(p as Buffer);
    const text = Buffer.concat(parts).toString("utf8");
    let body: RecordedBody = { messages: [] };
    try {
      const parsed: unknown = JSON.parse(text);
      if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)) body = { messages: [], ...(parsed as object) };
    } catch {
      // not JSON: the text is kept whole in `text`
    }
    requests.push({ method: req.method ?? "", url: req.url ?? "", headers: { ...req.headers }, body, text });

    if (req.method !== "POST" || !(req.url ?? "").endsWith("/chat/completions")) {
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify(errorBody(`no route ${req.method} ${req.url}`, "invalid_request_error")));
      return;
    }
    const reply = queue.shift();
    if (!reply) {
      res.writeHead(500, { "content-type": "application/json" });
      res.end(JSON.stringify(errorBody("scripted server has no more replies", "server_error")));
      return;
    }
    if (reply.delayMs) await pause(reply.delayMs);
    if (closed) return;
    switch (reply.kind) {
      case "hang":
        open.add(res);
        return;
      case "json":
        res.writeHead(reply.status ?? 200, { "content-type": "application/json", ...reply.headers });
        res.end(JSON.stringify(reply.body));
        return;
      case "error": {
        const b = reply.body === undefined ? errorBody("error", "server_error") : reply.body;
        const isText = typeof b === "string";
        res.writeHead(reply.status, { "content-type": isText ? "text/plain" : "application/json", ...reply.headers });
        res.end(isText ? b : JSON.stringify(b));
        return;
      }
      case "stream": {
        open.add(res);
        res.on("close", () => {
          if (!res.writableEnded && !closed) disconnects++;
        });
        res.writeHead(200, {
          "content-type": "text/event-stream",
          "cache-control": "no-cache",
          connection: "keep-alive",
          ...reply.headers,
        });
        res.flushHeaders();
        for (const p of reply.chunks) {
          if (closed || res.destroyed) return;
          // Wait until the chunk is handed to the kernel: a `destroy` that follows
          // would otherwise drop what is still buffered (seen on a loaded machine).
          await new Promise<void>((resolve) => res.write(isRaw(p) ? p.raw : `data: ${JSON.stringify(p)}\n\n`, () => resolve()));
          await pause(reply.gapMs ?? 0);
        }
        const end = reply.end ?? "done";
        if (end === "stall") return;
        if (end === "destroy") {
          res.socket?.destroy();
          open.delete(res);
          return;
        }
        if (end === "done") res.write("data: [DONE]\n\n");
        res.end();
        open.delete(res);
        return;
      }
    }
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((e) => {
      if (!res.headersSent) res.writeHead(500);
      res.end(String(e));
    });
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;

  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    push: (...r) => queue.push(...r),
    get pending() {
      return queue.length;
    },
    get disconnects() {
      return disconnects;
    },
    close: async () => {
      closed = true;
      for (const r of open) r.destroy();
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The SSE bytes of some chunks (for splitting raw bytes at chosen offsets). */
export function sseBytes(chunks: Chunk[], done = true): Uint8Array {
  const text = chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join("") + (done ? "data: [DONE]\n\n" : "");
  return new TextEncoder().encode(text);
}

/** Split bytes at the given offsets into raw pieces. */
export function splitBytes(bytes: Uint8Array, offsets: number[]): RawPiece[] {
  const out: RawPiece[] = [];
  let at = 0;
  for (const o of [...offsets].sort((a, b) => a - b)) {
    out.push({ raw: bytes.subarray(at, o) });
    at = o;
  }
  out.push({ raw: bytes.subarray(at) });
  return out;
}
