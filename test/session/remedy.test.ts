// Session errors carry their remedy as data and word it through the
// installed wording: the library's own calls by default, the CLI's
// `agentcore sessions …` commands once the CLI installs its wording.
import { afterEach, describe, expect, test } from "bun:test";
import { CLI_REMEDY_WORDING } from "../../src/cli/remedy.ts";
import { busyMessage } from "../../src/session/journal.ts";
import { LIBRARY_REMEDY_WORDING, setRemedyWording, wordRemedy, type SessionRemedy } from "../../src/session/remedy.ts";
import { recoverCommand } from "../../src/session/recover.ts";
import { SessionBranchBusyError, SessionUnfinishedRunError } from "../../src/session/types.ts";

afterEach(() => {
  setRemedyWording(null);
});

const REMEDIES: SessionRemedy[] = [
  { action: "recover", session_id: "s1", branch_id: "main", force: false },
  { action: "recover", session_id: "it's mine", branch_id: "side b", force: true },
  { action: "tree", session_id: "s1" },
  { action: "show", session_id: "s1" },
  { action: "list" },
];

describe("session remedies", () => {
  test("the library's wording names its own calls, no CLI syntax", () => {
    const worded = REMEDIES.map((r) => wordRemedy(r));
    expect(worded).toEqual([
      'JournalStorage.recoverRuns("s1")',
      'JournalStorage.recoverRuns("it\'s mine", { branch: "side b", force: true })',
      'JournalStorage.records("s1")',
      'JournalStorage.records("s1")',
      "JournalStorage.listSessions()",
    ]);
    for (const w of worded) expect(w).not.toContain("agentcore");
    expect(recoverCommand("s1", "side")).toBe('JournalStorage.recoverRuns("s1", { branch: "side" })');
    expect(busyMessage("s1", "main", 42, null)).toEndWith('clear the mark with: JournalStorage.recoverRuns("s1", { force: true })');
  });

  test("the CLI's wording gives the commands as today, shell-quoted", () => {
    setRemedyWording(CLI_REMEDY_WORDING);
    expect(REMEDIES.map((r) => wordRemedy(r))).toEqual([
      "agentcore sessions recover s1",
      "agentcore sessions recover 'it'\\''s mine' --branch 'side b' --force",
      "agentcore sessions tree s1",
      "agentcore sessions show s1 (--branch B for another branch)",
      "agentcore sessions list",
    ]);
    expect(busyMessage("s1", "side", 42, "agentcore agent")).toEndWith(
      "clear the mark with: agentcore sessions recover s1 --branch side --force",
    );
    expect(setRemedyWording(null)).toBe(CLI_REMEDY_WORDING);
    expect(wordRemedy(REMEDIES[0]!)).toBe(LIBRARY_REMEDY_WORDING(REMEDIES[0]!));
  });

  test("the errors that name a recovery carry it structured", () => {
    expect(new SessionUnfinishedRunError("m", "s1", ["r1"], "side").remedy).toEqual({
      action: "recover",
      session_id: "s1",
      branch_id: "side",
      force: false,
    });
    expect(new SessionUnfinishedRunError("m", "s1", ["r1"]).remedy).toEqual({
      action: "recover",
      session_id: "s1",
      branch_id: "main",
      force: false,
    });
    expect(new SessionBranchBusyError("m", "s1", "main", 42).remedy).toEqual({
      action: "recover",
      session_id: "s1",
      branch_id: "main",
      force: true,
    });
  });
});
