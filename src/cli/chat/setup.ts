/**
 * The chat's state, built before the REPL starts: the session branch taken
 * and checked out (so a bad journal or branch is reported before anything
 * runs), the skills and the model, and the agent built through the host
 * layer (src/host/agent.ts) with the same run spec as `agentcore agent`.
 *
 * @module
 */
import type { ModelAdapter } from "../../providers/types.ts";
import type { Runtime } from "../../runtime/index.ts";
import type { JournalStorage } from "../../session/journal.ts";
import { SessionError, sessionMessages, type SessionCheckout } from "../../session/types.ts";
import { buildCliAgent, makeModel, runSpecOf, setupSkills, type AgentFlags } from "../agent.ts";
import {
  AgentSetupError,
  AgentUsageError,
  claimSessionBranch,
  missingBranchMessage,
  openSessionStore,
  reportRepair,
} from "../agent-session.ts";
import type { ReplApprover } from "./approver.ts";
import { CHAT_COMMANDS } from "./commands.ts";
import { ChatState, type ChatCommand, type ChatIO } from "./state.ts";

/** Flags of the `chat` command (the agent's, without --events and --continue). */
export interface ChatFlags extends Omit<AgentFlags, "events" | "continue"> {
  /** The config's `policy.approval_timeout_ms`: deny a question left unanswered this long (default: wait). */
  approvalTimeoutMs?: number;
}

const CHAT_AGENT_ID = "agentcore-cli";

/** A new session id: `chat-` + UTC date and time + 4 random hex digits. */
export function newChatSessionId(now: Date = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, "").replace("T", "-").slice(0, 15);
  const r = new Uint8Array(2);
  crypto.getRandomValues(r);
  return `chat-${stamp}-${[...r].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

async function checkoutBranch(storage: JournalStorage, sessionId: string, branch: string): Promise<SessionCheckout | null> {
  let checkout: SessionCheckout | null;
  try {
    await storage.repair(sessionId); // a torn last line (the first one too) is cut off and reported
    checkout = await storage.checkout(sessionId, branch);
  } catch (e) {
    if (e instanceof SessionError) throw new AgentSetupError(e.message);
    throw e;
  }
  if (checkout === null && branch !== "main") throw new AgentSetupError(await missingBranchMessage(storage, sessionId, branch));
  return checkout;
}

/**
 * Take the session branch and build the chat's state and agent. The state
 * holds the branch's claim: release it (`state.claim.release()`) when the chat
 * ends; a setup error releases it here. Setup problems throw AgentSetupError.
 */
export async function openChat(
  runtime: Runtime,
  flags: ChatFlags,
  gate: ReplApprover,
  io: ChatIO,
  options: { model?: ModelAdapter; commands?: readonly ChatCommand[] } = {},
): Promise<ChatState> {
  if (flags.session !== undefined && flags.session.trim() === "") throw new AgentUsageError("--session must not be empty");
  const sessionId = flags.session ?? newChatSessionId();
  const branch = flags.branch ?? "main";
  // The store (--sessions-dir, else the settings' store), closed when the chat ends (state.closeStore).
  const opened = await openSessionStore(runtime, flags, reportRepair("agentcore chat"));
  const storage = opened.sessions;
  // The chat holds its session branch from start to end (another agent or chat on it is refused up front).
  let claim;
  try {
    claim = await claimSessionBranch(storage, sessionId, branch, "agentcore chat");
  } catch (e) {
    await opened.close();
    throw e;
  }
  try {
    const checkout = await checkoutBranch(storage, sessionId, branch);
    // Skills: the same rule as agent (--skills, else the config's skills_dir, else .agentcore/skills).
    const skills = await setupSkills(runtime, flags);
    const model = options.model ?? (await makeModel({ ...flags, task: "" }));
    const state = new ChatState({
      sessionId,
      branch,
      storage,
      claim,
      closeStore: () => opened.close(),
      gate,
      io,
      commands: options.commands ?? CHAT_COMMANDS,
      showThinking: flags.showThinking === true,
    });
    // The same run spec as agent's. /compact summarises everything but the last
    // turn; with --context-window the history is also compacted on its own, as
    // agent's is (the same rule and code); without it nothing compacts unless asked.
    const spec = { ...runSpecOf(flags), session: { id: sessionId, branch } };
    if (spec.compaction === undefined)
      spec.compaction = { contextWindow: 128_000, reserveTokens: 16_000, keepRecentTokens: 1, auto: false };
    const built = await buildCliAgent(
      spec,
      runtime,
      {
        model,
        skills,
        storage,
        checkout,
        recordSink: state.recordSink,
        sinks: [state.events.sink],
        recordFirst: false,
        agentId: CHAT_AGENT_ID,
        source: "chat",
        onPlanChange: (plan) => state.events.planChanged(plan),
      },
      storage,
    );
    state.agent = built.agent;
    state.planner = built.planner;
    state.resumedMessages = checkout !== null ? sessionMessages(checkout.session).length : null;
    const timeout = flags.approvalTimeoutMs !== undefined ? { timeoutMs: flags.approvalTimeoutMs } : {};
    gate.attach(state.approvalView, { interactive: state.interactive, ...timeout });
    return state;
  } catch (e) {
    claim.release();
    await opened.close();
    throw e;
  }
}
