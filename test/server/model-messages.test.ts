/**
 * POST /v1/runs without a usable model, against the compiled binary's daemon:
 * the 400 says what a client can send or what the daemon's operator can set
 * (model.model, CHAT_MODEL, MODEL_API_KEY, MODEL_URL), never the library's own
 * option names (apiKey, `model`), which no request body takes.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { binaryPath } from "../support/binary.ts";
import { collectStderr } from "../support/daemon.ts";

const dir = mkdtempSync(join(tmpdir(), "agentcore-model-messages-"));
let proc: ReturnType<typeof Bun.spawn> | null = null;

afterAll(async () => {
  if (proc !== null) {
    proc.kill("SIGTERM");
    await proc.exited;
  }
  rmSync(dir, { recursive: true, force: true });
});

test("model-config 400s name request fields and the daemon's variables, not apiKey", async () => {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !/^(MODEL_|CHAT_MODEL|LLM_|AGENTCORE_)/.test(k)) env[k] = v;
  proc = Bun.spawn([binaryPath(), "serve", "--port", "0", "--state-dir", join(dir, "state"), "--root", dir], {
    cwd: dir,
    env,
    stdout: "ignore",
    stderr: "pipe",
    stdin: "ignore",
  });
  const text = await collectStderr(proc).ready(/token file .+\n/);
  const url = /listening on (http:\/\/\S+)/.exec(text)![1]!;
  const token = readFileSync(/token file (.+)\n/.exec(text)![1]!, "utf8").trim();
  const post = async (body: unknown) => {
    const r = await fetch(`${url}/v1/runs`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify(body),
    });
    expect(r.status).toBe(400);
    return ((await r.json()) as { error: { message: string } }).error.message;
  };
  const none = await post({ task: "x" });
  expect(none).toBe("/model: no model configured: send model.model (or a script), or start the daemon with CHAT_MODEL set");
  const openai = await post({ task: "x", model: { preset: "openai", model: "m" } });
  expect(openai).toStartWith("/model: the openai preset needs an API key: start the daemon with MODEL_API_KEY set");
  const own = await post({ task: "x", model: { preset: "openai", model: "m", url: "http://127.0.0.1:9/v1" } });
  expect(own).toContain("MODEL_API_KEY goes only to the daemon's MODEL_URL");
  for (const m of [none, openai, own]) {
    expect(m).not.toContain("apiKey");
    expect(m).not.toContain("pass `model`");
  }
}, 60_000);
