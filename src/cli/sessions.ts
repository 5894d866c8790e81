/**
 * `agentcore sessions …`: read and branch durable agent sessions (JSONL
 * journals in `--sessions-dir`, default `.agentcore/sessions` under the root).
 *
 *   list | show ID [--branch B] | tree ID | fork ID [--from RECORD] [--name B]
 *   | rollback ID --to RECORD [--name B] | retry ID --run RUN [--name B]
 *   | recover ID [--branch B] [--force]
 *
 * Readable by default, JSON with `--json`. Usage and journal errors exit 2
 * (journal errors without the usage hint).
 *
 * @module
 */
import * as path from "node:path";
import { parseArgs } from "node:util";
import { JsonlSessionStorage } from "../session/jsonl.ts";
import { repairMessage } from "../session/journal.ts";
import { emptySession, type SessionBranch, type SessionCheckout, SessionError, sessionMessages } from "../session/types.ts";
import type { LineWriter } from "./output.ts";

export const SESSIONS_HELP = `Usage:
  agentcore sessions list                               the sessions in the directory
  agentcore sessions show ID [--branch B]               runs and messages of a branch (default main)
  agentcore sessions tree ID                            branches and every record (revision, id, parent, branch, type)
  agentcore sessions fork ID [--from RECORD] [--name B] new branch at RECORD (default: the head of main)
  agentcore sessions rollback ID --to RECORD [--name B] new branch at RECORD (main is never rewritten)
  agentcore sessions retry ID --run RUN [--name B]      new branch just before run RUN; prints the branch and the
                                                        task. Run it with:
                                                        agentcore agent --session ID --branch BRANCH "TASK"
  agentcore sessions recover ID [--branch B] [--force]  close the runs a crash left unfinished on branch B (default
                                                        main): each gets a run_finished record (cancelled /
                                                        external_abort, "run interrupted"), and tool calls it left
                                                        unanswered a cancelled answer; nothing to do on a healthy
                                                        branch. A run whose process is still alive is refused;
                                                        --force recovers it anyway (when that pid is not agentcore),
                                                        and frees the branch from a claim that pid holds
Options:
  --sessions-dir DIR   journal directory (default: .agentcore/sessions under --root or the current directory;
                       a .agentcore/ that agentcore creates gets a .gitignore holding *)
  --root DIR           the root the default directory is under
  --json               print JSON instead of text

Example: an agent killed mid-run (SIGKILL, a crash) leaves its run unfinished, and the
session refuses new runs until it is recovered:
  agentcore sessions recover demo
  agentcore agent --session demo "pick up where we stopped"
`;

/** Default journal directory under a root. */
export function defaultSessionsDir(root: string | undefined): string {
  return path.join(path.resolve(root ?? "."), ".agentcore", "sessions");
}

const clip = (text: string, max = 100) => {
  const one = text.replace(/\s+/g, " ");
  return one.length > max ? one.slice(0, max - 1) + "…" : one;
};

function fail(message: string): number {
  process.stderr.write(`agentcore sessions: ${message}\nRun 'agentcore sessions --help' for usage.\n`);
  return 2;
}

export async function cmdSessions(argv: string[], io: { out: LineWriter }): Promise<number> {
  const { out } = io;
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        help: { type: "boolean", short: "h" },
        json: { type: "boolean" },
        branch: { type: "string" },
        from: { type: "string" },
        name: { type: "string" },
        to: { type: "string" },
        run: { type: "string" },
        force: { type: "boolean" },
        "sessions-dir": { type: "string" },
        root: { type: "string" },
      },
    });
  } catch (e) {
    return fail((e as Error).message);
  }
  const { values: v, positionals } = parsed;
  if (v.help) {
    out.line(SESSIONS_HELP.trimEnd());
    out.flush();
    return 0;
  }
  const [sub, id, ...extra] = positionals;
  if (sub === undefined) return fail("missing subcommand: list, show, tree, fork, rollback, retry or recover");
  if (extra.length > 0) return fail(`unexpected argument '${extra[0]}'`);
  const allowed: Record<string, string[]> = { list: [], show: ["branch"], tree: [], fork: ["from", "name"], rollback: ["to", "name"], retry: ["run", "name"], recover: ["branch", "force"] };
  const opts = allowed[sub];
  if (opts === undefined) return fail(`unknown subcommand '${sub}'`);
  for (const k of ["branch", "from", "name", "to", "run", "force"] as const) if (v[k] !== undefined && !opts.includes(k)) return fail(`--${k} does not apply to '${sub}'`);
  if (sub === "list" ? id !== undefined : id === undefined) return fail(sub === "list" ? `list takes no arguments, got '${id}'` : `${sub} needs the session id`);
  // A torn last line (a write a crash cut short) is reported when found, and when cut off (recover).
  const note = (text: string) => process.stderr.write(`agentcore sessions: ${text}\n`);
  const storage = new JsonlSessionStorage(v["sessions-dir"] ?? defaultSessionsDir(v.root), { onRepair: (r) => note(repairMessage(r)) });
  const json = v.json === true;
  const emit = (value: unknown, text: string[]) => {
    if (json) out.line(JSON.stringify(value));
    else for (const l of text) out.line(l);
    out.flush();
  };
  try {
    switch (sub) {
      case "list": {
        const rows = [];
        for (const u of await storage.unreadableJournals()) note(`${u.file}: ${u.problem}`);
        for (const s of await storage.listSessions()) {
          const torn = await storage.tornTail(s);
          if (torn !== null) note(repairMessage(torn));
          const branches = await storage.listBranches(s);
          const records = await storage.records(s);
          const main = await storage.load(s);
          rows.push({ session_id: s, records: records.length, branches: branches.map((b) => b.branch_id), runs: main?.runs.length ?? 0 });
        }
        emit(rows, rows.length === 0 ? ["no sessions"] : rows.map((r) => `${r.session_id}  records ${r.records}  runs ${r.runs}  branches ${r.branches.join(", ")}`));
        return 0;
      }
      case "show": {
        const branch = v.branch ?? "main";
        const torn = await storage.tornTail(id!);
        if (torn !== null) note(repairMessage(torn));
        let c = await storage.checkout(id!, branch);
        // A journal with no whole record yet (its first write was torn): an empty session.
        if (c === null && branch === "main" && (await storage.exists(id!))) {
          c = { session: emptySession(id!, null), branch: { branch_id: "main", head_id: null, created_revision: 0, base_record_id: null, source_branch_id: null, intent: null }, head: null };
        }
        if (c === null) return fail(`no session '${id}' with branch '${branch}' in ${storage.dir}`);
        const messages = sessionMessages(c.session);
        const text = [
          `session ${id}  branch ${branch}  agent ${c.session.agent_id ?? "-"}  head ${c.head?.record_id ?? "-"} (revision ${c.head?.revision ?? 0})`,
          `runs (${c.session.runs.length}):`,
          ...c.session.runs.map((r) => `  ${r.run_id}  ${r.intent}  ${r.result === null ? "unfinished" : `${r.result.status} (${r.result.stop_reason})`}${r.task !== null ? `  ${JSON.stringify(clip(r.task, 80))}` : ""}`),
          `messages (${messages.length}):`,
          ...messages.map((m) => {
            const calls = m.role === "assistant" && m.tool_calls ? `  calls ${m.tool_calls.map((t) => `${t.function.name}(${clip(t.function.arguments, 40)})`).join(", ")}` : "";
            return `  [${m.role}] ${m.content === null ? "" : clip(m.content)}${calls}`;
          }),
        ];
        emit({ session_id: id, branch: c.branch, head: c.head, session: c.session, messages }, text);
        return 0;
      }
      case "tree": {
        const records = await storage.records(id!);
        if (records.length === 0) return fail(`no session '${id}' in ${storage.dir}`);
        const branches = await storage.listBranches(id!);
        const text = [
          "branches:",
          ...branches.map((b) => `  ${b.branch_id}${b.intent ? `  (${b.intent} of ${b.source_branch_id} at ${b.base_record_id ?? "the start"})` : ""}  head ${b.head_id}`),
          "records:",
          ...records.map((r) => {
            const run = typeof r.data.run_id === "string" ? `  run ${r.data.run_id}` : "";
            const task = r.type === "run_started" ? `  ${JSON.stringify(clip(String(r.data.task), 60))}` : "";
            return `  ${String(r.revision).padStart(4)}  ${r.record_id}  parent ${r.parent_id ?? "-"}  ${r.branch_id}  ${r.type}${run}${task}`;
          }),
        ];
        emit({ session_id: id, branches, records }, text);
        return 0;
      }
      case "fork":
      case "rollback": {
        if (sub === "rollback" && v.to === undefined) return fail("rollback needs --to RECORD");
        const c: SessionCheckout = sub === "fork"
          ? await storage.fork(id!, { fromRecordId: v.from, branchId: v.name })
          : await storage.rollback(id!, v.to!, { branchId: v.name });
        emit(branchJson(c.branch, c), [`branch ${c.branch.branch_id} created at ${c.branch.base_record_id} (${c.branch.intent} of ${c.branch.source_branch_id})`]);
        return 0;
      }
      case "recover": {
        const branch = v.branch ?? "main";
        const r = await storage.recoverRuns(id!, { branch, force: v.force === true, reason: "recovered by 'agentcore sessions recover'" });
        const resume = `agentcore agent --session ${shellQuote(id!)}${branch !== "main" ? ` --branch ${shellQuote(branch)}` : ""} "TASK"`;
        const text = r.recovered.length === 0
          ? [`session ${id} branch ${branch}: no unfinished run, nothing to recover`]
          : [
            ...r.recovered.map((x) => `run ${x.run_id} closed as ${x.result.status} (${x.result.stop_reason}) after ${x.result.turns} turn(s)${x.cancelled_tool_calls.length > 0 ? `; ${x.cancelled_tool_calls.length} unanswered tool call(s) answered as cancelled` : ""}`),
            `session ${id} branch ${branch} is usable again: ${resume}`,
          ];
        emit(r, text);
        return 0;
      }
      case "retry": {
        if (v.run === undefined) return fail("retry needs --run RUN");
        const r = await storage.prepareRetry(id!, v.run, { branchId: v.name });
        const b = r.checkout.branch.branch_id;
        const command = `agentcore agent --session ${shellQuote(id!)} --branch ${shellQuote(b)} ${shellQuote(r.task)}`;
        emit({ ...branchJson(r.checkout.branch, r.checkout), task: r.task, retried_run_id: r.retried_run_id, command }, [`branch ${b}`, `task ${r.task}`, `run it: ${command}`]);
        return 0;
      }
    }
  } catch (e) {
    // A journal problem, not a usage one: no usage hint (the message says what to do).
    if (e instanceof SessionError) {
      process.stderr.write(`agentcore sessions: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
  return 2;
}

function branchJson(branch: SessionBranch, c: SessionCheckout) {
  return { branch, head: c.head, messages: sessionMessages(c.session).length };
}

function shellQuote(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}
