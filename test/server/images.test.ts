/**
 * `images` in `POST /v1/runs`, against the compiled binary's daemon
 * (`agentcore serve` as a child process) with its model on the scripted
 * OpenAI-compatible server: `{data_url}` and `{media_type, data}` reach the
 * model as image_url content parts, the session journals them by sha256
 * with the bytes in blob files, and bad images are 400s whose location
 * points at the bad member.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { binaryPath } from "../support/binary.ts";
import { startOpenAIServer, textReply, type ScriptedOpenAIServer } from "../support/openai-server.ts";
import { collectStderr, SseReader } from "../support/daemon.ts";

const PNG_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
const PNG_SHA = createHash("sha256").update(Buffer.from(PNG_B64, "base64")).digest("hex");
const WEBP = Buffer.from([...Buffer.from("RIFF"), 12, 0, 0, 0, ...Buffer.from("WEBPVP8 "), 0, 0, 0, 0]);
const WEBP_SHA = createHash("sha256").update(WEBP).digest("hex");

let model: ScriptedOpenAIServer;
let dir: string;
let url: string;
let token: string;
let stop: () => Promise<void>;

beforeAll(async () => {
  model = await startOpenAIServer();
  dir = mkdtempSync(join(tmpdir(), "agentcore-images-serve-"));
  const proc = Bun.spawn([binaryPath(), "serve", "--port", "0", "--state-dir", join(dir, "state"), "--root", dir], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? "", HOME: dir, MODEL_URL: model.baseURL, CHAT_MODEL: "vision" },
    stdout: "ignore",
    stderr: "pipe",
  });
  const err = collectStderr(proc);
  const text = await err.ready(/token file .+\n/);
  url = /serve: listening on (\S+)\n/.exec(text)![1]!;
  token = readFileSync(/token file (.+)\n/.exec(text)![1]!, "utf8").trim();
  stop = async () => {
    if (proc.exitCode === null) proc.kill("SIGTERM");
    await err.exited;
  };
}, 120_000);
afterAll(async () => {
  await stop?.();
  await model?.close();
  rmSync(dir, { recursive: true, force: true });
});

const post = (json: unknown) =>
  fetch(`${url}/v1/runs`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(json),
  });

function find(root: string, pred: (name: string) => boolean): string[] {
  const out: string[] = [];
  for (const e of readdirSync(root, { withFileTypes: true })) {
    const p = join(root, e.name);
    if (pred(e.name)) out.push(p);
    if (e.isDirectory()) out.push(...find(p, pred));
  }
  return out;
}

test("images as a data URL and as media_type + data reach the model; the session journals them by sha256, bytes in blobs", async () => {
  model.push(textReply("a dot and a webp"));
  const res = await post({
    task: "describe",
    session: "daemon-pics",
    images: [{ data_url: `data:image/png;base64,${PNG_B64}` }, { media_type: "image/webp", data: WEBP.toString("base64") }],
  });
  expect(res.status).toBe(201);
  const done = await new SseReader(res).until((m) => m.event === "done");
  expect(done!.data.result).toMatchObject({ status: "completed", output: "a dot and a webp" });
  const user = (model.requests.at(-1)!.body as { messages: { role: string; content: unknown }[] }).messages.at(-1)!;
  expect(user).toEqual({
    role: "user",
    content: [
      { type: "text", text: "describe" },
      { type: "image_url", image_url: { url: `data:image/png;base64,${PNG_B64}` } },
      { type: "image_url", image_url: { url: `data:image/webp;base64,${WEBP.toString("base64")}` } },
    ],
  });
  const journal = find(dir, (n) => n.endsWith(".jsonl"))[0]!;
  const text = readFileSync(journal, "utf8");
  expect(text).not.toContain(PNG_B64);
  const started = text
    .trimEnd()
    .split("\n")
    .map((l) => JSON.parse(l))
    .find((r) => r.type === "run_started");
  expect(started.data.images).toEqual([
    { media_type: "image/png", sha256: PNG_SHA, bytes: 70 },
    { media_type: "image/webp", sha256: WEBP_SHA, bytes: WEBP.length },
  ]);
  expect(readdirSync(journal.replace(/\.jsonl$/, ".blobs")).sort()).toEqual([PNG_SHA, WEBP_SHA].sort());
});

test("bad images are 400 INVALID_REQUEST with a pointer at the bad member, before any model request", async () => {
  const before = model.requests.length;
  const cases: [unknown, string, RegExp][] = [
    [{ data: "x" }, "/images", /must be an array/],
    [[{ media_type: "image/png", data: Buffer.from("%PDF-1.4").toString("base64") }], "/images/0/data", /is not a PNG, JPEG, GIF or WebP/],
    [[{ media_type: "image/jpeg", data: PNG_B64 }], "/images/0/media_type", /says it is "image\/jpeg", but its bytes are image\/png/],
    [
      [{ data_url: `data:image/png;base64,${PNG_B64}` }, { media_type: "image/png", data: "not base64!" }],
      "/images/1/data",
      /not valid base64/,
    ],
    [[{ data_url: "https://example.com/a.png" }], "/images/0/data_url", /not a data URL/],
    [[{ data_url: `data:image/png;base64,${PNG_B64}`, data: PNG_B64 }], "/images/0/data_url", /goes alone/],
    [[{ url: "x" }], "/images/0/url", /unknown member/],
    [[{ data: PNG_B64 }], "/images/0/media_type", /is required/],
    [["data:image/png;base64,"], "/images/0", /must be an object/],
    [Array.from({ length: 17 }, () => ({ data_url: `data:image/png;base64,${PNG_B64}` })), "/images", /at most 16/],
  ];
  for (const [images, location, message] of cases) {
    const res = await post({ task: "look", images });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: string; message: string; details: { location: string } } };
    expect(body.error.code).toBe("INVALID_REQUEST");
    expect(body.error.details.location).toBe(location);
    expect(body.error.message).toMatch(message);
    expect(body.error.message.startsWith(`${location}: `)).toBe(true);
  }
  expect(model.requests.length).toBe(before);
});

test("a run on a session whose image blob was changed is a 409 naming the session and the hash, before any model request", async () => {
  const journal = find(dir, (n) => n.endsWith(".jsonl"))[0]!;
  const blob = join(journal.replace(/\.jsonl$/, ".blobs"), PNG_SHA);
  writeFileSync(blob, "tampered");
  const before = model.requests.length;
  const res = await post({ task: "again", session: "daemon-pics" });
  expect(res.status).toBe(409);
  const body = (await res.json()) as { error: { code: string; message: string; details: Record<string, unknown> } };
  expect(body.error.code).toBe("CONFLICT");
  expect(body.error.details).toMatchObject({ reason: "session_blob_invalid", sha256: PNG_SHA, problem: "corrupted" });
  expect(body.error.message).toContain("session 'daemon-pics'");
  expect(body.error.message).toContain(`the blob of image ${PNG_SHA} is corrupted`);
  expect(model.requests.length).toBe(before);
});
