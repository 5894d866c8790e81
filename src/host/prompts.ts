/**
 * The default prompts of agentcore's front ends. One summary prompt serves
 * every compaction the CLI and the daemon run (chat's `/compact`, `agent
 * --context-window`, and `POST /v1/runs/{id}/compact`), so the same session
 * is summarised the same way whichever front end compacts it.
 *
 * @module
 */
import type { CompactionRequest } from "../context/index.ts";
import type { ChatMessage } from "../providers/types.ts";

/** The messages a compaction sends: the earlier summary and the turns to fold in, as plain lines. */
export function summaryPrompt(request: CompactionRequest): ChatMessage[] {
  const lines: string[] = [];
  if (request.previous_summary !== null) lines.push(`Earlier summary:\n${request.previous_summary.content}`, "");
  for (const m of request.preparation.messages_to_summarize) {
    if (m.role === "assistant") {
      if (m.content) lines.push(`assistant: ${m.content}`);
      for (const c of m.tool_calls ?? []) lines.push(`assistant called ${c.function.name}(${c.function.arguments})`);
    } else if (m.role === "tool") lines.push(`tool result: ${m.content}`);
    else lines.push(`${m.role}: ${m.content}`);
  }
  return [
    {
      role: "system",
      content:
        "Summarise this conversation for your own later use: the user's goals, decisions, files and facts found, and open steps. Be brief and concrete.",
    },
    { role: "user", content: lines.join("\n") },
  ];
}
