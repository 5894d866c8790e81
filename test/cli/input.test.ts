/**
 * The CLI's input, through the compiled binary run from a folder with no
 * node_modules: stdin that cannot be read, execute and run at the size limit,
 * invalid UTF-8 and a byte order mark, config limits above the hard caps,
 * tools --history, run's progress on a terminal, and the tools table with an
 * MCP server's description. Each test failed before the fix it pins.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { binaryPath } from "../support/binary.ts";
import { tmp } from "../support/tmp.ts";

let work: string;
let bin: string;

beforeAll(() => {
  work = tmp("agentcore-cli-input-");
  mkdirSync(join(work, "adir"));
  bin = binaryPath();
}, 120_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

interface Out {
  status: number;
  stdout: string;
  stderr: string;
}

/** Run the binary through sh, so that stdin can be redirected from anything (a directory, /dev/null). */
function sh(args: string, stdinFrom: string): Out {
  const r = Bun.spawnSync(["sh", "-c", `"$0" ${args} < "$1"`, bin, stdinFrom], { cwd: work });
  return { status: r.exitCode ?? -1, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

function run(args: string[], stdin?: string): Out {
  const r = Bun.spawnSync([bin, ...args], {
    cwd: work,
    stdin: stdin === undefined ? "ignore" : new TextEncoder().encode(stdin),
  });
  return { status: r.exitCode ?? -1, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

describe("stdin that cannot be read", () => {
  // Before: Bun's stdin stream threw EISDIR and the CLI printed "internal error" with a stack trace.
  for (const cmd of ["execute -", "run -"]) {
    test(`${cmd} with stdin redirected from a directory: exit 2, a one-line input error, nothing on stdout`, () => {
      const r = sh(cmd, join(work, "adir"));
      expect(r.status).toBe(2);
      expect(r.stdout).toBe("");
      expect(r.stderr).toBe("agentcore: cannot read stdin: EISDIR\n");
    });
  }
});

describe("stdin from a directory under Deno", () => {
  // Before: Deno read the directory as empty input (execute -: JSON_PARSE at offset 0, exit 1; run -: exit 0).
  const repo = join(import.meta.dir, "../..");
  for (const cmd of ["execute -", "run -"]) {
    test(`deno: ${cmd} with stdin redirected from a directory is the same input error as with the binary`, () => {
      const deno = join(repo, "node_modules/.bin/deno");
      const r = Bun.spawnSync(
        ["sh", "-c", `"$0" run --allow-read --allow-env --allow-net src/cli/main.ts ${cmd} < "$1"`, deno, join(work, "adir")],
        { cwd: repo },
      );
      expect(r.exitCode).toBe(2);
      expect(r.stdout.toString()).toBe("");
      expect(r.stderr.toString()).toContain("agentcore: cannot read stdin: EISDIR\n");
    }, 60_000);
  }
});

describe("execute - over the size limit", () => {
  // Before: the envelope's details were {} (docs/errors.md: JSON_SIZE carries offset, line and column).
  test("the JSON_SIZE envelope has the same offset, line and column as execute '<json>'", () => {
    const call = `{"id":"a",\n"tool":"echo","arguments":{"s":"${"é".repeat(40)}"}}`;
    const fromArg = run(["--max-input-bytes", "30", "execute", call]);
    const fromStdin = run(["--max-input-bytes", "30", "execute", "-"], call);
    expect(fromStdin.status).toBe(1);
    expect(fromArg.status).toBe(1);
    const strip = (s: string) => {
      const v = JSON.parse(s) as Record<string, unknown>;
      delete v.duration_ms;
      return v;
    };
    const expected = {
      id: null,
      success: false,
      tool: null,
      result: null,
      error: { code: "JSON_SIZE", message: "input exceeds 30 bytes", details: { offset: 30, line: 2, column: 20 } },
    };
    expect(strip(fromArg.stdout)).toEqual(expected);
    expect(strip(fromStdin.stdout)).toEqual(expected);
  });

  // Before: the final line break counted, so `echo "$call" | agentcore execute -`
  // refused a call of exactly --max-input-bytes that `run -` accepts.
  test("a call of exactly the limit followed by LF or CRLF is accepted, as in run; one byte more is refused", () => {
    const call = '{"id":"a","tool":"echo","arguments":{}}';
    for (const end of ["\n", "\r\n", ""]) {
      const ok = run(["--max-input-bytes", String(call.length), "execute", "-"], call + end);
      expect(ok.status).toBe(0);
      expect((JSON.parse(ok.stdout) as { id: string }).id).toBe("a");
      const viaRun = run(["--max-input-bytes", String(call.length), "run", "-"], call + end);
      expect(viaRun.status).toBe(0);
    }
    for (const input of [`${call} \n`, `${call}\n\n`, `${call}\r\r\n`]) {
      const over = run(["--max-input-bytes", String(call.length), "execute", "-"], input);
      expect(over.status).toBe(1);
      expect((JSON.parse(over.stdout) as { error: { code: string } }).error.code).toBe("JSON_SIZE");
    }
    const short = run(["--max-input-bytes", String(call.length - 1), "execute", "-"], call + "\n");
    expect((JSON.parse(short.stdout) as { error: { code: string; message: string; details: unknown } }).error).toEqual({
      code: "JSON_SIZE",
      message: `input exceeds ${call.length - 1} bytes`,
      details: { offset: call.length - 1, line: 1, column: call.length },
    });
  });

  test("a stream far larger than the limit is still refused (only about one chunk past the limit is read)", () => {
    const big = `{"tool":"echo","arguments":{"s":"${"x".repeat(3 << 20)}"}}`;
    const r = run(["execute", "-"], big);
    expect(r.status).toBe(1);
    const env = JSON.parse(r.stdout) as { error: { code: string; details: Record<string, number> } };
    expect(env.error.code).toBe("JSON_SIZE");
    expect(env.error.details).toEqual({ offset: 1048576, line: 1, column: 1048577 });
  });
});

describe("execute '<json>' with invalid UTF-8 in the argument", () => {
  // Before: the runtime decoded argv with U+FFFD replacements, so the call
  // succeeded with "\uFFFD" in its arguments, while the same bytes on stdin
  // were JSON_ENCODING. The raw bytes are recovered from /proc/self/cmdline.
  const bytes = String.raw`{"id":"a","tool":"echo","arguments":{"x":"\377\300\257 \355\240\200"}}`;
  const linux = process.platform === "linux";

  test.if(linux)("is JSON_ENCODING at the same offset as through execute -", () => {
    // printf turns the octal escapes into raw bytes (the JSON holds no '%')
    const viaArg = Bun.spawnSync(["sh", "-c", `"$0" execute "$(printf "$1")"`, bin, bytes], { cwd: work });
    const viaStdin = Bun.spawnSync(["sh", "-c", `printf "$1" | "$0" execute -`, bin, bytes], { cwd: work });
    for (const r of [viaArg, viaStdin]) {
      expect(r.exitCode).toBe(1);
      const env = JSON.parse(r.stdout.toString()) as { success: boolean; error: { code: string; details: unknown } };
      expect(env.success).toBe(false);
      expect(env.error.code).toBe("JSON_ENCODING");
      expect(env.error.details).toEqual({ offset: 42, line: 1, column: 43 });
    }
  });

  test("a real U+FFFD in the argument (valid UTF-8) is still accepted", () => {
    const r = run(["execute", '{"id":"a","tool":"echo","arguments":{"x":"ok \uFFFD and \u00e9"}}']);
    expect(r.status).toBe(0);
    expect((JSON.parse(r.stdout) as { result: unknown }).result).toEqual({ x: "ok \uFFFD and \u00e9" });
  });
});

describe("config limits above the hard caps", () => {
  // Before: a usage error ("Run 'agentcore --help'") that did not name the file
  // or the key's spelling, unlike every other config check.
  test.each([
    [
      "max_depth",
      4097,
      'cfg.jsonc:1:16: "max_depth" must be an integer from 1 to 4096\n    1 | { "max_depth": 4097 }\n      |                ^',
    ],
    [
      "max_input_bytes",
      268435457,
      'cfg.jsonc:1:22: "max_input_bytes" must be an integer from 1 to 268435456 (bytes)\n    1 | { "max_input_bytes": 268435457 }\n      |                      ^',
    ],
  ])("%s: %d is a config error naming the file and the key, exit 2, no usage hint", (key, value, message) => {
    writeFileSync(join(work, "cfg.jsonc"), `{ "${key}": ${value} }`);
    const r = run(["--config", "cfg.jsonc", "execute", '{"tool":"echo","arguments":{}}']);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe(`agentcore: ${message}\n`);
  });
});

describe("run: a byte order mark at the start of the file (as docs/errors.md's JSON_ENCODING row says)", () => {
  test("line 1 is JSON_ENCODING at offset 0, the other lines run, exit 1", () => {
    writeFileSync(join(work, "bom.jsonl"), '\uFEFF{"id":"a","tool":"echo","arguments":{}}\r\n{"id":"b","tool":"echo","arguments":{}}\r\n');
    const r = run(["run", "bom.jsonl"]);
    expect(r.status).toBe(1);
    const out = r.stdout
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l) as { id: string | null; error: { code: string; message: string; details: unknown } | null });
    expect(out.map((e) => e.id)).toEqual([null, "b"]);
    expect(out[0]!.error).toEqual({
      code: "JSON_ENCODING",
      message: "byte order mark is not allowed",
      details: { offset: 0, line: 1, column: 1, input_line: 1 },
    });
    expect(out[1]!.error).toBeNull();
  });
});

describe("tools --history", () => {
  // Before: the message listed "execute, run and agent", though --help (and the code) also take it for chat and mcp.
  test("is a usage error that names every command taking --history, as --help does", () => {
    const r = run(["tools", "--history", "h.jsonl"]);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain(
      "agentcore tools: --history applies to 'execute', 'run', 'agent', 'chat', 'history' and 'mcp' only, not to 'tools'\n",
    );
    for (const c of ["execute", "run", "agent", "chat", "mcp"]) expect(run([c, "--help"]).stdout).toContain("--history FILE");
    expect(run(["tools", "--help"]).stdout).not.toContain("--history");
  });
});

describe("run: progress with stdout on the same terminal", () => {
  // Before: the redrawn progress line ("\ragentcore: N calls, R/s   ") was left
  // in front of the next result line on the screen, garbling it.
  test.if(process.platform === "linux")("no progress is drawn, and every result line on the screen is clean JSON", () => {
    const calls = join(work, "slow.jsonl");
    writeFileSync(calls, '{"tool":"echo","arguments":{}}\n'.repeat(300));
    // `script` gives a pseudo-terminal for both stdout and stderr
    const r = Bun.spawnSync(["script", "-qec", `'${bin}' run '${calls}'`, "/dev/null"], { stdin: "ignore" });
    expect(r.exitCode).toBe(0);
    const screen = r.stdout.toString();
    expect(screen).not.toContain("agentcore:");
    const lines = screen.split(/\r?\n/).filter((l) => l !== "");
    expect(lines).toHaveLength(300);
    for (const l of lines) expect((JSON.parse(l) as { success: boolean }).success).toBe(true);
  });
});

describe("tools: the table with a description from an MCP server", () => {
  // Before: newlines in a description broke the table into extra lines, and
  // escape sequences from the (untrusted) server went raw to the terminal.
  const server = `
const send = (m) => process.stdout.write(JSON.stringify(m) + "\\n");
let buf = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (c) => {
  buf += c;
  let nl;
  while ((nl = buf.indexOf("\\n")) >= 0) {
    const line = buf.slice(0, nl);
    buf = buf.slice(nl + 1);
    if (!line.trim()) continue;
    const msg = JSON.parse(line);
    if (msg.method === "initialize") send({ jsonrpc: "2.0", id: msg.id, result: { protocolVersion: msg.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "desc", version: "1" } } });
    else if (msg.method === "tools/list") send({ jsonrpc: "2.0", id: msg.id, result: { tools: [{ name: "multi", description: "First line.\\nSecond\\tline.\\r\\n\\u001b[2J\\u001b[31mred\\u009b", inputSchema: { type: "object" } }] } });
    else if (msg.id !== undefined) send({ jsonrpc: "2.0", id: msg.id, result: {} });
  }
});
process.stdin.on("end", () => process.exit(0));
`;

  test("each tool stays on one row; white space is folded and control characters are shown as \\xNN", () => {
    writeFileSync(join(work, "desc-server.mjs"), server);
    writeFileSync(join(work, "mcp.json"), JSON.stringify({ mcpServers: { d: { command: process.execPath, args: ["desc-server.mjs"] } } }));
    const r = run(["--config", "mcp.json", "tools"]);
    expect(r.status).toBe(0);
    const rows = r.stdout.trimEnd().split("\n");
    expect(rows.map((row) => row.split(/\s+/)[0])).toEqual(["NAME", "echo", "read_file", "d__multi"]);
    expect(rows[3]).toEndWith("First line. Second line. \\x1b[2J\\x1b[31mred\\x9b");
    expect(r.stdout).not.toContain("\u001b");
    // --json keeps the description as it was given (JSON escapes it)
    const json = JSON.parse(run(["--config", "mcp.json", "tools", "--json"]).stdout) as { name: string; description: string }[];
    expect(json.find((t) => t.name === "d__multi")!.description).toBe("First line.\nSecond\tline.\r\n\u001b[2J\u001b[31mred\u009b");
  }, 60_000);
});
