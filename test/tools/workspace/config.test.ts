/** The `tools` config section and the `--tools` list, checked in-process. */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { parseToolsConfig, selectTools, ToolsConfigError } from "../../../src/tools/workspace/config.ts";
import { sandbox } from "../../support/workspace.ts";
import { SEARCH_PATH } from "../../support/procs.ts";
import { tmp } from "../../support/tmp.ts";

// a few tests start the CLI or a grep worker
setDefaultTimeout(60_000);

describe("parseToolsConfig", () => {
  test("accepts booleans and settings objects", () => {
    const v = {
      list_dir: true,
      glob: false,
      grep: { max_results: 5, max_file_bytes: 10, timeout_ms: 100 },
      git_diff: { max_bytes: 1, timeout_ms: 2 },
      write_file: { max_bytes: 3 },
      apply_patch: {},
      exec: {
        allow: ["ls"],
        env: ["PATH"],
        timeout_ms: 4,
        max_output_bytes: 5,
        isolation: "off",
        limits: { processes: 1, memory_bytes: 1048576, file_size_bytes: 1, cpu_seconds: 1 },
      },
    };
    expect(parseToolsConfig(v)).toEqual(v as never);
  });

  test("every problem names its key", () => {
    const cases: [unknown, string][] = [
      [[], '"tools" must be an object'],
      [{ nope: true }, 'unknown key "tools.nope"'],
      [{ toString: true }, 'unknown key "tools.toString"'],
      [{ grep: "yes" }, '"tools.grep" must be true, false or an object'],
      [{ grep: { max_results: 1.5 } }, '"tools.grep.max_results" must be a positive integer'],
      [{ grep: { max_results: -1 } }, '"tools.grep.max_results" must be a positive integer'],
      [{ grep: { hasOwnProperty: 1 } }, 'unknown key "tools.grep.hasOwnProperty"'],
      [{ exec: true }, '"tools.exec" needs an object with an "allow" list'],
      [{ exec: {} }, '"tools.exec.allow" is required'],
      [{ exec: { allow: "ls" } }, '"tools.exec.allow" must be an array of strings'],
      [{ exec: { allow: [""] } }, '"tools.exec.allow[0]" must be a non-empty string'],
      [{ exec: { allow: ["ls"], isolation: true } }, '"tools.exec.isolation" must be one of auto, required, off'],
      [
        { exec: { allow: ["ls"], env: ["PATH", "TAR_OPTIONS"] } },
        '"tools.exec.env[1]": environment variable "TAR_OPTIONS" can\'t be allowlisted: tar takes options from it',
      ],
      [
        { exec: { allow: ["ls"], env: ["GIT_DIR"] } },
        '"tools.exec.env[0]": environment variable "GIT_DIR" can\'t be allowlisted: git takes',
      ],
      [{ exec: { allow: ["ls"], env: ["1X"] } }, '"tools.exec.env[0]" must be an environment variable name'],
      [{ exec: { allow: ["ls"], limits: [] } }, '"tools.exec.limits" must be an object'],
      [{ exec: { allow: ["ls"], limits: { processes: 0 } } }, '"tools.exec.limits.processes" must be an integer from 1 to 1000000'],
      [{ exec: { allow: ["ls"], limits: { processes: 1_000_001 } } }, '"tools.exec.limits.processes" must be an integer from 1 to 1000000'],
      [{ exec: { allow: ["ls"], limits: { memory_bytes: 1048575 } } }, '"tools.exec.limits.memory_bytes" must be an integer from 1048576'],
      [{ exec: { allow: ["ls"], limits: { file_size_bytes: 0 } } }, '"tools.exec.limits.file_size_bytes" must be an integer from 1'],
      [
        { exec: { allow: ["ls"], limits: { cpu_seconds: 2 ** 31 } } },
        '"tools.exec.limits.cpu_seconds" must be an integer from 1 to 2147483647',
      ],
      [{ exec: { allow: ["ls"], limits: { cpu_seconds: "10" } } }, '"tools.exec.limits.cpu_seconds" must be an integer'],
      [{ exec: { allow: ["ls"], limits: { toString: 1 } } }, 'unknown key "tools.exec.limits.toString"'],
    ];
    for (const [value, message] of cases) {
      expect(() => parseToolsConfig(value)).toThrow(ToolsConfigError);
      expect(() => parseToolsConfig(value)).toThrow(message);
    }
  });
});

describe("selectTools", () => {
  test("groups, names, configured settings, and exec's need for a config section", () => {
    expect(selectTools("read")).toEqual({ list_dir: true, glob: true, grep: true, git_diff: true });
    expect(Object.keys(selectTools("workspace"))).toEqual(["list_dir", "glob", "grep", "git_diff", "write_file", "apply_patch"]);
    expect(selectTools(" grep , write_file ,", { grep: { max_results: 3 }, exec: { allow: ["ls"] } })).toEqual({
      grep: { max_results: 3 },
      write_file: true,
    });
    expect(selectTools("exec", { exec: { allow: ["ls"] } })).toEqual({ exec: { allow: ["ls"] } });
    expect(() => selectTools("exec")).toThrow('needs a config file with a "tools.exec" section');
    expect(() => selectTools("exec", { exec: false })).toThrow("tools.exec");
    expect(() => selectTools("read,bash")).toThrow('unknown tool "bash"');
    expect(() => selectTools("")).toThrow("at least one tool");
  });
});

describe("timeouts a timer can't hold", () => {
  test("a tools timeout_ms above 2^31-1 ms is a config error naming the key (it made grep and git_diff always TIMEOUT and exec kill at 1 ms)", async () => {
    const { parseToolsConfig } = await import("../../../src/tools/workspace/config.ts");
    for (const [tool, settings] of [
      ["grep", {}],
      ["git_diff", {}],
      ["exec", { allow: ["ls"] }],
    ] as [string, Record<string, unknown>][]) {
      expect(() => parseToolsConfig({ [tool]: { ...settings, timeout_ms: 3_000_000_000 } })).toThrow(
        `"tools.${tool}.timeout_ms" must be an integer from 1 to 2147483647`,
      );
      expect(() => parseToolsConfig({ [tool]: { ...settings, timeout_ms: 2_147_483_647 } })).not.toThrow();
    }
  });

  test("the CLI refuses such a config with exit 2 before running anything", () => {
    const dir = tmp("agentcore-config-cli-");
    try {
      fs.writeFileSync(path.join(dir, "a.txt"), "hello\n");
      const cfg = path.join(dir, "c.jsonc");
      fs.writeFileSync(cfg, JSON.stringify({ root: dir, tools: { grep: { timeout_ms: 3_000_000_000 } } }));
      const r = Bun.spawnSync([
        process.execPath,
        path.join(import.meta.dir, "../../../src/cli/main.ts"),
        "--config",
        cfg,
        "execute",
        '{"id":"g","tool":"grep","arguments":{"pattern":"hel+o"}}',
      ]);
      expect(r.exitCode).toBe(2);
      expect(r.stderr.toString()).toContain('"tools.grep.timeout_ms" must be an integer from 1 to 2147483647');
      expect(r.stdout.toString()).toBe("");
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test("the library refuses it at creation (RangeError), and 2^31-1 works", async () => {
    const { workspaceTools } = await import("../../../src/tools/workspace/index.ts");
    const root = tmp("agentcore-config-lib-");
    try {
      for (const o of [
        { grep: { timeout_ms: 3_000_000_000 } },
        { git_diff: { timeout_ms: 2 ** 31 } },
        { exec: { allow: ["ls"], timeout_ms: 2 ** 32, isolation: "off" as const } },
      ]) {
        expect(() => workspaceTools(o, root, { searchPath: SEARCH_PATH, warn: () => {} })).toThrow(RangeError);
      }
      const sb = sandbox({ grep: { timeout_ms: 2_147_483_647 } }, "agentcore-ws-");
      try {
        fs.writeFileSync(path.join(sb.root, "a.txt"), "hello\n");
        const env = await sb.call("grep", { pattern: "hel+o" });
        expect(env.error).toBeNull();
        expect(env.result).toMatchObject({ matches: [{ path: "a.txt", line: 1, text: "hello" }] });
      } finally {
        sb.cleanup();
      }
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});
