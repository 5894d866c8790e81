/**
 * The command line as a new user meets it, through the compiled binary:
 * every command takes exactly its own flags and has its own --help; a typo
 * gets a sentence and the nearest flag or command; only usage errors point at
 * --help (and at the command's own); messages name the flag or variable the
 * user sets, never the library's field.
 */
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { COMMANDS, COMMAND_NAMES, SESSIONS_SUBCOMMANDS, editDistance, nearest } from "../../src/cli/args.ts";
import { binaryPath } from "../support/binary.ts";
import { tmp } from "../support/tmp.ts";

setDefaultTimeout(60_000);

const work = tmp("agentcore-usage-");
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** A clean environment: no model variables leak in from the machine running the tests. */
const CLEAN_ENV = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: work };

function run(args: string[], env: Record<string, string> = {}, cwd = work): { status: number | null; stdout: string; stderr: string } {
  const p = Bun.spawnSync([binaryPath(), ...args], { cwd, stdin: "ignore", stdout: "pipe", stderr: "pipe", env: { ...CLEAN_ENV, ...env } });
  return { status: p.exitCode, stdout: p.stdout.toString(), stderr: p.stderr.toString() };
}

/** A usage error of `command`: exit 2, nothing on stdout, the message, then the pointer to that command's help. */
function expectUsage(r: ReturnType<typeof run>, command: string, message: string) {
  expect(r.status).toBe(2);
  expect(r.stdout).toBe("");
  const who = command === "" ? "agentcore" : `agentcore ${command}`;
  expect(r.stderr).toBe(`${who}: ${message}\nRun '${who} --help' for usage.\n`);
}

/** Not a usage error: exit 2, the message, and no pointer to --help. */
function expectPlain(r: ReturnType<typeof run>, contains: string) {
  expect(r.status).toBe(2);
  expect(r.stderr).toContain(contains);
  expect(r.stderr).not.toContain("--help");
  expect(r.stderr).not.toContain("for usage");
}

const script = join(work, "script.jsonl");
writeFileSync(script, '{"content": "done"}\n');

/** Each command with the arguments that make it otherwise valid (so only the flag is wrong). */
const INVOCATIONS: [string, string[]][] = [
  ["tools", ["tools"]],
  ["execute", ["execute", '{"id":"c1","tool":"echo","arguments":{"message":"hi"}}']],
  ["run", ["run", "-"]],
  ["agent", ["agent", "--script", script, "hello"]],
  ["chat", ["chat", "--script", script]],
  ["serve", ["serve", "--port", "0"]],
  ["skills", ["skills", "list"]],
  ["history", ["history", "--file", join(work, "h.jsonl")]],
  ["mcp", ["mcp"]],
  ...Object.keys(SESSIONS_SUBCOMMANDS).map((s): [string, string[]] => [
    `sessions ${s}`,
    ["sessions", s, ...(s === "list" ? [] : ["demo"])],
  ]),
];

describe("each command takes exactly its flags, and has its own --help", () => {
  test("agent --json is refused (exit 2), naming where --json applies", () => {
    const r = run(["agent", "--json", "--script", script, "hello"]);
    expectUsage(r, "agent", "--json applies to 'tools', 'sessions', 'skills', 'history', 'store' and 'version' only, not to 'agent'");
  });

  test("every command refuses an unknown flag, with the hint to its own help", () => {
    for (const [command, args] of INVOCATIONS) {
      const r = run([...args, "--frobnicate"]);
      expectUsage(r, command, "unknown option --frobnicate");
    }
  });

  test("a flag of another command is refused and says which commands take it", () => {
    expectUsage(run(["chat", "--events", "jsonl", "--script", script]), "chat", "--events applies to 'agent' only, not to 'chat'");
    expectUsage(run(["tools", "--script", script]), "tools", "--script applies to 'agent' and 'chat' only, not to 'tools'");
    expectUsage(
      run(["execute", "--json", "{}"]),
      "execute",
      "--json applies to 'tools', 'sessions', 'skills', 'history', 'store' and 'version' only, not to 'execute'",
    );
    expectUsage(
      run(["tools", "--history", "h.jsonl"]),
      "tools",
      "--history applies to 'execute', 'run', 'agent', 'chat', 'history' and 'mcp' only, not to 'tools'",
    );
    expectUsage(run(["history", "--root", "."]), "history", "--root is not an option of 'history'");
    expectUsage(
      run(["sessions", "show", "demo", "--force"]),
      "sessions show",
      "--force applies to 'sessions recover' and 'sessions delete' only, not to 'sessions show'",
    );
    expectUsage(run(["serve", "--script", script]), "serve", "--script applies to 'agent' and 'chat' only, not to 'serve'");
  });

  test("every command's --help is its own: usage line, each of its flags, exit statuses; not the overview", () => {
    const overview = run(["--help"]);
    expect(overview.status).toBe(0);
    const helps = new Set<string>();
    for (const command of [
      ...COMMAND_NAMES.filter((c) => c !== "sessions"),
      ...Object.keys(SESSIONS_SUBCOMMANDS).map((s) => `sessions ${s}`),
    ]) {
      const r = run([...command.split(" "), "--help"]);
      expect(r.status).toBe(0);
      expect(r.stderr).toBe("");
      expect(r.stdout).not.toBe(overview.stdout);
      expect(r.stdout).toStartWith(`Usage: agentcore ${command}`);
      expect(r.stdout).toContain("Exit status:");
      const table = command.startsWith("sessions ")
        ? SESSIONS_SUBCOMMANDS[command.slice(9) as keyof typeof SESSIONS_SUBCOMMANDS]
        : COMMANDS[command as Exclude<keyof typeof COMMANDS, "sessions">].options;
      for (const flag of Object.keys(table)) expect(r.stdout).toContain(`--${flag}`);
      helps.add(r.stdout);
      // -h and --help before the command say the same
      expect(run(["--help", ...command.split(" ")]).stdout).toBe(r.stdout);
    }
    // all different from each other (the six commands used to print the same 103 lines)
    expect(helps.size).toBe(COMMAND_NAMES.length - 1 + Object.keys(SESSIONS_SUBCOMMANDS).length);
    // a flag of agent but not of tools is in one help only
    expect(run(["agent", "--help"]).stdout).toContain("--max-steps N");
    expect(run(["tools", "--help"]).stdout).not.toContain("--max-steps");
    expect(run(["chat", "--help"]).stdout).not.toContain("--events");
  });

  test("agentcore --help is a short overview: one line per command and where the details are", () => {
    const r = run(["--help"]);
    expect(r.status).toBe(0);
    const lines = r.stdout.trimEnd().split("\n");
    expect(lines.length).toBeLessThan(45);
    for (const c of COMMAND_NAMES) expect(lines.some((l) => l.startsWith(`  ${c} `))).toBe(true);
    expect(r.stdout).toContain("agentcore COMMAND --help");
    expect(run(["-h"]).stdout).toBe(r.stdout);
  });

  test("options before the command still reach it (sessions, tools, skills)", () => {
    const root = join(work, "root");
    mkdirSync(root, { recursive: true });
    const s = run(["--root", root, "sessions", "list"]);
    expect(s).toEqual({ status: 0, stdout: "no sessions\n", stderr: "" });
    const t = run(["--json", "tools"]);
    expect(t.status).toBe(0);
    expect(Array.isArray(JSON.parse(t.stdout))).toBe(true);
    const k = run(["--root", root, "skills", "list", "--json"]);
    expect(k.status).toBe(0);
    expect(JSON.parse(k.stdout).skills).toEqual([]);
    // an option of the command written before it is still checked against it
    expectUsage(
      run(["--json", "agent", "--script", script, "x"]),
      "agent",
      "--json applies to 'tools', 'sessions', 'skills', 'history', 'store' and 'version' only, not to 'agent'",
    );
  });
});

describe("what is wrong, in a sentence, with the nearest flag or command", () => {
  test("mistyped flags suggest the nearest one of that command", () => {
    expectUsage(run(["agent", "--scirpt", script, "x"]), "agent", "unknown option --scirpt; did you mean --script?");
    expectUsage(
      run(["agent", "--max-step", "3", "--script", script, "x"]),
      "agent",
      "unknown option --max-step; did you mean --max-steps?",
    );
    expectUsage(run(["tools", "--jsno"]), "tools", "unknown option --jsno; did you mean --json?");
    expectUsage(run(["serve", "--prot", "0"]), "serve", "unknown option --prot; did you mean --port?");
    expectUsage(run(["history", "--flie", "h.jsonl"]), "history", "unknown option --flie; did you mean --file?");
    expectUsage(run(["sessions", "show", "demo", "--brnach", "b"]), "sessions show", "unknown option --brnach; did you mean --branch?");
    expectUsage(run(["skills", "list", "--dri", "x"]), "skills", "unknown option --dri; did you mean --dir?");
    expectUsage(run(["chat", "--Model", "m"]), "chat", "unknown option --Model; did you mean --model?");
    // nothing near: no guess
    expectUsage(run(["tools", "--xyzzy"]), "tools", "unknown option --xyzzy");
    expectUsage(run(["agent", "-q", "x"]), "agent", "unknown option -q");
  });

  test("mistyped commands and subcommands suggest the nearest one", () => {
    expectUsage(run(["sesions", "list"]), "", "unknown command 'sesions'; did you mean 'sessions'?");
    expectUsage(run(["agnet", "x"]), "", "unknown command 'agnet'; did you mean 'agent'?");
    expectUsage(
      run(["exec", "{}"]),
      "",
      "unknown command 'exec' (commands: tools, execute, run, agent, chat, sessions, serve, skills, history, store, mcp, version)",
    );
    expectUsage(
      run(["sessions", "shwo", "demo"]),
      "sessions",
      "unknown subcommand 'shwo'; did you mean 'show'? (subcommands: list, show, tree, fork, rollback, retry, recover, delete, approvals, approve, deny, export, import)",
    );
    expectUsage(run(["skills", "lsit"]), "skills", "unknown subcommand 'lsit'; did you mean 'list'? (subcommands: list)");
    // a control character in the word is shown escaped
    expect(run(["ag\u001bent"]).stderr).toContain("unknown command 'ag\\x1bent'");
  });

  test("missing and bad values say which flag and what it expects", () => {
    expectUsage(run(["agent", "--script", script, "x", "--max-steps"]), "agent", "option --max-steps needs a value (--max-steps N)");
    expectUsage(run(["agent", "--max-steps", "--script", script, "x"]), "agent", "option --max-steps needs a value (--max-steps N)");
    expectUsage(
      run(["agent", "--script", script, "--system", "-x", "t"]),
      "agent",
      "option --system needs a value (--system TEXT); a value starting with '-' is written --system=-x",
    );
    expect(run(["agent", "--script", script, "--system=-x", "t"]).status).toBe(0);
    expectUsage(run(["agent", "--max-steps", "x", "--script", script, "y"]), "agent", "--max-steps expects a positive integer, got 'x'");
    expectUsage(run(["agent", "--max-steps", "0", "--script", script, "y"]), "agent", "--max-steps must be between 1 and 1000000, got 0");
    expectUsage(run(["execute", "--max-depth", "-3", "{}"]), "execute", "--max-depth expects a positive integer, got '-3'");
    expectUsage(run(["tools", "--json=yes"]), "tools", "option --json takes no value, got 'yes'");
    expectUsage(run(["serve", "--port", "http"]), "serve", "--port expects an integer, got 'http'");
    expectUsage(run(["execute"]), "execute", "missing argument: execute needs exactly one argument: a JSON tool call, or - for stdin");
    expectUsage(run(["tools", "extra"]), "tools", "unexpected argument 'extra': tools takes no arguments");
    expectUsage(
      run([]),
      "",
      "missing command: one of tools, execute, run, agent, chat, sessions, serve, skills, history, store, mcp, version",
    );
    // a value may start with a dash when it is not an option: --system "-be terse" works, --system=--x too
    const r = run(["agent", "--script", script, "--system", "-be terse", "x"]);
    expect(r.status).toBe(0);
  });

  test("the suggestion threshold: one edit for short words, more for long ones; transpositions count once", () => {
    expect(editDistance("scirpt", "script")).toBe(1);
    expect(editDistance("sesions", "sessions")).toBe(1);
    expect(nearest("js", ["json", "root"])).toBeUndefined();
    expect(nearest("jsno", ["json", "root"])).toBe("json");
    expect(nearest("sessionsdir", ["sessions-dir", "session"])).toBe("sessions-dir");
    expect(nearest("maxdepthh", ["max-depth", "max-steps"])).toBe("max-depth");
    expect(nearest("banana", ["branch", "model"])).toBeUndefined();
  });
});

describe("only usage errors point at --help", () => {
  test("a bad SKILL.md: the file and what is wrong, no usage hint", () => {
    const skills = join(work, "bad-skills");
    mkdirSync(join(skills, "broken"), { recursive: true });
    writeFileSync(join(skills, "broken", "SKILL.md"), "---\nname: [unclosed\n---\nBody\n");
    const r = run(["agent", "--script", script, "--skills", skills, "x"]);
    expectPlain(r, "SKILL.md");
    const l = run(["skills", "list", "--dir", skills]);
    expectPlain(l, "SKILL.md");
  });

  test("a missing API key: what to set, no usage hint", () => {
    const r = run(["agent", "--model", "gpt-4o-mini", "x"]);
    expect(r.stderr).toBe(
      "agentcore: the default OpenAI endpoint (no --model-url or MODEL_URL given) needs an API key: set MODEL_API_KEY (a local server needs none: --preset ollama, --preset lmstudio or --model-url URL)\n",
    );
    expectPlain(r, "MODEL_API_KEY");
    expectPlain(run(["chat", "--preset", "openai", "--model", "m"]), "the openai preset needs an API key: set MODEL_API_KEY");
  });

  test("no model: the flag and the variable, no usage hint", () => {
    const r = run(["agent", "--preset", "ollama", "x"]);
    expect(r).toEqual({
      status: 2,
      stdout: "",
      stderr: "agentcore: no model configured: pass --model NAME or set CHAT_MODEL (or play a script with --script FILE)\n",
    });
  });

  test("a bad LLM_TIMEOUT: the variable and what it takes, no usage hint", () => {
    const r = run(["agent", "--preset", "ollama", "--model", "m", "x"], { LLM_TIMEOUT: "soon" });
    expect(r.stderr).toBe('agentcore: LLM_TIMEOUT must be a positive number of seconds, got "soon"\n');
    expectPlain(r, "LLM_TIMEOUT");
  });

  test("an unknown branch: the session and the branch, no usage hint", () => {
    const dir = join(work, "sessions-dir");
    const first = run(["agent", "--script", script, "--session", "demo", "--sessions-dir", dir, "hello"]);
    expect(first.status).toBe(0);
    const r = run(["agent", "--script", script, "--session", "demo", "--sessions-dir", dir, "--branch", "nope", "again"]);
    expectPlain(r, "session 'demo' has no branch 'nope'");
    const c = run(["chat", "--script", script, "--session", "demo", "--sessions-dir", dir, "--branch", "nope"]);
    expectPlain(c, "has no branch 'nope'");
  });

  test("a bad script file, a bad config file, a missing --root folder: no usage hint", () => {
    expectPlain(run(["agent", "--script", join(work, "missing.jsonl"), "x"]), "missing.jsonl");
    const cfg = join(work, "bad.jsonc");
    writeFileSync(cfg, '{"root": "." "x": 1}');
    expectPlain(run(["--config", cfg, "tools"]), "expected a comma");
    expectPlain(run(["--config", cfg, "serve", "--port", "0"]), "expected a comma");
    expectPlain(run(["--root", join(work, "no-such-dir"), "tools"]), "no such folder");
  });

  test("usage errors from the flags' combination point at the command's own help", () => {
    expectUsage(
      run(["agent", "--script", script, "--model", "m", "x"]),
      "agent",
      "--script replaces the model: drop --preset, --model and --model-url",
    );
    expectUsage(run(["agent", "--continue"]), "agent", "--continue needs --session ID");
    expectUsage(run(["agent", "--branch", "b", "--script", script, "x"]), "agent", "--branch and --sessions-dir need --session ID");
    expectUsage(run(["agent", "--preset", "azure", "x"]), "agent", "--preset must be one of openai, lmstudio, ollama, got 'azure'");
    expectUsage(run(["chat", "--session", " ", "--script", script]), "chat", "--session must not be empty");
    const t = run(["tools", "--tools", "frob"]);
    expect(t.status).toBe(2);
    expect(t.stderr).toStartWith("agentcore tools: ");
    expect(t.stderr).toEndWith("\nRun 'agentcore tools --help' for usage.\n");
  });
});

describe("messages name the flag or variable, not the library's field", () => {
  test("--model-url that is not a URL is named as --model-url (not baseURL)", () => {
    const r = run(["agent", "--model", "m", "--model-url", "not a url", "x"]);
    expect(r.stderr).toBe('agentcore: --model-url is not a valid URL: "not a url"\n');
    const f = run(["agent", "--model", "m", "--model-url", "ftp://host/v1", "x"]);
    expect(f.stderr).toBe('agentcore: --model-url must be an http or https URL, got "ftp://host/v1"\n');
  });

  test("MODEL_URL, LLM_TEMPERATURE and LLM_INCLUDE_USAGE are named as such", () => {
    expect(run(["agent", "--model", "m", "x"], { MODEL_URL: "nope" }).stderr).toBe('agentcore: MODEL_URL is not a valid URL: "nope"\n');
    expect(run(["agent", "--preset", "ollama", "--model", "m", "x"], { LLM_TEMPERATURE: "9" }).stderr).toBe(
      'agentcore: LLM_TEMPERATURE must be a number from 0 to 2, got "9"\n',
    );
    expect(run(["agent", "--preset", "ollama", "--model", "m", "x"], { LLM_INCLUDE_USAGE: "yes" }).stderr).toBe(
      'agentcore: LLM_INCLUDE_USAGE must be "true" or "false", got "yes"\n',
    );
  });

  test("no library field name reaches the user in these messages", () => {
    const outputs = [
      run(["agent", "--model", "m", "x"]),
      run(["agent", "--model", "m", "--model-url", "::", "x"]),
      run(["chat", "--preset", "openai", "--model", "m"]),
      run(["agent", "x"]),
    ].map((r) => r.stderr);
    for (const s of outputs) {
      expect(s).not.toMatch(/\bbaseURL\b|\bapiKey\b|\btimeoutMs\b|`model`|\bincludeUsage\b/);
    }
  });
});
