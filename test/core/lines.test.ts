/**
 * LineFramer (run's JSONL framing): the length reported for an over-long line
 * is the line's length without the CR of a CRLF ending, as for a line that
 * fits, at every split of the input into two chunks.
 */
import { expect, test } from "bun:test";
import { LineFramer, type Line } from "../../src/core/lines.ts";

function frame(input: Uint8Array, max: number, split: number): Line[] {
  const out: Line[] = [];
  const f = new LineFramer(max);
  f.push(input.subarray(0, split), (l) => out.push(l));
  f.push(input.subarray(split), (l) => out.push(l));
  f.end((l) => out.push(l));
  return out;
}

const enc = new TextEncoder();

test("over-long CRLF lines report their length without the CR, at every split point", () => {
  // Before: the CR was counted for a line that was being skipped (41 instead of 40).
  const long = "x".repeat(40);
  for (const text of [`ab\r\n${long}\r\ncd\r\n`, `ab\n${long}\r\ncd`, `ab\n${long}\r`, `ab\n${long}\r\r\n`]) {
    const input = enc.encode(text);
    for (let split = 0; split <= input.length; split++) {
      const lines = frame(input, 10, split);
      const over = lines.filter((l) => l.overlong);
      expect(over.length).toBe(1);
      expect(over[0]!.number).toBe(2);
      // the final CR of the line is dropped, like for a line that fits; any other CR is content
      expect(over[0]!.bytes).toBe(text.includes("\r\r\n") ? 41 : 40);
      const fits = lines.filter((l) => !l.overlong).map((l) => new TextDecoder().decode(l.bytes as Uint8Array));
      expect(fits[0]).toBe("ab");
    }
  }
});

test("a line of exactly the limit plus its CR fits; one byte more is over-long with the right length", () => {
  for (let split = 0; split <= 14; split++) {
    const ok = frame(enc.encode("0123456789\r\n"), 10, Math.min(split, 12));
    expect(ok).toEqual([{ number: 1, overlong: false, bytes: enc.encode("0123456789") }]);
    const over = frame(enc.encode("0123456789A\r\n"), 10, Math.min(split, 13));
    expect(over).toEqual([{ number: 1, overlong: true, bytes: 11 }]);
  }
});
