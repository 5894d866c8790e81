/**
 * The live terminal view of `agent` and `chat` (src/cli/live.ts), through
 * the compiled binary on real pseudo-terminals: tmux (the screen read back
 * with capture-pane) and `script(1)` (the bytes written to the terminal).
 * Scripted models delay their answers, so the spinner has time to show; no
 * assertion is about time: only "appears at some point" and "not there at
 * the end". Through pipes: stdout carries the answer alone, stderr no spinner.
 */
import { afterEach, beforeEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { binaryPath } from "../support/binary.ts";
import { screenLines } from "../support/pty.ts";
import { tmp } from "../support/tmp.ts";

setDefaultTimeout(120_000);
const TMUX = Bun.which("tmux");
const SCRIPT = process.platform === "linux" ? Bun.which("script") : null;
const WAIT_MS = 30_000;
const CLEAN_ENV = { PATH: process.env.PATH ?? "/usr/bin:/bin" };
const NAME = "live";

let dir: string;
let socket: string;
let bin: string;

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

function tmux(...args: string[]) {
  const r = Bun.spawnSync([TMUX!, "-L", socket, ...args], { stdin: "ignore", env: { ...CLEAN_ENV, TERM: "xterm-256color" } });
  return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() };
}

/** Start `agentcore ARGS` in a 200x50 tmux window (with `env` first); the shell reports the exit status and stays. */
function start(args: string[], env: Record<string, string> = {}) {
  const vars = Object.entries(env).map(([k, v]) => `${k}=${quote(v)}`);
  const cmd = ["env", ...vars, bin, ...args].map((a, i) => (i > 0 && i <= vars.length ? a : quote(a))).join(" ");
  const r = tmux("new-session", "-d", "-s", NAME, "-x", "200", "-y", "50", "-c", dir, `${cmd}; echo "[exited with $?]"; sleep 600`);
  expect(r.err).toBe("");
  expect(r.code).toBe(0);
}

/** The screen as text (`escapes`: with the colour attributes as escape sequences). */
function screen(escapes = false): string {
  return tmux("capture-pane", "-p", "-J", ...(escapes ? ["-e"] : []), "-t", NAME, "-S", "-200").out;
}

async function waitFor(pred: (s: string) => boolean, what: string): Promise<string> {
  const deadline = Date.now() + WAIT_MS;
  let last = "";
  while (Date.now() < deadline) {
    last = screen();
    if (pred(last)) return last;
    await Bun.sleep(50);
  }
  throw new Error(`gave up waiting for ${what}; the screen was:\n${last}`);
}

const has = (text: string) => (s: string) => s.includes(text);

function writeScript(name: string, turns: unknown[]): string {
  const file = join(dir, name);
  writeFileSync(file, turns.map((t) => JSON.stringify(t)).join("\n") + "\n");
  return file;
}

/** A silent model (2.5 s), thinking, a read_file call, then the answer; usage on both turns. */
function slowScript(): string {
  return writeScript("slow.jsonl", [
    {
      delay_ms: 2500,
      thinking: "The user wants the note.\nI will read it.",
      content: null,
      tool_calls: [{ id: "c1", name: "read_file", arguments: JSON.stringify({ path: "note.txt" }) }],
      usage: { input_tokens: 12, output_tokens: 5 },
    },
    { delay_ms: 1500, content: "The note says hi.", usage: { input_tokens: 30, output_tokens: 6 } },
  ]);
}

const SUMMARY = /\[completed: text_response · 2 turns · tokens 42 in, 11 out · \d+\.\d s\]/;

beforeEach(() => {
  dir = tmp("agentcore-live-");
  socket = `agentcore-live-${process.pid}-${Math.random().toString(16).slice(2, 8)}`;
  bin = binaryPath();
  writeFileSync(join(dir, "note.txt"), "hi\n");
});

afterEach(() => {
  if (TMUX !== null) {
    tmux("kill-session", "-t", NAME);
    tmux("kill-server");
  }
  rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(TMUX === null)("agent on a terminal (tmux)", () => {
  test("a spinner while the model is silent, gone after; the tool line with duration and status; thinking; the summary line", async () => {
    start(["agent", "--no-plan", "--show-thinking", "--script", slowScript(), "read the note"]);
    const spinning = await waitFor(has("waiting for the model"), "the spinner");
    expect(spinning).toMatch(/[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] waiting for the model \d+\.\d s/);
    const end = await waitFor(has("[exited with 0]"), "the end of the run");
    const lines = end.split("\n").map((l) => l.trimEnd());
    expect(end).not.toContain("waiting for the model");
    expect(lines).toContain("thinking: The user wants the note.");
    expect(lines).toContain("  I will read it.");
    expect(lines.some((l) => /^→ read_file path="note\.txt" ✓ \d+ ms$/.test(l))).toBe(true);
    expect(lines).toContain("The note says hi.");
    const summary = lines.findIndex((l) => SUMMARY.test(l));
    expect(summary).toBeGreaterThan(lines.indexOf("The note says hi."));
    expect(lines[summary + 1]).toBe("[exited with 0]");
    // Dimmed on a colour terminal: the summary line carries the dim attribute.
    expect(screen(true)).toContain("\u001b[2m[completed");
  });

  test("a slow tool spins with its name; a failed call shows its error; NO_COLOR: no escape sequences, the lines stay", async () => {
    const path = writeScript("tool.jsonl", [
      {
        content: null,
        tool_calls: [
          { id: "c1", name: "exec", arguments: JSON.stringify({ argv: ["sleep", "3"] }) },
          { id: "c2", name: "read_file", arguments: JSON.stringify({ path: "missing.txt" }) },
        ],
      },
      { content: "done" },
    ]);
    const config = join(dir, "agentcore.jsonc");
    writeFileSync(config, JSON.stringify({ tools: { exec: { allow: ["sleep"], env: ["PATH"] } } }));
    start(["agent", "--no-plan", "--approve-all", "--config", config, "--tools", "exec,read", "--root", dir, "--script", path, "go"], {
      NO_COLOR: "1",
    });
    await waitFor((s) => /→ exec argv=\["sleep","3"\] \d+\.\d s/.test(s), "the tool's spinner");
    const end = await waitFor(has("[exited with 0]"), "the end of the run");
    const lines = end.split("\n").map((l) => l.trimEnd());
    expect(lines.some((l) => /^→ exec argv=\["sleep","3"\] ✓ \d+ ms$/.test(l))).toBe(true);
    expect(lines.some((l) => /^→ read_file path="missing\.txt" ✗ NOT_FOUND: .* \d+ ms$/.test(l))).toBe(true);
    expect(lines.some((l) => /^\[completed: text_response · 2 turns · tokens not reported · \d+\.\d s\]$/.test(l))).toBe(true);
    expect(end).not.toMatch(/[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]/);
    expect(screen(true)).not.toContain("\u001b[");
  });
});

describe.skipIf(SCRIPT === null)("agent through script(1) and pipes", () => {
  /** Run `agentcore ARGS` with stderr on a pseudo-terminal and stdout into a file: [terminal bytes, stdout]. */
  function onPty(args: string[], env: Record<string, string> = {}): { tty: string; stdout: string; status: number | null } {
    const out = join(dir, "stdout.txt");
    const r = Bun.spawnSync([SCRIPT!, "-qec", `${[bin, ...args].map(quote).join(" ")} > ${quote(out)}`, "/dev/null"], {
      cwd: dir,
      stdin: "ignore",
      env: { ...CLEAN_ENV, TERM: "xterm", ...env },
    });
    return { tty: r.stdout.toString(), stdout: existsSync(out) ? readFileSync(out, "utf8") : "", status: r.exitCode };
  }

  test("the terminal gets the live view, the redirected stdout only the answer", () => {
    const r = onPty(["agent", "--no-plan", "--script", slowScript(), "read the note"]);
    expect(r.status).toBe(0);
    expect(r.stdout).toBe("The note says hi.\n");
    expect(r.tty).toContain("waiting for the model"); // drawn at some point…
    const shown = screenLines(r.tty);
    expect(shown.join("\n")).not.toContain("waiting for the model"); // …and erased
    expect(shown[0]).toMatch(/^→ read_file path="note\.txt" ✓ \d+ ms$/);
    expect(shown.at(-1)).toMatch(SUMMARY);
  });

  test("TERM=dumb: no spinner and no escape sequences, the tool line and the summary stay", () => {
    const r = onPty(["agent", "--no-plan", "--script", slowScript(), "read the note"], { TERM: "dumb" });
    expect(r.status).toBe(0);
    expect(r.tty).not.toContain("\u001b");
    expect(r.tty).not.toContain("waiting for the model");
    const shown = screenLines(r.tty);
    expect(shown[0]).toMatch(/^→ read_file path="note\.txt" ✓ \d+ ms$/);
    expect(shown.at(-1)).toMatch(SUMMARY);
  });

  test("--events jsonl on a terminal: no live view on stderr; stdout is the events alone", () => {
    const r = onPty(["agent", "--no-plan", "--events", "jsonl", "--script", slowScript(), "read the note"]);
    expect(r.status).toBe(0);
    expect(r.tty).toBe("");
    const kinds = r.stdout
      .trimEnd()
      .split("\n")
      .map((l) => (JSON.parse(l) as { kind: string }).kind);
    expect(kinds.at(-1)).toBe("agent_finished");
    expect(kinds).toContain("assistant_thinking_delta");
  });

  test("through pipes: stdout carries only the answer, stderr nothing (no spinner, no summary); --show-thinking is plain text there", async () => {
    const go = async (extra: string[]) => {
      const p = Bun.spawn([bin, "agent", "--no-plan", ...extra, "--script", slowScript(), "read the note"], {
        cwd: dir,
        stdin: "ignore",
        stdout: "pipe",
        stderr: "pipe",
        env: { ...CLEAN_ENV, TERM: "xterm" },
      });
      const [stdout, stderr, status] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
      return { stdout, stderr, status };
    };
    expect(await go([])).toEqual({ stdout: "The note says hi.\n", stderr: "", status: 0 });
    const t = await go(["--show-thinking"]);
    expect(t).toEqual({ stdout: "The note says hi.\n", stderr: "thinking: The user wants the note.\n  I will read it.\n", status: 0 });
  });
});

test("--show-thinking: each turn's thinking is a block of its own, with --events jsonl too (stdout keeps the events alone)", async () => {
  const path = writeScript("think.jsonl", [
    { thinking: "first thought", content: null, tool_calls: [{ id: "c1", name: "read_file", arguments: '{"path":"note.txt"}' }] },
    { thinking: "second thought", content: "ok" },
  ]);
  for (const extra of [[], ["--events", "jsonl"]]) {
    const p = Bun.spawn([bin, "agent", "--no-plan", "--show-thinking", ...extra, "--script", path, "go"], {
      cwd: dir,
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
      env: CLEAN_ENV,
    });
    const [stdout, stderr, status] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    expect(status).toBe(0);
    expect(stderr).toBe("thinking: first thought\nthinking: second thought\n");
    if (extra.length === 0) expect(stdout).toBe("ok\n");
    else for (const line of stdout.trimEnd().split("\n")) expect(typeof (JSON.parse(line) as { kind: unknown }).kind).toBe("string");
  }
});

describe.skipIf(TMUX === null)("chat on a terminal (tmux)", () => {
  test("a spinner while the model is silent, gone after; each run ends with its summary line", async () => {
    const path = writeScript("chat.jsonl", [
      { delay_ms: 2500, content: "First answer.", usage: { input_tokens: 7, output_tokens: 2 } },
      { delay_ms: 2500, content: "Second answer.", usage: { input_tokens: 9, output_tokens: 3 } },
    ]);
    start(["chat", "--no-plan", "--script", path, "--root", dir]);
    await waitFor(has("/help lists the commands"), "the banner");
    tmux("send-keys", "-t", NAME, "-l", "hello");
    tmux("send-keys", "-t", NAME, "Enter");
    await waitFor(has("waiting for the model"), "the spinner");
    const first = await waitFor(has("[completed: text_response · 1 turn · tokens 7 in, 2 out"), "the first summary");
    expect(first).not.toContain("waiting for the model");
    expect(first).toContain("First answer.");
    tmux("send-keys", "-t", NAME, "-l", "again");
    tmux("send-keys", "-t", NAME, "Enter");
    await waitFor(has("[completed: text_response · 1 turn · tokens 9 in, 3 out"), "the second summary");
    tmux("send-keys", "-t", NAME, "C-d");
    const end = await waitFor(has("[exited with 0]"), "the end of the chat");
    expect(end).not.toContain("waiting for the model");
    const lines = end.split("\n").map((l) => l.trimEnd());
    expect(lines[lines.findIndex((l) => l.startsWith("Second answer.")) + 1]).toMatch(
      /^\[completed: text_response · 1 turn · tokens 9 in, 3 out · \d+\.\d s\]$/,
    );
  });

  test("a line typed while the spinner is drawn: the spinner gives way to it, and comes back once the line is empty again", async () => {
    const path = writeScript("chat.jsonl", [{ delay_ms: 8000, content: "Late answer.", usage: { input_tokens: 4, output_tokens: 2 } }]);
    start(["chat", "--no-plan", "--script", path, "--root", dir]);
    await waitFor(has("/help lists the commands"), "the banner");
    tmux("send-keys", "-t", NAME, "-l", "hello");
    tmux("send-keys", "-t", NAME, "Enter");
    await waitFor(has("waiting for the model"), "the spinner");
    tmux("send-keys", "-t", NAME, "-l", "abc");
    const typing = await waitFor((s) => s.split("\n").some((l) => l.trimEnd() === "abc"), "the typed text on a line of its own");
    expect(typing).not.toContain("waiting for the model");
    tmux("send-keys", "-t", NAME, "BSpace", "BSpace", "BSpace");
    await waitFor(has("waiting for the model"), "the spinner again");
    await waitFor(has("[completed: text_response · 1 turn · tokens 4 in, 2 out"), "the summary");
    tmux("send-keys", "-t", NAME, "C-d");
    const end = await waitFor(has("[exited with 0]"), "the end of the chat");
    expect(end).not.toContain("waiting for the model");
    expect(end).toContain("Late answer.");
  });

  test("piped chat: no spinner and no summary lines (the transcript is unchanged)", async () => {
    const path = writeScript("chat.jsonl", [{ delay_ms: 1500, content: "Piped answer." }]);
    const p = Bun.spawn([bin, "chat", "--no-plan", "--script", path, "--root", dir], {
      cwd: dir,
      stdin: new Response("hello\n"),
      stdout: "pipe",
      stderr: "pipe",
      env: { ...CLEAN_ENV, TERM: "xterm" },
    });
    const [stdout, status] = await Promise.all([new Response(p.stdout).text(), p.exited]);
    expect(status).toBe(0);
    expect(stdout).toContain("Piped answer.");
    expect(stdout).not.toContain("waiting for the model");
    expect(stdout).not.toContain("[completed");
    expect(stdout).not.toContain("\u001b");
  });
});

/** A valid journal of `n` records: a run started, then assistant messages, each the child of the one before. */
function bigJournal(n: number): string {
  const lines: string[] = [];
  let parent: string | null = null;
  for (let i = 1; i <= n; i++) {
    const id = i.toString(16).padStart(32, "0");
    const data =
      i === 1 ? { run_id: "r".repeat(32), task: "t" } : { message: { content: `m${i}`, role: "assistant" }, run_id: "r".repeat(32) };
    lines.push(
      JSON.stringify({
        agent_id: "a",
        branch_id: "main",
        data,
        journal_schema_version: 1,
        parent_id: parent,
        record_id: id,
        revision: i,
        sequence: i,
        session_id: "big",
        type: i === 1 ? "run_started" : "message_appended",
      }),
    );
    parent = id;
  }
  return lines.join("\n") + "\n";
}

describe.skipIf(SCRIPT === null)("sessions import/export: a progress line on a terminal, erased when done", () => {
  /** `agentcore ARGS` with stdout and stderr on a pseudo-terminal: the bytes it wrote there. */
  function pty(args: string[]): { tty: string; status: number | null } {
    const r = Bun.spawnSync([SCRIPT!, "-qec", [bin, ...args].map(quote).join(" "), "/dev/null"], {
      cwd: dir,
      stdin: "ignore",
      env: { ...CLEAN_ENV, TERM: "xterm" },
    });
    return { tty: r.stdout.toString(), status: r.exitCode };
  }

  test("import draws its phases, then only the result line stays; export --out the same; through pipes nothing on stderr", () => {
    const journal = join(dir, "big.jsonl");
    writeFileSync(journal, bigJournal(3000));
    const store = join(dir, "store");
    const imp = pty(["sessions", "import", journal, "--sessions-dir", store]);
    expect(imp.status).toBe(0);
    expect(imp.tty).toMatch(/agentcore sessions: 3,000 records, [\d,]+\/s; writing to the store… \d+\.\d s/);
    expect(screenLines(imp.tty)).toEqual([`session big imported into ${store}: 3000 record(s), branch main`]);

    const copy = join(dir, "copy.jsonl");
    const exp = pty(["sessions", "export", "big", "--sessions-dir", store, "--out", copy]);
    expect(exp.status).toBe(0);
    expect(exp.tty).toMatch(/agentcore sessions: reading the journal… \d+\.\d s/);
    expect(screenLines(exp.tty)).toEqual([`agentcore sessions: session big: 3000 record(s) written to ${copy}`]);
    expect(readFileSync(copy, "utf8")).toBe(readFileSync(journal, "utf8"));

    // Pipes: the journal alone on stdout, and no progress on stderr.
    const piped = Bun.spawnSync([bin, "sessions", "export", "big", "--sessions-dir", store], { cwd: dir, stdin: "ignore", env: CLEAN_ENV });
    expect(piped.exitCode).toBe(0);
    expect(piped.stderr.toString()).toBe("");
    expect(piped.stdout.toString()).toBe(readFileSync(journal, "utf8"));
    const again = Bun.spawnSync([bin, "sessions", "import", journal, "--as", "big2", "--sessions-dir", store], {
      cwd: dir,
      stdin: "ignore",
      env: CLEAN_ENV,
    });
    expect(again.exitCode).toBe(0);
    expect(again.stderr.toString()).toBe("");
  });
});
