/**
 * JSONL framing over byte chunks, with a bound on line length.
 *
 * Lines end at LF; a CR before the LF is dropped. A line longer than
 * `maxLineBytes` is never buffered whole: its bytes are skipped up to the next
 * LF, and it is reported as `{ overlong: true, bytes }` so the caller can emit
 * an error envelope for it and go on with the next line.
 *
 * @module
 */
import { concatBytes } from "./bytes.ts";

/** One framed line: its bytes, or the fact that it was too long. */
export type Line = { number: number; overlong: false; bytes: Uint8Array } | { number: number; overlong: true; bytes: number };

const LF = 0x0a;
const CR = 0x0d;

export class LineFramer {
  #carry: Uint8Array | null = null;
  #skipping = false;
  #skipped = 0;
  /** Last byte of the line being skipped (a CR there is not counted). */
  #skippedLast = 0;
  #number = 0;

  constructor(readonly maxLineBytes: number) {}

  /** Split a chunk; `emit` is called once per complete line, in order. */
  push(chunk: Uint8Array, emit: (line: Line) => void): void {
    let start = 0;
    while (start < chunk.length) {
      const nl = chunk.indexOf(LF, start);
      const end = nl === -1 ? chunk.length : nl;
      if (this.#skipping) {
        this.#skipped += end - start;
        if (end > start) this.#skippedLast = chunk[end - 1]!;
      } else {
        const pieceLen = end - start;
        const carried = this.#carry?.length ?? 0;
        if (carried + pieceLen > this.maxLineBytes + 1) {
          // +1 leaves room for a CR that will be stripped.
          this.#skipping = true;
          this.#skipped = carried + pieceLen;
          this.#skippedLast = pieceLen > 0 ? chunk[end - 1]! : this.#carry![carried - 1]!;
          this.#carry = null;
        } else if (nl === -1) {
          const piece = chunk.subarray(start, end);
          this.#carry = carried === 0 ? piece.slice() : concatBytes([this.#carry!, piece]);
        } else {
          const piece = chunk.subarray(start, end);
          const whole = carried === 0 ? piece : concatBytes([this.#carry!, piece]);
          this.#carry = null;
          this.#number++;
          const bytes = whole.length > 0 && whole[whole.length - 1] === CR ? whole.subarray(0, whole.length - 1) : whole;
          if (bytes.length > this.maxLineBytes) emit({ number: this.#number, overlong: true, bytes: bytes.length });
          else emit({ number: this.#number, overlong: false, bytes });
        }
      }
      if (nl === -1) return;
      if (this.#skipping) {
        this.#number++;
        emit({ number: this.#number, overlong: true, bytes: this.#skippedLength() });
        this.#skipping = false;
        this.#skipped = 0;
      }
      start = nl + 1;
    }
  }

  /** Emit the final line if the input did not end with LF. */
  end(emit: (line: Line) => void): void {
    if (this.#skipping) {
      this.#number++;
      emit({ number: this.#number, overlong: true, bytes: this.#skippedLength() });
    } else if (this.#carry !== null && this.#carry.length > 0) {
      this.#number++;
      const c = this.#carry;
      emit({ number: this.#number, overlong: false, bytes: c[c.length - 1] === CR ? c.subarray(0, c.length - 1) : c });
    }
    this.#carry = null;
    this.#skipping = false;
  }

  /** The skipped line's length without a final CR, as a line that fits is reported. */
  #skippedLength(): number {
    return this.#skippedLast === CR ? this.#skipped - 1 : this.#skipped;
  }
}

/** True when the bytes are only JSON whitespace (space, tab, CR, LF). */
export function isBlank(bytes: Uint8Array): boolean {
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i];
    if (b !== 0x20 && b !== 0x09 && b !== 0x0d && b !== 0x0a) return false;
  }
  return true;
}
