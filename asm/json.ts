// Strict RFC 8259 JSON validator over UTF-8 bytes, written as a resumable
// byte-level state machine. See asm/README.md for the design and memory layout.
//
// One instance of this module validates one document at a time. All state
// lives in module globals and in linear memory, so a run can stop at any byte
// (end of the bytes pushed so far) and resume later at exactly that byte.

// ---------------------------------------------------------------- imports

/** Exact overflow check for a number's text (rare path): 1 = finite, 0 = overflow. */
@external("env", "numcheck")
declare function numcheck(ptr: usize, len: i32): i32;

// ---------------------------------------------------------------- constants

// parser states
const ST_VALUE: i32 = 0; // expect a value
const ST_ARR_FIRST: i32 = 1; // after '[': value or ']'
const ST_OBJ_FIRST: i32 = 2; // after '{': key or '}'
const ST_KEY: i32 = 3; // after ',' inside an object: key
const ST_COLON: i32 = 4; // after a key: ':'
const ST_AFTER: i32 = 5; // after a value inside a container: ',' or close
const ST_DONE: i32 = 6; // top-level value complete, only whitespace may follow
const ST_STR: i32 = 7; // inside string content
const ST_ESC: i32 = 8; // after a backslash
const ST_HEX: i32 = 9; // inside the 4 hex digits of \u
const ST_LOW_BS: i32 = 10; // after a high-surrogate escape: expect '\'
const ST_LOW_U: i32 = 11; // after that '\': expect 'u'
const ST_UTF8: i32 = 12; // inside a multi-byte UTF-8 sequence
const ST_NUM_MINUS: i32 = 13;
const ST_NUM_ZERO: i32 = 14;
const ST_NUM_INT: i32 = 15;
const ST_NUM_DOT: i32 = 16;
const ST_NUM_FRAC: i32 = 17;
const ST_NUM_E: i32 = 18;
const ST_NUM_ESIGN: i32 = 19;
const ST_NUM_EXP: i32 = 20;
const ST_LIT: i32 = 21; // inside true/false/null
const ST_BOM: i32 = 22; // saw 0xEF at offset 0, waiting for 3 bytes
const ST_ERROR: i32 = 23;

// run() results
const R_NEED_MORE: i32 = 0;
const R_COMPLETE: i32 = 1;
const R_ERROR: i32 = 2;

// error kinds (mapped to codes and messages in src/core/wasm.ts)
const E_EOF: i32 = 1;
const E_BYTE: i32 = 2; // errArg = byte
const E_AFTER: i32 = 3;
const E_ESCAPE: i32 = 4;
const E_NUMBER: i32 = 5;
const E_CONTROL: i32 = 6;
const E_UTF8: i32 = 7;
const E_SURROGATE: i32 = 8;
const E_BOM: i32 = 9;
const E_DEPTH: i32 = 10; // errArg = maxDepth
const E_DUPLICATE: i32 = 11; // errKeyPtr/errKeyLen = unescaped key
const E_RANGE: i32 = 12;
const E_FORBIDDEN: i32 = 13;

const KIND_ARRAY: u32 = 1;
const KIND_OBJECT: u32 = 2;

const HARD_MAX_DEPTH: i32 = 4096;
const LEVEL_SIZE: i32 = 32; // [kind u32][entryStart u32][arenaStart u32][serial u32][bloom u64][pad]
const REF_SIZE: i32 = 8; // [ref u32][len u32]
const ARENA_FLAG: u32 = 0x80000000; // ref points into the arena, not the input
const LINEAR_KEYS: i32 = 48; // objects with more keys switch to the hash table
const PAD: i32 = 32; // bytes kept readable past every region end

const LIT_TRUE = memory.data<u8>([0x74, 0x72, 0x75, 0x65]);
const LIT_FALSE = memory.data<u8>([0x66, 0x61, 0x6c, 0x73, 0x65]);
const LIT_NULL = memory.data<u8>([0x6e, 0x75, 0x6c, 0x6c]);
const PROTO = memory.data<u8>([0x5f, 0x5f, 0x70, 0x72, 0x6f, 0x74, 0x6f, 0x5f, 0x5f]);

// ---------------------------------------------------------------- globals

// memory regions (absolute addresses); all dynamic regions are bump-allocated
// above `heapStart` and may be relocated when they grow, so entries refer to
// them by relative offsets.
let levels: usize = 0; // HARD_MAX_DEPTH+1 level records (static)
let heapStart: usize = 0;
let heapTop: usize = 0;

let inBase: usize = 0; // input bytes
let inCap: u32 = 0;
let inLen: u32 = 0;

let arenaBase: usize = 0; // unescaped copies of escaped keys
let arenaCap: u32 = 0;
let arenaTop: u32 = 0;

let hashBase: usize = 0; // key hashes (u32), stack discipline
let entBase: usize = 0; // key refs [ref u32][len u32], parallel to hashBase
let entCap: u32 = 0; // in entries
let entTop: u32 = 0;

let tabBase: usize = 0; // open-addressing table of [tag u32][entry u32]
let tabMask: u32 = 0; // capacity-1 (power of two), 0 = no table
let tabUsed: u32 = 0;
let nextSerial: u32 = 1;

// per-instance random hash seed (set from JS), so colliding member names
// cannot be precomputed to slow the key table down
let seed: u64 = 0x2545f4914f6cdd1d;

/** Set the hash seed (two random 32-bit halves). */
export function setSeed(lo: u32, hi: u32): void {
  seed = ((<u64>hi << 32) | <u64>lo) | 1;
}

// options
let maxDepth: i32 = 64;
let allowProto: i32 = 0;

// parser state
let state: i32 = ST_VALUE;
let pos: u32 = 0;
let depth: i32 = 0;
let strStart: u32 = 0; // offset of the opening quote
let strIsKey: i32 = 0;
let strHasEsc: i32 = 0;
let escStart: u32 = 0; // offset of the current backslash
let highStart: u32 = 0; // offset of the pending high-surrogate escape
let hexCount: i32 = 0;
let hexVal: u32 = 0;
let hexLow: i32 = 0; // parsing the low half of a surrogate pair
let utfNeed: i32 = 0;
let utfLo: u32 = 0;
let utfHi: u32 = 0;
let utfStart: u32 = 0;
let numStart: u32 = 0;
let numIntDigits: i32 = 0;
let numExp: i32 = 0;
let numExpNeg: i32 = 0;
let litPtr: usize = 0;
let litLen: i32 = 0;
let litIdx: i32 = 0;

// error details
let errKind: i32 = 0;
let errOffset: u32 = 0;
let errArg: i32 = 0;
let errKeyPtr: usize = 0;
let errKeyLen: i32 = 0;

// ---------------------------------------------------------------- memory

function ensureMemory(end: usize): void {
  const have = (<usize>memory.size()) << 16;
  if (end <= have) return;
  const need = <i32>((end - have + 0xffff) >> 16);
  const cur = memory.size();
  // grow at least geometrically to keep the number of grow calls small
  let delta = cur > need ? cur : need;
  if (memory.grow(delta) < 0) {
    if (memory.grow(need) < 0) unreachable();
  }
}

function alloc(size: u32): usize {
  const p = (heapTop + 15) & ~(<usize>15);
  heapTop = p + <usize>size + PAD;
  ensureMemory(heapTop);
  return p;
}

// small fixed key regions that survive reset() (most documents never
// outgrow them, so a one-shot call allocates nothing for keys)
const FIXED_ENTRIES: u32 = 64;
const FIXED_ARENA: u32 = 1024;
let fixedHash: usize = 0;
let fixedRefs: usize = 0;
let fixedArena: usize = 0;

function initLayout(): void {
  if (levels != 0) return;
  levels = (__heap_base + 15) & ~(<usize>15);
  fixedHash = levels + <usize>((HARD_MAX_DEPTH + 1) * LEVEL_SIZE);
  fixedRefs = fixedHash + <usize>(FIXED_ENTRIES * 4 + PAD);
  fixedArena = fixedRefs + <usize>(FIXED_ENTRIES * REF_SIZE + PAD);
  heapStart = (fixedArena + <usize>(FIXED_ARENA + PAD) + 15) & ~(<usize>15);
  heapTop = heapStart;
  ensureMemory(heapStart + 65536);
}

function growArena(need: u32): void {
  let cap = arenaCap < 256 ? <u32>256 : arenaCap * 2;
  while (cap < need) cap *= 2;
  const p = alloc(cap);
  if (arenaTop > 0) memory.copy(p, arenaBase, arenaTop);
  arenaBase = p;
  arenaCap = cap;
}

function growEntries(): void {
  const cap = entCap < 64 ? <u32>64 : entCap * 2;
  const h = alloc(cap * 4);
  const p = alloc(cap * REF_SIZE);
  if (entTop > 0) {
    memory.copy(h, hashBase, entTop * 4);
    memory.copy(p, entBase, entTop * REF_SIZE);
  }
  hashBase = h;
  entBase = p;
  entCap = cap;
}

// ---------------------------------------------------------------- exports: setup

/** Reset all parser state and free every dynamic region. */
export function reset(depthLimit: i32, protoAllowed: i32): void {
  initLayout();
  heapTop = heapStart;
  inBase = 0;
  inCap = 0;
  inLen = 0;
  arenaBase = fixedArena;
  arenaCap = FIXED_ARENA;
  arenaTop = 0;
  entBase = fixedRefs;
  hashBase = fixedHash;
  entCap = FIXED_ENTRIES;
  entTop = 0;
  tabBase = 0;
  tabMask = 0;
  tabUsed = 0;
  nextSerial = 1;
  maxDepth = depthLimit;
  allowProto = protoAllowed;
  state = ST_VALUE;
  pos = 0;
  depth = 0;
  errKind = 0;
  errOffset = 0;
  errArg = 0;
  errKeyPtr = 0;
  errKeyLen = 0;
}

/**
 * Make room for `n` more input bytes and return the address where the caller
 * writes them. Existing input is kept (relocated if needed).
 */
export function reserve(n: u32): usize {
  const need = inLen + n;
  if (need > inCap) {
    let cap = inCap * 2;
    if (cap < need) cap = need;
    if (cap < 256) cap = 256;
    const p = alloc(cap);
    if (inLen > 0) memory.copy(p, inBase, inLen);
    inBase = p;
    inCap = cap;
  }
  return inBase + inLen;
}

let oneShotCap: u32 = 0;

/** One-shot setup: reset(maxDepth, protoAllowed) then reserve(cap). */
export function begin(depthLimit: i32, protoAllowed: i32, cap: u32): usize {
  reset(depthLimit, protoAllowed);
  const p = reserve(cap);
  oneShotCap = inCap;
  return p;
}

/**
 * One-shot in a single call: reset, then validate `n` bytes the caller wrote
 * at the address an earlier begin() returned (the input region always starts
 * there after a reset; n must not exceed the capacity begin() reserved).
 */
export function validateFresh(n: u32, depthLimit: i32, protoAllowed: i32): i32 {
  reset(depthLimit, protoAllowed);
  reserve(oneShotCap);
  inLen = n;
  return run(n, true);
}

/** Validate `n` freshly written bytes; `final` = no more bytes will come. */
export function push(n: u32, final: i32): i32 {
  inLen += n;
  const r = run(inLen, final != 0);
  // the state rides along (bits 4..) so the caller knows, e.g., that it is
  // inside a string without another call
  return r | (state << 4);
}

/**
 * Accept `n` freshly written bytes without scanning them: the caller has
 * proved they are plain string content (no '"', no byte below 0x20, only
 * complete simple escapes, valid UTF-8; `esc` = they hold an escape). Only
 * valid inside a string whose scan stopped at the end of the data; in any
 * other state the bytes are simply appended and the next push scans them.
 */
export function skip(n: u32, esc: i32): void {
  if (state == ST_STR && pos == inLen) {
    pos += n;
    if (esc != 0) strHasEsc = 1;
  }
  inLen += n;
}

/** One-shot: reset, then validate `n` bytes already written at reserve(n). */
export function validate(n: u32): i32 {
  inLen = n;
  return run(n, true);
}

export function getState(): i32 { return state; }
export function getInputPtr(): usize { return inBase; }
export function getInputLen(): u32 { return inLen; }
export function getErrKind(): i32 { return errKind; }
export function getErrOffset(): u32 { return errOffset; }
export function getErrArg(): i32 { return errArg; }
export function getErrKeyPtr(): usize { return errKeyPtr; }
export function getErrKeyLen(): i32 { return errKeyLen; }

// ---------------------------------------------------------------- keys

@inline function mix64(v: u64): u32 {
  v *= 0x9e3779b97f4a7c15;
  return <u32>(v >> 32) ^ <u32>v;
}

/**
 * Hash of a member name. Reads whole 8-byte words; the bytes past the end of
 * the name are masked off (every region has PAD readable bytes after it).
 */
@inline function hashBytes(p: usize, len: i32): u32 {
  if (len <= 8) {
    if (len == 0) return <u32>(seed >> 17);
    const m: u64 = len == 8 ? <u64>-1 : (<u64>1 << (<u64>len << 3)) - 1;
    return mix64(((load<u64>(p) & m) ^ seed) * 0xff51afd7ed558ccd ^ (<u64>len << 59));
  }
  let acc: u64 = <u64>len ^ seed;
  let i = 0;
  while (i + 8 <= len) {
    acc = rotl<u64>(acc ^ (load<u64>(p + <usize>i) * 0xc2b2ae3d27d4eb4f), 31) * 0x9e3779b97f4a7c15;
    i += 8;
  }
  if (i < len) {
    const m: u64 = (<u64>1 << (<u64>(len - i) << 3)) - 1;
    acc = rotl<u64>(acc ^ ((load<u64>(p + <usize>i) & m) * 0xc2b2ae3d27d4eb4f), 31) * 0x9e3779b97f4a7c15;
  }
  return mix64(acc);
}

function bytesEqual(a: usize, b: usize, len: i32): bool {
  let i = 0;
  while (i + 8 <= len) {
    if (load<u64>(a + <usize>i) != load<u64>(b + <usize>i)) return false;
    i += 8;
  }
  while (i < len) {
    if (load<u8>(a + <usize>i) != load<u8>(b + <usize>i)) return false;
    i++;
  }
  return true;
}

@inline function refPtr(ref: u32): usize {
  return (ref & ARENA_FLAG) != 0 ? arenaBase + <usize>(ref & ~ARENA_FLAG) : inBase + <usize>ref;
}

@inline function refAddr(i: u32): usize { return entBase + <usize>(i * REF_SIZE); }

@inline function slotFor(h: u32, serial: u32): u32 {
  return (h ^ (serial * 0x27d4eb2f)) & tabMask;
}

function tableInsert(serial: u32, idx: u32): void {
  let s = slotFor(load<u32>(hashBase + <usize>(idx << 2)), serial);
  while (load<u32>(tabBase + <usize>(s << 3)) != 0) s = (s + 1) & tabMask;
  store<u32>(tabBase + <usize>(s << 3), serial);
  store<u32>(tabBase + <usize>(s << 3), idx, 4);
  tabUsed++;
}

/** Count entries of live hashed objects, rebuild the table with room to spare. */
function tableRebuild(): void {
  let live: u32 = 0;
  for (let d = 1; d <= depth; d++) {
    const lv = levels + <usize>(d * LEVEL_SIZE);
    if (load<u32>(lv, 12) != 0) {
      const end = d < depth ? load<u32>(lv + LEVEL_SIZE, 4) : entTop;
      live += end - load<u32>(lv, 4);
    }
  }
  let cap: u32 = 64;
  while (cap < live * 4) cap <<= 1;
  tabBase = alloc(cap << 3);
  memory.fill(tabBase, 0, <usize>(cap << 3));
  tabMask = cap - 1;
  tabUsed = 0;
  for (let d = 1; d <= depth; d++) {
    const lv = levels + <usize>(d * LEVEL_SIZE);
    const serial = load<u32>(lv, 12);
    if (serial != 0) {
      const end = d < depth ? load<u32>(lv + LEVEL_SIZE, 4) : entTop;
      for (let i = load<u32>(lv, 4); i < end; i++) tableInsert(serial, i);
    }
  }
}

@inline function sameKey(i: u32, kp: usize, len: i32): bool {
  const e = refAddr(i);
  return load<u32>(e, 4) == <u32>len && bytesEqual(refPtr(load<u32>(e)), kp, len);
}

/**
 * Add a member name to the current object's key set. Returns false if it is a
 * duplicate. Small objects compare hashes four at a time (SIMD) over a
 * contiguous array; objects with more than LINEAR_KEYS names use the shared
 * open-addressing table, tagged with the object's serial number.
 */
@inline function addKey(ref: u32, len: i32): bool {
  const kp = refPtr(ref);
  const h = hashBytes(kp, len);
  const lv = levels + <usize>(depth * LEVEL_SIZE);
  const start = load<u32>(lv, 4);
  const serial = load<u32>(lv, 12);
  const top = entTop;
  if (serial == 0) {
    // one-bit-per-name filter: most new names skip the compare loop
    const bloom = load<u64>(lv, 16);
    const bit = <u64>1 << <u64>(h >> 26);
    store<u64>(lv, bloom | bit, 16);
    const hv = i32x4.splat(<i32>h);
    let i = (bloom & bit) != 0 ? start : top;
    while (i < top) {
      let m = i32x4.bitmask(i32x4.eq(v128.load(hashBase + <usize>(i << 2)), hv));
      const left = top - i;
      if (left < 4) m &= (1 << <i32>left) - 1;
      while (m != 0) {
        if (sameKey(i + <u32>ctz(m), kp, len)) return false;
        m &= m - 1;
      }
      i += 4;
    }
  } else {
    let s = slotFor(h, serial);
    while (true) {
      const sp = tabBase + <usize>(s << 3);
      const tag = load<u32>(sp);
      if (tag == 0) break;
      if (tag == serial) {
        const j = load<u32>(sp, 4);
        if (load<u32>(hashBase + <usize>(j << 2)) == h && sameKey(j, kp, len)) return false;
      }
      s = (s + 1) & tabMask;
    }
    // new name: record it, then use the empty slot the probe ended on
    if (top >= entCap) growEntries();
    store<u32>(hashBase + <usize>(top << 2), h);
    const e = refAddr(top);
    store<u32>(e, ref);
    store<u32>(e, <u32>len, 4);
    entTop = top + 1;
    if ((tabUsed + 1) * 2 > tabMask + 1) {
      tableRebuild();
    } else {
      const sp = tabBase + <usize>(s << 3);
      store<u32>(sp, serial);
      store<u32>(sp, top, 4);
      tabUsed++;
    }
    return true;
  }
  if (top >= entCap) growEntries();
  store<u32>(hashBase + <usize>(top << 2), h);
  const e = refAddr(top);
  store<u32>(e, ref);
  store<u32>(e, <u32>len, 4);
  entTop = top + 1;
  if (<i32>(entTop - start) > LINEAR_KEYS) {
    // switch this object to hashed lookups
    const ns = nextSerial++;
    store<u32>(lv, ns, 12);
    if (tabMask == 0 || (tabUsed + (entTop - start)) * 2 > tabMask + 1) {
      tableRebuild();
    } else {
      for (let i = start; i < entTop; i++) tableInsert(ns, i);
    }
  }
  return true;
}

@inline function hexDigit(c: u32): i32 {
  if (c - 0x30 < 10) return <i32>(c - 0x30);
  const l = (c | 0x20) - 0x61;
  if (l < 6) return <i32>l + 10;
  return -1;
}

function readHex4(p: usize): u32 {
  let v: u32 = 0;
  for (let i = 0; i < 4; i++) v = (v << 4) | <u32>hexDigit(<u32>load<u8>(p + <usize>i));
  return v;
}

/** Value of four hex digits at p, or -1 if any is not a hex digit. */
@inline function hex4(p: usize): i32 {
  const a = hexDigit(<u32>load<u8>(p));
  const b = hexDigit(<u32>load<u8>(p + 1));
  const c = hexDigit(<u32>load<u8>(p + 2));
  const d = hexDigit(<u32>load<u8>(p + 3));
  if ((a | b | c | d) < 0) return -1;
  return (a << 12) | (b << 8) | (c << 4) | d;
}

/** Decode an already validated escaped key body into the arena. Returns its length. */
function decodeKey(rawOff: u32, rawLen: u32): i32 {
  if (arenaTop + rawLen > arenaCap) growArena(arenaTop + rawLen);
  const src = inBase + <usize>rawOff;
  const dst = arenaBase + <usize>arenaTop;
  let i: u32 = 0;
  let o: usize = dst;
  while (i < rawLen) {
    const c = <u32>load<u8>(src + <usize>i);
    if (c != 0x5c) {
      store<u8>(o++, <u8>c);
      i++;
      continue;
    }
    const e = <u32>load<u8>(src + <usize>i + 1);
    i += 2;
    let ch: u32 = 0;
    if (e == 0x75) {
      ch = readHex4(src + <usize>i);
      i += 4;
      if (ch >= 0xd800 && ch <= 0xdbff) {
        const lo = readHex4(src + <usize>i + 2);
        i += 6;
        ch = 0x10000 + ((ch - 0xd800) << 10) + (lo - 0xdc00);
      }
    } else if (e == 0x62) ch = 8;
    else if (e == 0x66) ch = 12;
    else if (e == 0x6e) ch = 10;
    else if (e == 0x72) ch = 13;
    else if (e == 0x74) ch = 9;
    else ch = e; // " \ /
    if (ch < 0x80) {
      store<u8>(o++, <u8>ch);
    } else if (ch < 0x800) {
      store<u8>(o++, <u8>(0xc0 | (ch >> 6)));
      store<u8>(o++, <u8>(0x80 | (ch & 0x3f)));
    } else if (ch < 0x10000) {
      store<u8>(o++, <u8>(0xe0 | (ch >> 12)));
      store<u8>(o++, <u8>(0x80 | ((ch >> 6) & 0x3f)));
      store<u8>(o++, <u8>(0x80 | (ch & 0x3f)));
    } else {
      store<u8>(o++, <u8>(0xf0 | (ch >> 18)));
      store<u8>(o++, <u8>(0x80 | ((ch >> 12) & 0x3f)));
      store<u8>(o++, <u8>(0x80 | ((ch >> 6) & 0x3f)));
      store<u8>(o++, <u8>(0x80 | (ch & 0x3f)));
    }
  }
  return <i32>(o - dst);
}

// ---------------------------------------------------------------- scanning helpers

/**
 * Validate UTF-8 in [i, r). Returns r when every sequence is complete and
 * valid, otherwise the offset of the first bad or incomplete sequence.
 */
function utf8Check(b: usize, i: u32, r: u32): u32 {
  while (i < r) {
    if (i + 8 <= r && (load<u64>(b + <usize>i) & 0x8080808080808080) == 0) {
      i += 8;
      continue;
    }
    const c = <u32>load<u8>(b + <usize>i);
    if (c < 0x80) {
      i++;
      continue;
    }
    if (c < 0xe0) {
      if (c < 0xc2 || i + 1 >= r) return i;
      if ((<u32>load<u8>(b + <usize>i + 1) & 0xc0) != 0x80) return i;
      i += 2;
    } else if (c < 0xf0) {
      if (i + 2 >= r) return i;
      const c1 = <u32>load<u8>(b + <usize>i + 1);
      const c2 = <u32>load<u8>(b + <usize>i + 2);
      const lo: u32 = c == 0xe0 ? 0xa0 : 0x80;
      const hi: u32 = c == 0xed ? 0x9f : 0xbf;
      if (c1 < lo || c1 > hi || (c2 & 0xc0) != 0x80) return i;
      i += 3;
    } else {
      if (c > 0xf4 || i + 3 >= r) return i;
      const c1 = <u32>load<u8>(b + <usize>i + 1);
      const c2 = <u32>load<u8>(b + <usize>i + 2);
      const c3 = <u32>load<u8>(b + <usize>i + 3);
      const lo: u32 = c == 0xf0 ? 0x90 : 0x80;
      const hi: u32 = c == 0xf4 ? 0x8f : 0xbf;
      if (c1 < lo || c1 > hi || (c2 & 0xc0) != 0x80 || (c3 & 0xc0) != 0x80) return i;
      i += 4;
    }
  }
  return r;
}

/** First offset >= q (and < end) that is not an ASCII digit, or end (8 bytes at a time). */
@inline function skipDigits(b: usize, q: u32, end: u32): u32 {
  if (q >= end || <u32>load<u8>(b + <usize>q) - 0x30 >= 10) return q;
  q++;
  while (q + 8 <= end) {
    const x = load<u64>(b + <usize>q);
    const nd = ((x & 0xf0f0f0f0f0f0f0f0) ^ 0x3030303030303030) | (((x + 0x0606060606060606) & 0xf0f0f0f0f0f0f0f0) ^ 0x3030303030303030);
    if (nd != 0) return q + <u32>(ctz(nd) >> 3);
    q += 8;
  }
  while (q < end && <u32>load<u8>(b + <usize>q) - 0x30 < 10) q++;
  return q;
}

/**
 * Scan a whole number starting at p when it is delimited before `end`.
 * Returns the offset just past it (numIntDigits/numExp/numExpNeg set), -1 if
 * the data ends inside it (use the byte-wise states), or -(2 + offset) for a
 * malformed number. Error offsets match the byte-wise states exactly.
 */
@inline function numberFast(b: usize, p: u32, end: u32): i64 {
  let q = p;
  if (load<u8>(b + <usize>q) == 0x2d) {
    q++;
    if (q >= end) return -1;
  }
  let c = <u32>load<u8>(b + <usize>q);
  let intDigits: i32 = 1;
  if (c == 0x30) {
    q++;
    if (q >= end) return -1;
    c = <u32>load<u8>(b + <usize>q);
    if (c - 0x30 < 10) return -2 - <i64>q;
  } else if (c - 0x31 < 9) {
    const q0 = q;
    q = skipDigits(b, q + 1, end);
    if (q >= end) return -1;
    intDigits = <i32>(q - q0);
    c = <u32>load<u8>(b + <usize>q);
  } else {
    return -2 - <i64>q;
  }
  if (c == 0x2e) {
    q++;
    if (q >= end) return -1;
    if (<u32>load<u8>(b + <usize>q) - 0x30 >= 10) return -2 - <i64>q;
    q = skipDigits(b, q + 1, end);
    if (q >= end) return -1;
    c = <u32>load<u8>(b + <usize>q);
  }
  let exp: i32 = 0;
  let neg: i32 = 0;
  if ((c | 0x20) == 0x65) {
    q++;
    if (q >= end) return -1;
    c = <u32>load<u8>(b + <usize>q);
    if (c == 0x2b || c == 0x2d) {
      neg = c == 0x2d ? 1 : 0;
      q++;
      if (q >= end) return -1;
      c = <u32>load<u8>(b + <usize>q);
    }
    if (c - 0x30 >= 10) return -2 - <i64>q;
    while (q < end) {
      const v = <u32>load<u8>(b + <usize>q) - 0x30;
      if (v >= 10) break;
      exp = exp * 10 + <i32>v;
      if (exp > 100000000) exp = 100000000;
      q++;
    }
    if (q >= end) return -1;
  }
  numIntDigits = intDigits > 100000 ? 100000 : intDigits;
  numExp = exp;
  numExpNeg = neg;
  return <i64>q;
}

/**
 * SIMD UTF-8 check of [i, r) (the "lookup" method of Keiser and Lemire: three
 * nibble tables classify each pair of adjacent bytes, plus a check that 3- and
 * 4-byte leads are followed by enough continuation bytes). Bytes past r are
 * treated as ASCII, so a sequence cut by r is an error. Returns true when the
 * span is valid UTF-8; on false the caller locates the error with utf8Check.
 */
function utf8Valid(b: usize, i: u32, r: u32): bool {
  // error classes
  // TOO_SHORT 1, TOO_LONG 2, OVERLONG_3 4, TOO_LARGE 8, SURROGATE 16,
  // OVERLONG_2 32, TOO_LARGE_1000 / OVERLONG_4 64, TWO_CONTS 128
  const t1 = i8x16(2, 2, 2, 2, 2, 2, 2, 2, -128, -128, -128, -128, 33, 1, 21, 73);
  const t2 = i8x16(-25, -93, -125, -125, -117, -53, -53, -53, -53, -53, -53, -53, -53, -37, -53, -53);
  const t3 = i8x16(1, 1, 1, 1, 1, 1, 1, 1, -26, -82, -70, -70, 1, 1, 1, 1);
  const low = i8x16.splat(0x0f);
  let prev = i8x16.splat(0);
  let err = i8x16.splat(0);
  while (i < r) {
    let v = v128.load(b + <usize>i);
    const n = r - i;
    if (n < 16) {
      // zero the bytes past r (treated as ASCII)
      const idx = i8x16(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
      v = v128.and(v, i8x16.lt_u(idx, i8x16.splat(<i8>n)));
    }
    if (i8x16.bitmask(v) == 0 && i8x16.bitmask(prev) == 0) {
      // ASCII block after ASCII: nothing can be wrong
      prev = v;
      i += 16;
      continue;
    }
    const prev1 = i8x16.shuffle(prev, v, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30);
    const sc = v128.and(
      v128.and(i8x16.swizzle(t1, i8x16.shr_u(prev1, 4)), i8x16.swizzle(t2, v128.and(prev1, low))),
      i8x16.swizzle(t3, i8x16.shr_u(v, 4)),
    );
    const prev2 = i8x16.shuffle(prev, v, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29);
    const prev3 = i8x16.shuffle(prev, v, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28);
    const must23 = v128.or(i8x16.sub_sat_u(prev2, i8x16.splat(<i8>(0xe0 - 0x80))), i8x16.sub_sat_u(prev3, i8x16.splat(<i8>(0xf0 - 0x80))));
    err = v128.or(err, v128.xor(v128.and(must23, i8x16.splat(<i8>0x80)), sc));
    prev = v;
    i += 16;
  }
  // a sequence still open at r is cut short
  const open = i8x16.sub_sat_u(prev, i8x16(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, <i8>(0xf0 - 1), <i8>(0xe0 - 1), <i8>(0xc0 - 1)));
  return !v128.any_true(v128.or(err, open));
}

/**
 * Consume consecutive complete and valid escapes starting at the backslash at
 * p. Returns the offset after the last one (p itself if the first escape is
 * incomplete or invalid: the byte-wise escape states then take over and
 * report errors at exact offsets).
 */
function escapeRun(b: usize, p: u32, end: u32): u32 {
  while (p + 1 < end && load<u8>(b + <usize>p) == 0x5c) {
    const e = <u32>load<u8>(b + <usize>p + 1);
    if (e == 0x75) {
      if (p + 6 > end) break;
      const v = hex4(b + <usize>p + 2);
      if (v < 0) break;
      if (v < 0xd800 || v > 0xdfff) {
        p += 6;
        continue;
      }
      if (v > 0xdbff || p + 12 > end || load<u16>(b + <usize>p + 6) != 0x755c) break;
      const lo = hex4(b + <usize>p + 8);
      if (lo < 0xdc00 || lo > 0xdfff) break;
      p += 12;
    } else if (e == 0x22 || e == 0x5c || e == 0x2f || e == 0x62 || e == 0x66 || e == 0x6e || e == 0x72 || e == 0x74) {
      p += 2;
    } else {
      break;
    }
  }
  return p;
}

/** The letter of a two-byte escape: " \\ / b f n r t. */
@inline function isSimpleEscape(e: u32): bool {
  return e == 0x22 || e == 0x5c || e == 0x2f || e == 0x62 || e == 0x66 || e == 0x6e || e == 0x72 || e == 0x74;
}

/** Set by scanString when it stopped at a bad or incomplete UTF-8 sequence. */
let scanIssue: i32 = 0;

/**
 * From p inside a string, find the next '"', '\\' or byte below 0x20 (or end).
 * Bytes >= 0x80 do not stop the SIMD scan; the span is then checked as UTF-8
 * and, if a sequence is bad or cut by the end, its lead offset is returned
 * with scanIssue = 1. Kept out of line so the main loop stays small.
 */
function scanString(b: usize, p: u32, end: u32): u32 {
  const p0 = p;
  let acc = i8x16.splat(0);
  let tailHigh: u32 = 0;
  scanIssue = 0;
  while (true) {
    if (p + 16 <= end) {
      const v = v128.load(b + <usize>p);
      acc = v128.or(acc, v);
      const m = i8x16.bitmask(v128.or(v128.or(i8x16.eq(v, i8x16.splat(0x22)), i8x16.eq(v, i8x16.splat(0x5c))), i8x16.lt_u(v, i8x16.splat(0x20))));
      if (m != 0) {
        p += <u32>ctz(m);
        // a complete simple escape (\n, \", ...): step over it and go on
        if (load<u8>(b + <usize>p) == 0x5c && p + 1 < end && isSimpleEscape(<u32>load<u8>(b + <usize>p + 1))) {
          p += 2;
          strHasEsc = 1;
          continue;
        }
        break;
      }
      p += 16;
    } else {
      while (p < end) {
        const t = <u32>load<u8>(b + <usize>p);
        if (t == 0x22 || t == 0x5c || t < 0x20) {
          if (t == 0x5c && p + 1 < end && isSimpleEscape(<u32>load<u8>(b + <usize>p + 1))) {
            p += 2;
            strHasEsc = 1;
            continue;
          }
          break;
        }
        tailHigh |= t;
        p++;
      }
      break;
    }
  }
  if ((i8x16.bitmask(acc) != 0 || tailHigh >= 0x80) && !utf8Valid(b, p0, p)) {
    const q = utf8Check(b, p0, p);
    if (q < p) {
      scanIssue = 1;
      return q;
    }
  }
  return p;
}

/**
 * The UTF-8 sequence at p is bad or cut by `end`. Returns -1 if it is bad
 * (given the bytes present), else sets up the ST_UTF8 registers for the rest
 * and returns 0.
 */
function utf8Tail(b: usize, p: u32, end: u32): i32 {
  const c = <u32>load<u8>(b + <usize>p);
  let need: i32 = 0;
  let lo: u32 = 0x80;
  let hi: u32 = 0xbf;
  if (c >= 0xc2 && c <= 0xdf) need = 1;
  else if (c >= 0xe0 && c <= 0xef) {
    need = 2;
    if (c == 0xe0) lo = 0xa0;
    else if (c == 0xed) hi = 0x9f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    need = 3;
    if (c == 0xf0) lo = 0x90;
    else if (c == 0xf4) hi = 0x8f;
  } else {
    return -1;
  }
  // a complete sequence here was rejected by utf8Check
  if (p + <u32>need < end) return -1;
  for (let k: u32 = 1; p + k < end; k++) {
    const ck = <u32>load<u8>(b + <usize>(p + k));
    if (k == 1 ? ck < lo || ck > hi : (ck & 0xc0) != 0x80) return -1;
  }
  const have = <i32>(end - p - 1);
  utfStart = p;
  utfNeed = need - have;
  utfLo = have == 0 ? lo : 0x80;
  utfHi = have == 0 ? hi : 0xbf;
  return 0;
}

/**
 * A member name just closed (p is past its quote): unescape it if needed,
 * check `__proto__` and duplicates. Returns 0 or an error kind.
 */
function finishKey(p: u32): i32 {
  const rawOff = strStart + 1;
  const rawLen = p - 1 - rawOff;
  let ref: u32 = rawOff;
  let len: i32 = <i32>rawLen;
  if (strHasEsc != 0) {
    const at = arenaTop;
    len = decodeKey(rawOff, rawLen);
    arenaTop = at + <u32>len;
    ref = at | ARENA_FLAG;
  }
  if (len == 9 && allowProto == 0 && bytesEqual(refPtr(ref), PROTO, 9)) return E_FORBIDDEN;
  if (!addKey(ref, len)) {
    errKeyPtr = refPtr(ref);
    errKeyLen = len;
    return E_DUPLICATE;
  }
  return 0;
}

/** Skip JSON whitespace from p (out of line: SIMD for long indentation runs). */
function skipWsSlow(b: usize, p: u32, end: u32): u32 {
  while (p < end) {
    const c = load<u8>(b + <usize>p);
    if (c == 0x20 || c == 0x0a || c == 0x0d || c == 0x09) {
      p++;
      while (p + 16 <= end) {
        const v = v128.load(b + <usize>p);
        // indentation is spaces: stop at the first non-space, and go on only
        // if that byte is other whitespace
        const m = ~i8x16.bitmask(i8x16.eq(v, i8x16.splat(0x20))) & 0xffff;
        if (m != 0) {
          p += <u32>ctz(m);
          if (load<u8>(b + <usize>p) > 0x20) return p;
          break;
        }
        p += 16;
      }
    } else {
      return p;
    }
  }
  return p;
}

/** First offset >= p (and < end) that is not JSON whitespace, or end. */
@inline function skipWs(b: usize, p: u32, end: u32): u32 {
  if (p < end) {
    const c = load<u8>(b + <usize>p);
    if (c > 0x20) return p; // no whitespace (minified text)
    // a single space, as after ':' in pretty-printed text
    if (c == 0x20 && p + 1 < end && load<u8>(b + <usize>p + 1) > 0x20) return p + 1;
  }
  return skipWsSlow(b, p, end);
}

/** Whole-literal compare: true / false / null starting with byte c at p. */
@inline function litMatch(p: usize, c: i32): bool {
  if (c == 0x74) return load<u32>(p) == 0x65757274;
  if (c == 0x6e) return load<u32>(p) == 0x6c6c756e;
  return load<u32>(p) == 0x736c6166 && load<u8>(p, 4) == 0x65;
}

// ---------------------------------------------------------------- the state machine

function fail(kind: i32, offset: u32, arg: i32): i32 {
  errKind = kind;
  errOffset = offset;
  errArg = arg;
  state = ST_ERROR;
  return R_ERROR;
}

@inline function isNumTerminal(s: i32): bool {
  return s == ST_NUM_ZERO || s == ST_NUM_INT || s == ST_NUM_FRAC || s == ST_NUM_EXP;
}

/** Check the finished number at [numStart, p) for overflow. Returns false on overflow. */
@inline function numberInRange(p: u32): bool {
  let e: i32 = numIntDigits - 1 + (numExpNeg != 0 ? -numExp : numExp);
  if (e < 308) return true;
  return numcheck(inBase + <usize>numStart, <i32>(p - numStart)) != 0;
}

function run(end: u32, final: bool): i32 {
  let s = state;
  if (s == ST_ERROR) return R_ERROR;
  let p = pos;
  const b = inBase;
  let d = depth;

  while (true) {
    if (p >= end) {
      if (!final) {
        state = s;
        pos = p;
        depth = d;
        return s == ST_DONE ? R_COMPLETE : R_NEED_MORE;
      }
      if (s == ST_DONE) {
        state = s;
        pos = p;
        depth = d;
        return R_COMPLETE;
      }
      if (isNumTerminal(s)) {
        if (!numberInRange(p)) { depth = d; pos = p; return fail(E_RANGE, numStart, 0); }
        s = d == 0 ? ST_DONE : ST_AFTER;
        continue;
      }
      if (s == ST_BOM) { depth = d; pos = p; return fail(E_BYTE, 0, 0xef); }
      depth = d;
      pos = p;
      return fail(E_EOF, end, 0);
    }

    switch (s) {
      case ST_AFTER: {
        p = skipWs(b, p, end);
        if (p >= end) break;
        const c = <i32>load<u8>(b + <usize>p);
        const lv = levels + <usize>(d * LEVEL_SIZE);
        const kind = load<u32>(lv);
        if (c == 0x2c) {
          p++;
          s = kind == KIND_OBJECT ? ST_KEY : ST_VALUE;
          // no break: the next member or value usually follows at once
        } else {
          if ((c == 0x7d && kind == KIND_OBJECT) || (c == 0x5d && kind == KIND_ARRAY)) {
            if (kind == KIND_OBJECT) {
              entTop = load<u32>(lv, 4);
              arenaTop = load<u32>(lv, 8);
            }
            p++;
            d--;
            s = d == 0 ? ST_DONE : ST_AFTER;
          } else {
            depth = d; pos = p;
            return fail(E_BYTE, p, c);
          }
          break;
        }
      }
      // a value, or (ST_OBJ_FIRST / ST_KEY) a member name
      case ST_VALUE:
      case ST_ARR_FIRST:
      case ST_OBJ_FIRST:
      case ST_KEY: {
        p = skipWs(b, p, end);
        if (p >= end) break;
        const c = <i32>load<u8>(b + <usize>p);
        if (c == 0x22) {
          strStart = p;
          strIsKey = s >= ST_OBJ_FIRST ? 1 : 0; // ST_OBJ_FIRST, ST_KEY
          strHasEsc = 0;
          p++;
          s = ST_STR;
          // no break: scan the string at once (case below)
        } else {
        if (s >= ST_OBJ_FIRST) {
          // a member name was expected
          if (c == 0x7d && s == ST_OBJ_FIRST) {
            p++;
            d--;
            s = d == 0 ? ST_DONE : ST_AFTER;
            break;
          }
          depth = d; pos = p;
          return fail(E_BYTE, p, c);
        }
        if (c == 0x7b || c == 0x5b) {
          if (d >= maxDepth) { depth = d; pos = p; return fail(E_DEPTH, p, maxDepth); }
          d++;
          const lv = levels + <usize>(d * LEVEL_SIZE);
          store<u32>(lv, c == 0x7b ? KIND_OBJECT : KIND_ARRAY);
          store<u32>(lv, entTop, 4);
          store<u32>(lv, arenaTop, 8);
          store<u32>(lv, 0, 12);
          store<u64>(lv, 0, 16);
          p++;
          s = c == 0x7b ? ST_OBJ_FIRST : ST_ARR_FIRST;
        } else if (c == 0x5d && s == ST_ARR_FIRST) {
          p++;
          d--;
          s = d == 0 ? ST_DONE : ST_AFTER;
        } else if (<u32>(c - 0x30) < 10 || c == 0x2d) {
          numStart = p;
          const r = numberFast(b, p, end);
          if (r >= 0) {
            // whole number present and delimited
            if (!numberInRange(<u32>r)) { depth = d; pos = p; return fail(E_RANGE, numStart, 0); }
            p = <u32>r;
            s = d == 0 ? ST_DONE : ST_AFTER;
          } else if (r < -1) {
            depth = d; pos = <u32>(-r - 2);
            return fail(E_NUMBER, pos, 0);
          } else {
            // the number may continue in the next chunk: byte-wise states
            numIntDigits = c == 0x2d ? 0 : 1;
            numExp = 0;
            numExpNeg = 0;
            p++;
            s = c == 0x2d ? ST_NUM_MINUS : c == 0x30 ? ST_NUM_ZERO : ST_NUM_INT;
          }
        } else if (c == 0x74 || c == 0x66 || c == 0x6e) {
          const ll: u32 = c == 0x66 ? 5 : 4;
          // fast path: whole literal available
          if (p + ll <= end && litMatch(b + <usize>p, c)) {
            p += ll;
            s = d == 0 ? ST_DONE : ST_AFTER;
          } else {
            litPtr = c == 0x74 ? LIT_TRUE : c == 0x66 ? LIT_FALSE : LIT_NULL;
            litLen = <i32>ll;
            litIdx = 1;
            p++;
            s = ST_LIT;
          }
        } else if (c == 0xef && p == 0) {
          s = ST_BOM;
        } else {
          depth = d; pos = p;
          return fail(E_BYTE, p, c);
        }
        break;
        }
      }

      case ST_STR: {
        while (true) {
          // one inline 16-byte probe: a short ASCII rest of a string (most
          // member names) ends here without a call. Stops at '"', '\\',
          // bytes below 0x20 and (signed compare) bytes >= 0x80.
          const v = v128.load(b + <usize>p);
          const m = i8x16.bitmask(v128.or(v128.or(i8x16.eq(v, i8x16.splat(0x22)), i8x16.eq(v, i8x16.splat(0x5c))), i8x16.lt_s(v, i8x16.splat(0x20))));
          const q = p + <u32>ctz(m);
          if (m != 0 && q < end && load<u8>(b + <usize>q) == 0x22) {
            p = q;
          } else {
            p = scanString(b, p, end);
            if (scanIssue != 0) {
              // bad UTF-8, or a sequence cut by the end of the data
              const r = utf8Tail(b, p, end);
              if (r < 0) { depth = d; pos = p; return fail(E_UTF8, p, 0); }
              p = end;
              s = ST_UTF8;
              break;
            }
            if (p >= end) break;
          }
          let c = <u32>load<u8>(b + <usize>p);
          if (c == 0x22) {
            p++;
            if (strIsKey == 0) {
              s = d == 0 ? ST_DONE : ST_AFTER;
              break;
            }
            depth = d;
            const k = finishKey(p);
            if (k != 0) { pos = p; return fail(k, strStart, 0); }
            // usual case: the colon follows at once
            if (p < end && load<u8>(b + <usize>p) == 0x3a) {
              p++;
              s = ST_VALUE;
            } else {
              s = ST_COLON;
            }
            break;
          }
          if (c == 0x5c) {
            strHasEsc = 1;
            // fast path: complete, valid escapes (often several in a row)
            const q = escapeRun(b, p, end);
            if (q != p) {
              p = q;
              continue;
            }
            // slow path: resumable escape states (also report the errors)
            escStart = p;
            p++;
            s = ST_ESC;
            break;
          }
          if (c < 0x20) {
            depth = d; pos = p;
            return fail(E_CONTROL, p, <i32>c);
          }
          depth = d; pos = p;
          return fail(E_UTF8, p, 0); // not reached: high bytes never stop the scan
        }
        break;
      }

      case ST_COLON: {
        p = skipWs(b, p, end);
        if (p >= end) break;
        const c = <i32>load<u8>(b + <usize>p);
        if (c != 0x3a) { depth = d; pos = p; return fail(E_BYTE, p, c); }
        p++;
        s = ST_VALUE;
        break;
      }

      case ST_DONE: {
        p = skipWs(b, p, end);
        if (p >= end) break;
        depth = d; pos = p;
        return fail(E_AFTER, p, 0);
      }

      case ST_UTF8: {
        const c = <u32>load<u8>(b + <usize>p);
        if (c < utfLo || c > utfHi) { depth = d; pos = p; return fail(E_UTF8, utfStart, 0); }
        utfLo = 0x80;
        utfHi = 0xbf;
        p++;
        if (--utfNeed == 0) s = ST_STR;
        break;
      }

      case ST_ESC: {
        const c = <u32>load<u8>(b + <usize>p);
        if (c == 0x75) {
          hexCount = 0;
          hexVal = 0;
          hexLow = 0;
          p++;
          s = ST_HEX;
        } else if (c == 0x22 || c == 0x5c || c == 0x2f || c == 0x62 || c == 0x66 || c == 0x6e || c == 0x72 || c == 0x74) {
          p++;
          s = ST_STR;
        } else {
          depth = d; pos = p;
          return fail(E_ESCAPE, p, <i32>c);
        }
        break;
      }

      case ST_HEX: {
        while (p < end && hexCount < 4) {
          const v = hexDigit(<u32>load<u8>(b + <usize>p));
          if (v < 0) { depth = d; pos = p; return fail(E_ESCAPE, p, 0); }
          hexVal = (hexVal << 4) | <u32>v;
          hexCount++;
          p++;
        }
        if (hexCount < 4) break;
        if (hexLow != 0) {
          if (hexVal < 0xdc00 || hexVal > 0xdfff) { depth = d; pos = p; return fail(E_SURROGATE, highStart, 0); }
          s = ST_STR;
        } else if (hexVal >= 0xd800 && hexVal <= 0xdbff) {
          highStart = escStart;
          s = ST_LOW_BS;
        } else if (hexVal >= 0xdc00 && hexVal <= 0xdfff) {
          depth = d; pos = p;
          return fail(E_SURROGATE, escStart, 0);
        } else {
          s = ST_STR;
        }
        break;
      }

      case ST_LOW_BS: {
        const c = load<u8>(b + <usize>p);
        if (c != 0x5c) { depth = d; pos = p; return fail(E_SURROGATE, highStart, 0); }
        escStart = p;
        p++;
        s = ST_LOW_U;
        break;
      }

      case ST_LOW_U: {
        const c = load<u8>(b + <usize>p);
        if (c != 0x75) { depth = d; pos = p; return fail(E_SURROGATE, highStart, 0); }
        hexCount = 0;
        hexVal = 0;
        hexLow = 1;
        p++;
        s = ST_HEX;
        break;
      }

      case ST_NUM_MINUS: {
        const c = <u32>load<u8>(b + <usize>p);
        if (c == 0x30) { numIntDigits = 1; p++; s = ST_NUM_ZERO; }
        else if (c - 0x31 < 9) { numIntDigits = 1; p++; s = ST_NUM_INT; }
        else { depth = d; pos = p; return fail(E_NUMBER, p, 0); }
        break;
      }

      case ST_NUM_INT:
      case ST_NUM_ZERO: {
        if (s == ST_NUM_INT) {
          let n = numIntDigits;
          while (p < end && <u32>load<u8>(b + <usize>p) - 0x30 < 10) { p++; n++; }
          numIntDigits = n > 100000 ? 100000 : n;
          if (p >= end) break;
        }
        const c = <u32>load<u8>(b + <usize>p);
        if (c == 0x2e) { p++; s = ST_NUM_DOT; }
        else if ((c | 0x20) == 0x65) { p++; s = ST_NUM_E; }
        else if (c - 0x30 < 10) { depth = d; pos = p; return fail(E_NUMBER, p, 0); }
        else {
          if (!numberInRange(p)) { depth = d; pos = p; return fail(E_RANGE, numStart, 0); }
          s = d == 0 ? ST_DONE : ST_AFTER;
        }
        break;
      }

      case ST_NUM_DOT: {
        const c = <u32>load<u8>(b + <usize>p);
        if (c - 0x30 < 10) { p++; s = ST_NUM_FRAC; }
        else { depth = d; pos = p; return fail(E_NUMBER, p, 0); }
        break;
      }

      case ST_NUM_FRAC: {
        while (p < end && <u32>load<u8>(b + <usize>p) - 0x30 < 10) p++;
        if (p >= end) break;
        const c = <u32>load<u8>(b + <usize>p);
        if ((c | 0x20) == 0x65) { p++; s = ST_NUM_E; }
        else {
          if (!numberInRange(p)) { depth = d; pos = p; return fail(E_RANGE, numStart, 0); }
          s = d == 0 ? ST_DONE : ST_AFTER;
        }
        break;
      }

      case ST_NUM_E: {
        const c = <u32>load<u8>(b + <usize>p);
        if (c == 0x2b || c == 0x2d) { numExpNeg = c == 0x2d ? 1 : 0; p++; s = ST_NUM_ESIGN; }
        else if (c - 0x30 < 10) { numExp = <i32>(c - 0x30); p++; s = ST_NUM_EXP; }
        else { depth = d; pos = p; return fail(E_NUMBER, p, 0); }
        break;
      }

      case ST_NUM_ESIGN: {
        const c = <u32>load<u8>(b + <usize>p);
        if (c - 0x30 < 10) { numExp = <i32>(c - 0x30); p++; s = ST_NUM_EXP; }
        else { depth = d; pos = p; return fail(E_NUMBER, p, 0); }
        break;
      }

      case ST_NUM_EXP: {
        let x = numExp;
        while (p < end) {
          const v = <u32>load<u8>(b + <usize>p) - 0x30;
          if (v >= 10) break;
          x = x * 10 + <i32>v;
          if (x > 100000000) x = 100000000;
          p++;
        }
        numExp = x;
        if (p >= end) break;
        if (!numberInRange(p)) { depth = d; pos = p; return fail(E_RANGE, numStart, 0); }
        s = d == 0 ? ST_DONE : ST_AFTER;
        break;
      }

      case ST_LIT: {
        while (p < end && litIdx < litLen) {
          const c = <i32>load<u8>(b + <usize>p);
          if (c != <i32>load<u8>(litPtr + <usize>litIdx)) { depth = d; pos = p; return fail(E_BYTE, p, c); }
          litIdx++;
          p++;
        }
        if (litIdx == litLen) s = d == 0 ? ST_DONE : ST_AFTER;
        break;
      }

      case ST_BOM: {
        // p == 0 here; wait until three bytes are present (or final)
        if (end >= 3 && load<u8>(b + 1) == 0xbb && load<u8>(b + 2) == 0xbf) {
          depth = d; pos = p;
          return fail(E_BOM, 0, 0);
        }
        if (end >= 3 || (end >= 2 && load<u8>(b + 1) != 0xbb)) {
          depth = d; pos = p;
          return fail(E_BYTE, 0, 0xef);
        }
        if (!final) {
          state = s; pos = p; depth = d;
          return R_NEED_MORE;
        }
        depth = d; pos = p;
        return fail(E_BYTE, 0, 0xef);
      }

      default: {
        depth = d; pos = p;
        return fail(E_EOF, p, 0);
      }
    }
  }
  return R_ERROR;
}
