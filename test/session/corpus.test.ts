/**
 * The session-journal compatibility corpus (test/session/corpus/, see its
 * README): every journal ever written by a released format is loaded by this
 * version, and each of its branches restores to the conversation in the
 * expected JSON beside it.
 */
import { describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { createAgent } from "../../src/agent/index.ts";
import { ScriptedModel } from "../../src/providers/scripted.ts";
import { createRuntime } from "../../src/runtime/runtime.ts";
import { JsonlSessionStorage, loadSessionImages, restoreSession } from "../../src/session/index.ts";
import { tmpPerTest } from "../support/tmp.ts";

const CORPUS = path.join(import.meta.dir, "corpus");
const tmp = tmpPerTest("agentcore-corpus-");

interface Expected {
  session_id: string;
  branches: Record<string, unknown[]>;
}

const formats = fs
  .readdirSync(CORPUS, { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .map((d) => d.name)
  .sort();

test("the corpus has journals of more than one format, each with its expected JSON", () => {
  expect(formats.length).toBeGreaterThanOrEqual(2);
  for (const f of formats) {
    const journals = fs.readdirSync(path.join(CORPUS, f)).filter((n) => n.endsWith(".jsonl"));
    expect([f, journals.length > 0]).toEqual([f, true]);
    for (const j of journals) expect([j, fs.existsSync(path.join(CORPUS, f, j.replace(/\.jsonl$/, ".expected.json")))]).toEqual([j, true]);
  }
});

test("the corpus covers what a restore must read: tool calls, an approval and a denial, a cut-off run, steering, a compaction, a fork, a suspended run answered in the journal", () => {
  const text = formats
    .flatMap((f) =>
      fs
        .readdirSync(path.join(CORPUS, f))
        .filter((n) => n.endsWith(".jsonl"))
        .map((n) => fs.readFileSync(path.join(CORPUS, f, n), "utf8")),
    )
    .join("\n");
  const records = text
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as { type: string; data: { result?: { stop_reason?: string } } });
  const types = new Set(records.map((r) => r.type));
  for (const t of [
    "run_started",
    "run_continued",
    "message_appended",
    "messages_appended",
    "run_finished",
    "steering_applied",
    "compaction_applied",
    "branch_created",
    "approval_requested",
    "approval_decided",
  ])
    expect([t, types.has(t)]).toEqual([t, true]);
  const stops = new Set(records.map((r) => r.data.result?.stop_reason).filter((x) => x !== undefined));
  for (const s of ["text_response", "max_tokens", "tool_rejected", "awaiting_approval"]) expect([s, stops.has(s)]).toEqual([s, true]);
  expect(text).toContain('"tool_calls"');
  // Images by reference: a task's (run_started) and a tool result's (messages_appended).
  const imaged = records.filter((r) => JSON.stringify(r.data).includes('"sha256"')).map((r) => r.type);
  expect(imaged).toContain("run_started");
  expect(imaged).toContain("messages_appended");
});

for (const format of formats) {
  describe(`corpus ${format}`, () => {
    for (const file of fs
      .readdirSync(path.join(CORPUS, format))
      .filter((n) => n.endsWith(".jsonl"))
      .sort()) {
      test(`${file}: loads, and every branch restores to the expected messages`, async () => {
        const expected = JSON.parse(
          fs.readFileSync(path.join(CORPUS, format, file.replace(/\.jsonl$/, ".expected.json")), "utf8"),
        ) as Expected;
        const storage = new JsonlSessionStorage(tmp());
        fs.copyFileSync(path.join(CORPUS, format, file), storage.fileFor(expected.session_id));
        // A journal with images has its blobs beside it (NAME.blobs/<sha256>).
        const blobs = path.join(CORPUS, format, file.replace(/\.jsonl$/, ".blobs"));
        if (fs.existsSync(blobs)) fs.cpSync(blobs, storage.blobDir(expected.session_id), { recursive: true });
        expect(await storage.listSessions()).toEqual([expected.session_id]);
        expect((await storage.listBranches(expected.session_id)).map((b) => b.branch_id).sort()).toEqual(
          Object.keys(expected.branches).sort(),
        );
        for (const [branch, messages] of Object.entries(expected.branches)) {
          const checkout = await storage.checkout(expected.session_id, branch);
          expect(checkout).not.toBeNull();
          const agent = createAgent({
            agentId: checkout!.session.agent_id ?? "corpus-agent",
            model: new ScriptedModel([]),
            runtime: createRuntime(),
          });
          await loadSessionImages(storage, checkout!.session);
          restoreSession(agent, checkout!);
          // Images are expected by reference; their bytes must be back, and hash to their sha256.
          const got = agent.messages.map((m) => {
            if (!("images" in m) || !Array.isArray(m.images)) return m;
            for (const a of m.images)
              expect([
                a.sha256,
                createHash("sha256")
                  .update(Buffer.from(a.data ?? "", "base64"))
                  .digest("hex"),
              ]).toEqual([a.sha256, a.sha256]);
            return { ...m, images: m.images.map(({ data: _, ...ref }) => ref) };
          });
          expect([branch, got]).toEqual([branch, messages as never]);
          await agent.shutdown();
        }
      });
    }
  });
}
