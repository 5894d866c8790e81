/**
 * The skills index message, mention matching and the active-skill message.
 */
import { afterAll, describe, expect, test } from "bun:test";
import fc from "fast-check";
import { rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import {
  activeSkillMessage,
  discoverSkills,
  findSkillMention,
  latestUserText,
  mentionsSkill,
  NO_DESCRIPTION,
  skillIndexMessage,
  SkillError,
  withSkillMessages,
} from "../../src/skills/index.ts";
import { REPO } from "../support/binary.ts";
import { cleanupRoots, skillsRoot, tempRoot } from "../support/skills.ts";

afterAll(cleanupRoots);

const md = (front: string, body = "Body.\n") => `---\n${front}\n---\n${body}`;

describe("index message", () => {
  test("names, descriptions (or the default) and absolute SKILL.md locations, in discovery order", () => {
    const root = skillsRoot({
      "b-skill/SKILL.md": md("description: |\n  Two\n  lines"),
      "a-skill/SKILL.md": md("name: first"),
    });
    const c = discoverSkills(root);
    const m = skillIndexMessage(c)!;
    expect(m.role).toBe("system");
    const lines = (m.content as string).split("\n");
    const at = lines.indexOf("Available skills:");
    expect(at).toBeGreaterThan(0);
    expect(lines.slice(at + 1)).toEqual([
      "- name: first",
      `  description: ${NO_DESCRIPTION}`,
      `  location: ${c.get("first")!.path}`,
      "- name: b-skill",
      "  description: Two lines",
      `  location: ${c.get("b-skill")!.path}`,
    ]);
    expect(NO_DESCRIPTION).toBe("No description provided.");
    expect(c.get("first")!.path.startsWith("/")).toBe(true);
    // How to use skills comes first.
    expect(lines.slice(0, at).join(" ")).toContain("$name or skill:name");
    // Built once per catalog.
    expect(skillIndexMessage(c)).toBe(m);
  });

  test("no index message without skills", () => {
    expect(skillIndexMessage(discoverSkills(tempRoot()))).toBeNull();
  });

  test("the example skills", () => {
    const c = discoverSkills(join(REPO, "examples", "skills"));
    expect(c.skills.map((s) => s.name)).toEqual(["commit-message", "release-notes"]);
    expect(skillIndexMessage(c)!.content).toContain(`  location: ${resolve(REPO, "examples/skills/release-notes/SKILL.md")}`);
  });
});

describe("mentions", () => {
  const c = discoverSkills(skillsRoot({ "release-notes/SKILL.md": md("name: release-notes"), "review/SKILL.md": md("name: review") }));
  const notes = c.get("release-notes")!;

  test.each([
    ["$release-notes", true],
    ["please use $release-notes.", true],
    ["($release-notes)", true],
    ["$release-notes, then stop", true],
    ["line one\n$release-notes\nline three", true],
    ["x$release-notes", false],
    ["_$release-notes", false],
    ["é$release-notes", false],
    ["$release-notesy", false],
    ["$release-notes_v2", false],
    ["$release-notes2", false],
    ["$Release-Notes", false],
    ["$release notes", false],
    ["release-notes", false],
    ["skill:release-notes", true],
    ["Skill:RELEASE-NOTES now", true],
    ["SKILL:release-notes!", true],
    ["use skill:release-notes.", true],
    ["myskill:release-notes", false],
    ["skill:release-notesy", false],
    ["skill: release-notes", false],
  ])("%j → %p", (text, expected) => {
    expect(mentionsSkill(text, notes)).toBe(expected);
  });

  test("property: a mention counts exactly when no word character touches it", () => {
    // Characters around the mention; "$" and ":" are left out so that the only candidate is the one placed.
    const chars = fc.constantFrom("a", "Z", "7", "_", "é", "٣", "-", ".", " ", "\n", "(", ")", "!", "/", "ß");
    const isWord = (c: string | undefined) => c !== undefined && /[\p{L}\p{N}_]/u.test(c);
    fc.assert(
      fc.property(
        fc.array(chars, { maxLength: 6 }),
        fc.array(chars, { maxLength: 6 }),
        fc.constantFrom("$release-notes", "skill:release-notes", "SKILL:Release-Notes", "$Release-notes"),
        (pre, post, mention) => {
          const before = pre.join("");
          const after = post.join("");
          const caseOk = mention !== "$Release-notes";
          const expected = caseOk && !isWord(before.at(-1)) && !isWord(after[0]);
          expect(mentionsSkill(before + mention + after, notes)).toBe(expected);
        },
      ),
      { numRuns: 500 },
    );
  });

  test("names with regular-expression characters are matched literally", () => {
    const r = discoverSkills(skillsRoot({ "x/SKILL.md": md("name: 'c++ (v2)'"), "y/SKILL.md": md("name: a.b") }));
    expect(mentionsSkill("use $c++ (v2) now", r.get("c++ (v2)")!)).toBe(true);
    expect(mentionsSkill("use $a.b", r.get("a.b")!)).toBe(true);
    expect(mentionsSkill("use $axb", r.get("a.b")!)).toBe(false);
  });

  test("the first skill in discovery order wins, not the first mention in the text", () => {
    expect(findSkillMention(c, "first $review, then skill:release-notes")!.name).toBe("release-notes");
    expect(findSkillMention(c, "only $review")!.name).toBe("review");
    expect(findSkillMention(c, "no skill here, $reviews")).toBeNull();
  });

  test("latestUserText finds the last user message", () => {
    expect(
      latestUserText([
        { role: "user", content: "a" },
        { role: "assistant", content: "b" },
        { role: "tool", content: "c" },
      ]),
    ).toBe("a");
    expect(latestUserText([{ role: "system", content: "s" }])).toBeNull();
    expect(
      latestUserText([
        { role: "user", content: "a" },
        { role: "user", content: "z" },
      ]),
    ).toBe("z");
  });
});

describe("active-skill message", () => {
  test("SKILL.md, template.md and examples/sample.md sections, each trimmed", () => {
    const root = skillsRoot({
      "full/SKILL.md": md("name: full\ndescription: d", "\n# Full\nDo it.\n\n"),
      "full/template.md": "\n  ## {{v}}\n",
      "full/examples/sample.md": "## 1.0\n- x\n\n",
    });
    const c = discoverSkills(root);
    const m = activeSkillMessage(c, c.get("full")!);
    expect(m.role).toBe("system");
    const [head, ...sections] = (m.content as string).split("\n\n[");
    expect(head).toStartWith("Active skill: full.");
    expect(sections).toEqual([
      "SKILL.md]\n---\nname: full\ndescription: d\n---\n\n# Full\nDo it.",
      "template.md]\n## {{v}}",
      "examples/sample.md]\n## 1.0\n- x",
    ]);
  });

  test("without template and sample only the SKILL.md section", () => {
    const c = discoverSkills(skillsRoot({ "only/SKILL.md": "Just do it.\n" }));
    const m = activeSkillMessage(c, c.get("only")!);
    expect(m.content).toStartWith("Active skill: only.");
    expect(m.content).toEndWith("\n\n[SKILL.md]\nJust do it.");
    expect(m.content).not.toContain("[template.md]");
    expect(m.content).not.toContain("[examples/sample.md]");
  });

  test("only a sample", () => {
    const c = discoverSkills(skillsRoot({ "s/SKILL.md": "Body", "s/examples/sample.md": "Sample" }));
    expect(activeSkillMessage(c, c.get("s")!).content).toEndWith("[SKILL.md]\nBody\n\n[examples/sample.md]\nSample");
  });

  test("files are read once per skill (later changes and deletions are not seen)", () => {
    const root = skillsRoot({ "c/SKILL.md": "v1", "c/template.md": "t1" });
    const c = discoverSkills(root);
    const first = activeSkillMessage(c, c.get("c")!);
    writeFileSync(join(root, "c", "SKILL.md"), "v2");
    rmSync(join(root, "c", "template.md"));
    expect(activeSkillMessage(c, c.get("c")!)).toBe(first);
    expect(first.content).toContain("[SKILL.md]\nv1");
    // A new catalog reads again.
    const c2 = discoverSkills(root);
    expect(activeSkillMessage(c2, c2.get("c")!).content).toEndWith("[SKILL.md]\nv2");
  });

  test("a file that disappeared before first use is a clear SkillError", () => {
    const root = skillsRoot({ "g/SKILL.md": "body", "g/template.md": "t" });
    const c = discoverSkills(root);
    rmSync(join(root, "g", "template.md"));
    let err: unknown;
    try {
      activeSkillMessage(c, c.get("g")!);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SkillError);
    expect((err as SkillError).code).toBe("unreadable");
    expect((err as SkillError).message).toContain(join("g", "template.md"));
  });
});

describe("withSkillMessages", () => {
  const idx = { role: "system" as const, content: "INDEX" };
  test("after the leading system messages, without changing the input", () => {
    const ctx = [
      { role: "system" as const, content: "prompt" },
      { role: "system" as const, content: "summary" },
      { role: "user" as const, content: "u" },
      { role: "system" as const, content: "retry note" },
    ];
    const out = withSkillMessages(ctx, [idx]);
    expect(out.map((m) => m.content)).toEqual(["prompt", "summary", "INDEX", "u", "retry note"]);
    expect(ctx).toHaveLength(4);
    expect(withSkillMessages([{ role: "user", content: "u" }], [idx]).map((m) => m.content)).toEqual(["INDEX", "u"]);
  });
});
