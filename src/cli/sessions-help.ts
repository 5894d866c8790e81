/**
 * The help of `agentcore sessions`: the overview (`sessions --help`) and each
 * subcommand's usage, description, examples and exit statuses (`sessions SUB
 * --help`; the options come from the tables in args.ts).
 *
 * @module
 */
import type { SESSIONS_SUBCOMMANDS } from "./args.ts";
import { PIPE_HELP } from "./output.ts";

export const SESSIONS_HELP = `Usage:
  agentcore sessions list                               the sessions, the most recently active first, with the
                                                        time of their last record (local time; --json: ISO UTC)
  agentcore sessions show ID [--branch B]               runs and messages of a branch (default main)
  agentcore sessions tree ID                            branches and every record (revision, id, parent, branch, type)
  agentcore sessions fork ID [--from RECORD] [--name B] new branch at RECORD (default: the head of main, or of
                                                        --branch B)
  agentcore sessions rollback ID --to RECORD [--name B] new branch at RECORD (main is never rewritten)
  agentcore sessions retry ID --run RUN [--name B]      new branch just before run RUN; prints the branch and the
                                                        task. Run it with:
                                                        agentcore agent --session ID --branch BRANCH "TASK"
  agentcore sessions delete ID --yes [--force]          delete the session for good: its journal, lock and run
                                                        marks; without --yes nothing is deleted. A run still going
                                                        is refused; --force deletes anyway (when that pid is not
                                                        agentcore)
  agentcore sessions recover ID [--branch B] [--force]  close the runs a crash left unfinished on branch B (default
                                                        main): each gets a run_finished record (cancelled /
                                                        external_abort, "run interrupted"), and tool calls it left
                                                        unanswered a cancelled answer; nothing to do on a healthy
                                                        branch. A run that waited for an approval is suspended
                                                        instead (awaiting_approval), to approve and --resume.
                                                        A run whose process is still alive is refused;
                                                        --force recovers it anyway (when that pid is not agentcore),
                                                        and frees the branch from a claim that pid holds
  agentcore sessions approvals ID [--branch B]          the approvals branch B (default main) waits for: call id,
                                                        tool, effect, rule, reason, redacted arguments
  agentcore sessions approve ID CALL [--reason TEXT]    answer the approval call CALL waits for (journaled); then
  agentcore sessions deny ID CALL [--reason TEXT]       go on with: agentcore agent --session ID --resume
  agentcore sessions export ID [--out FILE]             the session's journal as JSONL (every record, in revision
                                                        order, exactly as a JSONL store holds it) on stdout or FILE
  agentcore sessions import FILE|- [--as ID]            read such a journal into the store (checked whole first;
                                                        nothing is written on error); refuses an id that exists
RECORD is a revision as 'sessions tree' shows it (r7), a record id, or a unique prefix of one (at least
4 characters); RUN is a run id or a unique prefix ('sessions show' lists the runs). fork, rollback and retry
start from the branch that holds RECORD or RUN (main when it does; --branch B to insist on B).

Options:
  --store STORE        where the sessions are: a folder of JSONL journals, or a postgres:// URL (default:
                       AGENTCORE_STORE, else the config's store, else the journal directory)
  --sessions-dir DIR   journal directory (default: .agentcore/sessions under --root or the current directory;
                       a .agentcore/ that agentcore creates gets a .gitignore holding *); not with --store
  --root DIR           the root the default directory is under
  --config FILE        JSONC settings file (its store and root; default: AGENTCORE_CONFIG)
  --json               print JSON instead of text

Example: an agent killed mid-run (SIGKILL, a crash) leaves its run unfinished, and the
session refuses new runs until it is recovered:
  agentcore sessions recover demo
  agentcore agent --session demo "pick up where we stopped"
`;

/** Each subcommand's usage, description and example, for `agentcore sessions SUB --help` (its options come from args.ts). */
export const SUBCOMMAND_HELP: Record<
  keyof typeof SESSIONS_SUBCOMMANDS,
  { usage: string[]; description: string; examples: string[]; exit: string[] }
> = {
  list: {
    usage: ["sessions list [--json]"],
    description: "The sessions in the journal directory, the most recently active first.",
    examples: ["agentcore sessions list", "agentcore --root ~/work sessions list --json"],
    exit: ["0  listed", "1  listed, but a journal could not be read: it is named on stderr and left out", "2  usage error", PIPE_HELP],
  },
  show: {
    usage: ["sessions show ID [--branch B] [--json]"],
    description: "The runs and messages of one branch of session ID (default main).",
    examples: ["agentcore sessions show demo", "agentcore sessions show demo --branch retry-1 --json"],
    exit: ["0  shown", "2  usage error, no such session or branch, or a journal that cannot be read", PIPE_HELP],
  },
  tree: {
    usage: ["sessions tree ID [--json]"],
    description: "The branches of session ID and every record: revision (r7), id, parent, branch, type.",
    examples: ["agentcore sessions tree demo"],
    exit: ["0  shown", "2  usage error, no such session, or a journal that cannot be read", PIPE_HELP],
  },
  fork: {
    usage: ["sessions fork ID [--from RECORD] [--name B] [--branch B]"],
    description: "A new branch of session ID at RECORD (default: the head of main); main is never rewritten.",
    examples: ["agentcore sessions fork demo --from r5 --name idea"],
    exit: ["0  the branch was created", "2  usage error, no such session, record or branch, or a name already taken"],
  },
  rollback: {
    usage: ["sessions rollback ID --to RECORD [--name B] [--branch B]"],
    description: "A new branch of session ID at RECORD, to go on from there (main is never rewritten).",
    examples: ["agentcore sessions rollback demo --to r5"],
    exit: ["0  the branch was created", "2  usage error, no such session, record or branch, or a name already taken"],
  },
  retry: {
    usage: ["sessions retry ID --run RUN [--name B] [--branch B]"],
    description: "A new branch just before run RUN; prints the branch, the task and the command that runs it again.",
    examples: ["agentcore sessions retry demo --run 3f2a"],
    exit: ["0  the branch was created", "2  usage error, no such session, run or branch"],
  },
  recover: {
    usage: ["sessions recover ID [--branch B] [--force]"],
    description:
      "Close the runs a crash left unfinished on branch B (default main): each gets a run_finished\nrecord (cancelled / external_abort), so the session takes new runs again. A run that waited for\nan approval becomes suspended instead (awaiting_approval): answer it, then agent --resume.",
    examples: ["agentcore sessions recover demo"],
    exit: ["0  recovered, or nothing to do", "2  usage error, no such session, or a run still going in a live process"],
  },
  approvals: {
    usage: ["sessions approvals ID [--branch B] [--json]"],
    description:
      "The approvals branch B (default main) of session ID waits for, oldest first: call id, tool, effect,\nrule, reason and the redacted arguments journaled with the request.",
    examples: ["agentcore sessions approvals demo", "agentcore sessions approvals demo --json"],
    exit: ["0  listed (none is not an error)", "2  usage error, no such session or branch, or a journal that cannot be read", PIPE_HELP],
  },
  approve: {
    usage: ["sessions approve ID CALL [--reason TEXT] [--branch B]"],
    description:
      "Approve the call CALL that waits on branch B (default main) of session ID: the answer is journaled,\nand agentcore agent --session ID --resume runs the call.",
    examples: ['agentcore sessions approve demo call_1 --reason "checked the diff"'],
    exit: ["0  answered", "2  usage error, no such session or branch, or CALL waits for no approval there (the error lists those that do)"],
  },
  deny: {
    usage: ["sessions deny ID CALL [--reason TEXT] [--branch B]"],
    description:
      "Deny the call CALL that waits on branch B (default main) of session ID: the answer is journaled, and\non --resume the model gets the policy's rejection (with the reason) and the run goes on.",
    examples: ['agentcore sessions deny demo call_1 --reason "not on a Friday"'],
    exit: ["0  answered", "2  usage error, no such session or branch, or CALL waits for no approval there (the error lists those that do)"],
  },
  delete: {
    usage: ["sessions delete ID --yes [--force]"],
    description:
      "Delete session ID for good: its journal, lock and run marks (PostgreSQL: its records, row and leases,\nin one transaction under the session's lock). Without --yes nothing is deleted.",
    examples: ["agentcore sessions delete demo --yes"],
    exit: ["0  deleted", "2  usage error, no such session, no --yes, or a run still going"],
  },
  export: {
    usage: ["sessions export ID [--out FILE]"],
    description:
      "The journal of session ID as JSONL: every record, in revision order, byte for byte the lines a JSONL\nstore holds (PostgreSQL: its line column). Read it into any store with sessions import.",
    examples: [
      "agentcore sessions export demo --out demo.jsonl",
      "agentcore sessions export demo | agentcore sessions import - --store postgres://agent@db/agentcore",
    ],
    exit: ["0  exported", "2  usage error, no such session, a journal that cannot be read, or --out exists", PIPE_HELP],
  },
  import: {
    usage: ["sessions import FILE|- [--as ID]"],
    description:
      "Read a journal written by sessions export (or a JSONL journal file) into the store: every line is\nchecked first (JSON, schema version, revisions, parents, branches, one session id) and nothing is\nwritten on error. A session id the store has already is refused: --as ID stores it under another id.",
    examples: [
      "agentcore sessions import demo.jsonl --store postgres://agent@db/agentcore",
      "agentcore sessions import demo.jsonl --as demo-copy",
    ],
    exit: ["0  imported", "2  usage error, a line that is not a valid record (named), or the session exists"],
  },
};
