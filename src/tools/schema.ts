/**
 * Argument validation with ajv, compiled once per tool at registration (the
 * built-in tools' schemas were compiled at build time: see
 * src/tools/builtin-schemas.ts).
 *
 * - The draft is picked from the schema's `$schema`: draft-07
 *   (`http://json-schema.org/draft-07/schema#`, or the same with https) uses ajv's default class,
 *   2019-09 uses `ajv/dist/2019`, and 2020-12 (also the default when `$schema`
 *   is absent) uses `ajv/dist/2020`. Any other `$schema` is refused.
 * - `ownProperties: true`: inherited names (`toString`, `constructor`, …) never
 *   count as present, so `{"required":["toString"]}` fails on `{}`.
 * - Unknown keywords are tolerated (ajv strict mode off), but a schema that does
 *   not compile (bad keyword value, unresolved `$ref`, …) throws
 *   {@link SchemaCompileError}.
 * - Errors are collected with `allErrors` and reported as at most `maxErrors`
 *   entries (default 8) `{ path, keyword, message }`, with `truncated: true` when
 *   the list was cut. `path` is a JSON Pointer to the instance location (`""` is
 *   the arguments object itself); for `required` it points at the missing
 *   member and for `additionalProperties` at the unexpected one.
 * - Messages never contain argument values: ajv is run without `verbose` and
 *   without `$data`, so its messages are built from the schema only, and the
 *   keywords whose wording could be mistaken for data (`enum`, `const`) get our
 *   own wording. Member *names* can appear in `path`; member *values* never do.
 *
 * @module
 */
import { AgentcoreError } from "../core/errors.ts";
import Ajv07 from "ajv";
import Ajv2019 from "ajv/dist/2019.js";
import Ajv2020 from "ajv/dist/2020.js";
import type { ErrorObject, Options, ValidateFunction } from "ajv";
import type { JsonSchema } from "./definition.ts";
import { PRECOMPILED } from "./parameters.validator.generated.ts";

/** One reported validation problem. */
export interface ArgumentError {
  /** JSON Pointer (RFC 6901) into the arguments object; `""` is the root. */
  path: string;
  /** The JSON Schema keyword that failed, e.g. `type`, `required`. */
  keyword: string;
  /** A short description that never contains an argument value. */
  message: string;
}

/** Outcome of validating one arguments object. */
export type ArgumentCheck = { ok: true } | { ok: false; errors: ArgumentError[]; truncated: boolean };

/** A compiled validator for one tool's arguments. */
export type ArgumentValidator = (args: Record<string, unknown>) => ArgumentCheck;

/** Thrown when a schema can't be compiled (or names an unsupported draft). */
export class SchemaCompileError extends AgentcoreError {
  readonly code: string = "SCHEMA_INVALID";
  constructor(message: string) {
    super(message);
    this.name = "SchemaCompileError";
  }
}

/** Options for {@link SchemaCompiler}. */
export interface SchemaCompilerOptions {
  /** Maximum number of errors reported per call. Default 8, at least 1. */
  maxErrors?: number;
}

export const DEFAULT_MAX_SCHEMA_ERRORS = 8;

const DRAFT_07 = new Set([
  "http://json-schema.org/draft-07/schema#",
  "http://json-schema.org/draft-07/schema",
  // the https spelling is common in the wild (MCP servers, hand-written
  // schemas); it names the same draft, so it is compiled as the http one
  "https://json-schema.org/draft-07/schema#",
  "https://json-schema.org/draft-07/schema",
]);
const DRAFT_2019 = new Set(["https://json-schema.org/draft/2019-09/schema", "https://json-schema.org/draft/2019-09/schema#"]);
const DRAFT_2020 = new Set(["https://json-schema.org/draft/2020-12/schema", "https://json-schema.org/draft/2020-12/schema#"]);

/** The one success value validators return (no allocation per call). */
export const ARGUMENTS_OK: ArgumentCheck = Object.freeze({ ok: true as const });

/**
 * Schemas that ship with agentcore (the built-in tools') and are known to be
 * valid. They are still compiled by ajv, but without validating them against
 * the draft's meta-schema: compiling the 2020-12 meta-schema costs ~70 ms,
 * which a CLI that only uses `echo` and `read_file` should not pay at every
 * start. Schemas registered by users are always meta-validated.
 */
const trustedSchemas = new WeakSet<object>();

/** Mark a built-in (frozen) schema object as known-valid. Internal. */
export function markTrustedSchema(schema: object): void {
  trustedSchemas.add(schema);
}

const AJV_OPTIONS: Options = {
  allErrors: true,
  ownProperties: true,
  strict: false,
  validateSchema: true,
  verbose: false,
  $data: false,
  logger: false,
  messages: true,
};

/** The ajv options schemas are compiled with; `trusted`: not checked against the draft's meta-schema. */
export function ajvOptions(trusted: boolean): Options {
  return trusted ? { ...AJV_OPTIONS, validateSchema: false } : AJV_OPTIONS;
}

/**
 * Validators generated at build time for the built-in tools' trusted schemas
 * (src/tools/builtin-schemas.ts), by the schema's JSON text: the same code
 * ajv would compile with {@link ajvOptions}(true), without compiling it at
 * every start.
 */
const precompiled = new Map<string, ValidateFunction>(Object.entries(PRECOMPILED as unknown as Record<string, ValidateFunction>));

type AjvInstance = { compile(schema: object): ValidateFunction };
/** A JSON Schema draft ajv compiles. */
export type Draft = "07" | "2019" | "2020";

/** The draft `schema.$schema` names; throws {@link SchemaCompileError} for one ajv does not compile here. */
export function draftOf(schema: JsonSchema): Draft {
  const dialect = schema.$schema;
  if (dialect === undefined || (typeof dialect === "string" && DRAFT_2020.has(dialect))) return "2020";
  if (typeof dialect === "string" && DRAFT_07.has(dialect)) return "07";
  if (typeof dialect === "string" && DRAFT_2019.has(dialect)) return "2019";
  throw new SchemaCompileError(`unsupported $schema ${JSON.stringify(dialect)} (use draft-07, 2019-09 or 2020-12)`);
}
type InstanceKey = `${Draft}:${"checked" | "trusted"}`;

/** Escape one JSON Pointer reference token (RFC 6901). */
export function escapePointerToken(token: string): string {
  return token.replace(/~/g, "~0").replace(/\//g, "~1");
}

function toArgumentError(e: ErrorObject): ArgumentError {
  const params = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case "required": {
      const name = String(params.missingProperty);
      return {
        path: e.instancePath + "/" + escapePointerToken(name),
        keyword: "required",
        message: `missing required property "${name}"`,
      };
    }
    case "additionalProperties":
      return {
        path: e.instancePath + "/" + escapePointerToken(String(params.additionalProperty)),
        keyword: "additionalProperties",
        message: "unexpected property",
      };
    case "unevaluatedProperties":
      return {
        path: e.instancePath + "/" + escapePointerToken(String(params.unevaluatedProperty)),
        keyword: "unevaluatedProperties",
        message: "unexpected property",
      };
    case "enum":
      return { path: e.instancePath, keyword: "enum", message: "must be one of the allowed values" };
    case "const":
      return { path: e.instancePath, keyword: "const", message: "must equal the schema's constant" };
    default:
      return { path: e.instancePath, keyword: e.keyword, message: e.message ?? "is invalid" };
  }
}

/**
 * Compiles tool parameter schemas. Each compiler has its own ajv instances, so
 * `$id`s in one registry never collide with another registry's.
 */
export class SchemaCompiler {
  readonly maxErrors: number;
  #instances: Partial<Record<InstanceKey, AjvInstance>> = {};

  constructor(options: SchemaCompilerOptions = {}) {
    const max = options.maxErrors ?? DEFAULT_MAX_SCHEMA_ERRORS;
    if (!Number.isInteger(max) || max < 1) throw new RangeError("maxErrors must be an integer >= 1");
    this.maxErrors = max;
  }

  #ajv(draft: Draft, trusted: boolean): AjvInstance {
    const key: InstanceKey = `${draft}:${trusted ? "trusted" : "checked"}`;
    let ajv = this.#instances[key];
    if (ajv === undefined) {
      const options = ajvOptions(trusted);
      ajv = draft === "07" ? new Ajv07(options) : draft === "2019" ? new Ajv2019(options) : new Ajv2020(options);
      this.#instances[key] = ajv;
    }
    return ajv;
  }

  #compileWithAjv(schema: JsonSchema, draft: Draft, trusted: boolean): ValidateFunction {
    try {
      // ajv keeps a reference to the schema; give it a private deep copy so a
      // caller mutating theirs later can't desynchronise cache and validator.
      const copy = structuredClone(schema);
      if (draft === "07") copy.$schema = "http://json-schema.org/draft-07/schema#"; // the id ajv knows
      return this.#ajv(draft, trusted).compile(copy);
    } catch (err) {
      const raw = err instanceof Error ? err.message : String(err);
      // ajv repeats identical entries (one per alternative it tried): keep one of each.
      const prefix = raw.startsWith("schema is invalid: ") ? "schema is invalid: " : "";
      const msg = prefix + [...new Set(raw.slice(prefix.length).split(", "))].join(", ");
      throw new SchemaCompileError(msg.length > 500 ? msg.slice(0, 500) + "…" : msg);
    }
  }

  /**
   * Compile `schema` into a validator. Throws {@link SchemaCompileError} when
   * the schema is not an object, names an unsupported `$schema`, or is invalid.
   * `strictProperties` additionally rejects top-level members not declared in
   * `schema.properties`.
   */
  compile(schema: JsonSchema, strictProperties = false): ArgumentValidator {
    if (typeof schema !== "object" || schema === null || Array.isArray(schema)) {
      throw new SchemaCompileError("parameters must be a JSON Schema object");
    }
    const draft = draftOf(schema);
    const trusted = trustedSchemas.has(schema);

    const validate = (trusted ? precompiled.get(JSON.stringify(schema)) : undefined) ?? this.#compileWithAjv(schema, draft, trusted);

    const max = this.maxErrors;
    const declared = strictProperties ? declaredProperties(schema) : null;

    return function validateArguments(args: Record<string, unknown>): ArgumentCheck {
      const valid = validate(args) as boolean;
      if (valid && declared === null) return ARGUMENTS_OK;
      const errors: ArgumentError[] = [];
      let total = 0;
      if (!valid) {
        const raw = validate.errors ?? [];
        total += raw.length;
        for (let i = 0; i < raw.length && errors.length < max; i++) errors.push(toArgumentError(raw[i]));
      }
      if (declared !== null) {
        for (const key of Object.keys(args)) {
          if (declared.has(key)) continue;
          total++;
          if (errors.length < max) {
            errors.push({
              path: "/" + escapePointerToken(key),
              keyword: "strict",
              message: "property not declared in the tool's parameters",
            });
          }
        }
      }
      if (total === 0) return ARGUMENTS_OK;
      return { ok: false, errors, truncated: total > errors.length };
    };
  }
}

function declaredProperties(schema: JsonSchema): Set<string> {
  const props = schema.properties;
  const set = new Set<string>();
  if (typeof props === "object" && props !== null) for (const k of Object.keys(props)) set.add(k);
  return set;
}
