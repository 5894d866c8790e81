// The layer rules (.dependency-cruiser.cjs, DESIGN.md "Architecture"): 0
// violations and no file cycles in src; no library layer owns the process.
import { describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { REPO_ROOT } from "./support/paths.ts";

const CRUISER = path.join(REPO_ROOT, "node_modules/dependency-cruiser/bin/dependency-cruiser.mjs");
const CONFIG = path.join(REPO_ROOT, ".dependency-cruiser.cjs");

interface Violation {
  from: string;
  to: string;
  rule: { name: string; severity: string };
  cycle?: { name: string }[];
}

/** dependency-cruiser over `target` (run in `cwd`), under Bun (it refuses Node 20); its JSON summary. */
function cruise(cwd: string, target = "src"): { violations: Violation[]; modules: number; raw: string } {
  const r = Bun.spawnSync([process.execPath, CRUISER, "--config", CONFIG, "--output-type", "json", target], {
    cwd,
    stdout: "pipe",
    stderr: "pipe",
  });
  const out = r.stdout.toString();
  let parsed: { summary?: { violations?: Violation[]; totalCruised?: number } };
  try {
    parsed = JSON.parse(out);
  } catch {
    throw new Error(`dependency-cruiser gave no JSON (exit ${r.exitCode}):\n${r.stderr.toString()}\n${out.slice(0, 2000)}`);
  }
  return { violations: parsed.summary?.violations ?? [], modules: parsed.summary?.totalCruised ?? 0, raw: out };
}

function describeViolation(v: Violation): string {
  const via = v.cycle !== undefined && v.cycle.length > 0 ? ` (cycle: ${[v.from, ...v.cycle.map((c) => c.name)].join(" -> ")})` : "";
  return `${v.rule.name}: ${v.from} -> ${v.to}${via}`;
}

describe("layers (.dependency-cruiser.cjs)", () => {
  test("src has 0 violations: one-way layers, no file cycles, no orphans, nothing from test/", () => {
    const { violations, modules } = cruise(REPO_ROOT);
    expect(modules).toBeGreaterThan(100); // it really cruised src
    const listed = violations.map(describeViolation);
    if (listed.length > 0) console.error(`layer violations (npm run lint:layers):\n  ${listed.join("\n  ")}`);
    expect(listed).toEqual([]);
  }, 60_000);

  test("the rules catch an upward import, a cycle, a file outside the layers and an import of test code", () => {
    // A small tree cruised with the same rules: each kind of violation once.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentcore-layers-"));
    try {
      const write = (rel: string, text: string) => {
        fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
        fs.writeFileSync(path.join(dir, rel), text);
      };
      fs.writeFileSync(
        path.join(dir, "tsconfig.json"),
        JSON.stringify({
          compilerOptions: { allowImportingTsExtensions: true, noEmit: true, module: "ESNext", moduleResolution: "bundler" },
        }),
      );
      write(
        "src/mod.ts",
        'export * from "./core/a.ts";\nexport * from "./agent/c.ts";\nexport * from "./runtime/d.ts";\nexport * from "./stray.ts";\n',
      );
      write("src/core/a.ts", 'import { b } from "../cli/b.ts";\nexport const a = b;\n'); // core -> cli: upward
      write("src/cli/b.ts", "export const b = 1;\n");
      write("src/agent/c.ts", 'import { e } from "./e.ts";\nexport const c = 1;\nexport { e };\n');
      write("src/agent/e.ts", 'import { c } from "./c.ts";\nexport const e = c;\n'); // cycle
      write("src/runtime/d.ts", 'import { t } from "../../test/t.ts";\nexport const d = t;\n'); // src -> test
      write("test/t.ts", "export const t = 1;\n");
      write("src/stray.ts", "export const stray = 1;\n"); // in no layer
      const rules = cruise(dir)
        .violations.map((v) => v.rule.name)
        .sort();
      expect(rules).toContain("layer-core");
      expect(rules).toContain("no-circular");
      expect(rules).toContain("no-src-to-test");
      expect(rules).toContain("to-a-layer");
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe("no library layer owns the process", () => {
  // Signals, exit and the process's listeners belong to the host
  // (src/host/process.ts) and the front ends; libraries hold clean-ups
  // (src/core/cleanup.ts). process.kill(pid, …) of a child is fine.
  const FRONT = /^src\/(cli|server|host)\//;
  const CALLS = [
    "process.on(",
    "process.once(",
    "process.exit(",
    "process.off(",
    "process.listeners(",
    "process.removeListener(",
    "process.addListener(",
    "process.prependListener(",
  ];

  function sources(dir: string): string[] {
    const out: string[] = [];
    for (const e of fs.readdirSync(path.join(REPO_ROOT, dir), { withFileTypes: true })) {
      const rel = `${dir}/${e.name}`;
      if (e.isDirectory()) out.push(...sources(rel));
      else if (e.name.endsWith(".ts")) out.push(rel);
    }
    return out;
  }

  test("outside src/cli, src/server and src/host nothing calls process.on/once/off/exit/listeners", () => {
    const found: string[] = [];
    for (const file of sources("src")) {
      if (FRONT.test(file)) continue;
      const lines = fs.readFileSync(path.join(REPO_ROOT, file), "utf8").split("\n");
      lines.forEach((line, i) => {
        // `globalThis.process.on(` and `proc.on(` with `const proc = process` count too
        const code = line.replace(/globalThis\.process/g, "process");
        for (const call of CALLS) if (code.includes(call)) found.push(`${file}:${i + 1}: ${line.trim()}`);
        if (/=\s*(globalThis\.)?process\s*;/.test(line)) found.push(`${file}:${i + 1}: ${line.trim()} (an alias of process)`);
      });
    }
    if (found.length > 0) console.error(`process signal/exit handling in a library layer:\n  ${found.join("\n  ")}`);
    expect(found).toEqual([]);
  });
});
