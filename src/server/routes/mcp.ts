/**
 * `/mcp`: the registered tools over MCP Streamable HTTP (stateless: one
 * fresh SDK server per request, all on this runtime, so validation, policy
 * and approvals apply as for `/v1/calls`). The daemon's guards run first.
 * Its calls are tracked like those of `/v1/calls`: shutdown aborts them (or,
 * in finish mode, waits for them within the grace period) and waits until
 * they have settled, so the client gets its CANCELLED result and the
 * history record is written before the daemon exits.
 *
 * The MCP SDK (and its schema library) is loaded on the first `/mcp`
 * request, not with the daemon: an idle daemon that nobody speaks MCP to
 * does not carry it.
 *
 * @module
 */
import type { Runtime } from "../../runtime/runtime.ts";
import type { Envelope } from "../../core/envelope.ts";
import { validateStrict } from "../../core/index.ts";
import { HARD_MAX_DEPTH } from "../../core/errors.ts";
import { isJsonType } from "../body.ts";
import { HttpError, jsonResponse } from "../errors.ts";
import type { BodyReader } from "../middleware/body-limit.ts";
import { subApp, type AppDeps } from "./deps.ts";

/** A JSON-RPC error answer (what the MCP SDK sends for the refusals it makes itself). */
function rpcError(status: number, code: number, message: string, data?: Record<string, unknown>): Response {
  return jsonResponse({ jsonrpc: "2.0", error: data === undefined ? { code, message } : { code, message, data }, id: null }, status);
}

/** The MCP sub-app and its handler's `close` (at shutdown). */
export function mcpRoutes(deps: AppDeps): { app: ReturnType<typeof subApp>; close(): Promise<void> } {
  const { runtime, deadlines, maxBody } = deps;
  const mcpRuntime = Object.create(runtime) as Runtime;
  Object.defineProperty(mcpRuntime, "dispatch", {
    value(input: string | Uint8Array, signal?: AbortSignal): Envelope | Promise<Envelope> {
      const ac = new AbortController();
      const relay = () => ac.abort(signal?.reason);
      if (signal?.aborted) relay();
      else signal?.addEventListener("abort", relay, { once: true });
      const out = runtime.dispatch(input, ac.signal);
      if (!(out instanceof Promise)) {
        signal?.removeEventListener("abort", relay);
        return out;
      }
      deps.track(ac, out);
      void out.then(
        () => signal?.removeEventListener("abort", relay),
        () => signal?.removeEventListener("abort", relay),
      );
      return out;
    },
  });
  type Handler = { fetch(req: Request): Promise<Response>; close(): Promise<void> };
  let mcp: Promise<Handler> | null = null;
  const handler = (): Promise<Handler> =>
    (mcp ??= Promise.all([import("@modelcontextprotocol/server"), import("../../mcp/server.ts")]).then(([sdk, server]) =>
      sdk.createMcpHandler(() => server.createMcpServer(mcpRuntime), {
        maxRequestBodySize: maxBody,
        onerror: (e) => runtime.logger.debug("mcp request refused", { error: e.message }),
      }),
    ));

  /**
   * An /mcp body, read under the cap and the deadline and validated strictly
   * (duplicate keys, encoding, `__proto__`; nesting up to the hard cap, so
   * the runtime's own depth limit still decides about the arguments), or the
   * JSON-RPC refusal to send.
   */
  const readMcpBody = async (body: BodyReader): Promise<Uint8Array | Response> => {
    let bytes: Uint8Array;
    try {
      bytes = await body.bytes();
    } catch (e) {
      if (!(e instanceof HttpError)) throw e;
      return rpcError(e.status, e.status === 413 ? -32000 : -32600, e.status === 413 ? `Payload Too Large: ${e.message}` : e.message, {
        code: e.code,
        ...e.details,
      });
    }
    const bad = validateStrict(bytes, { maxBytes: maxBody, maxDepth: HARD_MAX_DEPTH });
    if (bad === null) return bytes;
    return rpcError(400, -32700, `Parse error: ${bad.message} at line ${bad.line}, column ${bad.column}`, {
      code: bad.code,
      offset: bad.offset,
      line: bad.line,
      column: bad.column,
    });
  };

  // The request deadline applies here too: past it the request's signal
  // fires, the SDK tears the exchange down, and the call in flight is
  // cancelled (a pending approval is withdrawn). The deadline lasts until
  // the answer (JSON or an SSE stream) has been sent.
  const app = subApp().all("/", async (c) => {
    const raw = c.req.raw;
    const ac = new AbortController();
    const settle = deadlines.watch(() => ac.abort(new DOMException("request timed out", "TimeoutError")));
    raw.signal?.addEventListener("abort", () => ac.abort(raw.signal.reason), { once: true });
    let res: Response;
    try {
      // A JSON body is read here and checked by the strict core first: the
      // SDK's JSON.parse would take a duplicate key last-wins (so
      // {"name":"a","name":"b"} called b), and accept bytes that are not UTF-8.
      let forward: Request = raw;
      if (raw.method === "POST" && isJsonType(raw.headers.get("content-type"))) {
        const body = await readMcpBody(c.var.body);
        if (body instanceof Response) {
          settle();
          return body;
        }
        forward = new Request(raw.url, { method: "POST", headers: raw.headers, body: body as Uint8Array<ArrayBuffer> });
      }
      res = await (await handler()).fetch(new Request(forward, { signal: ac.signal }));
    } catch (e) {
      settle();
      throw e;
    }
    if (res.body === null) {
      settle();
      return res;
    }
    const body = res.body.pipeThrough(new TransformStream<Uint8Array, Uint8Array>({ flush: settle }));
    return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  });
  // Nothing to close when no /mcp request ever came.
  return { app, close: async () => (mcp === null ? undefined : (await mcp).close()) };
}
