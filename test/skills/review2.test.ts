/**
 * Acceptance-review regression (second review): `skills list` prints what a
 * SKILL.md says to the terminal, so its control characters must not go out raw.
 */
import { afterAll, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { REPO } from "../support/binary.ts";
import { cleanupRoots, tempRoot, writeTree } from "./support.ts";

setDefaultTimeout(60_000);
afterAll(() => cleanupRoots());

test("skills list: escape sequences and C1 controls in a description are shown as \\xNN, not sent to the terminal (--json keeps the text)", () => {
  const root = tempRoot();
  writeTree(root, {
    "skills/evil/SKILL.md": '---\nname: evil\ndescription: "hi \\e]0;pwned\\a\\e[2J there\\u009b31m"\n---\nbody\n',
    "skills/plain/SKILL.md": "---\ndescription: |\n  two\n  lines\n---\n",
  });
  const run = (...args: string[]) => Bun.spawnSync([process.execPath, join(REPO, "src/cli/main.ts"), "skills", "list", "--dir", join(root, "skills"), ...args], { cwd: root, env: { PATH: process.env.PATH ?? "/usr/bin:/bin" } });
  const r = run();
  expect(r.exitCode).toBe(0);
  const text = r.stdout.toString();
  expect(text).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
  expect(text).toContain("evil   -       hi \\x1b]0;pwned\\x07\\x1b[2J there\\x9b31m\n");
  expect(text).toContain("plain  -       two lines\n");
  const j = run("--json");
  expect(JSON.parse(j.stdout.toString()).skills[0].description).toBe("hi \u001b]0;pwned\u0007\u001b[2J there\u009b31m");
});

test("skills --help names every command that activates skills (agent, chat and serve; it said agent only)", () => {
  const r = Bun.spawnSync([process.execPath, join(REPO, "src/cli/main.ts"), "skills", "--help"], { env: { PATH: process.env.PATH ?? "/usr/bin:/bin" } });
  expect(r.exitCode).toBe(0);
  expect(r.stdout.toString().replace(/\s+/g, " ")).toContain("activates it in 'agentcore agent', 'agentcore chat' and runs of 'agentcore serve'");
});
