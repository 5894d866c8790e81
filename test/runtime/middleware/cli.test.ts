import { describe, expect, test } from "bun:test";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "../../support/paths.ts";
import { loadConfig } from "../../../src/host/settings.ts";
import { tmp } from "../../support/tmp.ts";

const MAIN = join(REPO_ROOT, "src/cli/main.ts");

function withConfig(policy: unknown): { path: string; dispose(): void } {
  const dir = tmp("agentcore-policy-");
  const path = join(dir, "config.jsonc");
  writeFileSync(path, `{\n  // policy under test\n  "policy": ${JSON.stringify(policy)},\n}\n`);
  return { path, dispose: () => rmSync(dir, { recursive: true, force: true }) };
}

function cli(args: string[], stdin?: string): { status: number; stdout: string; stderr: string } {
  const r = Bun.spawnSync([process.execPath, MAIN, ...args], {
    stdin: stdin === undefined ? "ignore" : Buffer.from(stdin),
    env: { ...process.env, AGENTCORE_CONFIG: "" },
  });
  return { status: r.exitCode ?? -1, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

const ECHO = '{"id":"c1","tool":"echo","arguments":{"api_key":"K-123"}}';

describe("CLI: the config file's policy section (issue 4 §3)", () => {
  test("without a policy section every call runs (today's behaviour)", () => {
    const r = cli(["execute", ECHO]);
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout).success).toBe(true);
  });

  test("default deny: execute prints a DENIED envelope (exit 1) without the arguments", () => {
    const cfg = withConfig({ rules: [] });
    try {
      const r = cli(["execute", "--config", cfg.path, ECHO]);
      expect(r.status).toBe(1);
      const env = JSON.parse(r.stdout);
      expect(env.error).toEqual({ code: "DENIED", message: "tool execution denied by policy", details: {} });
      expect(r.stdout).not.toContain("K-123");
    } finally {
      cfg.dispose();
    }
  });

  test("rules from the config: allow by effect, max_calls_per_run across a run of JSONL lines", () => {
    const cfg = withConfig({ default: "deny", rules: [{ id: "reads", action: "allow", effects: ["read_only"], max_calls_per_run: 2 }] });
    try {
      const lines = Array.from({ length: 3 }, (_, i) => `{"id":"r${i}","tool":"echo","arguments":{"i":${i}}}`).join("\n") + "\n";
      const r = cli(["run", "--config", cfg.path, "-"], lines);
      const envs = r.stdout
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l));
      expect(envs.map((e) => e.error?.code ?? "ok")).toEqual(["ok", "ok", "DENIED"]);
      expect(envs[2].error.message).toBe("tool call limit reached for policy rule 'reads'");
      expect(envs[2].error.details).toEqual({ rule_id: "reads", input_line: 3 });
    } finally {
      cfg.dispose();
    }
  });

  test("require_approval with stdin not a terminal: denied (fail closed)", () => {
    const cfg = withConfig({ default: "require_approval", rules: [] });
    try {
      const r = cli(["execute", "--config", cfg.path, ECHO], "y\n");
      expect(r.status).toBe(1);
      expect(JSON.parse(r.stdout).error).toEqual({
        code: "DENIED",
        message: "approval needs an interactive terminal (stdin is not a TTY)",
        details: {},
      });
      // stdin is the input: no approver at all.
      const r2 = cli(["execute", "--config", cfg.path, "-"], ECHO);
      expect(JSON.parse(r2.stdout).error.message).toBe("tool execution requires approval but no approver is configured");
    } finally {
      cfg.dispose();
    }
  });

  test("agent: a deny rule from the config ends the run rejected (tool_rejected), the arguments never printed", () => {
    const cfg = withConfig({ rules: [{ id: "no-echo", action: "deny", tools: ["echo"], reason: "echo is off" }] });
    const script = join(cfg.path, "..", "script.jsonl");
    writeFileSync(
      script,
      '{"content":null,"tool_calls":[{"id":"c1","name":"echo","arguments":"{\\"password\\":\\"hunter2\\"}"}]}\n{"content":"done"}\n',
    );
    try {
      const r = cli(["agent", "--config", cfg.path, "--script", script, "go"]);
      expect(r.status).toBe(1);
      expect(r.stderr).toContain("tool_rejected");
      expect(r.stdout + r.stderr).not.toContain("hunter2");
      const free = cli(["agent", "--script", script, "go"]);
      expect([free.status, free.stdout.trim()]).toEqual([0, "done"]);
    } finally {
      cfg.dispose();
    }
  });

  test("bad policy sections exit 2 naming the key", () => {
    for (const [policy, needle] of [
      [{ default: "maybe" }, '"policy.default"'],
      [{ rules: [{ id: "a", action: "allow", when: "x" }] }, 'unknown key "policy.rules[0].when"'],
      [{ rules: [{ id: "a", action: "deny", max_calls_per_run: 1 }] }, "not allowed on a deny rule"],
      [
        {
          rules: [
            { id: "a", action: "allow" },
            { id: "a", action: "deny" },
          ],
        },
        "duplicate rule id",
      ],
      [
        { rules: [{ id: "a", action: "allow", effects: ["writes"] }] },
        '"policy.rules[0].effects[0]" must be one of read_only, side_effecting',
      ],
      [{ nope: 1 }, '"policy.nope"'],
    ] as const) {
      const cfg = withConfig(policy);
      try {
        const r = cli(["execute", "--config", cfg.path, ECHO]);
        expect(r.status).toBe(2);
        expect(r.stderr).toContain(needle);
      } finally {
        cfg.dispose();
      }
    }
  });

  test("loadConfig returns the checked section", () => {
    const cfg = withConfig({
      default: "allow",
      approval_timeout_ms: 5,
      rules: [{ id: "x", action: "require_approval", tools: ["echo"], reason: "why" }],
    });
    try {
      expect(loadConfig(cfg.path).policy).toEqual({
        default: "allow",
        approval_timeout_ms: 5,
        rules: [{ id: "x", action: "require_approval", tools: ["echo"], reason: "why" }],
      });
    } finally {
      cfg.dispose();
    }
  });
});
