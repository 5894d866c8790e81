/**
 * Load benchmark of the daemon: `POST /v1/calls` with the echo tool, against
 * a bare `Bun.serve` handler that parses the same JSON and echoes it, with
 * the same load in the same run.
 *
 *   bun scripts/bench/serve-load.ts                 # 30 s x 64 connections each (the figures)
 *   bun scripts/bench/serve-load.ts --duration 5 --connections 16
 *
 * Both servers run as child processes on 127.0.0.1 (so the load generator,
 * autocannon, does not share their event loop); the daemon is the real CLI
 * (`bun src/cli/main.ts serve --port 0`). Each target gets a short warm-up,
 * then the measured load, which alternates between the two in segments of
 * at most 5 s (the same total time each), so that the noise of a shared
 * machine hits both alike. Printed: requests/s, errors (connection errors,
 * timeouts and non-2xx answers), the worst segment's p99 latency, the ratio
 * daemon/bare, and the daemon's RSS after warm-up and after each segment.
 *
 * @module
 */
import { readFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import autocannon from "autocannon";
import { RUNTIME } from "./lib.ts";

const REPO = resolve(import.meta.dirname ?? new URL(".", import.meta.url).pathname, "../..");
const { values } = parseArgs({ options: { duration: { type: "string" }, connections: { type: "string" }, warmup: { type: "string" } } });
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

interface Load {
  rps: number;
  errors: number;
  non2xx: number;
  timeouts: number;
  p99: number;
  total: number;
}

async function load(url: string, headers: Record<string, string>, seconds: number): Promise<Load> {
  const r = await autocannon({ url, method: "POST", headers, body: BODY, connections, duration: seconds, pipelining: 1 });
  return { rps: r.requests.average, errors: r.errors, non2xx: r.non2xx, timeouts: r.timeouts, p99: r.latency.p99, total: r.requests.total };
}

const dir = mkdtempSync(join(tmpdir(), "agentcore-serve-load-"));
const daemon = await spawnUntil(
  [process.execPath, "src/cli/main.ts", "serve", "--port", "0", "--state-dir", join(dir, "state"), "--root", dir],
  { AGENTCORE_TOKEN: TOKEN, HOME: dir, AGENTCORE_LOG_LEVEL: "error" },
  /serve: listening on (\S+)\n/,
  "stderr",
);
const bareCode = `const s = Bun.serve({ hostname: "127.0.0.1", port: 0, async fetch(req) { const v = await req.json(); return Response.json(v); } }); console.log("bare " + s.url.href.replace(/\\/$/, ""));`;
const bare = await spawnUntil([process.execPath, "-e", bareCode], {}, /bare (\S+)\n/, "stdout");

try {
  const daemonHeaders = { "content-type": "application/json", authorization: `Bearer ${TOKEN}`, host: new URL(daemon.url).host };
  const bareHeaders = { "content-type": "application/json" };
  // Check both answer what we expect before loading them.
  const probe = await fetch(`${daemon.url}/v1/calls`, { method: "POST", headers: daemonHeaders, body: BODY });
  const probeText = await probe.text();
  if (probe.status !== 200 || !probeText.includes('"success":true')) throw new Error(`daemon probe failed: ${probe.status} ${probeText}`);
  if (warmup > 0) {
    await load(`${daemon.url}/v1/calls`, daemonHeaders, warmup);
    await load(bare.url, bareHeaders, warmup);
  }
  // The load alternates between the two targets in segments of at most 5 s
  // (same total duration each), so a noisy machine hits both alike.
  const segments = Math.max(1, Math.round(duration / 5));
  const seg = duration / segments;
  const rssStart = rssMiB(daemon.proc.pid);
  const samples: number[] = [rssStart];
  const ds: Load[] = [];
  const bs: Load[] = [];
  for (let i = 0; i < segments; i++) {
    if (i % 2 === 0) {
      ds.push(await load(`${daemon.url}/v1/calls`, daemonHeaders, seg));
      samples.push(rssMiB(daemon.proc.pid));
      bs.push(await load(bare.url, bareHeaders, seg));
    } else {
      bs.push(await load(bare.url, bareHeaders, seg));
      ds.push(await load(`${daemon.url}/v1/calls`, daemonHeaders, seg));
      samples.push(rssMiB(daemon.proc.pid));
    }
  }
  const rssEnd = samples.at(-1)!;
  const sum = (xs: Load[]): Load => ({
    rps: xs.reduce((a, x) => a + x.total, 0) / duration,
    errors: xs.reduce((a, x) => a + x.errors, 0),
    non2xx: xs.reduce((a, x) => a + x.non2xx, 0),
    timeouts: xs.reduce((a, x) => a + x.timeouts, 0),
    p99: Math.max(...xs.map((x) => x.p99)),
    total: xs.reduce((a, x) => a + x.total, 0),
  });
  const d = sum(ds);
  const b = sum(bs);

  const row = (name: string, l: Load) =>
    `${name.padEnd(34)} ${l.rps.toFixed(0).padStart(8)} req/s  ${String(l.total).padStart(9)} requests  errors ${l.errors}  timeouts ${l.timeouts}  non-2xx ${l.non2xx}  p99 ${l.p99} ms`;
  console.log(`serve load (${RUNTIME}, ${connections} connections, ${duration} s each in ${segments} alternating segments, loopback, autocannon)`);
  console.log(row("daemon POST /v1/calls (echo)", d));
  console.log(row("bare Bun.serve JSON echo", b));
  console.log(`ratio daemon / bare: ${(d.rps / b.rps).toFixed(2)}x (target >= 0.6x)`);
  console.log(`daemon RSS: start ${rssStart} MiB, end ${rssEnd} MiB (after each daemon segment: ${samples.slice(1).join(" ")} MiB)`);
  console.log(`per segment req/s, daemon: ${ds.map((x) => x.rps.toFixed(0)).join(" ")}; bare: ${bs.map((x) => x.rps.toFixed(0)).join(" ")}`);
  const failures = d.errors + d.timeouts + d.non2xx;
  if (failures > 0) {
    console.log(`FAIL: the daemon had ${failures} failed requests`);
    process.exitCode = 1;
  }
} finally {
  daemon.proc.kill("SIGTERM");
  bare.proc.kill("SIGTERM");
  await Promise.all([daemon.proc.exited, bare.proc.exited]);
  rmSync(dir, { recursive: true, force: true });
}
