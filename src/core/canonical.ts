/**
 * Canonical JSON: one text per value, whatever the key order it was written
 * in. Used for the agent's repeat-guard signatures and the history log's
 * argument digests.
 *
 * @module
 */

/**
 * Canonical JSON of a value: object keys sorted (by UTF-16 code units, as in
 * RFC 8785) at every level, no whitespace. Values that JSON cannot hold are
 * treated as `JSON.stringify` treats them (`undefined` members dropped,
 * non-finite numbers become `null`).
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") {
    const s = JSON.stringify(value);
    return s === undefined ? "null" : s;
  }
  if (Array.isArray(value)) {
    return "[" + value.map((v) => (v === undefined || typeof v === "function" ? "null" : canonicalJson(v))).join(",") + "]";
  }
  const obj = value as Record<string, unknown>;
  const parts: string[] = [];
  for (const key of Object.keys(obj).sort()) {
    const v = obj[key];
    if (v === undefined || typeof v === "function" || typeof v === "symbol") continue;
    parts.push(JSON.stringify(key) + ":" + canonicalJson(v));
  }
  return "{" + parts.join(",") + "}";
}
