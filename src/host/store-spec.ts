/**
 * What a store spec names, without loading any store: host/runtime.ts asks
 * this at every CLI start, and the stores themselves (JSONL, PostgreSQL) are
 * loaded only when one is opened (src/host/store.ts).
 *
 * @module
 */

/** Whether a store spec names PostgreSQL. */
export function isPostgresStore(spec: string | undefined): boolean {
  return spec !== undefined && /^postgres(ql)?:\/\//i.test(spec.trim());
}
