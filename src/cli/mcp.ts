/**
 * `agentcore mcp`: serve the runtime's registered tools (built-ins, workspace
 * tools and the tools of configured MCP servers) to an MCP client over stdio.
 *
 * stdout carries only JSON-RPC; logs go to stderr. Every call goes through
 * the runtime's middleware (schema validation, the config's policy, history).
 * There is no terminal to ask, so a `require_approval` rule is denied (the
 * caller sets that up when building the runtime).
 *
 * The command returns when the client closes our stdin, or on SIGINT/SIGTERM;
 * the caller then closes the MCP servers it connected.
 *
 * @module
 */
import { type Readable, Transform, type Writable } from "node:stream";
import { StdioServerTransport } from "@modelcontextprotocol/server/stdio";
import type { Runtime } from "../runtime/runtime.ts";
import { createMcpServer } from "../mcp/server.ts";
import { validateStrict } from "../core/index.ts";
import { DEFAULT_MAX_BYTES, HARD_MAX_BYTES, HARD_MAX_DEPTH } from "../core/errors.ts";

/**
 * A line filter in front of the SDK's stdio transport: each JSON-RPC line is
 * checked by the strict core first. The SDK parses with `JSON.parse`, which
 * takes a repeated key last-wins (`{"name":"a","name":"b"}` would call b) and
 * drops a top-level `__proto__`; such a line, or bytes that are not UTF-8, or
 * a line over `maxBytes`, is answered with a JSON-RPC parse error (-32700,
 * with offset, line and column) on `out` and never reaches the server.
 * Valid lines pass through unchanged; blank lines are dropped.
 */
export function strictJsonRpcLines(out: Writable, maxBytes: number): Transform {
  let parts: Buffer[] = [];
  let held = 0;
  let discarding = false; // inside a line already refused for its size
  const refuse = (message: string, data: Record<string, unknown>) => {
    out.write(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32700, message: `Parse error: ${message}`, data } }) + "\n");
  };
  const line = (t: Transform, bytes: Buffer) => {
    let n = bytes.length;
    if (n > 0 && bytes[n - 1] === 0x0d) n--; // CRLF
    if (n === 0) return;
    const body = bytes.subarray(0, n);
    const bad = validateStrict(body, { maxBytes, maxDepth: HARD_MAX_DEPTH });
    if (bad === null) t.push(Buffer.concat([body, Buffer.from("\n")]));
    else
      refuse(`${bad.message} at line ${bad.line}, column ${bad.column}`, {
        code: bad.code,
        offset: bad.offset,
        line: bad.line,
        column: bad.column,
      });
  };
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      let from = 0;
      for (;;) {
        const nl = chunk.indexOf(0x0a, from);
        if (nl < 0) break;
        if (discarding) discarding = false;
        else {
          parts.push(chunk.subarray(from, nl));
          line(this, parts.length === 1 ? parts[0]! : Buffer.concat(parts));
        }
        parts = [];
        held = 0;
        from = nl + 1;
      }
      if (from < chunk.length && !discarding) {
        const rest = chunk.subarray(from);
        held += rest.length;
        if (held > maxBytes) {
          // never hold more than the limit: refuse now, skip to the next line break
          refuse(`message over ${maxBytes} bytes`, { code: "JSON_SIZE", offset: maxBytes });
          parts = [];
          held = 0;
          discarding = true;
        } else parts.push(Buffer.from(rest));
      }
      done();
    },
    flush(done) {
      if (!discarding && held > 0) line(this, Buffer.concat(parts));
      done();
    },
  });
}

/** Serve `rt` over stdio until the client disconnects. Resolves to the exit status (0). */
export async function cmdMcp(rt: Runtime, io: { stdin?: Readable; stdout?: Writable } = {}): Promise<number> {
  const server = createMcpServer(rt);
  const closed = new Promise<void>((resolve) => {
    server.onclose = () => resolve();
  });
  server.onerror = (e) => rt.logger.debug("mcp server: transport error", { error: e.message });
  const stop = () => void server.close();
  let source: Readable | undefined;
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  try {
    const stdout = io.stdout ?? process.stdout;
    // a tools/call message carries arguments up to the runtime's input limit, plus its envelope
    const limit = Math.min(HARD_MAX_BYTES, 2 * (rt.limits.maxBytes ?? DEFAULT_MAX_BYTES) + 65536);
    const filter = strictJsonRpcLines(stdout, limit);
    source = io.stdin ?? process.stdin;
    const input = source.pipe(filter);
    await server.connect(new StdioServerTransport(input, stdout));
    rt.logger.info("mcp: serving tools over stdio", { tools: rt.registry.list().length });
    await closed;
  } finally {
    process.off("SIGINT", stop);
    process.off("SIGTERM", stop);
    // stop reading stdin (the SDK pauses only the stream it was given: the filter)
    source?.unpipe();
    source?.pause();
  }
  return 0;
}
