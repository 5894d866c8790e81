import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { parseStrict, validateStrict } from "../../src/core/index.ts";
import { referenceStrict } from "../support/reference-strict.ts";

const enc = new TextEncoder();

/** Escape every non-ASCII UTF-16 unit as \uXXXX (astral chars become surrogate-pair escapes). */
function asciiOnly(text: string): string {
  return text.replace(/[\u0080-\uffff]/g, (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));
}

/** Different but equivalent spellings of the same JSON text. */
function variants(v: unknown): string[] {
  const compact = JSON.stringify(v);
  return [
    compact,
    JSON.stringify(v, null, 2),
    JSON.stringify(v, null, "\t"),
    asciiOnly(compact),
    asciiOnly(compact).replace(/\\u([0-9a-f]{4})/g, (_m, h: string) => "\\u" + h.toUpperCase()),
    compact.replace(/\//g, "\\/"),
    "\r\n " + compact + " \n",
  ];
}

function depthOf(v: unknown): number {
  let max = 0;
  const todo: [unknown, number][] = [[v, 0]];
  while (todo.length) {
    const [x, d] = todo.pop()!;
    if (x !== null && typeof x === "object") {
      const nd = d + 1;
      if (nd > max) max = nd;
      for (const c of Object.values(x as object)) todo.push([c, nd]);
    }
  }
  return max;
}

function hasProtoKey(v: unknown): boolean {
  const todo: unknown[] = [v];
  while (todo.length) {
    const x = todo.pop();
    if (x !== null && typeof x === "object") {
      if (!Array.isArray(x) && Object.prototype.hasOwnProperty.call(x, "__proto__")) return true;
      for (const c of Object.values(x as object)) todo.push(c);
    }
  }
  return false;
}

const value = fc.oneof(
  fc.jsonValue({ maxDepth: 4 }),
  fc.jsonValue({ maxDepth: 3, stringUnit: "binary" }),
  fc.jsonValue({ maxDepth: 3, stringUnit: "grapheme" }),
);

/** A value wrapped in up to `max` extra arrays/objects. */
const nested = fc
  .tuple(fc.jsonValue({ maxDepth: 2 }), fc.array(fc.oneof(fc.constant("a"), fc.string({ maxLength: 3 })), { maxLength: 66 }))
  .map(([inner, wraps]) => {
    let v: unknown = inner;
    for (const w of wraps) v = w === "a" ? [v] : { [w]: v };
    return v;
  });

describe("differential: valid values", () => {
  test("parseStrict(JSON.stringify(v)) deep-equals JSON.parse for every spelling", () => {
    fc.assert(
      fc.property(value, (v) => {
        for (const text of variants(v)) {
          const r = parseStrict(text, { allowProtoKey: true });
          expect(r).toEqual({ ok: true, value: JSON.parse(text) });
          const rb = parseStrict(enc.encode(text), { allowProtoKey: true });
          expect(rb).toEqual({ ok: true, value: JSON.parse(text) });
          // the default limits only add the __proto__ rule here
          const e = validateStrict(text);
          if (hasProtoKey(v)) expect(e?.code).toBe("JSON_FORBIDDEN_KEY");
          else expect(e).toBeNull();
        }
      }),
      { numRuns: 400 },
    );
  });

  test("nesting up to the limit is accepted, beyond it is JSON_DEPTH", () => {
    fc.assert(
      fc.property(nested, (v) => {
        const text = JSON.stringify(v);
        const r = parseStrict(text, { allowProtoKey: true });
        if (depthOf(v) <= 64) expect(r).toEqual({ ok: true, value: JSON.parse(text) });
        else expect(r.ok ? null : r.error.code).toBe("JSON_DEPTH");
      }),
      { numRuns: 300 },
    );
  });
});

// ------------------------------------------------------------- mutations

const interesting = [
  0x22, 0x5c, 0x7b, 0x7d, 0x5b, 0x5d, 0x2c, 0x3a, 0x75, 0x30, 0x31, 0x2d, 0x2e, 0x65, 0x20, 0x0a, 0x00, 0x1f, 0x7f, 0x80, 0xbf, 0xc0, 0xc3,
  0xe0, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff,
];

type Mutation = { kind: "flip" | "set" | "insert" | "delete"; at: number; byte: number; bit: number };

const mutation: fc.Arbitrary<Mutation> = fc.record({
  kind: fc.constantFrom("flip", "set", "insert", "delete"),
  at: fc.nat(),
  byte: fc.oneof(fc.constantFrom(...interesting), fc.integer({ min: 0, max: 255 })),
  bit: fc.integer({ min: 0, max: 7 }),
});

function mutate(src: Uint8Array, muts: Mutation[]): Uint8Array {
  let b = Array.from(src);
  for (const m of muts) {
    const i = b.length === 0 ? 0 : m.at % (b.length + (m.kind === "insert" ? 1 : 0));
    if (m.kind === "flip" && b.length) b[i] ^= 1 << m.bit;
    else if (m.kind === "set" && b.length) b[i] = m.byte;
    else if (m.kind === "insert") b.splice(i, 0, m.byte);
    else if (m.kind === "delete" && b.length) b.splice(i, 1);
  }
  return new Uint8Array(b);
}

const doc = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
  fc.jsonValue({ maxDepth: 3, stringUnit: "binary" }).map((v) => JSON.stringify(v, null, 1)),
  fc.jsonValue({ maxDepth: 2 }).map((v) => asciiOnly(JSON.stringify(v))),
  fc.constantFrom(
    '{"a":1,"b":[true,false,null],"c":"\\ud83d\\ude00 é"}',
    '[1e308, -0.5E-3, 0, "\\u0061\\/"]',
    '{"k":{"k":{"k":[]}},"\\u006b2":"x"}',
    '"\u00e9\u4e2d\ud83d\ude00"',
  ),
);

describe("differential: mutated bytes", () => {
  test("never throws and accepts exactly what the reference accepts", () => {
    fc.assert(
      fc.property(doc, fc.array(mutation, { minLength: 1, maxLength: 3 }), (text, muts) => {
        const bytes = mutate(enc.encode(text), muts);
        const ref = referenceStrict(bytes);
        let got: ReturnType<typeof parseStrict>;
        try {
          got = parseStrict(bytes);
        } catch (e) {
          throw new Error(`parseStrict threw on ${JSON.stringify(Array.from(bytes))}: ${e}`);
        }
        if (got.ok !== ref.ok) {
          throw new Error(
            `verdict differs for bytes ${JSON.stringify(Array.from(bytes))}: core ${JSON.stringify(got.ok ? "ok" : got.error)} reference ${JSON.stringify(ref)}`,
          );
        }
        // same verdict through a JS string when the bytes decode cleanly
        let s: string | null = null;
        try {
          s = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
        } catch {
          s = null;
        }
        if (s !== null) expect(validateStrict(s) === null).toBe(ref.ok);
      }),
      { numRuns: 3000 },
    );
  });
});

describe("differential: UTF-8 inside strings", () => {
  test("random bytes in a string are accepted exactly when they are valid UTF-8", () => {
    const byte = fc.oneof(
      fc.integer({ min: 0x20, max: 0x7e }).filter((b) => b !== 0x22 && b !== 0x5c),
      fc.integer({ min: 0x80, max: 0xff }),
      fc.constantFrom(0xc2, 0xdf, 0xe0, 0xed, 0xef, 0xf0, 0xf4, 0x80, 0xbf, 0x9f, 0xa0, 0x8f, 0x90),
    );
    const fatal = new TextDecoder("utf-8", { fatal: true });
    fc.assert(
      fc.property(fc.array(byte, { maxLength: 80 }), fc.nat(40), (body, pad) => {
        // vary the alignment of the body relative to 16-byte blocks
        const bytes = new Uint8Array([0x5b, ...new Array(pad).fill(0x20), 0x22, ...body, 0x22, 0x5d]);
        let valid = true;
        try {
          fatal.decode(new Uint8Array(body));
        } catch {
          valid = false;
        }
        const e = validateStrict(bytes);
        expect(e === null).toBe(valid);
        if (e) expect(e.code).toBe("JSON_ENCODING");
      }),
      { numRuns: 5000 },
    );
  });
});
