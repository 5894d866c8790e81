import { describe, expect, test } from "bun:test";
import { SchemaCompileError, SchemaCompiler } from "../../src/tools/schema.ts";

const D07 = "http://json-schema.org/draft-07/schema#";
const D2020 = "https://json-schema.org/draft/2020-12/schema";

describe("SchemaCompiler", () => {
  const c = new SchemaCompiler();

  test("prefixItems applies under 2020-12 (default and explicit)", () => {
    const body = { type: "object", properties: { t: { type: "array", prefixItems: [{ type: "string" }, { type: "integer" }] } } };
    for (const schema of [body, { $schema: D2020, ...body }]) {
      const v = c.compile(schema);
      expect(v({ t: ["a", 1] }).ok).toBe(true);
      const bad = v({ t: [1, "a"] });
      expect(bad.ok).toBe(false);
      if (!bad.ok) expect(bad.errors.map((e) => e.path).sort()).toEqual(["/t/0", "/t/1"]);
    }
  });

  test("the https spelling of draft-07 is draft-07 (dependencies apply, prefixItems does not)", () => {
    for (const id of ["https://json-schema.org/draft-07/schema#", "https://json-schema.org/draft-07/schema"]) {
      const schema = {
        $schema: id,
        type: "object",
        dependencies: { card: ["billing"] },
        properties: { t: { type: "array", prefixItems: [{ type: "string" }] } },
      };
      const v = c.compile(schema);
      expect(v({ card: "x" }).ok).toBe(false);
      expect(v({ card: "x", billing: "y", t: [1] }).ok).toBe(true);
      expect(schema.$schema).toBe(id); // the caller's object is left as it was
    }
    // still refused: other drafts and look-alikes
    expect(() => c.compile({ $schema: "https://json-schema.org/draft-04/schema#" })).toThrow(SchemaCompileError);
    expect(() => c.compile({ $schema: "https://example.com/draft-07/schema#" })).toThrow(SchemaCompileError);
  });

  test("prefixItems is an unknown (ignored) keyword under draft-07", () => {
    const v = c.compile({ $schema: D07, type: "object", properties: { t: { type: "array", prefixItems: [{ type: "string" }] } } });
    expect(v({ t: [1] }).ok).toBe(true);
  });

  test("dependencies and array-form items apply under draft-07", () => {
    const v07 = c.compile({ $schema: D07, type: "object", dependencies: { card: ["billing"] } });
    const r = v07({ card: "x" });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.errors[0]).toMatchObject({ path: "", keyword: "dependencies" });
    expect(v07({ card: "x", billing: "y" }).ok).toBe(true);
    const tuple = { type: "object", properties: { t: { type: "array", items: [{ type: "string" }] } } };
    const t07 = c.compile({ $schema: D07, ...tuple })({ t: [1] });
    expect(t07.ok).toBe(false);
    if (!t07.ok) expect(t07.errors).toEqual([{ path: "/t/0", keyword: "type", message: "must be string" }]);
    // Under 2020-12 array-form `items` is invalid, and the compile error says so once.
    let msg = "";
    try {
      c.compile(tuple);
    } catch (err) {
      expect(err).toBeInstanceOf(SchemaCompileError);
      msg = (err as Error).message;
    }
    expect(msg).toContain("items must be object,boolean");
    expect(msg.split("items must be").length).toBe(2);
    // 2020-12's replacement for the property form of `dependencies`:
    expect(c.compile({ type: "object", dependentRequired: { card: ["billing"] } })({ card: "x" }).ok).toBe(false);
  });

  test("inherited names never count as present", () => {
    for (const name of ["toString", "constructor", "__proto__", "hasOwnProperty", "valueOf"]) {
      const v = c.compile({ type: "object", required: [name] });
      const r = v({});
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.errors[0]).toEqual({ path: "/" + name, keyword: "required", message: `missing required property "${name}"` });
    }
    // An own __proto__ member (as JSON.parse makes it) does count.
    expect(c.compile({ type: "object", required: ["__proto__"] })(JSON.parse('{"__proto__":1}')).ok).toBe(true);
    expect(c.compile({ type: "object", required: ["toString"] })({ toString: "x" }).ok).toBe(true);
  });

  test("inherited names are not checked against property schemas", () => {
    const v = c.compile({ type: "object", properties: { toString: { type: "string" } } });
    expect(v({}).ok).toBe(true);
  });

  test("errors are JSON Pointers, escaped per RFC 6901", () => {
    const v = c.compile({
      type: "object",
      properties: { "a/b": { type: "object", properties: { "~x": { type: "integer" } } } },
      additionalProperties: false,
    });
    const r = v({ "a/b": { "~x": "no" }, "c~/d": 1 });
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.errors).toContainEqual({ path: "/a~1b/~0x", keyword: "type", message: "must be integer" });
      expect(r.errors).toContainEqual({ path: "/c~0~1d", keyword: "additionalProperties", message: "unexpected property" });
    }
  });

  test("root errors have path ''", () => {
    const r = c.compile({ type: "object", minProperties: 2 })({ a: 1 });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.errors[0].path).toBe("");
  });

  test("error count is bounded with a truncated flag (default 8)", () => {
    const props: Record<string, unknown> = {};
    const args: Record<string, unknown> = {};
    for (let i = 0; i < 20; i++) {
      props[`p${i}`] = { type: "integer" };
      args[`p${i}`] = "x";
    }
    const r = c.compile({ type: "object", properties: props })(args);
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.errors).toHaveLength(8);
      expect(r.truncated).toBe(true);
    }
    const few = c.compile({ type: "object", properties: props })({ p0: "x", p1: "y" });
    if (!few.ok) {
      expect(few.errors).toHaveLength(2);
      expect(few.truncated).toBe(false);
    }
    const small = new SchemaCompiler({ maxErrors: 1 }).compile({ type: "object", properties: props })({ p0: "x", p1: "y" });
    if (!small.ok) {
      expect(small.errors).toHaveLength(1);
      expect(small.truncated).toBe(true);
    }
    expect(() => new SchemaCompiler({ maxErrors: 0 })).toThrow(RangeError);
  });

  test("messages never echo argument values", () => {
    const secret = "sk-live-SECRET-9f8e7d6c5b4a";
    const schema = {
      type: "object",
      properties: {
        e: { enum: ["a", "b"] },
        k: { const: "fixed" },
        p: { type: "string", pattern: "^[0-9]+$" },
        l: { type: "string", maxLength: 3 },
        f: { type: "string", format: "email" },
        t: { type: "integer" },
        n: { not: { type: "string" } },
        o: { oneOf: [{ type: "integer" }, { type: "boolean" }] },
        u: { type: "array", uniqueItems: true },
      },
    };
    for (const s of [schema, { $schema: D07, ...schema }]) {
      const r = new SchemaCompiler({ maxErrors: 50 }).compile(s)({
        e: secret,
        k: secret,
        p: secret,
        l: secret,
        f: secret,
        t: secret,
        n: secret,
        o: secret,
        u: [secret, secret],
      });
      expect(r.ok).toBe(false);
      if (!r.ok) {
        expect(r.errors.length).toBeGreaterThanOrEqual(8);
        expect(JSON.stringify(r)).not.toContain("SECRET");
      }
    }
  });

  test("strictProperties rejects undeclared top-level members", () => {
    const v = c.compile({ type: "object", properties: { a: { type: "string" } } }, true);
    expect(v({ a: "x" }).ok).toBe(true);
    const r = v({ a: "x", extra: 1 });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.errors).toEqual([{ path: "/extra", keyword: "strict", message: "property not declared in the tool's parameters" }]);
  });

  test("invalid schemas throw SchemaCompileError", () => {
    expect(() => c.compile({ type: 5 })).toThrow(SchemaCompileError);
    expect(() => c.compile({ $ref: "#/nope" })).toThrow(SchemaCompileError);
    expect(() => c.compile({ $schema: "https://example.com/my-dialect" })).toThrow(/unsupported \$schema/);
    expect(() => c.compile(null as unknown as Record<string, unknown>)).toThrow(SchemaCompileError);
  });

  test("same $id in two compilers does not collide; in one compiler it is refused", () => {
    const s = { $id: "https://example.com/args", type: "object" };
    new SchemaCompiler().compile(s);
    new SchemaCompiler().compile(s);
    const one = new SchemaCompiler();
    one.compile(s);
    expect(() => one.compile({ ...s, required: ["a"] })).toThrow(SchemaCompileError);
  });
});
