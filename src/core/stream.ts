/**
 * Incremental strict validation: feed a document chunk by chunk (for example
 * streamed tool-call arguments). The parser state lives in the WebAssembly
 * instance between calls and every push resumes at the exact byte where the
 * previous one stopped, so total work is linear in the bytes pushed.
 *
 * @module
 */
import type { JsonError, JsonLimits } from "./errors.ts";
import { resolveLimits, type ResolvedLimits } from "./parse.ts";
import {
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

  constructor(limits?: JsonLimits) {
    this.#lim = resolveLimits(limits);
    this.#core = acquireCore();
    this.#core.x.reset(this.#lim.maxDepth, this.#lim.allowProtoKey ? 1 : 0);
  }

  /** UTF-8 bytes accepted into the buffer so far. */
  get bytesSeen(): number {
    return this.#live().x.getInputLen();
  }

  #live(): CoreInstance {
    if (this.#core === null) throw new Error("JsonStreamValidator has been disposed");
    return this.#core;
  }

  #fail(error: JsonError): StreamStatus {
    this.#status = { state: "error", error };
    return this.#status;
  }

  #sizeError(): StreamStatus {
    const core = this.#live();
    const x = core.x;
    const max = this.#lim.maxBytes;
    // the offending byte is the first one past the limit; its position is
    // computed over the bytes we hold plus the line/column there
    const held = x.getInputLen();
    const { line, column } = positionInBytes(core.bytes(), x.getInputPtr(), held);
    return this.#fail(makeError(ErrKind.Size, max, line, column, max));
  }

  #run(n: number, final: boolean): StreamStatus {
    const core = this.#live();
    const r = core.x.push(n, final ? 1 : 0);
    if (r === R_ERROR) return this.#fail(coreError(core));
    this.#status = r === R_COMPLETE ? COMPLETE : NEED_MORE;
    return this.#status;
  }

  /** Write raw UTF-8 bytes and run the state machine over them. */
  #pushBytes(bytes: Uint8Array): StreamStatus {
    const core = this.#live();
    const x = core.x;
    const n = bytes.length;
    if (x.getInputLen() + n > this.#lim.maxBytes) return this.#sizeError();
    if (n === 0) return this.#run(0, false);
    const ptr = x.reserve(n);
    core.bytes().set(bytes, ptr);
    return this.#run(n, false);
  }

  /** Encode a well-formed JS string straight into wasm memory and run over it. */
  #pushText(text: string): StreamStatus {
    const core = this.#live();
    const x = core.x;
    const len = text.length;
    if (len === 0) return this.#run(0, false);
    const room = this.#lim.maxBytes - x.getInputLen();
    if (len > room) return this.#sizeError();
    const cap = len * 3 <= room ? len * 3 : room + 4;
    const ptr = x.reserve(cap);
    const { read, written } = encoder.encodeInto(text, core.bytes().subarray(ptr, ptr + cap));
    if (read < len || written > room) return this.#sizeError();
    return this.#run(written, false);
  }

  /** Feed the next chunk. After an error, the same error is returned again. */
  push(chunk: string | Uint8Array): StreamStatus {
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
    const bad = firstLoneSurrogate(text);
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
    const at = x.getInputLen();
    const { line, column } = positionInBytes(core.bytes(), x.getInputPtr(), at);
    this.#pendingHigh = "";
    return this.#fail(makeError(ErrKind.TextSurrogate, at, line, column));
  }

  /** No more input: a value must be complete now. */
  finish(): StreamStatus {
    this.#live();
    if (this.#status.state === "error") return this.#status;
    if (this.#pendingHigh !== "") return this.#loneSurrogate();
    this.#finished = true;
    return this.#run(0, true);
  }

  /** Start over with the same limits, keeping the WebAssembly instance. */
  reset(): void {
    this.#live().x.reset(this.#lim.maxDepth, this.#lim.allowProtoKey ? 1 : 0);
    this.#status = NEED_MORE;
    this.#pendingHigh = "";
    this.#finished = false;
  }

  /** Release the WebAssembly instance; the validator can't be used afterwards. */
  dispose(): void {
    if (this.#core === null) return;
    releaseCore(this.#core);
    this.#core = null;
  }
}

/** Index of the first unpaired surrogate in `s`, or -1 (a trailing high was already held back). */
function firstLoneSurrogate(s: string): number {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0xd800 || c > 0xdfff) continue;
    if (c <= 0xdbff && i + 1 < s.length) {
      const n = s.charCodeAt(i + 1);
      if (n >= 0xdc00 && n <= 0xdfff) {
        i++;
        continue;
      }
    }
    return i;
  }
  return -1;
}
