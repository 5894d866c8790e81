/**
 * `agentcore/server`: the local API daemon of `agentcore serve`, as a library.
 * `createApp` is its Hono app (a Web-standard `fetch` handler), `startDaemon`
 * serves it on loopback or a Unix socket with a bearer token (Bun or Deno:
 * `Bun.serve` / `Deno.serve`; Node has neither), `ApprovalQueue` holds tool
 * approvals for HTTP clients, and the token and Host/Origin helpers secure it.
 * Loads Hono.
 *
 * @module
 */
export { AgentcoreError, isAgentcoreError } from "../core/errors.ts";
export * from "../server/index.ts";
