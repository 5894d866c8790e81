// Nothing but a PostgreSQL store loads the PostgreSQL client (`pg`): not the
// main entry, not agentcore/session, not the CLI's tools, run, agent or
// sessions with JSONL, not openStore() of a folder. A store given as a
// postgres:// URL does load it (so the check can fail). Checked in child
// processes through require.cache (pg is CommonJS), and in the bundles:
// src/mod.ts and src/cli/main.ts import pg only with import().
import { describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { tmp } from "../support/tmp.ts";

const REPO = path.resolve(import.meta.dir, "../..");

/** Run `body` (TypeScript, top-level await) in a child Bun process; returns how many pg modules it loaded. */
function pgModulesAfter(body: string): { loaded: number; stderr: string } {
  const dir = tmp("agentcore-pg-lazy-");
  const file = path.join(dir, "probe.ts");
  fs.writeFileSync(
    file,
    `import { createRequire } from "node:module";
const REPO = ${JSON.stringify(REPO)};
${body}
const cache = createRequire(import.meta.url).cache;
console.log("PG_MODULES=" + Object.keys(cache).filter((k) => /[\\\\/]node_modules[\\\\/]pg[\\\\/]/.test(k)).length);
`,
  );
  const p = Bun.spawnSync([process.execPath, file], {
    cwd: dir,
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, AGENTCORE_STORE: "" },
  });
  const out = p.stdout.toString();
  const m = /PG_MODULES=(\d+)/.exec(out);
  if (m === null) throw new Error(`probe failed (${p.exitCode}): ${out}\n${p.stderr.toString()}`);
  return { loaded: Number(m[1]), stderr: p.stderr.toString() };
}

describe("the PostgreSQL client is loaded only for a PostgreSQL store", () => {
  test("importing the main entry and agentcore/session loads no pg", () => {
    expect(pgModulesAfter(`await import(REPO + "/src/mod.ts"); await import(REPO + "/src/entries/session.ts");`).loaded).toBe(0);
  });

  test("the CLI's tools, run and sessions list (JSONL), and openStore of a folder, load no pg", () => {
    const r = pgModulesAfter(`
const { main } = await import(REPO + "/src/cli/main.ts");
const { openStore } = await import(REPO + "/src/host/store.ts");
const codes = [await main(["tools"]), await main(["sessions", "list", "--sessions-dir", "s"])];
await Bun.write("calls.jsonl", '{"id":"a","tool":"echo","arguments":{"message":"x"}}\\n');
codes.push(await main(["run", "calls.jsonl"]));
const store = await openStore("./sessions-here");
const none = await openStore(undefined, { root: "." });
console.error(JSON.stringify({ codes, kinds: [store.kind, none.kind] }));
`);
    expect(r.stderr).toContain('"codes":[0,0,0]');
    expect(r.stderr).toContain('"kinds":["jsonl","jsonl"]');
    expect(r.loaded).toBe(0);
  });

  test("a postgres:// store does load it (the check sees pg)", () => {
    const r = pgModulesAfter(`
const { openStore } = await import(REPO + "/src/host/store.ts");
await openStore("postgres://nobody@127.0.0.1:1/none").catch((e) => console.error(e.name));
`);
    expect(r.stderr).toContain("SessionStorageError");
    expect(r.loaded).toBeGreaterThan(0);
  });

  test("the bundles of src/mod.ts and src/cli/main.ts import pg (and pg-boss, cluster mode's queue) only with import()", async () => {
    for (const entry of ["src/mod.ts", "src/cli/main.ts", "src/entries/session.ts"]) {
      const out = await Bun.build({ entrypoints: [path.join(REPO, entry)], target: "bun", format: "esm", packages: "external" });
      if (!out.success) throw new Error(out.logs.map(String).join("\n"));
      const code = await out.outputs[0]!.text();
      const staticPg = [
        ...code.matchAll(/(?:^|[;\s])(?:import|export)\s*(?:[\w*${}\s,]+from\s*)?["'](pg(?:-boss)?(?:\/[^"']*)?)["']/gm),
      ].map((m) => m[1]);
      const requirePg = [...code.matchAll(/\brequire\(\s*["'](pg(?:-boss)?(?:\/[^"']*)?)["']\s*\)/g)].map((m) => m[1]);
      expect({ entry, static: staticPg, require: requirePg }).toEqual({ entry, static: [], require: [] });
    }
  });
});
