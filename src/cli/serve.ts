/**
 * `agentcore serve`: the local API daemon (see docs/daemon.md).
 *
 * Prints its URL and token file to stderr, serves until SIGINT or SIGTERM,
 * then stops gracefully (runs aborted or finished per `--on-shutdown`,
 * journals flushed) and exits 0. Usage errors exit 2.
 *
 * @module
 */
import * as path from "node:path";
import { AgentcoreError, HARD_MAX_BYTES, HARD_MAX_DEPTH } from "../core/errors.ts";
import { isLoopbackBind } from "../server/guard.ts";
import { SHUTDOWN_MODES, startDaemon, type RunningDaemon, type ShutdownMode } from "../server/serve.ts";
import { defaultStateDir, prepareDaemonToken, TOKEN_ENV, type CommittedDaemonToken } from "../server/token.ts";
import { ConfigError, resolveSettings, SettingsFlagError, type HostSettings } from "../host/settings.ts";
import { runtimeOptionsFrom } from "../host/runtime.ts";
import type { LineWriter } from "./output.ts";
import { expectArguments, intOption, parseCommandLine, renderHelp, SERVE_OPTIONS, usageText } from "./args.ts";
import { exitKind } from "./exit.ts";
import { loadCliSkills } from "./skills.ts";
import { isPostgresStore, openStore } from "../host/store.ts";
import { historyMiddleware } from "../runtime/history.ts";
import { SessionError } from "../session/types.ts";
import { SkillError } from "../skills/catalog.ts";

export const SERVE_HELP = renderHelp({
  name: "serve",
  summary: "run the local API daemon",
  usage: ["serve [options]"],
  description: `Runs the local API daemon (HTTP, JSON and SSE under /v1; see docs/daemon.md).
Every route but GET /v1/health needs "Authorization: Bearer <token>". Each
start makes a fresh token and writes it (mode 0600) to a file of this daemon's
own, named after where it listens: <state-dir>/token-<port> on 127.0.0.1,
token-<host>-<port> on another host, token-unix-<name>-<hash> for --unix (see
docs/daemon.md). <state-dir>/token holds the token of the daemon started last.
On stop the daemon removes its own file, and <state-dir>/token if that still
holds its token. With ${TOKEN_ENV} set, that is the token and no file is written.
The URL and the token file are printed on stderr, and for TCP a one-time
sign-in link to the browser console at / (docs/console.md). SIGINT/SIGTERM
stop it gracefully (exit 0).`,
  options: SERVE_OPTIONS,
  examples: ["agentcore serve", "agentcore serve --port 0 --tools read --config agentcore.jsonc"],
  exit: ["0  stopped by SIGINT or SIGTERM", "2  usage error, a bad config, skill or token file, or the address cannot be listened on"],
});

/** A usage error: the message and the pointer to serve's help. Exit 2. */
function fail(message: string): number {
  process.stderr.write(usageText(message, "serve"));
  return 2;
}

/** Not a usage error (a bad config, skill or token file, an address in use): the message alone. Exit 2. */
function failed(message: string): number {
  process.stderr.write(`agentcore serve: ${message}\n`);
  return 2;
}

/** A flag problem of serve: the message and the pointer to its help. */
export class ServeUsageError extends AgentcoreError {
  readonly code: string = "USAGE";
  override name = "ServeUsageError";
}

function int(flag: string, raw: string | undefined, min: number, max: number): number | undefined {
  if (raw === undefined) return undefined;
  try {
    return intOption("serve", flag, raw, min, max);
  } catch (e) {
    throw new ServeUsageError((e as Error).message);
  }
}

/**
 * Cluster mode's set-up: the store opened (its migrations applied), this
 * daemon's cluster part, and the token the daemons of the store share
 * (`AGENTCORE_DAEMON_TOKEN` still wins; each daemon writes its own file).
 */
async function openClusterStore(spec: string, maxActiveRuns: number, stateDir: string) {
  const store = await openStore(spec);
  try {
    const { Cluster } = await import("../server/cluster/cluster.ts");
    const cluster = await Cluster.open({ url: spec.trim(), storage: store.sessions, maxActiveRuns });
    try {
      const own = prepareDaemonToken(stateDir);
      const fromEnv = process.env[TOKEN_ENV];
      const token =
        fromEnv !== undefined && fromEnv !== "" ? own : prepareDaemonToken(stateDir, process.env, await cluster.sharedToken(own.token));
      return { store, cluster, token };
    } catch (e) {
      await cluster.stop();
      throw e;
    }
  } catch (e) {
    await store.close();
    throw e;
  }
}

/** Run the daemon until a signal stops it; resolves to the exit status. */
export async function cmdServe(argv: string[], io: { out: LineWriter }): Promise<number> {
  let parsed;
  try {
    parsed = parseCommandLine("serve", SERVE_OPTIONS, argv);
    // also under --help: `serve bogus --help` is a mistake, not a request for help
    expectArguments("serve", parsed.positionals, 0, 0, "");
  } catch (e) {
    return fail((e as Error).message);
  }
  const v = parsed.values;
  if (v.help) {
    io.out.line(SERVE_HELP.trimEnd());
    io.out.flush();
    return 0;
  }
  let started;
  let tokenInfo: CommittedDaemonToken | undefined;
  let signals: { done: Promise<number>; off(): void } | undefined;
  let storeSetup: Awaited<ReturnType<typeof openClusterStore>> | null = null;
  try {
    if (v.unix !== undefined && (v.host !== undefined || v.port !== undefined))
      throw new ServeUsageError("--unix replaces --host and --port");
    if (v.unix === "") throw new ServeUsageError("--unix needs a path");
    const mode = (v["on-shutdown"] ?? "abort") as ShutdownMode;
    if (!SHUTDOWN_MODES.includes(mode)) throw new ServeUsageError(`--on-shutdown must be abort or finish, got '${v["on-shutdown"]}'`);
    let settings: HostSettings;
    try {
      settings = resolveSettings({
        config: v.config,
        root: v.root,
        maxInputBytes: int("--max-input-bytes", v["max-input-bytes"], 1, HARD_MAX_BYTES),
        maxDepth: int("--max-depth", v["max-depth"], 1, HARD_MAX_DEPTH),
        tools: v.tools,
        skillsDir: v.skills,
        store: v.store,
      });
    } catch (e) {
      if (e instanceof SettingsFlagError) throw new ServeUsageError(e.message);
      throw e;
    }
    const root = settings.root;
    const host = v.host ?? "127.0.0.1";
    const port = int("--port", v.port, 0, 65535) ?? 8787;
    const runtimeOptions = runtimeOptionsFrom(settings);
    if (v.skills !== undefined && v.skills.trim() === "") throw new ServeUsageError("--skills must not be empty");
    let skills;
    try {
      skills = await loadCliSkills(settings.skillsDir, root ?? process.cwd());
    } catch (e) {
      if (e instanceof SkillError) throw new ConfigError(e.message);
      throw e;
    }
    const mcpServers = settings.mcpServers;
    // The store: a postgres:// one puts this daemon in cluster mode (docs/cluster.md); a folder is JSONL journals.
    if (v.store !== undefined && v.store.trim() === "")
      throw new ServeUsageError("--store must not be empty: give a postgres:// URL or a folder");
    const stateDir = path.resolve(v["state-dir"] ?? defaultStateDir());
    storeSetup = null;
    let sessionsDir = v["sessions-dir"];
    // as for agent, chat and sessions: both flags are refused; --sessions-dir wins over AGENTCORE_STORE and the config's store
    if (v.store !== undefined && v["sessions-dir"] !== undefined)
      throw new ServeUsageError("--store and --sessions-dir both name the session store: give one");
    if (settings.store !== undefined && v["sessions-dir"] === undefined) {
      if (isPostgresStore(settings.store)) {
        storeSetup = await openClusterStore(settings.store, int("--max-active-runs", v["max-active-runs"], 1, 100_000) ?? 16, stateDir);
        // the execution history goes to the store too, unless a history file is named
        if (settings.history === undefined)
          runtimeOptions.middleware = [historyMiddleware(storeSetup.store.history!), ...(runtimeOptions.middleware ?? [])];
      } else sessionsDir = (await openStore(settings.store)).location; // a folder (another scheme is refused, naming the two kinds)
    }
    // The token files are written only once the daemon listens (their name
    // needs the port it got): a start that fails must not replace the token
    // of a daemon that is already running.
    const pendingToken = storeSetup?.token ?? prepareDaemonToken(stateDir);
    const allowedHosts = [...(v["allow-host"] ?? [])];
    const wildcard = host === "0.0.0.0" || host === "::" || host === "[::]";
    // A bare name: accepted with the port the daemon really listens on (also with --port 0).
    if (!isLoopbackBind(host) && !wildcard) allowedHosts.push(host.includes(":") && !host.startsWith("[") ? `[${host}]` : host);
    started = await startDaemon({
      app: {
        token: pendingToken.token,
        allowedHosts,
        allowedOrigins: v["allow-origin"] ?? [],
        runtimeOptions,
        policy: settings.policy,
        approvalTimeoutMs: int("--approval-timeout-ms", v["approval-timeout-ms"], 1, 86_400_000) ?? settings.policy?.approval_timeout_ms,
        maxBodyBytes: int("--max-body-bytes", v["max-body-bytes"], 1, HARD_MAX_BYTES),
        maxConcurrent: int("--max-concurrent", v["max-concurrent"], 1, 1_000_000),
        maxActiveRuns: int("--max-active-runs", v["max-active-runs"], 1, 100_000),
        requestTimeoutMs: int("--request-timeout-ms", v["request-timeout-ms"], 1, 86_400_000),
        // Bun cuts a connection idle for 255 s at most: a heartbeat must come sooner.
        heartbeatMs: int("--heartbeat-ms", v["heartbeat-ms"], 10, 240_000),
        sessionsDir,
        historyFile: settings.history,
        ...(storeSetup !== null ? { storage: storeSetup.store.sessions, cluster: storeSetup.cluster } : {}),
        // the store's history, which GET /v1/history (and the console's History page) reads when no file is named
        ...(storeSetup !== null && settings.history === undefined && storeSetup.store.history !== null
          ? { historyReader: storeSetup.store.history }
          : {}),
        ...(v["access-log"] === true ? { accessLog: true } : {}),
        ...(skills !== null ? { skills } : {}),
        ...(settings.projectInstructions === false ? { projectInstructions: false } : {}),
      },
      listen: v.unix !== undefined ? { unix: path.resolve(v.unix) } : { hostname: host, port },
      prepare:
        mcpServers === undefined
          ? undefined
          : async (daemon) => {
              const [{ attachMcpServersInterruptibly }, { McpStartupError }] = await Promise.all([
                import("../host/mcp.ts"),
                import("../mcp/attach.ts"),
              ]);
              // The daemon's own signal handling starts once it listens: until then a
              // signal interrupts the MCP start-up (a server hanging there is
              // stopped, not left behind) and ends the command with 128 + its number.
              try {
                return (await attachMcpServersInterruptibly(daemon.runtime, mcpServers)).close;
              } catch (e) {
                if (e instanceof McpStartupError) throw new ConfigError(e.message);
                throw e;
              }
            },
      onShutdown: mode,
      graceMs: int("--shutdown-grace-ms", v["shutdown-grace-ms"], 0, 86_400_000),
      ...(storeSetup !== null ? { close: () => storeSetup!.store.close() } : {}),
    });
    // The graceful stop is armed as soon as the daemon listens, before it
    // says so: a client that stops it right after the "token file" line
    // must not meet the default action (exit 143, token files left behind).
    signals = stopOnSignals(started, () => tokenInfo);
    try {
      tokenInfo = pendingToken.commit(
        v.unix !== undefined ? { unix: path.resolve(v.unix) } : { hostname: host, port: started.listening.port ?? 0 },
      );
    } catch (e) {
      signals.off();
      await started.stop();
      throw e;
    }
    // A process that ends another way than the signal path still removes its files.
    process.on("exit", tokenInfo.release);
    if (v.unix === undefined && !isLoopbackBind(host)) {
      process.stderr.write(
        `agentcore serve: WARNING: listening on ${host}, which is not loopback: other machines can reach this daemon (the token still guards it)\n`,
      );
    }
    process.stderr.write(`agentcore serve: listening on ${started.url}\n`);
    // The console's sign-in link: a one-time code in the fragment, which no browser sends to a server (docs/console.md).
    const consoleAuth = started.daemon.console;
    if (consoleAuth !== null && v.unix === undefined)
      process.stderr.write(
        `agentcore serve: console ${started.url}/#code=${consoleAuth.issueCode()} (one sign-in, within ${consoleAuth.codeTtlMs / 60_000} minutes)\n`,
      );
    if (storeSetup !== null)
      process.stderr.write(
        `agentcore serve: cluster mode on ${storeSetup.store.location} as ${storeSetup.cluster.nodeId} (the token is the store's)\n`,
      );
    if (tokenInfo.sharedFile !== null)
      process.stderr.write(
        `agentcore serve: ${tokenInfo.sharedFile} holds this token too (the daemon started last on this state directory)\n`,
      );
    process.stderr.write(
      tokenInfo.file !== null ? `agentcore serve: token file ${tokenInfo.file}\n` : `agentcore serve: token from ${TOKEN_ENV}\n`,
    );
  } catch (e) {
    // a start that failed after the store opened lets it go
    if (started === undefined && storeSetup !== null) {
      await storeSetup.cluster.stop();
      await storeSetup.store.close();
    }
    // by the error's code (src/cli/exit.ts): only a flag problem gets the pointer to --help; a config,
    // token, listen or history-log problem says what to fix, as does a TypeError or RangeError of the set-up
    const kind = exitKind(e);
    if (kind === "usage") return fail((e as Error).message);
    // a store that cannot be opened or used (cluster mode's set-up too) says what to check
    if (kind === "message" || e instanceof SessionError || e instanceof TypeError || e instanceof RangeError)
      return failed((e as Error).message);
    throw e;
  }
  return await signals!.done;
}

/**
 * Stop `daemon` gracefully on SIGINT or SIGTERM (a second one aborts what
 * still runs); `done` resolves to the exit status once it has stopped and
 * its token files are removed. `off()` disarms it.
 */
function stopOnSignals(daemon: RunningDaemon, token: () => CommittedDaemonToken | undefined): { done: Promise<number>; off(): void } {
  let resolve!: (status: number) => void;
  const done = new Promise<number>((r) => (resolve = r));
  // The daemon's own token file goes, and <state-dir>/token if it still holds this token.
  const releaseToken = () => {
    const t = token();
    if (t === undefined) return;
    process.off("exit", t.release);
    t.release();
  };
  let signalled = false;
  const onInt = () => onSignal("SIGINT");
  const onTerm = () => onSignal("SIGTERM");
  const off = () => {
    process.off("SIGINT", onInt);
    process.off("SIGTERM", onTerm);
  };
  // The work starts on a later turn of the event loop, never inside the
  // signal's dispatch: aborting a call there would end its child processes
  // and remove the exec tool's own signal listener while the runtime is
  // still calling the listeners, and that listener would then take the
  // signal as unhandled and exit 143.
  const onSignal = (name: string) => void setTimeout(() => handleSignal(name), 0);
  const handleSignal = (name: string) => {
    if (signalled) {
      // A second signal does not wait for the grace period: abort what runs (journals are still flushed).
      const n = daemon.daemon.abortAll("the daemon is shutting down (second signal)");
      process.stderr.write(`agentcore serve: ${name} again: aborting ${n} run(s) and call(s) now\n`);
      return;
    }
    signalled = true;
    process.stderr.write(`agentcore serve: ${name}: stopping\n`);
    daemon.stop().then(
      () => {
        releaseToken();
        process.stderr.write("agentcore serve: stopped\n");
        off();
        resolve(0);
      },
      (e) => {
        releaseToken();
        process.stderr.write(`agentcore serve: error while stopping: ${(e as Error)?.message ?? String(e)}\n`);
        off();
        resolve(1);
      },
    );
  };
  process.on("SIGINT", onInt);
  process.on("SIGTERM", onTerm);
  return { done, off };
}
