/**
 * Writes a journal for the session-journal compatibility corpus with the
 * library as it is now, and the expected restored conversation beside it:
 *
 *   bun test/session/corpus/write.ts FORMAT [NAME]
 *
 * makes test/session/corpus/FORMAT/NAME.jsonl (default NAME: "tour") and
 * NAME.expected.json ({ branch: messages restored from that branch }). It
 * refuses to overwrite: journals in the corpus are never edited (see README.md).
 *
 * The session: a run with a tool call; a run whose first side-effecting call
 * is approved and the second denied; a run cut off at max_tokens; a run
 * steered before its second model request; a compaction; a fork "alt" with a
 * run of its own; a last run on main after the fork; a run that suspends on
 * two approvals (awaiting_approval), answered in the journal (one approved,
 * one denied) and resumed; a run with a task image whose tool returns an
 * image too (the journal holds references, the bytes go to NAME.blobs/).
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { createAgent } from "../../../src/agent/index.ts";
import type { Compactor, TokenEstimator } from "../../../src/context/index.ts";
import { CompactionPolicy } from "../../../src/context/index.ts";
import { ScriptedModel } from "../../../src/providers/scripted.ts";
import { policyFromConfig } from "../../../src/runtime/middleware/policy.ts";
import { createRuntime } from "../../../src/runtime/runtime.ts";
import {
  decideApproval,
  JsonlSessionStorage,
  loadSessionImages,
  restoreSession,
  resumeDecisions,
  SessionRecorder,
} from "../../../src/session/index.ts";
import type { ToolDefinition } from "../../../src/tools/definition.ts";

const [format, name = "tour"] = process.argv.slice(2);
if (format === undefined || !/^[a-z0-9][a-z0-9.-]*$/.test(format) || !/^[a-z0-9][a-z0-9-]*$/.test(name)) {
  console.error("usage: bun test/session/corpus/write.ts FORMAT [NAME]   (lower-case letters, digits, '.' and '-')");
  process.exit(2);
}
const out = path.join(import.meta.dir, format);
const journal = path.join(out, `${name}.jsonl`);
if (fs.existsSync(journal)) {
  console.error(`${journal} exists: journals in the corpus are never rewritten; pick another NAME or FORMAT`);
  process.exit(2);
}

const SESSION = "corpus";
const work = fs.mkdtempSync(path.join(process.env.TMPDIR ?? "/tmp", "agentcore-corpus-"));
const storage = new JsonlSessionStorage(work);

const append: ToolDefinition<{ text: string }> = {
  name: "append",
  description: "append text (the corpus writer only counts)",
  parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  effect: "side_effecting",
  handler: ({ text }) => ({ appended: text.length }),
};
let answers = [true, false];
const gate = policyFromConfig(
  { default: "require_approval", rules: [{ id: "read-only", action: "allow", effects: ["read_only"] }] },
  { approver: async () => (answers.shift() ?? false ? { approved: true } : { approved: false, reason: "denied by the corpus writer" }) },
);
const runtime = () => createRuntime({ tools: [append], middleware: [gate] });
const estimator: TokenEstimator = {
  estimateMessage: (m) => (typeof (m as { content?: unknown }).content === "string" ? (m as { content: string }).content.length : 1),
  estimateTools: () => 0,
};
const compactor: Compactor = { compact: async () => ({ content: "SUMMARY of the runs so far", source: "corpus" }) };
const compaction = () => ({ policy: new CompactionPolicy({ contextWindow: 100_000, reserveTokens: 0, keepRecentTokens: 10 }, true, estimator), compactor });
const call = (id: string, tool: string, args: unknown) => ({ id, name: tool, arguments: JSON.stringify(args) });

const main = createAgent({
  agentId: "corpus-agent",
  model: new ScriptedModel([
    { content: null, tool_calls: [call("c1", "echo", { message: "hi" })], usage: { input_tokens: 10, output_tokens: 3 } },
    { content: "echoed hi" },
    { content: null, tool_calls: [call("c2", "append", { text: "one" })] },
    { content: null, tool_calls: [call("c3", "append", { text: "two" })] },
    { content: "The answer was cut o", finish_reason: "length" },
    { content: null, tool_calls: [call("c4", "echo", { message: "slow" })], delay_ms: 300 },
    { content: "DONE, IN CAPITALS" },
    { content: "after the fork, on main" },
  ]),
  runtime: runtime(),
  compaction: compaction(),
  sinks: [new SessionRecorder(SESSION, storage)],
});
await main.run("echo hi");
await main.run("append one, then two");
await main.run("write a long answer");
const steered = main.run("echo slowly");
await Bun.sleep(100);
main.steer("use capitals");
await steered;
const compacted = await main.compact();
if (compacted.status !== "completed") throw new Error(`the compaction did not complete: ${compacted.status}`);
await main.waitForIdle();

const fork = await storage.fork(SESSION, { sourceBranch: "main", branchId: "alt" });
const alt = createAgent({ agentId: "corpus-agent", model: new ScriptedModel([{ content: "on the fork" }]), runtime: runtime(), sinks: [new SessionRecorder(SESSION, storage, fork.branch.branch_id)] });
restoreSession(alt, (await storage.checkout(SESSION, fork.branch.branch_id))!);
await alt.run("a task on the fork");
await alt.shutdown();
answers = [];
await main.run("one more on main");
await main.shutdown();

// A run that suspends on an approval (journaled request, the turn's read-only call settled), answered
// later through the journal (one approved, one denied), then resumed by another agent.
const suspending = createAgent({
  agentId: "corpus-agent",
  model: new ScriptedModel([
    { content: null, tool_calls: [call("c5", "append", { text: "three" }), call("c6", "append", { text: "four" }), call("c7", "echo", { message: "meanwhile" })] },
  ]),
  runtime: runtime(),
  suspendOnApproval: true,
  sinks: [new SessionRecorder(SESSION, storage)],
});
restoreSession(suspending, (await storage.checkout(SESSION))!);
const suspended = await suspending.run("append three and four");
await suspending.shutdown();
if (suspended.stop_reason !== "awaiting_approval") throw new Error(`the run did not suspend: ${suspended.stop_reason}`);
await decideApproval(storage, SESSION, "c5", { approved: true, reason: "fine", decidedBy: "corpus" });
await decideApproval(storage, SESSION, "c6", { approved: false, reason: "not four", decidedBy: "corpus" });
const resuming = createAgent({
  agentId: "corpus-agent",
  model: new ScriptedModel([{ content: "appended three; four was refused" }]),
  runtime: runtime(),
  sinks: [new SessionRecorder(SESSION, storage)],
});
const checkout = (await storage.checkout(SESSION))!;
restoreSession(resuming, checkout);
const resumed = await resuming.resumeRun(resumeDecisions(checkout.session));
await resuming.shutdown();
if (resumed.status !== "completed") throw new Error(`the resumed run did not complete: ${resumed.status}`);

// Images: a task image (a 1×1 PNG) and a tool whose result holds an image block (a GIF), as an MCP tool's does.
const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==", "base64");
const GIF = Buffer.from([...Buffer.from("GIF89a"), 1, 0, 1, 0, 0, 0, 0, 0x3b]);
const snap: ToolDefinition = {
  name: "snap",
  description: "a picture (the corpus writer's is a fixed GIF)",
  parameters: { type: "object" },
  effect: "read_only",
  handler: () => ({ content: [{ type: "text", text: "a picture" }, { type: "image", mime_type: "image/gif", data: GIF.toString("base64") }] }),
};
const imaging = createAgent({
  agentId: "corpus-agent",
  model: new ScriptedModel([{ content: null, tool_calls: [call("c8", "snap", {})] }, { content: "a dot, and a picture" }]),
  runtime: createRuntime({ tools: [append, snap], middleware: [gate] }),
  sinks: [new SessionRecorder(SESSION, storage)],
});
restoreSession(imaging, (await storage.checkout(SESSION))!);
const imaged = await imaging.run("what is in this image? take a picture too", { images: [new Uint8Array(PNG)] });
await imaging.shutdown();
if (imaged.status !== "completed") throw new Error(`the image run did not complete: ${imaged.status}`);

const expected: Record<string, unknown> = {};
for (const b of await storage.listBranches(SESSION)) {
  const agent = createAgent({ agentId: "corpus-agent", model: new ScriptedModel([]), runtime: createRuntime() });
  const branch = (await storage.checkout(SESSION, b.branch_id))!;
  await loadSessionImages(storage, branch.session);
  restoreSession(agent, branch);
  // Images as the journal names them (by reference): the bytes are the blobs, which the corpus test checks by hash.
  expected[b.branch_id] = agent.messages.map((m) =>
    "images" in m && Array.isArray(m.images) ? { ...m, images: m.images.map(({ data: _, ...ref }) => ref) } : m,
  );
  await agent.shutdown();
}
fs.mkdirSync(out, { recursive: true });
fs.copyFileSync(storage.fileFor(SESSION), journal);
if (fs.existsSync(storage.blobDir(SESSION))) fs.cpSync(storage.blobDir(SESSION), path.join(out, `${name}.blobs`), { recursive: true });
fs.writeFileSync(path.join(out, `${name}.expected.json`), JSON.stringify({ session_id: SESSION, branches: expected }, null, 2) + "\n");
fs.rmSync(work, { recursive: true, force: true });
console.log(`wrote ${path.relative(process.cwd(), journal)} and ${name}.expected.json (branches ${Object.keys(expected).join(", ")})`);
