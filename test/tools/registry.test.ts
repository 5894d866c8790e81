import { describe, expect, test } from "bun:test";
import { ToolRegistrationError, ToolRegistry } from "../../src/tools/registry.ts";
import type { ToolDefinition } from "../../src/tools/definition.ts";

function tool(name: string, extra: Partial<ToolDefinition> = {}): ToolDefinition {
  return { name, description: "t", parameters: { type: "object" }, handler: () => null, ...extra };
}

function registrationError(fn: () => unknown): ToolRegistrationError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ToolRegistrationError);
    return err as ToolRegistrationError;
  }
  throw new Error("expected register to throw");
}

describe("ToolRegistry", () => {
  test("registers, looks up and lists in registration order", () => {
    const r = new ToolRegistry();
    for (const n of ["zeta", "alpha", "m-1", "under_score"]) r.register(tool(n));
    expect(r.size).toBe(4);
    expect(r.list().map((t) => t.name)).toEqual(["zeta", "alpha", "m-1", "under_score"]);
    expect(r.has("alpha")).toBe(true);
    expect(r.get("alpha")?.name).toBe("alpha");
    expect(r.get("ALPHA")).toBeUndefined();
  });

  test("defaults: effect side_effecting, strict false", () => {
    const r = new ToolRegistry();
    const t = r.register(tool("x"));
    expect(t.effect).toBe("side_effecting");
    expect(t.strict).toBe(false);
    expect(r.register(tool("y", { effect: "read_only" })).effect).toBe("read_only");
  });

  test("lookup never reaches Object.prototype", () => {
    const r = new ToolRegistry();
    r.register(tool("echo"));
    for (const n of ["toString", "constructor", "__proto__", "hasOwnProperty", "valueOf"]) {
      expect(r.get(n)).toBeUndefined();
      expect(r.has(n)).toBe(false);
    }
    // A tool may legitimately be called __proto__: it is a Map key, not a property.
    r.register(tool("__proto__"));
    expect(r.get("__proto__")?.name).toBe("__proto__");
    expect(Object.getPrototypeOf(r.list())).toBe(Array.prototype);
  });

  test("duplicate name is rejected and names the tool", () => {
    const r = new ToolRegistry();
    r.register(tool("dup"));
    const e = registrationError(() => r.register(tool("dup")));
    expect(e.message).toContain('"dup"');
    expect(e.message).toContain("duplicate");
    expect(r.size).toBe(1);
  });

  test.each([
    ["empty", ""],
    ["65 chars", "a".repeat(65)],
    ["space", "my tool"],
    ["unicode", "outil_é"],
    ["dot", "a.b"],
    ["slash", "a/b"],
    ["newline", "a\n"],
  ])("bad name (%s) is rejected", (_label, name) => {
    const r = new ToolRegistry();
    const e = registrationError(() => r.register(tool(name)));
    expect(e.message).toContain("invalid tool name");
    expect(e.message).toContain(JSON.stringify(name));
    expect(r.size).toBe(0);
  });

  test("64-char name is accepted", () => {
    const r = new ToolRegistry();
    expect(r.register(tool("a".repeat(64))).name).toHaveLength(64);
  });

  test("non-string name is rejected", () => {
    const r = new ToolRegistry();
    registrationError(() => r.register({ ...tool("x"), name: 42 as unknown as string }));
  });

  test("missing handler is rejected", () => {
    const r = new ToolRegistry();
    const e = registrationError(() => r.register({ name: "nohandler", description: "", parameters: {} } as unknown as ToolDefinition));
    expect(e.message).toContain('"nohandler"');
    expect(e.message).toContain("handler");
  });

  test("invalid schema fails at registration and names the tool", () => {
    const r = new ToolRegistry();
    const bad = [
      { type: "objekt" },
      { type: "object", properties: { a: { minimum: "three" } } },
      { type: "object", required: "a" },
      { $ref: "#/$defs/missing" },
      { $schema: "http://json-schema.org/draft-04/schema#" },
    ];
    for (const [i, parameters] of bad.entries()) {
      const e = registrationError(() => r.register(tool(`bad_${i}`, { parameters })));
      expect(e.message).toContain(`"bad_${i}"`);
      expect(e.message).toContain("schema");
    }
    registrationError(() => r.register(tool("arr", { parameters: [] as unknown as Record<string, unknown> })));
    expect(r.size).toBe(0);
  });

  test("unknown keywords are tolerated", () => {
    const r = new ToolRegistry();
    r.register(
      tool("x", { parameters: { type: "object", "x-vendor": true, properties: { a: { type: "string", examples: ["q"], "x-ui": 1 } } } }),
    );
    expect(r.has("x")).toBe(true);
  });

  test("invalid effect and timeout are rejected", () => {
    const r = new ToolRegistry();
    registrationError(() => r.register(tool("e", { effect: "dangerous" as "read_only" })));
    registrationError(() => r.register(tool("t", { timeoutMs: 0 })));
    registrationError(() => r.register(tool("t2", { timeoutMs: Number.NaN })));
  });

  test("the registry owns its copy: later mutation of the definition has no effect", () => {
    const r = new ToolRegistry();
    const def = tool("own", { parameters: { type: "object", required: ["a"] } });
    r.register(def);
    (def.parameters.required as string[]).push("b");
    def.name = "renamed";
    def.handler = () => "hijacked";
    const t = r.get("own")!;
    expect(t.parameters).toEqual({ type: "object", required: ["a"] });
    expect(t.validate({ a: 1 })).toEqual({ ok: true });
    expect(t.handler({}, undefined as never)).toBeNull();
    expect(Object.isFrozen(t)).toBe(true);
    expect(Object.isFrozen(t.parameters)).toBe(true);
  });

  test("many tools: lookup is a Map hit", () => {
    const r = new ToolRegistry();
    for (let i = 0; i < 2000; i++) r.register(tool(`t${i}`));
    expect(r.size).toBe(2000);
    expect(r.get("t1999")?.name).toBe("t1999");
    expect(r.get("t2000")).toBeUndefined();
  });
});
