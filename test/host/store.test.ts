// openStore (src/host/store.ts): what a store spec opens. The PostgreSQL
// side against a real server is in test/session/storage-postgres.test.ts and
// store-cli.test.ts; here the JSONL cases and the refusals.
import { describe, expect, test } from "bun:test";
import * as path from "node:path";
import { defaultStoreDir, isPostgresStore, openStore } from "../../src/host/store.ts";
import { JsonlSessionStorage, SessionStorageError, SessionValidationError } from "../../src/session/index.ts";
import { tmp } from "../support/tmp.ts";

describe("openStore", () => {
  test("no spec: JSONL in .agentcore/sessions under the root, or the sessionsDir given; a path: JSONL there", async () => {
    const root = tmp("agentcore-store-");
    const none = await openStore(undefined, { root });
    expect(none.kind).toBe("jsonl");
    expect((none.sessions as JsonlSessionStorage).dir).toBe(path.join(root, ".agentcore", "sessions"));
    expect(none.location).toBe(defaultStoreDir(root));
    expect(none.history).toBeNull();
    const daemon = await openStore(undefined, { root, sessionsDir: path.join(root, "daemon") });
    expect((daemon.sessions as JsonlSessionStorage).dir).toBe(path.join(root, "daemon"));
    const dir = await openStore(`  ${path.join(root, "elsewhere")}  `);
    expect(dir.kind).toBe("jsonl");
    expect(dir.sessions).toBeInstanceOf(JsonlSessionStorage);
    expect(dir.location).toBe(path.join(root, "elsewhere"));
    await dir.close();
  });

  test("an empty spec and another URL scheme are refused, saying what a store can be (credentials not shown)", async () => {
    const empty = await openStore("  ").catch((e) => e);
    expect(empty).toBeInstanceOf(SessionValidationError);
    expect(empty.message).toContain("a folder for JSONL journals or a postgres://");
    const mysql = await openStore("mysql://root:pw@db/x").catch((e) => e);
    expect(mysql).toBeInstanceOf(SessionValidationError);
    expect(mysql.message).toContain("unsupported store 'mysql://…@db/x'");
    expect(mysql.message).not.toContain("pw");
  });

  test("postgres:// and postgresql:// (any case) name PostgreSQL; an unreachable one is a SessionStorageError", async () => {
    expect(["postgres://a@b/c", "postgresql://a@b/c", "POSTGRES://a@b/c"].map(isPostgresStore)).toEqual([true, true, true]);
    expect([undefined, "./postgres", "postgres:/x", "http://x"].map(isPostgresStore)).toEqual([false, false, false, false]);
    const err = await openStore("postgresql://nobody:pw@127.0.0.1:1/none").catch((e) => e);
    expect(err).toBeInstanceOf(SessionStorageError);
    expect(err.message).toContain("postgresql://nobody:***@127.0.0.1:1/none");
  });
});
