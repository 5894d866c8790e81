/**
 * `agentcore skills list` and `agentcore agent --skills` as processes: the
 * source CLI under bun, and the compiled binary for the example skills and
 * the example activation script.
 */
import { afterAll, afterEach, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, realpathSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { binaryPath, REPO } from "../support/binary.ts";
import { startOpenAIServer, textReply, type ScriptedOpenAIServer } from "../support/openai-server.ts";
import { cleanupRoots, skillsRoot, tempRoot, writeTree } from "../support/skills.ts";

afterAll(cleanupRoots);
// Each test starts the CLI several times; on a loaded machine that outlasts bun's 5 s default.
setDefaultTimeout(60_000);

const CLEAN_ENV = { PATH: process.env.PATH ?? "/usr/bin:/bin" };
const MAIN = join(REPO, "src", "cli", "main.ts");
const EXAMPLES = join(REPO, "examples", "skills");

async function exec(cmd: string[], cwd: string, env: Record<string, string> = {}) {
  const p = Bun.spawn(cmd, { cwd, stdin: "ignore", stdout: "pipe", stderr: "pipe", env: { ...CLEAN_ENV, ...env } });
  const [stdout, stderr, status] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { status, stdout, stderr };
}

/** The source CLI under bun. */
const cli = (args: string[], cwd = REPO, env: Record<string, string> = {}) => exec([process.execPath, MAIN, ...args], cwd, env);

type Ev = { kind: string; [k: string]: unknown };
const events = (stdout: string): Ev[] =>
  stdout
    .trimEnd()
    .split("\n")
    .map((l) => JSON.parse(l) as Ev);

const EXPECTED_TEXT = [
  "NAME            EXTRAS           DESCRIPTION",
  "commit-message  -                Write a conventional commit message for a described change.",
  "release-notes   template,sample  Turn a list of changes into user-facing release notes, grouped by kind.",
  "",
  `2 skills in ${EXAMPLES}; activate one with $name or skill:name in a task`,
  "",
].join("\n");

const EXPECTED_JSON = {
  root: EXAMPLES,
  skills: [
    {
      name: "commit-message",
      description: "Write a conventional commit message for a described change.",
      path: join(EXAMPLES, "commit-message", "SKILL.md"),
      template: null,
      sample: null,
    },
    {
      name: "release-notes",
      description: "Turn a list of changes into user-facing release notes, grouped by kind.",
      path: join(EXAMPLES, "release-notes", "SKILL.md"),
      template: join(EXAMPLES, "release-notes", "template.md"),
      sample: join(EXAMPLES, "release-notes", "examples", "sample.md"),
    },
  ],
};

describe("agentcore skills list (source)", () => {
  test("text on examples/skills", async () => {
    const r = await cli(["skills", "list", "--dir", "examples/skills"]);
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    expect(r.stdout).toBe(EXPECTED_TEXT);
  });

  test("--json on examples/skills", async () => {
    const r = await cli(["skills", "list", "--json", "--dir", "examples/skills"]);
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual(EXPECTED_JSON);
  });

  test('a skill without description shows the default in text, and "" in JSON', async () => {
    const root = skillsRoot({ "plain/SKILL.md": "no front matter\n" });
    const text = await cli(["skills", "list", "--dir", root]);
    expect(text.stdout.split("\n")[1]).toBe("plain  -       No description provided.");
    expect(text.stdout).toContain("1 skill in ");
    const json = await cli(["skills", "list", "--json", "--dir", root]);
    expect(JSON.parse(json.stdout).skills[0]).toMatchObject({ name: "plain", description: "" });
  });

  test("default folder: .agentcore/skills under --root, or a note when it does not exist", async () => {
    const root = tempRoot();
    const none = await cli(["skills", "list", "--root", root]);
    expect(none.status).toBe(0);
    const expectedDir = join(root, ".agentcore", "skills");
    expect(none.stdout).toBe(`no skills: ${expectedDir} does not exist (create it, or pass --dir DIR)\n`);
    expect(JSON.parse((await cli(["skills", "list", "--json", "--root", root])).stdout)).toEqual({ root: expectedDir, skills: [] });

    writeTree(root, { ".agentcore/skills/mine/SKILL.md": "---\ndescription: local\n---\n" });
    const some = await cli(["skills", "list", "--json"], root);
    expect(JSON.parse(some.stdout).skills.map((s: { name: string }) => s.name)).toEqual(["mine"]);

    const empty = tempRoot();
    mkdirSync(join(empty, ".agentcore", "skills"), { recursive: true });
    expect((await cli(["skills", "list"], empty)).stdout).toBe(
      `no skills in ${realpathSync(join(empty, ".agentcore", "skills"))} (a skill is a folder holding SKILL.md)\n`,
    );
  });

  test("the config's skills_dir, relative to the config file; --dir overrides it", async () => {
    const dir = tempRoot();
    writeTree(dir, { "conf/agentcore.jsonc": '{ // settings\n "skills_dir": "../my-skills" }\n', "my-skills/s1/SKILL.md": "x" });
    const r = await cli(["skills", "list", "--json", "--config", join(dir, "conf", "agentcore.jsonc")]);
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout).skills.map((s: { name: string }) => s.name)).toEqual(["s1"]);
    const env = await cli(["skills", "list", "--json"], REPO, { AGENTCORE_CONFIG: join(dir, "conf", "agentcore.jsonc") });
    expect(JSON.parse(env.stdout).skills.map((s: { name: string }) => s.name)).toEqual(["s1"]);
    const over = await cli(["skills", "list", "--json", "--dir", "examples/skills", "--config", join(dir, "conf", "agentcore.jsonc")]);
    expect(JSON.parse(over.stdout).skills).toHaveLength(2);
    writeFileSync(join(dir, "conf", "bad.jsonc"), '{ "skills_dir": 3 }');
    const bad = await cli(["skills", "list", "--config", join(dir, "conf", "bad.jsonc")]);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('"skills_dir" must be a non-empty string');
  });

  test("errors exit 2 with a message that names the problem", async () => {
    const missing = await cli(["skills", "list", "--dir", "no/such/folder"]);
    expect(missing.status).toBe(2);
    expect(missing.stdout).toBe("");
    expect(missing.stderr).toBe(`agentcore skills: skills root not found: ${join(REPO, "no/such/folder")}\n`);

    const root = skillsRoot({ "broken/SKILL.md": "---\nname: broken\ndescription: [open\n---\n" });
    const broken = await cli(["skills", "list", "--dir", root]);
    expect(broken.status).toBe(2);
    expect(broken.stderr).toMatch(
      new RegExp(
        `^agentcore skills: ${join(realpathSync(root), "broken", "SKILL.md").replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}:3:\\d+: invalid YAML in the front matter`,
      ),
    );

    for (const args of [
      ["skills"],
      ["skills", "show"],
      ["skills", "list", "extra"],
      ["skills", "list", "--bogus"],
      ["skills", "list", "--dir", ""],
    ]) {
      const r = await cli(args);
      expect(r.status).toBe(2);
      expect(r.stderr).toContain("agentcore skills: ");
      expect(r.stdout).toBe("");
    }
  });

  test("--help, and --skills refused outside agent and chat", async () => {
    const h = await cli(["skills", "--help"]);
    expect(h.status).toBe(0);
    expect(h.stdout).toContain("agentcore skills list [--json] [--dir DIR]");
    const main = await cli(["--help"]);
    expect(main.stdout).toContain("  skills    list the skills a task can activate with $name");
    expect((await cli(["agent", "--help"])).stdout).toContain("--skills DIR");
    const t = await cli(["tools", "--skills", "examples/skills"]);
    expect(t.status).toBe(2);
    expect(t.stderr).toContain("--skills applies to 'agent', 'chat' and 'serve' only, not to 'tools'");
  });
});

describe("agentcore agent --skills (source)", () => {
  let server: ScriptedOpenAIServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  test("the model receives the index and the active skill over HTTP", async () => {
    server = await startOpenAIServer([textReply("## 2.0.0\n\n### Fixed\n- A crash.", [300, 12])]);
    const r = await cli(
      [
        "agent",
        "--no-plan",
        "--events",
        "jsonl",
        "--skills",
        "examples/skills",
        "--model-url",
        server.baseURL,
        "--model",
        "m",
        "skill:Release-Notes 2.0.0: fixed a crash",
      ],
      REPO,
      { MODEL_API_KEY: "sk-test" },
    );
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    const ev = events(r.stdout);
    expect(ev.find((e) => e.kind === "skill_activated")).toMatchObject({
      name: "release-notes",
      trigger: "run_start",
      path: join(EXAMPLES, "release-notes", "SKILL.md"),
    });
    const msgs = (server.requests[0]!.body as { messages: { role: string; content: string }[] }).messages;
    expect(msgs.map((m) => m.role)).toEqual(["system", "system", "user"]);
    expect(msgs[0]!.content).toContain(`location: ${join(EXAMPLES, "commit-message", "SKILL.md")}`);
    expect(msgs[1]!.content).toStartWith("Active skill: release-notes.");
    expect(msgs[1]!.content).toContain("[examples/sample.md]");
  });

  test("the default .agentcore/skills under --root, and the config's skills_dir", async () => {
    const root = tempRoot();
    writeTree(root, {
      ".agentcore/skills/local/SKILL.md": "---\ndescription: from the default folder\n---\nLOCAL",
      "elsewhere/other/SKILL.md": "OTHER",
      "agentcore.jsonc": '{ "skills_dir": "elsewhere" }',
      "script.jsonl": '{"content": "ok"}\n',
    });
    const a = await cli(["agent", "--no-plan", "--events", "jsonl", "--root", root, "--script", join(root, "script.jsonl"), "$local now"]);
    expect(a.status).toBe(0);
    expect(events(a.stdout).find((e) => e.kind === "skill_activated")).toMatchObject({ name: "local" });
    const b = await cli([
      "agent",
      "--no-plan",
      "--events",
      "jsonl",
      "--config",
      join(root, "agentcore.jsonc"),
      "--script",
      join(root, "script.jsonl"),
      "$other now",
    ]);
    expect(b.status).toBe(0);
    expect(events(b.stdout).find((e) => e.kind === "skill_activated")).toMatchObject({ name: "other" });
    // Without any skills folder there is no skill event and no error.
    const c = await cli([
      "agent",
      "--no-plan",
      "--events",
      "jsonl",
      "--root",
      tempRoot(),
      "--script",
      join(root, "script.jsonl"),
      "$local",
    ]);
    expect(c.status).toBe(0);
    expect(events(c.stdout).map((e) => e.kind)).not.toContain("skill_activated");
  });

  test("a missing --skills folder or a bad skill stops before the model starts (exit 2)", async () => {
    const missing = await cli(["agent", "--skills", "nowhere", "--script", "examples/skills_script.jsonl", "$x"]);
    expect(missing.status).toBe(2);
    expect(missing.stdout).toBe("");
    expect(missing.stderr).toContain(`skills root not found: ${join(REPO, "nowhere")}`);
    const root = skillsRoot({ "a/SKILL.md": "---\nname: same\n---\n", "b/SKILL.md": "---\nname: same\n---\n" });
    const dup = await cli(["agent", "--skills", root, "--script", "examples/skills_script.jsonl", "$same"]);
    expect(dup.status).toBe(2);
    expect(dup.stderr).toContain("duplicate skill name 'same'");
  });

  test("an oversized template.md is a bad skill too: found before the run (exit 2), not when the skill activates", async () => {
    const big = skillsRoot({ "big/SKILL.md": "---\nname: big\n---\nBody.\n", "big/template.md": "x".repeat(300_000) });
    const tpl = await cli(["agent", "--skills", big, "--script", "examples/skills_script.jsonl", "$big"]);
    expect(tpl.status).toBe(2);
    expect(tpl.stdout).toBe("");
    expect(tpl.stderr).toContain("template.md: 300000 bytes, more than the 262144-byte limit for skill files");
  });
});

describe("deno run", () => {
  test("skills list --json and the example activation under Deno", async () => {
    const deno = join(REPO, "node_modules", ".bin", "deno");
    const env = { ...(process.env as Record<string, string>), DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1" };
    const list = await exec([deno, "run", "--allow-read", "--allow-env", MAIN, "skills", "list", "--json", "--dir", EXAMPLES], REPO, env);
    expect(list.stderr).toBe("");
    expect(JSON.parse(list.stdout)).toEqual(EXPECTED_JSON);
    const run = await exec(
      [
        deno,
        "run",
        "--allow-read",
        "--allow-env",
        MAIN,
        "agent",
        "--events",
        "jsonl",
        "--script",
        "examples/skills_script.jsonl",
        "--skills",
        "examples/skills",
        "$release-notes 1.4.0",
      ],
      REPO,
      env,
    );
    expect(run.status).toBe(0);
    expect(events(run.stdout)[1]).toMatchObject({ kind: "skill_activated", name: "release-notes", trigger: "run_start" });
  }, 120_000);
});

describe("compiled binary", () => {
  let bin: string;
  let cwd: string;
  beforeAll(() => {
    bin = binaryPath();
    cwd = tempRoot();
  }, 180_000);

  test("skills list on examples/skills (text and --json)", async () => {
    const text = await exec([bin, "skills", "list", "--dir", EXAMPLES], cwd);
    expect(text.status).toBe(0);
    expect(text.stdout).toBe(EXPECTED_TEXT);
    const json = await exec([bin, "skills", "list", "--json", "--dir", EXAMPLES], cwd);
    expect(JSON.parse(json.stdout)).toEqual(EXPECTED_JSON);
  });

  test("the example: agent --script examples/skills_script.jsonl --skills examples/skills '$release-notes …'", async () => {
    const script = join(REPO, "examples", "skills_script.jsonl");
    const task = "$release-notes 1.4.0: added skills list --json; fixed a parser crash on empty input";
    const plain = await exec([bin, "agent", "--script", script, "--skills", EXAMPLES, task], cwd);
    expect(plain.stderr).toBe("");
    expect(plain.status).toBe(0);
    expect(plain.stdout).toStartWith("## 1.4.0\n\n### Added\n");
    const r = await exec([bin, "agent", "--events", "jsonl", "--script", script, "--skills", EXAMPLES, task], cwd);
    expect(r.status).toBe(0);
    const ev = events(r.stdout);
    expect(ev.slice(0, 3).map((e) => e.kind)).toEqual(["agent_started", "skill_activated", "turn_started"]);
    expect(ev[1]).toMatchObject({ name: "release-notes", path: join(EXAMPLES, "release-notes", "SKILL.md"), trigger: "run_start" });
    expect(ev.at(-1)).toMatchObject({ kind: "agent_finished", result: { status: "completed", stop_reason: "text_response" } });
  });
});

describe("skills list and skills --help: what reaches the terminal", () => {
  test("skills list: escape sequences and C1 controls in a description are shown as \\xNN, not sent to the terminal (--json keeps the text)", () => {
    const root = tempRoot();
    writeTree(root, {
      "skills/evil/SKILL.md": '---\nname: evil\ndescription: "hi \\e]0;pwned\\a\\e[2J there\\u009b31m"\n---\nbody\n',
      "skills/plain/SKILL.md": "---\ndescription: |\n  two\n  lines\n---\n",
    });
    const run = (...args: string[]) =>
      Bun.spawnSync([process.execPath, join(REPO, "src/cli/main.ts"), "skills", "list", "--dir", join(root, "skills"), ...args], {
        cwd: root,
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
      });
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
    const r = Bun.spawnSync([process.execPath, join(REPO, "src/cli/main.ts"), "skills", "--help"], {
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
    });
    expect(r.exitCode).toBe(0);
    expect(r.stdout.toString().replace(/\s+/g, " ")).toContain(
      "activates it in 'agentcore agent', 'agentcore chat' and runs of 'agentcore serve'",
    );
  });
});
