/**
 * Public API of the dispatch runtime.
 *
 * @module
 */
export { createRuntime, DEFAULT_TIMEOUT_MS } from "./runtime.ts";
export type { Runtime, RuntimeOptions } from "./runtime.ts";
export { ERROR_CODES } from "../core/envelope.ts";
export type { Envelope, EnvelopeError, ErrorCode } from "../core/envelope.ts";
export { elapsedMs, failureEnvelope, serializeEnvelope, successEnvelope } from "./envelope_io.ts";
export { createLogger, formatLogLine, LOG_LEVEL_ENV, LOG_LEVELS, parseLogLevel, readEnv } from "../core/logger.ts";
export type { LogFields, Logger, LoggerOptions, LogLevel } from "../core/logger.ts";
export { runCall, thrownToEnvelope } from "./dispatch.ts";
export type { DispatchEnv } from "./dispatch.ts";
export type { CallHooks } from "./context.ts";

export { HistoryLog, historyMiddleware, readHistory, HistoryError, argumentsDigest, HISTORY_RECORD_VERSION } from "./history.ts";
export type { HistoryRecord, HistoryFilter } from "./history.ts";
