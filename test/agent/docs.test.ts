/**
 * docs/agent.md stays true: its shell examples run through the compiled
 * binary with the output the page shows, and examples/agent_control.ts prints
 * the transcript the page shows (under Bun and Deno).
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { binaryPath, REPO } from "../support/binary.ts";

const doc = readFileSync(join(REPO, "docs/agent.md"), "utf8");
const ENV = { PATH: process.env.PATH ?? "/usr/bin:/bin" };
let bin: string;
beforeAll(() => {
  bin = binaryPath();
}, 120_000);

/** The fenced blocks of a language, in order. */
function blocks(lang: string): string[] {
  return [...doc.matchAll(new RegExp("```" + lang + "\\n([\\s\\S]*?)```", "g"))].map((m) => m[1]!);
}

/** A line of the page matches a line of output; "…" stands for any text. */
function matches(shown: string, actual: string): boolean {
  const re = new RegExp(
    "^" +
      shown
        .split("…")
        .map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
        .join(".*") +
      "$",
  );
  return re.test(actual);
}

/** Plain `./dist/agentcore agent …` commands (offline, no redirection) and the `# ` lines after them. */
function simpleCommands(): { argv: string[]; shown: string[] }[] {
  const out: { argv: string[]; shown: string[] }[] = [];
  for (const b of blocks("sh")) {
    const lines = b.split("\n");
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i]!;
      if (!line.startsWith("./dist/agentcore agent ") || /[|>&]|--preset|--model /.test(line)) continue;
      const shown: string[] = [];
      for (let j = i + 1; j < lines.length && lines[j]!.startsWith("# "); j++) shown.push(lines[j]!.slice(2));
      // split like a shell: "quoted words" and bare words
      const argv = [...line.slice("./dist/agentcore ".length).matchAll(/"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2]!);
      out.push({ argv, shown });
    }
  }
  return out;
}

describe("docs/agent.md", () => {
  test("its offline agent commands print what the page shows", () => {
    const commands = simpleCommands();
    expect(commands.length).toBeGreaterThanOrEqual(3);
    for (const { argv, shown } of commands) {
      const r = Bun.spawnSync([bin, ...argv], { cwd: REPO, env: ENV });
      const printed = (r.stdout.toString() + r.stderr.toString()).trimEnd().split("\n");
      expect(printed.length).toBe(shown.length);
      shown.forEach((s, k) =>
        expect({ argv, line: printed[k], ok: matches(s, printed[k]!) }).toEqual({ argv, line: printed[k], ok: true }),
      );
    }
  });

  test("the --events jsonl example: the kinds counted as the page shows, ending with agent_finished", () => {
    const block = blocks("sh").find((b) => b.includes("> events.jsonl"))!;
    const cmd = block.split("\n")[0]!.replace(/ > events\.jsonl$/, "");
    const argv = [...cmd.slice("./dist/agentcore ".length).matchAll(/"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2]!);
    const r = Bun.spawnSync([bin, ...argv], { cwd: REPO, env: ENV });
    expect(r.exitCode).toBe(0);
    const kinds = r.stdout
      .toString()
      .trimEnd()
      .split("\n")
      .map((l) => (JSON.parse(l) as { kind: string }).kind);
    // `uniq -c` of the kinds, as the page prints it
    const counted: string[] = [];
    for (let i = 0; i < kinds.length; ) {
      let j = i;
      while (j < kinds.length && kinds[j] === kinds[i]) j++;
      counted.push(`${String(j - i).padStart(7)} "kind":"${kinds[i]}"`);
      i = j;
    }
    const shown = block
      .split("\n")
      .filter((l) => l.startsWith("#    "))
      .map((l) => l.slice(2));
    expect(counted).toEqual(shown);
    const last = block
      .split("\n")
      .find((l) => l.startsWith('# {"agent_id"'))!
      .slice(2);
    expect(matches(last, r.stdout.toString().trimEnd().split("\n").at(-1)!)).toBe(true);
  });

  test("examples/agent_control.ts prints the transcript on the page, under Bun and Deno", () => {
    const transcript = blocks("text").find((b) => b.startsWith("steer: "))!;
    const bun = Bun.spawnSync([process.execPath, "examples/agent_control.ts"], { cwd: REPO, env: ENV });
    expect(bun.stderr.toString()).toBe("");
    expect(bun.stdout.toString()).toBe(transcript);
    const deno = Bun.spawnSync([join(REPO, "node_modules/.bin/deno"), "run", "--allow-read", "--allow-env", "examples/agent_control.ts"], {
      cwd: REPO,
      env: { ...ENV, NO_COLOR: "1", DENO_NO_UPDATE_CHECK: "1" },
    });
    expect(deno.stdout.toString()).toBe(transcript);
    expect(deno.exitCode).toBe(0);
  }, 60_000);
});
