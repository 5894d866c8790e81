/**
 * The benchmark report's rendering (scripts/bench/report.ts --from): the
 * table, the target verdicts, one SVG chart per measure, and clear errors for
 * malformed measure files. No benchmark is run and nothing is timed here.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { chartSvg, measureProblems, targetMet, type Measure } from "../../scripts/bench/chart.ts";

const REPO = resolve(import.meta.dir, "../..");
const work = mkdtempSync(join(tmpdir(), "agentcore-report-test-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const version: Measure = {
  id: "startup.version",
  title: "agentcore --version",
  unit: "ms",
  better: "lower",
  reference: "hello-world",
  contenders: [
    { name: "agentcore --version", median: 12, min: 11, max: 14 },
    { name: "hello-world", median: 5, min: 4, max: 6 },
  ],
  ratio: 2.4,
  target: { op: "<=", value: 3, text: "≤ 3× hello-world" },
  notes: "Both built with the same flags.",
};
const daemon: Measure = {
  id: "daemon.throughput",
  title: "daemon <POST> & echo",
  unit: "req/s",
  better: "higher",
  reference: "bare",
  contenders: [
    { name: "agentcore serve", median: 20_000, min: 19_000, max: 21_000 },
    { name: "bare", median: 40_000, min: 39_000, max: 41_000 },
  ],
  ratio: 0.5,
  target: { op: ">=", value: 0.65, text: "≥ 0.65× bare" },
};

function report(dir: string, out: string) {
  return Bun.spawnSync([process.execPath, "scripts/bench/report.ts", "--from", dir, "--out", out], { cwd: REPO });
}

test("renders a table with verdicts, the machine, and one escaped SVG chart per measure", () => {
  const from = join(work, "ok");
  mkdirSync(from);
  writeFileSync(join(from, "startup.json"), JSON.stringify([version]));
  writeFileSync(join(from, "daemon.json"), JSON.stringify([daemon]));
  const out = join(work, "ok-out", "benchmarks.md");
  mkdirSync(join(work, "ok-out"));
  writeFileSync(out, "# Benchmarks\n\nIntro.\n\n## Older figures\n\nkept\n");
  const r = report(from, out);
  expect(r.stderr.toString()).not.toContain("report: no measures");
  expect(r.exitCode).toBe(0);
  const md = readFileSync(out, "utf8");
  expect(md).toContain("| [agentcore --version](#agentcore---version) | 12 ms | hello-world: 5 ms | 2.4× | ≤ 3× hello-world | yes |");
  expect(md).toMatch(/\| 0\.5× \| ≥ 0\.65× bare \| \*\*no\*\* \|/);
  expect(md).toContain("- Machine: ");
  expect(md).toContain("## Older figures\n\nkept"); // the hand-written part survives
  expect(readdirSync(join(work, "ok-out", "bench")).sort()).toEqual(["daemon.throughput.svg", "startup.version.svg"]);
  const svg = readFileSync(join(work, "ok-out", "bench", "daemon.throughput.svg"), "utf8");
  expect(svg).toContain("daemon &lt;POST&gt; &amp; echo");
  expect(svg).not.toContain("<POST>");
  // A second run replaces the block instead of adding one.
  expect(report(from, out).exitCode).toBe(0);
  expect(readFileSync(out, "utf8").split("bench-report:begin").length).toBe(2);
});

test("a malformed measure file is refused with the field that is wrong", () => {
  const from = join(work, "bad");
  mkdirSync(from);
  writeFileSync(join(from, "agent.json"), JSON.stringify([{ ...version, reference: "nobody", ratio: "fast" }]));
  const r = report(from, join(work, "bad.md"));
  expect(r.exitCode).toBe(1);
  const err = r.stderr.toString();
  expect(err).toContain('agent.json[0].reference: "nobody" is not one of the contenders');
  expect(err).toContain("agent.json[0].ratio: expected a finite number");
  writeFileSync(join(from, "agent.json"), "{not json");
  expect(report(from, join(work, "bad.md")).stderr.toString()).toContain("agent.json: not JSON");
});

test("chart and verdict helpers", () => {
  expect(targetMet(version)).toBe(true);
  expect(targetMet(daemon)).toBe(false);
  expect(targetMet({ ...version, target: undefined })).toBeUndefined();
  expect(measureProblems({}, "x")).toEqual(["x: expected a JSON array of measures"]);
  expect(measureProblems([version, daemon], "x")).toEqual([]);
  const svg = chartSvg(version);
  expect(svg.startsWith("<svg ")).toBe(true);
  expect(svg.match(/<rect /g)?.length).toBe(3); // background + two bars
  expect(svg).toContain("stroke-dasharray"); // the target line
});
