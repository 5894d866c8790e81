/**
 * Opening a store from its spec, the one place the front ends (CLI, daemon)
 * turn the `store` setting (`--store`, `AGENTCORE_STORE`, the config's
 * `store`) into a session storage:
 *
 * - absent: JSONL journals in the default folder, `.agentcore/sessions`
 *   under the root (the daemon passes its own default as `sessionsDir`);
 * - a path: JSONL journals in that folder (relative: to the current directory);
 * - `postgres://…` or `postgresql://…`: PostgreSQL (docs/postgres.md); its
 *   migrations are applied on open unless `migrate: false`. The client
 *   (`pg`) is loaded only then: nothing else loads it.
 *
 * @module
 */
import * as path from "node:path";
import type { JournalRepair, JournalStorage } from "../session/journal.ts";
import { JsonlSessionStorage } from "../session/jsonl.ts";
import type { PostgresHistory } from "../session/postgres/history.ts";
import type { MigrationResult } from "../session/postgres/migrations.ts";
import { SessionValidationError } from "../session/types.ts";
import { isPostgresStore } from "./store-spec.ts";

/** Options of {@link openStore}. */
export interface OpenStoreOptions {
  /** The root the default folder is under (default: the current directory). */
  root?: string;
  /** The JSONL folder when no spec is given (default: `.agentcore/sessions` under the root). */
  sessionsDir?: string;
  /** PostgreSQL: apply missing migrations on open (default true). */
  migrate?: boolean;
  /** PostgreSQL: told of the migrations applied on open. */
  onMigrate?: (result: MigrationResult) => void;
  /** PostgreSQL: lease length in ms (default 15 000). */
  leaseMs?: number;
  /** JSONL: told of each torn last line cut off. */
  onRepair?: (repair: JournalRepair) => void;
}

/** An open store: its sessions, what it is, and how to let it go. */
export interface OpenedStore {
  kind: "jsonl" | "postgres";
  /** The JSONL folder, or the URL without its password. */
  location: string;
  sessions: JournalStorage;
  /** PostgreSQL: the execution history in the store (table agentcore.history); null for JSONL, whose history is the file --history names. */
  history: PostgresHistory | null;
  /** End connections (PostgreSQL); nothing to do for JSONL. */
  close(): Promise<void>;
}

/** Whether a store spec names PostgreSQL (src/host/store-spec.ts, which loads no store). */
export { isPostgresStore };

/** The JSONL folder for no spec: `.agentcore/sessions` under the root. */
export function defaultStoreDir(root?: string): string {
  return path.join(path.resolve(root ?? "."), ".agentcore", "sessions");
}

/**
 * Open the store `spec` names (see the module notes). Throws
 * SessionValidationError for an empty spec or another URL scheme, and
 * SessionStorageError when PostgreSQL cannot be reached or migrated.
 */
export async function openStore(spec: string | undefined, options: OpenStoreOptions = {}): Promise<OpenedStore> {
  if (spec === undefined) return jsonlStore(options.sessionsDir ?? defaultStoreDir(options.root), options);
  const text = spec.trim();
  if (text === "")
    throw new SessionValidationError("the store must not be empty: give a folder for JSONL journals or a postgres://USER@HOST:PORT/DB URL");
  if (isPostgresStore(text)) {
    const { PostgresSessionStorage, redactUrl } = await import("../session/postgres/storage.ts");
    const storage = await PostgresSessionStorage.open(text, {
      migrate: options.migrate,
      onMigrate: options.onMigrate,
      leaseMs: options.leaseMs,
    });
    return { kind: "postgres", location: redactUrl(text), sessions: storage, history: storage.history(), close: () => storage.close() };
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(text))
    throw new SessionValidationError(
      `unsupported store '${text.replace(/\/\/[^@/]*@/, "//…@")}': give a folder for JSONL journals, or a postgres:// (postgresql://) URL`,
    );
  return jsonlStore(text, options);
}

/** JSONL journals in folder `dir` (resolved from the current directory). */
function jsonlStore(dir: string, options: OpenStoreOptions): OpenedStore {
  const location = path.resolve(dir);
  return {
    kind: "jsonl",
    location,
    sessions: new JsonlSessionStorage(location, { onRepair: options.onRepair }),
    history: null,
    close: async () => {},
  };
}
