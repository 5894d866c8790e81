/**
 * `tools` and `policy` of `POST /v1/runs`, against the compiled binary's
 * daemon (`agentcore serve` as a child process, scripted models): a run
 * limited to some tools is offered and can call only those (the model gets
 * the usual unknown-tool error for the rest), unknown names are a 400 naming
 * them, and the presets only narrow the daemon's policy: `read_only` refuses
 * a write, `ask` makes it wait for an approval, and neither lifts a deny of
 * the daemon's own policy.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { binaryPath } from "../support/binary.ts";
import { collectStderr, eventually, SseReader, type SseMessage } from "../support/daemon.ts";

let dir: string;
let url: string;
let token: string;
let stop: () => Promise<void>;

/** A daemon on `root` with `policy` and the write_file and apply_patch tools. */
async function spawnDaemon(root: string, policy: unknown) {
  const config = join(root, "agentcore.json");
  writeFileSync(config, JSON.stringify({ policy }));
  const proc = Bun.spawn(
    [
      binaryPath(),
      "serve",
      "--port",
      "0",
      "--state-dir",
      join(root, "state"),
      "--root",
      root,
      "--config",
      config,
      "--tools",
      "write_file,apply_patch",
    ],
    { cwd: root, env: { PATH: process.env.PATH ?? "", HOME: root }, stdout: "ignore", stderr: "pipe" },
  );
  const err = collectStderr(proc);
  const text = await err.ready(/token file .+\n/);
  return {
    url: /serve: listening on (\S+)\n/.exec(text)![1]!,
    token: readFileSync(/token file (.+)\n/.exec(text)![1]!, "utf8").trim(),
    stop: async () => {
      if (proc.exitCode === null) proc.kill("SIGTERM");
      await err.exited;
    },
  };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "agentcore-run-tools-"));
  // The daemon's own policy: everything allowed but apply_patch, which is denied.
  ({ url, token, stop } = await spawnDaemon(dir, {
    default: "allow",
    rules: [{ id: "no-patch", action: "deny", tools: ["apply_patch"], reason: "patches are off here" }],
  }));
}, 120_000);
afterAll(async () => {
  await stop?.();
  rmSync(dir, { recursive: true, force: true });
});

const headers = () => ({ authorization: `Bearer ${token}`, "content-type": "application/json" });
const post = (json: unknown) => fetch(`${url}/v1/runs`, { method: "POST", headers: headers(), body: JSON.stringify(json) });
const get = async (path: string) => (await fetch(`${url}${path}`, { headers: headers() })).json();

/** A script: one call of `tool` with `args`, then a closing text. */
const callThen = (tool: string, args: unknown) => [
  { content: null, tool_calls: [{ id: "c1", name: tool, arguments: JSON.stringify(args) }] },
  { content: "done" },
];

/** Start a run and read its stream to the end. */
async function runToEnd(json: unknown): Promise<{ id: string; messages: SseMessage[] }> {
  const res = await post(json);
  expect(res.status).toBe(201);
  const id = res.headers.get("x-run-id")!;
  return { id, messages: await new SseReader(res).all() };
}

const completed = (messages: SseMessage[]) => messages.find((m) => m.event === "tool_completed")!.data as Record<string, any>;
const finished = (messages: SseMessage[]) => messages.find((m) => m.event === "agent_finished")!.data.result as Record<string, any>;

describe("tools", () => {
  test("a run limited to echo cannot call read_file: the model gets the usual unknown-tool error", async () => {
    writeFileSync(join(dir, "secret.txt"), "the secret");
    const { id, messages } = await runToEnd({ task: "read it", tools: ["echo"], script: callThen("read_file", { path: "secret.txt" }) });
    const tool = completed(messages);
    const content = String(tool.result.messages[0].content);
    expect(content).toContain("UNKNOWN_TOOL");
    expect(content).toContain('unknown tool \\"read_file\\"; available tools: echo');
    expect(content).not.toContain("the secret");
    expect(finished(messages)).toMatchObject({ status: "completed", output: "done" });
    const view = await get(`/v1/runs/${id}`);
    expect(view).toMatchObject({ tools: ["echo"], policy: "daemon" });
  });

  test("the tools it may use work; a run without tools may use all of them", async () => {
    const limited = await runToEnd({ task: "echo", tools: ["echo"], script: callThen("echo", { msg: "hi" }) });
    expect(completed(limited.messages).result.error).toBeNull();
    const all = await runToEnd({ task: "read it", script: callThen("read_file", { path: "secret.txt" }) });
    expect(String(completed(all.messages).result.messages[0].content)).toContain("the secret");
    expect(await get(`/v1/runs/${all.id}`)).toMatchObject({ tools: null, policy: "daemon" });
  });

  test("unknown tool names are a 400 naming them (and the daemon's tools); bad shapes name the member", async () => {
    const res = await post({ task: "x", tools: ["echo", "rm_rf", "../etc"], script: [{ content: "x" }] });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: string; message: string; details: Record<string, unknown> } };
    expect(body.error.code).toBe("INVALID_REQUEST");
    expect(body.error.details).toMatchObject({ location: "/tools", unknown: ["rm_rf", "../etc"] });
    expect(body.error.message).toContain('"rm_rf", "../etc"');
    expect(body.error.message).toContain("echo, read_file");
    for (const [tools, location] of [
      ["echo", "/tools"],
      [["echo", 3], "/tools/1"],
      [[""], "/tools/0"],
    ] as const) {
      const r = await post({ task: "x", tools, script: [{ content: "x" }] });
      expect(r.status).toBe(400);
      expect(((await r.json()) as { error: { details: { location: string } } }).error.details.location).toBe(location);
    }
    // nothing was started for them
    const { runs } = (await get("/v1/runs")) as { runs: { run_id: string }[] };
    expect(runs.length).toBe(3);
  });

  test("no tools at all: an empty list", async () => {
    const { messages } = await runToEnd({ task: "echo", tools: [], script: callThen("echo", { msg: "hi" }) });
    expect(String(completed(messages).result.messages[0].content)).toContain("available tools: (none)");
  });
});

describe("policy presets", () => {
  test("an unknown preset is a 400 listing the presets", async () => {
    const res = await post({ task: "x", policy: "yolo", script: [{ content: "x" }] });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { message: string; details: { location: string } } };
    expect(body.error.details.location).toBe("/policy");
    expect(body.error.message).toContain("daemon, read_only, ask");
  });

  test("read_only refuses a write (rule preset:read_only) and lets a read-only tool run", async () => {
    const { id, messages } = await runToEnd({
      task: "write",
      policy: "read_only",
      script: callThen("write_file", { path: "ro.txt", content: "no" }),
    });
    expect(existsSync(join(dir, "ro.txt"))).toBe(false);
    const tool = completed(messages);
    expect(tool.result.error).toContain('preset "read_only" refuses side-effecting tools');
    expect(finished(messages)).toMatchObject({ status: "rejected", stop_reason: "tool_rejected" });
    expect(String(tool.result.output)).toContain('"rule_id":"preset:read_only"');
    expect(await get(`/v1/runs/${id}`)).toMatchObject({ policy: "read_only" });
    const read = await runToEnd({ task: "read", policy: "read_only", script: callThen("read_file", { path: "secret.txt" }) });
    expect(String(completed(read.messages).result.messages[0].content)).toContain("the secret");
  });

  test("ask makes a write wait for an approval; approved, it is written", async () => {
    const res = await post({ task: "write", policy: "ask", script: callThen("write_file", { path: "asked.txt", content: "yes" }) });
    expect(res.status).toBe(201);
    const id = res.headers.get("x-run-id")!;
    const sse = new SseReader(res);
    const approval = await eventually(async () => {
      const { approvals } = (await get("/v1/approvals")) as { approvals: Record<string, any>[] };
      return approvals.find((a) => a.tool === "write_file");
    }, 50);
    expect(approval).toMatchObject({ rule_id: "preset:ask", effect: "side_effecting" });
    expect(existsSync(join(dir, "asked.txt"))).toBe(false);
    const answer = await fetch(`${url}/v1/approvals/${approval.approval_id}`, {
      method: "POST",
      headers: headers(),
      body: JSON.stringify({ approved: true }),
    });
    expect(answer.status).toBe(200);
    const messages = await sse.all();
    expect(finished(messages)).toMatchObject({ status: "completed", output: "done" });
    expect(readFileSync(join(dir, "asked.txt"), "utf8")).toBe("yes");
    expect(await get(`/v1/runs/${id}`)).toMatchObject({ policy: "ask" });
  });

  test("ask does not ask about a read-only tool", async () => {
    const { messages } = await runToEnd({ task: "echo", policy: "ask", script: callThen("echo", { msg: "hi" }) });
    expect(completed(messages).result.error).toBeNull();
  });

  test("a preset cannot lift the daemon's deny: apply_patch stays denied under ask and daemon, and nobody is asked", async () => {
    for (const policy of ["ask", "daemon"]) {
      const { messages } = await runToEnd({
        task: "patch",
        policy,
        script: callThen("apply_patch", { edits: [{ path: "secret.txt", old: "the", new: "a" }] }),
      });
      const tool = completed(messages);
      expect(tool.result.error).toBe("patches are off here");
      expect(String(tool.result.output)).toContain('"rule_id":"no-patch"');
      expect(messages.some((m) => m.event === "tool_approval_requested")).toBe(false);
    }
    // read_only refuses it first (its own reason): denied either way
    const ro = await runToEnd({
      task: "patch",
      policy: "read_only",
      script: callThen("apply_patch", { edits: [{ path: "secret.txt", old: "the", new: "a" }] }),
    });
    expect(completed(ro.messages).result.error).toContain("refuses side-effecting tools");
    expect(readFileSync(join(dir, "secret.txt"), "utf8")).toBe("the secret");
    expect(((await get("/v1/approvals")) as { approvals: unknown[] }).approvals).toEqual([]);
  });

  test("under a daemon policy that asks about writes: read_only refuses before anybody is asked; ask asks once, not twice", async () => {
    const root = mkdtempSync(join(tmpdir(), "agentcore-run-tools-ask-"));
    const d = await spawnDaemon(root, {
      default: "allow",
      rules: [{ id: "ask-writes", action: "require_approval", tools: ["write_file"] }],
    });
    const h = { authorization: `Bearer ${d.token}`, "content-type": "application/json" };
    const start = (json: unknown) => fetch(`${d.url}/v1/runs`, { method: "POST", headers: h, body: JSON.stringify(json) });
    const approvals = async () => ((await (await fetch(`${d.url}/v1/approvals`, { headers: h })).json()) as { approvals: any[] }).approvals;
    try {
      const ro = await start({ task: "w", policy: "read_only", script: callThen("write_file", { path: "a.txt", content: "x" }) });
      const roMessages = await new SseReader(ro).all();
      expect(completed(roMessages).result.error).toContain('preset "read_only" refuses side-effecting tools');
      expect(roMessages.some((m) => m.event === "tool_approval_requested")).toBe(false);
      expect(existsSync(join(root, "a.txt"))).toBe(false);

      const res = await start({ task: "w", policy: "ask", script: callThen("write_file", { path: "b.txt", content: "y" }) });
      const sse = new SseReader(res);
      const first = await eventually(async () => (await approvals())[0], 50);
      expect(first).toMatchObject({ tool: "write_file", rule_id: "ask-writes" });
      const answer = await fetch(`${d.url}/v1/approvals/${first.approval_id}`, { method: "POST", headers: h, body: '{"approved": true}' });
      expect(answer.status).toBe(200);
      const messages = await sse.all();
      expect(messages.filter((m) => m.event === "tool_approval_requested").length).toBe(1);
      expect(finished(messages)).toMatchObject({ status: "completed" });
      expect(readFileSync(join(root, "b.txt"), "utf8")).toBe("y");
    } finally {
      await d.stop();
      rmSync(root, { recursive: true, force: true });
    }
  }, 60_000);

  test("tools and policy together: a write tool left out is unknown, not asked about", async () => {
    const { messages } = await runToEnd({
      task: "write",
      policy: "ask",
      tools: ["echo", "read_file"],
      script: callThen("write_file", { path: "never.txt", content: "no" }),
    });
    expect(String(completed(messages).result.messages[0].content)).toContain("UNKNOWN_TOOL");
    expect(messages.some((m) => m.event === "tool_approval_requested")).toBe(false);
    expect(existsSync(join(dir, "never.txt"))).toBe(false);
  });
});
