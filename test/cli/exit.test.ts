/**
 * How the CLI ends on an error (src/cli/exit.ts): by the error's code, never
 * its class name. Unit tests of the table, then each ending through the
 * compiled binary (main's catch block and serve's), which prints and exits as
 * it did when the catch blocks matched class names.
 */
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { rmSync, writeFileSync } from "node:fs";
import * as net from "node:net";
import { join } from "node:path";
import { AgentSetupError, AgentUsageError } from "../../src/cli/agent-session.ts";
import { UsageError } from "../../src/cli/args.ts";
import { ERROR_STATUS, EXIT_BY_CODE, exitFor, exitKind } from "../../src/cli/exit.ts";
import { OutputClosedError, OutputError, PIPE_CLOSED_STATUS } from "../../src/cli/output.ts";
import { AgentcoreError } from "../../src/core/errors.ts";
import { ConfigError } from "../../src/host/settings.ts";
import { SessionConflictError } from "../../src/session/types.ts";
import { binaryPath } from "../support/binary.ts";
import { tmp } from "../support/tmp.ts";

setDefaultTimeout(60_000);

/** exitFor with its output captured. */
function end(e: unknown, command = "agent", beforeMessage?: () => void): { status: number; text: string } {
  let text = "";
  const status = exitFor(e, { command, beforeMessage, write: (t) => (text += t) });
  return { status, text };
}

describe("the table maps by code", () => {
  test("a subclass of a usage error with another class name still ends as usage, naming its command's help", () => {
    class FlagTypo extends UsageError {
      override name = "FlagTypo";
    }
    expect(exitKind(new FlagTypo("--nope is not a flag"))).toBe("usage");
    expect(end(new FlagTypo("--nope is not a flag", "sessions show"))).toEqual({
      status: 2,
      text: "agentcore sessions show: --nope is not a flag\nRun 'agentcore sessions show --help' for usage.\n",
    });
    // without a command of its own, the hint names the command that ran
    expect(end(new FlagTypo("bad"), "run").text).toBe("agentcore run: bad\nRun 'agentcore run --help' for usage.\n");
  });

  test("AgentUsageError extends AgentSetupError, but its code (USAGE) decides: usage, not the plain message", () => {
    expect(new AgentUsageError("x")).toBeInstanceOf(AgentSetupError);
    expect(end(new AgentUsageError("--events takes 'jsonl', got 'xml'"))).toEqual({
      status: 2,
      text: "agentcore agent: --events takes 'jsonl', got 'xml'\nRun 'agentcore agent --help' for usage.\n",
    });
    class Renamed extends AgentSetupError {
      override name = "AgentUsageError"; // the old string match would have taken this for a usage error
    }
    expect(end(new Renamed("no such skill"))).toEqual({ status: 2, text: "agentcore: no such skill\n" });
  });

  test("setup, config, input and output problems print the message alone, after the results so far", () => {
    let flushed = 0;
    expect(end(new ConfigError("agentcore.json: unknown key 'toolz'"), "tools", () => flushed++)).toEqual({
      status: 2,
      text: "agentcore: agentcore.json: unknown key 'toolz'\n",
    });
    expect(flushed).toBe(1);
    // a flush that fails (the output is what failed) still leaves the message
    const failing = () => {
      throw new OutputError("cannot write results: ENOSPC");
    };
    expect(end(new OutputError("cannot write results: ENOSPC"), "run", failing)).toEqual({
      status: 2,
      text: "agentcore: cannot write results: ENOSPC\n",
    });
  });

  test("a closed pipe is quiet, with the pipe-closed status", () => {
    expect(end(new OutputClosedError("EPIPE"))).toEqual({ status: PIPE_CLOSED_STATUS, text: "" });
  });

  test("anything else is an internal error with its stack: other codes, look-alikes, values that are not errors", () => {
    const conflict = end(new SessionConflictError("head moved"));
    expect(conflict.status).toBe(ERROR_STATUS);
    expect(conflict.text).toStartWith("agentcore: internal error: SessionConflictError: head moved\n");
    class Unlisted extends AgentcoreError {
      readonly code = "SOMETHING_NEW";
    }
    expect(exitKind(new Unlisted("x"))).toBe("internal");
    // a plain Error that claims a code is not an agentcore error
    expect(exitKind(Object.assign(new Error("x"), { code: "USAGE", name: "UsageError" }))).toBe("internal");
    expect(end("a string")).toEqual({ status: 2, text: "agentcore: internal error: a string\n" });
    expect(end(null)).toEqual({ status: 2, text: "agentcore: internal error: null\n" });
    expect(end(undefined)).toEqual({ status: 2, text: "agentcore: internal error: undefined\n" });
    // a value that throws when looked at still gives a line and a status
    const hostile = new Proxy(
      {},
      {
        get() {
          throw new Error("no");
        },
      },
    );
    expect(end(hostile)).toEqual({ status: 2, text: "agentcore: internal error: an unreadable error value\n" });
  });

  test("every ending of the table is one of the three", () => {
    expect([...new Set(EXIT_BY_CODE.values())].sort()).toEqual(["message", "pipe_closed", "usage"]);
    expect(EXIT_BY_CODE.get("USAGE")).toBe("usage");
    expect(EXIT_BY_CODE.get("OUTPUT_CLOSED")).toBe("pipe_closed");
  });
});

// ---------------------------------------------------------------- through the binary

const work = tmp("agentcore-exit-");
afterAll(() => rmSync(work, { recursive: true, force: true }));
const CLEAN_ENV = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: work };
const script = join(work, "script.jsonl");
writeFileSync(script, '{"content": "done"}\n');

function run(args: string[], env: Record<string, string> = {}): { status: number | null; stdout: string; stderr: string } {
  const p = Bun.spawnSync([binaryPath(), ...args], {
    cwd: work,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env: { ...CLEAN_ENV, ...env },
  });
  return { status: p.exitCode, stdout: p.stdout.toString(), stderr: p.stderr.toString() };
}

describe("through the binary: main's catch block", () => {
  test("a UsageError thrown inside the command: the hint names the command's help", () => {
    expect(run(["agent", "--continue", "a task"])).toEqual({
      status: 2,
      stdout: "",
      stderr:
        "agentcore agent: agent --continue takes no task: it continues the session's last run (got 'a task')\nRun 'agentcore agent --help' for usage.\n",
    });
  });

  test("an AgentUsageError: the hint too", () => {
    expect(run(["agent", "--script", script, "--events", "xml", "hello"])).toEqual({
      status: 2,
      stdout: "",
      stderr: "agentcore agent: --events takes 'jsonl', got 'xml'\nRun 'agentcore agent --help' for usage.\n",
    });
  });

  test("an AgentSetupError (a script that does not exist): the message alone", () => {
    const r = run(["agent", "--script", join(work, "missing.jsonl"), "hello"]);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toStartWith("agentcore: ");
    expect(r.stderr).toContain("missing.jsonl");
    expect(r.stderr).not.toContain("--help");
    expect(r.stderr).not.toContain("internal error");
  });

  test("a ConfigError (a config file that does not exist): the message alone", () => {
    const r = run(["tools", "--config", join(work, "nope.json")]);
    expect(r.status).toBe(2);
    expect(r.stderr).toStartWith("agentcore: ");
    expect(r.stderr).toContain("nope.json");
    expect(r.stderr).not.toContain("--help");
    expect(r.stderr).not.toContain("internal error");
  });

  test("an InputError (a JSONL file that does not exist): the message alone", () => {
    const r = run(["run", join(work, "calls.jsonl")]);
    expect(r).toEqual({ status: 2, stdout: "", stderr: `agentcore: cannot open ${join(work, "calls.jsonl")}: ENOENT\n` });
  });
});

describe("through the binary: serve's catch block", () => {
  test("a flag problem: the hint names serve's help", () => {
    const r = run(["serve", "--unix", ""]);
    expect(r).toEqual({ status: 2, stdout: "", stderr: "agentcore serve: --unix needs a path\nRun 'agentcore serve --help' for usage.\n" });
  });

  test("a TokenError (AGENTCORE_TOKEN too short): the message alone", () => {
    const r = run(["serve", "--port", "0", "--state-dir", join(work, "state")], { AGENTCORE_TOKEN: "short" });
    expect(r).toEqual({ status: 2, stdout: "", stderr: "agentcore serve: AGENTCORE_TOKEN must be at least 32 characters long\n" });
  });

  test("a ListenError (the port is taken): the message alone", async () => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    try {
      const port = (taken.address() as net.AddressInfo).port;
      const p = Bun.spawn([binaryPath(), "serve", "--port", String(port), "--state-dir", join(work, "state2")], {
        cwd: work,
        stdin: "ignore",
        stdout: "pipe",
        stderr: "pipe",
        env: CLEAN_ENV,
      });
      const status = await p.exited;
      const stderr = await new Response(p.stderr).text();
      expect(status).toBe(2);
      expect(stderr).toStartWith("agentcore serve: ");
      expect(stderr).toContain(String(port));
      expect(stderr).not.toContain("--help");
      expect(stderr).not.toContain("internal error");
    } finally {
      taken.close();
    }
  });
});
