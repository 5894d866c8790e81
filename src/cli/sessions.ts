/**
 * `agentcore sessions …`: read and branch durable agent sessions (JSONL
 * journals in `--sessions-dir`, default `.agentcore/sessions` under the root).
 *
 *   list | show ID [--branch B] | tree ID | fork ID [--from RECORD] [--name B] [--branch B]
 *   | rollback ID --to RECORD [--name B] [--branch B] | retry ID --run RUN [--name B] [--branch B]
 *   | recover ID [--branch B] [--force] | delete ID --yes [--force]
 *   | approvals ID [--branch B] | approve ID CALL [--reason TEXT] [--branch B] | deny ID CALL [--reason TEXT] [--branch B]
 *   | export ID [--out FILE] | import FILE|- [--as ID]
 *
 * The store is `--store` (a JSONL folder or a postgres:// URL), else
 * `--sessions-dir`, else AGENTCORE_STORE, else the config's `store`, else
 * `.agentcore/sessions` under the root; opened through the host's
 * openStore and closed at the end. `--store` and `--sessions-dir` together
 * are a usage error.
 *
 * A RECORD is its revision as `r7`, its id, or a unique prefix of the id (at
 * least 4 characters); a RUN its id or a unique prefix (src/session/manage.ts).
 *
 * Readable by default, JSON with `--json`. Usage and journal errors exit 2
 * (journal errors without the usage hint).
 *
 * @module
 */
import * as fs from "node:fs";
import * as path from "node:path";
import {
  firstWord,
  nearest,
  optionsOf,
  parseCommandLine,
  renderHelp,
  SESSIONS_SUBCOMMANDS,
  type SessionsValues,
  shown,
  UsageError,
  usageText,
} from "./args.ts";
import { JsonlSessionStorage } from "../session/jsonl.ts";
import { type JournalStorage, repairMessage } from "../session/journal.ts";
import { exportSession, exportSessionBlobs, importSession } from "../session/transfer.ts";
import { openStore, type OpenedStore } from "../host/store.ts";
import { ConfigError, resolveSettings } from "../host/settings.ts";
import {
  branchHeads,
  branchPointProblem,
  deleteSession,
  liveRunMarks,
  requireRecords,
  resolveRecordRef,
  resolveRunRef,
  revisionRef,
  sessionActivity,
  shellWord,
  sourceBranchFor,
} from "../session/manage.ts";
import {
  emptySession,
  pendingApprovals,
  type SessionBranch,
  type SessionCheckout,
  SessionConflictError,
  SessionError,
  SessionNotFoundError,
  type SessionRecord,
  SessionValidationError,
  sessionMessages,
} from "../session/types.ts";
import type { LineWriter } from "./output.ts";
import { SESSIONS_HELP, SUBCOMMAND_HELP } from "./sessions-help.ts";
import { Progress } from "./progress.ts";
import { decideApproval, SessionApprovalError } from "../session/approvals.ts";

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
  // the subcommand first, then its own options: each subcommand takes exactly its flags
  const { word: sub, rest } = firstWord(argv, optionsOf("sessions"));
  if (sub === undefined) {
    if (rest.includes("--help") || rest.includes("-h")) {
      out.line(SESSIONS_HELP.trimEnd());
      out.line("");
      out.line("Run 'agentcore sessions SUBCOMMAND --help' for one subcommand's options and an example.");
      out.flush();
      return 0;
    }
    return fail(`missing subcommand: ${Object.keys(SESSIONS_SUBCOMMANDS).join(", ")}`);
  }
  if (!Object.hasOwn(SESSIONS_SUBCOMMANDS, sub)) {
    const guess = nearest(sub, Object.keys(SESSIONS_SUBCOMMANDS));
    return fail(
      `unknown subcommand '${shown(sub)}'${guess !== undefined ? `; did you mean '${guess}'?` : ` (known: ${Object.keys(SESSIONS_SUBCOMMANDS).join(", ")})`}`,
    );
  }
  const subName = sub as keyof typeof SESSIONS_SUBCOMMANDS;
  let v: SessionsValues;
  let positionals: string[];
  try {
    ({ values: v, positionals } = parseCommandLine(`sessions ${subName}`, SESSIONS_SUBCOMMANDS[subName], rest) as {
      values: SessionsValues;
      positionals: string[];
    });
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    process.stderr.write(usageText(e.message, e.command));
    return 2;
  }
  if (v.help) {
    out.line(
      renderHelp({
        name: `sessions ${subName}`,
        summary: "",
        options: SESSIONS_SUBCOMMANDS[subName],
        ...SUBCOMMAND_HELP[subName],
      }).trimEnd(),
    );
    out.flush();
    return 0;
  }
  const takesCall = sub === "approve" || sub === "deny";
  const [id, ...extra] = positionals;
  const call = takesCall ? extra.shift() : undefined;
  if (takesCall && id !== undefined && call === undefined) {
    process.stderr.write(
      usageText(
        `${sub} needs the session id and the call id: agentcore sessions ${sub} ID CALL (agentcore sessions approvals ID lists them)`,
        `sessions ${subName}`,
      ),
    );
    return 2;
  }
  if (extra.length > 0) {
    process.stderr.write(
      usageText(
        `unexpected argument '${shown(extra[0]!)}': ${subName} takes ${subName === "list" ? "no arguments" : takesCall ? "two: the session id and the call id" : subName === "import" ? "one: the journal FILE (or -)" : "one: the session id"}`,
        `sessions ${subName}`,
      ),
    );
    return 2;
  }
  // A usage error of this subcommand points at its own help.
  const subFail = (message: string) => {
    process.stderr.write(usageText(message, `sessions ${subName}`));
    return 2;
  };
  if (sub === "list" ? id !== undefined : id === undefined)
    return subFail(
      sub === "list"
        ? `list takes no arguments, got '${shown(id!)}'`
        : sub === "import"
          ? "import needs the journal: a FILE written by agentcore sessions export, or - for stdin"
          : `${sub} needs the session id`,
    );
  // A torn last line (a write a crash cut short) is reported when found, and when cut off (recover).
  const note = (text: string) => process.stderr.write(`agentcore sessions: ${text}\n`);
  if (v.store !== undefined && v["sessions-dir"] !== undefined)
    return subFail(
      "--store and --sessions-dir both say where the sessions are: give one (--sessions-dir DIR is the same as --store DIR; a postgres:// store needs --store)",
    );
  let store: OpenedStore;
  try {
    // --sessions-dir is a flag, so it wins over AGENTCORE_STORE and the config's store.
    const settings = resolveSettings({ config: v.config, store: v.store, root: v.root });
    const spec = v["sessions-dir"] !== undefined ? undefined : settings.store;
    store = await openStore(spec, {
      root: settings.root,
      sessionsDir: v["sessions-dir"] ?? defaultSessionsDir(settings.root),
      onRepair: (r) => note(repairMessage(r)),
    });
  } catch (e) {
    if (e instanceof SessionError || e instanceof ConfigError) return journalError(e.message);
    throw e;
  }
  const storage = store.sessions;
  const jsonl = storage instanceof JsonlSessionStorage ? storage : null;
  const json = v.json === true;
  const emit = (value: unknown, text: string[]) => {
    if (json) out.line(JSON.stringify(value));
    else for (const l of text) out.line(l);
    out.flush();
  };
  // The same directory options again, so a printed command works as it is.
  const dirArgs = [
    ...(v["sessions-dir"] !== undefined ? ["--sessions-dir", shellWord(v["sessions-dir"])] : []),
    // the URL without its password (put it back, or set AGENTCORE_STORE)
    ...(v.store !== undefined ? ["--store", shellWord(store.kind === "postgres" ? store.location : v.store)] : []),
    ...(v.config !== undefined ? ["--config", shellWord(v.config)] : []),
    ...(v.root !== undefined ? ["--root", shellWord(v.root)] : []),
  ]
    .map((a) => ` ${a}`)
    .join("");
  try {
    switch (sub) {
      case "list": {
        const rows = [];
        let unreadable = 0;
        for (const u of (await jsonl?.unreadableJournals()) ?? []) note(`${u.file}: ${u.problem}`);
        for (const s of await storage.listSessions()) {
          try {
            const torn = (await jsonl?.tornTail(s)) ?? null;
            if (torn !== null) note(repairMessage(torn));
            const branches = await storage.listBranches(s);
            const records = await storage.records(s);
            const main = await storage.load(s);
            const { last_activity } = sessionActivity(storage, s, records);
            rows.push({
              session_id: s,
              records: records.length,
              branches: branches.map((b) => b.branch_id),
              runs: main?.runs.length ?? 0,
              last_activity,
            });
          } catch (err) {
            // One corrupt journal must not hide the others: list them, name this one, exit 1.
            if (!(err instanceof SessionError)) throw err;
            unreadable += 1;
            note(
              `session '${visible(s)}' is left out: ${err.message} (agentcore sessions delete ${shellWord(s)} --yes${dirArgs} removes it)`,
            );
          }
        }
        // the most recently active first (a session with no known time last), then by id
        rows.sort((a, b) => (b.last_activity ?? "").localeCompare(a.last_activity ?? "") || a.session_id.localeCompare(b.session_id));
        emit(
          rows,
          rows.length === 0
            ? ["no sessions"]
            : rows.map(
                (r) =>
                  `${localTime(r.last_activity)}  ${visible(r.session_id)}  records ${r.records}  runs ${r.runs}  branches ${r.branches.map(visible).join(", ")}`,
              ),
        );
        return unreadable > 0 ? 1 : 0;
      }
      case "show": {
        const branch = v.branch ?? "main";
        const torn = (await jsonl?.tornTail(id!)) ?? null;
        if (torn !== null) note(repairMessage(torn));
        let c = await storage.checkout(id!, branch);
        // A journal with no whole record yet (its first write was torn): an empty session.
        if (c === null && branch === "main" && (await storage.exists(id!))) {
          c = {
            session: emptySession(id!, null),
            branch: { branch_id: "main", head_id: null, created_revision: 0, base_record_id: null, source_branch_id: null, intent: null },
            head: null,
          };
        }
        if (c === null) {
          const records = await requireRecords(storage, id!);
          return journalError(`session '${id}' has no branch '${branch}' (${branchList(records)})`);
        }
        const messages = sessionMessages(c.session);
        const text = [
          `session ${visible(id!)}  branch ${visible(branch)}  agent ${c.session.agent_id ?? "-"}  head ${c.head?.record_id ?? "-"} (${c.head ? revisionRef(c.head.revision) : "no records"})`,
          `runs (${c.session.runs.length}):`,
          ...c.session.runs.map(
            (r) =>
              `  ${r.run_id}  ${r.intent}  ${r.result === null ? "unfinished" : `${r.result.status} (${r.result.stop_reason})`}${r.task !== null ? `  ${JSON.stringify(clip(r.task, 80))}` : ""}`,
          ),
          `messages (${messages.length}):`,
          ...messages.map((m) => {
            const calls =
              m.role === "assistant" && m.tool_calls
                ? `  calls ${m.tool_calls.map((t) => `${t.function.name}(${clip(t.function.arguments, 40)})`).join(", ")}`
                : "";
            return `  [${m.role}] ${m.content === null ? "" : clip(m.content)}${calls}`;
          }),
        ];
        emit({ session_id: id, branch: c.branch, head: c.head, session: c.session, messages }, text);
        return 0;
      }
      case "tree": {
        const records = await requireRecords(storage, id!);
        const branches = await storage.listBranches(id!);
        const text = [
          "branches:",
          ...branches.map(
            (b) =>
              `  ${visible(b.branch_id)}${b.intent ? `  (${b.intent} of ${visible(b.source_branch_id ?? "-")} at ${b.base_record_id ?? "the start"})` : ""}  head ${b.head_id}`,
          ),
          "records (revision, id, parent, branch, type; give a record as r7, or its id or first characters):",
          ...records.map((r) => {
            const run = typeof r.data.run_id === "string" ? `  run ${r.data.run_id}` : "";
            const task = r.type === "run_started" ? `  ${JSON.stringify(clip(String(r.data.task), 60))}` : "";
            return `  ${revisionRef(r.revision).padStart(5)}  ${r.record_id}  parent ${r.parent_id ?? "-"}  ${visible(r.branch_id)}  ${r.type}${run}${task}`;
          }),
        ];
        emit({ session_id: id, branches, records }, text);
        return 0;
      }
      case "fork":
      case "rollback": {
        if (sub === "rollback" && v.to === undefined)
          return subFail(
            "rollback needs --to RECORD: a revision such as r7, or a record id or its first characters (agentcore sessions tree ID shows them)",
          );
        const records = await requireRecords(storage, id!);
        const ref = sub === "fork" ? v.from : v.to;
        const heads = branchHeads(records);
        if (v.branch !== undefined && !heads.has(v.branch))
          return journalError(`session '${id}' has no branch '${v.branch}' (${branchList(records)})`);
        let source = v.branch ?? "main";
        let base: SessionRecord;
        if (ref !== undefined) {
          base = resolveRecordRef(records, ref, id!);
          const from = sourceBranchFor(records, base, v.branch);
          if (from === null) {
            return journalError(
              `record ${revisionRef(base.revision)} is not on branch '${v.branch}' (it was written on '${base.branch_id}'): leave out --branch to start from '${base.branch_id}', or choose a record of '${v.branch}' (agentcore sessions tree ${shellWord(id!)}${dirArgs})`,
            );
          }
          source = from;
        } else {
          const head = heads.get(source);
          if (head === undefined) return journalError(`session '${id}' has no branch '${source}' (${branchList(records)})`);
          base = head;
        }
        const taken = nameTaken(records, v.name, id!, dirArgs);
        if (taken !== null) return journalError(taken);
        const live = await liveRuns(storage, id!, records);
        const problem = branchPointProblem(records, base, source, id!, live);
        if (problem !== null) return journalError(`cannot ${sub} session '${id}' at ${revisionRef(base.revision)}: ${problem}`);
        const c: SessionCheckout =
          sub === "fork"
            ? await storage.fork(id!, { fromRecordId: base.record_id, branchId: v.name, sourceBranch: source })
            : await storage.rollback(id!, base.record_id, { branchId: v.name, sourceBranch: source });
        const b = c.branch.branch_id;
        emit(branchJson(c.branch, c), [
          `branch ${visible(b)} created at ${c.branch.base_record_id} (${revisionRef(base.revision)}; ${c.branch.intent} of ${visible(c.branch.source_branch_id ?? source)})`,
          `work on it: agentcore agent --session ${shellWord(id!)} --branch ${shellWord(b)}${dirArgs} "TASK"`,
        ]);
        return 0;
      }
      case "recover": {
        const branch = v.branch ?? "main";
        const r = await storage.recoverRuns(id!, { branch, force: v.force === true, reason: "recovered by 'agentcore sessions recover'" });
        const resume = `agentcore agent --session ${shellQuote(id!)}${branch !== "main" ? ` --branch ${shellQuote(branch)}` : ""} "TASK"`;
        const suspended = r.recovered.some((x) => x.result.stop_reason === "awaiting_approval");
        const b = branch !== "main" ? ` --branch ${shellQuote(branch)}` : "";
        const text =
          r.recovered.length === 0
            ? [`session ${id} branch ${branch}: no unfinished run, nothing to recover`]
            : [
                ...r.recovered.map(
                  (x) =>
                    `run ${x.run_id} closed as ${x.result.status} (${x.result.stop_reason}) after ${x.result.turns} turn(s)${x.cancelled_tool_calls.length > 0 ? `; ${x.cancelled_tool_calls.length} unanswered tool call(s) answered as cancelled` : ""}${x.interrupted_tool_calls.length > 0 ? `; ${x.interrupted_tool_calls.length} call(s) that may have started answered as interrupted (outcome unknown, never replayed)` : ""}${x.resumable_tool_calls.length > 0 ? `; ${x.resumable_tool_calls.length} call(s) left for the resume` : ""}`,
                ),
                suspended
                  ? `session ${id} branch ${branch} waits: see agentcore sessions approvals ${shellQuote(id!)}${b}${dirArgs}, answer with sessions approve|deny, then agentcore agent --session ${shellQuote(id!)}${b} --resume`
                  : `session ${id} branch ${branch} is usable again: ${resume}`,
              ];
        emit(r, text);
        return 0;
      }
      case "approvals": {
        const branch = v.branch ?? "main";
        const c = await storage.checkout(id!, branch);
        if (c === null) {
          const records = await requireRecords(storage, id!);
          return journalError(`session '${id}' has no branch '${branch}' (${branchList(records)})`);
        }
        const pending = pendingApprovals(c.session);
        const b = branch !== "main" ? ` --branch ${shellWord(branch)}` : "";
        emit({ session_id: id, branch_id: branch, pending }, [
          ...(pending.length === 0
            ? [`session ${visible(id!)} branch ${visible(branch)}: no approval waits`]
            : [
                `session ${visible(id!)} branch ${visible(branch)}: ${pending.length} approval(s) wait:`,
                ...pending.map(
                  (a) =>
                    `  ${visible(a.tool_call_id)}  ${visible(a.tool)} (${a.effect})  rule ${visible(a.rule_id ?? "default")}${a.reason ? `  ${JSON.stringify(clip(a.reason, 80))}` : ""}  run ${a.run_id}  ${a.requested_at ?? "-"}\n      arguments ${clip(JSON.stringify(a.arguments) ?? "null", 200)}`,
                ),
                `answer: agentcore sessions approve|deny ${shellWord(id!)} CALL${b}${dirArgs} [--reason TEXT]`,
              ]),
        ]);
        return 0;
      }
      case "approve":
      case "deny": {
        const branch = v.branch ?? "main";
        if (v.reason !== undefined && v.reason.trim() === "") return subFail("--reason must not be empty (or leave it out)");
        const { approval } = await decideApproval(storage, id!, call!, {
          branch,
          approved: sub === "approve",
          reason: v.reason ?? null,
          decidedBy: "agentcore sessions",
        });
        const c = await storage.checkout(id!, branch);
        const left = c === null ? [] : pendingApprovals(c.session);
        const b = branch !== "main" ? ` --branch ${shellWord(branch)}` : "";
        emit(
          { session_id: id, branch_id: branch, tool_call_id: call, approved: sub === "approve", reason: v.reason ?? null, pending: left },
          [
            `call ${visible(call!)} (${visible(approval.tool)}) ${sub === "approve" ? "approved" : "denied"}`,
            left.length > 0
              ? `${left.length} approval(s) still wait: ${left.map((a) => visible(a.tool_call_id)).join(", ")}`
              : `go on with: agentcore agent --session ${shellWord(id!)}${b}${dirArgs} --resume`,
          ],
        );
        return 0;
      }
      case "retry": {
        if (v.run === undefined)
          return subFail("retry needs --run RUN: a run id or its first characters (agentcore sessions show ID lists the runs)");
        const records = await requireRecords(storage, id!);
        const runId = resolveRunRef(records, v.run, id!);
        const started = records.find((r) => r.type === "run_started" && r.data.run_id === runId);
        if (started === undefined) {
          // a --continue run has no task of its own: the task run it continued is the one to retry
          const cont = records.find((r) => r.data.run_id === runId)!;
          const task = [...recordsBefore(records, cont)].reverse().find((r) => r.type === "run_started");
          const hint =
            task !== undefined
              ? `: retry the task run it continued: agentcore sessions retry ${shellWord(id!)} --run ${String(task.data.run_id)}${dirArgs}`
              : "";
          return journalError(`run ${runId} continued an earlier run (agentcore agent --continue) and has no task of its own${hint}`);
        }
        if (v.branch !== undefined && !branchHeads(records).has(v.branch))
          return journalError(`session '${id}' has no branch '${v.branch}' (${branchList(records)})`);
        const source = sourceBranchFor(records, started, v.branch);
        if (source === null) {
          return journalError(
            `run ${runId} was not run on branch '${v.branch}' (it was on '${started.branch_id}'): leave out --branch to retry it from '${started.branch_id}'`,
          );
        }
        const taken = nameTaken(records, v.name, id!, dirArgs);
        if (taken !== null) return journalError(taken);
        const r = await storage.prepareRetry(id!, runId, { branchId: v.name, sourceBranch: source });
        const b = r.checkout.branch.branch_id;
        const command = `agentcore agent --session ${shellQuote(id!)} --branch ${shellQuote(b)}${dirArgs} ${shellQuote(r.task)}`;
        emit({ ...branchJson(r.checkout.branch, r.checkout), task: r.task, retried_run_id: r.retried_run_id, command }, [
          `branch ${b}`,
          `task ${r.task}`,
          `run it: ${command}`,
        ]);
        return 0;
      }
      case "export": {
        // A progress line on a terminal while a large journal is read (not in front of the journal itself).
        const progress = longWork(v.out !== undefined || process.stdout.isTTY !== true);
        progress?.phase("reading the journal");
        const text = await exportSession(storage, id!)
          .catch(async (e) => {
            if (e instanceof SessionNotFoundError) await requireRecords(storage, id!); // names where it looked
            throw e;
          })
          .finally(() => progress?.done());
        // the images' bytes go beside the journal: FILE.jsonl → FILE.blobs/<sha256> (the JSONL store's layout)
        const blobs = await exportSessionBlobs(storage, id!);
        if (blobs.size > 0 && v.out === undefined)
          return journalError(
            `session '${visible(id!)}' holds ${blobs.size} image(s), whose bytes can't go to stdout with the journal: export it with --out FILE.jsonl (the images go to FILE.blobs/ beside it)`,
          );
        if (v.out !== undefined) {
          if (v.out.trim() === "") return subFail("--out must not be empty (or leave it out for stdout)");
          try {
            fs.writeFileSync(v.out, text, { flag: "wx", mode: 0o600 });
            if (blobs.size > 0) {
              const dir = blobsBeside(v.out);
              fs.mkdirSync(dir, { mode: 0o700 });
              for (const [sha, bytes] of blobs) fs.writeFileSync(path.join(dir, sha), bytes, { flag: "wx", mode: 0o600 });
            }
          } catch (e) {
            const code = (e as NodeJS.ErrnoException).code;
            return journalError(
              code === "EEXIST"
                ? `${v.out} exists: nothing was written; choose another --out FILE, or remove it first`
                : `cannot write ${v.out}: ${(e as Error).message}`,
            );
          }
          const n = text.split("\n").length - 1;
          const images = blobs.size > 0 ? `, ${blobs.size} image(s) to ${blobsBeside(v.out)}` : "";
          process.stderr.write(`agentcore sessions: session ${visible(id!)}: ${n} record(s) written to ${v.out}${images}\n`);
        } else {
          out.write(text);
          out.flush();
        }
        return 0;
      }
      case "import": {
        const file = id!;
        let text: string;
        try {
          const bytes = file === "-" ? await readStdin() : fs.readFileSync(file);
          text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
        } catch (e) {
          if (e instanceof TypeError) return journalError(`${file === "-" ? "stdin" : file} is not valid UTF-8: nothing was imported`);
          return journalError(`cannot read ${file}: ${(e as Error).message}`);
        }
        if (v.as !== undefined && v.as.trim() === "") return subFail("--as must not be empty: give the session id to import under");
        let r;
        const progress = longWork(true);
        try {
          r = await importSession(storage, text, {
            as: v.as,
            blobs: file === "-" ? undefined : readBlobsBeside(file),
            source: file === "-" ? "stdin" : file,
            // each line read, then the check of the whole, then the one write
            onProgress: (phase) =>
              phase === "read" ? progress?.tick() : progress?.phase(phase === "checking" ? "checking them" : "writing to the store"),
          });
        } catch (e) {
          progress?.done();
          if (e instanceof SessionConflictError && /exists already/.test(e.message))
            return journalError(
              `${e.message.replace(/: import it under another id.*$/, "")} in ${store.location}: nothing was imported; import it under another id with --as ID, or delete that session first (agentcore sessions delete ${shellWord((v.as ?? "").trim() || sessionIdIn(text))}${dirArgs} --yes)`,
            );
          if (e instanceof SessionValidationError && /belongs to session/.test(e.message))
            return journalError(`${e.message}; a journal holds one session (--as ID renames one whole session, it does not merge two)`);
          throw e;
        }
        progress?.done();
        emit({ ...r, store: store.location }, [
          `session ${visible(r.session_id)} imported into ${store.location}: ${r.records} record(s), ${r.branches.length === 1 ? "branch" : "branches"} ${r.branches.map(visible).join(", ")}${r.source_session_id !== r.session_id ? ` (from '${visible(r.source_session_id)}')` : ""}`,
        ]);
        return 0;
      }
      case "delete": {
        if (jsonl === null) {
          const records = await requireRecords(storage, id!);
          const runs = new Set(records.filter((r) => r.type === "run_started" || r.type === "run_continued").map((r) => r.data.run_id))
            .size;
          const what = `${records.length} record(s), ${runs} run(s), ${branchList(records)}`;
          if (v.yes !== true)
            return journalError(
              `delete removes session '${id}' for good (${what}); nothing was deleted. To confirm: agentcore sessions delete ${shellWord(id!)}${dirArgs} --yes`,
            );
          const del = (storage as unknown as { deleteSession?: (id: string, o: { force?: boolean }) => Promise<unknown> }).deleteSession;
          if (del === undefined) return journalError(`this store (${store.location}) cannot delete sessions`);
          const r = (await del.call(storage, id!, { force: v.force === true })) as { session_id: string; records: number };
          emit({ ...r, store: store.location, deleted: true }, [`session ${visible(id!)} deleted (${what})`]);
          return 0;
        }
        const storage_ = jsonl;
        if (!fs.existsSync(storage_.fileFor(id!))) {
          return journalError(`no session '${id}' in ${storage_.dir}: see the sessions with: agentcore sessions list${dirArgs}`);
        }
        let what: string;
        try {
          const records = await storage.records(id!);
          const runs = new Set(records.filter((r) => r.type === "run_started" || r.type === "run_continued").map((r) => r.data.run_id))
            .size;
          what = `${records.length} record(s), ${runs} run(s), ${branchList(records)}`;
        } catch (e) {
          if (!(e instanceof SessionError)) throw e;
          what = `its journal cannot be read: ${e.message}`;
        }
        if (v.yes !== true) {
          // never a prompt: a script (stdin not a terminal) must say so itself, and so must a person
          return journalError(
            `delete removes session '${id}' for good (${what}); nothing was deleted. To confirm: agentcore sessions delete ${shellWord(id!)}${dirArgs} --yes`,
          );
        }
        const r = await deleteSession(storage_, id!, { force: v.force === true });
        emit({ ...r, deleted: true }, [`session ${visible(id!)} deleted (${what})`]);
        return 0;
      }
    }
  } catch (e) {
    // A journal problem, not a usage one: no usage hint (the message says what to do).
    if (e instanceof SessionConflictError && /^branch '.*' already exists$/s.test(e.message)) {
      return journalError(`${e.message}: choose another --name, or leave --name out for a generated one`);
    }
    if (e instanceof SessionApprovalError && e.problem === "not_pending") {
      const b = e.branchId !== "main" ? ` --branch ${shellWord(e.branchId)}` : "";
      return journalError(`${e.message} (agentcore sessions approvals ${shellWord(e.sessionId)}${b}${dirArgs})`);
    }
    if (e instanceof SessionError) return journalError(e.message);
    throw e;
  } finally {
    await store.close();
  }
  return 2;
}

/** The session id the first line of a journal names ("ID" when there is none to read). */
function sessionIdIn(text: string): string {
  try {
    const id = (JSON.parse(text.slice(0, text.indexOf("\n"))) as { session_id?: unknown }).session_id;
    return typeof id === "string" ? id : "ID";
  } catch {
    return "ID";
  }
}

/** All of stdin. */
async function readStdin(): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** The runs of a session a live process is running, by run id (JSONL: its mark files; otherwise the storage's run owners). */
async function liveRuns(storage: JournalStorage, id: string, records: readonly SessionRecord[]): Promise<Map<string, number>> {
  if (storage instanceof JsonlSessionStorage) return new Map(liveRunMarks(storage, id).map((m) => [m.runId, m.pid] as const));
  const open = new Set<string>();
  for (const r of records) {
    if (r.type === "run_started" || r.type === "run_continued") open.add(String(r.data.run_id));
    else if (r.type === "run_finished") open.delete(String(r.data.run_id));
  }
  const live = new Map<string, number>();
  for (const run of open) {
    const pid = await storage.runOwner(id, run);
    if (pid !== null) live.set(run, pid);
  }
  return live;
}

/** A journal problem: the message says what to do, so no usage hint. Exit 2. */
/** A progress line for export/import (src/cli/progress.ts) when stderr is a terminal and `wanted`; it is erased when the work ends. */
function longWork(wanted: boolean): Progress | null {
  return wanted && process.stderr.isTTY === true ? new Progress({ prefix: "agentcore sessions", noun: "records", quiet: true }) : null;
}

function journalError(message: string): number {
  process.stderr.write(`agentcore sessions: ${message}\n`);
  return 2;
}

/** The branches of a session, for messages: "branches main, exp". */
function branchList(records: readonly SessionRecord[]): string {
  const names = [...branchHeads(records).keys()];
  return `branch${names.length === 1 ? "" : "es"} ${names.map(visible).join(", ")}`;
}

/** Why `--name B` cannot be used, or null. */
function nameTaken(records: readonly SessionRecord[], name: string | undefined, id: string, dirArgs: string): string | null {
  if (name === undefined) return null;
  if (name.trim() === "")
    throw new SessionValidationError("--name must not be empty: give a branch name, or leave --name out for a generated one");
  if (!branchHeads(records).has(name)) return null;
  return `session '${id}' already has a branch '${name}': choose another --name (or leave it out for a generated one), or work on that branch: agentcore agent --session ${shellWord(id)} --branch ${shellWord(name)}${dirArgs} "TASK"`;
}

/** The records on the history of `record`, before it. */
function recordsBefore(records: readonly SessionRecord[], record: SessionRecord): SessionRecord[] {
  const ids = new Map(records.map((r) => [r.record_id, r]));
  const out: SessionRecord[] = [];
  for (
    let r = record.parent_id === null ? undefined : ids.get(record.parent_id);
    r !== undefined;
    r = r.parent_id === null ? undefined : ids.get(r.parent_id)
  )
    out.push(r);
  return out.reverse();
}

/** An ISO time as local "YYYY-MM-DD HH:MM" ("-" when unknown). */
function localTime(iso: string | null): string {
  if (iso === null) return "-".padEnd(16);
  const d = new Date(iso);
  const two = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ${two(d.getHours())}:${two(d.getMinutes())}`;
}

/** Control characters (from a journal anyone could have written) shown as \xNN, never sent raw to the terminal. */
function visible(s: string): string {
  return s.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`);
}

function branchJson(branch: SessionBranch, c: SessionCheckout) {
  return { branch, head: c.head, messages: sessionMessages(c.session).length };
}

function shellQuote(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/** Where the images of journal FILE travel: `NAME.blobs/` beside `NAME.jsonl` (or `FILE.blobs/` for another name). */
function blobsBeside(file: string): string {
  return `${file.replace(/\.jsonl$/, "")}.blobs`;
}

/** The blobs in the folder beside journal `file` (none when there is no such folder). Their hashes are checked by the import. */
function readBlobsBeside(file: string): Map<string, Uint8Array> {
  const dir = blobsBeside(file);
  const out = new Map<string, Uint8Array>();
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return out;
  }
  for (const name of names) if (/^[0-9a-f]{64}$/.test(name)) out.set(name, new Uint8Array(fs.readFileSync(path.join(dir, name))));
  return out;
}
