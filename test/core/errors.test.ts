/**
 * One error base class: every error class in src/ (found by reading the
 * sources) is an AgentcoreError with a stable code, UPPER_SNAKE, its own
 * unless it is one of the documented families; every error class a public
 * entry exports is one, and the entry exports the base with it.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import * as path from "node:path";
import { AgentcoreError, isAgentcoreError } from "../../src/core/errors.ts";
import { ERROR_CODES } from "../../src/core/envelope.ts";
import { ENTRIES, type ErrorClass, errorClasses, PER_INSTANCE, REPO } from "../support/error-classes.ts";

const CODE = /^[A-Z][A-Z0-9_]+$/;
/** Classes that share a code without one inheriting it from another. */
const USAGE_FAMILY = ["AgentUsageError", "HistoryUsageError", "ServeUsageError", "UsageError"];

let classes: ErrorClass[] = [];
beforeAll(async () => {
  classes = await errorClasses();
});

describe("every error class in src/", () => {
  test("the sources declare the ~50 classes (the scan works)", () => {
    expect(classes.length).toBeGreaterThanOrEqual(50);
    for (const name of ["ToolError", "SessionConflictError", "UsageError", "OutputClosedError", "ListenError", "McpStartupError"])
      expect(classes.map((c) => c.name)).toContain(name);
  });

  test("extends AgentcoreError, directly or through its family", () => {
    const outside = classes.filter((c) => !(c.sample instanceof AgentcoreError)).map((c) => `${c.name} (${c.file})`);
    expect(outside).toEqual([]);
  });

  test("has a code: UPPER_SNAKE, or the wire value of a per-error family", () => {
    const bad: string[] = [];
    for (const c of classes) {
      const code = (c.sample as AgentcoreError).code;
      const family = PER_INSTANCE[c.name];
      const ok =
        family === undefined
          ? typeof code === "string" && CODE.test(code)
          : family === "envelope"
            ? (ERROR_CODES as readonly string[]).includes(code)
            : family.includes(code);
      if (!ok) bad.push(`${c.name}: ${JSON.stringify(code)}`);
    }
    expect(bad).toEqual([]);
  });

  test("keeps its name (messages and tests use it)", () => {
    expect(classes.filter((c) => c.sample.name !== c.name).map((c) => `${c.name}: ${c.sample.name}`)).toEqual([]);
  });

  test("a code is one class's, unless a subclass inherits it or it is the usage family", () => {
    const byCode = new Map<string, ErrorClass[]>();
    for (const c of classes) {
      if (PER_INSTANCE[c.name] !== undefined) continue;
      const code = (c.sample as AgentcoreError).code;
      byCode.set(code, [...(byCode.get(code) ?? []), c]);
    }
    const names = new Set(classes.map((c) => c.name));
    const shared: string[] = [];
    for (const [code, group] of byCode) {
      if (group.length === 1) continue;
      if (code === "USAGE") {
        expect(group.map((c) => c.name).sort()).toEqual(USAGE_FAMILY);
        continue;
      }
      // the one that declares the code, and subclasses that inherit it without a code of their own
      const declaring = group.filter((c) => !group.some((p) => p.name === c.parent));
      if (declaring.length !== 1 || !group.every((c) => c === declaring[0] || names.has(c.parent)))
        shared.push(`${code}: ${group.map((c) => c.name).join(", ")}`);
    }
    expect(shared).toEqual([]);
  });

  test("the per-error families keep their instance's code (wire values unchanged)", async () => {
    const { ToolError } = await import("../../src/tools/definition.ts");
    const { HttpError } = await import("../../src/server/errors.ts");
    const { SkillError } = await import("../../src/skills/catalog.ts");
    expect(new ToolError("UNKNOWN_TOOL", "m").code).toBe("UNKNOWN_TOOL");
    expect(new HttpError(409, "CONFLICT", "m").code).toBe("CONFLICT");
    expect(new SkillError("duplicate_name", "m", "/x").code).toBe("duplicate_name");
    expect(isAgentcoreError(new ToolError("DENIED", "m"), "DENIED")).toBe(true);
  });

  test("a subclass keeps its family's code and class checks", async () => {
    const { SessionConflictError, SessionBranchBusyError, SessionError } = await import("../../src/session/types.ts");
    const busy = new SessionBranchBusyError("m", "s", "main", 1);
    expect(busy.code).toBe("SESSION_BRANCH_BUSY");
    expect(busy).toBeInstanceOf(SessionConflictError);
    expect(busy).toBeInstanceOf(SessionError);
    class Mine extends SessionConflictError {}
    expect(new Mine("m").code).toBe("SESSION_CONFLICT");
  });
});

describe("isAgentcoreError", () => {
  test("checks the class and, when given, the code", async () => {
    const { ConfigError } = await import("../../src/host/settings.ts");
    const e = new ConfigError("bad");
    expect(isAgentcoreError(e)).toBe(true);
    expect(isAgentcoreError(e, "CONFIG_INVALID")).toBe(true);
    expect(isAgentcoreError(e, "USAGE")).toBe(false);
    // look-alikes are not: a plain Error with a code, an errno error, a plain object, null
    expect(isAgentcoreError(Object.assign(new Error("x"), { code: "CONFIG_INVALID" }), "CONFIG_INVALID")).toBe(false);
    expect(isAgentcoreError({ code: "CONFIG_INVALID", message: "x" })).toBe(false);
    expect(isAgentcoreError(null)).toBe(false);
    expect(isAgentcoreError("CONFIG_INVALID")).toBe(false);
  });
});

describe("the public entries", () => {
  test("every error class an entry exports is an AgentcoreError, and the entry exports the base too", async () => {
    const problems: string[] = [];
    const known = new Set(classes.map((c) => c.ctor as unknown));
    for (const [entry, file] of ENTRIES) {
      const mod = (await import(path.join(REPO, file))) as Record<string, unknown>;
      const errors = Object.entries(mod).filter(
        ([name, v]) => typeof v === "function" && name !== "AgentcoreError" && (v as { prototype?: unknown }).prototype instanceof Error,
      );
      for (const [name, v] of errors) {
        if (!((v as { prototype: unknown }).prototype instanceof AgentcoreError))
          problems.push(`${entry}: ${name} is not an AgentcoreError`);
        if (!known.has(v)) problems.push(`${entry}: ${name} was not found in the sources`);
      }
      if (errors.length > 0 && mod.AgentcoreError !== AgentcoreError)
        problems.push(`${entry} exports error classes but not AgentcoreError`);
    }
    expect(problems).toEqual([]);
  });

  test("the main entry exports AgentcoreError (the base, one name)", async () => {
    const mod = (await import("../../src/mod.ts")) as Record<string, unknown>;
    expect(mod.AgentcoreError).toBe(AgentcoreError);
    expect(mod.isAgentcoreError).toBeUndefined();
  });
});
