/**
 * Project instructions (src/host/instructions.ts) on real folders: the
 * AGENTS.md files of the root and of each folder down to the working folder
 * go into the system prompt root first, each marked with its path; the
 * 32 KiB limit cuts with a note; a symlink out of the root, a FIFO and
 * invalid UTF-8 are refused by name; and through buildAgent the model's
 * request carries the text, the run's first event and the session journal
 * name the files by path and sha256 (never their text), and
 * `projectInstructions: false` leaves them out.
 */
import { describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, symlinkSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { buildAgent, RunSpecError } from "../../src/host/agent.ts";
import { InstructionsError, instructionFolders, loadProjectInstructions, MAX_INSTRUCTIONS_BYTES } from "../../src/host/instructions.ts";
import type { AgentEvent } from "../../src/context/events.ts";
import { ScriptedModel } from "../../src/providers/scripted.ts";
import { createRuntime } from "../../src/runtime/runtime.ts";
import { JsonlSessionStorage } from "../../src/session/jsonl.ts";
import { tmpPerTest } from "../support/tmp.ts";

const dir = tmpPerTest("agentcore-instructions-");
const sha = (text: string) => createHash("sha256").update(Buffer.from(text, "utf8")).digest("hex");

/** A workspace: root/AGENTS.md, root/pkg/AGENTS.md, root/pkg/app/AGENTS.md, and the folder pkg/app/src. */
function workspace(): string {
  const root = join(dir(), "ws");
  mkdirSync(join(root, "pkg", "app", "src"), { recursive: true });
  writeFileSync(join(root, "AGENTS.md"), "Root rule: use tabs.\n");
  writeFileSync(join(root, "pkg", "AGENTS.md"), "Package rule: no default exports.\n");
  writeFileSync(join(root, "pkg", "app", "AGENTS.md"), "App rule: run `make app` to test.\n");
  return root;
}

describe("loadProjectInstructions", () => {
  test("root, sub folder and working folder: root first, nearest last, each marked with its path", () => {
    const root = workspace();
    const got = loadProjectInstructions(root, join(root, "pkg", "app", "src"));
    expect(got.files.map((f) => f.path)).toEqual(["AGENTS.md", "pkg/AGENTS.md", "pkg/app/AGENTS.md"]);
    expect(got.files[1]).toEqual({ path: "pkg/AGENTS.md", bytes: 34, sha256: sha("Package rule: no default exports.\n") });
    const at = (s: string) => got.text.indexOf(s);
    expect(at("==> AGENTS.md <==\nRoot rule: use tabs.")).toBeGreaterThan(-1);
    expect(at("==> pkg/AGENTS.md <==\nPackage rule")).toBeGreaterThan(at("Root rule"));
    expect(at("==> pkg/app/AGENTS.md <==\nApp rule")).toBeGreaterThan(at("Package rule"));
    // Only the folders down to the working one: a sibling's file is not read.
    mkdirSync(join(root, "other"));
    writeFileSync(join(root, "other", "AGENTS.md"), "Other rule.\n");
    expect(loadProjectInstructions(root, join(root, "pkg")).files.map((f) => f.path)).toEqual(["AGENTS.md", "pkg/AGENTS.md"]);
  });

  test("a working folder outside the root reads the root's file only; no files is an empty part", () => {
    const root = workspace();
    const outside = join(dir(), "elsewhere");
    mkdirSync(outside);
    writeFileSync(join(outside, "AGENTS.md"), "Outside rule.\n");
    expect(instructionFolders(root, outside)).toEqual([""]);
    expect(loadProjectInstructions(root, outside).files.map((f) => f.path)).toEqual(["AGENTS.md"]);
    const bare = join(dir(), "bare");
    mkdirSync(bare);
    expect(loadProjectInstructions(bare, bare)).toEqual({ text: "", files: [] });
  });

  test("past the 32 KiB limit the text is cut on a character boundary with a note; later files are named but left out", () => {
    const root = join(dir(), "big");
    mkdirSync(join(root, "sub"), { recursive: true });
    // 3-byte characters, so the limit falls inside one
    const big = "é€".repeat(7000); // 2 + 3 bytes each: 35000 bytes
    writeFileSync(join(root, "AGENTS.md"), big);
    writeFileSync(join(root, "sub", "AGENTS.md"), "Sub rule.\n");
    const got = loadProjectInstructions(root, join(root, "sub"));
    expect(got.files).toEqual([
      { path: "AGENTS.md", bytes: 35000, sha256: sha(big), truncated: true },
      { path: "sub/AGENTS.md", bytes: 10, sha256: sha("Sub rule.\n"), truncated: true },
    ]);
    expect(got.text).not.toContain("\uFFFD");
    expect(got.text).toContain(
      `[truncated: the project instructions' limit of ${MAX_INSTRUCTIONS_BYTES} bytes was reached; 32767 of 35000 bytes`,
    );
    expect(got.text).toContain("==> sub/AGENTS.md <==\n[left out: the project instructions' limit");
    expect(got.text).not.toContain("Sub rule.");
    const shown = got.text.slice(got.text.indexOf("==> AGENTS.md <==\n") + 18, got.text.indexOf("\n[truncated"));
    expect(Buffer.byteLength(shown)).toBeLessThanOrEqual(MAX_INSTRUCTIONS_BYTES);
    expect(big.startsWith(shown)).toBe(true);
  });

  test("a symlink to a file outside the root is refused, naming the file; one inside the root is read", () => {
    const root = workspace();
    const secret = join(dir(), "secret.txt");
    writeFileSync(secret, "TOP SECRET\n");
    unlinkSync(join(root, "pkg", "AGENTS.md"));
    symlinkSync(secret, join(root, "pkg", "AGENTS.md"));
    let err: unknown;
    try {
      loadProjectInstructions(root, join(root, "pkg"));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(InstructionsError);
    expect((err as InstructionsError).path).toBe("pkg/AGENTS.md");
    expect((err as InstructionsError).reason).toBe("OUTSIDE_ROOT");
    expect((err as Error).message).toContain("pkg/AGENTS.md: a symlink to a file outside the workspace root");
    expect((err as Error).message).not.toContain("TOP SECRET");

    const inside = join(dir(), "inside");
    mkdirSync(join(inside, "docs"), { recursive: true });
    writeFileSync(join(inside, "docs", "rules.md"), "Shared rule.\n");
    symlinkSync("docs/rules.md", join(inside, "AGENTS.md"));
    expect(loadProjectInstructions(inside).files).toEqual([{ path: "AGENTS.md", bytes: 13, sha256: sha("Shared rule.\n") }]);
  });

  test("a FIFO, a folder and invalid UTF-8 are refused by name, without blocking", () => {
    const root = join(dir(), "odd");
    mkdirSync(join(root, "a", "b"), { recursive: true });
    const mk = Bun.spawnSync(["mkfifo", join(root, "AGENTS.md")]);
    expect(mk.exitCode).toBe(0);
    expect(() => loadProjectInstructions(root)).toThrow("AGENTS.md: not a regular file");
    const utf = join(dir(), "utf");
    mkdirSync(utf);
    writeFileSync(join(utf, "AGENTS.md"), Buffer.from([0x61, 0xff, 0xfe, 0x62]));
    expect(() => loadProjectInstructions(utf)).toThrow("AGENTS.md: not valid UTF-8");
    const folder = join(dir(), "folder");
    mkdirSync(join(folder, "AGENTS.md"), { recursive: true });
    expect(() => loadProjectInstructions(folder)).toThrow("AGENTS.md: not a regular file");
  });
});

describe("through buildAgent", () => {
  async function runOnce(root: string, spec: { projectInstructions?: boolean }, cwd?: string) {
    const runtime = createRuntime({ root });
    const model = new ScriptedModel([{ content: "done" }]);
    const storage = new JsonlSessionStorage(join(dir(), "sessions"));
    const events: AgentEvent[] = [];
    const { agent } = await buildAgent({ system: "Be brief.", plan: false, session: { id: "s1" }, ...spec }, runtime, {
      model,
      storage,
      sinks: [(e: AgentEvent) => void events.push(e)],
      ...(cwd !== undefined ? { cwd } : {}),
    });
    await agent.run("go");
    await agent.shutdown();
    const records = readFileSync(storage.fileFor("s1"), "utf8")
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l) as { type: string; data: Record<string, unknown> });
    return { model, events, records, storage };
  }

  test("the request's system message carries the text; the first event and the journal name the files by hash, not text", async () => {
    const root = workspace();
    const { model, events, records, storage } = await runOnce(root, {}, join(root, "pkg"));
    const system = model.requests[0]!.messages[0]!;
    expect(system.role).toBe("system");
    expect(system.content).toContain("Be brief.");
    expect(system.content).toContain("==> AGENTS.md <==\nRoot rule: use tabs.");
    expect(system.content).toContain("==> pkg/AGENTS.md <==\nPackage rule: no default exports.");
    expect(system.content).not.toContain("App rule");
    const named = [
      { path: "AGENTS.md", bytes: 21, sha256: sha("Root rule: use tabs.\n") },
      { path: "pkg/AGENTS.md", bytes: 34, sha256: sha("Package rule: no default exports.\n") },
    ];
    const first = events[0]!;
    expect(first.kind).toBe("agent_started");
    expect((first as { instructions?: unknown }).instructions).toEqual(named);
    const started = records.find((r) => r.type === "run_started")!;
    expect(started.data.instructions).toEqual(named);
    expect(JSON.stringify(records)).not.toContain("Root rule");
    // The journal with the new field still reads back as a session.
    const checkout = await storage.checkout("s1", "main");
    expect(checkout!.session.runs.length).toBe(1);
  });

  test("projectInstructions: false leaves the files out of the prompt, the event and the journal", async () => {
    const root = workspace();
    const { model, events, records } = await runOnce(root, { projectInstructions: false }, join(root, "pkg"));
    expect(model.requests[0]!.messages[0]!.content).toBe("Be brief.");
    expect("instructions" in events.find((e) => e.kind === "agent_started")!).toBe(false);
    expect("instructions" in records.find((r) => r.type === "run_started")!.data).toBe(false);
  });

  test("a refused file stops the build with a RunSpecError naming it", async () => {
    const root = workspace();
    symlinkSync("/etc/hostname", join(root, "pkg", "app", "src", "AGENTS.md"));
    const runtime = createRuntime({ root });
    const err = await buildAgent({ plan: false }, runtime, { model: new ScriptedModel([]), cwd: join(root, "pkg", "app", "src") }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(RunSpecError);
    expect((err as RunSpecError).part).toBe("instructions");
    expect((err as Error).message).toBe(
      "project instructions: pkg/app/src/AGENTS.md: a symlink to a file outside the workspace root (/etc/hostname); refused",
    );
  });

  test("a journal's run_started with malformed instructions is refused on reading, naming the field", async () => {
    const root = workspace();
    const { storage } = await runOnce(root, {});
    const file = storage.fileFor("s1");
    const lines = readFileSync(file, "utf8").trimEnd().split("\n");
    const i = lines.findIndex((l) => l.includes('"run_started"'));
    const record = JSON.parse(lines[i]!) as { data: Record<string, unknown> };
    record.data.instructions = [{ path: "AGENTS.md", bytes: -1, sha256: "x" }];
    lines[i] = JSON.stringify(record);
    writeFileSync(file, lines.join("\n") + "\n");
    const err = await storage.checkout("s1", "main").then(
      () => null,
      (e: unknown) => e,
    );
    expect((err as Error).message).toContain("data.instructions must be a list of instruction files");
  });
});
