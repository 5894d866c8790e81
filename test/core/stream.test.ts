import { describe, expect, test } from "bun:test";
import { JsonStreamValidator, validateStrict, type JsonError, type StreamStatus } from "../../src/core/index.ts";

const enc = new TextEncoder();

const SAMPLES: string[] = [
  '{"a":1,"b":[true,false,null],"c":"x"}',
  "  [1, -2.5e+3, 0, 0.125, 1E5, -0]  ",
  '"\\u00e9\\ud83d\\ude00\\n\\"\\\\\\/"',
  '"é中😀 plain text ☃"',
  '{"é":{"😀":["\\u0041", "a\\tb"]}, "k": 12345678901234567890}',
  "true",
  " null ",
  "123",
  "-0.5e-7",
  "1e400",
  "1.7976931348623157e308",
  '{"a":1,"\\u0061":2}',
  '{"a/b":1,"a\\/b":2}',
  '{"😀":1,"\\ud83d\\ude00":2}',
  '{"__proto__":1}',
  '"\\ud800"',
  '"\\ud800\\u0041"',
  '"\\udc00"',
  '"\\u12x4"',
  '"a\nb"',
  "[1,2",
  "[1,]",
  "[01]",
  "[1.]",
  "-",
  "tru",
  "trux",
  "[nul]",
  "{} x",
  "[[[[[]]]]]",
  "",
  "   ",
  "\ufeff[]",
  '{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k5":0}',
];

const BYTE_SAMPLES: Uint8Array[] = [
  new Uint8Array([0x22, 0xe2, 0x82, 0xac, 0x22]),
  new Uint8Array([0x22, 0xe2, 0x82, 0x22]),
  new Uint8Array([0x22, 0xf0, 0x9f, 0x98, 0x80, 0x22]),
  new Uint8Array([0x22, 0xf4, 0x90, 0x80, 0x80, 0x22]),
  new Uint8Array([0x22, 0xed, 0xa0, 0x80, 0x22]),
  new Uint8Array([0xef, 0xbb, 0xbf, 0x7b, 0x7d]),
  new Uint8Array([0xef, 0xbb, 0x7b, 0x7d]),
  new Uint8Array([0x5b, 0xc3, 0xa9, 0x5d]),
];

function verdict(st: StreamStatus): { ok: boolean; error: JsonError | null } {
  if (st.state === "error") return { ok: false, error: st.error };
  return { ok: st.state === "complete", error: null };
}

/** Feed `chunks`, then finish; return the final verdict. */
function streamed(chunks: (string | Uint8Array)[], limits?: { maxDepth?: number }): { ok: boolean; error: JsonError | null } {
  const v = new JsonStreamValidator(limits);
  try {
    for (const c of chunks) {
      const st = v.push(c);
      if (st.state === "error") return verdict(st);
    }
    return verdict(v.finish());
  } finally {
    v.dispose();
  }
}

function oneShot(input: string | Uint8Array, limits?: { maxDepth?: number }) {
  const e = validateStrict(input, limits);
  return { ok: e === null, error: e };
}

function bytesOf(input: string | Uint8Array): Uint8Array {
  return typeof input === "string" ? enc.encode(input) : input;
}

describe("incremental equals one-shot", () => {
  const all: (string | Uint8Array)[] = [...SAMPLES, ...BYTE_SAMPLES];
  test("every split into two byte chunks", () => {
    for (const s of all) {
      const b = bytesOf(s);
      const want = oneShot(b);
      for (let i = 0; i <= b.length; i++) {
        expect({ s, i, ...streamed([b.subarray(0, i), b.subarray(i)]) }).toEqual({ s, i, ...want });
      }
    }
  });
  test("every split into two string chunks (including inside surrogate pairs)", () => {
    for (const s of SAMPLES) {
      const want = oneShot(s);
      for (let i = 0; i <= s.length; i++) {
        expect({ s, i, ...streamed([s.slice(0, i), s.slice(i)]) }).toEqual({ s, i, ...want });
      }
    }
  });
  test("one byte at a time", () => {
    for (const s of all) {
      const b = bytesOf(s);
      const chunks: Uint8Array[] = [];
      for (let i = 0; i < b.length; i++) chunks.push(b.subarray(i, i + 1));
      expect({ s, ...streamed(chunks) }).toEqual({ s, ...oneShot(b) });
    }
  });
  test("one UTF-16 unit at a time", () => {
    for (const s of SAMPLES) expect({ s, ...streamed(s.split("")) }).toEqual({ s, ...oneShot(s) });
  });
  test("depth limit across chunks", () => {
    const deep = "[".repeat(65) + "]".repeat(65);
    expect(streamed(deep.split(""))).toEqual(oneShot(deep));
    expect(streamed(deep.split(""), { maxDepth: 65 })).toEqual({ ok: true, error: null });
  });
});

describe("string chunks on generated documents", () => {
  test("random text documents (escapes, non-ASCII, edits) in random string chunks", async () => {
    const fc = (await import("fast-check")).default;
    const docs = fc.oneof(
      fc.jsonValue({ maxDepth: 3, stringUnit: "binary" }).map((v) => JSON.stringify(v)),
      fc
        .array(fc.constantFrom("a", "é", "😀", "\\n", '\\"', "\\u00e9", "\\ud83d\\ude00", "\\", '"', "\n", " ", "\\x", "\\u12"), {
          maxLength: 40,
        })
        .map((parts) => '{"k":"' + parts.join("") + '"}'),
    );
    const cuts = fc.array(fc.nat(), { maxLength: 8 });
    fc.assert(
      fc.property(docs, cuts, (text, cutList) => {
        const points = [...new Set(cutList.map((c) => c % (text.length + 1)))].sort((a, b) => a - b);
        const chunks: string[] = [];
        let last = 0;
        for (const p of points) {
          chunks.push(text.slice(last, p));
          last = p;
        }
        chunks.push(text.slice(last));
        expect(streamed(chunks)).toEqual(oneShot(text));
      }),
      { numRuns: 3000 },
    );
  });
});

describe("string chunks: errors are reported by the push that completes them", () => {
  // the stream may skip the core for text that provably stays inside a
  // string; an error must still come from the push whose bytes complete it
  // (UTF-8 errors are reported at the lead byte, so up to 3 bytes later)
  function check(text: string, chunks: string[]): void {
    const want = oneShot(text);
    // a lone \u escape is reported at its backslash but known only when the
    // next escape (or its absence) is complete: up to 12 bytes later
    const slack = want.error?.message.startsWith("lone surrogate") ? 12 : 3;
    const v = new JsonStreamValidator();
    try {
      let acc = "";
      for (const c of chunks) {
        const st = v.push(c);
        acc += c;
        if (st.state === "error") {
          expect({ text, chunks, error: st.error }).toEqual({ text, chunks, error: want.error! });
          return;
        }
        const pushed = enc.encode(acc).length;
        if (want.error !== null && want.error.message !== "unexpected end of data") {
          expect({ text, chunks, pushed, late: pushed > want.error.offset + slack }).toEqual({ text, chunks, pushed, late: false });
        }
        const last = acc.charCodeAt(acc.length - 1);
        if (!(last >= 0xd800 && last <= 0xdbff)) expect(v.bytesSeen).toBe(pushed);
      }
      expect({ text, chunks, ...verdict(v.finish()) }).toEqual({ text, chunks, ...want });
    } finally {
      v.dispose();
    }
  }
  test("escapes cut at every point, good and bad", () => {
    const bodies = [
      "ab\\nc",
      "a\\",
      '\\n\\t\\"x',
      "x\\q",
      "x\\u00e9y",
      "x\\ud83d\\ude00",
      "x\\ud83dz",
      "é\\",
      "😀\\/",
      "a\tb",
      'a"b',
      "\\\\\\",
    ];
    for (const body of bodies) {
      const text = '{"k":"' + body + '","z":1}';
      for (let size = 1; size <= 6; size++) {
        for (let first = 0; first < size; first++) {
          const chunks = [text.slice(0, 6 + first)];
          for (let i = 6 + first; i < text.length; i += size) chunks.push(text.slice(i, i + size));
          check(text, chunks);
        }
      }
    }
  });
  test("random escape-heavy strings in small random chunks", async () => {
    const fc = (await import("fast-check")).default;
    const docs = fc
      .array(
        fc.constantFrom(
          "a",
          "é",
          "😀",
          "\\n",
          '\\"',
          "\\\\",
          "\\u00e9",
          "\\ud83d\\ude00",
          "\\",
          '"',
          "\n",
          " ",
          "\\x",
          "\\u12",
          "\ud83d",
          "\ude00",
        ),
        { maxLength: 30 },
      )
      .map((parts) => '["' + parts.join("") + '"]');
    const sizes = fc.array(fc.integer({ min: 1, max: 5 }), { minLength: 1, maxLength: 40 });
    fc.assert(
      fc.property(docs, sizes, (text, sz) => {
        const chunks: string[] = [];
        for (let i = 0, k = 0; i < text.length; k++) {
          const n = sz[k % sz.length]!;
          chunks.push(text.slice(i, i + n));
          i += n;
        }
        check(text, chunks);
      }),
      { numRuns: 3000 },
    );
  });
});

describe("size limit in the stream equals one-shot", () => {
  // (only for texts with no other error before the limit: a stream has
  // already validated its earlier chunks, while one-shot checks size first)
  test("every split of texts just over maxBytes gives the same error", () => {
    const limits = { maxBytes: 12 };
    for (const text of ["[1,\n2,\n3,\n4,\n5]", '["é😀",\n "abcdef"]', '{"a":\n"λλλλλλ"}', "[1, 2, 3, 4, 5, 6]"]) {
      const want = validateStrict(text, limits);
      expect(want?.code).toBe("JSON_SIZE");
      const bytes = enc.encode(text);
      for (let i = 0; i <= bytes.length; i++) {
        for (const asBytes of [false, true]) {
          if (!asBytes && i > text.length) continue;
          const v = new JsonStreamValidator(limits);
          const parts = asBytes ? [bytes.subarray(0, i), bytes.subarray(i)] : [text.slice(0, i), text.slice(i)];
          let st: StreamStatus = { state: "need_more" };
          for (const part of parts) {
            st = v.push(part);
            if (st.state === "error") break;
          }
          if (st.state !== "error") st = v.finish();
          v.dispose();
          // a split inside a surrogate pair holds the high half back; the
          // verdict and offset are the same either way
          expect({ text, i, asBytes, st }).toEqual({ text, i, asBytes, st: { state: "error", error: want! } });
        }
      }
    }
  });
});

describe("JsonStreamValidator behaviour", () => {
  test("states: need_more, complete, error is sticky", () => {
    const v = new JsonStreamValidator();
    expect(v.push('{"a":')).toEqual({ state: "need_more" });
    expect(v.push("[1,2]")).toEqual({ state: "need_more" });
    expect(v.push("}")).toEqual({ state: "complete" });
    expect(v.push("  \n")).toEqual({ state: "complete" });
    const st = v.push(" x");
    expect(st).toEqual({
      state: "error",
      error: { code: "JSON_PARSE", message: "unexpected content after value", offset: 15, line: 2, column: 2 },
    });
    expect(v.push("{}")).toBe(st);
    expect(v.finish()).toBe(st);
    expect(v.bytesSeen).toBe(16);
    v.reset();
    expect(v.bytesSeen).toBe(0);
    expect(v.push("[]")).toEqual({ state: "complete" });
    expect(v.finish()).toEqual({ state: "complete" });
    v.dispose();
    expect(() => v.push("1")).toThrow();
  });
  test("a top-level number is complete only at finish()", () => {
    const v = new JsonStreamValidator();
    expect(v.push("12")).toEqual({ state: "need_more" });
    expect(v.push("34")).toEqual({ state: "need_more" });
    expect(v.finish()).toEqual({ state: "complete" });
    v.dispose();
  });
  test("finish() on an incomplete value reports the end offset", () => {
    const v = new JsonStreamValidator();
    v.push('{"a": [1, ');
    expect(v.finish()).toEqual({
      state: "error",
      error: { code: "JSON_PARSE", message: "unexpected end of data", offset: 10, line: 1, column: 11 },
    });
    v.dispose();
  });
  test("a high surrogate at the end of a string chunk is held back", () => {
    const v = new JsonStreamValidator();
    expect(v.push('"\ud83d')).toEqual({ state: "need_more" });
    expect(v.bytesSeen).toBe(1);
    expect(v.push('\ude00"')).toEqual({ state: "complete" });
    expect(v.bytesSeen).toBe(6);
    v.dispose();
    const w = new JsonStreamValidator();
    w.push('"\ud83d');
    const st = w.finish();
    expect(st.state === "error" && st.error.code).toBe("JSON_ENCODING");
    w.dispose();
  });
  test("many validators live at once keep separate state", () => {
    const vs = Array.from({ length: 40 }, () => new JsonStreamValidator());
    vs.forEach((v, i) => v.push(`{"id":${i},"list":[`));
    vs.forEach((v, i) => v.push(i % 2 ? `"x"]}` : `"x",]}`));
    vs.forEach((v, i) => expect(v.finish().state).toBe(i % 2 ? "complete" : "error"));
    vs.forEach((v) => v.dispose());
  });
  test("100 KB string in 20-byte deltas", () => {
    const doc = JSON.stringify({ text: 'lorem ipsum é😀 \\ " '.repeat(5000) });
    const v = new JsonStreamValidator();
    let st: StreamStatus = { state: "need_more" };
    for (let i = 0; i < doc.length; i += 20) {
      st = v.push(doc.slice(i, i + 20));
      if (i + 20 < doc.length) expect(st.state).toBe("need_more");
    }
    expect(st).toEqual({ state: "complete" });
    expect(v.finish()).toEqual({ state: "complete" });
    expect(v.bytesSeen).toBe(enc.encode(doc).length);
    v.dispose();
  });
});

describe("incremental equals one-shot on generated documents", () => {
  // imported lazily to keep the sample tests above independent of fast-check
  test("random documents, random mutations, random chunkings", async () => {
    const fc = (await import("fast-check")).default;
    const docs = fc.oneof(
      fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
      fc.jsonValue({ maxDepth: 3, stringUnit: "binary" }).map((v) => JSON.stringify(v, null, 1)),
      fc
        .jsonValue({ maxDepth: 2, stringUnit: "grapheme" })
        .map((v) => JSON.stringify(v).replace(/[\u0080-\uffff]/g, (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"))),
    );
    const edits = fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 }), fc.boolean()), { maxLength: 2 });
    const cuts = fc.array(fc.nat(), { maxLength: 6 });
    fc.assert(
      fc.property(docs, edits, cuts, (text, eds, cutList) => {
        const arr = Array.from(enc.encode(text));
        for (const [at, byte, insert] of eds) {
          const i = arr.length ? at % arr.length : 0;
          if (insert) arr.splice(i, 0, byte);
          else if (arr.length) arr[i] = byte;
        }
        const bytes = new Uint8Array(arr);
        const points = [...new Set(cutList.map((c) => (bytes.length ? c % (bytes.length + 1) : 0)))].sort((a, b) => a - b);
        const chunks: Uint8Array[] = [];
        let last = 0;
        for (const p of points) {
          chunks.push(bytes.subarray(last, p));
          last = p;
        }
        chunks.push(bytes.subarray(last));
        expect(streamed(chunks)).toEqual(oneShot(bytes));
      }),
      { numRuns: 2000 },
    );
  });
});
