// Images in a PostgreSQL store (test/support/postgres.ts; required under
// CI=true): a run with a task image and a tool result image journals them
// by reference and sha256, the bytes in agentcore.session_blobs (migration
// 6), never in records; another storage instance (another daemon) restores
// them, and a blob whose bytes were changed is refused naming the session
// and the hash. Deleting the session deletes its blobs.
import { afterAll, afterEach, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { createAgent } from "../../src/agent/index.ts";
import { OpenAIModelAdapter } from "../../src/providers/openai.ts";
import { PostgresSessionStorage } from "../../src/session/postgres/storage.ts";
import { SessionRecorder } from "../../src/session/recorder.ts";
import { restoreSession } from "../../src/session/restore.ts";
import { loadSessionImages, SessionBlobError } from "../../src/session/blobs.ts";
import type { ToolDefinition } from "../../src/tools/definition.ts";
import { chunk, startOpenAIServer, textReply, toolChunk } from "../support/openai-server.ts";
import { createDatabase, dropDatabase, pgUrl, skipMessage } from "../support/postgres.ts";

const server = await pgUrl();
if (server === null) console.log(`skip: the PostgreSQL image tests: ${skipMessage}`);

const PNG_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
const PNG_SHA = createHash("sha256").update(Buffer.from(PNG_B64, "base64")).digest("hex");
const GIF = Buffer.from([...Buffer.from("GIF89a"), 1, 0, 1, 0, 0, 0, 0, 0x3b]);
const GIF_SHA = createHash("sha256").update(GIF).digest("hex");

const databases: string[] = [];
const open: PostgresSessionStorage[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});
afterAll(async () => {
  for (const db of databases) await dropDatabase(db).catch(() => {});
});

async function storage(url: string): Promise<PostgresSessionStorage> {
  const s = await PostgresSessionStorage.open(url);
  open.push(s);
  return s;
}

async function sql(url: string, text: string, values: unknown[] = []): Promise<Record<string, unknown>[]> {
  const { default: pg } = await import("pg");
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(text, values)).rows;
  } finally {
    await c.end();
  }
}

const screenshot: ToolDefinition = {
  name: "screenshot",
  description: "",
  parameters: { type: "object" },
  handler: () => ({ content: [{ type: "image", mime_type: "image/png", data: PNG_B64 }] }),
};

test.skipIf(server === null)(
  "PostgreSQL: images journaled by sha256, bytes in session_blobs; restored by another instance; a changed blob refused",
  async () => {
    const db = (await createDatabase())!;
    databases.push(db);
    const model = await startOpenAIServer([
      {
        kind: "stream",
        chunks: [
          chunk({ role: "assistant", content: null }),
          toolChunk(0, { id: "c1", name: "screenshot", args: "{}" }),
          chunk({}, "tool_calls"),
        ],
      },
      textReply("seen"),
      textReply("again"),
    ]);
    try {
      const adapter = () => new OpenAIModelAdapter({ baseURL: model.baseURL, model: "vision", timeoutMs: 10_000 });
      const a = await storage(db);
      const recorder = new SessionRecorder("pg-pics", a);
      const agent = createAgent({ model: adapter(), tools: [screenshot], sinks: [recorder], agentId: "vision" });
      expect((await agent.run("compare", { images: [GIF] })).status).toBe("completed");
      expect(recorder.errors).toEqual([]);
      await agent.shutdown();

      const lines = await sql(db, "SELECT line FROM agentcore.records WHERE session_id = $1 ORDER BY revision", ["pg-pics"]);
      const text = lines.map((r) => r.line as string).join("");
      expect(text).not.toContain(PNG_B64);
      expect(text).not.toContain(GIF.toString("base64"));
      expect(JSON.parse(lines[0]!.line as string).data.images).toEqual([{ media_type: "image/gif", sha256: GIF_SHA, bytes: GIF.length }]);
      const blobs = await sql(db, "SELECT sha256, data FROM agentcore.session_blobs WHERE session_id = $1 ORDER BY sha256", ["pg-pics"]);
      expect(blobs.map((r) => r.sha256)).toEqual([GIF_SHA, PNG_SHA].sort());
      expect(Buffer.from(blobs.find((r) => r.sha256 === GIF_SHA)!.data as Uint8Array)).toEqual(GIF);

      // Another instance (another daemon on the store) restores the images.
      const b = await storage(db);
      const checkout = (await b.checkout("pg-pics"))!;
      await loadSessionImages(b, checkout.session);
      const again = createAgent({ model: adapter(), tools: [screenshot], agentId: "vision" });
      restoreSession(again, checkout);
      await again.run("and now?");
      const msgs = (model.requests.at(-1)!.body as { messages: { role: string; content: unknown }[] }).messages;
      expect(msgs.map((m) => m.role)).toEqual(["user", "assistant", "tool", "user", "assistant", "user"]);
      expect((msgs[0]!.content as unknown[])[1]).toEqual({
        type: "image_url",
        image_url: { url: `data:image/gif;base64,${GIF.toString("base64")}` },
      });
      expect((msgs[3]!.content as unknown[])[1]).toEqual({ type: "image_url", image_url: { url: `data:image/png;base64,${PNG_B64}` } });
      await again.shutdown();

      await sql(db, "UPDATE agentcore.session_blobs SET data = $1 WHERE sha256 = $2", [Buffer.from("GIF89a changed"), GIF_SHA]);
      const e = await loadSessionImages(b, (await b.checkout("pg-pics"))!.session).catch((x) => x);
      expect(e).toBeInstanceOf(SessionBlobError);
      expect(e.message).toContain("session 'pg-pics'");
      expect(e.message).toContain(`${GIF_SHA} is corrupted`);

      await b.deleteSession("pg-pics");
      expect(await sql(db, "SELECT 1 FROM agentcore.session_blobs WHERE session_id = $1", ["pg-pics"])).toEqual([]);
    } finally {
      await model.close();
    }
  },
  60_000,
);
