/**
 * The header limit: a request whose header fields are over `maxBytes` gets
 * `431 Request Header Fields Too Large` (an `INVALID_REQUEST` envelope with
 * `Connection: close`) before anything else looks at it, as a body over its
 * cap gets 413.
 *
 * Why here and not in the runtime: Bun's own header limit (16 KiB unless
 * raised) answers 431 and closes the connection at once, while a client with
 * a large header may still be writing it; the client then gets a reset (or
 * EPIPE) instead of the answer, sometimes. So {@link listen} raises the
 * runtime's limit to {@link RUNTIME_MAX_HEADER_BYTES}, the runtime reads the
 * whole head, and this check answers it: the connection closes with nothing
 * of the request left unread.
 *
 * The size counted is each field as sent, `name: value` and its line end;
 * the request line is not counted.
 *
 * @example
 * ```ts
 * Bun.serve({ fetch: headerLimit((req) => new Response("ok"), 16_384) });
 * ```
 *
 * @module
 */
import { errorResponse } from "../errors.ts";

/** The daemon's limit on a request's header fields: 16 KiB (what Bun allowed before, by default). */
export const DEFAULT_MAX_HEADER_BYTES = 16 * 1024;

/**
 * The runtime's own header limit while the daemon listens (Bun): 4 MiB. A
 * head up to this size is read whole and answered 431 by {@link headerLimit};
 * past it the runtime answers 431 itself and closes at once.
 */
export const RUNTIME_MAX_HEADER_BYTES = 4 * 1024 * 1024;

/** The bytes of `req`'s header fields as sent (`name: value\r\n` each). */
export function headerBytes(headers: Headers): number {
  let n = 0;
  headers.forEach((value, name) => {
    n += name.length + value.length + 4;
  });
  return n;
}

/** The 431 answer to a head of `bytes` over `maxBytes`. */
export function headersTooLarge(bytes: number, maxBytes: number): Response {
  return errorResponse(
    431,
    "INVALID_REQUEST",
    `the request's header fields are ${bytes} bytes, over the daemon's limit of ${maxBytes} bytes (a large Cookie or Authorization header?)`,
    { limit: "max_header_bytes", max_bytes: maxBytes, bytes },
    { connection: "close" },
  );
}

/** `fetch` behind the header limit (see the module doc). */
export function headerLimit(
  fetch: (req: Request) => Response | Promise<Response>,
  maxBytes: number = DEFAULT_MAX_HEADER_BYTES,
): (req: Request) => Response | Promise<Response> {
  return (req) => {
    const bytes = headerBytes(req.headers);
    return bytes > maxBytes ? headersTooLarge(bytes, maxBytes) : fetch(req);
  };
}
