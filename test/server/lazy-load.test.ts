/**
 * What an idle daemon holds: the MCP SDK, the agent stack (agent, context
 * window rules, model adapters, the tracing API), the console's script and
 * styles and the OpenAPI document are loaded on their first request, not
 * at start. From source, where the loaded modules can be listed; each part
 * still answers once asked for.
 */
import { afterAll, expect, test } from "bun:test";
import { rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { tmp } from "../support/tmp.ts";

const REPO = resolve(import.meta.dir, "../..");
const dir = tmp("agentcore-lazy-");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The groups of modules a daemon loads lazily, by a part of their path. */
const GROUPS = {
  mcp: "@modelcontextprotocol",
  agent: "/src/agent/",
  tracing: "@opentelemetry",
  models: "/src/providers/openai.ts",
  assets: "/src/server/console/assets.generated.ts",
  openapi: "/src/server/openapi.ts",
};

test("an idle daemon has loaded none of the parts only some requests need; each loads on its first request and answers", async () => {
  const probe = join(dir, "probe.ts");
  writeFileSync(
    probe,
    `import { startDaemon } from ${JSON.stringify(join(REPO, "src/server/serve.ts"))};
const groups = ${JSON.stringify(GROUPS)};
const loaded = () => Object.fromEntries(Object.entries(groups).map(([k, p]) => [k, Object.keys(require.cache).some((m) => m.includes(p))]));
const token = "c".repeat(64);
const d = await startDaemon({ app: { token, runtimeOptions: { root: ${JSON.stringify(dir)} }, sessionsDir: ${JSON.stringify(join(dir, "sessions"))} }, listen: { port: 0 } });
const out = { idle: loaded(), status: {} };
const auth = { authorization: "Bearer " + token };
const call = await fetch(d.url + "/v1/calls", { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: '{"id":"1","tool":"echo","arguments":{"a":1}}' });
out.status.call = call.status; await call.text();
out.afterCall = loaded();
const mcp = await fetch(d.url + "/mcp", { method: "POST", headers: { ...auth, "content-type": "application/json", accept: "application/json, text/event-stream" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "probe", version: "1" } } }) });
out.status.mcp = mcp.status; await mcp.text();
const run = await fetch(d.url + "/v1/runs", { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: '{"task":"x","model":{"preset":"no-such-preset"}}' });
out.status.run = run.status; out.runError = (await run.json()).error?.details?.location;
const js = await fetch(d.url + "/console/app.js");
out.status.js = js.status; out.jsBytes = (await js.text()).length;
const api = await fetch(d.url + "/v1/openapi.json", { headers: auth });
out.status.api = api.status; out.apiPaths = Object.keys((await api.json()).paths ?? {}).length;
out.after = loaded();
await d.stop();
process.stdout.write(JSON.stringify(out));
`,
  );
  const p = Bun.spawn([process.execPath, probe], {
    cwd: dir,
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, AGENTCORE_LOG_LEVEL: "error" },
  });
  const [stdout, stderr] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()]);
  expect(await p.exited, stderr).toBe(0);
  const out = JSON.parse(stdout);
  const none = Object.fromEntries(Object.keys(GROUPS).map((k) => [k, false]));
  expect(out.idle).toEqual(none);
  // the hot path needs none of them either
  expect(out.afterCall).toEqual(none);
  expect(out.status).toEqual({ call: 200, mcp: 200, run: 400, js: 200, api: 200 });
  expect(out.runError).toBe("/model/preset");
  expect(out.jsBytes).toBeGreaterThan(1000);
  expect(out.apiPaths).toBeGreaterThan(5);
  expect(out.after).toEqual(Object.fromEntries(Object.keys(GROUPS).map((k) => [k, true])));
}, 30_000);
