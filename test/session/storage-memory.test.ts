// The storage contract (test/support/storage-contract.ts) for MemorySessionStorage: one
// instance is the whole store, so "another instance" is itself.
import { MemorySessionStorage } from "../../src/session/index.ts";
import { storageContract } from "../support/storage-contract.ts";

storageContract("memory", {
  open: async () => {
    const storage = new MemorySessionStorage();
    return { storage, another: async () => storage };
  },
});
