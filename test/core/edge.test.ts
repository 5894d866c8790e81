import { describe, expect, test } from "bun:test";
import { JsonStreamValidator, parseStrict, validateStrict, type JsonError } from "../../src/core/index.ts";

const enc = new TextEncoder();
const MiB = 1024 * 1024;

function err(text: string | Uint8Array, limits?: Parameters<typeof validateStrict>[1]): JsonError | null {
  return validateStrict(text, limits);
}

describe("depth limit", () => {
  const arrays = (n: number) => "[".repeat(n) + "]".repeat(n);
  const objects = (n: number) => '{"a":'.repeat(n - 1) + "{}" + "}".repeat(n - 1);
  const mixed = (n: number) => {
    let open = "";
    let close = "";
    for (let i = 0; i < n; i++) {
      if (i % 2 === 0) {
        open += "[";
        close = "]" + close;
      } else {
        open += '{"k":';
        close = "}" + close;
      }
    }
    return open + "0" + close;
  };
  for (const [name, make] of [
    ["arrays", arrays],
    ["objects", objects],
    ["mixed", mixed],
  ] as const) {
    test(`${name}: 64 levels accepted, 65 rejected`, () => {
      expect(err(make(64))).toBeNull();
      const e = err(make(65));
      expect(e?.code).toBe("JSON_DEPTH");
      expect(e?.message).toBe("nesting deeper than 64 levels");
      // parseStrict gives the same value as JSON.parse at the limit
      const r = parseStrict(make(64));
      expect(r).toEqual({ ok: true, value: JSON.parse(make(64)) });
    });
  }
  test("offset points at the bracket that opens level 65", () => {
    expect(err(arrays(65))).toEqual({ code: "JSON_DEPTH", message: "nesting deeper than 64 levels", offset: 64, line: 1, column: 65 });
  });
  test("custom maxDepth", () => {
    expect(err("[[1]]", { maxDepth: 2 })).toBeNull();
    expect(err("[[[1]]]", { maxDepth: 2 })?.message).toBe("nesting deeper than 2 levels");
    expect(err("1", { maxDepth: 0 })).toBeNull();
    expect(err("[]", { maxDepth: 0 })?.code).toBe("JSON_DEPTH");
    expect(err(arrays(4096), { maxDepth: 4096 })).toBeNull();
    expect(err(arrays(4097), { maxDepth: 4096 })?.code).toBe("JSON_DEPTH");
  });
  test("deep nesting far beyond the limit does not overflow anything", () => {
    expect(err("[".repeat(500000), { maxDepth: 4096 })?.code).toBe("JSON_DEPTH");
  });
});

describe("size limit", () => {
  // a JSON string of exactly n bytes
  const ofSize = (n: number) => '"' + "a".repeat(n - 2) + '"';
  test("exactly 1 MiB is accepted, 1 MiB + 1 rejected (string input)", () => {
    expect(err(ofSize(MiB))).toBeNull();
    expect(err(ofSize(MiB + 1))).toEqual({
      code: "JSON_SIZE",
      message: "input exceeds 1048576 bytes",
      offset: MiB,
      line: 1,
      column: MiB + 1,
    });
  });
  test("exactly 1 MiB is accepted, 1 MiB + 1 rejected (Uint8Array input)", () => {
    expect(err(enc.encode(ofSize(MiB)))).toBeNull();
    expect(err(enc.encode(ofSize(MiB + 1)))?.code).toBe("JSON_SIZE");
  });
  test("multi-byte text: the limit counts UTF-8 bytes, not UTF-16 units", () => {
    // 'é' is 2 bytes: (MiB - 2) / 2 of them fill the limit exactly
    const fits = '"' + "é".repeat((MiB - 2) / 2) + '"';
    expect(enc.encode(fits).length).toBe(MiB);
    expect(err(fits)).toBeNull();
    const over = '"' + "é".repeat((MiB - 2) / 2) + 'a"';
    expect(err(over)?.code).toBe("JSON_SIZE");
    expect(err("[" + "😀".repeat(MiB / 4) + "]")?.code).toBe("JSON_SIZE");
  });
  test("custom maxBytes", () => {
    expect(err("[1,2]", { maxBytes: 5 })).toBeNull();
    expect(err("[1,2] ", { maxBytes: 5 })?.message).toBe("input exceeds 5 bytes");
    expect(err(enc.encode("[1,2] "), { maxBytes: 5 })?.code).toBe("JSON_SIZE");
  });
  test("stream: bytes past maxBytes are rejected", () => {
    const v = new JsonStreamValidator({ maxBytes: 10 });
    expect(v.push("[1,2,3,").state).toBe("need_more");
    const st = v.push("4,5]");
    expect(st.state).toBe("error");
    if (st.state === "error") expect(st.error.code).toBe("JSON_SIZE");
    v.dispose();
  });
});

describe("duplicate keys", () => {
  const dup = (text: string) => err(text)?.code;
  test("found after unescaping", () => {
    expect(err('{"a":1,"\\u0061":2}')).toEqual({ code: "JSON_DUPLICATE_KEY", message: 'duplicate key "a"', offset: 7, line: 1, column: 8 });
    expect(dup('{"a/b":1,"a\\/b":2}')).toBe("JSON_DUPLICATE_KEY");
    expect(dup('{"\\ud83d\\ude00":1,"😀":2}')).toBe("JSON_DUPLICATE_KEY");
    expect(dup('{"😀":1,"\\uD83D\\uDE00":2}')).toBe("JSON_DUPLICATE_KEY");
    expect(dup('{"é":1,"\\u00e9":2}')).toBe("JSON_DUPLICATE_KEY");
    expect(dup('{"\\n":1,"\\u000a":2}')).toBe("JSON_DUPLICATE_KEY");
    expect(dup('{"\\"":1,"\\u0022":2}')).toBe("JSON_DUPLICATE_KEY");
  });
  test("distinct names are not confused", () => {
    expect(err('{"a":1,"A":2,"a ":3,"\\u0062":4,"ab":5,"":6}')).toBeNull();
    expect(err('{"a":{"a":{"a":1}},"b":{"a":2}}')).toBeNull();
    expect(err('[{"a":1},{"a":1}]')).toBeNull();
  });
  test("nested objects keep separate key sets", () => {
    expect(dup('{"a":{"b":1,"c":2},"b":3,"a":4}')).toBe("JSON_DUPLICATE_KEY");
    expect(dup('{"x":{"b":1,"b":2}}')).toBe("JSON_DUPLICATE_KEY");
  });
  test("message shows the unescaped key, escaped for display and truncated", () => {
    expect(err('{"a\\nb":1,"a\\nb":2}')?.message).toBe('duplicate key "a\\u000ab"');
    const long = "k".repeat(60);
    expect(err(`{"${long}":1,"${long}":2}`)?.message).toBe(`duplicate key "${"k".repeat(40)}..."`);
  });
  test("100k distinct keys stay linear; a duplicate at the end is found", () => {
    const parts: string[] = [];
    for (let i = 0; i < 100000; i++) parts.push(`"key${i}":${i}`);
    const ok = "{" + parts.join(",") + "}";
    expect(err(ok, { maxBytes: 8 * MiB })).toBeNull();
    const bad = "{" + parts.join(",") + ',"key77777":0}';
    const e = err(bad, { maxBytes: 8 * MiB });
    expect(e?.code).toBe("JSON_DUPLICATE_KEY");
    expect(e?.message).toBe('duplicate key "key77777"');
    expect(e?.offset).toBe(bad.length - 13);
    // escaped duplicate at the end too
    expect(err("{" + parts.join(",") + ',"key\\u0037":0}', { maxBytes: 8 * MiB })?.code).toBe("JSON_DUPLICATE_KEY");
    // no timing here (machines are noisy): a quadratic key scan would make this
    // test take minutes, and scripts/bench covers speed
  });
  test("adversarial: many hashed objects open at once", () => {
    const obj = (depth: number): string => {
      const keys: string[] = [];
      for (let i = 0; i < 40; i++) keys.push(`"k${i}":${i}`);
      return "{" + keys.join(",") + (depth > 0 ? `,"child":${obj(depth - 1)}` : "") + ',"z":1}';
    };
    expect(err(obj(30))).toBeNull();
    expect(err(obj(30).replace(/"z":1}$/, '"k3":1}'))?.code).toBe("JSON_DUPLICATE_KEY");
    const inner = obj(30).replace('"z":1}', '"k39":1}'); // the innermost object
    expect(err(inner)?.code).toBe("JSON_DUPLICATE_KEY");
  });
});

describe("hashed key sets across many objects", () => {
  const big = (prefix: string, n: number) => {
    const keys: string[] = [];
    for (let i = 0; i < n; i++) keys.push(`"${prefix}${i}":${i}`);
    return "{" + keys.join(",") + "}";
  };
  test("sibling objects with the same 60 names are independent", () => {
    const doc = "[" + Array.from({ length: 300 }, () => big("k", 60)).join(",") + "]";
    expect(err(doc, { maxBytes: 8 * MiB })).toBeNull();
    // a duplicate in the last sibling is still found
    const bad = doc.slice(0, -2) + ',"k59":1}]';
    expect(err(bad, { maxBytes: 8 * MiB })?.message).toBe('duplicate key "k59"');
  });
  test("nested hashed objects keep their own names while children come and go", () => {
    // outer object with 100 names, then a child with 100 of the same names,
    // then more outer names, one of which repeats an earlier outer name
    const inner = big("n", 100);
    const outer = (tail: string) => "{" + Array.from({ length: 100 }, (_, i) => `"n${i}":0`).join(",") + `,"child":${inner}` + tail + "}";
    expect(err(outer(',"x":1,"y":2'))).toBeNull();
    expect(err(outer(',"x":1,"n42":2'))?.message).toBe('duplicate key "n42"');
    expect(err(outer(',"x":1,"child":2'))?.message).toBe('duplicate key "child"');
  });
  test("names that differ only after the first 8 bytes, or only in length", () => {
    const names = ["abcdefgh", "abcdefghi", "abcdefghj", "abcdefgh\\u0000", "abcdefg", "", "\\u0000", "a\\u0000"];
    const many = names.concat(Array.from({ length: 60 }, (_, i) => `pad${i}`));
    const doc = "{" + many.map((n, i) => `"${n}":${i}`).join(",") + "}";
    expect(err(doc)).toBeNull();
    expect(err(doc.slice(0, -1) + ',"abcdefgh\\u0000":1}')?.code).toBe("JSON_DUPLICATE_KEY");
    expect(err(doc.slice(0, -1) + ',"":1}')?.code).toBe("JSON_DUPLICATE_KEY");
    expect(err(doc.slice(0, -1) + ',"abcdefghk":1}')).toBeNull();
  });
});

describe("other rules", () => {
  test("__proto__ is refused unless allowed", () => {
    expect(err('{"__proto__":{"x":1}}')).toEqual({
      code: "JSON_FORBIDDEN_KEY",
      message: 'forbidden key "__proto__"',
      offset: 1,
      line: 1,
      column: 2,
    });
    expect(err('{"\\u005f_proto__":1}')?.code).toBe("JSON_FORBIDDEN_KEY");
    expect(err('{"__proto_":1,"__proto__x":2,"constructor":3}')).toBeNull();
    expect(err('"__proto__"')).toBeNull();
    const r = parseStrict<Record<string, unknown>>('{"__proto__":{"polluted":1}}', { allowProtoKey: true });
    expect(r.ok).toBe(true);
    if (r.ok) {
      expect(Object.getPrototypeOf(r.value)).toBe(Object.prototype);
      expect(Object.prototype.hasOwnProperty.call(r.value, "__proto__")).toBe(true);
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    }
  });
  test("BOM is rejected", () => {
    expect(err("\ufeff{}")).toEqual({ code: "JSON_ENCODING", message: "byte order mark is not allowed", offset: 0, line: 1, column: 1 });
    expect(err(new Uint8Array([0xef, 0xbb, 0xbf, 0x31]))?.code).toBe("JSON_ENCODING");
    expect(err(new Uint8Array([0xef, 0xbb]))?.message).toBe("unexpected byte 0xef");
    expect(err('["\ufeff"]')).toBeNull();
  });
  test("number range", () => {
    expect(err("1.7976931348623157e308")).toBeNull();
    expect(err("[1e308,-1e308,1e-400,0e999999,0.0000001e314]")).toBeNull();
    for (const t of ["1.8e308", "1e400", "-1e309", "[1e99999999999999]", "1" + "0".repeat(309)]) {
      expect(err(t)).toEqual({
        code: "JSON_NUMBER_RANGE",
        message: "number out of range for a double",
        offset: t.startsWith("[") ? 1 : 0,
        line: 1,
        column: t.startsWith("[") ? 2 : 1,
      });
    }
  });
  test("lone surrogates from escapes and from JS text", () => {
    expect(err('"\\ud800"')).toEqual({ code: "JSON_ENCODING", message: "lone surrogate in \\u escape", offset: 1, line: 1, column: 2 });
    expect(err('"ab\\udc00"')?.offset).toBe(3);
    expect(err('"\\ud800\\u0041"')?.offset).toBe(1);
    expect(err('"\\ud800\\ud800"')?.code).toBe("JSON_ENCODING");
    expect(err('{"\\ud800":1}')?.code).toBe("JSON_ENCODING");
    expect(err('"\\ud83d\\ude00"')).toBeNull();
    // a JS string with an unpaired surrogate has no UTF-8 form
    expect(err('["ab\ud800"]')).toEqual({
      code: "JSON_ENCODING",
      message: "unpaired surrogate in input text",
      offset: 4,
      line: 1,
      column: 5,
    });
    expect(err('[x"\ud800"]')?.code).toBe("JSON_PARSE");
  });
  test("invalid UTF-8", () => {
    const bad = [
      [0x22, 0xc0, 0x80, 0x22], // overlong
      [0x22, 0xe0, 0x80, 0x80, 0x22], // overlong 3
      [0x22, 0xed, 0xa0, 0x80, 0x22], // surrogate
      [0x22, 0xf4, 0x90, 0x80, 0x80, 0x22], // > U+10FFFF
      [0x22, 0xe2, 0x82, 0x22], // truncated
      [0x22, 0x80, 0x22], // stray continuation
      [0x22, 0xf8, 0x88, 0x80, 0x80, 0x80, 0x22],
    ];
    for (const b of bad)
      expect(err(new Uint8Array(b))).toEqual({ code: "JSON_ENCODING", message: "invalid utf-8 sequence", offset: 1, line: 1, column: 2 });
    expect(err(new Uint8Array([0x22, 0xf0, 0x9f, 0x98, 0x80, 0x22]))).toBeNull();
    expect(err(new Uint8Array([0x5b, 0xff, 0x5d]))?.code).toBe("JSON_ENCODING");
  });
  test("exact error positions", () => {
    const cases: [string, Partial<JsonError>][] = [
      ["", { code: "JSON_PARSE", message: "unexpected end of data", offset: 0, line: 1, column: 1 }],
      ["  ", { message: "unexpected end of data", offset: 2, line: 1, column: 3 }],
      ["[1,2", { message: "unexpected end of data", offset: 4, line: 1, column: 5 }],
      ['{"a":1,}', { message: "unexpected character '}'", offset: 7, line: 1, column: 8 }],
      ["[1,\n 2,\n x]", { message: "unexpected character 'x'", offset: 9, line: 3, column: 2 }],
      ['{"é😀":\n\n  tru}', { message: "unexpected character '}'", offset: 17, line: 3, column: 6 }],
      ['["é", 01]', { message: "invalid number", offset: 8, line: 1, column: 8 }],
      ["[1.]", { message: "invalid number", offset: 3 }],
      ["[.1]", { message: "unexpected character '.'", offset: 1 }],
      ["[-]", { message: "invalid number", offset: 2 }],
      ["[1e]", { message: "invalid number", offset: 3 }],
      ["[1e+]", { message: "invalid number", offset: 4 }],
      ["-", { message: "unexpected end of data", offset: 1 }],
      ['"a\tb"', { message: "control character in string", offset: 2 }],
      ['"\\x"', { message: "invalid escape", offset: 2 }],
      ['"\\u12g4"', { message: "invalid escape", offset: 5 }],
      ["[1] [2]", { message: "unexpected content after value", offset: 4 }],
      ["nul", { message: "unexpected end of data", offset: 3 }],
      ["nulx", { message: "unexpected character 'x'", offset: 3 }],
      ["[true false]", { message: "unexpected character 'f'", offset: 6 }],
      ["[\x01]", { message: "unexpected byte 0x01", offset: 1 }],
      ['{"a" 1}', { message: "unexpected character '1'", offset: 5 }],
      ["{1:2}", { message: "unexpected character '1'", offset: 1 }],
    ];
    for (const [text, want] of cases) {
      const e = err(text);
      expect({ text, ...e }).toMatchObject({ text, ...want });
      // identical through bytes
      expect(err(enc.encode(text))).toEqual(e);
    }
  });
  test("limits are checked", () => {
    expect(() => validateStrict("1", { maxBytes: 0 })).toThrow(RangeError);
    expect(() => validateStrict("1", { maxBytes: 1.5 })).toThrow(/maxBytes/);
    expect(() => validateStrict("1", { maxBytes: 2 ** 40 })).toThrow(/maxBytes/);
    expect(() => validateStrict("1", { maxDepth: -1 })).toThrow(/maxDepth/);
    expect(() => validateStrict("1", { maxDepth: 5000 })).toThrow(/maxDepth/);
    expect(() => validateStrict("1", { maxDepth: Number.NaN })).toThrow(/maxDepth/);
    expect(() => new JsonStreamValidator({ maxDepth: 1.2 })).toThrow(/maxDepth/);
    expect(() => validateStrict("1", { allowProtoKey: 1 as unknown as boolean })).toThrow(/allowProtoKey/);
  });
  test("parseStrict never throws on garbage", () => {
    for (let i = 0; i < 2000; i++) {
      const b = new Uint8Array(1 + (i % 17));
      for (let j = 0; j < b.length; j++) b[j] = (i * 31 + j * 97 + (i >> 3)) & 0xff;
      const r = parseStrict(b);
      if (!r.ok) expect(typeof r.error.message).toBe("string");
    }
  });
});
