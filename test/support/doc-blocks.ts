/**
 * The fenced shell blocks of the docs, and a runner that executes a page's
 * blocks the way a reader would: in order, in one bash, from a folder laid
 * out like a fresh clone (test/docs/shell-blocks.test.ts).
 *
 * The convention (docs/README.md, "Examples that run"):
 * - Every ```sh / ```bash / ```console / ```shell block runs, unless the line
 *   just before its fence is `<!-- doc-test: not run: REASON -->`, and then
 *   the paragraph above that marker, or the one below the block, must say
 *   REASON in its visible text.
 * - A block of any language whose fence follows `<!-- doc-test: file NAME -->`
 *   is a file the page asks the reader to save: it is written to NAME, in
 *   the page's order, before the blocks after it run.
 * - In a block, a `# ` line right under a command (or under another such
 *   line) is output: what the commands above it print, back to the last
 *   empty line or shown output, stdout and stderr together, `…` standing
 *   for any text. A `# ` line at the top of a block or after an
 *   empty line is a comment and is not compared.
 * - A command with no output shown must succeed (bash's ERR trap, the rule of
 *   `set -e`, records any failing command); a command whose output is shown
 *   may fail, since what it prints is checked.
 */
import { type ChildProcess, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";

/** The pages of the docs: README.md and docs/*.md, relative to the repository. */
export function docPages(repo: string): string[] {
  const docs = fs
    .readdirSync(path.join(repo, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`);
  return ["README.md", ...docs.sort()];
}

/** The languages whose fenced blocks are shell. */
const SHELL = new Set(["sh", "bash", "console", "shell"]);

/** A fenced shell block of a page. */
export interface ShellBlock {
  /** The page, relative to the repository (`docs/cli.md`). */
  page: string;
  /** 1-based line of the opening fence. */
  line: number;
  /** The block's text, without the fences and their indentation. */
  body: string;
  /** Null when the block runs; the reason from `<!-- doc-test: not run: REASON -->` otherwise. */
  notRun: string | null;
  /** The visible paragraphs above the marker (or the fence) and below the block. */
  prose: string;
  /** For a block of any language marked `<!-- doc-test: file NAME -->`: the file the reader saves it as. */
  file?: string;
}

const MARKER = /^\s*<!-- doc-test: (.*?) -->\s*$/;

/** The shell blocks of one page, in order. A malformed marker is an error naming the page and line. */
export function shellBlocks(repo: string, page: string): ShellBlock[] {
  const lines = fs.readFileSync(path.join(repo, page), "utf8").split("\n");
  const blocks: ShellBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```(\S*)\s*$/.exec(lines[i]!);
    if (open === null) continue;
    const indent = open[1]!.length;
    let end = i + 1;
    while (end < lines.length && !/^\s*```\s*$/.test(lines[end]!)) end++;
    if (end === lines.length) throw new Error(`${page}:${i + 1}: a fenced block that is never closed`);
    const fileMarker = i > 0 ? MARKER.exec(lines[i - 1]!) : null;
    const file = fileMarker === null ? null : /^file (\S+)$/.exec(fileMarker[1]!);
    if (file !== null) {
      const body = lines.slice(i + 1, end).join("\n");
      blocks.push({ page, line: i + 1, body, notRun: null, prose: "", file: file[1]! });
    } else if (SHELL.has(open[2]!)) {
      const body = lines
        .slice(i + 1, end)
        .map((l) => l.slice(Math.min(indent, l.length - l.trimStart().length)))
        .join("\n");
      let at = i - 1;
      let notRun: string | null = null;
      const m = at >= 0 ? MARKER.exec(lines[at]!) : null;
      if (m !== null) {
        const not = /^not run: (\S.*)$/.exec(m[1]!);
        if (not === null)
          throw new Error(
            `${page}:${at + 1}: a doc-test marker must read "<!-- doc-test: not run: REASON -->" or "<!-- doc-test: file NAME -->"`,
          );
        notRun = not[1]!;
        at--;
      }
      while (at >= 0 && lines[at]!.trim() === "") at--;
      const para: string[] = [];
      while (at >= 0 && lines[at]!.trim() !== "" && !lines[at]!.trimStart().startsWith("```")) para.unshift(lines[at--]!.trim());
      let after = end + 1;
      while (after < lines.length && lines[after]!.trim() === "") after++;
      while (after < lines.length && lines[after]!.trim() !== "" && !lines[after]!.trimStart().startsWith("```"))
        para.push(lines[after++]!.trim());
      blocks.push({ page, line: i + 1, body, notRun, prose: para.join(" ") });
    }
    i = end;
  }
  return blocks;
}

/** A piece of a block: commands, then the output shown under them. */
interface Chunk {
  block: ShellBlock;
  code: string;
  shown: string[];
}

/** Split a block into commands and the output shown under them. */
export function chunks(block: ShellBlock): Chunk[] {
  if (block.file !== undefined)
    return [{ block, code: `cat > ${shq(block.file)} <<'__DOC_TEST_EOF__'\n${block.body}\n__DOC_TEST_EOF__`, shown: [] }];
  const out: Chunk[] = [];
  let code: string[] = [];
  let shown: string[] = [];
  let prev: "start" | "blank" | "code" | "shown" = "start";
  const flush = () => {
    if (code.length > 0 || shown.length > 0) out.push({ block, code: code.join("\n"), shown });
    code = [];
    shown = [];
  };
  for (const line of block.body.split("\n")) {
    const isComment = line === "#" || line.startsWith("# ");
    if (isComment && (prev === "code" || prev === "shown")) {
      shown.push(line.slice(2));
      prev = "shown";
      continue;
    }
    if (prev === "shown" || (line.trim() === "" && prev === "code")) flush();
    code.push(line);
    prev = line.trim() === "" ? "blank" : isComment ? "blank" : "code";
  }
  flush();
  return out;
}

/** A line the docs show matches a printed line; "…" stands for any text. */
export function lineMatches(shown: string, printed: string): boolean {
  const re = shown
    .split("…")
    .map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
    .join(".*");
  return new RegExp(`^${re}$`, "s").test(printed);
}

/** A text replacement applied to a page's commands and to the output it shows. */
export type Substitution = [from: string | RegExp, to: string];

export function substitute(text: string, subs: readonly Substitution[]): string {
  let t = text;
  for (const [from, to] of subs) t = typeof from === "string" ? t.split(from).join(to) : t.replace(from, to);
  return t;
}

/** What went wrong with one command of a page (empty list: the page is true). */
export interface Drift {
  where: string;
  code: string;
  problem: string;
  shown?: string[];
  printed?: string[];
}

export interface RunOptions {
  /** The folder the page runs in. */
  cwd: string;
  env: Record<string, string>;
  subs?: readonly Substitution[];
  /** For the whole page (default 90 s). */
  timeoutMs?: number;
}

const SEP = "\u001e";

/**
 * Run a page's blocks (those not marked `not run`) in one bash, in order, and
 * compare each command's output with what the page shows. Every process the
 * page started (daemons in the background) is killed at the end.
 */
export async function runPage(blocks: readonly ShellBlock[], options: RunOptions): Promise<Drift[]> {
  const subs = options.subs ?? [];
  const all = blocks.filter((b) => b.notRun === null).flatMap(chunks);
  const errs = path.join(options.cwd, `.doc-test-errors-${process.pid}`);
  const script = [
    "exec 2>&1",
    "set -E",
    `__errs=${shq(errs)}`,
    `trap 'printf "%s %s\\n" "$__c" "$?" >> "$__errs"' ERR`,
    // after each piece, its status too: `a && b` whose `a` fails trips no ERR trap, as under set -e
    ...all.map(
      (c, k) =>
        `__c=${k}; printf '\\n${SEP}%s\\n' ${k}\n${substitute(c.code, subs)}\n__rc=$?; if [ $__rc -ne 0 ]; then printf "%s %s\\n" "$__c" "$__rc" >> "$__errs"; fi`,
    ),
    `__c=end; printf '\\n${SEP}end\\n'`,
  ].join("\n");
  const { output, timedOut } = await runBash(script, options);
  const failed = new Map<string, string>();
  if (fs.existsSync(errs)) {
    for (const l of fs.readFileSync(errs, "utf8").trim().split("\n")) {
      const [k, status] = l.split(" ");
      if (!failed.has(k!)) failed.set(k!, status!);
    }
    fs.rmSync(errs);
  }
  const pieces = new Map<string, string[]>();
  let current: string | null = null;
  for (const line of output.split("\n")) {
    if (line.startsWith(SEP)) {
      current = line.slice(1);
      pieces.set(current, []);
    } else if (current !== null) pieces.get(current)!.push(line);
  }
  const drifts: Drift[] = [];
  all.forEach((c, k) => {
    const where = `${c.block.page}:${c.block.line}`;
    const code = c.code.trim();
    const piece = pieces.get(String(k));
    if (piece === undefined) {
      drifts.push({ where, code, problem: timedOut ? "not reached: the page timed out before it" : "not reached" });
      return;
    }
    const printed = trimLines(piece);
    const reachedNext = pieces.has(String(k + 1)) || (k === all.length - 1 && pieces.has("end"));
    if (!reachedNext) drifts.push({ where, code, problem: timedOut ? "timed out here" : "the shell ended here", printed });
    else if (c.shown.length === 0) {
      if (failed.has(String(k))) drifts.push({ where, code, problem: `a command failed (exit ${failed.get(String(k))})`, printed });
    } else {
      const shown = c.shown.map((s) => substitute(s, subs));
      if (printed.length !== shown.length || !shown.every((s, i) => lineMatches(s, printed[i]!)))
        drifts.push({ where, code, problem: "printed other than what the page shows", shown, printed });
    }
  });
  return drifts;
}

/** Drop the empty lines the separators add around a command's output. */
function trimLines(lines: string[]): string[] {
  const l = [...lines];
  while (l.length > 0 && l[l.length - 1] === "") l.pop();
  while (l.length > 0 && l[0] === "") l.shift();
  return l;
}

function shq(s: string): string {
  return `'${s.replace(/'/g, "'\\''")}'`;
}

/** The process groups of the pages still running: killed if this process exits first (a filtered test run). */
const running = new Set<number>();
let exitHook = false;

function killGroup(pgid: number): void {
  try {
    process.kill(-pgid, "SIGKILL");
  } catch {
    // the group is gone already
  }
  running.delete(pgid);
}

/** bash in a process group of its own, so that the background jobs it leaves are killed with it. */
function runBash(script: string, options: RunOptions): Promise<{ output: string; timedOut: boolean }> {
  return new Promise((resolve) => {
    const child: ChildProcess = spawn("bash", ["--noprofile", "--norc", "-c", script], {
      cwd: options.cwd,
      env: options.env,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const parts: Buffer[] = [];
    child.stdout!.on("data", (d: Buffer) => parts.push(d));
    child.stderr!.on("data", (d: Buffer) => parts.push(d));
    let timedOut = false;
    const pgid = child.pid!;
    running.add(pgid);
    if (!exitHook) {
      exitHook = true;
      process.on("exit", () => {
        for (const g of [...running]) killGroup(g);
      });
    }
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(pgid);
    }, options.timeoutMs ?? 90_000);
    child.on("exit", () => {
      clearTimeout(timer);
      // the daemons and other background jobs of the page: stopped, so the pipes close
      killGroup(pgid);
    });
    child.on("close", () => resolve({ output: Buffer.concat(parts).toString("utf8"), timedOut }));
  });
}
