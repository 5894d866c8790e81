/**
 * The approval gate of `agent` and `chat` (src/cli/gate.ts): the default
 * policy (read-only tools run, side-effecting tools ask), --approve-all, a
 * config policy replacing the default, and failing closed when nobody can
 * answer. Real runtime, real dispatch, a test-only side-effecting tool that
 * writes a file; CLI checks through src/cli/main.ts.
 */
import { afterEach, beforeEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { APPROVE_ALL_REASON, APPROVE_ALL_WARNING, DEFAULT_GATE_POLICY, gateMiddleware } from "../../src/cli/gate.ts";
import { isPolicyMiddleware, type ToolApprovalRequest, type ToolApprover } from "../../src/runtime/middleware/index.ts";
import { createRuntime, type Runtime } from "../../src/runtime/index.ts";
import type { ToolDefinition } from "../../src/tools/definition.ts";
import { tmp } from "../support/tmp.ts";

const REPO = resolve(import.meta.dir, "../..");
// Child processes on a busy machine: a generous ceiling (a hang still fails).
setDefaultTimeout(60_000);
let dir: string;

beforeEach(() => {
  dir = tmp("agentcore-gate-");
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** A side-effecting tool (no effect given: side_effecting is the default) that writes `text` to `out.txt`. */
function touchTool(): ToolDefinition<{ text: string }> {
  return {
    name: "touch",
    description: "write out.txt",
    parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
    handler: ({ text }) => {
      writeFileSync(join(dir, "out.txt"), text);
      return { written: text.length };
    },
  };
}

function runtimeWith(settings: Parameters<typeof gateMiddleware>[0]): Runtime {
  const rt = createRuntime({ root: dir, middleware: gateMiddleware(settings) });
  rt.registry.register(touchTool());
  return rt;
}

const touch = (text: string, id = "t1") => JSON.stringify({ id, tool: "touch", arguments: { text, api_key: "sk-secret" } });

describe("the default gate", () => {
  test("read-only tools run without asking; a side-effecting tool asks and runs only when approved", async () => {
    const asked: ToolApprovalRequest[] = [];
    let answer = false;
    const approver: ToolApprover = async (req) => {
      asked.push(req);
      return { approved: answer, ...(answer ? {} : { reason: "denied by the operator" }) };
    };
    const rt = runtimeWith({ defaultGate: true, approver });
    const echo = await rt.dispatch('{"id":"e1","tool":"echo","arguments":{"x":1}}');
    expect(echo.success).toBe(true);
    expect(asked.length).toBe(0);

    const refused = await rt.dispatch(touch("no"));
    expect(refused.success).toBe(false);
    expect(refused.error!.code).toBe("DENIED");
    expect(refused.error!.message).toBe("denied by the operator");
    expect(refused.error!.details.rule_id).toBe("side-effecting");
    expect(existsSync(join(dir, "out.txt"))).toBe(false);

    answer = true;
    const ok = await rt.dispatch(touch("yes", "t2"));
    expect(ok.success).toBe(true);
    expect(readFileSync(join(dir, "out.txt"), "utf8")).toBe("yes");

    expect(asked.map((r) => [r.tool, r.effect, r.ruleId, r.toolCallId])).toEqual([
      ["touch", "side_effecting", "side-effecting", "t1"],
      ["touch", "side_effecting", "side-effecting", "t2"],
    ]);
  });

  test("without anyone to ask (stdin is the input), a side-effecting call is refused and nothing is written", async () => {
    const rt = runtimeWith({ defaultGate: true, stdinIsInput: true });
    const env = await rt.dispatch(touch("x"));
    expect(env.error!.code).toBe("DENIED");
    expect(env.error!.message).toContain("requires approval");
    expect(existsSync(join(dir, "out.txt"))).toBe(false);
  });

  test.skipIf(process.stdin.isTTY === true)("the TTY approver refuses when stdin is not a terminal", async () => {
    const rt = runtimeWith({ defaultGate: true });
    const env = await rt.dispatch(touch("x"));
    expect(env.error!.code).toBe("DENIED");
    expect(env.error!.message).toContain("not a TTY");
    expect(existsSync(join(dir, "out.txt"))).toBe(false);
  });

  test("--approve-all approves every asking call with a recorded reason; it never overrides a deny rule", async () => {
    const rt = runtimeWith({ defaultGate: true, approveAll: true });
    const env = await rt.dispatch(touch("all"));
    expect(env.success).toBe(true);
    expect(readFileSync(join(dir, "out.txt"), "utf8")).toBe("all");

    const withDeny = runtimeWith({
      approveAll: true,
      policy: { default: "allow", rules: [{ id: "no-touch", action: "deny", tools: ["touch"] }] },
    });
    const denied = await withDeny.dispatch(touch("again"));
    expect(denied.error!.code).toBe("DENIED");
    expect(denied.error!.details.rule_id).toBe("no-touch");
    expect(readFileSync(join(dir, "out.txt"), "utf8")).toBe("all");
    expect(APPROVE_ALL_REASON).toContain("--approve-all");
    // Still a policy middleware to the runtime: schema validation stays in front of it.
    expect(isPolicyMiddleware(gateMiddleware({ defaultGate: true, approveAll: true })[0])).toBe(true);
  });

  test("a config policy replaces the default gate entirely", async () => {
    let asked = 0;
    const approver: ToolApprover = async () => {
      asked++;
      return { approved: false };
    };
    const rt = runtimeWith({ defaultGate: true, approver, policy: { default: "allow" } });
    expect((await rt.dispatch(touch("free"))).success).toBe(true);
    expect(asked).toBe(0);
  });

  test("commands without the default gate get no policy unless the config has one", () => {
    expect(gateMiddleware({})).toEqual([]);
    expect(gateMiddleware({ defaultGate: true }).length).toBe(1);
    expect(Object.isFrozen(DEFAULT_GATE_POLICY.rules![0]!.effects)).toBe(true);
    expect(DEFAULT_GATE_POLICY.rules!.map((r) => [r.id, r.action, r.effects])).toEqual([
      ["read-only", "allow", ["read_only"]],
      ["side-effecting", "require_approval", ["side_effecting"]],
    ]);
  });
});

describe("the CLI flags", () => {
  function cli(args: string[]) {
    const r = Bun.spawnSync([process.execPath, "src/cli/main.ts", ...args], {
      cwd: REPO,
      stdin: "ignore",
      env: { PATH: process.env.PATH ?? "" },
    });
    return { code: r.exitCode, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
  }

  test("agent --approve-all prints exactly one warning line on stderr and the run works", () => {
    const script = join(dir, "s.jsonl");
    writeFileSync(script, JSON.stringify({ content: "hi" }) + "\n");
    const r = cli(["agent", "--approve-all", "--script", script, "say hi"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("hi\n");
    expect(r.stderr).toBe(`${APPROVE_ALL_WARNING}\n`);
  });

  const writeScript = () => {
    const script = join(dir, "w.jsonl");
    const call = { id: "w1", name: "write_file", arguments: JSON.stringify({ path: "notes.txt", content: "changed" }) };
    writeFileSync(
      script,
      [JSON.stringify({ content: null, tool_calls: [call] }), JSON.stringify({ content: "written" })].join("\n") + "\n",
    );
    writeFileSync(join(dir, "notes.txt"), "original");
    return script;
  };

  test("agent without a terminal: write_file is refused, the file stays, and stderr says how to allow it", () => {
    const r = cli(["agent", "--script", writeScript(), "--root", dir, "--tools", "write_file", "change the notes"]);
    expect(r.code).toBe(1);
    expect(readFileSync(join(dir, "notes.txt"), "utf8")).toBe("original");
    expect(r.stderr).toContain("agentcore: run rejected (tool_rejected)");
    expect(r.stderr).toContain("agentcore: write_file was refused: approval needs an interactive terminal (stdin is not a TTY)");
    expect(r.stderr).toContain("--approve-all");
  });

  test("agent --approve-all writes, and the history log records the approved decision", () => {
    const log = join(dir, "history.jsonl");
    const r = cli([
      "agent",
      "--approve-all",
      "--history",
      log,
      "--script",
      writeScript(),
      "--root",
      dir,
      "--tools",
      "write_file",
      "change the notes",
    ]);
    expect(r.code).toBe(0);
    expect(readFileSync(join(dir, "notes.txt"), "utf8")).toBe("changed");
    const recs = readFileSync(log, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(recs.map((x) => [x.tool, x.decision, x.success])).toEqual([
      ["write_file", { action: "require_approval", by: "approve_all", approved: true }, true],
    ]);
  });

  test("agent with a config policy: its rules decide, not the default gate", () => {
    const cfg = join(dir, "c.jsonc");
    writeFileSync(cfg, JSON.stringify({ policy: { default: "allow" } }));
    const r = cli(["agent", "--config", cfg, "--script", writeScript(), "--root", dir, "--tools", "write_file", "change the notes"]);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe("");
    expect(readFileSync(join(dir, "notes.txt"), "utf8")).toBe("changed");
  });

  test("agent: a deny rule of a config policy is reported without the approval hint", () => {
    const cfg = join(dir, "c.jsonc");
    writeFileSync(
      cfg,
      JSON.stringify({
        policy: { default: "allow", rules: [{ id: "no-writes", action: "deny", tools: ["write_file"], reason: "writes are off today" }] },
      }),
    );
    const r = cli(["agent", "--config", cfg, "--script", writeScript(), "--root", dir, "--tools", "write_file", "change the notes"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("agentcore: write_file was refused: writes are off today.\n");
    expect(r.stderr).not.toContain("--approve-all");
    expect(readFileSync(join(dir, "notes.txt"), "utf8")).toBe("original");
  });

  test("--approve-all and --no-plan belong to agent and chat only", () => {
    for (const flag of ["--approve-all", "--no-plan"]) {
      const r = cli(["execute", flag, '{"id":"1","tool":"echo","arguments":{}}']);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`${flag} applies to 'agent' and 'chat' only`);
      expect(r.stdout).toBe("");
    }
  });

  test("--help lists both flags", () => {
    for (const command of ["agent", "chat"]) {
      const r = cli([command, "--help"]);
      expect(r.stdout).toContain("--approve-all");
      expect(r.stdout).toContain("--no-plan");
    }
  });

  test("agent --no-plan does not offer update_plan; by default plan events show in --events jsonl", () => {
    const script = join(dir, "s.jsonl");
    const plan = JSON.stringify({ steps: [{ title: "Say hi", status: "done" }] });
    writeFileSync(
      script,
      [
        JSON.stringify({ content: null, tool_calls: [{ id: "p1", name: "update_plan", arguments: plan }] }),
        JSON.stringify({ content: "hi" }),
      ].join("\n") + "\n",
    );
    const r = cli(["agent", "--events", "jsonl", "--script", script, "say hi"]);
    expect(r.code).toBe(0);
    const events = r.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    const progressed = events.find((e) => e.kind === "tool_progressed");
    expect(progressed.tool_call.name).toBe("update_plan");
    expect(progressed.update).toEqual({ message: "plan updated", data: { plan: { steps: [{ title: "Say hi", status: "done" }] } } });

    const off = cli(["agent", "--no-plan", "--events", "jsonl", "--script", script, "say hi"]);
    const offEvents = off.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    const completed = offEvents.find((e) => e.kind === "tool_completed");
    expect(JSON.parse(completed.result.messages[0].content).code).toBe("UNKNOWN_TOOL");
  });
});
