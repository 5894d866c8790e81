/**
 * Through the compiled binary: `agent --image FILE` (repeatable) sends the
 * images with the task as OpenAI image_url content parts (over real HTTP to
 * the scripted server), a session journals them by reference and sha256
 * with the bytes in `<journal>.blobs/<sha256>`, a later run of the session
 * sends them again from the blobs, and a tampered blob stops it with the
 * session and hash named. Bad files are refused before any request.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { binaryPath } from "../support/binary.ts";
import { chunk, startOpenAIServer, textReply, toolChunk, type ScriptedOpenAIServer } from "../support/openai-server.ts";

const PNG_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
const PNG = Buffer.from(PNG_B64, "base64");
const PNG_SHA = createHash("sha256").update(PNG).digest("hex");
const JPEG = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, ...Buffer.from("JFIF"), 0, 1, 1, 0, 0, 1, 0, 1, 0, 0, 0xff, 0xd9]);
const JPEG_SHA = createHash("sha256").update(JPEG).digest("hex");

let bin: string;
let work: string;
let server: ScriptedOpenAIServer;
beforeAll(async () => {
  bin = binaryPath();
  work = mkdtempSync(join(tmpdir(), "agentcore-images-cli-"));
  writeFileSync(join(work, "dot.png"), PNG);
  // Named .png, but a JPEG by its bytes: the bytes decide.
  writeFileSync(join(work, "photo.png"), JPEG);
  writeFileSync(join(work, "notes.txt"), "not an image\n");
  writeFileSync(join(work, "huge.png"), PNG);
  truncateSync(join(work, "huge.png"), 11 * 1024 * 1024);
  server = await startOpenAIServer();
}, 120_000);
afterAll(async () => {
  await server.close();
  rmSync(work, { recursive: true, force: true });
});

const CLEAN_ENV = { PATH: process.env.PATH ?? "/usr/bin:/bin" };

async function run(args: string[]) {
  const p = Bun.spawn([bin, ...args], { cwd: work, stdin: "ignore", stdout: "pipe", stderr: "pipe", env: CLEAN_ENV });
  const [stdout, stderr, status] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { status, stdout, stderr };
}

const MODEL = () => ["--no-plan", "--model-url", server.baseURL, "--model", "vision"];
type Wire = { role: string; content: unknown };
const lastMessages = () => (server.requests.at(-1)!.body as { messages: Wire[] }).messages;
const dataUrl = (type: string, b: Buffer) => `data:${type};base64,${b.toString("base64")}`;

function sessionFiles() {
  const dir = join(work, ".agentcore", "sessions");
  const journal = readdirSync(dir).find((n) => n.endsWith(".jsonl"))!;
  return { dir, journal: join(dir, journal), blobs: join(dir, journal.replace(/\.jsonl$/, ".blobs")) };
}

test("--image files reach the model as content parts; the session journals them by sha256 and keeps the bytes in blobs", async () => {
  server.push(textReply("a dot and a photo"));
  const r = await run(["agent", ...MODEL(), "--session", "pics", "--image", "dot.png", "--image", "photo.png", "what are these?"]);
  expect(r.stderr).toBe("");
  expect(r.status).toBe(0);
  expect(r.stdout).toContain("a dot and a photo");
  expect(lastMessages().at(-1)).toEqual({
    role: "user",
    content: [
      { type: "text", text: "what are these?" },
      { type: "image_url", image_url: { url: dataUrl("image/png", PNG) } },
      { type: "image_url", image_url: { url: dataUrl("image/jpeg", JPEG) } },
    ],
  });
  const { journal, blobs } = sessionFiles();
  const text = readFileSync(journal, "utf8");
  expect(text).not.toContain(PNG_B64);
  const started = text
    .trimEnd()
    .split("\n")
    .map((l) => JSON.parse(l))
    .find((rec) => rec.type === "run_started");
  expect(started.data.images).toEqual([
    { media_type: "image/png", sha256: PNG_SHA, bytes: PNG.length },
    { media_type: "image/jpeg", sha256: JPEG_SHA, bytes: JPEG.length },
  ]);
  expect(readdirSync(blobs).sort()).toEqual([PNG_SHA, JPEG_SHA].sort());
  expect(readFileSync(join(blobs, JPEG_SHA))).toEqual(JPEG);

  // The next run of the session restores the conversation, images included.
  server.push(textReply("still a dot"));
  const again = await run(["agent", ...MODEL(), "--session", "pics", "and the first one?"]);
  expect(again.status).toBe(0);
  const msgs = lastMessages();
  expect(msgs.map((m) => m.role)).toEqual(["user", "assistant", "user"]);
  expect((msgs[0]!.content as unknown[])[1]).toEqual({ type: "image_url", image_url: { url: dataUrl("image/png", PNG) } });
});

test("a tampered blob stops the next run of the session, naming the session and the hash", async () => {
  const { blobs } = sessionFiles();
  writeFileSync(join(blobs, PNG_SHA), Buffer.concat([PNG, Buffer.from("x")]));
  const before = server.requests.length;
  const r = await run(["agent", ...MODEL(), "--session", "pics", "once more"]);
  expect(r.status).toBe(2);
  expect(r.stderr).toContain("session 'pics'");
  expect(r.stderr).toContain(`the blob of image ${PNG_SHA} is corrupted`);
  expect(server.requests.length).toBe(before);
});

test("bad --image files are refused before any request, naming the file", async () => {
  const before = server.requests.length;
  const cases: [string[], RegExp][] = [
    [["--image", "notes.txt"], /--image notes\.txt: is not a PNG, JPEG, GIF or WebP image/],
    [["--image", "missing.png"], /--image missing\.png: cannot be read \(ENOENT\)/],
    [["--image", "huge.png"], /--image huge\.png: is 11\.0 MiB, over the 10\.0 MiB cap on one image/],
    [["--image", "."], /--image \.: is not a file/],
  ];
  for (const [flags, pattern] of cases) {
    const r = await run(["agent", ...MODEL(), ...flags, "look"]);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(pattern);
  }
  const cont = await run(["agent", ...MODEL(), "--session", "pics", "--continue", "--image", "dot.png"]);
  expect(cont.status).toBe(2);
  expect(cont.stderr).toContain("--image goes with a new task, not with --continue");
  expect(server.requests.length).toBe(before);
  expect(existsSync(join(work, "missing.png"))).toBe(false);
});

test("agent --help lists --image", async () => {
  const r = await run(["agent", "--help"]);
  expect(r.stdout).toMatch(/--image FILE/);
});

test("an MCP tool's image (server-everything's get-tiny-image, over stdio) reaches the model as an image part and is journaled by sha256", async () => {
  const everything = join(import.meta.dir, "../../node_modules/@modelcontextprotocol/server-everything/dist/index.js");
  const cfg = join(work, "mcp-config.json");
  writeFileSync(
    cfg,
    JSON.stringify({
      root: work,
      policy: { default: "allow" },
      mcpServers: { ev: { command: Bun.which("node") ?? "node", args: [everything, "stdio"], timeout_ms: 20_000 } },
    }),
  );
  const start = server.requests.length;
  server.push(
    {
      kind: "stream",
      chunks: [
        chunk({ role: "assistant", content: null }),
        toolChunk(0, { id: "t1", name: "ev__get-tiny-image", args: "{}" }),
        chunk({}, "tool_calls"),
      ],
    },
    textReply("a tiny image"),
  );
  const r = await run(["--config", cfg, "agent", ...MODEL(), "--session", "mcp-pics", "show me the tiny image"]);
  expect(r.stderr).not.toContain("error");
  expect(r.status).toBe(0);
  expect(server.requests.length).toBe(start + 2);
  const msgs = lastMessages();
  expect(msgs.map((m) => m.role)).toEqual(["user", "assistant", "tool", "user"]);
  const tool = JSON.parse(msgs[2]!.content as string) as { content: Record<string, unknown>[] };
  const block = tool.content.find((b) => b.type === "image")!;
  expect(Object.keys(block).sort()).toEqual(["bytes", "mime_type", "sha256", "type"]);
  expect(block.mime_type).toBe("image/png");
  const parts = msgs[3]!.content as { type: string; text?: string; image_url?: { url: string } }[];
  expect(parts[0]).toEqual({ type: "text", text: "The result of tool call t1 holds 1 image(s):" });
  const url = parts[1]!.image_url!.url;
  expect(url.startsWith("data:image/png;base64,")).toBe(true);
  const bytes = Buffer.from(url.slice("data:image/png;base64,".length), "base64");
  expect([...bytes.subarray(0, 4)]).toEqual([0x89, 0x50, 0x4e, 0x47]);
  const sha = createHash("sha256").update(bytes).digest("hex");
  expect(block.sha256).toBe(sha);
  // In the journal: the reference only; the bytes in the session's blobs.
  const dir = join(work, ".agentcore", "sessions");
  const journal = readdirSync(dir)
    .filter((n) => n.endsWith(".jsonl"))
    .map((n) => join(dir, n))
    .find((f) => readFileSync(f, "utf8").includes("mcp-pics"))!;
  const text = readFileSync(journal, "utf8");
  expect(text).not.toContain(url.slice("data:image/png;base64,".length, 200));
  expect(readFileSync(join(journal.replace(/\.jsonl$/, ".blobs"), sha))).toEqual(bytes);
}, 60_000);
