/**
 * Text for the chat REPL's tool lines: a short, redacted `key=value` view of
 * a call's arguments and the outcome of a finished call. Pure functions.
 *
 * @module
 */
import { redactArguments } from "../../runtime/middleware/index.ts";
import type { ToolCallResult } from "../../agent/types.ts";
import { parseStrict } from "../../core/parse.ts";

// deno-lint-ignore no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]+/g;

function oneLine(text: string, max: number): string {
  const t = text.replace(CONTROL, " ");
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
}

const plain = (x: unknown) => x === null || typeof x === "string" || typeof x === "number" || typeof x === "boolean";

/** `v` is the redacted value; `raw` the one the model sent (redaction turns nested objects into strings). */
function scalar(v: unknown, raw: unknown, max: number): string {
  if (typeof v === "string") return JSON.stringify(v.length > max ? `${v.slice(0, max - 1)}…` : v);
  if (Array.isArray(v)) {
    // A list of plain values (exec's argv, git_diff's paths) is what the user needs to see.
    if (v.length > 0 && Array.isArray(raw) && raw.every(plain) && v.every(plain)) {
      const s = JSON.stringify(v);
      return s.length > max ? `${s.slice(0, max - 1)}…` : s;
    }
    return `[${v.length} item${v.length === 1 ? "" : "s"}]`;
  }
  if (typeof v === "object" && v !== null) return "{…}";
  return String(v);
}

/**
 * `path="notes.txt" content="Hello…"`, `argv=["git","status"]`: the
 * arguments (a JSON text, as the model sent it) on one line, secrets
 * redacted, long strings and lists of plain values clipped, other lists and
 * objects counted (`[2 items]`, `{…}`), the whole clipped to `max` characters. Arguments that are not a JSON object
 * (or that the strict core refuses, such as a duplicate key) are shown clipped as they came.
 */
export function argsSummary(rawArguments: string, max = 80): string {
  // Read strictly, as the tool does: arguments it refuses (a duplicate key) are shown as they came.
  const parsed = parseStrict(rawArguments);
  if (!parsed.ok) return oneLine(rawArguments, max);
  const value: unknown = parsed.value;
  if (typeof value !== "object" || value === null || Array.isArray(value)) return oneLine(rawArguments, max);
  const shown = redactArguments(value, { maxStringLength: 200, maxDepth: 2 }) as Record<string, unknown>;
  const parts = Object.entries(shown).map(([k, v]) => `${oneLine(k, 30)}=${scalar(v, (value as Record<string, unknown>)[k], 40)}`);
  return oneLine(parts.join(" "), max);
}

/** `✓ 12 ms`, `✗ refused: …`, `✗ INVALID_ARGUMENTS: …`, `✗ cancelled`: the end of a tool line. */
export function outcomeText(result: ToolCallResult, ms: number | null): string {
  const took = ms === null ? "" : ` ${Math.max(0, Math.round(ms))} ms`;
  if (result.cancelled) return `✗ cancelled${took}`;
  let payload: Record<string, unknown> | null = null;
  try {
    const v = JSON.parse(result.messages[0]?.content ?? "null") as unknown;
    if (typeof v === "object" && v !== null && !Array.isArray(v)) payload = v as Record<string, unknown>;
  } catch {
    // plain-text result
  }
  if (payload?.status === "rejected") return `✗ refused: ${oneLine(String(payload.reason ?? result.error ?? "denied"), 100)}${took}`;
  if (result.error !== null) {
    const code = typeof payload?.code === "string" ? `${payload.code}: ` : "";
    return `✗ ${code}${oneLine(result.error, 100)}${took}`;
  }
  return `✓${took}`;
}

/** A one-line status of a finished run for the REPL, or null when it completed normally. */
export function runStatusLine(r: { status: string; stop_reason: string; error: string | null }): string | null {
  if (r.status === "completed" && (r.stop_reason === "text_response" || r.stop_reason === "tool_completion")) return null;
  // An answer cut off at the output limit can go on from where it stopped.
  const hint = r.stop_reason === "max_tokens" ? "; /continue lets the model go on" : "";
  return `[run ${r.status}: ${r.stop_reason}${r.error ? ` — ${oneLine(r.error, 160)}` : ""}${hint}]`;
}
