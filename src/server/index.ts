/**
 * The local API daemon (`agentcore serve`) as a library: build the Hono app
 * with {@link createApp} and serve its `fetch` yourself, or let
 * {@link startDaemon} listen on Bun or Deno and stop it gracefully.
 *
 * @example
 * ```ts
 * import { startDaemon, generateToken } from "./src/mod.ts";
 * const token = generateToken();
 * const d = await startDaemon({ app: { token }, listen: { port: 0 } });
 * const r = await fetch(`${d.url}/v1/calls`, {
 *   method: "POST",
 *   headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
 *   body: '{"id":"c1","tool":"echo","arguments":{"hi":1}}',
 * });
 * console.log(await r.text());
 * await d.stop();
 * ```
 *
 * @module
 */
export { createApp, callStatus } from "./app.ts";
export type { AppOptions, Daemon } from "./app.ts";
export { startDaemon, SHUTDOWN_MODES } from "./serve.ts";
export type { RunningDaemon, ShutdownMode, StartOptions } from "./serve.ts";
export { listen, ListenError } from "./listen.ts";
export type { Listening, ListenOptions } from "./listen.ts";
export { ApprovalQueue } from "./approvals.ts";
export type { ApprovalNotice, ApprovalOutcome, ApprovalQueueOptions, PendingApproval } from "./approvals.ts";
export type { RunRequest, RunView } from "./runs.ts";
export {
  bearerChecker,
  defaultStateDir,
  generateToken,
  loadOrCreateToken,
  prepareDaemonToken,
  prepareToken,
  removeTokenFileIfHolds,
  tokenFileName,
  TOKEN_ENV,
  TokenError,
  type PendingToken,
} from "./token.ts";
export type { CommittedDaemonToken, DaemonToken, PendingDaemonToken, TokenListener } from "./token.ts";
export { hostOriginGuard, isLoopbackName } from "./guard.ts";
export type { GuardOptions } from "./guard.ts";
export { openApiDocument } from "./openapi.ts";
export { DEFAULT_MAX_BODY_BYTES } from "./body.ts";
