/**
 * Checking a settings value (a section of the config file, or the options an
 * application passes in code) against a JSON Schema, with ajv's code compiled
 * ahead of time (`npm run schema`), and putting
 * the first problem in words that name the key: `"tools.exec.allow[2]" must
 * be a non-empty string`.
 *
 * The schemas are draft-07 (what editors complete best) and are the same ones
 * published for editors in `schema/agentcore.config.schema.json`. Two
 * annotation keywords of our own shape the messages, and editors ignore them:
 *
 * - `x-message`: the words for any failure at that schema node (a pattern's
 *   meaning, a `not` that forbids one value);
 * - `x-unit`: the unit named after an integer range (`(milliseconds)`).
 *
 * The problem reported is the one earliest in the document (by the order its
 * keys were written), not the first in the schema's order, and it carries the
 * path to the value, so the config loader can point at its line and column.
 *
 * @module
 */
import type { ErrorObject } from "ajv";
import { AgentcoreError } from "../core/errors.ts";

/** A draft-07 schema object (kept loose: these are plain JSON values). */
export type SettingsSchema = { readonly [key: string]: unknown };

/** Where a problem is, and what it is. */
export interface SettingsProblem {
  /** Keys and indexes from the checked value to the offending one. */
  path: (string | number)[];
  /** The problem is the key itself (an unknown key), not its value. */
  atKey: boolean;
  /** The words, with the path shown as `root.key[index]`. */
  message: string;
}

/**
 * A settings section's problem, with where it is: the family of the
 * sections' errors (ToolsConfigError, PolicyConfigError, McpConfigError),
 * whose `path` lets the config loader point at the line and column.
 */
export class SettingsValueError extends AgentcoreError {
  readonly code: string = "SETTINGS_INVALID";
  override name = "SettingsValueError";
  /**
   * @param path keys and indexes from the section to the offending value
   * @param atKey the problem is that key's name itself (an unknown key)
   */
  constructor(
    message: string,
    readonly path: (string | number)[] = [],
    readonly atKey = false,
  ) {
    super(message);
  }
}

/**
 * A compiled check of one schema: ajv's validation function (the standalone
 * code `npm run schema` generates beside each section's parser, compiled
 * with `allErrors`, `ownProperties` and `verbose`, so each error carries the
 * schema node the words are made from).
 */
export type SettingsValidator = ((value: unknown) => boolean) & { errors?: ErrorObject[] | null };

/** `tools.exec.allow[2]` for `["exec", "allow", 2]` under `tools`. */
export function showPath(root: string, path: readonly (string | number)[]): string {
  let out = root;
  for (const p of path) out += typeof p === "number" ? `[${p}]` : out === "" ? p : `.${p}`;
  return out;
}

/** JSON Pointer segments to keys (numbers where the value is an array). */
function pointerPath(pointer: string, value: unknown): (string | number)[] {
  if (pointer === "") return [];
  const out: (string | number)[] = [];
  let at: unknown = value;
  for (const raw of pointer.slice(1).split("/")) {
    const key = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    if (Array.isArray(at)) {
      out.push(Number(key));
      at = at[Number(key)];
    } else {
      out.push(key);
      at = typeof at === "object" && at !== null ? (at as Record<string, unknown>)[key] : undefined;
    }
  }
  return out;
}

function typeWords(t: unknown, schema: Record<string, unknown>): string {
  const types = Array.isArray(t) ? (t as string[]) : [String(t)];
  const parts: string[] = [];
  for (const x of types) {
    if (x === "integer") parts.push(schema.minimum === 1 && schema.maximum === undefined ? "a positive integer" : "an integer");
    else if (x === "string") parts.push(schema.minLength === 1 ? "a non-empty string" : "a string");
    else if (x === "object") {
      const values = schema.additionalProperties as { type?: unknown } | undefined;
      parts.push(values?.type === "string" ? "an object of strings" : "an object");
    } else if (x === "array")
      parts.push((schema.items as { type?: unknown } | undefined)?.type === "string" ? "an array of strings" : "an array");
    else if (x === "boolean") parts.push("true", "false");
    else parts.push(`a ${x}`);
  }
  return parts.length === 1 ? parts[0]! : `${parts.slice(0, -1).join(", ")} or ${parts[parts.length - 1]}`;
}

function listWords(values: readonly unknown[]): string {
  return values.map((v) => (typeof v === "string" ? v : JSON.stringify(v))).join(", ");
}

/** The words for one ajv error, without the path. */
function words(e: ErrorObject): { text: string; atKey: boolean; extra: string | null } {
  const parent = (e.parentSchema ?? {}) as Record<string, unknown>;
  const custom = typeof parent["x-message"] === "string" ? (parent["x-message"] as string) : null;
  const unit = typeof parent["x-unit"] === "string" ? ` (${parent["x-unit"]})` : "";
  switch (e.keyword) {
    case "additionalProperties": {
      const known = Object.keys((parent.properties as object | undefined) ?? {});
      return { text: "", atKey: true, extra: `(known: ${known.join(", ")})` };
    }
    case "required": {
      const missing = (e.params as { missingProperty: string }).missingProperty;
      const props = (parent.properties ?? {}) as Record<string, { description?: string }>;
      const why = props[missing]?.description;
      return { text: `is required${why ? ` (${why.replace(/\.$/, "")})` : ""}`, atKey: false, extra: missing };
    }
    case "propertyNames":
      return { text: "", atKey: true, extra: null };
    default:
      break;
  }
  if (custom !== null) return { text: custom, atKey: false, extra: null };
  switch (e.keyword) {
    case "type":
    case "minimum":
    case "maximum":
    case "minLength": {
      const t = parent.type ?? (e.keyword === "minLength" ? "string" : "integer");
      if ((t === "integer" || t === "number") && (parent.maximum !== undefined || (parent.minimum !== undefined && parent.minimum !== 1))) {
        if (parent.maximum === undefined)
          return { text: `must be an integer of at least ${parent.minimum}${unit}`, atKey: false, extra: null };
        return { text: `must be an integer from ${parent.minimum ?? 0} to ${parent.maximum}${unit}`, atKey: false, extra: null };
      }
      return { text: `must be ${typeWords(t, parent)}`, atKey: false, extra: null };
    }
    case "enum":
      return { text: `must be one of ${listWords(parent.enum as unknown[])}`, atKey: false, extra: null };
    case "const":
      return { text: `must be ${JSON.stringify(parent.const)}`, atKey: false, extra: null };
    case "pattern":
      return { text: `does not match the pattern ${parent.pattern}`, atKey: false, extra: null };
    case "minItems":
      return { text: `must have at least ${parent.minItems} item(s)`, atKey: false, extra: null };
    default:
      return { text: `is not valid (${e.keyword})`, atKey: false, extra: null };
  }
}

/** The words for a failing key name under `propertyNames` (the custom message of that schema). */
function keyNameWords(e: ErrorObject, errors: readonly ErrorObject[]): string {
  const schema = (e.schema ?? {}) as Record<string, unknown>;
  if (typeof schema["x-message"] === "string") return schema["x-message"] as string;
  const inner = errors.find((x) => x.propertyName !== undefined && x.instancePath === e.instancePath && x !== e);
  return inner !== undefined ? `is not an allowed name (${inner.keyword})` : "is not an allowed name";
}

/**
 * Check `value` with `validate` (a section's generated validator); the problem earliest in the value (keys in
 * the order they were written), or null when it is valid. `root` names the
 * value in messages (`tools`, `policy`, `""` for the whole file).
 */
export function checkSettings(validate: SettingsValidator, value: unknown, root: string): SettingsProblem | null {
  if (validate(value)) return null;
  const errors = validate.errors ?? [];
  const problems: SettingsProblem[] = [];
  for (const e of errors) {
    if (e.propertyName !== undefined && e.keyword !== "propertyNames") continue; // reported through propertyNames
    if (e.keyword === "if" || e.keyword === "anyOf" || e.keyword === "oneOf") continue;
    const base = pointerPath(e.instancePath, value);
    const w = words(e);
    if (e.keyword === "additionalProperties") {
      const key = (e.params as { additionalProperty: string }).additionalProperty;
      const path = [...base, key];
      problems.push({ path, atKey: true, message: `unknown key "${showPath(root, path)}" ${w.extra}` });
    } else if (e.keyword === "required") {
      problems.push({ path: base, atKey: false, message: `"${showPath(root, [...base, w.extra!])}" ${w.text}` });
    } else if (e.keyword === "propertyNames") {
      const key = (e.params as { propertyName: string }).propertyName;
      const path = [...base, key];
      problems.push({ path, atKey: true, message: `"${showPath(root, path)}": ${keyNameWords(e, errors)}` });
    } else {
      problems.push({ path: base, atKey: false, message: `"${showPath(root, base)}" ${w.text}` });
    }
  }
  if (problems.length === 0) return { path: [], atKey: false, message: `"${root}" is not valid` };
  return earliest(problems, value);
}

/** The problem whose path comes first in the value's own key order (a deeper one wins over its container). */
function earliest(problems: SettingsProblem[], value: unknown): SettingsProblem {
  const rank = (p: SettingsProblem): number[] => {
    const out: number[] = [];
    let at: unknown = value;
    for (const k of p.path) {
      if (Array.isArray(at)) {
        out.push(k as number);
        at = at[k as number];
      } else if (typeof at === "object" && at !== null) {
        const keys = Object.keys(at);
        const i = keys.indexOf(String(k));
        out.push(i === -1 ? keys.length : i);
        at = (at as Record<string, unknown>)[String(k)];
      } else out.push(0);
    }
    return out;
  };
  const cmp = (a: number[], b: number[]): number => {
    for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
    return b.length - a.length; // the deeper (more precise) first
  };
  return problems.map((p) => ({ p, r: rank(p) })).sort((a, b) => cmp(a.r, b.r))[0]!.p;
}
