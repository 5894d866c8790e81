/**
 * The issue's REPL test: `agentcore chat` on a real terminal (tmux), with a
 * scripted model and the real write_file tool. Type a task, answer the
 * approval, see the result, and check the file on disk. Also: answering `n`
 * leaves the file alone and the chat goes on; the approval flow under
 * `deno run` and with the compiled binary; `agent`'s own terminal prompt and
 * checklist; Ctrl-C aborts a running run and twice at the prompt quits.
 *
 * Each test runs its own tmux server on a private socket; afterEach kills it.
 * Waits poll the screen up to a generous deadline (never a timing assertion).
 */
import { afterEach, beforeEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { JsonlSessionStorage } from "../../src/session/jsonl.ts";
import { binaryPath } from "../support/binary.ts";
import { tmp } from "../support/tmp.ts";

const REPO = resolve(import.meta.dir, "../..");
// Each test waits on the screen several times (up to WAIT_MS each).
setDefaultTimeout(120_000);
const TMUX = Bun.which("tmux");
const WAIT_MS = 30_000;

let dir: string;
let socket: string;
const NAME = "chat";

function tmux(...args: string[]) {
  const r = Bun.spawnSync([TMUX!, "-L", socket, ...args], { stdin: "ignore" });
  return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() };
}

const DENO = join(REPO, "node_modules/.bin/deno");

/** Start `agentcore chat ARGS` (or another command; under Bun, or `deno run`) in a 200x50 tmux window; the shell reports the exit status and stays. */
function startChat(args: string[], runtime: "bun" | "deno" | "binary" = "bun", command = "chat") {
  const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  const launcher =
    runtime === "bun"
      ? [process.execPath, join(REPO, "src/cli/main.ts")]
      : runtime === "deno"
        ? [DENO, "run", "-A", join(REPO, "src/cli/main.ts")]
        : [binaryPath()];
  const cmd = [...launcher, command, ...args].map(quote).join(" ");
  const r = tmux("new-session", "-d", "-s", NAME, "-x", "200", "-y", "50", "-c", dir, `${cmd}; echo "[exited with $?]"; sleep 600`);
  expect(r.err).toBe("");
  expect(r.code).toBe(0);
}

function screen(): string {
  return tmux("capture-pane", "-p", "-J", "-t", NAME, "-S", "-200").out;
}

/** Poll the screen until `pred` holds; fail with the screen after the deadline. */
async function waitFor(pred: (s: string) => boolean, what: string): Promise<string> {
  const deadline = Date.now() + WAIT_MS;
  let last = "";
  while (Date.now() < deadline) {
    last = screen();
    if (pred(last)) return last;
    await Bun.sleep(100);
  }
  throw new Error(`gave up waiting for ${what}; the screen was:\n${last}`);
}

const has = (text: string) => (s: string) => s.includes(text);
/** The REPL's prompt is the last line: the run before it has ended, so a typed line starts a new run (not a follow-up). */
const atPrompt = (s: string) => s.trimEnd().split("\n").at(-1)?.trimEnd() === ">";

function type(text: string) {
  // -l: literal keys (no key-name lookup), then Enter as a key.
  tmux("send-keys", "-t", NAME, "-l", text);
  tmux("send-keys", "-t", NAME, "Enter");
}

function writeScript(turns: unknown[]): string {
  const file = join(dir, "script.jsonl");
  writeFileSync(file, turns.map((t) => JSON.stringify(t)).join("\n") + "\n");
  return file;
}

const writeTurn = {
  content: "I'll update the notes.",
  tool_calls: [{ id: "w1", name: "write_file", arguments: JSON.stringify({ path: "notes.txt", content: "new content\n" }) }],
};

beforeEach(() => {
  dir = tmp("agentcore-chat-repl-");
  socket = `agentcore-test-${process.pid}-${Math.random().toString(16).slice(2, 8)}`;
  writeFileSync(join(dir, "notes.txt"), "old\n");
});

afterEach(() => {
  if (TMUX !== null) {
    tmux("kill-session", "-t", NAME);
    tmux("kill-server");
  }
  rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(TMUX === null)(`agentcore chat in a terminal (tmux${TMUX === null ? " not found: skipped" : ""})`, () => {
  test("type a task, approve the write, see the result and the file changed", async () => {
    const script = writeScript([writeTurn, { content: "Done: notes.txt now says new content.", chunk_size: 5 }]);
    startChat(["--script", script, "--root", dir, "--tools", "write_file"]);
    const banner = await waitFor(has("/help lists the commands"), "the banner");
    const sessionId = /session (chat-[0-9a-f-]+) \(branch main\)/.exec(banner)?.[1];
    expect(sessionId).toBeDefined();

    type("please update notes.txt");
    const asking = await waitFor(has("allow? [y]es / [N]o / [a]lways"), "the approval prompt");
    expect(asking).toContain("I'll update the notes.");
    expect(asking).toContain('→ write_file path="notes.txt" content="new content\\n"');
    expect(asking).toContain("? write_file [side_effecting] needs approval");
    expect(asking).toContain('arguments: {"path":"notes.txt","content":"new content\\n"}');
    // Nothing is written while the question waits.
    expect(readFileSync(join(dir, "notes.txt"), "utf8")).toBe("old\n");

    type("y");
    const after = await waitFor(has("Done: notes.txt now says new content."), "the answer after the write");
    expect(after).toContain("  approved");
    expect(after).toMatch(/→ write_file path="notes\.txt" content="new content\\n" ✓ \d+ ms/);
    expect(readFileSync(join(dir, "notes.txt"), "utf8")).toBe("new content\n");

    type("/exit");
    const end = await waitFor(has("[exited with"), "the chat to exit");
    expect(end).toContain("[exited with 0]");
    expect(end).toContain(`resume with --session ${sessionId}`);

    // The history is in the session journal.
    const session = await new JsonlSessionStorage(join(dir, ".agentcore", "sessions")).load(sessionId!);
    expect(session!.runs.map((r) => [r.task, r.result?.status])).toEqual([["please update notes.txt", "completed"]]);
    const roles = session!.entries.map((e) => e.message.role);
    expect(roles).toEqual(["user", "assistant", "tool", "assistant"]);
  });

  test("the terminal going away (its tmux server killed) ends the chat: the process exits instead of spinning", async () => {
    const script = writeScript([{ content: "hello" }]);
    startChat(["--script", script, "--root", dir]);
    await waitFor(has("/help lists the commands"), "the banner");
    const shell = Number(tmux("display-message", "-p", "-t", NAME, "#{pane_pid}").out.trim());
    const chat = Number(
      Bun.spawnSync(["pgrep", "-P", String(shell)])
        .stdout.toString()
        .trim()
        .split("\n")[0],
    );
    expect(chat).toBeGreaterThan(0);
    const running = () => {
      try {
        // a zombie (exited, not yet reaped) counts as gone
        return !readFileSync(`/proc/${chat}/stat`, "utf8")
          .replace(/^.*\) /s, "")
          .startsWith("Z");
      } catch {
        return false;
      }
    };
    expect(running()).toBe(true);
    tmux("kill-server");
    const deadline = Date.now() + WAIT_MS;
    while (running() && Date.now() < deadline) await Bun.sleep(100);
    const still = running();
    if (still) process.kill(chat, "SIGKILL"); // never leave it spinning behind the test
    expect(still).toBe(false);
  });

  test("answering n leaves the file unchanged, says so, and the chat goes on", async () => {
    const script = writeScript([writeTurn, { content: "Still here." }]);
    startChat(["--script", script, "--root", dir, "--tools", "write_file"]);
    await waitFor(has("/help lists the commands"), "the banner");
    type("please update notes.txt");
    await waitFor(has("allow? [y]es / [N]o / [a]lways"), "the approval prompt");
    type("n");
    const denied = await waitFor(has("[run rejected: tool_rejected"), "the refusal");
    expect(denied).toContain("  denied");
    expect(denied).toContain("✗ refused: denied by the operator");
    expect(readFileSync(join(dir, "notes.txt"), "utf8")).toBe("old\n");

    await waitFor(atPrompt, "the prompt after the run");
    type("are you there?");
    await waitFor(has("Still here."), "the next answer");
    expect(readFileSync(join(dir, "notes.txt"), "utf8")).toBe("old\n");
  });

  for (const runtime of ["deno", "binary"] as const) {
    test(`the same ${runtime === "deno" ? "under deno run" : "with the compiled binary"}: approve the write, the file changes`, async () => {
      const script = writeScript([writeTurn, { content: `Done (${runtime}).` }]);
      startChat(["--script", script, "--root", dir, "--tools", "write_file"], runtime);
      await waitFor(has("/help lists the commands"), "the banner");
      type("please update notes.txt");
      await waitFor(has("allow? [y]es / [N]o / [a]lways"), "the approval prompt");
      expect(readFileSync(join(dir, "notes.txt"), "utf8")).toBe("old\n");
      type("y");
      await waitFor(has(`Done (${runtime}).`), "the answer");
      expect(readFileSync(join(dir, "notes.txt"), "utf8")).toBe("new content\n");
      type("/exit");
      expect(await waitFor(has("[exited with"), "the chat to exit")).toContain("[exited with 0]");
    });
  }

  test("agent on a terminal: the approval prompt on stderr takes y, and the plan shows as a checklist", async () => {
    const plan = (statuses: string[]) => ({
      id: `p${statuses.join("")}`,
      name: "update_plan",
      arguments: JSON.stringify({ steps: ["Write notes", "Report"].map((title, i) => ({ title, status: statuses[i] })) }),
    });
    const script = writeScript([
      { content: null, tool_calls: [plan(["in_progress", "pending"])] },
      writeTurn,
      { content: null, tool_calls: [plan(["done", "done"])] },
      { content: "Notes written." },
    ]);
    startChat(["--script", script, "--root", dir, "--tools", "write_file", "update the notes"], "bun", "agent");
    const asking = await waitFor(has("allow? [y]es / [n]o / [a]lways"), "the terminal approver's prompt");
    expect(asking).toContain("Plan (0/2 done)\n  [~] Write notes\n  [ ] Report");
    expect(asking).toContain('agentcore: tool "write_file" (side_effecting) needs approval');
    type("y");
    const end = await waitFor(has("[exited with"), "agent to exit");
    expect(end).toContain("Plan (2/2 done)\n  [x] Write notes\n  [x] Report");
    expect(end).toContain("Notes written.");
    expect(end).toContain("[exited with 0]");
    expect(readFileSync(join(dir, "notes.txt"), "utf8")).toBe("new content\n");
  });

  test("Ctrl-C aborts a running run; at the prompt Ctrl-C twice quits", async () => {
    const script = writeScript([
      { content: null, tool_calls: [{ id: "e1", name: "echo", arguments: '{"step":1}' }] },
      { content: "never shown", delay_ms: 120_000 },
    ]);
    startChat(["--script", script, "--root", dir]);
    await waitFor(has("/help lists the commands"), "the banner");
    type("start something slow");
    await waitFor((s) => /→ echo step=1 ✓/.test(s), "the echo call");
    tmux("send-keys", "-t", NAME, "C-c");
    const aborted = await waitFor(has("[run cancelled: external_abort"), "the abort");
    expect(aborted).toContain("^C aborting the run");
    expect(aborted).toContain("interrupted by the user (Ctrl-C)");
    expect(aborted).not.toContain("never shown");

    tmux("send-keys", "-t", NAME, "C-c");
    await waitFor(has("press Ctrl-C again"), "the first Ctrl-C at the prompt");
    tmux("send-keys", "-t", NAME, "C-c");
    const end = await waitFor(has("[exited with"), "the chat to exit");
    expect(end).toContain("[exited with 0]");
  });
});
