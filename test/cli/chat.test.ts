/**
 * `agentcore chat` in process (cmdChat over stream pairs that claim to be a
 * terminal, a model whose turns the test holds open) for what depends on
 * timing between the user and a running run: /steer, follow-ups, /abort,
 * approvals answered from the line input ("always", a re-ask), /continue,
 * /compact, /fork, /sessions, resuming a session with its plan. Then the
 * command through src/cli/main.ts with piped stdin: one line at a time,
 * side-effecting calls refused without a terminal, --approve-all, and setup
 * errors.
 */
import { afterEach, beforeEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { PassThrough, Writable } from "node:stream";
import { cmdChat, newChatSessionId, ReplApprover } from "../../src/cli/chat.ts";
import { chatHelp, parseChatInput } from "../../src/cli/chat/commands.ts";
import { argsSummary, outcomeText, runStatusLine } from "../../src/cli/chat/render.ts";
import { APPROVE_ALL_WARNING, gateMiddleware } from "../../src/cli/gate.ts";
import type { ModelRequest } from "../../src/providers/types.ts";
import { createRuntime } from "../../src/runtime/index.ts";
import { JsonlSessionStorage } from "../../src/session/jsonl.ts";
import type { ToolDefinition } from "../../src/tools/definition.ts";
import { ScriptedModel } from "../../src/providers/scripted.ts";
import { call, deferred, text, type Step } from "../support/agent.ts";
import { tmp } from "../support/tmp.ts";

const REPO = resolve(import.meta.dir, "../..");
// Child processes on a busy machine: a generous ceiling (a hang still fails).
setDefaultTimeout(60_000);
let dir: string;

beforeEach(() => {
  dir = tmp("agentcore-chat-");
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

// deno-lint-ignore no-control-regex
const ANSI = /\u001b\[[0-9;?]*[A-Za-z]/g;

/** A side-effecting test tool: appends `text` to out.txt. */
function appendTool(): ToolDefinition<{ text: string }> {
  return {
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
}

interface Harness {
  model: ScriptedModel;
  type(line: string): void;
  /** Ctrl-D: the end of the input. */
  end(): void;
  /** The screen so far, without terminal escape sequences. */
  screen(): string;
  waitFor(text: string | RegExp): Promise<string>;
  /**
   * Wait for the REPL's prompt after the last line typed: the run that line
   * started (if any) has ended, so a prompt-only command (/compact, /fork,
   * /continue, /sessions) or the next task will not meet "a run is in flight".
   */
  idle(): Promise<void>;
  done: Promise<number>;
  errors: string[];
  sessionsDir: string;
}

function start(
  steps: Step[],
  options: { session?: string; interactive?: boolean; output?: NodeJS.WritableStream; approvalTimeoutMs?: number } = {},
): Harness {
  const input = new PassThrough() as PassThrough & { isTTY?: boolean };
  input.isTTY = options.interactive ?? true;
  const output = new PassThrough() as PassThrough & { isTTY?: boolean };
  let out = "";
  output.on("data", (c: Buffer) => (out += c.toString()));
  const errors: string[] = [];
  const gate = new ReplApprover();
  const runtime = createRuntime({ root: dir, middleware: gateMiddleware({ defaultGate: true, approver: gate.approver }) });
  runtime.registry.register(appendTool());
  runtime.registry.register({
    name: "count",
    description: "count to n, reporting progress",
    parameters: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] },
    effect: "read_only",
    handler: ({ n }: { n: number }, ctx) => {
      for (let i = 1; i <= n; i++) ctx.progress(`counted ${i} of ${n}`, { i });
      return { n };
    },
  } as ToolDefinition<{ n: number }>);
  const model = new ScriptedModel(steps);
  const sessionsDir = join(dir, "sessions");
  const flags = {
    task: "",
    sessionsDir,
    ...(options.session ? { session: options.session } : {}),
    ...(options.approvalTimeoutMs ? { approvalTimeoutMs: options.approvalTimeoutMs } : {}),
  };
  const done = cmdChat(runtime, flags, gate, {
    io: { input, output: options.output ?? output, error: { write: (s: string) => errors.push(s) } },
    model,
  });
  const screen = () => out.replace(ANSI, "").replace(/\r/g, "");
  let mark = 0;
  const waitUntil = async (ok: (s: string) => boolean, what: string | RegExp): Promise<string> => {
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      const s = screen();
      if (ok(s)) return s;
      await Bun.sleep(5);
    }
    throw new Error(`gave up waiting for ${what}; screen:\n${screen()}`);
  };
  return {
    model,
    errors,
    sessionsDir,
    done,
    screen,
    type: (line) => {
      mark = screen().length;
      input.write(`${line}\n`);
    },
    end: () => input.end(),
    waitFor: (what) => waitUntil((s) => (typeof what === "string" ? s.includes(what) : what.test(s)), what),
    async idle() {
      await waitUntil((s) => s.slice(mark).includes("\n> "), "the prompt");
    },
  };
}

/** A model turn the test releases by hand; it fails when the run is aborted. */
function held(turn: Parameters<typeof text>[0] | ReturnType<typeof call>) {
  const gate = deferred();
  const entered = deferred();
  const step: Step = async (req: ModelRequest) => {
    entered.resolve();
    await Promise.race([
      gate.promise,
      new Promise((_, reject) => req.signal?.addEventListener("abort", () => reject(req.signal!.reason), { once: true })),
    ]);
    return typeof turn === "string" ? text(turn) : turn;
  };
  return { step, release: () => gate.resolve(), entered: entered.promise };
}

const lastUser = (req: ModelRequest) => req.messages.filter((m) => m.role === "user").at(-1)?.content;

describe("chat in a terminal (in process)", () => {
  test("/steer reaches the running run before its next model request", async () => {
    const first = held("working on it");
    const h = start([first.step, text("done, in capitals")]);
    await h.waitFor("> ");
    h.type("write a poem");
    await first.entered;
    h.type("/steer use capitals");
    await h.waitFor("[steering queued (1)");
    first.release();
    await h.waitFor("done, in capitals");
    expect(h.screen()).toContain('[steering applied before turn 2: "use capitals"]');
    expect(h.model.requests.length).toBe(2);
    expect(lastUser(h.model.requests[1]!)).toBe("use capitals");
    h.type("/exit");
    expect(await h.done).toBe(0);
  });

  test("a plain line typed during a run is queued as a follow-up and runs after it", async () => {
    const first = held("first answer");
    const h = start([first.step, text("second answer")]);
    await h.waitFor("> ");
    h.type("task one");
    await first.entered;
    h.type("task two");
    await h.waitFor("[queued as a follow-up (1 waiting)");
    first.release();
    await h.waitFor("second answer");
    expect(lastUser(h.model.requests[1]!)).toBe("task two");
    const s = h.screen();
    expect(s.indexOf("first answer")).toBeLessThan(s.indexOf("second answer"));
    h.type("/exit");
    expect(await h.done).toBe(0);
  });

  test("a tool's progress shows under its line, and the outcome follows on a line of its own", async () => {
    const h = start([call("c1", "count", { n: 2 }), text("counted")]);
    await h.waitFor("> ");
    h.type("count to two");
    await h.waitFor("counted\n");
    expect(h.screen()).toMatch(/→ count n=2\n {4}… counted 1 of 2\n {4}… counted 2 of 2\n→ count n=2 ✓ \d+ ms\n/);
    h.type("/exit");
    expect(await h.done).toBe(0);
  });

  test("a follow-up queued behind a run that fails is dropped, and the chat says so", async () => {
    const first = held(call("c1", "append", { text: "x" }));
    const h = start([first.step, text("never used")]);
    await h.waitFor("> ");
    h.type("append something");
    await first.entered;
    h.type("then this");
    await h.waitFor("[queued as a follow-up (1 waiting)");
    first.release();
    await h.waitFor("needs approval");
    h.type("n");
    await h.waitFor("[follow-up dropped: follow-up was discarded: previous_run_not_completed]");
    expect(h.model.requests.length).toBe(1);
    h.type("/exit");
    expect(await h.done).toBe(0);
  });

  test("/abort cancels the running run and the prompt comes back; /abort at the prompt says nothing runs", async () => {
    const stuck = held("never");
    const h = start([stuck.step, text("after the abort")]);
    await h.waitFor("> ");
    h.type("/abort");
    await h.waitFor("[nothing is running]");
    h.type("long task");
    await stuck.entered;
    h.type("/abort");
    await h.waitFor("[run cancelled: external_abort — aborted by the user (/abort)]");
    expect(h.screen()).not.toContain("never");
    await h.idle();
    h.type("next");
    await h.waitFor("after the abort");
    h.type("/exit");
    expect(await h.done).toBe(0);
  });

  test("approvals take the next typed line: an unclear answer asks again, 'a' approves the tool for the rest of the run", async () => {
    const h = start([call("c1", "append", { text: "one;" }), call("c2", "append", { text: "two;" }), text("appended twice")]);
    await h.waitFor("> ");
    h.type("append twice");
    await h.waitFor("? append [side_effecting] needs approval");
    expect(existsSync(join(dir, "out.txt"))).toBe(false);
    h.type("maybe");
    await h.waitFor("please answer y, n or a");
    h.type("a");
    await h.waitFor("appended twice");
    expect(readFileSync(join(dir, "out.txt"), "utf8")).toBe("one;two;");
    const s = h.screen();
    expect(s.split("needs approval").length - 1).toBe(1);
    expect(s).toContain("approved; append will not ask again in this run");
    expect(s).toMatch(/→ append text="two;" ✓ \d+ ms/);
    h.type("/exit");
    expect(await h.done).toBe(0);
  });

  test("an empty answer denies (the default is No), and the arguments shown are redacted", async () => {
    const h = start([call("c1", "append", { text: "x", api_token: "sk-very-secret" }), text("unused")]);
    await h.waitFor("> ");
    h.type("append");
    const asking = await h.waitFor("needs approval");
    expect(asking).not.toContain("sk-very-secret");
    expect(asking).toContain('"api_token":"[redacted]"');
    h.type("");
    await h.waitFor("[run rejected: tool_rejected");
    expect(h.screen()).toContain("✗ refused: denied by the operator");
    expect(existsSync(join(dir, "out.txt"))).toBe(false);
    h.type("/exit");
    expect(await h.done).toBe(0);
  });

  for (const [how, keys] of [
    ["Ctrl-C", "\u0003"],
    ["/abort", "/abort\n"],
  ] as const) {
    test(`${how} while an approval waits denies it and cancels the run`, async () => {
      const h = start([call("c1", "append", { text: "x" })]);
      await h.waitFor("> ");
      h.type("append");
      await h.waitFor("needs approval");
      h.type(keys.replace(/\n$/, ""));
      await h.waitFor("[run cancelled: external_abort");
      expect(h.screen()).toContain("interrupted: denied");
      expect(h.screen()).not.toContain("please answer");
      expect(existsSync(join(dir, "out.txt"))).toBe(false);
      h.type("/exit");
      expect(await h.done).toBe(0);
    });
  }

  test("/exit while an approval waits denies it, ends the run and quits", async () => {
    const h = start([call("c1", "append", { text: "x" })]);
    await h.waitFor("> ");
    h.type("append");
    await h.waitFor("needs approval");
    h.type("/exit");
    expect(await h.done).toBe(0);
    expect(h.screen()).toContain("denied: the chat is closing");
    expect(h.screen()).toContain("[run cancelled: external_abort — the chat is closing]");
    expect(existsSync(join(dir, "out.txt"))).toBe(false);
  });

  test("with policy.approval_timeout_ms, an unanswered question is denied", async () => {
    const h = start([call("c1", "append", { text: "x" })], { approvalTimeoutMs: 30 });
    await h.waitFor("> ");
    h.type("append");
    await h.waitFor("[run rejected: tool_rejected — ");
    expect(h.screen()).toContain("timed out: denied");
    expect(h.screen()).toContain("✗ refused: no answer within 30 ms");
    expect(existsSync(join(dir, "out.txt"))).toBe(false);
    h.type("/exit");
    expect(await h.done).toBe(0);
  });

  test("Ctrl-D during a run lets it finish, then quits; a question asked after that is denied", async () => {
    const first = held(call("c1", "append", { text: "x" }));
    const h = start([first.step, text("finished anyway")]);
    await h.waitFor("> ");
    h.type("append");
    await first.entered;
    h.end();
    first.release();
    expect(await h.done).toBe(0);
    const s = h.screen();
    expect(s).toContain("✗ refused: the chat is closing");
    expect(s).toContain("[session chat-");
    expect(existsSync(join(dir, "out.txt"))).toBe(false);
  });

  test("/continue resumes without a new user message; without a previous run it explains why not", async () => {
    const h = start([text("part one"), text("part two")]);
    await h.waitFor("> ");
    h.type("/continue");
    await h.waitFor("[cannot continue: no_previous_run]");
    h.type("tell a long story");
    await h.waitFor("part one");
    await h.idle();
    h.type("/continue");
    await h.waitFor("part two");
    const req = h.model.requests[1]!;
    expect(req.messages.at(-1)).toEqual({ role: "assistant", content: "part one" });
    expect(req.messages.filter((m) => m.role === "user").length).toBe(1);
    h.type("/exit");
    expect(await h.done).toBe(0);
  });

  test("/compact summarises all but the last turn, journals it, and the next request carries the summary", async () => {
    const h = start([text("a1"), text("a2"), text("SUMMARY of turn one"), text("a3")]);
    await h.waitFor("> ");
    h.type("/compact");
    await h.waitFor("[nothing to compact yet: the last turn is always kept]");
    h.type("q1");
    await h.waitFor("a1");
    await h.idle();
    h.type("q2");
    await h.waitFor("a2");
    await h.idle();
    h.type("/compact");
    await h.waitFor("[compacted: 4 messages → 3]");
    h.type("q3");
    await h.waitFor("a3");
    await h.idle();
    const req = h.model.requests.at(-1)!;
    expect(
      req.messages.some((m) => m.role === "system" && typeof m.content === "string" && m.content.includes("SUMMARY of turn one")),
    ).toBe(true);
    expect(req.messages.some((m) => m.content === "q1")).toBe(false);
    const summarised = h.model.requests[2]!;
    expect(summarised.tools).toEqual([]);
    expect(JSON.stringify(summarised.messages)).toContain("user: q1");
    h.type("/exit");
    expect(await h.done).toBe(0);
    const id = /session (chat-[0-9a-f-]+)/.exec(h.screen())![1]!;
    const records = await new JsonlSessionStorage(h.sessionsDir).records(id);
    expect(records.filter((r) => r.type === "compaction_applied").length).toBe(1);
  });

  test("/fork switches recording to a new branch at the head; main keeps its history", async () => {
    const h = start([text("on main"), text("on the fork")]);
    await h.waitFor("> ");
    h.type("/fork early");
    await h.waitFor("[cannot fork: nothing is recorded in this session yet]");
    h.type("first");
    await h.waitFor("on main");
    await h.idle();
    h.type("/fork two words");
    await h.waitFor("[/fork NAME: the branch name must be one word]");
    h.type("/fork alt");
    await h.waitFor("now on branch alt]");
    h.type("second");
    await h.waitFor("on the fork");
    await h.idle();
    h.type("/sessions");
    await h.waitFor("(current)");
    h.type("/exit");
    expect(await h.done).toBe(0);
    const id = /session (chat-[0-9a-f-]+)/.exec(h.screen())![1]!;
    expect(h.screen()).toMatch(new RegExp(`\\* ${id}  runs 1  branches main, alt \\(current\\)`));
    expect(h.screen()).toContain(`resume with --session ${id} --branch alt`);
    const storage = new JsonlSessionStorage(h.sessionsDir);
    const main = await storage.checkout(id, "main");
    const alt = await storage.checkout(id, "alt");
    expect(main!.session.runs.map((r) => r.task)).toEqual(["first"]);
    expect(alt!.session.runs.map((r) => r.task)).toEqual(["first", "second"]);
  });

  test("--session resumes the conversation and the plan", async () => {
    const id = newChatSessionId();
    const plan = {
      steps: [
        { title: "Collect", status: "done" },
        { title: "Write", status: "in_progress" },
      ],
    };
    const h1 = start([call("p1", "update_plan", plan), text("planned")], { session: id });
    await h1.waitFor("> ");
    h1.type("make a plan");
    await h1.waitFor("planned");
    await h1.idle();
    expect(h1.screen()).toContain("Plan (1/2 done)\n  [x] Collect\n  [~] Write");
    h1.type("/exit");
    expect(await h1.done).toBe(0);

    const h2 = start([text("I remember")], { session: id });
    const banner = await h2.waitFor("resumed with 4 messages");
    expect(banner).toContain(`session ${id} (branch main, resumed with 4 messages)`);
    expect(banner).toContain("Plan (1/2 done)");
    h2.type("/plan");
    await h2.waitFor(/\/plan\nPlan \(1\/2 done\)/);
    h2.type("what did we do?");
    await h2.waitFor("I remember");
    expect(h2.model.requests[0]!.messages.filter((m) => m.role !== "system").map((m) => m.role)).toEqual([
      "user",
      "assistant",
      "tool",
      "assistant",
      "user",
    ]);
    h2.type("/exit");
    expect(await h2.done).toBe(0);
  });

  test("bad lines get a clear note and change nothing", async () => {
    const h = start([text("slash text went through")]);
    await h.waitFor("> ");
    for (const line of ["/steer", "/bogus", "/exit now", "/plan"]) h.type(line);
    await h.waitFor("[no plan yet]");
    const s = h.screen();
    expect(s).toContain("[/steer TEXT: missing TEXT]");
    expect(s).toContain("[unknown command /bogus; /help lists the commands]");
    expect(s).toContain("[/exit takes no argument]");
    h.type("//etc is a folder");
    await h.waitFor("slash text went through");
    expect(lastUser(h.model.requests[0]!)).toBe("/etc is a folder");
    h.type("/help");
    await h.waitFor("/fork [NAME]");
    h.type("/exit");
    expect(await h.done).toBe(0);
    expect(h.errors).toEqual([]);
  });
});

test("an output that fails (a closed pipe) ends the chat with status 2 and a message, not a crash", async () => {
  const broken = new Writable({
    write(_chunk, _enc, cb) {
      cb(Object.assign(new Error("write EPIPE"), { code: "EPIPE" }));
    },
  });
  const h = start([text("unused")], { output: broken });
  expect(await h.done).toBe(2);
  expect(h.errors.join("")).toContain("agentcore chat: cannot write the output (EPIPE); stopping");
});

test("terminal control characters from the model or a tool never reach the terminal", async () => {
  const nasty = "fine\u001b[2J\u001b]0;title\u0007\u009b31m\rfake> ";
  const h = start([call("c1", "echo", { note: nasty }), text(`answer ${nasty}`)]);
  await h.waitFor("> ");
  h.type("go");
  await h.waitFor("answer fine");
  h.type("/exit");
  expect(await h.done).toBe(0);
  const raw = h.screen();
  const answer = raw.slice(raw.indexOf("answer fine"));
  expect(answer.startsWith("answer fine\ufffd[2J\ufffd]0;title\ufffd\ufffd31m\ufffdfake> ")).toBe(true);
  expect(raw).toContain('→ echo note="fine\\u001b[2J');
  expect(raw).not.toContain("\u009b");
});

describe("chat helpers", () => {
  test("parseChatInput", () => {
    expect(parseChatInput("  ")).toEqual({ kind: "blank" });
    expect(parseChatInput(" hi ")).toEqual({ kind: "text", text: "hi" });
    expect(parseChatInput("/STEER  go left ")).toEqual({ kind: "command", name: "steer", arg: "go left" });
    expect(parseChatInput("/q")).toEqual({ kind: "command", name: "exit", arg: "" });
    expect(parseChatInput("/fork")).toEqual({ kind: "command", name: "fork", arg: "" });
    expect(parseChatInput("/")).toEqual({ kind: "invalid", message: "a command name must follow '/'; /help lists the commands" });
    expect(parseChatInput("/ steer x").kind).toBe("invalid");
    expect(chatHelp()).toContain("/steer TEXT");
  });

  test("argsSummary redacts, clips and survives non-objects", () => {
    expect(argsSummary('{"path":"a.txt","password":"hunter2","n":3,"list":[1,2],"o":{"k":1}}')).toBe(
      'path="a.txt" password="[redacted]" n=3 list=[1,2] o={…}',
    );
    // exec's argv shows what runs; lists of objects are counted; long lists are clipped
    expect(argsSummary('{"argv":["git","log","--oneline"],"cwd":"sub"}')).toBe('argv=["git","log","--oneline"] cwd="sub"');
    expect(argsSummary('{"steps":[{"title":"a"},{"title":"b"}]}')).toBe("steps=[2 items]");
    expect(argsSummary(JSON.stringify({ argv: ["echo", "x".repeat(60)] }))).toBe(
      `argv=${JSON.stringify(["echo", "x".repeat(60)]).slice(0, 39)}…`,
    );
    expect(argsSummary('{"argv":["printf","\\u001b[2J"]}')).not.toContain("\u001b[2J"[0]);
    expect(argsSummary("{not json")).toBe("{not json");
    expect(argsSummary('"just a string"')).toBe('"just a string"');
    expect(argsSummary(JSON.stringify({ s: "x".repeat(100) })).length).toBeLessThanOrEqual(80);
  });

  test("outcomeText and runStatusLine", () => {
    const msg = (content: string) => [{ role: "tool" as const, tool_call_id: "c", content }];
    expect(outcomeText({ messages: msg("{}"), control: "continue", output: null, error: null, cancelled: false }, 3.4)).toBe("✓ 3 ms");
    expect(
      outcomeText(
        { messages: msg('{"status":"rejected","tool":"w","reason":"no"}'), control: "reject", output: null, error: "no", cancelled: false },
        null,
      ),
    ).toBe("✗ refused: no");
    expect(
      outcomeText(
        {
          messages: msg('{"status":"error","code":"PATH_ESCAPE","error":"bad"}'),
          control: "continue",
          output: null,
          error: "bad",
          cancelled: false,
        },
        1,
      ),
    ).toBe("✗ PATH_ESCAPE: bad 1 ms");
    expect(outcomeText({ messages: [], control: "continue", output: null, error: "x", cancelled: true }, null)).toBe("✗ cancelled");
    expect(runStatusLine({ status: "completed", stop_reason: "text_response", error: null })).toBeNull();
    expect(runStatusLine({ status: "failed", stop_reason: "max_steps", error: "too many" })).toBe("[run failed: max_steps — too many]");
    expect(runStatusLine({ status: "failed", stop_reason: "max_tokens", error: "cut off" })).toBe(
      "[run failed: max_tokens — cut off; /continue lets the model go on]",
    );
  });
});

describe("agentcore chat through the CLI, stdin piped", () => {
  function cli(args: string[], stdin: string) {
    const r = Bun.spawnSync([process.execPath, "src/cli/main.ts", ...args], {
      cwd: REPO,
      stdin: new TextEncoder().encode(stdin),
      env: { PATH: process.env.PATH ?? "" },
    });
    return { code: r.exitCode, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
  }
  const script = (turns: unknown[]) => {
    const f = join(dir, "script.jsonl");
    writeFileSync(f, turns.map((t) => JSON.stringify(t)).join("\n") + "\n");
    return f;
  };
  const writeTurn = {
    content: null,
    tool_calls: [{ id: "w1", name: "write_file", arguments: '{"path":"notes.txt","content":"changed"}' }],
  };

  test("lines run one at a time; a side-effecting call is refused without a terminal and the file stays", () => {
    writeFileSync(join(dir, "notes.txt"), "original");
    const s = script([writeTurn, { content: "second task done" }]);
    const r = cli(["chat", "--script", s, "--root", dir, "--tools", "write_file"], "change the notes\nnext task\n/sessions\n");
    expect(r.code).toBe(0);
    expect(readFileSync(join(dir, "notes.txt"), "utf8")).toBe("original");
    expect(r.stdout).toContain("✗ refused: approval needs an interactive terminal (stdin is not a TTY)");
    expect(r.stdout).toContain("[run rejected: tool_rejected");
    expect(r.stdout).toContain("second task done");
    expect(r.stdout).toMatch(/\* chat-\S+  runs 2  branches main \(current\)/);
    expect(r.stdout).toMatch(/resume with --session chat-/);
    expect(r.stderr).toBe("");
  });

  test("--show-thinking: each turn's thinking as a plain block before its answer (none without the flag)", () => {
    const s = script([{ thinking: "The user greets me.\nI greet back.", content: "hello there" }]);
    const shown = cli(["chat", "--show-thinking", "--no-plan", "--script", s, "--root", dir], "hi\n");
    expect(shown.code).toBe(0);
    expect(shown.stderr).toBe("");
    expect(shown.stdout).toContain("thinking: The user greets me.\n  I greet back.\nhello there");
    expect(shown.stdout).not.toMatch(ANSI);
    const hidden = cli(["chat", "--no-plan", "--script", s, "--root", dir], "hi\n");
    expect(hidden.stdout).toContain("hello there");
    expect(hidden.stdout).not.toContain("thinking");
  });

  test("--approve-all writes without asking and warns once on stderr", () => {
    writeFileSync(join(dir, "notes.txt"), "original");
    const s = script([writeTurn, { content: "written" }]);
    const r = cli(["chat", "--approve-all", "--script", s, "--root", dir, "--tools", "write_file"], "change the notes\n");
    expect(r.code).toBe(0);
    expect(readFileSync(join(dir, "notes.txt"), "utf8")).toBe("changed");
    expect(r.stdout).not.toContain("needs approval");
    expect(r.stdout).toMatch(/→ write_file path="notes\.txt" content="changed" ✓/);
    expect(r.stderr).toBe(`${APPROVE_ALL_WARNING}\n`);
  });

  test("the docs' piped example: the plan is written first and the checklist advances to all done", () => {
    const r = cli(
      ["chat", "--approve-all", "--script", "examples/chat_script.jsonl", "--root", dir, "--tools", "write_file"],
      "write the notes\n/plan\n",
    );
    expect(r.code).toBe(0);
    expect(readFileSync(join(dir, "notes.txt"), "utf8")).toBe("hello from agentcore chat\n");
    const out = r.stdout;
    const firstTool = out.indexOf("→ ");
    expect(out.slice(firstTool)).toStartWith("→ update_plan steps=[2 items] ✓");
    const first = out.indexOf("Plan (0/2 done)\n  [~] Write notes.txt\n  [ ] Report back");
    const write = out.indexOf("→ write_file");
    const last = out.indexOf("Plan (2/2 done)\n  [x] Write notes.txt\n  [x] Report back");
    expect(first).toBeGreaterThan(0);
    expect(write).toBeGreaterThan(first);
    expect(last).toBeGreaterThan(write);
    expect(out).toContain("> /plan\nPlan (2/2 done)");
  });

  test("--skills: a $name in a typed line activates that skill for its run; a missing folder is a setup error", () => {
    const s = script([{ content: "notes drafted" }, { content: "plain answer" }]);
    const r = cli(
      ["chat", "--script", s, "--root", dir, "--skills", join(REPO, "examples/skills"), "--no-plan"],
      "draft $release-notes for 1.4\nand now something else\n",
    );
    expect(r.code).toBe(0);
    const active = r.stdout.indexOf("[skill release-notes is active]");
    expect(active).toBeGreaterThan(r.stdout.indexOf("> draft $release-notes"));
    expect(active).toBeLessThan(r.stdout.indexOf("notes drafted"));
    // The second line mentions no skill: nothing is activated for its run.
    expect(r.stdout.split("[skill ").length).toBe(2);
    const bad = cli(["chat", "--script", s, "--root", dir, "--skills", join(dir, "no-such-folder")], "");
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("no-such-folder");
  });

  for (const [signal, status] of [
    ["SIGTERM", 143],
    ["SIGHUP", 129],
  ] as const) {
    test(`${signal} during a run aborts it, journals it as finished, exits ${status}; the session resumes`, async () => {
      const s = script([{ content: "never shown", delay_ms: 120_000 }, { content: "back again" }]);
      const child = Bun.spawn(
        [process.execPath, "src/cli/main.ts", "chat", "--script", s, "--root", dir, "--session", "sig", "--no-plan"],
        {
          cwd: REPO,
          stdin: "pipe",
          stdout: "pipe",
          stderr: "pipe",
          env: { PATH: process.env.PATH ?? "" },
        },
      );
      child.stdin.write("start something slow\n");
      child.stdin.flush();
      // stdin stays open: the chat waits on the run, not on the end of input
      const reader = child.stdout.getReader();
      let out = "";
      const decoder = new TextDecoder();
      while (!out.includes("> start something slow")) {
        const { value, done } = await reader.read();
        if (done) break;
        out += decoder.decode(value);
      }
      // the run's journal records are written once it has started
      const journal = new JsonlSessionStorage(join(dir, ".agentcore", "sessions"));
      for (let i = 0; i < 200 && ((await journal.load("sig"))?.runs.length ?? 0) === 0; i++) await Bun.sleep(25);
      child.kill(signal);
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        out += decoder.decode(value);
      }
      expect(await child.exited).toBe(status);
      expect(out).toContain(`[${signal}: stopping]`);
      expect(out).toContain("[run cancelled: external_abort");
      expect(out).not.toContain("never shown");
      const session = await journal.load("sig");
      expect(session!.runs.map((r) => [r.task, r.result?.status])).toEqual([["start something slow", "cancelled"]]);
      // resumable as it is: no fork or rollback needed
      const again = cli(
        ["chat", "--script", script([{ content: "back again" }]), "--root", dir, "--session", "sig", "--no-plan"],
        "are you there?\n",
      );
      expect(again.stderr).toBe("");
      expect(again.code).toBe(0);
      expect(again.stdout).toContain("back again");
    }, 60_000);
  }

  test("setup errors exit 2 with a message: arguments, agent-only flags, unknown branch, a bad script", () => {
    const ok = script([{ content: "hi" }]);
    const cases: [string[], string][] = [
      [["chat", "task"], "chat takes no arguments"],
      [["chat", "--events", "jsonl"], "--events applies to 'agent' only"],
      [["chat", "--continue"], "--continue applies to 'agent' only"],
      [["chat", "--script", ok, "--root", dir, "--session", "s1", "--branch", "ghost"], "session 's1' has no branch 'ghost'"],
      [["chat", "--script", ok, "--session", " "], "--session must not be empty"],
    ];
    for (const [args, message] of cases) {
      const r = cli(args, "");
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(message);
    }
    const bad = join(dir, "bad.jsonl");
    writeFileSync(bad, '{"content": "ok"}\n{"content": 5}\n');
    const r = cli(["chat", "--script", bad, "--root", dir], "");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("line 2");
  });
});
