/** Types of scripts/build-binary.mjs (for the TypeScript scripts and tests that import it). */
export declare const ROOT: string;
export declare const ENTRY: string;
export interface TargetSpec {
  readonly bun: string;
  readonly file: string;
}
export declare const TARGETS: Readonly<Record<"linux-x64" | "linux-arm64" | "darwin-x64" | "darwin-arm64" | "windows-x64", TargetSpec>>;
export type TargetName = keyof typeof TARGETS;
export declare function hostTarget(): string;
export declare function targetOf(name: string): { name: TargetName } & TargetSpec;
export declare function bunExecutable(): string;
export interface BuildInfo {
  version: string;
  commit: string;
  buildDate: string;
}
export declare function buildInfo(root?: string): BuildInfo;
export declare function buildInfoDefines(target: string, info?: BuildInfo): Record<string, string>;
export interface BuildOptions {
  target?: string;
  outfile?: string;
  define?: Record<string, string>;
  flags?: string[];
  info?: BuildInfo;
  root?: string;
  quiet?: boolean;
}
export declare function buildBinary(options?: BuildOptions): { outfile: string; target: string; ms: number; args: string[] };
