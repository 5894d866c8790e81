// The storage contract (test/support/storage-contract.ts) for JsonlSessionStorage: a
// fresh sessions folder per test; another instance on the same folder is what
// another process sees; a torn write is a journal line cut short.
import * as fs from "node:fs";
import { JsonlSessionStorage } from "../../src/session/index.ts";
import { tmpPerTest } from "../support/tmp.ts";
import { storageContract } from "../support/storage-contract.ts";

const tmp = tmpPerTest("agentcore-contract-");

storageContract("jsonl", {
  open: async () => {
    const dir = tmp();
    return { storage: new JsonlSessionStorage(dir), another: async () => new JsonlSessionStorage(dir) };
  },
  tear: (storage, sessionId, fragment) => {
    const s = storage as JsonlSessionStorage;
    fs.mkdirSync(s.dir, { recursive: true });
    fs.appendFileSync(s.fileFor(sessionId), fragment);
  },
});
