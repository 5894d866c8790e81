import { describe, expect, test } from "bun:test";
import { spawn } from "node:child_process";
import { open, type FileHandle } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRuntime } from "../../../src/runtime/index.ts";
import type { ToolMiddleware } from "../../../src/runtime/middleware/types.ts";
import type { ToolDefinition } from "../../../src/tools/definition.ts";
import { deferred } from "../../support/agent.ts";

/** A pass-through middleware, so calls take the chain path. */
const passThrough: ToolMiddleware = (ctx, next) => next(ctx);

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe("timeouts, cancellation and released resources through the chain (issue 4 §5)", () => {
  for (const [label, middleware] of [
    ["chain", [passThrough]],
    ["fast path", []],
  ] as const) {
    test(`${label}: a child process spawned by a tool is killed on TIMEOUT`, async () => {
      let pid = 0;
      const exited = deferred<string | null>();
      const spawner: ToolDefinition = {
        name: "spawner",
        description: "",
        parameters: { type: "object" },
        timeoutMs: 30,
        handler: (_a, ctx) =>
          new Promise((resolve, reject) => {
            const child = spawn("sleep", ["30"], { signal: ctx.signal, stdio: "ignore" });
            pid = child.pid!;
            child.on("exit", (_code, signal) => exited.resolve(signal as string | null));
            child.on("error", (e) => (e.name === "AbortError" ? undefined : reject(e)));
            child.on("close", () => resolve("done"));
          }),
      };
      const rt = createRuntime({ builtins: false, tools: [spawner], middleware: [...middleware] });
      const env = await rt.dispatchCall({ id: "t", tool: "spawner", arguments: {}, shape: "agentcore" });
      expect(env.error?.code).toBe("TIMEOUT");
      expect(env.error?.details).toEqual({ timeout_ms: 30 });
      expect(pid).toBeGreaterThan(0);
      expect(await exited.promise).toBe("SIGTERM");
      expect(alive(pid)).toBe(false);
    });
  }

  test("a file handle opened by a tool is closed on TIMEOUT (the tool listens to its signal)", async () => {
    let handle: FileHandle | undefined;
    const closed = deferred();
    const reader: ToolDefinition = {
      name: "holder",
      description: "",
      parameters: { type: "object" },
      handler: async (_a, ctx) => {
        handle = await open(join(tmpdir(), `agentcore-mw-${process.pid}.tmp`), "w");
        const h = handle;
        const release = () => void h.close().then(() => closed.resolve());
        // On a loaded machine the timeout can pass while open() runs: a tool
        // that listens to its signal also checks whether it already fired.
        if (ctx.signal.aborted) release();
        else ctx.signal.addEventListener("abort", release, { once: true });
        await new Promise(() => {}); // never finishes by itself
      },
    };
    const rt = createRuntime({ builtins: false, tools: [reader], middleware: [passThrough], defaultTimeoutMs: 30 });
    const env = await rt.dispatchCall({ id: "f", tool: "holder", arguments: {}, shape: "agentcore" });
    expect(env.error).toMatchObject({ code: "TIMEOUT", details: { timeout_ms: 30 } }); // the runtime default applies
    await closed.promise;
    expect(handle!.fd).toBe(-1);
    await expect(handle!.stat()).rejects.toThrow();
  });

  test("the handler's signal carries a TimeoutError on timeout", async () => {
    const reason = deferred<unknown>();
    const t: ToolDefinition = {
      name: "slow",
      description: "",
      parameters: { type: "object" },
      timeoutMs: 10,
      handler: (_a, ctx) => new Promise(() => ctx.signal.addEventListener("abort", () => reason.resolve(ctx.signal.reason))),
    };
    const rt = createRuntime({ builtins: false, tools: [t], middleware: [passThrough] });
    expect((await rt.dispatchCall({ id: "s", tool: "slow", arguments: {}, shape: "agentcore" })).error?.code).toBe("TIMEOUT");
    expect(((await reason.promise) as DOMException).name).toBe("TimeoutError");
  });

  test("cancelling settles every call in flight (CANCELLED) and aborts their signals", async () => {
    const started = [deferred(), deferred()];
    const aborted: boolean[] = [];
    let n = 0;
    const t: ToolDefinition = {
      name: "wait",
      description: "",
      effect: "read_only",
      parameters: { type: "object" },
      handler: (_a, ctx) => {
        const k = n++;
        started[k]!.resolve();
        return new Promise(() => ctx.signal.addEventListener("abort", () => aborted.push(true)));
      },
    };
    const rt = createRuntime({ builtins: false, tools: [t], middleware: [passThrough] });
    const ac = new AbortController();
    const calls = [0, 1].map((i) => rt.dispatchCall({ id: `w${i}`, tool: "wait", arguments: {}, shape: "agentcore" }, ac.signal));
    await Promise.all(started.map((d) => d.promise));
    ac.abort();
    const envs = await Promise.all(calls);
    expect(envs.map((e) => e.error?.code)).toEqual(["CANCELLED", "CANCELLED"]);
    expect(aborted).toEqual([true, true]);
  });

  test("an already-aborted caller signal: CANCELLED, no middleware or handler runs", async () => {
    let reached = false;
    const spy: ToolMiddleware = (ctx, next) => ((reached = true), next(ctx));
    const rt = createRuntime({
      builtins: false,
      tools: [{ name: "x", description: "", parameters: { type: "object" }, handler: () => 1 }],
      middleware: [spy],
    });
    const ac = new AbortController();
    ac.abort();
    expect((await rt.dispatchCall({ id: "x", tool: "x", arguments: {}, shape: "agentcore" }, ac.signal)).error?.code).toBe("CANCELLED");
    expect(reached).toBe(false);
  });
});
