/**
 * `agentcore/session`: durable sessions in full. Beyond the recorder and the
 * stores of the main entry: the journal records and their validation,
 * branches (fork, rollback, retry), checkout and projection, recovery of runs a
 * crash left unfinished, deletion, locks and the `.agentcore/` state folder.
 *
 * @module
 */
export { AgentcoreError, isAgentcoreError } from "../core/errors.ts";
export * from "../session/index.ts";
