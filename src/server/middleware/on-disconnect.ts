/**
 * What a client's leaving does to its work, chosen by the client:
 * `X-Agentcore-On-Disconnect: abort` (the default: a run is aborted, a call
 * cancelled, when the connection goes) or `continue` (the work goes on to
 * its end, and its outcome is recorded as usual: the session's journal, the
 * execution history). Any other value is 400 `INVALID_REQUEST` naming the
 * header.
 *
 * Why a client would send `continue`: the daemon learns that a client left
 * from the request's `AbortSignal`, and Bun (the release binary) closes a
 * connection as soon as the client half-closes it (a FIN after the request,
 * as `nc -N` sends). Such a client cannot get the answer to a request that
 * is still being worked on, whatever the daemon does; with `continue` its
 * run or call is at least not cut short. `continue` hands the routes a
 * request whose signal never fires, which is all that the header changes.
 *
 * @example
 * ```ts
 * Bun.serve({ fetch: onDisconnect(daemon.fetch) });
 * ```
 *
 * @module
 */
import { errorResponse } from "../errors.ts";

/** The request header that chooses what a client's leaving does. */
export const ON_DISCONNECT_HEADER = "x-agentcore-on-disconnect";

/** A signal that never fires: the request of a client that asked to `continue`. */
const NEVER = new AbortController().signal;

/** `fetch` with the client's choice of {@link ON_DISCONNECT_HEADER} applied (see the module doc). */
export function onDisconnect(fetch: (req: Request) => Response | Promise<Response>): (req: Request) => Response | Promise<Response> {
  return (req) => {
    const choice = req.headers.get(ON_DISCONNECT_HEADER);
    if (choice === null) return fetch(req);
    const value = choice.trim().toLowerCase();
    if (value === "abort") return fetch(req);
    if (value === "continue") return fetch(new Request(req, { signal: NEVER }));
    return errorResponse(
      400,
      "INVALID_REQUEST",
      `${ON_DISCONNECT_HEADER} must be "abort" (the default: a client that leaves ends its run or call) or "continue" (the work goes on to its end), not ${JSON.stringify(choice.slice(0, 100))}`,
      { header: ON_DISCONNECT_HEADER },
    );
  };
}
