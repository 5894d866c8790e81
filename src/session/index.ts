/**
 * Durable agent sessions: a JSONL journal with branches (harness contract §4).
 *
 * @module
 */
export * from "./types.ts";
export {
  JournalStorage,
  MemorySessionStorage,
  type AppendOptions,
  type BranchClaim,
  type BranchOptions,
  type JournalRepair,
  repairMessage,
  serializeRecord,
} from "./journal.ts";
export { JsonlSessionStorage, type JsonlSessionStorageOptions, type UnreadableJournal } from "./jsonl.ts";
export { SessionRecorder, type SessionRecorderOptions, recordDraft } from "./recorder.ts";
export { STORE_RETRY_DELAYS_MS, StoreFullError, StoreReadOnlyError, StoreUnavailableError } from "./store-errors.ts";
export { restoreSession } from "./restore.ts";
export { type BlobStore, externalizeImages, hasUnloadedImages, loadSessionImages, SessionBlobError } from "./blobs.ts";
export {
  INTERRUPTED_CALL_ERROR,
  INTERRUPTED_RUN_ERROR,
  interruptedRunDrafts,
  recoverCommand,
  type RecoverOptions,
  type RecoveredRun,
  type SessionRecovery,
  unansweredToolCalls,
} from "./recover.ts";
export { withFileLock } from "./lock.ts";
export { makeStateDir, STATE_DIR_GITIGNORE, STATE_DIR_NAME, writeStateGitignore } from "./state-dir.ts";
export {
  branchHeads,
  branchPointProblem,
  deleteSession,
  liveBranchClaims,
  liveRunMarks,
  MIN_ID_PREFIX,
  recordChain,
  requireRecords,
  resolveRecordRef,
  resolveRunRef,
  revisionRef,
  type SessionActivity,
  sessionActivity,
  type SessionDeletion,
  SessionReferenceError,
  sourceBranchFor,
} from "./manage.ts";
export { type ApprovalAnswer, decideApproval, resumeDecisions, SessionApprovalError } from "./approvals.ts";
export { PostgresSessionStorage, type PostgresSessionStorageOptions } from "./postgres/storage.ts";
export { MigrationError, MIGRATIONS, migrate, type MigrationResult } from "./postgres/migrations.ts";
export { exportSession, exportSessionBlobs, type ImportOptions, importSession, parseJournal, type SessionImport } from "./transfer.ts";
