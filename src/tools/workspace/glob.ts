/**
 * `glob`: find paths under the root matching a glob pattern.
 *
 * Arguments: `{"pattern": string, "path"?: string (folder to search, default
 * "."), "max_results"?: integer ≥ 1}`. The pattern is matched against paths
 * relative to the root (so `src/**\/*.ts` works from any `path`). Syntax in
 * `globmatch.ts`.
 * Result: `{"matches": [path…], "truncated"}`, sorted; folders end with `/`.
 *
 * The walk never follows symlinks (a symlink can match, as itself), skips
 * `.git`, enters only folders that can hold a match (below the pattern's
 * literal prefix, no deeper than its segments without `**`), and visits at
 * most 100 000 entries (`truncated` then).
 *
 * @module
 */
import type { ToolDefinition, ToolContext } from "../definition.ts";
import { resolveRoot } from "../fs/rooted.ts";
import { markTrustedSchema } from "../schema.ts";
import { fail } from "./dirfd.ts";
import { Glob, GlobSyntaxError } from "./globmatch.ts";
import { deepFreeze } from "./util.ts";
import { walkTree } from "./walk.ts";

export const DEFAULT_GLOB_MAX_RESULTS = 1000;
export const GLOB_MAX_VISITED = 100_000;

export interface GlobArgs {
  pattern: string;
  path?: string;
  max_results?: number;
}

export interface GlobResult {
  matches: string[];
  truncated: boolean;
}

export const GLOB_PARAMETERS = deepFreeze({
  $schema: "https://json-schema.org/draft/2020-12/schema",
  type: "object",
  properties: {
    pattern: {
      type: "string",
      minLength: 1,
      maxLength: 1024,
      description: "Glob relative to the root: *, ?, [a-z], {a,b}, ** for any folders.",
    },
    path: { type: "string", maxLength: 4096, description: "Folder to search in (default: the root)." },
    max_results: { type: "integer", minimum: 1, description: "Return at most this many paths." },
  },
  required: ["pattern"],
  additionalProperties: false,
} as const);
markTrustedSchema(GLOB_PARAMETERS);

/** Check a glob or path-like pattern for absolute and `..` forms. */
export function checkPatternPath(pattern: string, what: string): void {
  if (pattern.startsWith("/") || /^[A-Za-z]:/.test(pattern)) fail("PATH_ABSOLUTE", `${what} must be relative to the root`);
  if (pattern.split("/").some((s) => s === "..")) fail("PATH_TRAVERSAL", `${what} contains a '..' segment`);
  if (pattern.includes("\0")) fail("PATH_INVALID", `${what} contains a NUL character`);
}

/** Compile a glob, mapping syntax errors to `INVALID_ARGUMENTS`. */
export function compileGlob(pattern: string, what = "pattern"): Glob {
  checkPatternPath(pattern, what);
  try {
    return new Glob(pattern);
  } catch (e) {
    if (e instanceof GlobSyntaxError)
      fail("INVALID_ARGUMENTS", `${what}: ${e.message}`, { errors: [{ path: `/${what}`, keyword: "glob", message: e.message }] });
    throw e;
  }
}

/**
 * Whether a folder can hold matches: it lies on the way to, or below, the
 * pattern's literal prefix, and is shallower than the deepest possible match.
 */
export function worthEntering(glob: Glob, rel: string): boolean {
  const p = glob.literalPrefix;
  if (p !== "" && !(p === rel || p.startsWith(rel + "/") || rel.startsWith(p + "/"))) return false;
  return rel.split("/").length < glob.maxSegments;
}

/** Create a `glob` tool; `maxResults` caps every call (default 1000). */
export function createGlobTool(options: { root: string; maxResults?: number }): ToolDefinition<GlobArgs> {
  const realRoot = resolveRoot(options.root);
  const cap = options.maxResults ?? DEFAULT_GLOB_MAX_RESULTS;
  return {
    name: "glob",
    description: `Find files and folders under the root whose relative path matches a glob (*, ?, [a-z], {a,b}, **). Folders end with '/'. Skips .git; never follows symlinks; at most ${cap} results.`,
    parameters: GLOB_PARAMETERS as unknown as Record<string, unknown>,
    effect: "read_only",
    handler(args: GlobArgs, ctx: ToolContext): GlobResult {
      const glob = compileGlob(args.pattern);
      const limit = Math.min(args.max_results ?? cap, cap);
      const matches: string[] = [];
      let truncated = false;
      const walk = walkTree(realRoot, args.path ?? ".", { maxEntries: GLOB_MAX_VISITED, signal: ctx.signal }, (e) => {
        if (e.name === ".git") return "skip"; // neither listed nor entered
        if (glob.matches(e.rel)) {
          if (matches.length >= limit) {
            truncated = true;
            return "stop";
          }
          matches.push(e.kind === "dir" ? `${e.rel}/` : e.rel);
        }
        return e.kind === "dir" && !worthEntering(glob, e.rel) ? "skip" : undefined;
      });
      return { matches, truncated: truncated || walk.truncated };
    },
  };
}
