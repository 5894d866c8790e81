#!/usr/bin/env node
// The `agentcore` command of the npm package: the compiled CLI (dist/, built by
// `npm pack` / `prepack`) under Node 22+, Bun or Deno; Bun is not needed.
// The release binary (`bun build --compile src/cli/main.ts`) does not use this file.
import { main } from "../dist/cli/main.js";
import { OutputError, outputFailure } from "../dist/cli/output.js";

process.exitCode = await main(process.argv.slice(2)).catch((e) => {
  // an output failure out of a self-parsing command: quiet for a closed pipe
  if (e instanceof OutputError) return outputFailure(e);
  throw e;
});
