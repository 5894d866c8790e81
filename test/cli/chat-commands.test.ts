/**
 * The chat's command table and its state object, without a terminal: the
 * state is built as `agentcore chat` builds it (openChat: a real journal in
 * a temp folder, the agent from the host layer, a scripted model), and the
 * lines go through handleLine, the function the input loop calls for each
 * typed line. /help is made from the table, so a command added to it is
 * listed and runs; an unknown command gets the REPL's note; every command
 * works on the state alone.
 */
import { afterEach, beforeEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ReplApprover } from "../../src/cli/chat/approver.ts";
import { CHAT_COMMANDS, chatHelp, parseChatInput, type ChatCommand } from "../../src/cli/chat/commands.ts";
import { handleLine, interrupt } from "../../src/cli/chat/repl.ts";
import { openChat, type ChatFlags } from "../../src/cli/chat/setup.ts";
import type { ChatIO, ChatState } from "../../src/cli/chat/state.ts";
import { gateMiddleware } from "../../src/cli/gate.ts";
import { createRuntime } from "../../src/runtime/index.ts";
import { JsonlSessionStorage } from "../../src/session/jsonl.ts";
import type { ToolDefinition } from "../../src/tools/definition.ts";
import { ScriptedModel } from "../../src/providers/scripted.ts";
import { call, deferred, text, type Step } from "../support/agent.ts";
import { tmp } from "../support/tmp.ts";

setDefaultTimeout(30_000);

let dir: string;
const open: ChatState[] = [];

beforeEach(() => {
  dir = tmp("agentcore-chat-commands-");
});
afterEach(async () => {
  for (const s of open.splice(0)) {
    await s.exit();
    await s.agent.shutdown();
    s.claim.release();
  }
  rmSync(dir, { recursive: true, force: true });
});

interface Chat {
  state: ChatState;
  model: ScriptedModel;
  /** Everything written to the screen so far. */
  out(): string;
  /** What was written since the last call. */
  fresh(): string;
  errors: string[];
}

/** A side-effecting tool: appends `text` to out.txt. */
const appendTool: ToolDefinition<{ text: string }> = {
  name: "append",
  description: "append to out.txt",
  parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  effect: "side_effecting",
  handler: ({ text }) => {
    const file = join(dir, "out.txt");
    writeFileSync(file, (existsSync(file) ? readFileSync(file, "utf8") : "") + text);
    return { ok: true };
  },
};

/**
 * The chat's state over a screen that is a string. `tty` makes stdin claim
 * to be a terminal (runs are not awaited, approvals can be asked); there is
 * still no line editor.
 */
async function chat(
  steps: Step[],
  options: { tty?: boolean; flags?: Partial<ChatFlags>; commands?: readonly ChatCommand[] } = {},
): Promise<Chat> {
  let out = "";
  let mark = 0;
  const errors: string[] = [];
  const io: ChatIO = {
    input: { isTTY: options.tty === true } as ChatIO["input"],
    output: { write: (s: string) => ((out += s), true), on: () => undefined } as unknown as ChatIO["output"],
    error: { write: (s: string) => errors.push(s) },
  };
  const gate = new ReplApprover();
  const runtime = createRuntime({ root: dir, middleware: gateMiddleware({ defaultGate: true, approver: gate.approver }) });
  runtime.registry.register(appendTool);
  const model = new ScriptedModel(steps);
  const flags: ChatFlags = { task: "", sessionsDir: join(dir, "sessions"), ...options.flags };
  const state = await openChat(runtime, flags, gate, io, { model, ...(options.commands ? { commands: options.commands } : {}) });
  open.push(state);
  return {
    state,
    model,
    errors,
    out: () => out,
    fresh: () => {
      const s = out.slice(mark);
      mark = out.length;
      return s;
    },
  };
}

/** A model turn that waits for release() (or the run's abort). */
function held(turn: ReturnType<typeof text> | ReturnType<typeof call>) {
  const gate = deferred();
  const entered = deferred();
  const step: Step = async (req) => {
    entered.resolve();
    await Promise.race([
      gate.promise,
      new Promise((_, reject) => req.signal?.addEventListener("abort", () => reject(req.signal!.reason), { once: true })),
    ]);
    return turn;
  };
  return { step, entered: entered.promise, release: () => gate.resolve() };
}

/** Wait (bounded) until the screen shows `what` after its first `from` characters. */
async function until(c: Chat, what: string, from = 0): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!c.out().slice(from).includes(what)) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${JSON.stringify(what)}; screen:\n${c.out()}`);
    await Bun.sleep(5);
  }
}

describe("the command table", () => {
  test("/help lists every command of the table, in its order, with its usage and help", async () => {
    const c = await chat([]);
    await handleLine(c.state, "/help");
    const help = c.fresh();
    expect(help).toBe(`${chatHelp()}\n`);
    let at = -1;
    for (const cmd of CHAT_COMMANDS) {
      const line = help.split("\n").find((l) => l.trimStart().startsWith(`${cmd.usage} `));
      expect(line, cmd.usage).toBeDefined();
      expect(line!.trimEnd().endsWith(cmd.help)).toBe(true);
      expect(help.indexOf(line!)).toBeGreaterThan(at);
      at = help.indexOf(line!);
    }
    expect(CHAT_COMMANDS.map((c) => c.name)).toEqual(["steer", "abort", "continue", "compact", "sessions", "fork", "plan", "help", "exit"]);
    await handleLine(c.state, "/?");
    expect(c.fresh()).toBe(`${chatHelp()}\n`);
  });

  test("a command added to the table is listed by /help, parsed by its rules and run on the state", async () => {
    const seen: string[] = [];
    const echo: ChatCommand = {
      name: "echo",
      aliases: ["e"],
      arg: "required",
      usage: "/echo WORDS",
      help: "say WORDS back",
      check: (arg) => (arg.includes("!") ? "/echo WORDS: no exclamation marks" : null),
      run: (state, arg) => {
        seen.push(arg);
        state.screen.line(`echo: ${arg}`);
      },
    };
    const table = [...CHAT_COMMANDS, echo];
    const c = await chat([], { commands: table });
    await handleLine(c.state, "/help");
    expect(c.fresh()).toContain("  /echo WORDS   say WORDS back\n");
    expect(chatHelp()).not.toContain("/echo");
    await handleLine(c.state, "/ECHO  hello there ");
    await handleLine(c.state, "/e again");
    expect(seen).toEqual(["hello there", "again"]);
    expect(c.fresh()).toBe("echo: hello there\necho: again\n");
    await handleLine(c.state, "/echo");
    await handleLine(c.state, "/echo hi!");
    expect(c.fresh()).toBe("[/echo WORDS: missing TEXT]\n[/echo WORDS: no exclamation marks]\n");
    expect(seen.length).toBe(2);
    // The default table does not know it.
    expect(parseChatInput("/echo hi")).toEqual({ kind: "invalid", message: "unknown command /echo; /help lists the commands" });
    expect(parseChatInput("/echo hi", table)).toEqual({ kind: "command", name: "echo", arg: "hi" });
  });

  test("an unknown /foo, a bare '/', a missing or extra argument: the REPL's notes, nothing runs", async () => {
    const c = await chat([text("never")]);
    for (const line of ["/foo", "/Foo bar", "/", "/ steer x", "/steer", "/exit now", "/fork two words", "/plan x"])
      await handleLine(c.state, line);
    expect(c.fresh().split("\n")).toEqual([
      "[unknown command /foo; /help lists the commands]",
      "[unknown command /Foo; /help lists the commands]",
      "[a command name must follow '/'; /help lists the commands]",
      "[a command name must follow '/'; /help lists the commands]",
      "[/steer TEXT: missing TEXT]",
      "[/exit takes no argument]",
      "[/fork NAME: the branch name must be one word]",
      "[/plan takes no argument]",
      "",
    ]);
    expect(c.model.requests.length).toBe(0);
    expect(c.state.exiting).toBe(false);
    expect(c.state.branch).toBe("main");
  });
});

describe("each command on a state without a terminal", () => {
  test("at the start of a session: nothing to abort, steer, continue, compact, fork or show", async () => {
    const c = await chat([]);
    for (const line of ["/abort", "/steer go left", "/continue", "/plan", "/fork early"]) await handleLine(c.state, line);
    expect(c.fresh().split("\n")).toEqual([
      "[nothing is running]",
      "[nothing is running: type the message as a new task]",
      "[cannot continue: no_previous_run]",
      "[no plan yet]",
      "[cannot fork: nothing is recorded in this session yet]",
      "",
    ]);
    await handleLine(c.state, "/compact");
    expect(c.fresh()).toBe("[nothing to compact yet: the last turn is always kept]\n");
    await handleLine(c.state, "/sessions");
    expect(c.fresh()).toBe(`* ${c.state.sessionId}  runs 0  branches (none yet)\n`);
    expect(c.model.requests.length).toBe(0);
  });

  test("a task, /continue, /compact, /fork NAME, /sessions and /exit change the state and the journal", async () => {
    const c = await chat([text("a1"), text("a2"), text("a3"), text("SUMMARY"), text("on alt")]);
    const id = c.state.sessionId;
    await handleLine(c.state, "q1"); // piped input: the line waits for its run
    expect(c.fresh()).toBe("a1\n");
    await handleLine(c.state, "/continue");
    expect(c.fresh()).toBe("a2\n");
    await handleLine(c.state, "q2");
    expect(c.fresh()).toBe("a3\n");
    await handleLine(c.state, "/compact");
    expect(c.fresh()).toMatch(/^\[compacted: \d+ messages → \d+\]\n$/);
    await handleLine(c.state, "/fork alt");
    expect(c.fresh()).toMatch(/^\[forked main at \S+: now on branch alt\]\n$/);
    expect(c.state.branch).toBe("alt");
    await handleLine(c.state, "q3");
    expect(c.fresh()).toBe("on alt\n");
    await handleLine(c.state, "/sessions");
    expect(c.fresh()).toBe(`* ${id}  runs 3  branches main, alt (current)\n`);
    // The old branch's claim was given back: another process could take main now.
    const storage = new JsonlSessionStorage(join(dir, "sessions"));
    (await storage.claimBranch(id, "main", "test")).release();
    await expect(storage.claimBranch(id, "alt", "test")).rejects.toThrow();
    await handleLine(c.state, "/exit");
    await c.state.finished;
    expect(c.state.exiting).toBe(true);
    expect(c.state.status()).toBe(0);
    // /continue's run has no task of its own; main keeps what it had at the fork.
    expect((await storage.checkout(id, "main"))!.session.runs.map((r) => r.task)).toEqual(["q1", null, "q2"]);
    expect((await storage.checkout(id, "alt"))!.session.runs.map((r) => r.task)).toEqual(["q1", null, "q2", "q3"]);
    expect(c.errors).toEqual([]);
  });

  test("/plan shows the plan the model wrote, and says when planning is off", async () => {
    const plan = { steps: [{ title: "Write", status: "in_progress" }] };
    const c = await chat([call("p1", "update_plan", plan), text("planned")]);
    await handleLine(c.state, "make a plan");
    c.fresh();
    await handleLine(c.state, "/plan");
    expect(c.fresh()).toBe("Plan (0/1 done)\n  [~] Write\n");
    const off = await chat([], { flags: { plan: false, session: "other" } });
    await handleLine(off.state, "/plan");
    expect(off.fresh()).toBe("[planning is off (--no-plan)]\n");
  });

  test("during a run: a line is a follow-up, /steer is queued, prompt-only commands say so, /abort and Ctrl-C stop it", async () => {
    const first = held(text("first"));
    const c = await chat([first.step, text("second")], { tty: true });
    await handleLine(c.state, "task one"); // a terminal: the run goes on
    await first.entered;
    expect(c.state.busy).not.toBeNull();
    for (const line of ["task two", "/steer shorter", "/continue", "/compact", "/fork x"]) await handleLine(c.state, line);
    expect(c.fresh().split("\n")).toEqual([
      "[queued as a follow-up (1 waiting); /steer changes the running run instead]",
      "[steering queued (1): it reaches the model before its next request]",
      "[a run is in flight; /continue works at the prompt]",
      "[a run is in flight; /compact works at the prompt]",
      "[a run is in flight; /fork works at the prompt]",
      "",
    ]);
    await handleLine(c.state, "/abort");
    expect(c.fresh()).toBe("[aborting…]\n");
    interrupt(c.state);
    expect(c.fresh()).toBe("^C the run is already stopping\n");
    await c.state.busy;
    expect(c.out()).toContain("[run cancelled: external_abort — aborted by the user (/abort)]");
    expect(c.out()).toContain("[follow-up dropped:");
    expect(c.state.busy).toBeNull();
    // At the prompt Ctrl-C warns once, then quits.
    c.fresh();
    interrupt(c.state);
    expect(c.fresh()).toBe("^C (press Ctrl-C again, Ctrl-D or type /exit to quit)\n");
    interrupt(c.state);
    expect(c.fresh()).toBe("^C\n");
    await c.state.finished;
    expect(c.state.status()).toBe(0);
  });

  test("a waiting approval takes the next line before the table; /abort and /exit are taken past it", async () => {
    const c = await chat(
      [call("c1", "append", { text: "one" }), text("done"), call("c2", "append", { text: "two" }), call("c3", "append", { text: "three" })],
      { tty: true },
    );
    await handleLine(c.state, "append one");
    await until(c, "? append [side_effecting] needs approval");
    expect(c.state.gate.waiting).toBe(true);
    await handleLine(c.state, "/help"); // not a command while asked: an unclear answer
    await until(c, "please answer y, n or a");
    expect(c.out()).not.toContain("Type a task");
    await handleLine(c.state, "y");
    await until(c, "done\n");
    await c.state.busy;
    expect(readFileSync(join(dir, "out.txt"), "utf8")).toBe("one");

    const from = c.out().length;
    await handleLine(c.state, "append two");
    await until(c, "? append [side_effecting] needs approval", from);
    c.fresh();
    await handleLine(c.state, "/abort");
    await until(c, "[run cancelled: external_abort", from);
    await c.state.busy;
    const after = c.fresh();
    expect(after).toContain("[aborting…]");
    expect(after).toContain("interrupted: denied");
    expect(readFileSync(join(dir, "out.txt"), "utf8")).toBe("one");

    const again = c.out().length;
    await handleLine(c.state, "append three");
    await until(c, "? append [side_effecting] needs approval", again);
    await handleLine(c.state, "/exit");
    await c.state.finished;
    expect(c.out().slice(again)).toContain("denied: the chat is closing");
    expect(readFileSync(join(dir, "out.txt"), "utf8")).toBe("one");
  });

  test("a journal that cannot be written fails the turn (store_failed), says so on stderr, exit status 1; the chat stays open", async () => {
    const c = await chat([text("a1"), text("a2")]);
    // The session folder is replaced by a file after the start: every append fails (also for root).
    const sessions = join(dir, "sessions");
    rmSync(sessions, { recursive: true, force: true });
    writeFileSync(sessions, "not a folder");
    await handleLine(c.state, "q1");
    // the recorder is part of the run: the turn stops at its first record, the model is not asked
    const first = c.fresh();
    expect(first).toStartWith("[run failed: store_failed — ");
    expect(first).not.toContain("a1");
    expect(c.errors.length).toBeGreaterThan(0);
    expect(c.errors[0]).toStartWith("agentcore chat: the session journal was not written: ");
    await handleLine(c.state, "q2");
    expect(c.fresh()).toStartWith("[run failed: store_failed — ");
    await handleLine(c.state, "/exit");
    await c.state.finished;
    expect(c.state.status()).toBe(1);
  });
});
