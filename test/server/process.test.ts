/**
 * `agentcore serve` as a real child process: the printed URL and token file,
 * graceful shutdown on SIGTERM/SIGINT during a run (abort and finish modes)
 * with every journal record intact, a Unix socket with mode 0600, the
 * non-loopback warning, and usage errors.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, existsSync, writeFileSync } from "node:fs";
import { networkInterfaces, tmpdir } from "node:os";
import { join } from "node:path";
import { REPO_ROOT } from "../support/paths.ts";
import { binaryPath } from "../support/binary.ts";
import { JsonlSessionStorage } from "../../src/session/jsonl.ts";
import { collectStderr, rawRequest, SseReader } from "../support/daemon.ts";

const MAIN = join(REPO_ROOT, "src/cli/main.ts");
const dirs: string[] = [];
const procs: ReturnType<typeof Bun.spawn>[] = [];
afterEach(() => {
  for (const p of procs.splice(0)) if (p.exitCode === null) p.kill("SIGKILL");
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

interface Child {
  proc: ReturnType<typeof Bun.spawn>;
  url: string;
  token: string;
  tokenFile: string | null;
  dir: string;
  stderr: () => string;
  exited: Promise<number>;
}

/** Spawn `serve` (from source, or `exe` = the compiled binary) and wait for its "listening on" and token lines on stderr. */
async function spawnServe(args: string[], env: Record<string, string> = {}, exe: string[] = [process.execPath, MAIN]): Promise<Child> {
  const dir = mkdtempSync(join(tmpdir(), "agentcore-serve-proc-"));
  dirs.push(dir);
  const proc = Bun.spawn([...exe, "serve", "--state-dir", join(dir, "state"), "--root", dir, "--heartbeat-ms", "100", ...args], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? "", HOME: dir, ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  procs.push(proc);
  const err = collectStderr(proc);
  const text = await err.ready(/token (file .+|from AGENTCORE_TOKEN)\n/);
  const url = /serve: listening on (\S+)\n/.exec(text)![1]!;
  const file = /token file (.+)\n/.exec(text)?.[1] ?? null;
  const token = file !== null ? readFileSync(file, "utf8").trim() : env.AGENTCORE_TOKEN!;
  return { proc, url, token, tokenFile: file, dir, stderr: err.text, exited: err.exited };
}

const auth = (c: Child) => ({ authorization: `Bearer ${c.token}` });

function journal(c: Child, session: string) {
  const file = new JsonlSessionStorage(join(c.dir, ".agentcore", "sessions")).fileFor(session);
  const text = readFileSync(file, "utf8");
  expect(text.endsWith("\n")).toBe(true);
  return text
    .trimEnd()
    .split("\n")
    .map((l) => JSON.parse(l)); // every record whole
}

describe("agentcore serve (child process)", () => {
  test("prints its URL and a 0600 token file; SIGTERM during a slow tool aborts the run, flushes the journal and exits 0", async () => {
    const cfgDir = mkdtempSync(join(tmpdir(), "agentcore-serve-exec-"));
    dirs.push(cfgDir);
    const config = join(cfgDir, "agentcore.jsonc");
    writeFileSync(config, JSON.stringify({ tools: { exec: { allow: ["sleep"], env: ["PATH"], timeout_ms: 120_000, isolation: "off" } } }));
    const c = await spawnServe(["--port", "0", "--config", config]);
    expect(c.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(statSync(c.tokenFile!).mode & 0o777).toBe(0o600);
    expect(c.token).toMatch(/^[0-9a-f]{64}$/);
    const res = await fetch(`${c.url}/v1/runs`, {
      method: "POST",
      headers: { ...auth(c), "content-type": "application/json" },
      body: JSON.stringify({
        task: "work slowly",
        session: "job",
        script: [
          { content: "step 1", tool_calls: [{ id: "c1", name: "echo", arguments: '{"message":"one"}' }] },
          { content: "step 2", tool_calls: [{ id: "c2", name: "exec", arguments: '{"argv":["sleep","600"]}' }] },
          { content: "never said" },
        ],
      }),
    });
    expect(res.status).toBe(201);
    const sse = new SseReader(res);
    await sse.until((m) => m.event === "tool_started" && m.data.tool_call.name === "exec");
    c.proc.kill("SIGTERM");
    const finished = await sse.until((m) => m.event === "agent_finished");
    expect(finished!.data.result).toMatchObject({
      status: "cancelled",
      stop_reason: "external_abort",
      error: "the daemon is shutting down",
    });
    expect(await c.exited).toBe(0);
    expect(c.stderr()).toContain("SIGTERM: stopping");
    const records = journal(c, "job"); // every line parses
    expect(records.map((r) => r.revision)).toEqual(records.map((_, i) => i + 1));
    const types = records.map((r) => r.type);
    expect(types.slice(0, 4)).toEqual(["run_started", "message_appended", "messages_appended", "message_appended"]);
    expect(types.at(-1)).toBe("run_finished");
    expect(records.at(-1).data.result).toMatchObject({ status: "cancelled", stop_reason: "external_abort" });
    // the assistant turn that asked for the slow tool is on disk
    expect(JSON.stringify(records[3].data)).toContain("sleep");
  }, 60_000);

  test("SIGTERM during a slow POST /v1/calls (not a run): the call is cancelled and answered, its process killed, its history record written, exit 0", async () => {
    const cfgDir = mkdtempSync(join(tmpdir(), "agentcore-serve-call-"));
    dirs.push(cfgDir);
    const config = join(cfgDir, "agentcore.jsonc");
    const history = join(cfgDir, "history.jsonl");
    writeFileSync(
      config,
      JSON.stringify({ history, tools: { exec: { allow: ["sleep"], env: ["PATH"], timeout_ms: 3_600_000, isolation: "off" } } }),
    );
    const c = await spawnServe(["--port", "0", "--config", config, "--request-timeout-ms", "3600000"]);
    const marker = `3599.${process.pid}${Date.now() % 100000}`; // a sleep argument nobody else uses
    const answer = fetch(`${c.url}/v1/calls`, {
      method: "POST",
      headers: { ...auth(c), "content-type": "application/json" },
      body: JSON.stringify({ id: "slow1", tool: "exec", arguments: { argv: ["sleep", marker] } }),
    });
    const sleeping = () =>
      readdirSync("/proc")
        .filter((p) => /^\d+$/.test(p))
        .some((p) => {
          try {
            return readFileSync(`/proc/${p}/cmdline`, "utf8") === `sleep\0${marker}\0`;
          } catch {
            return false;
          }
        });
    while (!sleeping()) await Bun.sleep(20);
    c.proc.kill("SIGTERM");
    const res = await answer;
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ id: "slow1", success: false, error: { code: "CANCELLED" } });
    expect(await c.exited).toBe(0);
    expect(sleeping()).toBe(false);
    const records = readFileSync(history, "utf8")
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(records.at(-1)).toMatchObject({ tool: "exec", call_id: "slow1", success: false, code: "CANCELLED" });
  }, 60_000);

  test("--on-shutdown finish lets the run complete before exiting 0; new requests are refused meanwhile", async () => {
    const c = await spawnServe(["--port", "0", "--on-shutdown", "finish"]);
    const res = await fetch(`${c.url}/v1/runs`, {
      method: "POST",
      headers: { ...auth(c), "content-type": "application/json" },
      body: JSON.stringify({
        task: "finish me",
        session: "fin",
        script: [
          { content: null, tool_calls: [{ id: "c1", name: "echo", arguments: '{"message":"a"}' }] },
          { content: "all done", delay_ms: 800 },
        ],
      }),
    });
    const sse = new SseReader(res);
    await sse.until((m) => m.event === "turn_started" && m.data.turn === 2);
    c.proc.kill("SIGTERM");
    await Bun.sleep(100);
    const late = await fetch(`${c.url}/v1/tools`, { headers: auth(c) }).then(
      (r) => r.status,
      () => "refused",
    );
    expect(late === "refused" || late === 503).toBe(true);
    const done = await sse.until((m) => m.event === "done");
    expect(done!.data.result).toMatchObject({ status: "completed", output: "all done" });
    expect(await c.exited).toBe(0);
    const records = journal(c, "fin");
    expect(records.at(-1)).toMatchObject({ type: "run_finished", data: { result: { status: "completed" } } });
  }, 60_000);

  test("in finish mode a second SIGTERM aborts the run at once; the journal still ends with run_finished and the exit is 0", async () => {
    const c = await spawnServe(["--port", "0", "--on-shutdown", "finish", "--shutdown-grace-ms", "600000"]);
    const res = await fetch(`${c.url}/v1/runs`, {
      method: "POST",
      headers: { ...auth(c), "content-type": "application/json" },
      body: JSON.stringify({
        task: "long",
        session: "twice",
        script: [
          { content: null, tool_calls: [{ id: "c1", name: "echo", arguments: "{}" }] },
          { content: "never", delay_ms: 600_000 },
        ],
      }),
    });
    const sse = new SseReader(res);
    await sse.until((m) => m.event === "turn_started" && m.data.turn === 2);
    c.proc.kill("SIGTERM");
    while (!c.stderr().includes("SIGTERM: stopping")) await Bun.sleep(10);
    c.proc.kill("SIGTERM");
    const finished = await sse.until((m) => m.event === "agent_finished");
    expect(finished!.data.result).toMatchObject({ status: "cancelled", error: "the daemon is shutting down (second signal)" });
    expect(await c.exited).toBe(0);
    expect(c.stderr()).toContain("SIGTERM again: aborting 1 run(s) and call(s) now");
    expect(journal(c, "twice").at(-1)).toMatchObject({ type: "run_finished", data: { result: { status: "cancelled" } } });
  }, 60_000);

  test("--unix PATH listens on a 0600 socket; SIGINT exits 0 and removes it", async () => {
    const sockDir = mkdtempSync(join(tmpdir(), "agentcore-sock-"));
    dirs.push(sockDir);
    const sock = join(sockDir, "d.sock");
    const c = await spawnServe(["--unix", sock]);
    expect(c.url).toBe(`unix:${sock}`);
    expect(statSync(sock).isSocket()).toBe(true);
    expect(statSync(sock).mode & 0o777).toBe(0o600);
    const r = await fetch("http://localhost/v1/calls", {
      unix: sock,
      method: "POST",
      headers: { ...auth(c), "content-type": "application/json" },
      body: '{"id":"u1","tool":"echo","arguments":{"message":"over a socket"}}',
    } as RequestInit);
    expect(r.status).toBe(200);
    expect(await r.json()).toMatchObject({ id: "u1", success: true, result: { message: "over a socket" } });
    const noToken = await fetch("http://localhost/v1/tools", { unix: sock } as RequestInit);
    expect(noToken.status).toBe(401);
    c.proc.kill("SIGINT");
    expect(await c.exited).toBe(0);
    expect(existsSync(sock)).toBe(false);
  }, 60_000);

  test("AGENTCORE_TOKEN replaces the token file; a non-loopback --host prints a warning", async () => {
    const token = "t".repeat(48);
    const c = await spawnServe(["--host", "0.0.0.0", "--port", "0"], { AGENTCORE_TOKEN: token });
    expect(c.stderr()).toContain("WARNING: listening on 0.0.0.0, which is not loopback");
    expect(c.stderr()).toContain("token from AGENTCORE_TOKEN");
    expect(existsSync(join(c.dir, "state", "token"))).toBe(false);
    const port = new URL(c.url.replace("0.0.0.0", "127.0.0.1")).port;
    const r = await fetch(`http://127.0.0.1:${port}/v1/tools`, { headers: { authorization: `Bearer ${token}` } });
    expect(r.status).toBe(200);
    c.proc.kill("SIGTERM");
    expect(await c.exited).toBe(0);
  }, 60_000);

  // An explicit non-loopback --host accepts its own name as Host, with the
  // port it really got (here --port 0). Needs a non-loopback IPv4 address.
  const lanAddress = Object.values(networkInterfaces())
    .flat()
    .find((a) => a !== undefined && a.family === "IPv4" && !a.internal)?.address;
  test.skipIf(lanAddress === undefined)(
    "a non-loopback --host with --port 0 accepts Host <that address>:<bound port>, and still refuses other names",
    async () => {
      const c = await spawnServe(["--host", lanAddress!, "--port", "0"]);
      expect(c.stderr()).toContain(`WARNING: listening on ${lanAddress}`);
      const port = Number(new URL(c.url).port);
      expect(port).toBeGreaterThan(0);
      const ok = await fetch(`${c.url}/v1/tools`, { headers: auth(c) });
      expect(ok.status).toBe(200);
      await ok.text();
      const evil = await rawRequest(
        port,
        `GET /v1/tools HTTP/1.1\r\nHost: evil.example:${port}\r\nAuthorization: Bearer ${c.token}\r\nConnection: close`,
        "",
        lanAddress,
      );
      expect(evil.status).toBe(403);
      c.proc.kill("SIGTERM");
      expect(await c.exited).toBe(0);
    },
    60_000,
  );

  test("--tools, --skills and the config's mcpServers: a real MCP peer's tools are callable over /v1/calls, a skill activates", async () => {
    const dir = mkdtempSync(join(tmpdir(), "agentcore-serve-cfg-"));
    dirs.push(dir);
    writeFileSync(join(dir, "note.txt"), "from the filesystem server");
    const fsServer = join(REPO_ROOT, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    const config = join(dir, "agentcore.jsonc");
    writeFileSync(config, JSON.stringify({ mcpServers: { fs: { command: process.execPath, args: [fsServer, dir] } } }));
    const c = await spawnServe(["--port", "0", "--config", config, "--tools", "read", "--skills", join(REPO_ROOT, "examples/skills")]);
    const names: string[] = (await (await fetch(`${c.url}/v1/tools`, { headers: auth(c) })).json()).tools.map(
      (t: { name: string }) => t.name,
    );
    expect(names).toEqual(expect.arrayContaining(["echo", "read_file", "list_dir", "glob", "grep", "git_diff"]));
    const remote = names.find((n) => n.includes("read_text_file") || (n.includes("read_file") && n !== "read_file"));
    expect(remote).toBeDefined();
    const r = await fetch(`${c.url}/v1/calls`, {
      method: "POST",
      headers: { ...auth(c), "content-type": "application/json" },
      body: JSON.stringify({ id: "m1", tool: remote, arguments: { path: join(dir, "note.txt") } }),
    });
    const env = await r.json();
    expect(env).toMatchObject({ id: "m1", success: true });
    expect(JSON.stringify(env.result)).toContain("from the filesystem server");
    // --skills: a task naming $commit-message activates that skill
    const run = await fetch(`${c.url}/v1/runs`, {
      method: "POST",
      headers: { ...auth(c), "content-type": "application/json" },
      body: JSON.stringify({ task: "use $commit-message for this change", script: [{ content: "feat: x" }] }),
    });
    const events = await new SseReader(run).all();
    expect(events.find((m) => m.event === "skill_activated")?.data).toMatchObject({ name: "commit-message", trigger: "run_start" });
    c.proc.kill("SIGTERM");
    expect(await c.exited).toBe(0);
  }, 60_000);

  test("the compiled single binary serves too: a scripted run over SSE, then SIGTERM exits 0", async () => {
    const c = await spawnServe(["--port", "0"], {}, [binaryPath()]);
    const res = await fetch(`${c.url}/v1/runs`, {
      method: "POST",
      headers: { ...auth(c), "content-type": "application/json" },
      body: JSON.stringify({
        task: "t",
        script: [{ content: null, tool_calls: [{ id: "c1", name: "echo", arguments: '{"from":"binary"}' }] }, { content: "done" }],
      }),
    });
    const all = await new SseReader(res).all();
    expect(all.find((m) => m.event === "tool_completed")!.data.result.error).toBeNull();
    expect(all.at(-1)!.data.result).toMatchObject({ status: "completed", output: "done" });
    const openapi = await (await fetch(`${c.url}/v1/openapi.json`, { headers: auth(c) })).json();
    expect(openapi.paths["/v1/runs"]).toBeDefined();
    c.proc.kill("SIGTERM");
    expect(await c.exited).toBe(0);
  }, 120_000);

  test("usage errors exit 2 with a message; --help exits 0", async () => {
    const dir = mkdtempSync(join(tmpdir(), "agentcore-serve-usage-"));
    dirs.push(dir);
    const run = (args: string[]) =>
      Bun.spawnSync([process.execPath, MAIN, "serve", "--state-dir", join(dir, "state"), ...args], {
        env: { PATH: process.env.PATH ?? "", HOME: dir },
      });
    for (const [args, msg] of [
      [["--port", "http"], "--port expects an integer, got 'http'"],
      [["--port", "70000"], "--port must be between 0 and 65535"],
      [["--unix", "/tmp/x.sock", "--port", "1"], "--unix replaces --host and --port"],
      [["--on-shutdown", "later"], "--on-shutdown must be abort or finish"],
      [["--bogus"], "unknown option --bogus"],
      [["--root", "/nonexistent-dir-xyz"], "root /nonexistent-dir-xyz: no such folder"],
      [["--allow-origin", "evil"], "not an http(s) origin"],
      [["--allow-host", "two words"], "is not a host name"],
      [["--tools", "rm_rf"], "unknown tool"],
      [["--skills", "/nonexistent-skills-xyz"], "nonexistent-skills-xyz"],
    ] as const) {
      const r = run([...args]);
      expect(r.exitCode).toBe(2);
      expect(r.stderr.toString()).toContain(msg);
    }
    // a port already in use is reported, not thrown; the token file of the
    // daemon already there is left alone (a failed start writes no token)
    const busy = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("x") });
    const tokenFile = join(dir, "state", "token");
    mkdirSync(join(dir, "state"), { recursive: true, mode: 0o700 });
    writeFileSync(tokenFile, "f".repeat(64) + "\n", { mode: 0o600 });
    try {
      const r = run(["--port", String(busy.port)]);
      expect(r.exitCode).toBe(2);
      expect(r.stderr.toString()).toContain(`cannot listen on 127.0.0.1:${busy.port}`);
      expect(r.stderr.toString()).not.toContain("    at ");
      expect(readFileSync(tokenFile, "utf8")).toBe("f".repeat(64) + "\n");
      const sockFile = join(dir, "not-a-socket");
      writeFileSync(sockFile, "");
      const u = run(["--unix", sockFile]);
      expect(u.exitCode).toBe(2);
      expect(u.stderr.toString()).toContain("is not a socket");
      expect(readFileSync(tokenFile, "utf8")).toBe("f".repeat(64) + "\n");
    } finally {
      busy.stop(true);
    }
    const h = run(["--help"]);
    expect(h.exitCode).toBe(0);
    expect(h.stdout.toString()).toContain("--on-shutdown abort|finish");
    const top = Bun.spawnSync([process.execPath, MAIN, "--help"]);
    expect(top.stdout.toString()).toContain("  serve     run the local API daemon");
  }, 60_000);
});
