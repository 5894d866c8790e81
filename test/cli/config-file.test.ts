// The JSONC config file is read as strictly as the calls it governs: bytes
// that are not UTF-8, repeated keys and `__proto__` are errors with the file
// and position; a leading byte order mark (as some editors write) is dropped.
import { afterEach, describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { ConfigError, loadConfig } from "../../src/cli/config.ts";

const MAIN = path.resolve(import.meta.dir, "../../src/cli/main.ts");
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});
function file(content: string | Uint8Array): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), "agentcore-config-"));
  dirs.push(d);
  const f = path.join(d, "agentcore.jsonc");
  fs.writeFileSync(f, content);
  return f;
}
function error(f: string): string {
  try {
    loadConfig(f);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as Error).message;
  }
  throw new Error("loadConfig accepted the file");
}

describe("config file strictness", () => {
  test("a repeated key is an error at its second occurrence, at any depth", () => {
    let f = file('{\n  "max_depth": 10,\n  "max_depth": 20\n}\n');
    expect(error(f)).toBe(`${f}:3:3: duplicate key "max_depth"`);
    f = file('{"policy": {"default": "deny", "rules": [{"id": "a", "action": "allow", "tools": ["echo"], "action": "deny"}]}}');
    expect(error(f)).toMatch(/:1:\d+: duplicate key "action"$/);
    // the same name in sibling objects is fine
    f = file('{"policy": {"default": "deny", "rules": [{"id": "a", "action": "allow", "tools": ["echo"]}, {"id": "b", "action": "deny", "tools": ["x"]}]}}');
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
    const bom = file("\uFEFF{\"max_depth\": 12}\n");
    expect(loadConfig(bom).max_depth).toBe(12);
  });

  test("through the CLI: exit 2 and the message, no usage hint", () => {
    const f = file('{"max_depth": 10, "max_depth": 20}');
    const p = Bun.spawnSync([process.execPath, MAIN, "--config", f, "tools"], { stdout: "pipe", stderr: "pipe" });
    expect(p.exitCode).toBe(2);
    expect(p.stderr.toString()).toBe(`agentcore: ${f}:1:19: duplicate key "max_depth"\n`);
  });
});
