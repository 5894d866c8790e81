/**
 * Every error class declared in src/, found by reading the sources (so a new
 * class is covered without being listed here), with one constructed instance
 * each, and the public entries that export it. Shared by test/core/errors.test.ts
 * and the docs test of docs/errors.md's class table.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { AgentcoreError } from "../../src/core/errors.ts";

export const REPO = path.resolve(import.meta.dir, "../..");

/** One declared error class. */
export interface ErrorClass {
  name: string;
  /** The class it extends, as written. */
  parent: string;
  /** Its file, relative to the repository. */
  file: string;
  /** The class itself (every error class is exported from its module). */
  ctor: abstract new (
    ...args: never[]
  ) => Error;
  /** An instance made with arguments of the right shape. */
  sample: Error;
  /** The public entries that export it: `agentcore`, `agentcore/session`, … */
  entries: string[];
}

/** Classes whose `code` is the instance's own wire value instead of one per class. */
export const PER_INSTANCE: Readonly<Record<string, readonly string[] | "envelope">> = {
  ToolError: "envelope",
  HttpError: "envelope",
  SkillError: ["root_not_found", "root_not_a_folder", "unreadable", "invalid_front_matter", "invalid_field", "duplicate_name"],
};

// biome-ignore lint/suspicious/noExplicitAny: constructors of every shape
type Ctor = new (...args: any[]) => Error;

/** Constructors that take more than a message. */
const MAKE: Record<string, (C: Ctor) => Error> = {
  HttpError: (C) => new C(400, "INVALID_REQUEST", "a message"),
  SkillError: (C) => new C("root_not_found", "a message", "/skills"),
  ToolError: (C) => new C("TOOL_ERROR", "a message"),
  HistoryError: (C) => new C("/history.jsonl", "a message"),
  ModelProviderError: (C) => new C("timeout", "a message"),
  ToolRegistrationError: (C) => new C("echo", "a message"),
  McpConnectError: (C) => new C("server", "a message"),
  EventBufferOverflowError: (C) => new C(8),
  AgentRunError: (C) => new C({ status: "failed", stop_reason: "error", error: "a message" }),
  ContinueRejectedError: (C) => new C("no_run"),
  FollowUpRejectedError: (C) => new C({ control: "follow_up", status: "rejected", queue_size: 0 }),
  FollowUpDiscardedError: (C) => new C("run_ended"),
  SessionUnfinishedRunError: (C) => new C("a message", "s1", ["r1"]),
  SessionRunActiveError: (C) => new C("a message", "r1", 1),
  SessionBranchBusyError: (C) => new C("a message", "s1", "main", 1),
  SessionReferenceError: (C) => new C("a message", "r9"),
  SessionApprovalError: (C) => new C("a message", "s1", "main", "c1", [], "not_pending"),
  RunSpecError: (C) => new C("a message", "plan"),
  ModelSpecError: (C) => new C("a message", "script"),
};

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...sourceFiles(p));
    else if (e.name.endsWith(".ts")) out.push(p);
  }
  return out.sort();
}

/** The public entries: `agentcore` is src/mod.ts, `agentcore/x` is src/entries/x.ts. */
export const ENTRIES: readonly [string, string][] = [
  ["agentcore", "src/mod.ts"],
  ...fs
    .readdirSync(path.join(REPO, "src/entries"))
    .filter((f) => f.endsWith(".ts"))
    .sort()
    .map((f): [string, string] => [`agentcore/${f.slice(0, -3)}`, `src/entries/${f}`]),
];

/** Every class in src/ whose chain of `extends` ends at an `…Error` class, the base excluded. */
export async function errorClasses(): Promise<ErrorClass[]> {
  const declared = new Map<string, { parent: string; file: string }>();
  for (const file of sourceFiles(path.join(REPO, "src"))) {
    const text = fs.readFileSync(file, "utf8");
    for (const m of text.matchAll(/^(?:export )?(?:abstract )?class (\w+) extends (\w+)/gm)) {
      declared.set(m[1]!, { parent: m[2]!, file: path.relative(REPO, file) });
    }
  }
  const root = (name: string): string => {
    let n = name;
    for (let i = 0; i < 20 && declared.has(n) && n !== "AgentcoreError"; i++) n = declared.get(n)!.parent;
    return n;
  };
  const exported = new Map<unknown, string[]>();
  for (const [entry, file] of ENTRIES) {
    const mod = (await import(path.join(REPO, file))) as Record<string, unknown>;
    for (const v of Object.values(mod)) if (typeof v === "function") exported.set(v, [...(exported.get(v) ?? []), entry]);
  }
  const out: ErrorClass[] = [];
  for (const [name, { parent, file }] of declared) {
    if (name === "AgentcoreError" || !/Error$/.test(root(name))) continue;
    const mod = (await import(path.join(REPO, file))) as Record<string, unknown>;
    const ctor = mod[name] as Ctor | undefined;
    if (typeof ctor !== "function") throw new Error(`${file}: ${name} is not exported (the error tests construct every error class)`);
    const sample = MAKE[name]?.(ctor) ?? new ctor("a message");
    out.push({ name, parent, file, ctor, sample, entries: [...new Set(exported.get(ctor) ?? [])] });
  }
  return out.sort((a, b) => a.name.localeCompare(b.name));
}

export function isAgentcoreClass(c: ErrorClass): boolean {
  return c.sample instanceof AgentcoreError;
}
