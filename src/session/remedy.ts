/**
 * What to do about a session error, as data: which action, on which session
 * and branch. The session layer never writes a front end's syntax into its
 * messages; it words a remedy through the installed {@link RemedyWording}.
 * The default words it as the library call that does it
 * (`JournalStorage.recoverRuns("s1", { branch: "side" })`); the CLI installs
 * its own (`agentcore sessions recover s1 --branch side`), and so could the
 * daemon (its route). Errors that name a remedy also carry it structured
 * (`remedy`), so a front end can word it itself.
 *
 * @module
 */

/** One action that gets a session out of an error. */
export type SessionRemedy =
  /** Close the branch's unfinished runs (`force`: even when their process looks alive). */
  | { action: "recover"; session_id: string; branch_id: string; force: boolean }
  /** Look at the session's records (revisions and ids). */
  | { action: "tree"; session_id: string }
  /** Look at the session's runs. */
  | { action: "show"; session_id: string }
  /** Look at the stored sessions. */
  | { action: "list" };

/** Words a remedy as the command (or call, or route) that carries it out. */
export type RemedyWording = (remedy: SessionRemedy) => string;

const js = (v: string) => JSON.stringify(v);

/** The library's wording: the JournalStorage call. */
export const LIBRARY_REMEDY_WORDING: RemedyWording = (r) => {
  switch (r.action) {
    case "recover": {
      const opts = [r.branch_id !== "main" ? `branch: ${js(r.branch_id)}` : null, r.force ? "force: true" : null].filter((x) => x !== null);
      return `JournalStorage.recoverRuns(${js(r.session_id)}${opts.length > 0 ? `, { ${opts.join(", ")} }` : ""})`;
    }
    case "tree":
      return `JournalStorage.records(${js(r.session_id)})`;
    case "show":
      return `JournalStorage.records(${js(r.session_id)})`;
    case "list":
      return "JournalStorage.listSessions()";
  }
};

let wording: RemedyWording = LIBRARY_REMEDY_WORDING;

/** Install how remedies are worded in messages from now on (`null`: the library's); returns the previous one. */
export function setRemedyWording(w: RemedyWording | null): RemedyWording {
  const previous = wording;
  wording = w ?? LIBRARY_REMEDY_WORDING;
  return previous;
}

/** `remedy` worded with the installed wording. */
export function wordRemedy(remedy: SessionRemedy): string {
  return wording(remedy);
}
