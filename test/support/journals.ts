/**
 * Journals a test starts from, appended straight to a store: a run a crash
 * left open (a tool call asked for, never answered, no run_finished), with
 * or without an approval request that waits, and a run suspended awaiting an
 * approval (answered since, or not). The run of session `id` is `r-<id>`.
 */
import type { JournalStorage } from "../../src/session/journal.ts";
import type { SessionRecordDraft } from "../../src/session/types.ts";

/** The journal's writer: `agentcore-daemon` for the daemon's sessions, `agentcore-cli` for the CLI's. */
export type Writer = "agentcore-daemon" | "agentcore-cli";

const draft = (
  agent: Writer,
  session: string,
  type: SessionRecordDraft["type"],
  data: Record<string, unknown>,
  sequence: number,
): SessionRecordDraft => ({ session_id: session, agent_id: agent, branch_id: "main", sequence, type, data });

/** Arguments the built-in or test tools take. */
const ARGS: Record<string, string> = { sleep: '{"ms":1}', echo: '{"message":"hi"}' };

const callMessage = (call: string, tool: string) => ({
  role: "assistant",
  content: null,
  tool_calls: [{ id: call, type: "function", function: { name: tool, arguments: ARGS[tool] ?? "{}" } }],
});

const approvalData = (run: string, call: string, tool: string, suspended: boolean) => ({
  run_id: run,
  tool_call_id: call,
  tool,
  effect: "side_effecting",
  rule_id: "side-effecting",
  reason: "ask first",
  arguments: {},
  suspended,
});

/** A run that asked for call c1 of `tool` and was cut off; `approval`: its approval request waits too. */
export async function crashedRun(s: JournalStorage, agent: Writer, id: string, tool: string, approval = false): Promise<void> {
  const run = `r-${id}`;
  await s.append(draft(agent, id, "run_started", { run_id: run, task: "work" }, 1));
  await s.append(draft(agent, id, "message_appended", { run_id: run, message: callMessage("c1", tool) }, 3));
  if (approval) await s.append(draft(agent, id, "approval_requested", approvalData(run, "c1", tool, false), 4));
}

/** A run suspended awaiting the approval of call w1 of `tool`; `answered`: approved since. */
export async function suspendedRun(s: JournalStorage, agent: Writer, id: string, tool: string, answered: boolean): Promise<void> {
  const run = `r-${id}`;
  await s.append(draft(agent, id, "run_started", { run_id: run, task: "change it" }, 1));
  await s.append(draft(agent, id, "message_appended", { run_id: run, message: callMessage("w1", tool) }, 3));
  await s.append(draft(agent, id, "approval_requested", approvalData(run, "w1", tool, true), 4));
  const result = { status: "suspended", stop_reason: "awaiting_approval", turns: 1, output: null, error: null, usage: null };
  await s.append(draft(agent, id, "run_finished", { run_id: run, result }, 5));
  if (answered)
    await s.append(
      draft(agent, id, "approval_decided", { run_id: run, tool_call_id: "w1", approved: true, reason: null, decided_by: "t" }, 0),
    );
}
