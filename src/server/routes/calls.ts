/**
 * `POST /v1/calls` (one call, the hot path) and `POST /v1/calls/batch`
 * (NDJSON, one call per line, answered as the client reads).
 *
 * @module
 */
import { serializeEnvelope } from "../../runtime/envelope_io.ts";
import type { Envelope } from "../../core/envelope.ts";
import { JSON_ERROR_CODES } from "../../core/errors.ts";
import { LineFramer, isBlank, type Line } from "../../core/lines.ts";
import { drainMsFor, isNdjsonType, readBody } from "../body.ts";
import { HttpError, JSON_HEADERS } from "../errors.ts";
import { subApp, type AppDeps } from "./deps.ts";

/** Codes that mean the call itself was malformed: every strict-core code, and INVALID_CALL. */
const CALL_INPUT_CODES: ReadonlySet<string> = new Set([...JSON_ERROR_CODES, "INVALID_CALL"]);

/** The JSON headers as one `Headers` object: a Response copies it several times faster than a record. */
const CALL_HEADERS = new Headers(JSON_HEADERS);
/** The two answers' inits, made once (a call's answer is 200 or 400). */
const INIT_200: ResponseInit = { status: 200, headers: CALL_HEADERS };
const INIT_400: ResponseInit = { status: 400, headers: CALL_HEADERS };
/** The Content-Type of a call: JSON, parameters allowed. */
const CALL_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;

/** A call's answer: the envelope, one line. */
function answer(env: Envelope): Response {
  return new Response(serializeEnvelope(env) + "\n", callStatus(env) === 200 ? INIT_200 : INIT_400);
}

/** HTTP status of a dispatched call's envelope: 400 when the call itself was malformed, else 200. */
export function callStatus(env: Envelope): number {
  return env.success || env.error === null ? 200 : CALL_INPUT_CODES.has(env.error.code) ? 400 : 200;
}

/** The refusal of a call whose body is not JSON. */
const notJson = (): HttpError =>
  new HttpError(415, "INVALID_REQUEST", "the body must be one JSON tool call (Content-Type: application/json)", {
    header: "content-type",
  });

/**
 * The handler of `POST /v1/calls`, also reached without the router (see
 * `createApp`). The body is read under the request deadline; a synchronous
 * tool then answers at once (one promise for the whole request: the body's
 * read and the deadline settle it); an asynchronous one races the deadline
 * too.
 */
export function callHandler(deps: AppDeps): (req: Request) => Promise<Response> {
  const { runtime, deadlines, maxBody } = deps;
  const drainMs = drainMsFor(deadlines.timeoutMs);
  const controllers: AbortController[] = [];
  const reusable = runtime.middlewareChain.length === 1;
  /** The call of a request whose body has been read. */
  const call = (req: Request, bytes: Uint8Array): Response | Promise<Response> => {
    const ac = controllers.pop() ?? new AbortController();
    const out = runtime.dispatch(bytes, ac.signal);
    if (!(out instanceof Promise)) {
      // A synchronous call only read `signal.aborted`: with no middleware
      // (which could have listened), the controller is as new and is reused.
      if (reusable && controllers.length < 256) controllers.push(ac);
      return answer(out);
    }
    deps.track(ac, out);
    // A client that goes away cancels its call (runtimes that report it on the request's signal).
    const gone = () => ac.abort(new DOMException("the client disconnected", "AbortError"));
    req.signal?.addEventListener("abort", gone, { once: true });
    const unlisten = () => req.signal?.removeEventListener("abort", gone);
    return deadlines.guard(out, ac).then(
      (env) => {
        unlisten();
        return answer(env);
      },
      (e: unknown) => {
        unlisten();
        throw e;
      },
    );
  };
  return (req) => {
    const type = req.headers.get("content-type");
    if (type === null || !CALL_TYPE.test(type)) return Promise.reject(notJson());
    const body = readBody(req, maxBody, drainMs);
    return deadlines.settle<Response>(body, (bytes) => call(req, bytes));
  };
}

/** The calls sub-app; `handle` is {@link callHandler}'s (shared with the direct path). */
export function callRoutes(deps: AppDeps, handle: (req: Request) => Promise<Response>) {
  const { runtime, maxBody } = deps;
  const app = subApp();
  app.post("/", (c) => handle(c.req.raw));

  // The body is read under the request deadline; the calls then run one by
  // one as the client reads the answers (each under its own tool timeout).
  // A client that goes away cancels the call in flight and the rest.
  app.post("/batch", async (c) => {
    const type = c.req.header("content-type") ?? null;
    if (!isNdjsonType(type))
      throw new HttpError(415, "INVALID_REQUEST", "the body must be NDJSON, one call per line (Content-Type: application/x-ndjson)", {
        header: "content-type",
      });
    const bytes = await c.var.body.bytes();
    const ac = new AbortController();
    const signal = ac.signal;
    const maxLine = runtime.limits.maxBytes ?? maxBody;
    const lines: { number: number; bytes: Uint8Array | null; length: number }[] = [];
    const framer = new LineFramer(maxLine);
    const collect = (l: Line) =>
      lines.push(
        l.overlong ? { number: l.number, bytes: null, length: l.bytes } : { number: l.number, bytes: l.bytes, length: l.bytes.length },
      );
    framer.push(bytes, collect);
    framer.end(collect);
    const enc = new TextEncoder();
    let i = 0;
    const stream = new ReadableStream<Uint8Array>({
      async pull(ctrl) {
        for (;;) {
          const l = lines[i++];
          if (l === undefined || signal.aborted) return ctrl.close();
          if (l.bytes !== null && isBlank(l.bytes)) continue;
          let env: Envelope;
          if (l.bytes === null) {
            env = {
              id: null,
              success: false,
              tool: null,
              result: null,
              error: { code: "JSON_SIZE", message: `line exceeds ${maxLine} bytes`, details: { bytes: l.length } },
              duration_ms: 0,
            };
          } else {
            const out = runtime.dispatch(l.bytes, signal);
            if (out instanceof Promise) deps.track(ac, out);
            env = await out;
          }
          if (!env.success && env.error !== null) env.error.details.input_line = l.number;
          ctrl.enqueue(enc.encode(serializeEnvelope(env) + "\n"));
          return;
        }
      },
      cancel() {
        ac.abort(new DOMException("the client disconnected", "AbortError"));
      },
    });
    return new Response(stream, {
      headers: { "content-type": "application/x-ndjson; charset=utf-8", "cache-control": "no-store", "x-content-type-options": "nosniff" },
    });
  });
  return app;
}
