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
