/**
 * `agentcore version [--json]`: the version and the build information a bug
 * report needs (src/core/build-info.ts). `agentcore --version` stays the fast
 * path in main.ts and prints only the version.
 *
 * @module
 */
import { type BuildInfo, buildInfo } from "../core/build-info.ts";
import { parseCommandLine, renderHelp, shown, usageText, VERSION_OPTIONS } from "./args.ts";
import { type LineWriter, PIPE_HELP } from "./output.ts";

/** `agentcore version --help`. */
export const VERSION_HELP = renderHelp({
  name: "version",
  summary: "print the version and build information",
  usage: ["version [--json]"],
  description: `Prints the version, the git commit and date the binary was built from, the target it was
built for (linux-x64, linux-arm64, darwin-x64, darwin-arm64, windows-x64), the Bun runtime it
runs on and the sha256 of its embedded WebAssembly core. Run from source, the commit and date
are unknown (null in --json) and the target is this machine's. Paste --json into bug reports.
'agentcore --version' prints only the version.`,
  options: VERSION_OPTIONS,
  examples: ["agentcore version", "agentcore version --json"],
  exit: ["0  printed", "2  usage error", PIPE_HELP],
});

function fail(message: string): number {
  process.stderr.write(usageText(message, "version"));
  return 2;
}

/** The text form: one `name  value` line each. */
export function versionText(info: BuildInfo): string[] {
  const unknown = "unknown (run from source)";
  return [
    `agentcore ${info.version}`,
    `commit       ${info.commit ?? unknown}`,
    `build date   ${info.build_date ?? unknown}`,
    `target       ${info.target}`,
    `bun          ${info.bun_version ?? "none"}`,
    `wasm core    sha256:${info.wasm_sha256}`,
  ];
}

/** Run `agentcore version …` with the arguments after `version`; resolves to the exit status. */
export async function cmdVersion(argv: string[], io: { out: LineWriter }): Promise<number> {
  const { out } = io;
  let parsed;
  try {
    parsed = parseCommandLine("version", VERSION_OPTIONS, argv);
  } catch (e) {
    return fail((e as Error).message);
  }
  const { values: v, positionals } = parsed;
  // also under --help: `version bogus --help` is a mistake, not a request for help
  if (positionals.length > 0) return fail(`unexpected argument '${shown(positionals[0]!)}': version takes no arguments`);
  if (v.help) {
    out.line(VERSION_HELP.trimEnd());
    out.flush();
    return 0;
  }
  const info = await buildInfo();
  if (v.json) out.line(JSON.stringify(info));
  else for (const line of versionText(info)) out.line(line);
  out.flush();
  return 0;
}
