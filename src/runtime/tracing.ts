/**
 * Trace context for outgoing requests, through `@opentelemetry/api` only.
 *
 * agentcore's spans (`src/agent/tracing.ts`) and the requests it sends meet
 * here: a model request or an MCP call made while a span is active carries
 * that span's context in its headers (`traceparent`, and whatever else the
 * registered propagator writes), so the server's own spans join the trace.
 *
 * Without an SDK (no propagator or context manager registered) the API is a
 * no-op: {@link traceHeaders} returns an empty object and
 * {@link tracingFetch} adds nothing.
 *
 * @module
 */
import { context, propagation } from "@opentelemetry/api";

/** The instrumentation scope of agentcore's spans (the tracer's name). */
export const TRACER_NAME = "agentcore";

/**
 * The headers the registered propagator writes for the active context
 * (`traceparent`, `tracestate`, …); empty when no span is active or no SDK
 * is registered.
 */
export function traceHeaders(): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier;
}

/**
 * A `fetch` that adds the active trace context's headers to each request
 * (headers the caller set win). The context is read when the request is
 * made, so a long-lived client sends each request with the span active at
 * that moment.
 */
export function tracingFetch(base: typeof fetch = fetch): (input: string | URL | Request, init?: RequestInit) => Promise<Response> {
  return function tracedFetch(input, init) {
    const extra = traceHeaders();
    const keys = Object.keys(extra);
    if (keys.length === 0) return base(input, init);
    const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
    for (const k of keys) if (!headers.has(k)) headers.set(k, extra[k]!);
    return base(input, { ...init, headers });
  };
}
