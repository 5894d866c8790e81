/**
 * `npm run build:lib` (and so `npm pack`, through `prepack`) cleans only its
 * own output in dist/: the release folder, the binary and anything else
 * another step put there stay. Run as a real child process on a small
 * project laid out like this one (the script, the two tsconfig files, a few
 * modules, the repository's node_modules linked), and through its exported
 * clean-up function on the cases the small project does not cover.
 */
import { expect, test } from "bun:test";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { cleanLib, libOutputs } from "../../scripts/build-lib.mjs";
import { REPO } from "../support/binary.ts";
import { tmp } from "../support/tmp.ts";

function write(path: string, text: string) {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
}

/** What another step left in dist/: a release folder, the binary, install.sh. */
function othersOutput(dist: string) {
  write(join(dist, "release", "agentcore-linux-x64"), "binary bytes");
  write(join(dist, "release", "SHA256SUMS"), "0000  agentcore-linux-x64\n");
  write(join(dist, "release", "install.sh"), "#!/bin/sh\n");
  write(join(dist, "release", "marker.txt"), "left by the test");
  write(join(dist, "agentcore"), "the binary of npm run build");
  write(join(dist, "install.sh"), "#!/bin/sh\n");
}

test("node scripts/build-lib.mjs leaves dist/release/ and the binary alone, and replaces its own stale output", () => {
  const root = tmp("agentcore-build-lib-");
  for (const f of ["scripts/build-lib.mjs", "tsconfig.json", "tsconfig.build.json"]) {
    mkdirSync(dirname(join(root, f)), { recursive: true });
    copyFileSync(join(REPO, f), join(root, f));
  }
  symlinkSync(join(REPO, "node_modules"), join(root, "node_modules"));
  write(join(root, "src", "mod.ts"), 'export { twice } from "./core/twice.ts";\n');
  write(join(root, "src", "core", "twice.ts"), "export const twice = (n: number): number => 2 * n;\n");
  const dist = join(root, "dist");
  othersOutput(dist);
  write(join(dist, "core", "removed-module.js"), "stale");
  write(join(dist, "gone.js"), "stale");
  write(join(dist, "gone.d.ts.map"), "stale");

  const r = Bun.spawnSync([Bun.which("node") ?? process.execPath, "scripts/build-lib.mjs"], { cwd: root });
  expect(r.stderr.toString()).toBe("");
  expect(r.exitCode).toBe(0);

  expect(readdirSync(join(dist, "release")).sort()).toEqual(["SHA256SUMS", "agentcore-linux-x64", "install.sh", "marker.txt"]);
  expect(readFileSync(join(dist, "release", "marker.txt"), "utf8")).toBe("left by the test");
  expect(readFileSync(join(dist, "agentcore"), "utf8")).toBe("the binary of npm run build");
  expect(existsSync(join(dist, "install.sh"))).toBe(true);
  // its own output: fresh, and the stale files of modules that no longer exist gone
  expect(readdirSync(join(dist, "core")).sort()).toEqual(["twice.d.ts", "twice.d.ts.map", "twice.js", "twice.js.map"]);
  expect(existsSync(join(dist, "gone.js"))).toBe(false);
  expect(existsSync(join(dist, "gone.d.ts.map"))).toBe(false);
  expect(readFileSync(join(dist, "mod.js"), "utf8")).toContain('from "./core/twice.js"');
});

test("libOutputs lists src's folders and compiled top-level files only; cleanLib removes just those", () => {
  const root = tmp("agentcore-build-lib-");
  for (const d of ["core", "cli", "entries"]) mkdirSync(join(root, "src", d), { recursive: true });
  write(join(root, "src", "mod.ts"), "");
  const dist = join(root, "dist");
  expect(libOutputs(dist, join(root, "src"))).toEqual([]); // no dist/ yet
  othersOutput(dist);
  for (const f of ["core/a.js", "cli/main.js", "entries/testing.d.ts", "mod.js", "mod.js.map", "mod.d.ts", "mod.d.ts.map"])
    write(join(dist, f), "");
  write(join(dist, "notes.txt"), "someone's");
  mkdirSync(join(dist, "coverage"));
  expect(libOutputs(dist, join(root, "src")).sort()).toEqual(
    ["cli", "core", "entries", "mod.d.ts", "mod.d.ts.map", "mod.js", "mod.js.map"].map((n) => join(dist, n)),
  );
  cleanLib(dist, join(root, "src"));
  expect(readdirSync(dist).sort()).toEqual(["agentcore", "coverage", "install.sh", "notes.txt", "release"]);
  expect(readdirSync(join(dist, "release")).sort()).toEqual(["SHA256SUMS", "agentcore-linux-x64", "install.sh", "marker.txt"]);
});
