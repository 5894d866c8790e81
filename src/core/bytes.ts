/**
 * Small byte-array helpers shared by the CLI and the runtime.
 *
 * @module
 */

/** One array holding `parts` end to end. */
export function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  let total = 0;
  for (const p of parts) total += p.length;
  const out = new Uint8Array(total);
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}
