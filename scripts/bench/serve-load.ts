/**
 * Load benchmark of the daemon: `POST /v1/calls` with the echo tool, against
 * a bare `Bun.serve` handler that parses the same JSON and echoes it, with
 * the same load in the same run.
 *
 *   bun scripts/bench/serve-load.ts                 # 30 s x 64 connections each (the issue's figures)
 *   bun scripts/bench/serve-load.ts --duration 5 --connections 16
 *   bun scripts/bench/serve-load.ts --daemon base=/tmp/agentcore-base --daemon head=/tmp/agentcore-head
 *   bun scripts/bench/serve-load.ts --json daemon.json
 *
 * The load is wrk (2 threads, `--connections` connections) when `wrk` is on
 * PATH, else autocannon; `--load wrk|autocannon` picks one (autocannon loads
 * a server less than wrk and flatters it). `--daemon NAME=BINARY`
 * (repeatable) measures compiled binaries (`BINARY serve`) side by side, e.g.
 * two builds of the same code base; without it the daemon is this checkout's
 * CLI under Bun. Every target is loaded in turn in each segment (the order
 * rotates), and each is given as a ratio against the bare server.
 *
 * Both servers run as child processes on 127.0.0.1 (so the load generator
 * does not share their event loop); the daemon is the real CLI
 * (`bun src/cli/main.ts serve --port 0`), with its bearer token, Host/Origin
 * guard, strict parse, schema validation and dispatch. Once every server has
 * started, and before any request, their idle RSS is sampled (the median of
 * three samples). Each target then gets one probe request and a short
 * warm-up, then the measured load, which alternates between the targets in
 * segments of at most 5 s (the same total time each), so that the noise of a
 * shared machine hits them alike. Printed: requests/s, errors (connection
 * errors, timeouts and non-2xx answers), p99 latency (the median and the
 * worst segment), CPU time per request (user + system, from /proc: steadier
 * than req/s on a machine others load too), RSS idle and after the load, and
 * the ratios daemon/bare of req/s, p99 and idle RSS.
 *
 * `--json FILE` writes the measures `daemon.throughput` (req/s, medians of
 * the segments), `daemon.p99` (median of the segments' p99) and
 * `daemon.rss_idle` (MiB, written as "MB") for scripts/bench/report.ts; with
 * several `--daemon`s, the first is agentcore's figure.
 *
 * @module
 */
import { readFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import type { Measure } from "./chart.ts";
import { median, RUNTIME } from "./lib.ts";

const REPO = resolve(import.meta.dirname ?? new URL(".", import.meta.url).pathname, "../..");
const { values } = parseArgs({
  options: {
    duration: { type: "string" },
    connections: { type: "string" },
    warmup: { type: "string" },
    load: { type: "string" },
    daemon: { type: "string", multiple: true },
    json: { type: "string" },
  },
});
const tool = values.load ?? (Bun.which("wrk") !== null ? "wrk" : "autocannon");
if (tool !== "autocannon" && tool !== "wrk") throw new Error(`--load takes autocannon or wrk, not ${JSON.stringify(tool)}`);
const daemonSpecs = (values.daemon ?? []).map((spec) => {
  const eq = spec.indexOf("=");
  if (eq <= 0 || eq === spec.length - 1) throw new Error(`--daemon takes NAME=BINARY (a compiled agentcore), not ${JSON.stringify(spec)}`);
  return { name: spec.slice(0, eq), cmd: [resolve(spec.slice(eq + 1))] };
});
if (daemonSpecs.length === 0) daemonSpecs.push({ name: "daemon", cmd: [process.execPath, "src/cli/main.ts"] });
const duration = Number(values.duration ?? 30);
const connections = Number(values.connections ?? 64);
const warmup = Number(values.warmup ?? 3);
if (!(duration > 0 && connections > 0 && warmup >= 0)) throw new Error("--duration, --connections and --warmup need positive numbers");

const TOKEN = "b".repeat(64);
const BODY = '{"id":"b1","tool":"echo","arguments":{"message":"hello from the load test","n":42}}';

interface Child {
  proc: ReturnType<typeof Bun.spawn>;
  url: string;
}

async function spawnUntil(cmd: string[], env: Record<string, string>, pattern: RegExp, stream: "stdout" | "stderr"): Promise<Child> {
  const proc = Bun.spawn(cmd, { cwd: REPO, env: { PATH: process.env.PATH ?? "", ...env }, stdout: "pipe", stderr: "pipe" });
  const reader = (proc[stream] as ReadableStream<Uint8Array>).getReader();
  const dec = new TextDecoder();
  let text = "";
  for (;;) {
    const m = pattern.exec(text);
    if (m) {
      // keep draining so the child never blocks on a full pipe
      void (async () => {
        for (;;) if ((await reader.read()).done) return;
      })();
      return { proc, url: m[1]! };
    }
    const { done, value } = await reader.read();
    if (done) throw new Error(`${cmd.join(" ")} exited: ${text}`);
    text += dec.decode(value, { stream: true });
  }
}

function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)![1]);
  return Math.round((kb / 1024) * 10) / 10;
}

const TICK_MS = 10; // USER_HZ = 100 on Linux
/** CPU time (user + system) of a process so far, ms. */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(f[11]) + Number(f[12])) * TICK_MS;
}

interface Load {
  rps: number;
  errors: number;
  non2xx: number;
  timeouts: number;
  p99: number;
  total: number;
}

/** wrk's latency as ms ("812.00us", "1.23ms", "2.01s"). */
function wrkMs(text: string): number {
  const m = /^([\d.]+)(us|ms|s|m)$/.exec(text);
  if (m === null) throw new Error(`unexpected wrk latency ${JSON.stringify(text)}`);
  const n = Number(m[1]);
  return m[2] === "us" ? n / 1000 : m[2] === "ms" ? n : m[2] === "s" ? n * 1000 : n * 60_000;
}

async function wrkLoad(url: string, headers: Record<string, string>, seconds: number): Promise<Load> {
  if (!/^http:\/\/127\.0\.0\.1:\d+\//.test(url + "/")) throw new Error(`wrk loads loopback only, not ${url}`);
  const script = join(dir, "post.lua");
  // wrk sends the URL's Host itself (a second one would be refused).
  const lines = [
    `wrk.method = "POST"`,
    `wrk.body = ${JSON.stringify(BODY)}`,
    ...Object.entries(headers)
      .filter(([k]) => k !== "host")
      .map(([k, v]) => `wrk.headers[${JSON.stringify(k)}] = ${JSON.stringify(v)}`),
  ];
  await Bun.write(script, lines.join("\n") + "\n");
  const secs = Math.max(1, Math.round(seconds));
  const proc = Bun.spawn(["wrk", "-t2", `-c${connections}`, `-d${secs}s`, "--timeout", "5s", "--latency", "-s", script, url], {
    stdout: "pipe",
    stderr: "pipe",
  });
  const timer = setTimeout(() => proc.kill("SIGKILL"), (secs + 15) * 1000);
  const out = await new Response(proc.stdout).text();
  clearTimeout(timer);
  if ((await proc.exited) !== 0) throw new Error(`wrk failed: ${out}${await new Response(proc.stderr).text()}`);
  const total = Number(/(\d+) requests in/.exec(out)?.[1] ?? NaN);
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? NaN);
  const p99 = wrkMs(/^\s+99%\s+(\S+)/m.exec(out)?.[1] ?? "?");
  const sock = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
  return {
    rps,
    errors: sock ? Number(sock[1]) + Number(sock[2]) + Number(sock[3]) : 0,
    non2xx,
    timeouts: sock ? Number(sock[4]) : 0,
    p99,
    total,
  };
}

async function load(url: string, headers: Record<string, string>, seconds: number): Promise<Load> {
  if (tool === "wrk") return wrkLoad(url, headers, seconds);
  const { default: autocannon } = await import("autocannon");
  const r = await autocannon({ url, method: "POST", headers, body: BODY, connections, duration: seconds, pipelining: 1 });
  return { rps: r.requests.average, errors: r.errors, non2xx: r.non2xx, timeouts: r.timeouts, p99: r.latency.p99, total: r.requests.total };
}

const dir = mkdtempSync(join(tmpdir(), "agentcore-serve-load-"));
const bareCode = `const s = Bun.serve({ hostname: "127.0.0.1", port: 0, async fetch(req) { const v = await req.json(); return Response.json(v); } }); console.log("bare " + s.url.href.replace(/\\/$/, ""));`;

interface Target {
  name: string;
  child: Child;
  url: string;
  headers: Record<string, string>;
  daemon: boolean;
  loads: Load[];
  /** CPU ms spent during each measured segment. */
  cpu: number[];
  /** RSS samples after start, before any request. */
  idle: number[];
  /** RSS after each measured segment. */
  rss: number[];
}

const targets: Target[] = [];
const f0 = (n: number) => n.toFixed(0);
const f2 = (n: number) => n.toFixed(2);
try {
  const bare = await spawnUntil([process.execPath, "-e", bareCode], {}, /bare (\S+)\n/, "stdout");
  targets.push({
    name: "bare Bun.serve JSON echo",
    child: bare,
    url: bare.url,
    headers: { "content-type": "application/json" },
    daemon: false,
    loads: [],
    cpu: [],
    idle: [],
    rss: [],
  });
  for (const [i, spec] of daemonSpecs.entries()) {
    const home = join(dir, `d${i}`);
    const child = await spawnUntil(
      [...spec.cmd, "serve", "--port", "0", "--state-dir", join(home, "state"), "--root", dir],
      { AGENTCORE_TOKEN: TOKEN, HOME: home, AGENTCORE_LOG_LEVEL: "error" },
      /serve: listening on (\S+)\n/,
      "stderr",
    );
    const headers = { "content-type": "application/json", authorization: `Bearer ${TOKEN}`, host: new URL(child.url).host };
    targets.push({
      name: `${spec.name} POST /v1/calls (echo)`,
      child,
      url: `${child.url}/v1/calls`,
      headers,
      daemon: true,
      loads: [],
      cpu: [],
      idle: [],
      rss: [],
    });
  }
  // Idle: every server started and settled, no request yet.
  for (let k = 0; k < 3; k++) {
    await Bun.sleep(500);
    for (const t of targets) t.idle.push(rssMiB(t.child.proc.pid));
  }
  for (const t of targets) {
    if (!t.daemon) continue;
    // Check it answers what we expect before loading it.
    const probe = await fetch(t.url, { method: "POST", headers: t.headers, body: BODY });
    const probeText = await probe.text();
    if (probe.status !== 200 || !probeText.includes('"success":true'))
      throw new Error(`${t.name} probe failed: ${probe.status} ${probeText}`);
  }
  if (warmup > 0) for (const t of targets) await load(t.url, t.headers, warmup);
  // The load rotates between the targets in segments of at most 5 s (same
  // total duration each), so a noisy machine hits them all alike.
  const segments = Math.max(1, Math.round(duration / 5));
  const seg = duration / segments;
  for (let i = 0; i < segments; i++) {
    for (let k = 0; k < targets.length; k++) {
      const t = targets[(i + k) % targets.length]!;
      const c0 = cpuMs(t.child.proc.pid);
      t.loads.push(await load(t.url, t.headers, seg));
      t.cpu.push(cpuMs(t.child.proc.pid) - c0);
      t.rss.push(rssMiB(t.child.proc.pid));
    }
  }
  const sum = (xs: Load[]): Load => ({
    rps: xs.reduce((a, x) => a + x.total, 0) / (xs.length * seg),
    errors: xs.reduce((a, x) => a + x.errors, 0),
    non2xx: xs.reduce((a, x) => a + x.non2xx, 0),
    timeouts: xs.reduce((a, x) => a + x.timeouts, 0),
    p99: Math.max(...xs.map((x) => x.p99)),
    total: xs.reduce((a, x) => a + x.total, 0),
  });
  const stats = (xs: number[]) => ({ median: median(xs), min: Math.min(...xs), max: Math.max(...xs) });
  const rpsOf = (t: Target) => stats(t.loads.map((x) => x.rps));
  const p99Of = (t: Target) => stats(t.loads.map((x) => x.p99));
  const idleOf = (t: Target) => stats(t.idle);
  /** CPU µs per request over the measured segments. */
  const cpuPerRequest = (t: Target) => (t.cpu.reduce((a, x) => a + x, 0) * 1000) / t.loads.reduce((a, x) => a + x.total, 0);
  const row = (t: Target) => {
    const l = sum(t.loads);
    return `${t.name.padEnd(34)} ${f0(l.rps).padStart(8)} req/s  ${String(l.total).padStart(9)} requests  errors ${l.errors}  timeouts ${l.timeouts}  non-2xx ${l.non2xx}  p99 median ${f2(p99Of(t).median)} ms, worst ${f2(l.p99)} ms  CPU ${cpuPerRequest(t).toFixed(1)} µs/request  RSS idle ${idleOf(t).median} MiB, after load ${t.rss.at(-1)} MiB`;
  };
  console.log(
    `serve load (${RUNTIME}, ${connections} connections, ${duration} s each in ${segments} rotating segments, loopback, ${tool})`,
  );
  const b = targets[0]!;
  let failures = 0;
  for (const t of targets) {
    console.log(row(t));
    if (!t.daemon) continue;
    const l = sum(t.loads);
    const short = t.name.split(" ")[0];
    console.log(
      `  ratio ${short} / bare: req/s ${f2(rpsOf(t).median / rpsOf(b).median)}x (target >= 0.65x; whole-run rate ${f2(l.rps / sum(b.loads).rps)}x), ` +
        `p99 ${f2(p99Of(t).median / p99Of(b).median)}x (target <= 2x; worst segments ${f2(l.p99 / sum(b.loads).p99)}x), ` +
        `CPU per request ${f2(cpuPerRequest(t) / cpuPerRequest(b))}x, RSS idle ${f2(idleOf(t).median / idleOf(b).median)}x (target <= 1.5x)`,
    );
    failures += l.errors + l.timeouts + l.non2xx;
  }
  console.log(`per segment p99 ms: ${targets.map((t) => `${t.name.split(" ")[0]} ${t.loads.map((x) => x.p99).join(" ")}`).join("; ")}`);
  console.log(`per segment req/s: ${targets.map((t) => `${t.name.split(" ")[0]} ${t.loads.map((x) => f0(x.rps)).join(" ")}`).join("; ")}`);
  console.log(`RSS idle samples MiB: ${targets.map((t) => `${t.name.split(" ")[0]} ${t.idle.join(" ")}`).join("; ")}`);
  if (values.json !== undefined) {
    const daemons = targets.filter((t) => t.daemon);
    const setup = `POST /v1/calls with the echo tool (bearer token, Host/Origin guard, strict parse, schema validation, dispatch) against a bare Bun.serve handler doing JSON parse + stringify; ${tool}${tool === "wrk" ? " -t2" : ""}, ${connections} connections, ${duration} s each in ${segments} rotating segments, loopback, ${RUNTIME}`;
    const measure = (
      id: string,
      title: string,
      unit: string,
      better: "lower" | "higher",
      of: (t: Target) => { median: number; min: number; max: number },
      target: Measure["target"],
      notes: string,
    ): Measure => {
      const contenders = [...daemons, b].map((t) => ({ name: t.name, ...of(t) }));
      return { id, title, unit, better, reference: b.name, contenders, ratio: contenders[0]!.median / of(b).median, target, notes };
    };
    const measures: Measure[] = [
      measure(
        "daemon.throughput",
        "daemon POST /v1/calls (echo), 64 connections",
        "req/s",
        "higher",
        rpsOf,
        { op: ">=", value: 0.65, text: "≥ 0.65× bare Bun.serve" },
        `${setup}; medians of the segments' req/s; errors ${daemons
          .map((t) => {
            const l = sum(t.loads);
            return l.errors + l.timeouts + l.non2xx;
          })
          .join("/")}`,
      ),
      measure(
        "daemon.p99",
        "daemon POST /v1/calls p99 latency",
        "ms",
        "lower",
        p99Of,
        { op: "<=", value: 2, text: "≤ 2× bare Bun.serve" },
        `${setup}; medians of the segments' p99`,
      ),
      measure(
        "daemon.rss_idle",
        "daemon RSS idle",
        "MB",
        "lower",
        idleOf,
        { op: "<=", value: 1.5, text: "≤ 1.5× bare Bun.serve" },
        `VmRSS in MiB after start, before any request (median of 3 samples, 0.5 s apart); after the load: ${targets.map((t) => `${t.name.split(" ")[0]} ${t.rss.at(-1)}`).join(", ")} MiB`,
      ),
    ];
    writeFileSync(values.json, `${JSON.stringify(measures, null, 2)}\n`);
  }
  if (failures > 0) {
    console.log(`FAIL: the daemons had ${failures} failed requests`);
    process.exitCode = 1;
  }
} finally {
  for (const t of targets) t.child.proc.kill("SIGTERM");
  await Promise.all(targets.map((t) => t.child.proc.exited));
  rmSync(dir, { recursive: true, force: true });
}
