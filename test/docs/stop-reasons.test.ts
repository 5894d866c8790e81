/** docs/agent.md's stop-reason table lists exactly STOP_REASONS, in order, each with its status. */
import { expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { RUN_STATUSES, STOP_REASONS } from "../../src/agent/types.ts";
import { REPO } from "../support/binary.ts";

test("docs/agent.md's stop-reason table lists exactly STOP_REASONS, in order, with a run status each", () => {
  const text = fs.readFileSync(path.join(REPO, "docs/agent.md"), "utf8");
  const at = text.indexOf("### Stop reasons");
  expect(at).toBeGreaterThanOrEqual(0);
  const rows = [...text.slice(at).matchAll(/^\| `([a-z_]+)` \| ([a-z]+) \|/gm)].map((m) => [m[1]!, m[2]!] as const);
  expect(rows.map((r) => r[0])).toEqual([...STOP_REASONS]);
  for (const [, status] of rows) expect(RUN_STATUSES as readonly string[]).toContain(status);
  expect(rows.find((r) => r[0] === "awaiting_approval")?.[1]).toBe("suspended");
});
