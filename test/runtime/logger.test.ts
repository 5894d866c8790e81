import { describe, expect, test } from "bun:test";
import { createLogger, formatLogLine, parseLogLevel, type LogLevel } from "../../src/core/logger.ts";

function capture(opts: Parameters<typeof createLogger>[0] = {}) {
  const lines: string[] = [];
  const log = createLogger({ ...opts, sink: (l) => lines.push(l) });
  return { log, lines };
}

function emitAll(log: ReturnType<typeof createLogger>) {
  for (const l of ["trace", "debug", "info", "warn", "error"] as LogLevel[]) log[l](`m-${l}`);
}

describe("logger", () => {
  test("default level is warn when the variable is unset or empty", () => {
    for (const env of [{}, { AGENTCORE_LOG_LEVEL: "" }, { AGENTCORE_LOG_LEVEL: "  " }]) {
      const { log, lines } = capture({ env });
      expect(log.level).toBe("warn");
      emitAll(log);
      expect(lines).toEqual(["agentcore warn m-warn", "agentcore error m-error"]);
    }
  });

  test.each([
    ["trace", 5],
    ["DEBUG", 4],
    ["Info", 3],
    [" warn ", 2],
    ["ERROR", 1],
  ])("AGENTCORE_LOG_LEVEL=%j filters", (value, count) => {
    const { log, lines } = capture({ env: { AGENTCORE_LOG_LEVEL: value } });
    emitAll(log);
    expect(lines).toHaveLength(count);
    expect(log.level).toBe(value.trim().toLowerCase() as LogLevel);
  });

  test("invalid value: one warning, falls back to warn", () => {
    const { log, lines } = capture({ env: (name) => (name === "AGENTCORE_LOG_LEVEL" ? "verbose" : undefined) });
    expect(log.level).toBe("warn");
    expect(lines).toEqual(["agentcore warn invalid AGENTCORE_LOG_LEVEL, using warn value=verbose allowed=trace,debug,info,warn,error"]);
    log.info("hidden");
    log.warn("shown");
    expect(lines).toHaveLength(2);
  });

  test("explicit level overrides the environment", () => {
    const { log, lines } = capture({ level: "error", env: { AGENTCORE_LOG_LEVEL: "trace" } });
    emitAll(log);
    expect(lines).toEqual(["agentcore error m-error"]);
    expect(() => createLogger({ level: "loud" as LogLevel })).toThrow(RangeError);
  });

  test("enabled() reflects the threshold", () => {
    const { log } = capture({ level: "info" });
    expect([log.enabled("debug"), log.enabled("info"), log.enabled("error")]).toEqual([false, true, true]);
  });

  test("format: one line, key=value, quoting when needed", () => {
    expect(
      formatLogLine("info", "call done", { tool: "echo", ok: true, ms: 0.25, note: "two words", q: 'a"b', e: "", n: null, o: { a: 1 } }),
    ).toBe('agentcore info call done tool=echo ok=true ms=0.25 note="two words" q="a\\"b" e="" n=null o={"a":1}');
    expect(formatLogLine("warn", "multi\nline", { v: "x\ny" })).toBe('agentcore warn multi line v="x\\ny"');
  });

  test("disabled levels do not format (fields with throwing getters are never touched)", () => {
    const { log, lines } = capture({ level: "error" });
    const fields = {
      get boom(): string {
        throw new Error("formatted!");
      },
    };
    log.debug("x", fields);
    log.info("x", fields);
    expect(lines).toEqual([]);
  });

  test("a throwing sink never throws into the caller", () => {
    const log = createLogger({
      level: "trace",
      sink: () => {
        throw new Error("EPIPE");
      },
    });
    expect(() => log.error("x")).not.toThrow();
  });

  test("parseLogLevel", () => {
    expect(parseLogLevel("TrAcE")).toBe("trace");
    expect(parseLogLevel("toString")).toBeUndefined();
    expect(parseLogLevel("__proto__")).toBeUndefined();
  });

  test("default sink writes to stderr, not stdout", async () => {
    const script = 'import { createLogger } from "./src/core/logger.ts"; createLogger().warn("to-stderr", { k: 1 });';
    const proc = Bun.spawnSync([process.execPath, "-e", script], {
      cwd: `${import.meta.dir}/../..`,
      env: { ...process.env, AGENTCORE_LOG_LEVEL: "warn" },
    });
    expect(proc.stdout.toString()).toBe("");
    expect(proc.stderr.toString()).toBe("agentcore warn to-stderr k=1\n");
  });
});
