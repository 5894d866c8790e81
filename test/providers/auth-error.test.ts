/**
 * A model server's 401 or 403: the error names its kind (authentication),
 * the variable that holds the key and the base URL used, and never shows the
 * key, whole, in part or as the server's masked echo of it. Through the CLI
 * (`agentcore agent`, with its events, logs at trace level and the session
 * journal) and the daemon (`agentcore serve`, a run through POST /v1/runs),
 * each a child process, against the scripted OpenAI-compatible server on
 * loopback answering with OpenAI's own 401 body; and `withoutKey` on its own.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { KEY_HIDDEN, withoutKey } from "../../src/providers/errors.ts";
import { REPO } from "../support/binary.ts";
import { errorBody, type ScriptedOpenAIServer, type ScriptedReply, startOpenAIServer } from "../support/openai-server.ts";
import { tmp } from "../support/tmp.ts";

/** A key no output has by chance: no word of ours, no hex run, mixed case. */
const KEY = "sk-Zq7vWxKpLmRtYbNcHdFgJsQ";

/** OpenAI's answer to a wrong key: the key echoed with its middle masked. */
function openAI401(key: string): ScriptedReply {
  const echo = `${key.slice(0, 8)}${"*".repeat(Math.max(3, key.length - 12))}${key.slice(-4)}`;
  return {
    kind: "error",
    status: 401,
    body: errorBody(
      `Incorrect API key provided: ${echo}. You can find your API key at https://platform.openai.com/account/api-keys.`,
      "invalid_request_error",
      "invalid_api_key",
    ),
  };
}

/** Every piece of the key an output must not hold: 6-character runs, its first 8 and its last 4 characters, the masked echo. */
function leaks(text: string, key = KEY): string[] {
  const pieces = new Set([key, key.slice(0, 8), key.slice(-4), "****"]);
  for (let i = 0; i + 6 <= key.length; i++) pieces.add(key.slice(i, i + 6));
  return [...pieces].filter((p) => text.includes(p));
}

/** The text of every file under `dir`. */
function filesUnder(dir: string): string {
  let text = "";
  for (const name of readdirSync(dir, { recursive: true }) as string[]) {
    const path = join(dir, name);
    if (statSync(path).isFile()) text += readFileSync(path, "utf8");
  }
  return text;
}

let server: ScriptedOpenAIServer;
beforeAll(async () => {
  server = await startOpenAIServer();
});
afterAll(() => server.close());

async function agentcore(args: string[], env: Record<string, string>, cwd: string) {
  const p = Bun.spawn([process.execPath, join(REPO, "src/cli/main.ts"), ...args], {
    cwd,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: cwd, NO_COLOR: "1", AGENTCORE_LOG_LEVEL: "trace", ...env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, status] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { status, stdout, stderr };
}

describe("agentcore agent", () => {
  test("a 401 names the kind, MODEL_API_KEY and the URL; the key is nowhere: stderr, events, logs, the journal", async () => {
    const cwd = tmp("agentcore-auth-");
    const env = { MODEL_URL: server.baseURL, MODEL_API_KEY: KEY, CHAT_MODEL: "gpt-test" };
    server.push(openAI401(KEY));
    const r = await agentcore(["agent", "--session", "auth", "say hi"], env, cwd);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(
      `authentication failed: HTTP 401 from ${server.baseURL} (Incorrect API key provided: ${KEY_HIDDEN}. You can find your API key at https://platform.openai.com/account/api-keys); the API key in MODEL_API_KEY was refused: check MODEL_API_KEY, and that the key is for this server`,
    );
    expect(server.requests.at(-1)!.headers.authorization).toBe(`Bearer ${KEY}`); // it was the key sent
    // --events jsonl: the result's error says the same
    server.push(openAI401(KEY));
    const events = await agentcore(["agent", "--events", "jsonl", "say hi"], env, cwd);
    expect(events.status).toBe(1);
    const finished = events.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { kind: string; result?: { status: string; error: string } })
      .find((e) => e.kind === "agent_finished")!;
    expect(finished.result!.status).toBe("failed");
    expect(finished.result!.error).toContain("authentication failed: HTTP 401 from");
    expect(finished.result!.error).toContain("MODEL_API_KEY");
    expect({
      stdout: leaks(r.stdout + events.stdout),
      stderr: leaks(r.stderr + events.stderr),
      files: leaks(filesUnder(cwd)),
    }).toEqual({ stdout: [], stderr: [], files: [] });
    expect(filesUnder(cwd)).toContain("authentication failed"); // the journal has the run's error, without the key
  });

  test("a 403, no key set, and a keyless preset: each says what holds the key or why none was sent", async () => {
    const cwd = tmp("agentcore-auth-");
    const forbidden: ScriptedReply = {
      kind: "error",
      status: 403,
      body: errorBody(`Project does not have access to model gpt-test (key ${KEY})`, "invalid_request_error", "model_not_found"),
    };
    server.push(forbidden);
    let r = await agentcore(["agent", "hi"], { MODEL_URL: server.baseURL, MODEL_API_KEY: KEY, CHAT_MODEL: "gpt-test" }, cwd);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`authentication failed: HTTP 403 from ${server.baseURL} (Project does not have access to model gpt-test`);
    expect(r.stderr).toContain("the API key in MODEL_API_KEY was refused");
    expect(leaks(r.stdout + r.stderr)).toEqual([]);

    server.push(openAI401("sk-other"));
    r = await agentcore(["agent", "hi"], { MODEL_URL: server.baseURL, CHAT_MODEL: "gpt-test" }, cwd);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`authentication failed: HTTP 401 from ${server.baseURL}`);
    expect(r.stderr).toContain("no API key was sent (MODEL_API_KEY is not set; set it to this server's key)");

    server.push(openAI401("sk-other"));
    r = await agentcore(["agent", "--preset", "ollama", "--model-url", server.baseURL, "hi"], { MODEL_API_KEY: KEY, CHAT_MODEL: "m" }, cwd);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("no API key was sent (the ollama preset sends none;");
    expect(server.requests.at(-1)!.headers.authorization).not.toContain(KEY);
    expect(leaks(r.stdout + r.stderr)).toEqual([]);
  });
});

describe("agentcore serve", () => {
  test("a run through POST /v1/runs: the result's error names MODEL_API_KEY and the URL; the key is in no answer and no log line", async () => {
    const cwd = tmp("agentcore-auth-serve-");
    const token = "t".repeat(40);
    const p = Bun.spawn(
      [process.execPath, join(REPO, "src/cli/main.ts"), "serve", "--port", "0", "--state-dir", join(cwd, "state"), "--access-log"],
      {
        cwd,
        env: {
          PATH: process.env.PATH ?? "/usr/bin:/bin",
          HOME: cwd,
          AGENTCORE_TOKEN: token,
          AGENTCORE_LOG_LEVEL: "trace",
          MODEL_URL: server.baseURL,
          MODEL_API_KEY: KEY,
          CHAT_MODEL: "gpt-test",
        },
        stdin: "ignore",
        stdout: "pipe",
        stderr: "pipe",
      },
    );
    // stderr read as it comes: the first line says where the daemon listens
    let log = "";
    const decoder = new TextDecoder();
    const reader = p.stderr.getReader();
    const reading = (async () => {
      for (let r = await reader.read(); !r.done; r = await reader.read()) log += decoder.decode(r.value, { stream: true });
    })();
    try {
      let url = "";
      for (let i = 0; i < 600 && url === ""; i++) {
        await Bun.sleep(50);
        url = /listening on (http:\/\/\S+)/.exec(log)?.[1] ?? "";
      }
      expect(url).not.toBe("");
      const run = async (body: unknown) => {
        const res = await fetch(`${url}/v1/runs`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json" },
          body: JSON.stringify(body),
        });
        return { status: res.status, text: await res.text() };
      };
      server.push(openAI401(KEY));
      const a = await run({ task: "say hi" });
      expect(a.status).toBe(201);
      const result = (JSON.parse(a.text) as { result: { status: string; error: string } }).result;
      expect(result.status).toBe("failed");
      expect(result.error).toContain(`authentication failed: HTTP 401 from ${server.baseURL}`);
      expect(result.error).toContain("the API key in MODEL_API_KEY was refused");
      // a URL the request names gets no key, and the error says why
      const other = await startOpenAIServer([openAI401("sk-other")]);
      try {
        const b = await run({ task: "say hi", model: { url: other.baseURL } });
        const error = (JSON.parse(b.text) as { result: { error: string } }).result.error;
        expect(error).toContain(`authentication failed: HTTP 401 from ${other.baseURL}`);
        expect(error).toContain("no API key was sent (MODEL_API_KEY goes only to MODEL_URL, and this is another URL)");
        expect(leaks(a.text + b.text)).toEqual([]);
      } finally {
        await other.close();
      }
    } finally {
      p.kill("SIGTERM");
      await p.exited;
      await reading;
    }
    expect(log).toContain("path=/v1/runs status=201");
    expect(leaks(log)).toEqual([]);
  }, 60_000);
});

test("withoutKey: the whole key, a piece of it, a masked echo; other text stays", () => {
  const key = "sk-Zq7vWxKpLmRtYbNcHdFgJsQ";
  expect(withoutKey(`bad key ${key}.`, key)).toBe(`bad key ${KEY_HIDDEN}.`);
  expect(withoutKey("Incorrect API key provided: sk-Zq7vW**************gJsQ. See docs.", key)).toBe(
    `Incorrect API key provided: ${KEY_HIDDEN}. See docs.`,
  );
  expect(withoutKey("key starting sk-Zq7vWx was refused", key)).toBe(`key starting ${KEY_HIDDEN} was refused`);
  expect(withoutKey("key ending YbNcHdFgJsQ", key)).toBe(`key ending ${KEY_HIDDEN}`);
  expect(withoutKey("sk-proj-********************abcd", undefined)).toBe(KEY_HIDDEN);
  expect(withoutKey("model gpt-4o not found", key)).toBe("model gpt-4o not found");
  expect(withoutKey("", key)).toBe("");
});
