/**
 * The npm package as users get it: `npm pack`, the tarball installed into
 * empty projects, and used from there by
 * - Node, on the lowest version the dependencies support (the floor in
 *   package.json's `engines`, `>=X.Y.Z`; installed from npm as
 *   `node-<platform>-<arch>` and cached under .cache/), with no
 *   Bun on PATH: `import` the package and run a scripted agent, the main entry
 *   loading no Hono, MCP SDK, `openai` or `yaml` (seen by a resolve hook),
 *   `npx agentcore --version`, `agentcore run FILE`, and `agentcore serve`
 *   saying what to do instead;
 * - Bun: a `bun init` project with its default strict tsconfig type-checks a
 *   program that uses the public API with 0 errors (with and without
 *   `skipLibCheck`), and runs it from the TypeScript sources;
 * - Deno: `deno run` of a script importing the package.
 * Needs the npm registry for the dependencies (and, once, the Node binary).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { freshDatabase, skipMessage } from "../support/postgres.ts";

const REPO = resolve(import.meta.dir, "../..");
const MANIFEST = JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as { version: string; engines: { node: string } };
const LOWEST_NODE = /^>=(\d+\.\d+\.\d+)$/.exec(MANIFEST.engines.node)?.[1] ?? `(engines.node ${MANIFEST.engines.node} is not ">=X.Y.Z")`;
const VERSION = MANIFEST.version;
const tmp = mkdtempSync(join(tmpdir(), "agentcore-package-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

interface Ran {
  status: number | null;
  stdout: string;
  stderr: string;
}
function run(argv: string[], cwd: string, env: Record<string, string | undefined> = process.env): Ran {
  const r = Bun.spawnSync(argv, {
    cwd,
    env: { ...env, NO_COLOR: "1", DENO_NO_UPDATE_CHECK: "1", npm_config_update_notifier: "false" },
    stdin: "ignore",
  });
  return { status: r.exitCode, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}
function ok(r: Ran, what: string): Ran {
  if (r.status !== 0) throw new Error(`${what} exited ${r.status}:\n${r.stderr}\n${r.stdout}`);
  return r;
}

/** A Node binary of the lowest supported version: from .cache/ or installed from npm once. */
function lowestNode(): string {
  const dir = join(REPO, ".cache", `node-${LOWEST_NODE}-${process.platform}-${process.arch}`);
  const pkg = `node-${process.platform}-${process.arch}`;
  const bin = join(dir, "node_modules", pkg, "bin", "node");
  if (!existsSync(bin)) {
    mkdirSync(dir, { recursive: true });
    ok(
      run(["npm", "install", "--prefix", dir, "--no-save", "--no-audit", "--no-fund", `${pkg}@${LOWEST_NODE}`], REPO),
      `npm install ${pkg}@${LOWEST_NODE}`,
    );
  }
  return bin;
}

/** The programs of docs/library.md marked `<!-- run: RUNNER FILE -->`, for that runner. */
function docPrograms(runner: "node" | "bun" | "deno"): Array<{ file: string; code: string }> {
  const text = readFileSync(join(REPO, "docs/library.md"), "utf8");
  const out: Array<{ file: string; code: string }> = [];
  for (const m of text.matchAll(/<!-- run: (node|bun|deno) ([\w.-]+) -->\n```\w*\n([\s\S]*?)\n```/g))
    if (m[1] === runner) out.push({ file: m[2]!, code: m[3]! });
  return out;
}

let tarball = "";
let files: string[] = [];
let node = "";
/** PATH with the lowest Node first and no Bun: system folders only. */
let nodePath = "";
let nodeApp = "";

beforeAll(() => {
  const packed = ok(run(["npm", "pack", "--json", "--pack-destination", tmp], REPO), "npm pack");
  const info = (JSON.parse(packed.stdout) as Array<{ filename: string; files: Array<{ path: string }> }>)[0]!;
  tarball = join(tmp, info.filename);
  files = info.files.map((f) => f.path);
  node = lowestNode();
  nodePath = [dirname(node), "/usr/local/bin", "/usr/bin", "/bin"].filter((d) => !existsSync(join(d, "bun"))).join(":");
  nodeApp = join(tmp, "node-app");
  mkdirSync(nodeApp);
  writeFileSync(join(nodeApp, "package.json"), JSON.stringify({ name: "node-app", private: true, type: "module" }));
  ok(run(["npm", "install", "--no-audit", "--no-fund", tarball], nodeApp), "npm install the tarball");
}, 170_000);

describe("the tarball", () => {
  test("holds the compiled JavaScript, declarations, source maps, sources and the bin; no tests, no binary", () => {
    for (const f of [
      "package.json",
      "bin/agentcore.js",
      "dist/mod.js",
      "dist/mod.d.ts",
      "dist/mod.js.map",
      "dist/core/core-wasm.js",
      "dist/entries/testing.js",
      "src/mod.ts",
    ])
      expect(files).toContain(f);
    expect(
      files.filter(
        (f) =>
          f.startsWith("test/") ||
          /\.test\.[jt]s$/.test(f) ||
          f.startsWith("examples/") ||
          f.startsWith("scripts/") ||
          f === "dist/agentcore",
      ),
    ).toEqual([]);
  });
});

describe(`Node ${LOWEST_NODE}, no Bun on PATH`, () => {
  const env = () => ({ PATH: nodePath, HOME: tmp });

  test("the test's PATH has the lowest Node and no bun", () => {
    expect(run(["sh", "-c", "node --version; command -v bun || echo no-bun"], nodeApp, env()).stdout).toBe(`v${LOWEST_NODE}\nno-bun\n`);
  });

  test("import the package and run a scripted agent with a tool", () => {
    writeFileSync(
      join(nodeApp, "agent.mjs"),
      `import { createAgent, createRuntime, parseStrict, VERSION } from "agentcore";
import { ScriptedModel } from "agentcore/testing";
const shout = { name: "shout", description: "upper-cases", parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] }, handler: (a) => a.text.toUpperCase() };
const model = new ScriptedModel([{ content: null, tool_calls: [{ id: "c1", name: "shout", arguments: '{"text":"hi"}' }] }, { content: "done" }]);
const agent = createAgent({ model, runtime: createRuntime({ tools: [shout] }) });
const r = await agent.run("shout hi");
const tool = agent.messages.find((m) => m.role === "tool");
console.log(JSON.stringify({ version: VERSION, status: r.status, output: r.output, tool: tool.content, dup: parseStrict('{"a":1,"a":2}').error.code }));
await agent.shutdown();
`,
    );
    const r = ok(run(["node", "agent.mjs"], nodeApp, env()), "node agent.mjs");
    expect(r.stderr).toBe("");
    expect(JSON.parse(r.stdout)).toEqual({
      version: VERSION,
      status: "completed",
      output: "done",
      tool: expect.stringContaining("HI"),
      dup: "JSON_DUPLICATE_KEY",
    });
  });

  test("the main entry loads none of hono, @modelcontextprotocol/*, openai, yaml (agentcore/server does load hono)", () => {
    writeFileSync(
      join(nodeApp, "hook.mjs"),
      `import { appendFileSync } from "node:fs";
export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  appendFileSync(process.env.RESOLVED_LOG, r.url + "\\n");
  return r;
}
`,
    );
    writeFileSync(join(nodeApp, "register.mjs"), `import { register } from "node:module";\nregister("./hook.mjs", import.meta.url);\n`);
    const loaded = (entry: string): string[] => {
      const log = join(tmp, `resolved-${entry.replace(/\W/g, "_")}.log`);
      writeFileSync(log, "");
      ok(
        run(["node", "--import", "./register.mjs", "--input-type=module", "-e", `await import(${JSON.stringify(entry)});`], nodeApp, {
          ...env(),
          RESOLVED_LOG: log,
        }),
        `import ${entry}`,
      );
      return readFileSync(log, "utf8")
        .split("\n")
        .filter((u) => u !== "");
    };
    const heavy = (urls: string[]) =>
      [
        ...new Set(
          urls
            .map((u) => /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(u)?.[1])
            .filter((p): p is string => p !== undefined && /^(hono|openai|yaml|@modelcontextprotocol\/.*)$/.test(p)),
        ),
      ].sort();
    const main = loaded("agentcore");
    expect(main.some((u) => u.endsWith("/node_modules/agentcore/dist/mod.js"))).toBe(true);
    expect(heavy(main)).toEqual([]);
    expect(heavy(loaded("agentcore/server"))).toContain("hono");
  });

  test("the Node programs of docs/library.md run", () => {
    const programs = docPrograms("node");
    expect(programs.length).toBeGreaterThanOrEqual(2);
    for (const p of programs) {
      writeFileSync(join(nodeApp, p.file), p.code);
      const r = run(["node", p.file], nodeApp, env());
      expect({ file: p.file, status: r.status, stderr: r.stderr }).toEqual({ file: p.file, status: 0, stderr: "" });
    }
  });

  test("npx agentcore --version, agentcore run FILE, and serve says what to do", () => {
    const v = ok(run(["npx", "--no-install", "agentcore", "--version"], nodeApp, env()), "npx agentcore --version");
    expect(v.stdout.trim()).toBe(`agentcore ${VERSION}`);
    writeFileSync(join(nodeApp, "calls.jsonl"), '{"id":"a","tool":"echo","arguments":{"n":1}}\n{"id":"b","tool":"nope","arguments":{}}\n');
    const r = run([join(nodeApp, "node_modules/.bin/agentcore"), "run", "calls.jsonl"], nodeApp, env());
    expect(r.stderr).toBe("");
    expect(r.status).toBe(1);
    const lines = r.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { id: string; success: boolean; error: { code: string } | null });
    expect(lines.map((l) => [l.id, l.success, l.error?.code ?? null])).toEqual([
      ["a", true, null],
      ["b", false, "UNKNOWN_TOOL"],
    ]);
    const s = run([join(nodeApp, "node_modules/.bin/agentcore"), "serve", "--port", "0"], nodeApp, env());
    expect(s.status).toBe(2);
    expect(s.stderr).toContain("Node has neither");
    expect(s.stderr).toContain("bunx --bun agentcore serve");
  });

  test("the PostgreSQL store from the compiled package: append, conflict on a stale head, read back (a real server)", async () => {
    const db = await freshDatabase();
    if (db === null) return void console.warn(`skipping the Node PostgreSQL check: ${skipMessage}`);
    writeFileSync(
      join(nodeApp, "pg.mjs"),
      `import { PostgresSessionStorage, SessionConflictError } from "agentcore/session";
const s = await PostgresSessionStorage.open(process.argv[2]);
const base = { session_id: "node-1", agent_id: "node", branch_id: "main" };
const draft = (sequence) =>
  sequence === 1
    ? { ...base, sequence, type: "run_started", data: { run_id: "r1", task: "t" } }
    : { ...base, sequence, type: "message_appended", data: { run_id: "r1", message: { role: "assistant", content: "hi " + sequence } } };
const first = await s.append(draft(1));
await s.append(draft(2), { checkHead: true, expectedHeadId: first.record_id });
let conflict = null;
try { await s.append(draft(3), { checkHead: true, expectedHeadId: first.record_id }); } catch (e) { conflict = e instanceof SessionConflictError ? e.code : String(e); }
const records = await s.records("node-1");
console.log(JSON.stringify({ revisions: records.map((r) => r.revision), conflict }));
await s.close();
`,
    );
    const r = ok(run(["node", "pg.mjs", db], nodeApp, env()), "node pg.mjs");
    expect(r.stderr).toBe("");
    expect(JSON.parse(r.stdout)).toEqual({ revisions: [1, 2], conflict: "SESSION_CONFLICT" });
  });
});

describe("Bun", () => {
  test("a bun init project (default strict tsconfig) type-checks a program on the public API with 0 errors, and runs it", () => {
    const app = join(tmp, "bun-app");
    mkdirSync(app);
    const env = { ...process.env, PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ""}` };
    ok(run([process.execPath, "init", "-y"], app, env), "bun init");
    const tsconfig = readFileSync(join(app, "tsconfig.json"), "utf8");
    expect(tsconfig).toContain('"noUncheckedIndexedAccess": true');
    ok(run([process.execPath, "add", tarball], app, env), "bun add the tarball");
    writeFileSync(
      join(app, "index.ts"),
      `import { createAgent, createRuntime, type AgentEvent, type ToolDefinition } from "agentcore";
import { ScriptedModel } from "agentcore/testing";
import { workspaceTools } from "agentcore/workspace";

const shout: ToolDefinition<{ text: string }> = {
  name: "shout",
  description: "Upper-cases a text",
  parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"], additionalProperties: false },
  handler: (args) => args.text.toUpperCase(),
};
const kinds: AgentEvent["kind"][] = [];
const model = new ScriptedModel([{ content: null, tool_calls: [{ id: "c1", name: "shout", arguments: '{"text":"hi"}' }] }, { content: "done" }]);
const agent = createAgent({ model, runtime: createRuntime({ tools: [shout, ...workspaceTools({ glob: true }, ".")] }), sinks: [(e) => void kinds.push(e.kind)] });
const result = await agent.run("shout hi");
const first = model.requests[0];
console.log(result.status, result.output, first?.messages.length, kinds.includes("tool_completed"));
await agent.shutdown();
`,
    );
    const programs = docPrograms("bun");
    expect(programs.length).toBeGreaterThanOrEqual(1);
    for (const p of programs) writeFileSync(join(app, p.file), p.code);
    // the project's own TypeScript when bun init installed one, and the repository's
    const compilers = [join(app, "node_modules/.bin/tsc"), join(REPO, "node_modules/.bin/tsc")].filter((p) => existsSync(p));
    for (const tsc of compilers) {
      for (const extra of [[], ["--skipLibCheck", "false"]]) {
        const r = run([tsc, "--noEmit", "-p", ".", ...extra], app, env);
        expect({ tsc, extra, out: r.stdout + r.stderr, status: r.status }).toEqual({ tsc, extra, out: "", status: 0 });
      }
    }
    const r = ok(run([process.execPath, "index.ts"], app, env), "bun index.ts");
    expect(r.stdout).toBe("completed done 1 true\n");
    for (const p of programs) {
      const d = run([process.execPath, p.file], app, env);
      expect({ file: p.file, status: d.status, stderr: d.stderr }).toEqual({ file: p.file, status: 0, stderr: "" });
    }
  }, 120_000);
});

describe("Deno", () => {
  test("deno run of a script importing the package (the compiled JavaScript)", () => {
    writeFileSync(
      join(nodeApp, "deno.ts"),
      `import { createAgent, parseStrict, VERSION } from "agentcore";
import { ScriptedModel } from "agentcore/testing";
const agent = createAgent({ model: new ScriptedModel([{ content: "from deno" }]) });
const r = await agent.run("hi");
console.log(VERSION, r.status, r.output, parseStrict('{"a":[1]}').ok);
await agent.shutdown();
`,
    );
    const r = ok(run([join(REPO, "node_modules/.bin/deno"), "run", "--allow-read", "--allow-env", "deno.ts"], nodeApp), "deno run");
    expect(r.stdout).toBe(`${VERSION} completed from deno true\n`);
  }, 60_000);

  test("the Deno programs of docs/library.md run (and print true where they compare)", () => {
    const programs = docPrograms("deno");
    expect(programs.length).toBeGreaterThanOrEqual(1);
    for (const p of programs) {
      writeFileSync(join(nodeApp, p.file), p.code);
      const r = run([join(REPO, "node_modules/.bin/deno"), "run", "--allow-read", "--allow-write", "--allow-env", p.file], nodeApp);
      expect({ file: p.file, status: r.status, stderr: r.stderr, out: r.stdout.trim().split("\n").at(-1) }).toEqual({
        file: p.file,
        status: 0,
        stderr: "",
        out: "true",
      });
    }
  }, 60_000);
});
