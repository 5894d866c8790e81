import { describe, expect, test } from "bun:test";
import { JsonStreamValidator, validateStrict, type JsonError, type StreamStatus } from "../../src/core/index.ts";
import { acquireCore, R_COMPLETE, R_ERROR, R_NEED_MORE, releaseCore } from "../../src/core/wasm.ts";

// Short string chunks that provably stay inside a string are kept by the
// JavaScript side and later accepted by the core without a second scan. These
// tests aim at what that shortcut must still get right: member names whose
// escapes arrived in deferred chunks (duplicates are compared after
// unescaping), a backslash deferred at the end of a chunk, and errors that
// follow deferred text.

function verdict(st: StreamStatus): { ok: boolean; error: JsonError | null } {
  if (st.state === "error") return { ok: false, error: st.error };
  return { ok: st.state === "complete", error: null };
}

function streamed(chunks: string[]): { ok: boolean; error: JsonError | null } {
  const v = new JsonStreamValidator();
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

function oneShot(text: string): { ok: boolean; error: JsonError | null } {
  const e = validateStrict(text);
  return { ok: e === null, error: e };
}

/** Every chunking of `text` into pieces of `size` units (all start offsets). */
function chunkings(text: string, size: number): string[][] {
  const out: string[][] = [];
  for (let first = 1; first <= size; first++) {
    const chunks = [text.slice(0, first)];
    for (let i = first; i < text.length; i += size) chunks.push(text.slice(i, i + size));
    out.push(chunks);
  }
  return out;
}

describe("deferred plain string text", () => {
  const long = "x".repeat(30);
  const docs = [
    // duplicate names whose escapes are in the deferred middle of the name
    `{"${long}\\n${long}":1,"${long}\\u000a${long}":2}`,
    `{"${long}\\n${long}":1,"${long}\\n${long}":2}`,
    `{"${long}\\/${long}":1,"${long}/${long}":2}`,
    `{"${long}\\"${long}":1,"${long}\\u0022${long}":2}`,
    `{"${long}é\\t${long}":1,"${long}\\u00e9\\t${long}":2}`,
    // distinct names that only differ inside the deferred part
    `{"${long}\\n${long}":1,"${long}\\t${long}":2}`,
    `{"${long}\\\\n${long}":1,"${long}\\n${long}":2}`,
    // __proto__ spelled with escapes after a long deferred value
    `{"v":"${long}\\n${long}","\\u005f_proto__":1}`,
    // errors right after deferred text: bad escape, control character, raw quote then garbage
    `{"k":"${long}\\q${long}"}`,
    `{"k":"${long}\\${long}"}`,
    `{"k":"${long}\t${long}"}`,
    `{"k":"${long}"${long}"}`,
    `{"k":"${long}\\u12G4${long}"}`,
    `{"k":"${long}\\ud800${long}"}`,
    // valid documents: the verdict and every later byte must still be right
    `{"k":"${long}\\\\${long}\\"${long}","n":[1,2,{"a":"${long}😀${long}"}]}`,
    `["${long}\\\\","${long}\\\\\\"${long}"]`,
  ];
  test("equals one-shot for every chunk size from 1 to 24 and every start", () => {
    let runs = 0;
    for (const doc of docs) {
      const want = oneShot(doc);
      for (let size = 1; size <= 24; size++) {
        for (const chunks of chunkings(doc, size)) {
          expect({ doc, size, first: chunks[0]!.length, got: streamed(chunks) }).toEqual({
            doc,
            size,
            first: chunks[0]!.length,
            got: want,
          });
          runs++;
        }
      }
    }
    expect(runs).toBeGreaterThan(1000);
  });
  test("the duplicate is found and named after unescaping", () => {
    const doc = `{"${long}\\n${long}":1,"${long}\\u000a${long}":2}`;
    const got = streamed(chunkings(doc, 7)[3]!);
    expect(got.ok).toBe(false);
    expect(got.error!.code).toBe("JSON_DUPLICATE_KEY");
    expect(got.error!.offset).toBe(doc.indexOf(',"') + 1);
  });
  test("bytesSeen counts deferred bytes and the stream goes on after them", () => {
    const v = new JsonStreamValidator();
    try {
      expect(v.push('{"a":"')).toEqual({ state: "need_more" });
      expect(v.push("plain é text \\n")).toEqual({ state: "need_more" });
      expect(v.bytesSeen).toBe(6 + new TextEncoder().encode("plain é text \\n").length);
      expect(v.push('","a":1}')).toMatchObject({ state: "error", error: { code: "JSON_DUPLICATE_KEY" } });
    } finally {
      v.dispose();
    }
  });
});

describe("hot path bookkeeping (deltas counted lazily)", () => {
  const enc = new TextEncoder();
  test("many short deltas across reserve batches: bytesSeen, size limit and verdict match one-shot", () => {
    const body = "abc é 🙂 \\n ".repeat(1200); // about 20 KB of string content: several 4 KiB batches
    const doc = `{"k":"${body}"}`;
    const total = enc.encode(doc).length;
    for (const maxBytes of [total, total - 1, total - 7, total >> 1, 4097, 100]) {
      const v = new JsonStreamValidator({ maxBytes });
      try {
        let sent = 0;
        let last: StreamStatus = { state: "need_more" };
        for (let i = 0; i < doc.length && last.state === "need_more"; i += 13) {
          let j = Math.min(i + 13, doc.length);
          if (j < doc.length && doc.charCodeAt(j - 1) >= 0xd800 && doc.charCodeAt(j - 1) <= 0xdbff) j++; // keep pairs whole
          const part = doc.slice(i, j);
          i = j - 13;
          last = v.push(part);
          // the push that takes the stream past maxBytes must fail at once
          if (sent + enc.encode(part).length > maxBytes) expect(last.state).toBe("error");
          if (last.state === "need_more") {
            sent += enc.encode(part).length;
            expect(v.bytesSeen).toBe(sent);
          }
        }
        if (last.state === "need_more") last = v.finish();
        const one = validateStrict(doc, { maxBytes });
        if (one === null) expect(last).toEqual({ state: "complete" });
        else
          expect(last).toMatchObject({ state: "error", error: { code: one.code, offset: one.offset, line: one.line, column: one.column } });
      } finally {
        v.dispose();
      }
    }
  });
  test("reset() in the middle of deferred text starts clean; dispose() stops the hot path", () => {
    const v = new JsonStreamValidator();
    expect(v.push('{"a":"')).toEqual({ state: "need_more" });
    for (let i = 0; i < 50; i++) expect(v.push("plain text ")).toEqual({ state: "need_more" });
    v.reset();
    expect(v.bytesSeen).toBe(0);
    expect(v.push("[1,")).toEqual({ state: "need_more" });
    expect(v.push("2]")).toEqual({ state: "complete" });
    expect(v.finish()).toEqual({ state: "complete" });
    v.reset();
    expect(v.push('"abc')).toEqual({ state: "need_more" });
    v.dispose();
    expect(() => v.push("more plain text")).toThrow(/disposed/);
  });
});

describe("core skip(n, esc) contract", () => {
  // JsonStreamValidator only calls skip() for bytes its JS pass proved plain;
  // these tests pin what the core does with them.
  function core() {
    const c = acquireCore();
    c.x.reset(64, 0);
    return c;
  }
  function write(c: ReturnType<typeof acquireCore>, text: string): number {
    const b = new TextEncoder().encode(text);
    const p = c.x.reserve(b.length);
    c.bytes().set(b, p);
    return b.length;
  }
  test("inside a string the skipped bytes are trusted, not scanned", () => {
    const c = core();
    try {
      expect(c.x.push(write(c, '["ab'), 0) & 3).toBe(R_NEED_MORE);
      // a control character would be an error if it were scanned
      c.x.skip(write(c, "c\u0001d"), 0);
      expect(c.x.push(write(c, '"]'), 1) & 3).toBe(R_COMPLETE);
      expect(c.x.getInputLen()).toBe(9);
    } finally {
      releaseCore(c);
    }
  });
  test("outside a string skip() only appends: the next push scans the bytes", () => {
    const c = core();
    try {
      expect(c.x.push(write(c, "[1,"), 0) & 3).toBe(R_NEED_MORE);
      c.x.skip(write(c, "x2"), 0);
      expect(c.x.push(write(c, "]"), 1) & 3).toBe(R_ERROR);
      expect(c.x.getErrOffset()).toBe(3);
    } finally {
      releaseCore(c);
    }
  });
  test("esc marks a member name for unescaping before the duplicate check", () => {
    for (const esc of [1, 0]) {
      const c = core();
      try {
        expect(c.x.push(write(c, '{"a":1,"'), 0) & 3).toBe(R_NEED_MORE);
        c.x.skip(write(c, "\\u0061"), esc);
        const r = c.x.push(write(c, '":2}'), 1) & 3;
        // with esc the name is decoded to "a" and is a duplicate; without it
        // the raw bytes \u0061 are compared and differ from "a"
        expect({ esc, r }).toEqual({ esc, r: esc ? R_ERROR : R_COMPLETE });
      } finally {
        releaseCore(c);
      }
    }
  });
});
