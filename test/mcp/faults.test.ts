/**
 * Fault handling of the MCP client against a hand-written fixture server
 * (test/mcp/fixtures/server.mjs) that can be slow, die, hang, lie about its
 * schemas and print garbage. Every server process is checked to be gone.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createRuntime, type Runtime } from "../../src/runtime/index.ts";
import { createLogger } from "../../src/core/logger.ts";
import { attachMcpServers, McpStartupError } from "../../src/mcp/attach.ts";
import { McpToolHandler } from "../../src/mcp/client.ts";
import type { McpServerConfig } from "../../src/mcp/config.ts";
import { alive, FIXTURE, logLines, NODE, until } from "../support/mcp.ts";
import { tmp } from "../support/tmp.ts";

let dir: string;
let n = 0;
beforeAll(() => {
  dir = tmp("agentcore-mcp-faults-");
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const lines: string[] = [];
const logger = createLogger({ level: "warn", sink: (l) => lines.push(l) });

/** A fixture config with its own log file. */
function fixture(
  mode = "normal",
  extra: Partial<McpServerConfig> = {},
  env: Record<string, string> = {},
): { config: McpServerConfig; log: string } {
  const log = join(dir, `fixture-${++n}.log`);
  return { log, config: { command: NODE, args: [FIXTURE, mode], env: { FIXTURE_LOG: log, ...env }, ...extra } };
}

const pids = (log: string) =>
  logLines(log)
    .filter((l) => l.startsWith("start "))
    .map((l) => Number(l.split(" ")[1]));

describe("calls", () => {
  let rt: Runtime;
  let h: McpToolHandler;
  let log: string;
  beforeAll(async () => {
    // a timeout that a 3 MB result still beats on a loaded machine, and the slow tool does not
    const f = fixture("normal", { timeout_ms: 2000, max_result_bytes: 4096 });
    log = f.log;
    rt = createRuntime({ logger });
    const mcp = await attachMcpServers(rt, { fx: f.config }, { logger });
    h = mcp.handlers[0]!;
  });
  afterAll(async () => {
    const pid = h.pid;
    await h.close();
    if (pid !== undefined) expect(alive(pid)).toBe(false);
  });

  test("an AbortSignal becomes notifications/cancelled for that request", async () => {
    const ac = new AbortController();
    const p = rt.dispatch('{"id":"c1","tool":"fx__slow","arguments":{"ms":60000}}', ac.signal);
    await until(() => logLines(log).some((l) => l.startsWith("call slow ")), "the call to reach the server");
    ac.abort();
    const e = await p;
    expect(e.error?.code).toBe("CANCELLED");
    const id = logLines(log)
      .find((l) => l.startsWith("call slow "))!
      .split(" ")[2];
    await until(() => logLines(log).includes(`cancelled ${id}`), "the cancellation to reach the server");
  });

  test("a call past timeout_ms is TIMEOUT, and the server is told to cancel it", async () => {
    const before = logLines(log).filter((l) => l.startsWith("cancelled ")).length;
    const e = await rt.dispatch('{"id":"c2","tool":"fx__slow","arguments":{"ms":60000}}');
    expect(e.error?.code).toBe("TIMEOUT");
    await until(() => logLines(log).filter((l) => l.startsWith("cancelled ")).length === before + 1, "a second cancellation");
  });

  test("isError: true becomes TOOL_ERROR with the server's text", async () => {
    const e = await rt.dispatch('{"id":"c3","tool":"fx__fail","arguments":{}}');
    expect(e.error?.code).toBe("TOOL_ERROR");
    expect(e.error?.message).toBe('mcp server "fx", tool "fail" reported an error: the fixture failed on purpose');
    expect(e.error?.details).toMatchObject({ server: "fx", tool: "fail" });
  });

  test("images, resource links and structured content are mapped", async () => {
    const e = await rt.dispatch('{"id":"c4","tool":"fx__image","arguments":{}}');
    expect(e.result).toEqual({
      content: [
        { type: "image", mime_type: "image/png", data: "iVBORw0KGgo=" },
        { type: "resource_link", uri: "file:///x.txt", name: "x.txt", mime_type: "text/plain" },
      ],
      structured_content: { width: 1, height: 1 },
    });
  });

  test("a huge result is capped at max_result_bytes and flagged", async () => {
    const e = await rt.dispatch('{"id":"c5","tool":"fx__huge","arguments":{"n":3000000}}');
    expect(e.error).toBeNull();
    const r = e.result as {
      content: { type: string; text: string }[];
      truncated: boolean;
      original_bytes: number;
      structured_content?: unknown;
    };
    expect(r.truncated).toBe(true);
    expect(r.original_bytes).toBeGreaterThan(3_000_000);
    expect(Buffer.byteLength(JSON.stringify(r))).toBeLessThanOrEqual(4096);
    expect(r.content[0]!.text.endsWith("…[truncated]")).toBe(true);
    expect(r.content[0]!.text.startsWith("xxxx")).toBe(true);
  });

  test("a result under the cap is not flagged", async () => {
    const e = await rt.dispatch('{"id":"c6","tool":"fx__huge","arguments":{"n":100}}');
    expect(e.result).toEqual({
      content: [
        { type: "text", text: "x".repeat(100) },
        { type: "text", text: "tail" },
      ],
      structured_content: { n: 100 },
    });
  });
});

describe("the server dies or misbehaves", () => {
  test("killed in the middle of a call: the call fails clearly, is not replayed, and the next call reconnects", async () => {
    const f = fixture("normal", { timeout_ms: 20_000 });
    const h = new McpToolHandler("fx", f.config, { logger });
    await h.connect();
    const first = h.pid!;
    const p = h.callTool("slow", { ms: 60_000 }).then(
      () => null,
      (e) => e,
    );
    await until(() => logLines(f.log).some((l) => l.startsWith("call slow ")), "the slow call to start");
    process.kill(first, "SIGKILL");
    const err = await p;
    expect(err.code).toBe("UNAVAILABLE");
    expect(err.message).toBe(
      'mcp server "fx" was lost during the call (the server process exited with signal SIGKILL; it wrote nothing to stderr); the call was not retried',
    );
    // the next call starts a new server process
    const r = await h.callTool("count", {});
    expect(r.structured_content).toMatchObject({ calls: 1 });
    expect(h.connections).toBe(2);
    const second = h.pid!;
    expect(second).not.toBe(first);
    expect(pids(f.log)).toEqual([first, second]);
    // "slow" reached a server exactly once: it was not replayed on the new connection
    expect(logLines(f.log).filter((l) => l.startsWith("call slow "))).toHaveLength(1);
    await h.close();
    expect(alive(second)).toBe(false);
  }, 30_000);

  test("a call sent after the server died but before its exit was noticed: not written, so sent once on a new connection", async () => {
    const { StdioTransport, McpNotConnectedError } = await import("../../src/mcp/stdio.ts");
    const f = fixture("normal", { timeout_ms: 20_000 });
    const h = new McpToolHandler("fx", f.config, { logger });
    await h.connect();
    const first = h.pid!;
    // The window between the process exiting and its pipes closing: send()
    // finds it gone. Simulated for the next tools/call only.
    const send = StdioTransport.prototype.send;
    let refused = 0;
    StdioTransport.prototype.send = function (this: InstanceType<typeof StdioTransport>, m) {
      if (refused === 0 && (m as { method?: string }).method === "tools/call") {
        refused++;
        return Promise.reject(new McpNotConnectedError("not connected: the server process is not running"));
      }
      return send.call(this, m);
    };
    try {
      const r = await h.callTool("count", {});
      expect(refused).toBe(1);
      expect(r.structured_content).toMatchObject({ calls: 1 });
      expect(h.connections).toBe(2);
      expect(h.pid).not.toBe(first);
      expect(logLines(f.log).filter((l) => l.startsWith("call count "))).toHaveLength(1);
    } finally {
      StdioTransport.prototype.send = send;
      await h.close();
    }
    for (const pid of pids(f.log)) expect(alive(pid)).toBe(false);
  }, 20_000);

  test("malformed JSON-RPC: the connection is closed, the call fails naming the violation, the next call reconnects", async () => {
    const f = fixture("garbage", { timeout_ms: 20_000 });
    const h = new McpToolHandler("junk", f.config, { logger });
    await h.connect();
    const first = h.pid!;
    const err = await h.callTool("count", {}).then(
      () => null,
      (e) => e,
    );
    expect(err.code).toBe("UNAVAILABLE");
    expect(err.message).toBe(
      'mcp server "junk" was lost during the call (protocol violation: the server sent a line that is not a JSON-RPC message: "this is {not json-rpc"); the call was not retried',
    );
    expect(alive(first)).toBe(false);
    // a new process is started for the next call (which fails the same way: the fixture is consistent)
    const again = await h.callTool("count", {}).then(
      () => null,
      (e) => e,
    );
    expect(again.code).toBe("UNAVAILABLE");
    expect(h.connections).toBe(2);
    expect(pids(f.log)).toHaveLength(2);
    await h.close();
    for (const pid of pids(f.log)) expect(alive(pid)).toBe(false);
  }, 30_000);

  test("a server that hangs at start-up hits connect_timeout_ms; the process (which ignores SIGTERM) is killed", async () => {
    const f = fixture("hang", { connect_timeout_ms: 300 });
    const rt = createRuntime({ logger });
    const err = await attachMcpServers(rt, { stuck: f.config }, { logger }).catch((e) => e);
    expect(err).toBeInstanceOf(McpStartupError);
    expect(err.message).toBe('mcp server "stuck": no answer to initialize within 300 ms (connect_timeout_ms)');
    const [pid] = pids(f.log);
    expect(pid).toBeGreaterThan(0);
    expect(alive(pid!)).toBe(false);
    expect(logLines(f.log)).toContain("sigterm ignored");
  }, 20_000);

  test("close() while a server hangs at start-up ends the attempt at once, not after connect_timeout_ms", async () => {
    const f = fixture("hang", { connect_timeout_ms: 600_000 });
    const h = new McpToolHandler("stuck", f.config, { logger });
    const p = h.connect().then(
      () => null,
      (e) => e,
    );
    await until(() => pids(f.log).length === 1, "the server to start");
    await h.close(); // without ending the attempt this would wait ten minutes
    const err = await p;
    expect(err.message).toBe('mcp server "stuck" was closed while connecting');
    expect(alive(pids(f.log)[0]!)).toBe(false);
  }, 20_000);

  test("an AbortSignal interrupts attachMcpServers during start-up: servers stopped, nothing registered", async () => {
    const hang = fixture("hang", { connect_timeout_ms: 600_000 });
    const good = fixture("normal");
    const rt = createRuntime({ logger });
    const ac = new AbortController();
    const p = attachMcpServers(rt, { stuck: hang.config, good: good.config }, { logger, signal: ac.signal }).then(
      () => null,
      (e) => e,
    );
    await until(() => pids(hang.log).length === 1 && pids(good.log).length === 1, "both servers to start");
    ac.abort();
    const err = await p;
    expect(err).toBeInstanceOf(McpStartupError);
    expect(err.message).toBe("the start-up of the MCP servers was interrupted");
    for (const pid of [...pids(hang.log), ...pids(good.log)]) expect(alive(pid)).toBe(false);
    expect(rt.registry.has("good__count")).toBe(false);
  }, 20_000);

  test("a server whose tools/list fails is a startup error naming the server", async () => {
    const f = fixture("notools");
    const rt = createRuntime({ logger });
    const err = await attachMcpServers(rt, { nt: f.config }, { logger }).catch((e) => e);
    expect(err).toBeInstanceOf(McpStartupError);
    expect(err.message).toStartWith('mcp server "nt": listing its tools failed: ');
    expect(err.message).toContain("no method tools/list");
    expect(alive(pids(f.log)[0]!)).toBe(false);
  });

  test("a command that does not exist is a startup error naming the server", async () => {
    const rt = createRuntime({ logger });
    const err = await attachMcpServers(rt, { nope: { command: join(dir, "no-such-program") } }, { logger }).catch((e) => e);
    expect(err).toBeInstanceOf(McpStartupError);
    expect(err.message).toStartWith('mcp server "nope": cannot connect: ');
    expect(err.message).toContain("ENOENT");
  });

  test("a cwd that does not exist is a startup error naming the folder, not the command", async () => {
    const rt = createRuntime({ logger });
    const missing = join(dir, "no-such-folder");
    const err = await attachMcpServers(rt, { wd: { command: NODE, args: [FIXTURE], cwd: missing } }, { logger }).catch((e) => e);
    expect(err).toBeInstanceOf(McpStartupError);
    expect(err.message).toBe(`mcp server "wd": cannot connect: the working directory (cwd) ${missing} does not exist or is not a folder`);
  });

  test("a server that exits at once: its exit status and stderr are in the startup error", async () => {
    const rt = createRuntime({ logger });
    const err = await attachMcpServers(
      rt,
      { bad: { command: NODE, args: ["-e", "console.error('missing API key'); process.exit(3)"], connect_timeout_ms: 5000 } },
      { logger },
    ).catch((e) => e);
    expect(err).toBeInstanceOf(McpStartupError);
    expect(err.message).toBe('mcp server "bad" exited with status 3 before it answered initialize; last stderr lines: missing API key');
  }, 20_000);

  test("a server that answers initialize, then exits while listing its tools: its exit status and stderr are in the startup error", async () => {
    const script = [
      "let buf = '';",
      "process.stdin.on('data', (d) => { buf += d; let nl; while ((nl = buf.indexOf('\\n')) >= 0) { const m = JSON.parse(buf.slice(0, nl)); buf = buf.slice(nl + 1);",
      "  if (m.method === 'initialize') process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'x', version: '1' } } }) + '\\n');",
      "  if (m.method === 'tools/list') process.stderr.write('cannot read the tool catalogue\\n', () => process.exit(5)); } });",
    ].join("\n");
    const rt = createRuntime({ logger });
    const err = await attachMcpServers(rt, { lister: { command: NODE, args: ["-e", script], connect_timeout_ms: 5000 } }, { logger }).catch(
      (e) => e,
    );
    expect(err).toBeInstanceOf(McpStartupError);
    expect(err.message).toBe(
      'mcp server "lister" exited with status 5 while listing its tools; last stderr lines: cannot read the tool catalogue',
    );
  }, 20_000);

  test("one failing server closes the others that did start", async () => {
    const good = fixture("normal");
    const rt = createRuntime({ logger });
    const err = await attachMcpServers(
      rt,
      { good: good.config, stuck: fixture("hang", { connect_timeout_ms: 300 }).config },
      { logger },
    ).catch((e) => e);
    expect(err).toBeInstanceOf(McpStartupError);
    const [pid] = pids(good.log);
    expect(alive(pid!)).toBe(false);
    expect(rt.registry.has("good__count")).toBe(false);
  }, 20_000);
});

describe("tool registration", () => {
  test("a name collision with a built-in is a startup error; nothing is registered and the server is stopped", async () => {
    const f = fixture("normal", { prefix: "" }, { FIXTURE_EXTRA: "read_file" });
    const rt = createRuntime({ logger });
    const err = await attachMcpServers(rt, { fx: f.config }, { logger }).catch((e) => e);
    expect(err).toBeInstanceOf(McpStartupError);
    expect(err.message).toContain('its tool "read_file" collides with the already registered tool "read_file"');
    expect(rt.registry.has("count")).toBe(false);
    expect(alive(pids(f.log)[0]!)).toBe(false);
  });

  test("two servers offering the same name without prefixes collide, naming both", async () => {
    const rt = createRuntime({ logger });
    const a = fixture("normal", { prefix: "" });
    const b = fixture("normal", { prefix: "" });
    const err = await attachMcpServers(rt, { a: a.config, b: b.config }, { logger }).catch((e) => e);
    expect(err.message).toBe(
      'mcp server "b": its tool "count" collides with the tool "count" of mcp server "a"; set "prefix" (mcpServers.b.prefix) or "exclude" to avoid it',
    );
  });

  test("a schema ajv rejects and a name agentcore cannot carry are skipped with a warning; the rest register", async () => {
    lines.length = 0;
    const f = fixture("normal", {}, { FIXTURE_EXTRA: "bad_schema,bad.name" });
    const rt = createRuntime({ logger });
    const mcp = await attachMcpServers(rt, { fx: f.config }, { logger });
    try {
      expect(mcp.tools).toEqual(["fx__count", "fx__slow", "fx__huge", "fx__fail", "fx__image"]);
      expect(mcp.skipped.map((s) => s.tool)).toEqual(["bad.name", "fx__bad_schema"]);
      expect(mcp.skipped[0]!.reason).toContain('"fx__bad.name" is not a valid agentcore tool name');
      expect(mcp.skipped[1]!.reason).toContain("parameters schema does not compile");
      expect(lines.filter((l) => l.includes("mcp: tool skipped"))).toHaveLength(2);
    } finally {
      await mcp.close();
    }
  });

  test("a server offering more than 512 tools: the first 512 register, the rest are skipped with the reason", async () => {
    const f = fixture("normal", {}, { FIXTURE_MANY: "600" });
    const rt = createRuntime({ logger });
    const mcp = await attachMcpServers(rt, { many: f.config }, { logger });
    try {
      expect(mcp.tools).toHaveLength(512);
      expect(mcp.skipped).toHaveLength(605 - 512);
      expect(mcp.skipped[0]).toEqual({
        server: "many",
        tool: "t507",
        reason: 'the server offers more than 512 tools; use "include" to choose',
      });
    } finally {
      await mcp.close();
    }
  });

  test("tool names like constructor or __proto__ are ordinary names (no prototype lookups)", async () => {
    const f = fixture("normal", { include: ["constructor", "__proto__", "count"] }, { FIXTURE_EXTRA: "constructor,__proto__" });
    const rt = createRuntime({ logger });
    const mcp = await attachMcpServers(rt, { fx: f.config }, { logger });
    try {
      expect(mcp.tools).toEqual(["fx__count", "fx__constructor", "fx____proto__"]);
      expect(rt.registry.get("fx__constructor")!.effect).toBe("side_effecting");
      const e = await rt.dispatch('{"id":"1","tool":"fx__constructor","arguments":{}}');
      expect(e.result).toEqual({ content: [{ type: "text", text: "called constructor" }] });
    } finally {
      await mcp.close();
    }
  });

  test("include, exclude and per-tool effects", async () => {
    const rt = createRuntime({ logger });
    const inc = fixture("normal", { include: ["count", "image"], tools: { image: { effect: "read_only" } } });
    const exc = fixture("normal", { exclude: ["slow", "huge", "fail"], effect: "read_only" });
    const mcp = await attachMcpServers(rt, { i: inc.config, e: exc.config }, { logger });
    try {
      expect(mcp.tools).toEqual(["i__count", "i__image", "e__count", "e__image"]);
      expect(rt.registry.get("i__count")!.effect).toBe("side_effecting");
      expect(rt.registry.get("i__image")!.effect).toBe("read_only");
      expect(rt.registry.get("e__count")!.effect).toBe("read_only");
    } finally {
      const ps = [...pids(inc.log), ...pids(exc.log)];
      await mcp.close();
      for (const pid of ps) expect(alive(pid)).toBe(false);
    }
  });
});

describe("reconnection", () => {
  test("while the server cannot start, calls fail with UNAVAILABLE (backing off); once it can, the next call reconnects", async () => {
    const flag = join(dir, "refuse-start");
    const f = fixture("normal", { connect_timeout_ms: 5000 }, { FIXTURE_FAIL_IF: flag });
    const h = new McpToolHandler("fx", f.config, { logger });
    await h.connect();
    process.kill(h.pid!, "SIGKILL");
    await until(() => h.transportKind === undefined, "the loss to be noticed");
    writeFileSync(flag, "");
    for (let i = 0; i < 3; i++) {
      const err = await h.callTool("count", {}).then(
        () => null,
        (e) => e,
      );
      expect(err.code).toBe("UNAVAILABLE");
      expect(err.message).toBe(
        'mcp server "fx" exited with status 1 before it answered initialize; last stderr lines: fixture: refusing to start (flag file present)',
      );
    }
    expect(pids(f.log)).toHaveLength(4); // the first start, then one attempt per call (no retries inside a call)
    rmSync(flag);
    const r = await h.callTool("count", {});
    expect(r.structured_content).toMatchObject({ calls: 1 });
    expect(h.connections).toBe(2);
    await h.close();
    for (const pid of pids(f.log)) expect(alive(pid)).toBe(false);
  }, 30_000);
});

describe("error text from a server is bounded", () => {
  test("a huge JSON-RPC error message is cut in the envelope's message", async () => {
    const f = fixture("normal", {}, { FIXTURE_EXTRA: "rpc_error" });
    const h = new McpToolHandler("fx", f.config, { logger });
    try {
      const err = await h.callTool("rpc_error", { n: 2_000_000 }).then(
        () => null,
        (e) => e,
      );
      expect(err.code).toBe("TOOL_ERROR");
      expect(err.details.mcp_error_code).toBe(-32000);
      expect(err.message.length).toBeLessThan(1200);
      expect(err.message).toStartWith(`mcp server "fx", tool "rpc_error": `);
      expect(err.message).toContain("more characters]");
    } finally {
      await h.close();
    }
  }, 20_000);

  test("a huge HTTP error body at start-up is cut in the startup error", async () => {
    const body = `<h1>${"x".repeat(2_000_000)}</h1>`;
    const srv = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: () => new Response(body, { status: 500, headers: { "content-type": "text/html" } }),
    });
    try {
      const rt = createRuntime({ logger });
      const err = await attachMcpServers(
        rt,
        { web: { url: `http://127.0.0.1:${srv.port}/mcp`, connect_timeout_ms: 5000 } },
        { logger },
      ).catch((e) => e);
      expect(err).toBeInstanceOf(McpStartupError);
      expect(err.message).toStartWith('mcp server "web": cannot connect: ');
      expect(err.message).toContain("more characters]");
      expect(err.message.length).toBeLessThan(1200);
    } finally {
      srv.stop(true);
    }
  }, 20_000);
});

describe("limits given to the handler", () => {
  test("timeouts beyond what a timer can wait are capped, not turned into an instant timeout", async () => {
    const f = fixture("normal", { timeout_ms: Number.MAX_SAFE_INTEGER, connect_timeout_ms: Number.MAX_SAFE_INTEGER });
    const h = new McpToolHandler("big", f.config, { logger });
    try {
      expect(h.timeoutMs).toBe(2_147_483_647);
      expect(h.connectTimeoutMs).toBe(2_147_483_647);
      await h.connect();
      const { tools } = await h.toolDefinitions();
      expect(tools.map((t) => t.name)).toContain("big__count");
      expect((await h.callTool("count", {})).structured_content).toMatchObject({ calls: 1 });
    } finally {
      await h.close();
    }
  });
});

describe("StdioTransport", () => {
  test("a message longer than maxLineBytes is a protocol violation: the connection closes and the process is stopped", async () => {
    const { Client } = await import("@modelcontextprotocol/client");
    const { StdioTransport, McpProtocolError } = await import("../../src/mcp/stdio.ts");
    const t = new StdioTransport({ command: NODE, args: [FIXTURE], maxLineBytes: 4096 });
    const errors: Error[] = [];
    const client = new Client({ name: "t", version: "1" });
    client.onerror = (e) => errors.push(e);
    await client.connect(t);
    const pid = t.pid!;
    expect((await client.callTool({ name: "huge", arguments: { n: 100 } })).isError).toBeFalsy();
    const err = await client.callTool({ name: "huge", arguments: { n: 100_000 } }).then(
      () => null,
      (e) => e,
    );
    expect(err).toBeInstanceOf(Error);
    expect(errors.some((e) => e instanceof McpProtocolError && e.message === "the server sent a message longer than 4096 bytes")).toBe(
      true,
    );
    await until(() => !alive(pid), "the server to be stopped");
    await client.close();
  });

  test("a program that cannot be started rejects start() (no process, no hang)", async () => {
    const { StdioTransport } = await import("../../src/mcp/stdio.ts");
    const t = new StdioTransport({ command: join(dir, "missing-binary") });
    const err = await t.start().then(
      () => null,
      (e) => e,
    );
    expect(err?.code).toBe("ENOENT");
    await t.close();
  });
});

describe("shutdown", () => {
  test("a server that ignores the end of stdin and SIGTERM is killed; close() returns once it is gone", async () => {
    const f = fixture("stubborn");
    const h = new McpToolHandler("stub", f.config, { logger });
    await h.connect();
    const pid = h.pid!;
    await h.close();
    expect(alive(pid)).toBe(false);
    expect(logLines(f.log)).toContain("sigterm ignored");
  }, 20_000);

  test("a call in flight when close() is called fails as CANCELLED (not as a lost server), and is not replayed", async () => {
    const f = fixture("normal", { timeout_ms: 20_000 });
    const h = new McpToolHandler("fx", f.config, { logger });
    await h.connect();
    const pid = h.pid!;
    const p = h.callTool("slow", { ms: 60_000 }).then(
      () => null,
      (e) => e,
    );
    await until(() => logLines(f.log).some((l) => l.startsWith("call slow ")), "the slow call to reach the server");
    await h.close();
    const err = await p;
    expect(err.code).toBe("CANCELLED");
    expect(err.message).toBe('mcp server "fx", tool "slow": cancelled because the connection was closed (shutting down)');
    expect(alive(pid)).toBe(false);
    expect(pids(f.log)).toEqual([pid]);
  }, 20_000);

  test("behind a wrapper (sh -c), the server the wrapper started is stopped too", async () => {
    const log = join(dir, "wrapped.log");
    const h = new McpToolHandler(
      "wrapped",
      { command: "sh", args: ["-c", `"${NODE}" "${FIXTURE}" stubborn; echo wrapper-done >&2`], env: { FIXTURE_LOG: log } },
      { logger },
    );
    await h.connect();
    const wrapper = h.pid!;
    const [server] = pids(log);
    expect(server).not.toBe(wrapper); // really a grandchild
    expect((await h.callTool("count", {})).structured_content).toMatchObject({ calls: 1, pid: server });
    await h.close();
    expect(alive(wrapper)).toBe(false);
    // close() waits for the wrapper; the SIGKILL to the rest of its group lands a moment later
    await until(() => !alive(server!), "the wrapped server to be killed");
  }, 20_000);

  test("when the wrapper dies on its own, what it started is killed with it", async () => {
    const log = join(dir, "wrapped2.log");
    const h = new McpToolHandler(
      "wrapped",
      { command: "sh", args: ["-c", `"${NODE}" "${FIXTURE}" stubborn; echo wrapper-done >&2`], env: { FIXTURE_LOG: log } },
      { logger },
    );
    await h.connect();
    const wrapper = h.pid!;
    const [server] = pids(log);
    process.kill(wrapper, "SIGKILL");
    await until(() => !alive(server!), "the wrapped server to be killed with its group");
    const err = await h.callTool("count", {}).then(
      () => null,
      (e) => e,
    );
    // the next call starts a new wrapper and server (the previous ones are gone)
    expect(err).toBeNull();
    expect(pids(log)).toHaveLength(2);
    await h.close();
    for (const pid of pids(log)) await until(() => !alive(pid), `server ${pid} to be killed`);
  }, 20_000);
});
