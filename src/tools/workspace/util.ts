/**
 * Small helpers shared by the workspace tools.
 *
 * @module
 */

/** Freeze an object graph in place and return it (for constant schemas). */
export function deepFreeze<T>(v: T): T {
  if (typeof v === "object" && v !== null && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const x of Object.values(v)) deepFreeze(x);
  }
  return v;
}

/**
 * Check a timeout in milliseconds: a positive integer no larger than a timer
 * can hold (2^31-1; a larger one makes `setTimeout` fire at once).
 */
export function checkTimeoutMs(value: number, what: string): number {
  if (!Number.isSafeInteger(value) || value < 1 || value > 2_147_483_647)
    throw new RangeError(`${what} must be a positive integer of at most 2147483647 (ms)`);
  return value;
}
