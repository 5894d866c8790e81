/**
 * MCP under Deno (`deno run` on the sources): the client example, and
 * `agentcore mcp` driven by the SDK's Client.
 */
import { expect, test } from "bun:test";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { REPO } from "../support/mcp.ts";

const DENO = join(REPO, "node_modules/.bin/deno");
const ENV = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/tmp", DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1" };

test("deno run examples/mcp_client.ts: server-everything's tools through the library", () => {
  const r = Bun.spawnSync([DENO, "run", "--allow-read", "--allow-env", "--allow-run", "--allow-sys", "examples/mcp_client.ts"], {
    cwd: REPO,
    env: ENV,
    stdin: "ignore",
  });
  expect(r.exitCode).toBe(0);
  const lines = r.stdout.toString().trimEnd().split("\n");
  expect(lines[0]).toBe("MCP tools: everything__echo, everything__get-sum, everything__get-tiny-image");
  const envs = lines.slice(1).map((l) => JSON.parse(l));
  expect(envs[0].result.content[0].text).toBe("The sum of 20 and 22 is 42.");
  expect(envs[1].result.content[0].text).toBe("Echo: hello over MCP");
  expect(envs[2].error.code).toBe("INVALID_ARGUMENTS");
}, 60_000);

test("deno run src/cli/main.ts mcp: served to the SDK's Client", async () => {
  const transport = new StdioClientTransport({
    command: DENO,
    args: ["run", "--allow-read", "--allow-env", "src/cli/main.ts", "mcp"],
    cwd: REPO,
    env: ENV,
    stderr: "pipe",
  });
  const client = new Client({ name: "deno-test", version: "1" });
  await client.connect(transport);
  try {
    const r = await client.callTool({ name: "read_file", arguments: { path: "examples/hello.txt" } });
    expect((r.structuredContent as { content: string }).content).toContain("Hello from agentcore");
  } finally {
    await client.close();
  }
}, 60_000);
