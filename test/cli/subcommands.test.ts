/**
 * Unknown subcommands, table-driven over every command of the overview: each
 * command is a group (its first argument is a subcommand), takes arguments
 * that are data (a call, a file, a task), or takes none. For each group,
 * `GROUP bogus`, `GROUP bogus --help` and a near miss of each subcommand exit
 * 2, naming the word, suggesting the near subcommand and listing them all; a
 * known subcommand's `--help` still prints its own help (exit 0). A command
 * that takes no arguments refuses one, also under `--help`. Through the CLI
 * in child processes.
 */
import { describe, expect, test } from "bun:test";
import { COMMAND_NAMES } from "../../src/cli/args.ts";
import { GROUPS } from "../../src/cli/groups.ts";
import { REPO } from "../support/binary.ts";
import { tmp } from "../support/tmp.ts";

/** Commands whose arguments are data: `--help` wins over them. */
const TAKE_ARGUMENTS = ["execute", "run", "agent"];
/** Commands that take no arguments at all. */
const NO_ARGUMENTS = ["tools", "chat", "mcp", "serve", "history", "version"];

const cwd = tmp("agentcore-subcommands-");

async function cli(...args: string[]): Promise<{ status: number; stdout: string; stderr: string }> {
  const p = Bun.spawn([process.execPath, `${REPO}/src/cli/main.ts`, ...args], {
    cwd,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: cwd, NO_COLOR: "1" },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, status] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { status, stdout, stderr };
}

const unknown = (group: string, word: string, subs: readonly string[], guess?: string) =>
  `agentcore ${group}: unknown subcommand '${word}'${guess !== undefined ? `; did you mean '${guess}'?` : ""} (subcommands: ${subs.join(", ")})\n` +
  `Run 'agentcore ${group} --help' for usage.\n`;

test("every command of the overview is a group, takes data arguments, or takes none", () => {
  expect([...COMMAND_NAMES].sort() as string[]).toEqual([...Object.keys(GROUPS), ...TAKE_ARGUMENTS, ...NO_ARGUMENTS].sort());
});

describe.each(Object.entries(GROUPS))("agentcore %s", (group, subs) => {
  test("the group's help names each subcommand", async () => {
    const r = await cli(group, "--help");
    expect(r.status).toBe(0);
    for (const sub of subs) expect(r.stdout).toContain(`${group} ${sub}`);
  });

  test("GROUP bogus and GROUP bogus --help (before or after the word): exit 2, the word named, the subcommands listed", async () => {
    const runs = [["bogus"], ["bogus", "--help"], ["--help", "bogus"], ["-h", "bogus"]].map(async (args) => ({
      args,
      r: await cli(group, ...args),
    }));
    for (const { args, r } of await Promise.all(runs)) {
      expect({ args, status: r.status, stdout: r.stdout, stderr: r.stderr }).toEqual({
        args,
        status: 2,
        stdout: "",
        stderr: unknown(group, "bogus", subs),
      });
    }
  });

  test("a near miss of each subcommand, with and without --help: exit 2 and 'did you mean' it", async () => {
    const runs = subs.flatMap((sub) => {
      const typo = sub.slice(0, -1); // migrat, lis, sho, …
      return [[typo], [typo, "--help"]].map(async (args) => ({ sub, typo, args, r: await cli(group, ...args) }));
    });
    for (const { sub, typo, args, r } of await Promise.all(runs)) {
      expect({ args, status: r.status, stderr: r.stderr }).toEqual({ args, status: 2, stderr: unknown(group, typo, subs, sub) });
    }
  });

  test("each subcommand's --help: exit 0, its own help", async () => {
    const runs = subs.map(async (sub) => ({ sub, r: await cli(group, sub, "--help") }));
    for (const { sub, r } of await Promise.all(runs)) {
      expect({ sub, status: r.status, stderr: r.stderr }).toEqual({ sub, status: 0, stderr: "" });
      expect(r.stdout).toStartWith(`Usage: agentcore ${group} ${sub}`);
    }
  });
});

describe.each(NO_ARGUMENTS)("agentcore %s (no arguments)", (command) => {
  test("an argument is refused, also under --help; --help alone is the help", async () => {
    const runs = [["bogus"], ["bogus", "--help"], ["--help", "bogus"]].map(async (args) => ({ args, r: await cli(command, ...args) }));
    for (const { args, r } of await Promise.all(runs)) {
      expect({ args, status: r.status, stdout: r.stdout }).toEqual({ args, status: 2, stdout: "" });
      expect(r.stderr).toStartWith(`agentcore ${command}: unexpected argument 'bogus': ${command} takes no arguments`);
      expect(r.stderr).toEndWith(`Run 'agentcore ${command} --help' for usage.\n`);
    }
    const help = await cli(command, "--help");
    expect(help.status).toBe(0);
    expect(help.stdout).toStartWith(`Usage: agentcore ${command}`);
  });
});

test.each(TAKE_ARGUMENTS)("agentcore %s ARG --help is the help (its arguments are data, not subcommands)", async (command) => {
  const r = await cli(command, "something", "--help");
  expect(r.status).toBe(0);
  expect(r.stdout).toStartWith(`Usage: agentcore ${command}`);
});
