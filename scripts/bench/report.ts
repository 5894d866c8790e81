/**
 * The benchmark report: runs the benchmarks that measure the performance
 * targets, each as a child process that writes its measures as JSON, then
 * writes docs/benchmarks.md's generated section (a table of every measure
 * against its reference, the target, and whether it is met) and one SVG chart
 * per measure into docs/bench/.
 *
 *   bun scripts/bench/report.ts                  (npm run bench)
 *   bun scripts/bench/report.ts --only startup,agent
 *   bun scripts/bench/report.ts --from DIR       render from saved JSON files
 *   bun scripts/bench/report.ts --keep DIR       also keep each script's JSON in DIR
 *   bun scripts/bench/report.ts --quick          shorter runs (smoke check, not for the docs)
 *
 * The machine and versions (CPU, cores, memory, OS, Bun, the commit, the
 * peers' versions) are written with the figures, since they hold only for
 * the machine they ran on.
 *
 * @module
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, copyFileSync } from "node:fs";
import * as os from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { buildBinary } from "../build-binary.mjs";
import { anchor, chartSvg, fmt, fmtRatio, type Measure, measureProblems, targetMet } from "./chart.ts";

const REPO = resolve(import.meta.dirname ?? new URL(".", import.meta.url).pathname, "../..");
const BEGIN = "<!-- bench-report:begin (written by scripts/bench/report.ts; edit the script, not this block) -->";
const END = "<!-- bench-report:end -->";

/** The benchmarks behind the report, in the order of the issue's targets. */
interface Bench {
  name: string;
  script: string;
  args: string[];
  quick: string[];
  /** Arguments naming the compiled binary (built once by the report), if the script takes one. */
  binary?: (path: string) => string[];
}
const BENCHES: Bench[] = [
  { name: "startup", script: "startup.ts", args: [], quick: ["--rounds", "3"] },
  { name: "durable", script: "durable-turn.ts", args: [], quick: ["--turns", "50", "--rounds", "3"] },
  { name: "agent", script: "agent.ts", args: ["1000"], quick: ["200"] },
  {
    name: "daemon",
    script: "serve-load.ts",
    args: [],
    quick: ["--duration", "4"],
    binary: (bin) => ["--daemon", `agentcore serve (binary)=${bin}`],
  },
  { name: "run", script: "run.ts", args: [], quick: ["20000"] },
];

const { values } = parseArgs({
  options: {
    only: { type: "string" },
    from: { type: "string" },
    keep: { type: "string" },
    quick: { type: "boolean" },
    out: { type: "string" },
    help: { type: "boolean", short: "h" },
  },
});
if (values.help) {
  console.log(
    [
      "usage: bun scripts/bench/report.ts [--only NAMES] [--from DIR] [--keep DIR] [--quick] [--out FILE]",
      "",
      "Runs the benchmarks of the performance targets and writes the report into",
      "docs/benchmarks.md (between its bench-report markers) and docs/bench/*.svg.",
      "",
      `  --only NAMES  comma-separated subset of: ${BENCHES.map((b) => b.name).join(", ")} (printed; written only with --out)`,
      "  --from DIR    render from the JSON files in DIR (one per benchmark) instead of running",
      "  --keep DIR    keep each benchmark's JSON output in DIR",
      "  --quick       shorter runs, to check the pipeline (figures not fit for the docs)",
      "  --out FILE    write the report to FILE instead of docs/benchmarks.md (charts beside it in bench/)",
    ].join("\n"),
  );
  process.exit(0);
}

const only = values.only?.split(",").map((s) => s.trim());
for (const name of only ?? [])
  if (!BENCHES.some((b) => b.name === name)) {
    console.error(`report: unknown benchmark "${name}"; known: ${BENCHES.map((b) => b.name).join(", ")}`);
    process.exit(2);
  }
const chosen = BENCHES.filter((b) => !only || only.includes(b.name));

/** The binary the daemon benchmark loads: built once, with the release flags (scripts/build-binary.mjs). */
let binary: string | undefined;
function binaryIn(dir: string): string {
  if (binary === undefined) {
    console.error("report: building the agentcore binary (scripts/build-binary.mjs) …");
    binary = buildBinary({ outfile: join(dir, "agentcore"), quiet: true }).outfile;
  }
  return binary;
}

function runBench(b: Bench, dir: string): string {
  const file = join(dir, `${b.name}.json`);
  const bun = process.execPath;
  const args = [
    join(REPO, "scripts/bench", b.script),
    ...(values.quick ? b.quick : b.args),
    ...(b.binary ? b.binary(binaryIn(dir)) : []),
    "--json",
    file,
  ];
  console.error(`report: running ${b.script} ${args.slice(1, -2).join(" ")} …`);
  const t0 = performance.now();
  const r = spawnSync(bun, args, { cwd: REPO, stdio: ["ignore", "inherit", "inherit"] });
  const s = ((performance.now() - t0) / 1000).toFixed(0);
  if (r.status !== 0) throw new Error(`${b.script} failed (exit ${r.status ?? r.signal}) after ${s} s`);
  if (!existsSync(file)) throw new Error(`${b.script} wrote no ${file}: does it take --json FILE?`);
  console.error(`report: ${b.script} done in ${s} s`);
  return file;
}

function readMeasures(file: string): Measure[] {
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(file, "utf8"));
  } catch (e) {
    throw new Error(`${file}: not JSON (${(e as Error).message})`);
  }
  const problems = measureProblems(value, file);
  if (problems.length) throw new Error(problems.join("\n"));
  return value as Measure[];
}

function git(...args: string[]): string {
  const r = spawnSync("git", args, { cwd: REPO, encoding: "utf8" });
  return r.status === 0 ? r.stdout.trim() : "unknown";
}

function peerVersion(name: string): string {
  const p = join(REPO, "scripts/bench/node_modules", name, "package.json");
  if (!existsSync(p)) return "not installed";
  return (JSON.parse(readFileSync(p, "utf8")) as { version: string }).version;
}

function machine(): string[] {
  const cpus = os.cpus();
  const dirty = git("status", "--porcelain", "--", "src", "asm", "scripts/bench") !== "";
  return [
    `- Machine: ${cpus[0]?.model ?? "unknown CPU"}, ${cpus.length} cores, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, ${os.type()} ${os.release()} (${os.arch()})`,
    `- Runtime: Bun ${process.versions.bun ?? "?"}; agentcore at commit ${git("rev-parse", "--short", "HEAD")}${dirty ? " with uncommitted changes" : ""}`,
    `- Peers: @mariozechner/pi-agent-core ${peerVersion("@mariozechner/pi-agent-core")}, @openai/agents-core ${peerVersion("@openai/agents-core")}; load generator ${/wrk \S*?(\d+\.\d+\.\d+)/.exec(spawnSync("wrk", ["-v"], { encoding: "utf8" }).stdout ?? "")?.[0]?.replace(/ \S*?(?=\d)/, " ") ?? "wrk: not found"}`,
    `- ${values.from ? "Rendered" : "Run"} on ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC${values.from ? " from measures saved earlier (--from), on the machine above" : ""}${values.quick ? " with --quick (short runs: not the published figures)" : ""}`,
  ];
}

function render(measures: Measure[], chartDir: string, chartRel: string): string {
  const lines: string[] = [BEGIN, "", "## The performance targets", ""];
  lines.push(
    "Each figure is the median of alternating rounds against its reference, in one run of",
    "`npm run bench`; the ratio is agentcore's median ÷ the reference's. The bars in each",
    "chart are medians, the thin line the range over the rounds, the dashed line the target.",
    "",
    ...machine(),
    "",
    "| measure | agentcore | reference | ratio | target | met |",
    "|---|---|---|---|---|---|",
  );
  for (const m of measures) {
    const ref = m.contenders.find((c) => c.name === m.reference)!;
    const met = targetMet(m);
    lines.push(
      `| [${m.title}](#${anchor(m.title)}) | ${fmt(m.contenders[0]!.median)} ${m.unit} | ${m.reference}: ${fmt(ref.median)} ${m.unit} | ${fmtRatio(m)}× | ${m.target?.text ?? "—"} | ${met === undefined ? "—" : met ? "yes" : "**no**"} |`,
    );
  }
  lines.push("");
  mkdirSync(chartDir, { recursive: true });
  for (const m of measures) {
    const svg = `${m.id}.svg`;
    writeFileSync(join(chartDir, svg), chartSvg(m));
    lines.push(`### ${m.title}`, "", `![${m.title}](${chartRel}/${svg})`, "");
    lines.push("| contender | median | min | max |", "|---|---|---|---|");
    for (const c of m.contenders) lines.push(`| ${c.name} | ${fmt(c.median)} ${m.unit} | ${fmt(c.min)} | ${fmt(c.max)} |`);
    lines.push("");
    if (m.notes) lines.push(m.notes, "");
  }
  lines.push(END);
  return lines.join("\n");
}

const work = mkdtempSync(join(os.tmpdir(), "agentcore-bench-report-"));
try {
  const files: string[] = [];
  if (values.from) {
    for (const b of chosen) {
      const f = join(values.from, `${b.name}.json`);
      if (existsSync(f)) files.push(f);
      else console.error(`report: no ${f}; ${b.name} left out`);
    }
    for (const f of readdirSync(values.from)) {
      const p = join(values.from, f);
      if (f.endsWith(".json") && !files.includes(p) && !BENCHES.some((b) => `${b.name}.json` === f)) files.push(p);
    }
  } else {
    for (const b of chosen) {
      const f = runBench(b, work);
      files.push(f);
      if (values.keep) {
        mkdirSync(values.keep, { recursive: true });
        copyFileSync(f, join(values.keep, `${b.name}.json`));
      }
    }
  }
  const measures = files.flatMap(readMeasures);
  if (measures.length === 0) throw new Error("no measures to report");
  // docs/benchmarks.md holds one whole run, so that its figures share a machine state:
  // a subset (--only, or --from a folder lacking some) is written only where --out says.
  const partial = chosen.length < BENCHES.length || files.length < BENCHES.length;
  if (partial && values.out === undefined) {
    for (const m of measures) console.log(`  ${m.id.padEnd(22)} ${fmtRatio(m).padStart(8)}×  ${m.target?.text ?? ""}`);
    console.error("report: a partial run; docs/benchmarks.md is written from a whole run only (give --out FILE to write this one)");
    process.exit(0);
  }
  const doc = resolve(values.out ?? join(REPO, "docs/benchmarks.md"));
  const chartDir = join(doc, "..", "bench");
  const block = render(measures, chartDir, "bench");
  const text = existsSync(doc) ? readFileSync(doc, "utf8") : "# Benchmarks\n";
  const a = text.indexOf(BEGIN);
  const z = text.indexOf(END);
  let next: string;
  if (a >= 0 && z > a) next = text.slice(0, a) + block + text.slice(z + END.length);
  else {
    // The first run: the block goes after the page's opening paragraph.
    const cut = text.indexOf("\n## ");
    next = cut >= 0 ? `${text.slice(0, cut)}\n${block}\n${text.slice(cut)}` : `${text.trimEnd()}\n\n${block}\n`;
  }
  writeFileSync(doc, next);
  console.log(`report: ${measures.length} measures written to ${doc} and ${chartDir}/`);
  for (const m of measures) {
    const met = targetMet(m);
    console.log(`  ${m.id.padEnd(22)} ${fmtRatio(m).padStart(8)}×  ${m.target ? `${m.target.text}: ${met ? "met" : "NOT met"}` : ""}`);
  }
} catch (e) {
  console.error(`report: ${(e as Error).message}`);
  process.exitCode = 1;
} finally {
  rmSync(work, { recursive: true, force: true });
}
