/**
 * The built-ins' hand-written validators must agree with ajv on their schemas:
 * same verdict, same error entries, same order, same truncation.
 */
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { SchemaCompiler } from "../../src/tools/schema.ts";
import { READ_FILE_PARAMETERS } from "../../src/tools/builtin/read_file.ts";
import { ECHO_PARAMETERS } from "../../src/tools/builtin/echo.ts";

const anyValue = fc.oneof(
  fc.string(),
  fc.integer({ min: -5, max: 5 }),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(0, 1, 1.5, -1, 2 ** 53, null, true, false, "10", "", [], {}),
);
const key = fc.constantFrom("path", "max_bytes", "x", "toString", "__proto__", "a/b", "~", "constructor", "0");
const argsArb = fc.dictionary(key, anyValue, { maxKeys: 6 }).map((d) => JSON.parse(JSON.stringify(d)) as Record<string, unknown>);

describe("hand-written built-in validators agree with ajv", () => {
  for (const maxErrors of [1, 2, 8]) {
    test(`read_file (maxErrors ${maxErrors})`, () => {
      const compiler = new SchemaCompiler({ maxErrors });
      const fast = compiler.compile(READ_FILE_PARAMETERS as unknown as Record<string, unknown>);
      const ajv = compiler.compile(structuredClone(READ_FILE_PARAMETERS) as unknown as Record<string, unknown>);
      expect(fast).not.toBe(ajv);
      fc.assert(fc.property(argsArb, (args) => {
        expect(fast(args)).toEqual(ajv(args));
      }), { numRuns: 3000 });
      // Own __proto__ member, as JSON.parse makes it.
      const proto = JSON.parse('{"__proto__":1,"path":"x"}');
      expect(fast(proto)).toEqual(ajv(proto));
    });
  }

  test("echo", () => {
    const compiler = new SchemaCompiler();
    const fast = compiler.compile(ECHO_PARAMETERS as Record<string, unknown>);
    const ajv = compiler.compile({ type: "object" });
    fc.assert(fc.property(argsArb, (args) => {
      expect(fast(args)).toEqual(ajv(args));
    }), { numRuns: 500 });
  });
});
