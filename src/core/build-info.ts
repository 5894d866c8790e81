/**
 * What this build of agentcore is, for bug reports (`agentcore version --json`):
 * the version, the commit and date it was built from, the target it was built
 * for, the Bun runtime it runs on and the sha256 of the embedded WebAssembly core.
 *
 * The commit, date and target are `--define` values that
 * scripts/build-binary.mjs passes to `bun build --compile`. Run from source (or
 * from a bundle built without them) they are absent: the commit and date are
 * then null and the target is this machine's. The WASM core's hash is computed
 * from the embedded bytes themselves, so it can't disagree with them.
 *
 * @module
 */
import { CORE_WASM_BASE64 } from "./core-wasm.ts";
import { VERSION } from "./version.ts";

declare const AGENTCORE_BUILD_COMMIT: string | undefined;
declare const AGENTCORE_BUILD_DATE: string | undefined;
declare const AGENTCORE_BUILD_TARGET: string | undefined;

/** The build information; the field names are those of `agentcore version --json`. */
export interface BuildInfo {
  readonly version: string;
  /** The git commit built (`+dirty` when tracked files differed from it); null when run from source. */
  readonly commit: string | null;
  /** ISO 8601 UTC: SOURCE_DATE_EPOCH or the commit's date at build time; null when run from source. */
  readonly build_date: string | null;
  /** `linux-x64`, `linux-arm64`, `darwin-x64`, `darwin-arm64`, `windows-x64`: built for, or this machine. */
  readonly target: string;
  /** The Bun version running this (the runtime embedded in a compiled binary); null under another runtime. */
  readonly bun_version: string | null;
  /** Hex sha256 of the embedded WebAssembly core's bytes. */
  readonly wasm_sha256: string;
  /** True when the build-time values are present (a binary built by scripts/build-binary.mjs). */
  readonly built: boolean;
}

interface ProcessLike {
  platform?: string;
  arch?: string;
  versions?: Record<string, string | undefined>;
}

function proc(): ProcessLike | undefined {
  return (globalThis as { process?: ProcessLike }).process;
}

/** This machine as a target name (`linux-x64`), or "unknown". */
function hostTarget(): string {
  const p = proc();
  if (p?.platform === undefined || p.arch === undefined) return "unknown";
  return `${p.platform === "win32" ? "windows" : p.platform}-${p.arch}`;
}

/** The build-time values, or null for those not defined. */
function defined(): { commit: string | null; date: string | null; target: string | null } {
  return {
    commit: typeof AGENTCORE_BUILD_COMMIT === "string" ? AGENTCORE_BUILD_COMMIT : null,
    date: typeof AGENTCORE_BUILD_DATE === "string" ? AGENTCORE_BUILD_DATE : null,
    target: typeof AGENTCORE_BUILD_TARGET === "string" ? AGENTCORE_BUILD_TARGET : null,
  };
}

/** Hex sha256 of the embedded WebAssembly core. */
export async function wasmCoreSha256(): Promise<string> {
  const bin = atob(CORE_WASM_BASE64);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The build information of the running agentcore. */
export async function buildInfo(): Promise<BuildInfo> {
  const d = defined();
  return {
    version: VERSION,
    commit: d.commit,
    build_date: d.date,
    target: d.target ?? hostTarget(),
    bun_version: proc()?.versions?.bun ?? null,
    wasm_sha256: await wasmCoreSha256(),
    built: d.commit !== null,
  };
}
