/**
 * read_file's error details are what docs/errors.md's error-code table says they
 * are: every key a real envelope carries is named in the code's row.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { createRuntime } from "../../src/mod.ts";
import { createLogger } from "../../src/core/logger.ts";
import { tmp } from "../support/tmp.ts";

let root: string;

beforeAll(() => {
  root = tmp("agentcore-rfd-");
  fs.mkdirSync(path.join(root, "dir"));
  fs.writeFileSync(path.join(root, "big.txt"), "x".repeat(100));
  fs.writeFileSync(path.join(root, "latin1.txt"), Buffer.from([0x63, 0x61, 0x66, 0xe9]));
  fs.symlinkSync("big.txt", path.join(root, "link"));
});

afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

function readmeRow(code: string): string {
  const doc = fs.readFileSync(path.resolve(import.meta.dir, "../../docs/errors.md"), "utf8");
  const row = doc.split("\n").find((l) => l.startsWith(`| \`${code}\` |`));
  expect(row).toBeDefined();
  return row!.split("|")[3]!;
}

test.each([
  ["../x", undefined, "PATH_TRAVERSAL"],
  ["link", undefined, "PATH_SYMLINK"],
  ["nope/x.txt", undefined, "NOT_FOUND"],
  ["dir", undefined, "NOT_A_FILE"],
  ["big.txt", 10, "FILE_TOO_LARGE"],
  ["latin1.txt", undefined, "FILE_NOT_UTF8"],
])("read_file %j (max_bytes %j) → %s, with the details its docs/errors.md row names", async (p, maxBytes, code) => {
  const rt = createRuntime({ root, logger: createLogger({ level: "error", sink: () => {} }) });
  const args = maxBytes === undefined ? { path: p } : { path: p, max_bytes: maxBytes };
  const env = await rt.dispatch(JSON.stringify({ id: "r", tool: "read_file", arguments: args }));
  expect(env.error?.code as string | undefined).toBe(code);
  const keys = Object.keys(env.error!.details);
  expect(keys.length).toBeGreaterThan(0);
  const documented = readmeRow(code);
  for (const k of keys) expect(documented).toContain(k);
});
