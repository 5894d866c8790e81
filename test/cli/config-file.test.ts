// The JSONC config file is read as strictly as the calls it governs: bytes
// that are not UTF-8, repeated keys and `__proto__` are errors with the file
// and position; a leading byte order mark (as some editors write) is dropped.
import { describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { loadConfig } from "../../src/host/settings.ts";
import { binaryPath } from "../support/binary.ts";
import { configError, configFile } from "../support/config.ts";

const MAIN = path.resolve(import.meta.dir, "../../src/cli/main.ts");
const file = (content: string | Uint8Array) => configFile(content);
/** The first line of the error (the position and what is wrong; the excerpt follows). */
function error(f: string): string {
  return configError(f).split("\n")[0]!;
}
const fullError = configError;
/** `agentcore --config F tools` through the compiled binary. */
function cli(f: string): { status: number | null; stdout: string; stderr: string } {
  const p = Bun.spawnSync([binaryPath(), "--config", f, "tools"], { stdout: "pipe", stderr: "pipe" });
  return { status: p.exitCode, stdout: p.stdout.toString(), stderr: p.stderr.toString() };
}

describe("config file strictness", () => {
  test("a repeated key is an error at its second occurrence, at any depth", () => {
    let f = file('{\n  "max_depth": 10,\n  "max_depth": 20\n}\n');
    expect(error(f)).toBe(`${f}:3:3: duplicate key "max_depth"`);
    f = file('{"policy": {"default": "deny", "rules": [{"id": "a", "action": "allow", "tools": ["echo"], "action": "deny"}]}}');
    expect(error(f)).toMatch(/:1:\d+: duplicate key "action"$/);
    // the same name in sibling objects is fine
    f = file(
      '{"policy": {"default": "deny", "rules": [{"id": "a", "action": "allow", "tools": ["echo"]}, {"id": "b", "action": "deny", "tools": ["x"]}]}}',
    );
    expect(loadConfig(f).policy?.rules?.length).toBe(2);
  });

  test("__proto__ is refused (it would set a prototype, not a key)", () => {
    const f = file('{"policy": {"__proto__": {"default": "allow"}, "rules": []}}');
    expect(error(f)).toMatch(/:1:13: the key "__proto__" is not allowed$/);
  });

  test("invalid UTF-8 is an error naming the byte; a BOM is dropped", () => {
    const bad = new Uint8Array([...new TextEncoder().encode('{"root": "a'), 0xff, ...new TextEncoder().encode('"}')]);
    const f = file(bad);
    expect(error(f)).toBe(`${f}: not valid UTF-8 (at byte 11)`);
    const cut = file(new Uint8Array([...new TextEncoder().encode('{"root": "'), 0xe2, 0x82]));
    expect(error(cut)).toBe(`${cut}: not valid UTF-8 (at byte 10)`);
    const bom = file('\uFEFF{"max_depth": 12}\n');
    expect(loadConfig(bom).max_depth).toBe(12);
  });

  test("through the CLI: exit 2 and the message, no usage hint", () => {
    const f = file('{"max_depth": 10, "max_depth": 20}');
    const p = Bun.spawnSync([process.execPath, MAIN, "--config", f, "tools"], { stdout: "pipe", stderr: "pipe" });
    expect(p.exitCode).toBe(2);
    expect(p.stderr.toString()).toBe(
      `agentcore: ${f}:1:19: duplicate key "max_depth"\n    1 | {"max_depth": 10, "max_depth": 20}\n      |                   ^\n`,
    );
  });
});

describe("config syntax errors in words, with the line and a caret (through the binary)", () => {
  test("a missing comma between members: FILE:LINE:COL, the words, the line, the caret; no usage hint", () => {
    const f = file('{\n  "root": "."\n  "max_depth": 3\n}\n');
    const r = cli(f);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe(
      `agentcore: ${f}:3:3: expected a comma or a closing brace '}'\n` + `    3 |   "max_depth": 3\n` + `      |   ^\n`,
    );
    expect(r.stderr).not.toContain("CommaExpected");
    expect(r.stderr).not.toContain("--help");
  });

  test("in an array the comma goes before a bracket", () => {
    const f = file('{"policy": {"rules": [1 2]}}');
    expect(fullError(f)).toBe(
      `${f}:1:25: expected a comma or a closing bracket ']'\n    1 | {"policy": {"rules": [1 2]}}\n      |                         ^`,
    );
  });

  test("a file cut short: unexpected end of file", () => {
    const f = file('{\n  "root": ".",\n  "policy": {\n');
    const r = cli(f);
    expect(r.status).toBe(2);
    expect(r.stderr.split("\n")[0]).toBe(`agentcore: ${f}:4:1: unexpected end of file: expected a closing brace '}'`);
    const g = file('{"root": "."');
    expect(error(g)).toBe(`${g}:1:13: unexpected end of file: expected a closing brace '}'`);
  });

  test("tabs: the caret lines up under the column (tabs shown as four spaces)", () => {
    const f = file('{\n\t"max_depth": 3,\n\t"history": "x" "y"\n}\n');
    const lines = fullError(f).split("\n");
    expect(lines[0]).toBe(`${f}:3:17: expected a comma or a closing brace '}'`);
    expect(lines[1]).toBe('    3 |     "history": "x" "y"');
    expect(lines[2]).toBe("      |                    ^");
    // the caret is under the second string's quote
    expect(lines[2]!.indexOf("^")).toBe(lines[1]!.indexOf('"y"'));
  });

  test("control characters in the line are escaped, never sent to the terminal", () => {
    const f = file('{"root": "a\u001b[2Jb" x}');
    const r = cli(f);
    expect(r.status).toBe(2);
    expect(r.stderr).not.toContain("\u001b");
    const lines = r.stderr.split("\n");
    // the control character itself is the error (it must be escaped in a string); it shows as \x1b
    expect(lines[0]).toBe(`agentcore: ${f}:1:12: invalid character in a string (a line break or control character must be escaped)`);
    expect(lines[1]).toBe('    1 | {"root": "a\\x1b[2Jb" x}');
    expect(lines[2]!.indexOf("^")).toBe(lines[1]!.indexOf("\\x1b"));
  });

  test("a long line is cut around the column, the caret still under it", () => {
    const f = file(`{"x": "${"a".repeat(300)}" "y": 1, "z": "${"b".repeat(300)}"}`);
    const lines = fullError(f).split("\n");
    expect(lines[0]).toBe(`${f}:1:310: expected a comma or a closing brace '}'`);
    expect(lines[1]!.length).toBeLessThan(90);
    expect(lines[1]).toStartWith("    1 | …");
    expect(lines[1]).toEndWith("…");
    expect(lines[1]![lines[2]!.indexOf("^")]).toBe('"');
    expect(lines[1]!.slice(lines[2]!.indexOf("^"))).toStartWith('"y": 1');
  });

  test("other errors in words: a bare word, an unterminated comment, a bad escape, text after the object", () => {
    expect(error(file('{"root": yes}'))).toEndWith(
      ":1:10: unexpected word 'yes' (a string or a property name needs double quotes; true, false and null are lower case)",
    );
    expect(error(file(`{"root": 'a'}`))).toEndWith(":1:10: unexpected character ''' (strings need double quotes)");
    expect(error(file('{"root": "."} /* note'))).toEndWith(":1:15: unterminated comment: a /* without */");
    expect(error(file('{"root": "a\\qb"}'))).toEndWith(":1:12: invalid escape in a string (use \\\\ for a backslash)");
    expect(error(file('{"root": "a\\u12G4"}'))).toEndWith(":1:12: invalid \\u escape (four hex digits expected)");
    expect(error(file('{"root": "."} {}'))).toEndWith(":1:15: expected the end of the file after the top-level object");
    expect(error(file('{root: "."}'))).toEndWith(
      ":1:2: unexpected word 'root' (a string or a property name needs double quotes; true, false and null are lower case)",
    );
    expect(error(file('{"root" "."}'))).toEndWith(":1:9: expected a colon after the property name");
  });
});
