/**
 * Public API of the strict JSON core.
 *
 * @module
 */
export { parseStrict, validateStrict, resolveLimits, type ResolvedLimits } from "./parse.ts";
export { JsonStreamValidator, type StreamStatus } from "./stream.ts";
export {
  DEFAULT_MAX_BYTES,
  DEFAULT_MAX_DEPTH,
  HARD_MAX_BYTES,
  HARD_MAX_DEPTH,
  type JsonError,
  type JsonErrorCode,
  type JsonLimits,
  type ParseResult,
} from "./errors.ts";
