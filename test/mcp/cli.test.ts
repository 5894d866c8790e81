/**
 * The CLI side of MCP: `agentcore mcp` driven by the SDK's own v2 `Client`
 * (from source via bun, and the compiled binary), and `mcpServers` in the
 * config of `tools` / `execute` / `run`, with every child process checked gone.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { binaryPath } from "../support/binary.ts";
import { alive, FIXTURE, logLines, NODE, REPO, until } from "../support/mcp.ts";
import { tmp } from "../support/tmp.ts";

const MAIN = join(REPO, "src/cli/main.ts");
// Tests start the CLI; on a loaded machine one start can take seconds (bun's default is 5 s).
setDefaultTimeout(60_000);
const BUN = process.execPath;
let dir: string;
let n = 0;
beforeAll(() => {
  dir = tmp("agentcore-mcp-cli-");
  writeFileSync(join(dir, "note.txt"), "the word is ibis\n");
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const ENV = { PATH: process.env.PATH ?? "/usr/bin:/bin" };

/** A config file with a fixture MCP server (logging to its own file) and optional extras. */
function config(extra: Record<string, unknown> = {}, server: Record<string, unknown> = {}): { path: string; log: string } {
  const log = join(dir, `fixture-${++n}.log`);
  const path = join(dir, `config-${n}.jsonc`);
  const cfg = {
    root: dir,
    mcpServers: { fx: { command: NODE, args: [FIXTURE], env: { FIXTURE_LOG: log }, ...server } },
    ...extra,
  };
  writeFileSync(path, `// test config\n${JSON.stringify(cfg, null, 2)}\n`);
  return { path, log };
}

const pids = (log: string) =>
  logLines(log)
    .filter((l) => l.startsWith("start "))
    .map((l) => Number(l.split(" ")[1]));

async function cli(argv: string[], opts: { bin?: string } = {}) {
  const cmd = opts.bin !== undefined ? [opts.bin, ...argv] : [BUN, MAIN, ...argv];
  const p = Bun.spawn(cmd, { cwd: dir, stdin: "ignore", stdout: "pipe", stderr: "pipe", env: ENV });
  const [stdout, stderr, status] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { status, stdout, stderr };
}

const POLICY = {
  default: "allow",
  rules: [
    { id: "no-echo", action: "deny", tools: ["echo"], reason: "echo is switched off" },
    { id: "ask-count", action: "require_approval", tools: ["fx__count"] },
  ],
};

async function connect(cmd: string[]): Promise<{ client: Client; transport: StdioClientTransport }> {
  const transport = new StdioClientTransport({ command: cmd[0]!, args: cmd.slice(1), env: ENV, cwd: dir, stderr: "pipe" });
  const client = new Client({ name: "test", version: "1.0.0" });
  await client.connect(transport);
  return { client, transport };
}

type Text = { type: string; text: string };

for (const mode of ["source", "binary"] as const) {
  describe(`agentcore mcp (${mode}) with the SDK's Client`, () => {
    let client: Client;
    let transport: StdioClientTransport;
    let log: string;
    beforeAll(async () => {
      const c = config({ policy: POLICY });
      log = c.log;
      const cmd = mode === "binary" ? [binaryPath(), "--config", c.path, "mcp"] : [BUN, MAIN, "--config", c.path, "mcp"];
      ({ client, transport } = await connect(cmd));
    }, 120_000);

    test("lists the built-ins and the configured server's tools, with effects as annotations", async () => {
      const { tools } = await client.listTools();
      const names = tools.map((t) => t.name);
      expect(names).toContain("echo");
      expect(names).toContain("read_file");
      expect(names).toContain("fx__count");
      const rf = tools.find((t) => t.name === "read_file")!;
      expect(rf.annotations?.readOnlyHint).toBe(true);
      expect(rf.inputSchema.type).toBe("object");
      expect(tools.find((t) => t.name === "fx__slow")!.annotations?.readOnlyHint).toBe(false);
    });

    test("a successful call: the result as JSON text and as structured content", async () => {
      const r = await client.callTool({ name: "read_file", arguments: { path: "note.txt" } });
      expect(r.isError).toBeFalsy();
      const sc = r.structuredContent as { content: string };
      expect(sc.content).toBe("the word is ibis\n");
      expect(JSON.parse((r.content as Text[])[0]!.text)).toEqual(sc);
    });

    test("a tool of the configured MCP server, proxied", async () => {
      const r = await client.callTool({ name: "fx__image", arguments: {} });
      expect((r.structuredContent as { structured_content: unknown }).structured_content).toEqual({ width: 1, height: 1 });
    });

    test("the policy applies: a denied tool is an isError result carrying DENIED", async () => {
      const r = await client.callTool({ name: "echo", arguments: { a: 1 } });
      expect(r.isError).toBe(true);
      const env = JSON.parse((r.content as Text[])[0]!.text);
      expect(env).toMatchObject({ success: false, tool: "echo", error: { code: "DENIED" } });
      expect(env.error.message).toContain("echo is switched off");
      expect((r.structuredContent as { error: { code: string } }).error.code).toBe("DENIED");
    });

    test("require_approval fails closed over stdio (no terminal): DENIED, and the server never sees the call", async () => {
      const r = await client.callTool({ name: "fx__count", arguments: {} });
      expect(r.isError).toBe(true);
      expect((r.structuredContent as { error: { code: string } }).error.code).toBe("DENIED");
      expect(logLines(log).some((l) => l.startsWith("call count"))).toBe(false);
    });

    test("schema validation applies: INVALID_ARGUMENTS; an unknown tool is UNKNOWN_TOOL", async () => {
      const bad = await client.callTool({ name: "fx__slow", arguments: { ms: "soon" } });
      expect((bad.structuredContent as { error: { code: string } }).error.code).toBe("INVALID_ARGUMENTS");
      const unknown = await client.callTool({ name: "no_such_tool", arguments: {} });
      expect(unknown.isError).toBe(true);
      expect((unknown.structuredContent as { error: { code: string } }).error.code).toBe("UNKNOWN_TOOL");
    });

    test("the client's cancellation travels through agentcore to the MCP server behind it", async () => {
      const ac = new AbortController();
      const p = client.callTool({ name: "fx__slow", arguments: { ms: 60_000 } }, { signal: ac.signal }).then(
        () => null,
        (e) => e,
      );
      await until(() => logLines(log).some((l) => l.startsWith("call slow ")), "the call to reach the fixture");
      ac.abort();
      expect(await p).toBeInstanceOf(Error);
      const id = logLines(log)
        .find((l) => l.startsWith("call slow "))!
        .split(" ")[2];
      await until(() => logLines(log).includes(`cancelled ${id}`), "the cancellation to reach the fixture");
    });

    test("closing the client ends agentcore mcp and the MCP server it started", async () => {
      const ours = transport.pid!;
      const theirs = pids(log);
      expect(theirs).toHaveLength(1);
      await client.close();
      await until(() => !alive(ours), "agentcore mcp to exit");
      await until(() => !alive(theirs[0]!), "the fixture server to exit");
    }, 20_000);
  });
}

/** Read the child's stdout until `enough(text)`, then close its stdin and read to the end. */
async function readUntilThenClose(
  p: { stdout: ReadableStream<Uint8Array>; stdin: { end(): unknown } },
  enough: (text: string) => boolean,
): Promise<string> {
  const reader = p.stdout.getReader();
  const dec = new TextDecoder();
  let text = "";
  let closed = false;
  for (;;) {
    if (!closed && enough(text)) {
      p.stdin.end();
      closed = true;
    }
    const { value, done } = await reader.read();
    if (done) break;
    text += dec.decode(value, { stream: true });
  }
  if (!closed) p.stdin.end();
  return text + dec.decode();
}

describe("agentcore mcp on the wire", () => {
  test("stdout carries only JSON-RPC lines; logs go to stderr", async () => {
    const c = config();
    const p = Bun.spawn([BUN, MAIN, "--config", c.path, "mcp"], {
      cwd: dir,
      stdin: "pipe",
      stdout: "pipe",
      stderr: "pipe",
      env: { ...ENV, AGENTCORE_LOG_LEVEL: "debug" },
    });
    const msgs = [
      {
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "0" } },
      },
      { jsonrpc: "2.0", method: "notifications/initialized" },
      { jsonrpc: "2.0", id: 2, method: "tools/list" },
      { jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "fx__count", arguments: {} } },
    ];
    for (const m of msgs) p.stdin.write(JSON.stringify(m) + "\n");
    const text = await readUntilThenClose(p, (t) => t.includes('"id":3'));
    const [status, stderr] = await Promise.all([p.exited, new Response(p.stderr).text()]);
    expect(status).toBe(0);
    const lines = text.trimEnd().split("\n");
    expect(lines.length).toBe(3);
    for (const l of lines) expect(JSON.parse(l).jsonrpc).toBe("2.0");
    expect(JSON.parse(lines[2]!).result.structuredContent.content[0].text).toBe("1");
    expect(stderr).toContain("mcp: serving tools over stdio");
    for (const pid of pids(c.log)) expect(alive(pid)).toBe(false);
  }, 20_000);
});

describe("agentcore mcp --history", () => {
  test("served calls, proxied ones included, are appended to the history log (as --help says)", async () => {
    const c = config();
    const history = join(dir, "mcp-history.jsonl");
    const { client } = await connect([BUN, MAIN, "--config", c.path, "--history", history, "mcp"]);
    try {
      expect((await client.callTool({ name: "echo", arguments: { a: 1 } })).isError).toBeFalsy();
      expect((await client.callTool({ name: "fx__fail", arguments: {} })).isError).toBe(true);
    } finally {
      await client.close();
    }
    const lines = logLines(history).map((l) => JSON.parse(l) as { tool: string; call_id: string; success: boolean; code: string | null });
    expect(lines.map((l) => [l.tool, l.success, l.code])).toEqual([
      ["echo", true, null],
      ["fx__fail", false, "TOOL_ERROR"],
    ]);
    for (const l of lines) expect(l.call_id).toMatch(/^mcp-\d+$/);
  }, 20_000);
});

describe("mcpServers in the config of tools, execute and run", () => {
  test("tools lists the server's tools; the server process is gone when the command returns", async () => {
    const c = config();
    const r = await cli(["--config", c.path, "tools", "--json"]);
    expect(r.status).toBe(0);
    const names = (JSON.parse(r.stdout) as { name: string }[]).map((t) => t.name);
    expect(names).toEqual(["echo", "read_file", "fx__count", "fx__slow", "fx__huge", "fx__fail", "fx__image"]);
    const [pid] = pids(c.log);
    expect(alive(pid!)).toBe(false);
  }, 20_000);

  test("run dispatches calls to the MCP server on one connection (binary)", async () => {
    const c = config();
    const calls = join(dir, "calls.jsonl");
    writeFileSync(
      calls,
      [
        '{"id":"a","tool":"fx__count","arguments":{}}',
        '{"id":"b","tool":"fx__count","arguments":{}}',
        '{"id":"c","tool":"fx__fail","arguments":{}}',
      ].join("\n") + "\n",
    );
    const r = await cli(["--config", c.path, "run", calls], { bin: binaryPath() });
    expect(r.status).toBe(1);
    const envs = r.stdout
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(envs.map((e) => e.result?.structured_content?.calls ?? e.error.code)).toEqual([1, 2, "TOOL_ERROR"]);
    expect(pids(c.log)).toHaveLength(1);
    expect(alive(pids(c.log)[0]!)).toBe(false);
  }, 120_000);

  test("execute without mcpServers loads neither the MCP SDK nor the MCP client", async () => {
    // The compiled binary has everything bundled; from source we can see which modules load.
    const probe = join(dir, "probe.ts");
    writeFileSync(
      probe,
      `import { main } from ${JSON.stringify(MAIN)};\n` +
        `await main(["execute", '{"id":"1","tool":"echo","arguments":{}}']);\n` +
        `const loaded = Object.keys(require.cache).filter((k) => k.includes("modelcontextprotocol") || k.includes("/src/mcp/")).sort();\n` +
        `process.stderr.write("LOADED " + JSON.stringify(loaded) + "\\n");\n`,
    );
    const p = Bun.spawn([BUN, probe], { cwd: dir, stdout: "pipe", stderr: "pipe", env: ENV });
    const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    expect(JSON.parse(out).success).toBe(true);
    // only the (SDK-free) config checker and its generated validator, which the config loader uses
    expect(err).toContain(
      `LOADED ${JSON.stringify([join(REPO, "src/mcp/config.ts"), join(REPO, "src/mcp/config.validator.generated.ts")])}`,
    );
  }, 20_000);

  test("a bad mcpServers entry is a config error naming the key (exit 2)", async () => {
    const c = config({}, { comand: "typo" });
    const r = await cli(["--config", c.path, "tools"]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('unknown key "mcpServers.fx.comand"');
    expect(r.stdout).toBe("");
  });

  test("a tool name collision is a clear startup error (exit 2), and the server is stopped", async () => {
    const c = config({}, { prefix: "", env: { FIXTURE_EXTRA: "read_file" } });
    const r = await cli(["--config", c.path, "execute", '{"id":"1","tool":"echo","arguments":{}}']);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('agentcore: mcp server "fx": its tool "read_file" collides with the already registered tool "read_file"');
    expect(r.stdout).toBe("");
  }, 20_000);

  test("a server hanging at start-up: connect timeout error (exit 2), no process left", async () => {
    const c = config({}, { args: [FIXTURE, "hang"], connect_timeout_ms: 300 });
    // the hang fixture logs its pid only if FIXTURE_LOG is set: it is (env of the server entry)
    const r = await cli(["--config", c.path, "tools"]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('mcp server "fx": no answer to initialize within 300 ms (connect_timeout_ms)');
    const [pid] = pids(c.log);
    expect(alive(pid!)).toBe(false);
  }, 20_000);

  test("a server that exits at once (binary): the error names its exit status and quotes its stderr", async () => {
    const c = config({}, { args: ["-e", "console.error('boom: missing API key'); process.exit(3)"] });
    const r = await cli(["--config", c.path, "tools"], { bin: binaryPath() });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(
      'mcp server "fx" exited with status 3 before it answered initialize; last stderr lines: boom: missing API key',
    );
    expect(r.stderr).not.toContain("Connection closed");
    expect(r.stdout).toBe("");
  }, 120_000);

  test("a server killed by a signal before answering, with control characters on stderr: the signal is named, the bytes escaped", async () => {
    const c = config(
      {},
      { args: ["-e", "process.stderr.write('first\\n\\u001b[2Jsecond\\u0007\\n', () => process.kill(process.pid, 'SIGKILL'))"] },
    );
    const r = await cli(["--config", c.path, "tools"]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(
      'mcp server "fx" exited with signal SIGKILL before it answered initialize; last stderr lines: first | \\u001b[2Jsecond\\u0007',
    );
    expect(r.stderr).not.toContain("\u001b");
  });

  test("a server that writes nothing and exits 0 before answering says so", async () => {
    const c = config({}, { args: ["-e", "process.exit(0)"] });
    const r = await cli(["--config", c.path, "tools"]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('mcp server "fx" exited with status 0 before it answered initialize; it wrote nothing to stderr');
  });

  test("only the last stderr lines are quoted, however much the server wrote", async () => {
    const c = config(
      {},
      {
        args: [
          "-e",
          "let s = ''; for (let i = 0; i < 5000; i++) s += 'noise ' + i + '\\n'; process.stderr.write(s + 'the real reason\\n', () => process.exit(1))",
        ],
      },
    );
    const r = await cli(["--config", c.path, "tools"]);
    expect(r.status).toBe(2);
    const line = r.stderr.split("\n").find((l) => l.includes("exited with status 1"))!;
    expect(line).toContain("noise 4999 | the real reason");
    expect(line).not.toContain("noise 4989 ");
    expect(line.length).toBeLessThan(1300);
  });

  test("a server that dies during a call (binary): UNAVAILABLE names its exit status and quotes its stderr", async () => {
    const c = config({}, { env: { FIXTURE_LOG: join(dir, "die.log"), FIXTURE_EXTRA: "die" } });
    const r = await cli(["--config", c.path, "execute", '{"id":"d1","tool":"fx__die","arguments":{}}'], { bin: binaryPath() });
    const env = JSON.parse(r.stdout.trim());
    expect(env.success).toBe(false);
    expect(env.error.code).toBe("UNAVAILABLE");
    expect(env.error.message).toBe(
      'mcp server "fx" was lost during the call (the server process exited with status 4; last stderr lines: fixture: lost the database | \\u001b[2Jfixture: giving up); the call was not retried',
    );
    for (const pid of pids(join(dir, "die.log"))) expect(alive(pid)).toBe(false);
  }, 120_000);
});

describe("agent with MCP tools", () => {
  test("a scripted agent run calls a tool of the configured MCP server; the server stops with the run", async () => {
    const c = config({}, { effect: "read_only" });
    const script = join(dir, "agent-script.jsonl");
    writeFileSync(
      script,
      [
        { content: null, tool_calls: [{ id: "call_1", name: "fx__count", arguments: "{}" }] },
        { content: "The server has served one call." },
      ]
        .map((l) => JSON.stringify(l))
        .join("\n") + "\n",
    );
    const r = await cli(["--config", c.path, "agent", "--script", script, "--events", "jsonl", "How many calls?"]);
    expect(r.status).toBe(0);
    const events = r.stdout
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l) as { kind: string; [k: string]: unknown });
    const done = events.find((e) => e.kind === "tool_completed") as
      | { result: { messages: { role: string; content: string }[] } }
      | undefined;
    // the tool message the model saw: the mapped MCP result
    const message = done!.result.messages[0]!;
    expect(message.role).toBe("tool");
    expect(JSON.parse(message.content).structured_content).toMatchObject({ calls: 1 });
    expect(events.at(-1)).toMatchObject({ kind: "agent_finished", result: { status: "completed" } });
    expect(logLines(c.log).filter((l) => l.startsWith("call count"))).toHaveLength(1);
    expect(alive(pids(c.log)[0]!)).toBe(false);
  }, 30_000);
});

describe("usage", () => {
  test("--help documents the mcp command and the mcpServers key", async () => {
    const r = await cli(["--help"]);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain("  mcp       serve the registered tools to an MCP client over stdio");
    const m = await cli(["mcp", "--help"]);
    expect(m.status).toBe(0);
    expect(m.stdout).toContain("Usage: agentcore mcp [options]");
    expect(m.stdout).toContain("mcpServers");
  });

  test("mcp takes no arguments", async () => {
    const r = await cli(["mcp", "serve"]);
    expect(r.status).toBe(2);
    expect(r.stderr).toBe("agentcore mcp: unexpected argument 'serve': mcp takes no arguments\nRun 'agentcore mcp --help' for usage.\n");
  });
});

describe("signals", () => {
  for (const [sig, status] of [
    ["SIGTERM", 143],
    ["SIGINT", 130],
  ] as const) {
    test(`${sig} while 'run -' waits for input: the servers are stopped (even one that ignores stdin's end and SIGTERM), exit ${status}`, async () => {
      const c = config({}, { args: [FIXTURE, "stubborn"] });
      const p = Bun.spawn([BUN, MAIN, "--config", c.path, "run", "-"], {
        cwd: dir,
        stdin: "pipe",
        stdout: "pipe",
        stderr: "pipe",
        env: ENV,
      });
      p.stdin.write('{"id":"1","tool":"fx__count","arguments":{}}\n');
      p.stdin.flush();
      const reader = p.stdout.getReader();
      const first = new TextDecoder().decode((await reader.read()).value);
      expect(JSON.parse(first).result.structured_content.calls).toBe(1);
      const [server] = pids(c.log);
      p.kill(sig);
      expect(await p.exited).toBe(status);
      await until(() => !alive(server!), "the stubborn server to be killed");
    }, 20_000);
  }
  for (const [sig, status] of [
    ["SIGTERM", 143],
    ["SIGINT", 130],
  ] as const) {
    test(`${sig} while a server hangs at start-up: the server (which ignores stdin and SIGTERM) is stopped, exit ${status}`, async () => {
      const c = config({}, { args: [FIXTURE, "hang"], connect_timeout_ms: 600_000 });
      const p = Bun.spawn([BUN, MAIN, "--config", c.path, "tools"], {
        cwd: dir,
        stdin: "ignore",
        stdout: "pipe",
        stderr: "pipe",
        env: ENV,
      });
      await until(() => pids(c.log).length === 1, "the hanging server to start");
      p.kill(sig);
      const [status_, stderr] = await Promise.all([p.exited, new Response(p.stderr).text()]);
      expect(status_).toBe(status);
      expect(stderr).not.toContain("no answer to initialize");
      await until(() => !alive(pids(c.log)[0]!), "the hanging server to be stopped");
    }, 20_000);
  }
  test("SIGTERM to 'agentcore serve' while a server hangs at start-up: the server is stopped, exit 143, nothing listens", async () => {
    const c = config({}, { args: [FIXTURE, "hang"], connect_timeout_ms: 600_000 });
    const p = Bun.spawn([BUN, MAIN, "serve", "--config", c.path, "--port", "0", "--state-dir", join(dir, "state")], {
      cwd: dir,
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
      env: { ...ENV, AGENTCORE_TOKEN: "t".repeat(64) },
    });
    await until(() => pids(c.log).length === 1, "the hanging server to start");
    p.kill("SIGTERM");
    const [status, stderr] = await Promise.all([p.exited, new Response(p.stderr).text()]);
    expect(status).toBe(143);
    expect(stderr).not.toContain("listening on");
    await until(() => !alive(pids(c.log)[0]!), "the hanging server to be stopped");
  }, 20_000);
  test("SIGTERM while the exec tool runs a command, with MCP servers configured: not ignored; exit 143, command and servers stopped", async () => {
    // Both clean-up helpers (the MCP servers' and exec's children's) listen to the
    // ending signals; each stood aside for the other, so the signal was ignored.
    const root = mkdtempSync(join(dir, "exec-root-"));
    const c = config(
      { root, tools: { exec: { allow: ["sleep"], env: ["PATH"], timeout_ms: 60_000, isolation: "off" } } },
      { args: [FIXTURE, "stubborn"] },
    );
    const p = Bun.spawn(
      [BUN, MAIN, "--config", c.path, "--tools", "exec", "execute", '{"id":"1","tool":"exec","arguments":{"argv":["sleep","45"]}}'],
      { cwd: dir, stdin: "ignore", stdout: "pipe", stderr: "pipe", env: ENV },
    );
    const childSleep = (): number | undefined => {
      for (const e of readdirSync("/proc")) {
        if (!/^\d+$/.test(e)) continue;
        try {
          const stat = readFileSync(`/proc/${e}/stat`, "utf8");
          const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
          if (stat.includes("(sleep)") && Number(fields[1]) === p.pid) return Number(e);
        } catch {
          // gone meanwhile
        }
      }
      return undefined;
    };
    let sleeper: number | undefined;
    await until(() => (sleeper = childSleep()) !== undefined, "exec's sleep to start");
    const [server] = pids(c.log);
    p.kill("SIGTERM");
    expect(await p.exited).toBe(143);
    await until(() => !alive(sleeper!), "exec's command to be killed");
    await until(() => !alive(server!), "the stubborn MCP server to be killed");
  }, 30_000);
  test("SIGTERM to 'agentcore mcp': it stops serving, exits, and stops its servers", async () => {
    const c = config({}, { args: [FIXTURE, "stubborn"] });
    const { client, transport } = await connect([BUN, MAIN, "--config", c.path, "mcp"]);
    expect((await client.listTools()).tools.length).toBeGreaterThan(2);
    const ours = transport.pid!;
    const [server] = pids(c.log);
    const exited = new Promise<void>((r) => (transport.onclose = () => r()));
    process.kill(ours, "SIGTERM");
    await exited;
    await until(() => !alive(ours), "agentcore mcp to exit");
    await until(() => !alive(server!), "the stubborn server to be killed");
    await client.close();
  }, 20_000);
});

describe("agentcore mcp reads JSON-RPC as strictly as execute", () => {
  // One raw exchange: each request line, then the answers until every id is back.
  async function exchange(
    lines: (string | Uint8Array)[],
    expectIds: number,
    extraArgs: string[] = [],
  ): Promise<{ answers: Record<string, unknown>[]; stderr: string; status: number }> {
    const p = Bun.spawn([BUN, MAIN, ...extraArgs, "mcp"], { cwd: dir, stdin: "pipe", stdout: "pipe", stderr: "pipe", env: ENV });
    const init = {
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "0" } },
    };
    p.stdin.write(JSON.stringify(init) + "\n");
    p.stdin.write(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) + "\n");
    for (const l of lines) p.stdin.write(l);
    const text = await readUntilThenClose(p, (t) => t.split("\n").filter((l) => l.trim() !== "").length >= expectIds + 1);
    const [status, stderr] = await Promise.all([p.exited, new Response(p.stderr).text()]);
    // Refusals (id null) are written as soon as their line is read, so they may
    // come before answers to earlier lines (JSON-RPC matches answers by id):
    // keep the refusals in order, then the answers by id, without initialize's.
    const all = text
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const refusals = all.filter((m) => m.id === null);
    const byId = all.filter((m) => typeof m.id === "number" && m.id !== 1).sort((x, y) => (x.id as number) - (y.id as number));
    return { answers: [...refusals, ...byId], stderr, status };
  }
  const call = (id: number, args: string) =>
    `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"echo","arguments":${args}}}\n`;

  test("a repeated key, __proto__ and bad UTF-8 are parse errors (-32700) naming the place; no tool runs; good lines still work", async () => {
    const dup = '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"nope","name":"echo","arguments":{"a":1}}}\n';
    const proto = call(3, '{"__proto__":{"x":1}}');
    const utf8 = new Uint8Array([
      ...new TextEncoder().encode(call(4, '{"s":"X"}').split("X")[0]!),
      0xff,
      ...new TextEncoder().encode('"}}}\n'),
    ]);
    const good = call(5, '{"message":"ok"}');
    const { answers, status } = await exchange([dup, proto, "\n", utf8, good], 4);
    expect(status).toBe(0);
    expect(answers.length).toBe(4);
    const [a, b, c, d] = answers as {
      id: unknown;
      error?: { code: number; message: string; data: Record<string, unknown> };
      result?: { structuredContent?: unknown };
    }[];
    expect(a!.id).toBeNull();
    expect(a!.error!.code).toBe(-32700);
    expect(a!.error!.data).toMatchObject({ code: "JSON_DUPLICATE_KEY", offset: dup.indexOf('"name":"echo"'), line: 1 });
    expect(a!.error!.message).toContain('duplicate key "name"');
    expect(b!.error!.data).toMatchObject({ code: "JSON_FORBIDDEN_KEY", line: 1 });
    expect(c!.error!.data).toMatchObject({ code: "JSON_ENCODING" });
    expect(d!.id).toBe(5);
    expect(d!.result!.structuredContent).toEqual({ message: "ok" });
  }, 20_000);

  test("a line over the limit is refused once and skipped; the next line is served", async () => {
    // --max-input-bytes 1024: the message limit is 2 x 1024 + 64 KiB
    const big = call(2, JSON.stringify({ s: "x".repeat(200_000) }));
    const { answers } = await exchange([big.slice(0, 70_000), big.slice(70_000), call(3, '{"message":"after"}')], 2, [
      "--max-input-bytes",
      "1024",
    ]);
    expect(answers.length).toBe(2);
    const [a, b] = answers as {
      id: unknown;
      error?: { code: number; data: Record<string, unknown> };
      result?: { structuredContent?: unknown };
    }[];
    expect(a!.error!.code).toBe(-32700);
    expect(a!.error!.data).toMatchObject({ code: "JSON_SIZE" });
    expect(b!.id).toBe(3);
    expect(b!.result!.structuredContent).toEqual({ message: "after" });
  }, 20_000);
});
