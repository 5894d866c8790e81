/**
 * Images in tasks and tool results (issue 16 §6), at the wire: the real
 * `openai` SDK (OpenAIModelAdapter) against the scripted OpenAI-compatible
 * server, whose recorded request bodies show what reached the model. And
 * in sessions: journaled by reference with a SHA-256, the bytes in a blob
 * (JSONL: `<journal>.blobs/<sha256>`; memory), reattached on restore, a
 * tampered or missing blob refused with the session and the hash named.
 */
import { afterAll, beforeAll, beforeEach, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { createAgent } from "../../src/agent/index.ts";
import { type Compactor, CompactionPolicy, type TokenEstimator } from "../../src/context/index.ts";
import { heuristicEstimator, IMAGE_TOKEN_ESTIMATE } from "../../src/context/estimate.ts";
import { OpenAIModelAdapter } from "../../src/providers/openai.ts";
import { ImageInputError, imageContentPart, imageFromBytes, imageRef, sniffImageType } from "../../src/providers/images.ts";
import { SessionValidationError } from "../../src/session/types.ts";
import { JsonlSessionStorage } from "../../src/session/jsonl.ts";
import { MemorySessionStorage, type JournalStorage } from "../../src/session/journal.ts";
import { SessionRecorder } from "../../src/session/recorder.ts";
import { deleteSession } from "../../src/session/manage.ts";
import { restoreSession } from "../../src/session/restore.ts";
import { loadSessionImages, SessionBlobError } from "../../src/session/blobs.ts";
import type { ToolDefinition } from "../../src/tools/definition.ts";
import { chunk, startOpenAIServer, textReply, toolChunk, type ScriptedOpenAIServer } from "../support/openai-server.ts";

/** A real 1×1 PNG. */
const PNG_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
const PNG = new Uint8Array(Buffer.from(PNG_B64, "base64"));
const PNG_SHA = createHash("sha256").update(PNG).digest("hex");
/** A GIF header and a few bytes (the type is taken from the magic bytes). */
const GIF = new Uint8Array([...Buffer.from("GIF89a"), 1, 0, 1, 0, 0, 0, 0, 0x3b]);
const GIF_SHA = createHash("sha256").update(GIF).digest("hex");

let server: ScriptedOpenAIServer;
let dir: string;
beforeAll(async () => {
  server = await startOpenAIServer();
});
afterAll(async () => {
  await server.close();
});
beforeEach(() => {
  server.requests.length = 0;
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentcore-images-"));
});

const model = () => new OpenAIModelAdapter({ baseURL: server.baseURL, model: "vision-test", timeoutMs: 10_000 });

type WireMessage = { role: string; content: unknown; tool_call_id?: string };
const messagesOf = (i: number) => (server.requests[i]!.body as { messages: WireMessage[] }).messages;

function toolCallReply(calls: { id: string; name: string; args: string }[]) {
  return {
    kind: "stream" as const,
    chunks: [chunk({ role: "assistant", content: null }), ...calls.map((c, i) => toolChunk(i, c)), chunk({}, "tool_calls")],
  };
}

/** A tool answering like an MCP tool with an image block. */
const screenshot: ToolDefinition = {
  name: "screenshot",
  description: "takes a screenshot",
  parameters: { type: "object" },
  handler: () => ({
    content: [
      { type: "text", text: "here it is" },
      { type: "image", mime_type: "image/png", data: PNG_B64 },
    ],
  }),
};

test("a task's images reach the model as image_url content parts after the text", async () => {
  server.push(textReply("a red square"));
  const agent = createAgent({ model: model() });
  const r = await agent.run("what is in these?", { images: [PNG, { data: GIF }, `data:image/png;base64,${PNG_B64}`] });
  expect(r.status).toBe("completed");
  const user = messagesOf(0).at(-1)!;
  expect(user.role).toBe("user");
  expect(user.content).toEqual([
    { type: "text", text: "what is in these?" },
    { type: "image_url", image_url: { url: `data:image/png;base64,${PNG_B64}` } },
    { type: "image_url", image_url: { url: `data:image/gif;base64,${Buffer.from(GIF).toString("base64")}` } },
    { type: "image_url", image_url: { url: `data:image/png;base64,${PNG_B64}` } },
  ]);
  // The history keeps the text as the content and the images beside it.
  const kept = agent.messages[0] as { content: string; images: { media_type: string; sha256: string; bytes: number }[] };
  expect(kept.content).toBe("what is in these?");
  expect(kept.images.map((a) => [a.media_type, a.sha256, a.bytes])).toEqual([
    ["image/png", PNG_SHA, PNG.length],
    ["image/gif", GIF_SHA, GIF.length],
    ["image/png", PNG_SHA, PNG.length],
  ]);
  await agent.shutdown();
});

test("bad images are refused before the run starts, naming the image", async () => {
  const agent = createAgent({ model: model() });
  const refuse = async (images: unknown[], pattern: RegExp, options: { maxImageBytes?: number } = {}) => {
    const e = await agent.run("look", { images: images as never, ...options }).catch((x) => x);
    expect(e).toBeInstanceOf(ImageInputError);
    expect(e.code).toBe("INVALID_IMAGE");
    expect(e.message).toMatch(pattern);
  };
  await refuse([PNG, new TextEncoder().encode("%PDF-1.7 not an image")], /^images\[1\]: is not a PNG, JPEG, GIF or WebP image/);
  await refuse([new Uint8Array()], /^images\[0\]: is empty/);
  await refuse([PNG], /^images\[0\]: is 70 bytes, over the 10 bytes cap/, { maxImageBytes: 10 });
  await refuse([{ data: PNG, mediaType: "image/jpeg" }], /says it is "image\/jpeg", but its bytes are image\/png/);
  await refuse(["data:image/png;base64,iVBOR w0K"], /not valid base64/);
  await refuse(["data:image/png,rawtext"], /without ;base64/);
  await refuse(["https://example.com/cat.png"], /not a data URL/);
  await refuse([42], /must be a data URL, bytes/);
  await refuse(
    Array.from({ length: 17 }, () => PNG),
    /^images: holds 17 images; a task takes at most 16/,
  );
  expect(server.requests).toHaveLength(0);
  await agent.shutdown();
});

test("the magic bytes decide the type: PNG, JPEG, GIF, WebP", () => {
  expect(sniffImageType(PNG)).toBe("image/png");
  expect(sniffImageType(new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 0, 0]))).toBe("image/jpeg");
  expect(sniffImageType(GIF)).toBe("image/gif");
  expect(sniffImageType(new Uint8Array([...Buffer.from("RIFF"), 0, 0, 0, 0, ...Buffer.from("WEBPVP8 ")]))).toBe("image/webp");
  expect(sniffImageType(new Uint8Array([...Buffer.from("RIFF"), 0, 0, 0, 0, ...Buffer.from("WAVEfmt ")]))).toBeNull();
  expect(imageFromBytes(PNG).sha256).toBe(PNG_SHA);
});

test("a tool result's images reach the model as a user message after the turn's tool messages, not as base64 text", async () => {
  server.push(
    toolCallReply([
      { id: "c1", name: "screenshot", args: "{}" },
      { id: "c2", name: "screenshot", args: "{}" },
    ]),
    textReply("two screenshots"),
  );
  const agent = createAgent({ model: model(), tools: [screenshot], policy: { maxRepeatedToolCalls: 5 } });
  const r = await agent.run("take two screenshots");
  expect(r.status).toBe("completed");
  const msgs = messagesOf(1);
  expect(msgs.map((m) => m.role)).toEqual(["user", "assistant", "tool", "tool", "user"]);
  for (const t of msgs.slice(2, 4)) {
    expect(t.content).not.toContain(PNG_B64);
    expect(JSON.parse(t.content as string).content[1]).toEqual({
      type: "image",
      mime_type: "image/png",
      sha256: PNG_SHA,
      bytes: PNG.length,
    });
  }
  expect(msgs[4]!.content).toEqual([
    { type: "text", text: "The result of tool call c1 holds 1 image(s):" },
    { type: "image_url", image_url: { url: `data:image/png;base64,${PNG_B64}` } },
    { type: "text", text: "The result of tool call c2 holds 1 image(s):" },
    { type: "image_url", image_url: { url: `data:image/png;base64,${PNG_B64}` } },
  ]);
  await agent.shutdown();
});

test("a tool result's block that is not a valid image stays a note, and nothing is attached", async () => {
  server.push(toolCallReply([{ id: "c1", name: "fake", args: "{}" }]), textReply("ok"));
  const fake: ToolDefinition = {
    name: "fake",
    description: "",
    parameters: { type: "object" },
    handler: () => ({ content: [{ type: "image", mime_type: "image/png", data: Buffer.from("not a png").toString("base64") }] }),
  };
  const agent = createAgent({ model: model(), tools: [fake] });
  await agent.run("go");
  const msgs = messagesOf(1);
  expect(msgs.map((m) => m.role)).toEqual(["user", "assistant", "tool"]);
  expect(JSON.parse(msgs[2]!.content as string).content[0]).toMatchObject({
    type: "image",
    omitted: true,
    reason: expect.stringMatching(/not a PNG/),
  });
  await agent.shutdown();
});

async function journaledRun(storage: JournalStorage, sessionId: string) {
  server.push(toolCallReply([{ id: "c1", name: "screenshot", args: "{}" }]), textReply("seen"));
  const recorder = new SessionRecorder(sessionId, storage);
  const agent = createAgent({ model: model(), tools: [screenshot], sinks: [recorder], agentId: "vision" });
  const r = await agent.run("compare", { images: [GIF] });
  expect(r.status).toBe("completed");
  expect(recorder.errors).toEqual([]);
  await agent.shutdown();
}

async function restoreAndContinue(storage: JournalStorage, sessionId: string) {
  const checkout = (await storage.checkout(sessionId))!;
  await loadSessionImages(storage, checkout.session);
  const agent = createAgent({ model: model(), tools: [screenshot], agentId: "vision" });
  restoreSession(agent, checkout);
  const before = server.requests.length;
  server.push(textReply("again"));
  await agent.run("and now?");
  const msgs = messagesOf(before);
  expect(msgs[0]!.content).toEqual([
    { type: "text", text: "compare" },
    { type: "image_url", image_url: { url: `data:image/gif;base64,${Buffer.from(GIF).toString("base64")}` } },
  ]);
  expect(msgs.map((m) => m.role)).toEqual(["user", "assistant", "tool", "user", "assistant", "user"]);
  expect((msgs[3]!.content as unknown[])[1]).toEqual({ type: "image_url", image_url: { url: `data:image/png;base64,${PNG_B64}` } });
  await agent.shutdown();
}

test("JSONL: the journal keeps a reference and hash, the bytes are blob files, restore reattaches them", async () => {
  const storage = new JsonlSessionStorage(dir);
  await journaledRun(storage, "s1");
  const text = fs.readFileSync(storage.fileFor("s1"), "utf8");
  expect(text).not.toContain(PNG_B64);
  expect(text).not.toContain(Buffer.from(GIF).toString("base64"));
  const started = text
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l))
    .find((r) => r.type === "run_started");
  expect(started.data.images).toEqual([{ media_type: "image/gif", sha256: GIF_SHA, bytes: GIF.length }]);
  expect(text).toContain(`\\"sha256\\":\\"${PNG_SHA}\\"`); // the tool result's block, by reference
  const tool = text.split("\n").find((l) => l.includes('"messages_appended"') && l.includes('"role":"tool"'))!;
  expect(JSON.parse(tool).data.messages[0].images).toEqual([{ media_type: "image/png", sha256: PNG_SHA, bytes: PNG.length }]);
  const blobs = storage.blobDir("s1");
  expect(blobs).toBe(storage.fileFor("s1").replace(/\.jsonl$/, ".blobs"));
  expect(fs.readdirSync(blobs).sort()).toEqual([GIF_SHA, PNG_SHA].sort());
  expect(new Uint8Array(fs.readFileSync(path.join(blobs, PNG_SHA)))).toEqual(PNG);
  expect(fs.statSync(path.join(blobs, PNG_SHA)).mode & 0o777).toBe(0o600);
  await restoreAndContinue(new JsonlSessionStorage(dir), "s1");
});

test("JSONL: a tampered blob is refused on restore, naming the session and the hash; so is a missing one", async () => {
  const storage = new JsonlSessionStorage(dir);
  await journaledRun(storage, "s2");
  const file = path.join(storage.blobDir("s2"), GIF_SHA);
  fs.writeFileSync(file, Buffer.from("GIF89a tampered"));
  const checkout = (await storage.checkout("s2"))!;
  const e = await loadSessionImages(storage, checkout.session).catch((x) => x);
  expect(e).toBeInstanceOf(SessionBlobError);
  expect(e.code).toBe("SESSION_BLOB_INVALID");
  expect(e.problem).toBe("corrupted");
  expect(e.message).toContain("session 's2'");
  expect(e.message).toContain(GIF_SHA);
  fs.unlinkSync(file);
  const missing = await loadSessionImages(storage, (await storage.checkout("s2"))!.session).catch((x) => x);
  expect(missing).toBeInstanceOf(SessionBlobError);
  expect(missing.problem).toBe("missing");
  expect(missing.message).toMatch(new RegExp(`session 's2'.*${GIF_SHA}.*missing`));
  // Restoring without loading the bytes is refused too, with the way out.
  const agent = createAgent({ model: model(), agentId: "vision" });
  expect(() => restoreSession(agent, checkout)).toThrow(/holds images whose bytes are not loaded: call loadSessionImages/);
  await agent.shutdown();
});

test("JSONL: deleting a session deletes its blobs", async () => {
  const storage = new JsonlSessionStorage(dir);
  await journaledRun(storage, "gone");
  expect(fs.existsSync(storage.blobDir("gone"))).toBe(true);
  const r = await deleteSession(storage, "gone");
  expect(r.removed).toContain(storage.blobDir("gone"));
  expect(fs.existsSync(storage.blobDir("gone"))).toBe(false);
});

test("memory storage keeps blobs the same way", async () => {
  const storage = new MemorySessionStorage();
  await journaledRun(storage, "m1");
  const records = await storage.records("m1");
  expect(JSON.stringify(records)).not.toContain(PNG_B64);
  expect(await storage.getBlob("m1", PNG_SHA)).toEqual(PNG);
  await restoreAndContinue(storage, "m1");
});

test("a journal refuses an image's bytes inline: a record names images by reference only", async () => {
  const storage = new JsonlSessionStorage(dir);
  const image = imageFromBytes(PNG);
  const base = { session_id: "inline", agent_id: "a", branch_id: "main", sequence: 1 };
  const e = await storage.append({ ...base, type: "run_started", data: { run_id: "r1", task: "look", images: [image] } }).catch((x) => x);
  expect(e).toBeInstanceOf(SessionValidationError);
  expect(e.message).toContain("data.images holds an image's bytes: a journal keeps an image by reference");
  const bad = await storage
    .append({ ...base, type: "run_started", data: { run_id: "r1", task: "look", images: [{ sha256: "x" }] } })
    .catch((x) => x);
  expect(bad.message).toContain("data.images must be a list of image references");
  expect(fs.existsSync(storage.fileFor("inline"))).toBe(false);
  await storage.append({ ...base, type: "run_started", data: { run_id: "r1", task: "look", images: [imageRef(image)] } });
  const tool = { role: "tool", tool_call_id: "c1", content: "{}", images: [image] };
  const t = await storage
    .append({ ...base, sequence: 2, type: "messages_appended", data: { run_id: "r1", messages: [tool] } })
    .catch((x) => x);
  expect(t.message).toContain("data.messages[0].images holds an image's bytes");
});

test("a compaction's messages keep their images by reference too, and restore with them", async () => {
  const storage = new MemorySessionStorage();
  const estimator: TokenEstimator = { estimateMessage: () => 1, estimateTools: () => 0 };
  const compactor: Compactor = { compact: async () => ({ content: "SUMMARY", source: "test" }) };
  server.push(textReply("first"), textReply("second"));
  const agent = createAgent({
    model: model(),
    agentId: "vision",
    sinks: [new SessionRecorder("cmp", storage)],
    compaction: {
      policy: new CompactionPolicy({ contextWindow: 100_000, reserveTokens: 0, keepRecentTokens: 1 }, true, estimator),
      compactor,
    },
  });
  await agent.run("an old question");
  await agent.run("this one has an image", { images: [GIF] });
  expect((await agent.compact()).status).toBe("completed");
  await agent.shutdown();
  const records = await storage.records("cmp");
  const applied = records.find((r) => r.type === "compaction_applied")!;
  const kept = (applied.data.messages as { role: string; images?: { data?: string; sha256: string }[] }[]).find(
    (m) => m.images !== undefined,
  )!;
  expect(kept.images!.map((a) => [a.sha256, a.data])).toEqual([[GIF_SHA, undefined]]);
  const checkout = (await storage.checkout("cmp"))!;
  await loadSessionImages(storage, checkout.session);
  const again = createAgent({ model: model(), agentId: "vision" });
  restoreSession(again, checkout);
  const user = again.messages.find((m) => m.role === "user" && "images" in m) as { images: { data: string }[] };
  expect(user.images[0]!.data).toBe(Buffer.from(GIF).toString("base64"));
  await again.shutdown();
});

test("the token estimate counts an image as IMAGE_TOKEN_ESTIMATE, not its base64", () => {
  const big = imageFromBytes(new Uint8Array([...PNG, ...new Uint8Array(30_000)]));
  const plain = heuristicEstimator.estimateMessage({ role: "user", content: "look" });
  expect(heuristicEstimator.estimateMessage({ role: "user", content: "look", images: [big] })).toBe(plain + IMAGE_TOKEN_ESTIMATE);
  const parts = { role: "user", content: [{ type: "text", text: "look" }, imageContentPart(big)] };
  expect(heuristicEstimator.estimateMessage(parts)).toBeLessThan(plain + IMAGE_TOKEN_ESTIMATE + 20);
});

test("JSONL: writing a blob again mends one whose bytes were changed", async () => {
  const storage = new JsonlSessionStorage(dir);
  await storage.putBlob("mend", PNG_SHA, PNG);
  const file = path.join(storage.blobDir("mend"), PNG_SHA);
  fs.writeFileSync(file, "changed");
  await storage.putBlob("mend", PNG_SHA, PNG);
  expect(new Uint8Array(fs.readFileSync(file))).toEqual(PNG);
  expect(fs.readdirSync(storage.blobDir("mend"))).toEqual([PNG_SHA]);
  const e = await storage.putBlob("mend", "../../etc/passwd", PNG).catch((x) => x);
  expect(e).toBeInstanceOf(SessionBlobError);
  expect(e.message).toContain("is not a SHA-256");
});
