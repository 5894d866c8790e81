// The fault test of issue 15 §5 for cluster mode, scaled to these two cores:
// three daemons (the compiled binary) on one PostgreSQL store; scripted runs
// submitted round-robin, each with a side-effecting call that waits for an
// approval (answered through any daemon); one daemon SIGKILLed twice during
// the load and restarted. Every run finishes exactly once, no acknowledged
// record is lost, and no side-effecting call runs twice. A run whose daemon
// died while its approval waited is left suspended by the takeover: it is
// approved and resumed through the session routes, and completes.
// AGENTCORE_CLUSTER_LOAD_RUNS sets the number of runs: 300 in CI (.ci/run
// sets it; the figure, about three minutes on two cores), 24 by default.
import { expect, test } from "bun:test";
import * as path from "node:path";
import { tmpPerTest } from "../support/tmp.ts";
import { ASK, call, clusterFile, config, lines, sse, startDaemon, waitFor, type Daemon } from "../support/cluster.ts";

const tmp = tmpPerTest("agentcore-cluster-load-");
const { db, maybe } = await clusterFile("the cluster load test");
const RUNS = Number(process.env.AGENTCORE_CLUSTER_LOAD_RUNS ?? 24);

maybe("cluster mode under load, with a daemon SIGKILLed twice", () => {
  test(`${RUNS} runs round-robin on three daemons: each finishes exactly once, no call runs twice`, async () => {
    const dir = tmp();
    const cfg = config(dir, ASK);
    // a few runs at a time each, so that the load lasts and a kill finds runs in flight (c, the one killed, takes more)
    const start = (name: string) => startDaemon(db!, dir, name, cfg, ["--max-active-runs", name.startsWith("c") ? "4" : "2"]);
    const daemons: (Daemon | null)[] = [await start("a"), await start("b"), await start("c")];
    const alive = () => daemons.filter((d): d is Daemon => d !== null);
    const ids: string[] = [];
    for (let i = 0; i < RUNS; i++) {
      const d = alive()[i % alive().length]!;
      const r = await call(d, "POST", "/v1/runs", {
        task: `run ${i}`,
        script: [
          {
            content: null,
            tool_calls: [{ id: "w1", name: "exec", arguments: JSON.stringify({ argv: ["sh", "-c", `echo ${i} >> log.txt; sleep 2`] }) }],
          },
          { content: `done ${i}` },
        ],
      });
      expect(r.status).toBe(201);
      ids.push(r.json.run_id);
    }
    // the approver: every pending approval, answered through a daemon other than the one listing it
    let approving = true;
    const approver = (async () => {
      let turn = 0;
      while (approving) {
        const ds = alive();
        for (const d of ds) {
          const list = await call(d, "GET", "/v1/approvals").catch(() => null);
          for (const a of (list?.json?.approvals ?? []) as { approval_id: string }[]) {
            const via = ds[turn++ % ds.length]!;
            void call(via, "POST", `/v1/approvals/${a.approval_id}`, { approved: true }).catch(() => null);
          }
        }
        await Bun.sleep(100);
      }
    })();
    const states = async () => {
      const d = alive()[0]!;
      const out = new Map<
        string,
        { status: string; result: { status: string; output: unknown } | null; session: { session_id: string } }
      >();
      for (const id of ids) {
        const r = await call(d, "GET", `/v1/runs/${id}`).catch(() => null);
        if (r?.status === 200) out.set(id, r.json);
      }
      return out;
    };
    const rested = async () =>
      [...(await states()).values()].filter((s) => s.status !== "running" && s.status !== "queued" && s.result !== null).length;
    // SIGKILL c twice during the load, restarting it each time
    for (const [k, threshold] of [
      [1, 1],
      [2, Math.ceil(RUNS / 3)],
    ] as const) {
      // the kill lands while c runs something of its own
      const busy = async () => {
        const r = await call(daemons[2]!, "GET", "/v1/runs").catch(() => null);
        return ((r?.json?.runs ?? []) as { agent_id?: string; status: string }[]).some(
          (x) => x.agent_id !== undefined && x.status === "running",
        );
      };
      await waitFor(async () => (await rested()) >= threshold && (await busy()), `${threshold} runs to rest, and c to run one`, 240_000);
      daemons[2]!.proc.kill("SIGKILL");
      await daemons[2]!.proc.exited;
      daemons[2] = null;
      daemons[2] = await start(`c${k}`);
    }
    await waitFor(async () => (await rested()) === RUNS, "every run to rest", 300_000);
    approving = false;
    await approver;
    // a run whose approval waited in the killed daemon rests suspended: approve it in its journal, resume it
    const d = alive()[0]!;
    let resumedCount = 0;
    for (const [id, s] of await states()) {
      if (s.status !== "suspended") continue;
      const sid = s.session.session_id;
      const ok = await call(d, "POST", `/v1/sessions/${sid}/approvals/w1`, { approved: true });
      expect(ok.status).toBe(200);
      const i = ids.indexOf(id);
      const resumed = await call(
        d,
        "POST",
        `/v1/sessions/${sid}/resume`,
        { script: [{ content: `done ${i}` }] },
        { accept: "application/json" },
      );
      expect(resumed.status).toBe(201);
      expect(resumed.json.result.status).toBe("completed");
      resumedCount++;
    }
    // each kill landed while c ran something: those runs were taken over (their event streams say so)
    let takenOver = 0;
    for (const id of ids) if ((await sse(d, id)).messages.some((m) => m.event === "run_taken_over")) takenOver++;
    expect(takenOver).toBeGreaterThanOrEqual(2);
    // every run finished exactly once: its session's runs end in one completed run, and the numbers in the log are unique
    const log = lines(path.join(dir, "log.txt"));
    let interrupted = 0;
    expect(new Set(log).size).toBe(log.length);
    for (const [id, s] of await states()) {
      const i = String(ids.indexOf(id));
      const session = await call(d, "GET", `/v1/sessions/${s.session.session_id}`);
      expect(session.status).toBe(200);
      const runs = session.json.session.runs as { result: { status: string; output: unknown } | null }[];
      const completed = runs.filter((r) => r.result?.status === "completed");
      expect(completed.length).toBe(1);
      expect(completed[0]!.result!.output).toBe(`done ${i}`);
      expect(runs.every((r) => r.result !== null)).toBe(true);
      const tool = (session.json.messages as { role: string; tool_call_id?: string; content: string }[]).find(
        (m) => m.role === "tool" && m.tool_call_id === "w1",
      )!;
      const answer = JSON.parse(tool.content) as { status?: string };
      // a call answered interrupted may or may not have run (once at most); any other ran exactly once
      if (answer.status === "interrupted") expect(log.filter((l) => l === i).length).toBeLessThanOrEqual(1);
      else expect(log.filter((l) => l === i).length).toBe(1);
      if (answer.status === "interrupted") interrupted++;
    }
    console.error(
      `cluster load: ${RUNS} runs, ${takenOver} taken over, ${resumedCount} resumed after a suspension, ${interrupted} call(s) answered interrupted`,
    );
  }, 600_000);
});
