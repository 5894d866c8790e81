/**
 * Skill discovery on real folders: order, what is skipped, names and
 * descriptions, and every kind of bad skill with its file and position.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, realpathSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { discoverSkills, MAX_SKILL_FILE_BYTES, SkillCatalog, SkillError } from "../../src/skills/index.ts";
import { cleanupRoots, skillsRoot, tempRoot } from "../support/skills.ts";

afterAll(cleanupRoots);

/** The SkillError thrown by `fn` (fails the test when nothing or something else is thrown). */
function skillError(fn: () => unknown): SkillError {
  try {
    fn();
  } catch (e) {
    if (e instanceof SkillError) return e;
    throw new Error(`expected a SkillError, got ${String(e)}`);
  }
  throw new Error("expected a SkillError, nothing was thrown");
}

const md = (front: string, body = "Body.\n") => `---\n${front}\n---\n${body}`;

describe("discovery", () => {
  test("direct child folders with SKILL.md, sorted by folder name; other entries are skipped", () => {
    const root = skillsRoot({
      "zeta/SKILL.md": md("name: zeta\ndescription: last"),
      "Alpha/SKILL.md": md("description: capital first"),
      "beta/SKILL.md": md("name: beta"),
      "gamma/notes.md": "a folder without SKILL.md is not a skill",
      "SKILL.md": md("name: at-root"),
      "loose.md": "a file, not a folder",
      "delta/nested/SKILL.md": md("name: too-deep"),
    });
    const c = discoverSkills(root);
    expect(c).toBeInstanceOf(SkillCatalog);
    expect(c.skills.map((s) => s.name)).toEqual(["Alpha", "beta", "zeta"]);
    expect(c.root).toBe(realpathSync(root));
    const beta = c.get("beta")!;
    expect(beta.path).toBe(join(realpathSync(root), "beta", "SKILL.md"));
    expect(beta.dir).toBe(join(realpathSync(root), "beta"));
    expect(c.get("too-deep")).toBeUndefined();
    expect(c.get("at-root")).toBeUndefined();
  });

  test("name falls back to the folder name; description defaults to empty; metadata is kept", () => {
    const root = skillsRoot({
      "no-front/SKILL.md": "# Just a body\n",
      "no-name/SKILL.md": md("description: '  padded  '\nowner: docs\ntags: [a, b]"),
      "empty-name/SKILL.md": md('name: ""'),
      "null-name/SKILL.md": md("name:"),
      "empty-front/SKILL.md": "---\n---\nbody\n",
      "comment-front/SKILL.md": md("# only a comment"),
      "named/SKILL.md": md("name: '  spaced name  '\ndescription: 3"),
    });
    const c = discoverSkills(root);
    const by = Object.fromEntries(c.skills.map((s) => [s.dir.split("/").pop(), s]));
    expect(by["no-front"]).toMatchObject({ name: "no-front", description: "" });
    expect(by["no-name"]).toMatchObject({ name: "no-name", description: "padded" });
    expect(by["no-name"]!.metadata).toEqual({ description: "  padded  ", owner: "docs", tags: ["a", "b"] });
    expect(by["empty-name"]!.name).toBe("empty-name");
    expect(by["null-name"]!.name).toBe("null-name");
    expect(by["empty-front"]).toMatchObject({ name: "empty-front", description: "" });
    expect(by["comment-front"]!.name).toBe("comment-front");
    expect(by["named"]).toMatchObject({ name: "spaced name", description: "3" });
  });

  test("optional template.md and examples/sample.md are found", () => {
    const root = skillsRoot({
      "both/SKILL.md": md("name: both"),
      "both/template.md": "T",
      "both/examples/sample.md": "S",
      "bare/SKILL.md": md("name: bare"),
      "dir-template/SKILL.md": md("name: dir-template"),
      "dir-template/template.md/x": "a folder named template.md is not a template",
    });
    const c = discoverSkills(root);
    const r = realpathSync(root);
    expect(c.get("both")).toMatchObject({
      templatePath: join(r, "both", "template.md"),
      samplePath: join(r, "both", "examples", "sample.md"),
    });
    expect(c.get("bare")).toMatchObject({ templatePath: null, samplePath: null });
    expect(c.get("dir-template")!.templatePath).toBeNull();
  });

  test("CRLF line endings and a byte-order mark are accepted", () => {
    const root = skillsRoot({
      "crlf/SKILL.md": "---\r\nname: windows\r\ndescription: made on Windows\r\n---\r\nBody\r\n",
      "bom/SKILL.md": "\uFEFF---\nname: bom\n---\n",
    });
    const c = discoverSkills(root);
    expect(c.skills.map((s) => [s.name, s.description])).toEqual([
      ["bom", ""],
      ["windows", "made on Windows"],
    ]);
  });

  test("a symlinked skill folder is followed", () => {
    const outside = skillsRoot({ "real/SKILL.md": md("name: linked") });
    const root = tempRoot();
    symlinkSync(join(outside, "real"), join(root, "link"));
    expect(discoverSkills(root).skills.map((s) => s.name)).toEqual(["linked"]);
  });

  test("an empty root gives an empty catalog", () => {
    const c = discoverSkills(tempRoot());
    expect(c.size).toBe(0);
    expect(c.skills).toEqual([]);
  });
});

describe("discovery errors", () => {
  test("missing root", () => {
    const missing = join(tempRoot(), "nope");
    const e = skillError(() => discoverSkills(missing));
    expect(e.code).toBe("root_not_found");
    expect(e.message).toBe(`skills root not found: ${missing}`);
  });

  test("root that is a file", () => {
    const root = tempRoot();
    writeFileSync(join(root, "file"), "x");
    const e = skillError(() => discoverSkills(join(root, "file")));
    expect(e.code).toBe("root_not_a_folder");
    expect(e.message).toContain(join(root, "file"));
  });

  test("front matter that is a list or a scalar is not a mapping", () => {
    const list = skillsRoot({ "listy/SKILL.md": md("- a\n- b") });
    const e = skillError(() => discoverSkills(list));
    const file = join(realpathSync(list), "listy", "SKILL.md");
    expect(e).toMatchObject({ code: "invalid_front_matter", file, line: 2, column: 1 });
    expect(e.message).toBe(`${file}:2:1: the front matter must be a YAML mapping (key: value lines), got a list`);

    const scalar = skillsRoot({ "s/SKILL.md": md("\njust text") });
    const e2 = skillError(() => discoverSkills(scalar));
    expect(e2).toMatchObject({ code: "invalid_front_matter", line: 3, column: 1 });
    expect(e2.message).toContain("got a string");
  });

  test("invalid YAML reports the file, line and column", () => {
    const root = skillsRoot({ "dup/SKILL.md": md("name: dup\ndescription: one\n  description: two") });
    const e = skillError(() => discoverSkills(root));
    const file = join(realpathSync(root), "dup", "SKILL.md");
    expect(e.code).toBe("invalid_front_matter");
    expect(e.file).toBe(file);
    expect(e.line).toBe(3);
    expect(e.message.startsWith(`${file}:3:`)).toBe(true);
    expect(e.message).toContain("invalid YAML in the front matter");

    const dupKey = skillsRoot({ "k/SKILL.md": md("name: k\ndescription: a\ndescription: b") });
    const e2 = skillError(() => discoverSkills(dupKey));
    expect(e2).toMatchObject({ code: "invalid_front_matter", line: 4, column: 1 });
    expect(e2.message).toContain("DUPLICATE_KEY");

    const flow = skillsRoot({ "f/SKILL.md": md("name: f\ntags: [a, b") });
    const e3 = skillError(() => discoverSkills(flow));
    expect(e3.code).toBe("invalid_front_matter");
    expect(e3.line).toBeGreaterThanOrEqual(3);
  });

  test("an alias bomb in the front matter is refused, not expanded", () => {
    const lines = ["a: &a [x, x, x, x, x, x, x, x, x]"];
    for (let i = 1; i < 9; i++) {
      const prev = String.fromCharCode(96 + i);
      const cur = String.fromCharCode(97 + i);
      lines.push(`${cur}: &${cur} [${Array(9).fill(`*${prev}`).join(", ")}]`);
    }
    const root = skillsRoot({ "bomb/SKILL.md": md(lines.join("\n")) });
    const e = skillError(() => discoverSkills(root));
    expect(e.code).toBe("invalid_front_matter");
    expect(e.message).toContain("the front matter cannot be read");
    expect(e.message).toContain("alias");
  });

  test("front matter that is never closed", () => {
    const root = skillsRoot({ "open/SKILL.md": "---\nname: open\n\nbody without a closing line\n" });
    const e = skillError(() => discoverSkills(root));
    expect(e).toMatchObject({ code: "invalid_front_matter", line: 1, column: 1 });
    expect(e.message).toContain("never closed");
  });

  test("bad name and description fields point at their key", () => {
    const cases: [string, string, number, string][] = [
      ["name: 12", "name", 2, 'front matter "name" must be a string, got a number'],
      ["description: x\nname: [a]", "name", 3, 'front matter "name" must be a string, got a list'],
      ["name: '   '", "name", 2, 'front matter "name" must not be blank'],
      ['name: "a\\nb"', "name", 2, 'front matter "name" must not contain line breaks'],
      ["name: ok\ndescription: {a: 1}", "description", 3, 'front matter "description" must be text, got a mapping'],
    ];
    for (const [front, , line, text] of cases) {
      const root = skillsRoot({ "s/SKILL.md": md(front) });
      const e = skillError(() => discoverSkills(root));
      expect(e.code).toBe("invalid_field");
      expect(e.line).toBe(line);
      expect(e.column).toBe(1);
      expect(e.message).toContain(text);
      expect(e.message.startsWith(`${join(realpathSync(root), "s", "SKILL.md")}:${line}:1: `)).toBe(true);
    }
  });

  test("a folder name that cannot be a skill name is reported as the folder's fault, not a front matter line", () => {
    const root = skillsRoot({ "a\nb/SKILL.md": "no front matter\n" });
    const file = join(realpathSync(root), "a\nb", "SKILL.md");
    const e = skillError(() => discoverSkills(root));
    expect(e).toMatchObject({ code: "invalid_field", file, line: null, column: null });
    expect(e.message).toBe(
      `${file}: the folder name "a\\nb" cannot be a skill name (it has line breaks or control characters); set "name" in the front matter`,
    );
    // with a name in the front matter the folder name does not matter
    writeFileSync(file, md("name: ab"));
    expect(discoverSkills(root).skills.map((s) => s.name)).toEqual(["ab"]);
  });

  test("two skills with the same name", () => {
    const root = skillsRoot({
      "a/SKILL.md": md("name: same"),
      "b/SKILL.md": md("name: same"),
    });
    const e = skillError(() => discoverSkills(root));
    const r = realpathSync(root);
    expect(e.code).toBe("duplicate_name");
    expect(e.message).toBe(`duplicate skill name 'same': ${join(r, "b", "SKILL.md")} and ${join(r, "a", "SKILL.md")}`);
    // A front matter name can also collide with another folder's name.
    const root2 = skillsRoot({ "x/SKILL.md": md(""), "y/SKILL.md": md("name: x") });
    expect(skillError(() => discoverSkills(root2)).code).toBe("duplicate_name");
  });

  test("unreadable SKILL.md: a folder, too large, not UTF-8", () => {
    const asDir = tempRoot();
    mkdirSync(join(asDir, "d", "SKILL.md"), { recursive: true });
    const e1 = skillError(() => discoverSkills(asDir));
    expect(e1.code).toBe("unreadable");
    expect(e1.message).toContain("not a regular file");

    const big = skillsRoot({ "big/SKILL.md": "x".repeat(MAX_SKILL_FILE_BYTES + 1) });
    const e2 = skillError(() => discoverSkills(big));
    expect(e2.code).toBe("unreadable");
    expect(e2.message).toContain(`${MAX_SKILL_FILE_BYTES}-byte limit`);

    const latin1 = skillsRoot({ "l/SKILL.md": new Uint8Array([0x2d, 0x2d, 0x2d, 0x0a, 0xe9, 0x0a, 0x2d, 0x2d, 0x2d, 0x0a]) });
    const e3 = skillError(() => discoverSkills(latin1));
    expect(e3.code).toBe("unreadable");
    expect(e3.message).toContain("not valid UTF-8");
  });

  test("a template.md or examples/sample.md that is too large or not UTF-8 is reported by discovery", () => {
    const big = skillsRoot({ "t/SKILL.md": md("name: t"), "t/template.md": "x".repeat(MAX_SKILL_FILE_BYTES + 1) });
    const e1 = skillError(() => discoverSkills(big));
    expect(e1.code).toBe("unreadable");
    expect(e1.file).toBe(join(realpathSync(big), "t", "template.md"));
    expect(e1.message).toContain(`${MAX_SKILL_FILE_BYTES}-byte limit`);

    const latin1 = skillsRoot({ "s/SKILL.md": md("name: s"), "s/examples/sample.md": new Uint8Array([0x63, 0x61, 0x66, 0xe9, 0x0a]) });
    const e2 = skillError(() => discoverSkills(latin1));
    expect(e2.code).toBe("unreadable");
    expect(e2.file).toBe(join(realpathSync(latin1), "s", "examples", "sample.md"));
    expect(e2.message).toContain("not valid UTF-8");
  });

  test("a non-string root is a TypeError", () => {
    expect(() => discoverSkills("")).toThrow(TypeError);
    expect(() => discoverSkills(42 as unknown as string)).toThrow(TypeError);
  });
});
