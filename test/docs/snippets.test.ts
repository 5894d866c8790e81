/**
 * The TypeScript examples of docs/api.md and of docs/agent.md's Scripted models
 * run as written (their `./src/…` imports resolved from the repository root)
 * and print what their comments say.
 */
import { afterAll, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { REPO } from "../support/binary.ts";
import { tmp } from "../support/tmp.ts";

const work = tmp("agentcore-snippets-");
afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

/** The first ```ts block after `marker` in a page, with its imports made absolute. */
function snippet(page: string, marker: string): string {
  const text = fs.readFileSync(path.join(REPO, page), "utf8");
  const at = text.indexOf(marker);
  expect(at).toBeGreaterThanOrEqual(0);
  const m = /```ts\n([\s\S]*?)```/.exec(text.slice(at));
  expect(m).not.toBeNull();
  return m![1]!.replace(/from "\.\/src\//g, `from "${path.join(REPO, "src")}/`);
}

function run(name: string, code: string): string {
  const file = path.join(work, name);
  fs.writeFileSync(file, code);
  const r = Bun.spawnSync([process.execPath, file], { cwd: REPO, env: { PATH: process.env.PATH ?? "/usr/bin:/bin" } });
  expect(r.stderr.toString()).toBe("");
  expect(r.exitCode).toBe(0);
  return r.stdout.toString();
}

test("docs/api.md: the dispatch example prints the envelope of add", () => {
  const out = run("api.ts", snippet("docs/api.md", "```ts"));
  expect(out).toMatch(/^\{"id":"1","success":true,"tool":"add","result":\{"sum":42\},"error":null,"duration_ms":[0-9.]+\}\n$/);
});

test("docs/agent.md: the ScriptedModel example completes with the scripted answer", () => {
  const out = run("agent.ts", snippet("docs/agent.md", "## Scripted models"));
  expect(out).toContain('status: "completed"');
  expect(out).toContain('stop_reason: "text_response"');
  expect(out).toContain('output: "hi"');
});
