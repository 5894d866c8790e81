/**
 * Public API of the dispatch runtime.
 *
 * @module
 */
export { createRuntime, DEFAULT_TIMEOUT_MS } from "./runtime.ts";
export type { Runtime, RuntimeOptions } from "./runtime.ts";
export { ERROR_CODES } from "./envelope.ts";
export type { Envelope, EnvelopeError, ErrorCode } from "./envelope.ts";
export { elapsedMs, failureEnvelope, serializeEnvelope, successEnvelope } from "./envelope_io.ts";
export { createLogger, formatLogLine, LOG_LEVEL_ENV, LOG_LEVELS, parseLogLevel, readEnv } from "./logger.ts";
export type { LogFields, Logger, LoggerOptions, LogLevel } from "./logger.ts";
export { runCall, thrownToEnvelope } from "./dispatch.ts";
export type { DispatchEnv } from "./dispatch.ts";
export type { CallHooks } from "./context.ts";

export { HistoryLog, historyMiddleware, readHistory, HistoryError, argumentsDigest, HISTORY_RECORD_VERSION } from "./history.ts";
export type { HistoryRecord, HistoryFilter } from "./history.ts";
