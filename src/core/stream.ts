/**
 * Incremental strict validation: feed a document chunk by chunk (for example
 * streamed tool-call arguments). The parser state lives in the WebAssembly
 * instance between calls and every push resumes at the exact byte where the
 * previous one stopped, so total work is linear in the bytes pushed.
 *
 * @module
 */
import type { JsonError, JsonLimits } from "./errors.ts";
import { firstLoneSurrogate, isWellFormed, resolveLimits, type ResolvedLimits } from "./parse.ts";
import {
  ST_STR,
  acquireCore,
  type CoreInstance,
  coreError,
  ErrKind,
  makeError,
  positionInBytes,
  R_COMPLETE,
  R_ERROR,
  releaseCore,
} from "./wasm.ts";

/** Verdict after a push or finish. */
export type StreamStatus = { state: "need_more" } | { state: "complete" } | { state: "error"; error: JsonError };

const NEED_MORE: StreamStatus = Object.freeze({ state: "need_more" }) as StreamStatus;
const COMPLETE: StreamStatus = Object.freeze({ state: "complete" }) as StreamStatus;

const encoder = new TextEncoder();
/** String chunks up to this many UTF-16 units are encoded by hand. */
const SMALL_CHUNK = 256;

function isHigh(c: number): boolean {
  return c >= 0xd800 && c <= 0xdbff;
}

/**
 * Incremental validator. Each instance holds its own WebAssembly instance
 * (taken from a pool); call `dispose()` to return it early.
 */
export class JsonStreamValidator {
  #lim: ResolvedLimits;
  #core: CoreInstance | null;
  #status: StreamStatus = NEED_MORE;
  #pendingHigh = ""; // a trailing high surrogate held back from a string chunk
  #finished = false;
  #len = 0; // bytes accepted so far (mirror of the core's input length)
  #ptr = 0; // where the next byte goes in wasm memory
  #avail = 0; // bytes reserved at #ptr
  #pending = 0; // bytes written but not yet run (plain text inside a string)
  #inString = false; // the core was inside a string after the last run
  #escOpen = false; // the deferred bytes end with a backslash whose escape letter has not come yet
  #pendingEsc = false; // the deferred bytes hold an escape (matters when the string is a member name)
  // The hot path (push of a short, plain delta inside a string) touches only
  // #ptr, #deferEnd, #mem and the escape flags: the bytes it writes are added
  // to #len, #avail and #pending by #sync() when any other path runs.
  #synced = 0; // #ptr when #len, #avail and #pending were last brought up to date
  #deferEnd = 0; // hot path allowed while #ptr + 4 * length <= this (0: not allowed)
  #mem: Uint8Array | null = null; // wasm memory view, valid while #deferEnd > 0

  constructor(limits?: JsonLimits) {
    this.#lim = resolveLimits(limits);
    this.#core = acquireCore();
    this.#core.x.reset(this.#lim.maxDepth, this.#lim.allowProtoKey ? 1 : 0);
  }

  /** UTF-8 bytes accepted into the buffer so far. */
  get bytesSeen(): number {
    this.#live();
    this.#sync();
    return this.#len;
  }

  /** Account for the bytes the hot path wrote since the last sync. */
  #sync(): void {
    const d = this.#ptr - this.#synced;
    if (d !== 0) {
      this.#len += d;
      this.#avail -= d;
      this.#pending += d;
      this.#synced = this.#ptr;
    }
  }

  /** After any other path: may the next short plain delta take the hot path? */
  #refresh(): void {
    this.#synced = this.#ptr;
    const core = this.#core;
    if (core !== null && this.#inString && this.#status === NEED_MORE && this.#pendingHigh === "" && !this.#finished) {
      this.#mem = core.bytes();
      this.#deferEnd = this.#ptr + Math.min(this.#avail, this.#lim.maxBytes - this.#len);
    } else {
      this.#deferEnd = 0;
    }
  }

  #live(): CoreInstance {
    if (this.#core === null) throw new Error("JsonStreamValidator has been disposed");
    return this.#core;
  }

  #fail(error: JsonError): StreamStatus {
    this.#status = { state: "error", error };
    return this.#status;
  }

  /**
   * The chunk would take the stream past maxBytes. The offending byte is the
   * first one past the limit (offset maxBytes); its line and column are
   * counted over the bytes held so far plus the part of the chunk that still
   * fits, so they match what a one-shot validation of the whole text reports.
   */
  #sizeError(chunk: string | Uint8Array): StreamStatus {
    const core = this.#live();
    const x = core.x;
    const max = this.#lim.maxBytes;
    const held = this.#len; // includes bytes not yet run (all plain text)
    let { line, column } = positionInBytes(core.bytes(), x.getInputPtr(), held);
    let room = max - held;
    if (typeof chunk !== "string") {
      for (let i = 0; i < room && i < chunk.length; i++) {
        const c = chunk[i];
        if (c === 0x0a) {
          line++;
          column = 1;
        } else if ((c & 0xc0) !== 0x80) column++;
      }
    } else {
      for (let i = 0; i < chunk.length && room > 0; i++) {
        const c = chunk.charCodeAt(i);
        if (c === 0x0a) {
          line++;
          column = 1;
          room--;
          continue;
        }
        if (c < 0x80) room -= 1;
        else if (c < 0x800) room -= 2;
        else if (c >= 0xd800 && c <= 0xdbff && i + 1 < chunk.length) {
          i++;
          room -= 4;
        } else room -= 3;
        column++;
      }
    }
    return this.#fail(makeError(ErrKind.Size, max, line, column, max));
  }

  /**
   * Address where the next `n` bytes go. The core is asked for room in
   * batches (at least 4 KiB), so small pushes usually need no extra call.
   */
  #reserve(n: number): number {
    if (n > this.#avail) {
      this.#flush();
      const want = n > 4096 ? n : 4096;
      this.#ptr = this.#core!.x.reserve(want);
      this.#avail = want;
    }
    return this.#ptr;
  }

  #run(n: number, final: boolean): StreamStatus {
    const core = this.#core!;
    this.#len += n;
    this.#ptr += n;
    this.#avail -= n;
    let total = this.#pending + n;
    if (this.#pending > 0) {
      // The deferred bytes were proved plain string content by the JS pass:
      // the core accepts them without scanning them again. A trailing
      // backslash whose letter came in this chunk is scanned with it.
      const plain = this.#escOpen ? this.#pending - 1 : this.#pending;
      core.x.skip(plain, this.#pendingEsc ? 1 : 0);
      total -= plain;
      this.#pending = 0;
      this.#pendingEsc = false;
      this.#escOpen = false;
    }
    const ret = core.x.push(total, final ? 1 : 0);
    const r = ret & 3;
    this.#inString = ret >> 4 === ST_STR;
    if (r === R_ERROR) return this.#fail(coreError(core));
    this.#status = r === R_COMPLETE ? COMPLETE : NEED_MORE;
    return this.#status;
  }

  /** Hand any deferred bytes to the core (before it may move the buffer). */
  #flush(): void {
    if (this.#pending > 0) this.#run(0, false);
  }

  /** Write raw UTF-8 bytes and run the state machine over them. */
  #pushBytes(bytes: Uint8Array): StreamStatus {
    const core = this.#live();
    const x = core.x;
    const n = bytes.length;
    if (this.#len + n > this.#lim.maxBytes) return this.#sizeError(bytes);
    if (n === 0) return this.#run(0, false);
    const ptr = this.#reserve(n);
    core.bytes().set(bytes, ptr);
    return this.#run(n, false);
  }

  /** Encode a well-formed JS string straight into wasm memory and run over it. */
  #pushText(text: string): StreamStatus {
    const core = this.#live();
    const x = core.x;
    const len = text.length;
    if (len === 0) return this.#run(0, false);
    const room = this.#lim.maxBytes - this.#len;
    if (len > room) return this.#sizeError(text);
    const cap = len * 3 <= room ? len * 3 : room + 4;
    const ptr = this.#reserve(cap);
    const mem = core.bytes();
    if (len <= SMALL_CHUNK) {
      // short deltas (the streaming case): encode by hand, no allocation
      let o = ptr;
      const lim = ptr + cap;
      // "plain": inside a string this text can neither end the string nor be
      // an error (no '"', no control character, only complete simple escapes;
      // non-ASCII is fine since the text is well-formed)
      let plain = true;
      let esc = false;
      for (let i = 0; i < len; i++) {
        let c = text.charCodeAt(i);
        if (c < 0x80) {
          if (o + 2 > lim) return this.#sizeError(text);
          mem[o++] = c;
          if (c < 0x20 || c === 0x22) plain = false;
          else if (c === 0x5c) {
            const e = i + 1 < len ? text.charCodeAt(i + 1) : 0;
            if (e === 0x22 || e === 0x5c || e === 0x2f || e === 0x62 || e === 0x66 || e === 0x6e || e === 0x72 || e === 0x74) {
              mem[o++] = e;
              i++;
              esc = true;
            } else plain = false;
          }
        } else if (c < 0x800) {
          if (o + 2 > lim) return this.#sizeError(text);
          mem[o++] = 0xc0 | (c >> 6);
          mem[o++] = 0x80 | (c & 0x3f);
        } else if (c >= 0xd800 && c <= 0xdbff) {
          // the caller guarantees a low half follows (well-formed text)
          c = 0x10000 + ((c - 0xd800) << 10) + (text.charCodeAt(++i) - 0xdc00);
          if (o + 4 > lim) return this.#sizeError(text);
          mem[o++] = 0xf0 | (c >> 18);
          mem[o++] = 0x80 | ((c >> 12) & 0x3f);
          mem[o++] = 0x80 | ((c >> 6) & 0x3f);
          mem[o++] = 0x80 | (c & 0x3f);
        } else {
          if (o + 3 > lim) return this.#sizeError(text);
          mem[o++] = 0xe0 | (c >> 12);
          mem[o++] = 0x80 | ((c >> 6) & 0x3f);
          mem[o++] = 0x80 | (c & 0x3f);
        }
      }
      const written = o - ptr;
      if (written > room) return this.#sizeError(text);
      if (plain && this.#inString && !this.#escOpen && this.#status === NEED_MORE) {
        // inside a string, plain text can neither finish nor break the value:
        // keep the bytes and let the core scan them with the next chunk
        this.#len += written;
        this.#ptr += written;
        this.#avail -= written;
        this.#pending += written;
        if (esc) this.#pendingEsc = true;
        return NEED_MORE;
      }
      return this.#run(written, false);
    }
    const { read, written } = encoder.encodeInto(text, mem.subarray(ptr, ptr + cap));
    if (read < len || written > room) return this.#sizeError(text);
    return this.#run(written, false);
  }

  /**
   * The hot path for short string deltas: encode by hand into the reserved
   * area, checking surrogate pairs on the way (no separate well-formedness
   * pass), and defer the core call when the text provably stays inside a
   * string. Preconditions (checked by push): live, NEED_MORE, not finished, no
   * held high surrogate, 0 < len <= SMALL_CHUNK, 4 * len bytes of room left.
   */
  #pushShort(text: string, len: number): StreamStatus {
    const cap = len * 3;
    const ptr = cap <= this.#avail ? this.#ptr : this.#reserve(cap);
    const r = encodeShort(text, len, this.#core!.bytes(), ptr, this.#escOpen);
    const written = r >>> 5;
    if ((r & (F_HIGH | F_LONE)) !== 0) {
      if ((r & F_LONE) !== 0) {
        // an unpaired surrogate: the text before it first (an earlier error wins)
        const st = this.#run(written, false);
        if (st.state === "error") return st;
        return this.#loneSurrogate();
      }
      // a trailing high surrogate: hold it back until its low half comes
      this.#pendingHigh = text.charAt(len - 1);
    }
    if ((r & F_NOT_PLAIN) === 0 && this.#inString) {
      // inside a string, plain text can neither finish nor break the value:
      // keep the bytes and let the core scan them with the next chunk
      this.#len += written;
      this.#ptr += written;
      this.#avail -= written;
      this.#pending += written;
      this.#escOpen = (r & F_ESC) !== 0;
      if ((r & F_BS) !== 0) this.#pendingEsc = true;
      return NEED_MORE;
    }
    return this.#run(written, false);
  }

  /** Feed the next chunk. After an error, the same error is returned again. */
  push(chunk: string | Uint8Array): StreamStatus {
    if (typeof chunk === "string") {
      // the hot path: a short delta of plain text inside a string (see #pushShort)
      const len = chunk.length;
      const ptr = this.#ptr;
      if (ptr + len * 4 <= this.#deferEnd && len > 0 && len <= SMALL_CHUNK) {
        const r = encodeShort(chunk, len, this.#mem!, ptr, this.#escOpen);
        if ((r & (F_NOT_PLAIN | F_HIGH | F_LONE)) === 0) {
          this.#ptr = ptr + (r >>> 5);
          this.#escOpen = (r & F_ESC) !== 0;
          if ((r & F_BS) !== 0) this.#pendingEsc = true;
          return NEED_MORE;
        }
        // anything else goes the general way (which encodes the text again)
      }
    }
    this.#sync();
    const st = this.#push(chunk);
    this.#refresh();
    return st;
  }

  #push(chunk: string | Uint8Array): StreamStatus {
    if (typeof chunk === "string" && this.#status === NEED_MORE && this.#pendingHigh === "" && this.#core !== null && !this.#finished) {
      const len = chunk.length;
      // short delta with ample room below maxBytes: the streaming hot path
      if (len > 0 && len <= SMALL_CHUNK && len * 4 <= this.#lim.maxBytes - this.#len) return this.#pushShort(chunk, len);
    }
    this.#live();
    if (this.#status.state === "error") return this.#status;
    if (this.#finished) throw new Error("JsonStreamValidator.push after finish(); call reset() first");
    if (typeof chunk !== "string") {
      if (!(chunk instanceof Uint8Array)) throw new TypeError("chunk must be a string or a Uint8Array");
      if (this.#pendingHigh !== "") {
        // a held high surrogate can never be completed by raw bytes
        return this.#loneSurrogate();
      }
      return this.#pushBytes(chunk);
    }
    let text = this.#pendingHigh === "" ? chunk : this.#pendingHigh + chunk;
    this.#pendingHigh = "";
    if (text.length > 0 && isHigh(text.charCodeAt(text.length - 1))) {
      this.#pendingHigh = text[text.length - 1];
      text = text.slice(0, -1);
    }
    const bad = isWellFormed(text) ? -1 : firstLoneSurrogate(text);
    if (bad >= 0) {
      const st = this.#pushText(text.slice(0, bad));
      if (st.state === "error") return st;
      this.#pendingHigh = "";
      return this.#loneSurrogate();
    }
    return this.#pushText(text);
  }

  #loneSurrogate(): StreamStatus {
    const core = this.#live();
    const x = core.x;
    this.#flush();
    if (this.#status.state === "error") return this.#status;
    const at = this.#len;
    const { line, column } = positionInBytes(core.bytes(), x.getInputPtr(), at);
    this.#pendingHigh = "";
    return this.#fail(makeError(ErrKind.TextSurrogate, at, line, column));
  }

  /** No more input: a value must be complete now. */
  finish(): StreamStatus {
    this.#live();
    this.#sync();
    const st = this.#finish();
    this.#refresh();
    return st;
  }

  #finish(): StreamStatus {
    if (this.#status.state === "error") return this.#status;
    if (this.#pendingHigh !== "") return this.#loneSurrogate();
    this.#finished = true;
    return this.#run(0, true);
  }

  /** Start over with the same limits, keeping the WebAssembly instance. */
  reset(): void {
    this.#live().x.reset(this.#lim.maxDepth, this.#lim.allowProtoKey ? 1 : 0);
    this.#len = 0;
    this.#ptr = 0;
    this.#avail = 0;
    this.#pending = 0;
    this.#inString = false;
    this.#escOpen = false;
    this.#pendingEsc = false;
    this.#status = NEED_MORE;
    this.#pendingHigh = "";
    this.#finished = false;
    this.#refresh();
  }

  /** Release the WebAssembly instance; the validator can't be used afterwards. */
  dispose(): void {
    if (this.#core === null) return;
    releaseCore(this.#core);
    this.#core = null;
    this.#deferEnd = 0;
    this.#mem = null;
  }
}

const F_NOT_PLAIN = 1;
const F_ESC = 2;
const F_HIGH = 4;
const F_LONE = 8;
const F_BS = 16;

/**
 * Encode a short chunk to UTF-8 at mem[o..] and classify it in the same pass.
 * Returns (bytes written << 5) | flags: F_NOT_PLAIN (inside a string the text
 * could end the string or be an error: '"', a control character, an escape
 * that is not a complete simple one), F_ESC (ends with a backslash whose
 * letter is still to come), F_HIGH (ends with a high surrogate, not encoded),
 * F_LONE (an unpaired surrogate; only the text before it is encoded), F_BS (holds a backslash).
 * `escOpen`: the text before this chunk ended with such a backslash.
 */
function encodeShort(text: string, len: number, mem: Uint8Array, o: number, escOpen: boolean): number {
  const o0 = o;
  let flags = 0;
  let bad = 0; // negative once a control character or '"' was seen
  let i = 0;
  if (escOpen) {
    const e = text.charCodeAt(0);
    if (e === 0x22 || e === 0x5c || e === 0x2f || e === 0x62 || e === 0x66 || e === 0x6e || e === 0x72 || e === 0x74) {
      mem[o++] = e;
      i = 1;
    } else flags = F_NOT_PLAIN;
  }
  while (i < len) {
    let c = text.charCodeAt(i);
    // the common case: a run of ASCII other than '\' (no branch per class)
    while (c < 0x80 && c !== 0x5c) {
      mem[o++] = c;
      bad |= (c - 0x20) | ((c ^ 0x22) - 1);
      if (++i === len) return ((o - o0) << 5) | flags | (bad >>> 31);
      c = text.charCodeAt(i);
    }
    if (c === 0x5c) {
      mem[o++] = c;
      flags |= F_BS;
      if (i + 1 < len) {
        const e = text.charCodeAt(i + 1);
        if (e === 0x22 || e === 0x5c || e === 0x2f || e === 0x62 || e === 0x66 || e === 0x6e || e === 0x72 || e === 0x74) {
          mem[o++] = e;
          i++;
        } else flags |= F_NOT_PLAIN;
      } else flags |= F_ESC;
    } else if (c < 0x800) {
      mem[o++] = 0xc0 | (c >> 6);
      mem[o++] = 0x80 | (c & 0x3f);
    } else if ((c & 0xf800) !== 0xd800) {
      mem[o++] = 0xe0 | (c >> 12);
      mem[o++] = 0x80 | ((c >> 6) & 0x3f);
      mem[o++] = 0x80 | (c & 0x3f);
    } else if (c <= 0xdbff && i + 1 < len && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      c = 0x10000 + ((c - 0xd800) << 10) + (text.charCodeAt(++i) - 0xdc00);
      mem[o++] = 0xf0 | (c >> 18);
      mem[o++] = 0x80 | ((c >> 12) & 0x3f);
      mem[o++] = 0x80 | ((c >> 6) & 0x3f);
      mem[o++] = 0x80 | (c & 0x3f);
    } else {
      flags |= c <= 0xdbff && i + 1 === len ? F_HIGH : F_LONE;
      break;
    }
    i++;
  }
  return ((o - o0) << 5) | flags | (bad >>> 31);
}
